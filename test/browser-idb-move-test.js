// The move of a relation's reverse lists into IndexedDB's own index on an
// existing database (test/browser/idb-move-entry.js), in a real headless
// Chromium; and, with two tabs: a tab closed in the middle of the move
// leaves it for the next open, which finishes it; two tabs that open a new
// database with different relationIndexes options do not both write.

import test from 'tape'
import { runEntryInChromium, withTabs } from './util/browser.js'

test('idb-move in Chromium on IndexedDB', { timeout: 300000 }, t => runEntryInChromium(t, 'test/browser/idb-move-entry.js'))
