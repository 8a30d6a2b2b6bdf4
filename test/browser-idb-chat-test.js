// A relation's existence checks on IndexedDB, in a real headless Chromium:
// createChat of users the tab's lease cache knows makes no read, the others
// are read together in the batch's transaction, and a record another tab
// deleted is never taken as existing (NOT_FOUND). Each assertion made in
// the browser comes back as one here.

import test from 'tape'
import { runEntryInChromium } from './util/browser.js'

test('existence checks in Chromium on IndexedDB', { timeout: 300000 }, t => runEntryInChromium(t, 'test/browser/idb-chat-entry.js'))
