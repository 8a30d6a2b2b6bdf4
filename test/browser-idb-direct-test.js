// The IndexedDB layer under the write path (lib/idb-direct.js) in a real
// headless Chromium: one transaction per critical section (counted, with a
// control that takes many), atomic batches when a request fails, and range
// reads with a count and a direction that answer as browser-level's
// iterator. Each assertion made in the browser comes back as one here.

import test from 'tape'
import { runEntryInChromium } from './util/browser.js'

test('idb-direct in Chromium on IndexedDB', { timeout: 300000 }, t => runEntryInChromium(t, 'test/browser/idb-direct-entry.js'))
