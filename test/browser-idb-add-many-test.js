// relation.addMany()'s bulk path on IndexedDB in a real headless Chromium
// (a bulk load of chats, the members' checks against the write's own ops,
// a merge into a stored list, a second tab deleting members meanwhile).
// Each assertion made in the browser comes back as one here.

import test from 'tape'
import { runEntryInChromium } from './util/browser.js'

test('relation addMany() in Chromium on IndexedDB', { timeout: 300000 }, t => runEntryInChromium(t, 'test/browser/idb-add-many-entry.js'))
