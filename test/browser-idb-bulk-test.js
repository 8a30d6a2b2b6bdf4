// Bulk loads' unique values on IndexedDB in a real headless Chromium, on
// both layouts (one store, and ChatStore's native users): insertMany()
// claims each batch's usernames instead of reading them, a taken one is
// refused with LEVELKIT_UNIQUE and nothing of its batch written, a
// createUser racing a load for a name has one winner, and a createUser
// refused for a taken name does not stop a load. Each assertion made in the
// browser comes back as one here.

import test from 'tape'
import { runEntryInChromium } from './util/browser.js'

test('bulk loads\' unique claims in Chromium on IndexedDB', { timeout: 300000 }, t => runEntryInChromium(t, 'test/browser/idb-bulk-claims-entry.js'))
