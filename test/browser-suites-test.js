// The conformance and chat suites, unchanged, in a real headless Chromium on
// IndexedDB (browser-level), against the built bundle. Each assertion made in
// the browser comes back as an assertion of this test.

import test from 'tape'
import { runEntryInChromium } from './util/browser.js'

test('conformance and chat suites in Chromium on IndexedDB', { timeout: 300000 }, t => runEntryInChromium(t, 'test/browser/suites-entry.js'))
