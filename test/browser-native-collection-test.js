// Native collections on IndexedDB (open()'s native option) in a real
// headless Chromium: see test/browser/native-collection-entry.js. Each
// assertion made in the browser comes back as one here.

import test from 'tape'
import { runEntryInChromium } from './util/browser.js'

test('native collections in Chromium on IndexedDB', { timeout: 300000 }, t => runEntryInChromium(t, 'test/browser/native-collection-entry.js'))
