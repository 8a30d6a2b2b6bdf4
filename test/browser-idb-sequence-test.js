// Sequences on IndexedDB in a real headless Chromium: an insert writes its
// record and not the sequence (one IndexedDB request fewer), and ids stay
// gap-free and never reused, across databases opened again, second
// databases and real tabs, a tab reloaded, deletes of the record with the
// highest id and transactions; check() stays clean. The single-page tests
// are test/browser/idb-sequence-entry.js; the tabs are here.

import test from 'tape'
import { oneChromium } from './util/browser.js'

// One launch for the file's tests, each in a browser context of its own.
const { runEntry, withTabs } = oneChromium(test)

test('sequences on IndexedDB in Chromium', { timeout: 300000 }, t => runEntry(t, 'test/browser/idb-sequence-entry.js'))

/**
 * In tab `page`, open `location` and run `ops` in order, each awaited:
 * ['insert'] inserts a note, ['del', id] deletes one. Resolves with the
 * inserted ids; closes the database.
 * @param {any} page @param {string} location @param {Array<['insert'] | ['del', number]>} ops
 */
function inTab (page, location, ops) {
  return page.evaluate(async ({ location, ops }) => {
    const { open } = /** @type {any} */ (window).levelkit
    const win = /** @type {any} */ (window)
    if (win.db === undefined) {
      win.db = await open({ location })
      win.notes = win.db.collection('notes')
    }
    const notes = win.notes
    const ids = []
    for (const [op, id] of ops) {
      if (op === 'insert') ids.push(await notes.insert({ text: 'x' }))
      else await notes.del(id)
    }
    return ids
  }, { location, ops })
}

/** Close the tab's database, if open. @param {any} page */
const closeIn = page => page.evaluate(async () => {
  const win = /** @type {any} */ (window)
  await win.db?.close()
  win.db = undefined
})

test('two tabs inserting in turn, deleting the highest record, one reloaded: ids gap-free, never reused, check() clean', { timeout: 120000 }, async t => {
  await withTabs(2, async ([a, b]) => {
    const location = 'idb-sequence-tabs'
    const ids = []
    for (let i = 0; i < 6; i++) {
      ids.push(...await inTab(a, location, [['insert']]))
      ids.push(...await inTab(b, location, [['insert']]))
    }
    t.same(ids, Array.from({ length: 12 }, (_, i) => i + 1), `in turn: 1..12 (${ids})`)
    // Tab a deletes the highest; tab b inserts next: 13, not 12.
    await inTab(a, location, [['del', 12]])
    t.same(await inTab(b, location, [['insert']]), [13], 'tab b after tab a deleted 12: 13')
    // Tab b inserts and deletes the highest, then tab a is reloaded (its memory gone) and inserts.
    t.same(await inTab(b, location, [['insert'], ['del', 14]]), [14], 'tab b inserted 14 and deleted it')
    await closeIn(b)
    await a.reload()
    await a.waitForFunction(() => /** @type {any} */ (window).levelkit !== undefined)
    t.same(await inTab(a, location, [['insert'], ['insert']]), [15, 16], 'tab a, reloaded: 15, 16')
    t.same(await inTab(b, location, [['insert']]), [17], 'tab b, opened again: 17')
    const after = await a.evaluate(async () => {
      const db = /** @type {any} */ (window).db
      const ids = (await /** @type {any} */ (window).notes.query().all()).map((/** @type {any} */ r) => r.id)
      const report = await db.check()
      return { ids, problems: report.problems.map((/** @type {any} */ p) => p.type) }
    })
    t.same(after.ids, [...Array.from({ length: 11 }, (_, i) => i + 1), 13, 15, 16, 17], 'every record there, 12 and 14 not reused')
    t.same(after.problems, [], 'check() is clean')
    await closeIn(a)
    await closeIn(b)
  })
})
