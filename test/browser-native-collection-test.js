// Native collections on IndexedDB (open()'s native option) in a real
// headless Chromium: the guarantees of one tab (test/browser/native-collection-entry.js,
// each assertion made in the browser comes back as one here), then two tabs
// racing for the same usernames: exactly one winner each, the loser refused
// with LEVELKIT_UNIQUE and nothing of its record written. A tab killed
// mid-write: test/browser-crash-test.js.

import test from 'tape'
import { oneChromium } from './util/browser.js'

// One launch for the file's tests, each in a browser context of its own.
const { runEntry, withTabs: tabs } = oneChromium(test)

test('native collections in Chromium on IndexedDB', { timeout: 300000 }, t => runEntry(t, 'test/browser/native-collection-entry.js'))

const NAMES = 40

/**
 * In a tab: open the database with the users native and insert every name,
 * all at once; what each got: [name, id] or [name, error code].
 * @param {{ location: string, names: number }} options
 */
async function claimAll ({ location, names }) {
  const { open } = /** @type {any} */ (window).levelkit
  const db = await open({ location, native: { users: ['username'] } })
  const users = db.collection('users', { indexes: { username: { unique: true, covering: true, key: (/** @type {any} */ u) => u.username } } })
  // Both tabs are open before either writes.
  await new Promise(resolve => setTimeout(resolve, 200))
  const results = await Promise.all(Array.from({ length: names }, (_, i) => users.insert({ username: `user${i}` }).then(
    (/** @type {number} */ id) => [`user${i}`, id],
    (/** @type {any} */ err) => [`user${i}`, err.code ?? String(err)]
  )))
  Object.assign(window, { db, users })
  return results
}

test('native: two tabs racing for the same usernames: one winner each, the loser refused with LEVELKIT_UNIQUE, nothing of it written', { timeout: 120000 }, t => tabs(2, async pages => {
  const location = `native-race-${Date.now()}`
  const [a, b] = await Promise.all(pages.map(page => page.evaluate(claimAll, { location, names: NAMES })))
  let winners = 0
  let refusals = 0
  /** @type {Map<string, number>} */
  const ids = new Map()
  for (let i = 0; i < NAMES; i++) {
    const [name, first] = a[i]
    const [, second] = b[i]
    const won = [first, second].filter(r => typeof r === 'number')
    const refused = [first, second].filter(r => r === 'LEVELKIT_UNIQUE')
    if (won.length === 1 && refused.length === 1) {
      winners++
      refusals++
      ids.set(name, won[0])
    } else t.fail(`${name}: ${JSON.stringify([first, second])}`)
  }
  t.is(winners, NAMES, 'every name has exactly one winner')
  t.is(refusals, NAMES, 'and one refusal with LEVELKIT_UNIQUE')
  const stored = await pages[0].evaluate(async () => {
    const { db, users } = /** @type {any} */ (window)
    const all = await users.query().all()
    const report = await db.check()
    await db.close()
    return { all: all.map((/** @type {any} */ u) => [u.username, u.id]), problems: report.problems.map((/** @type {any} */ p) => p.type) }
  })
  t.is(stored.all.length, NAMES, 'one record per name: nothing of a loser is written')
  t.same(stored.all.filter((/** @type {any} */ [name, id]) => ids.get(name) !== id), [], 'each the winner\'s')
  t.same(stored.problems, [], 'check() is clean')
  await pages[1].evaluate(() => /** @type {any} */ (window).db.close())
}))
