// A relation's forward lists kept in IndexedDB's lists store only
// (open({ relationIndexes: 'entries' }), native: ['from', 'to']) in a real
// headless Chromium. Each assertion made in the browser comes back as one here.

import test from 'tape'
import { runEntryInChromium } from './util/browser.js'

test('relation lists in the lists store only, in Chromium on IndexedDB', { timeout: 300000 }, t => runEntryInChromium(t, 'test/browser/idb-entries-entry.js'))
