// Unique claims on IndexedDB in a real headless Chromium: createUser makes
// no read of the username (its entry is add()ed), a claim refused in a
// group leaves the other writes of its IndexedDB transaction written (their
// sections run again) and writes nothing of its own, a claim that a later
// op of its group replaces is still made, and two databases on one
// IndexedDB claiming the same names get one winner each. Each assertion made
// in the browser comes back as one here.

import test from 'tape'
import { runEntryInChromium } from './util/browser.js'

test('unique claims in Chromium on IndexedDB', { timeout: 300000 }, t => runEntryInChromium(t, 'test/browser/idb-claims-entry.js'))
