// The move of a relation's reverse lists into IndexedDB's own index on an
// existing database (test/browser/idb-move-entry.js), in a real headless
// Chromium; and, with two tabs: a tab closed in the middle of the move
// leaves it for the next open, which finishes it; two tabs that open a new
// database with different relationIndexes options do not both write.

import test from 'tape'
import { oneChromium } from './util/browser.js'

// One launch for the file's tests, each in a browser context of its own.
const { runEntry, withTabs } = oneChromium(test)

test('idb-move in Chromium on IndexedDB', { timeout: 300000 }, t => runEntry(t, 'test/browser/idb-move-entry.js'))

const PEOPLE = 1500

/** Whom person `i` follows. @param {number} i */
const follows = i => [...new Set([1, 2, 3, 5, 8, 13, 21, 34].map(d => 1 + (i - 1 + d) % PEOPLE))]

/**
 * Open `location` in `page` as `window.t`: people and a relation between
 * them with lists both ways, with the given relationIndexes option, and a
 * poll of how far the relation's move got (schemaStatus()).
 * @param {import('playwright-core').Page} page @param {string} location @param {boolean} relationIndexes
 * @returns {Promise<any>} the relation's layout status at open
 */
function openIn (page, location, relationIndexes) {
  return page.evaluate(async ({ location, relationIndexes }) => {
    const w = /** @type {any} */ (window)
    const db = await w.levelkit.open({ location, relationIndexes })
    const people = db.collection('people')
    const rel = db.relation('follows', { from: people, to: people, lists: ['from', 'to'] })
    const status = await db.schemaStatus()
    const most = { done: 0 }
    const poll = setInterval(() => {
      db.schemaStatus().then((/** @type {any} */ s) => { most.done = Math.max(most.done, s.follows?.layout?.done ?? 0) }, () => {})
    }, 5)
    w.t = { db, people, rel, most, poll }
    return status.follows?.layout ?? { state: 'ready' }
  }, { location, relationIndexes })
}

/**
 * In `page` (after openIn()): each person's followers by from(), the
 * expected ones, what the relation's model says of its layout, check().
 * @param {import('playwright-core').Page} page
 */
function inspect (page) {
  return page.evaluate(async ({ people, lists }) => {
    const { db, rel } = /** @type {any} */ (window).t
    const model = rel[Object.getOwnPropertySymbols(rel).find(s => s.description === 'model')]
    /** @type {number[][]} */
    const expected = Array.from({ length: people }, () => [])
    lists.forEach((/** @type {number[]} */ list, /** @type {number} */ i) => { for (const to of list) expected[to - 1].push(i + 1) })
    let right = 0
    for (let id = 1; id <= people; id++) {
      const found = await rel.from(id).all()
      if (JSON.stringify(found) === JSON.stringify(expected[id - 1])) right++
    }
    const forward = model.forward.namespace
    const lists_ = (await forward.sublevel.iterator().all()).length
    const mirrored = (await db.writer.idb.mirrored(forward, false)).length
    const reverseLists = (await model.reverseLists.namespace.sublevel.keys().all()).length
    const problems = (await db.check()).problems.length
    return { right, kind: model.reverse.kind, lists: lists_, mirrored, reverseLists, problems }
  }, { people: PEOPLE, lists: Array.from({ length: PEOPLE }, (_, i) => follows(i + 1)) })
}

test('IndexedDB, two tabs: a tab closed in the middle of the move into the index leaves it to the next open, which finishes it', { timeout: 180000 }, async t => {
  await withTabs(2, async ([mover, next]) => {
    const location = 'idb-move-closed-tab'
    await openIn(mover, location, false)
    await mover.evaluate(async ({ people, lists }) => {
      const { db, people: p, rel } = /** @type {any} */ (window).t
      // One batch (one IndexedDB transaction) rather than one per person:
      // the seed is not under test, only the lists it leaves.
      await db.write(async (/** @type {any} */ w) => {
        await p.in(w).insertMany(Array.from({ length: people }, (_, i) => ({ n: i + 1 })))
        for (let i = 1; i <= people; i++) await rel.in(w).addMany(i, lists[i - 1])
      })
      await db.close()
    }, { people: PEOPLE, lists: Array.from({ length: PEOPLE }, (_, i) => follows(i + 1)) })
    t.same(await openIn(mover, location, true), { state: 'moving', declared: true, done: 0 }, 'reopened with the index: the move waits for the first use')
    await mover.evaluate(() => { /** @type {any} */ (window).t.db.buildIndexes() })
    let movedAt = 0
    for (let i = 0; i < 6000 && movedAt === 0; i++) {
      movedAt = await mover.evaluate(() => /** @type {any} */ (window).t.most.done)
      if (movedAt === 0) await new Promise(resolve => setTimeout(resolve, 5))
    }
    await mover.close()
    t.ok(movedAt > 0 && movedAt < 2 * PEOPLE, `the first tab had moved ${movedAt} of ${2 * PEOPLE} lists when it was closed`)
    const status = await openIn(next, location, true)
    t.is(status.state, 'moving', 'the next open finds the move not over')
    t.ok(status.done >= movedAt - 256 && status.done > 0, `and resumes from the stored progress (${status.done} done)`)
    const result = await inspect(next)
    t.same(result, { right: PEOPLE, kind: 'index', lists: PEOPLE, mirrored: PEOPLE, reverseLists: 0, problems: 0 }, 'after it: every from() right, the index kind, every list mirrored, no reverse lists, check() clean')
  })
})

test('IndexedDB, two tabs with different relationIndexes on a new database: the tab that did not write the layout first is refused, and the data stays whole', { timeout: 120000 }, async t => {
  await withTabs(2, async ([a, b]) => {
    const location = 'idb-move-two-options'
    await openIn(a, location, true)
    await openIn(b, location, false)
    await a.evaluate(async () => { await /** @type {any} */ (window).t.people.insertMany(Array.from({ length: 8 }, (_, i) => ({ n: i + 1 }))) })
    /** @type {Array<[import('playwright-core').Page, string, number, number]>} */
    const adds = [[a, 'a', 1, 2], [b, 'b', 3, 2], [a, 'a', 4, 5], [b, 'b', 6, 5], [b, 'b', 7, 8], [a, 'a', 8, 2]]
    /** @type {Record<string, string[]>} */
    const results = { a: [], b: [] }
    /** @type {Array<[number, number]>} */
    const acknowledged = []
    for (const [page, name, from, to] of adds) {
      const result = await page.evaluate(async ({ from, to }) => {
        try {
          return String(await /** @type {any} */ (window).t.rel.add(from, to))
        } catch (err) {
          return /** @type {any} */ (err).code ?? String(err)
        }
      }, { from, to })
      results[name].push(result)
      if (result === 'true') acknowledged.push([from, to])
    }
    t.same(results.a, ['true', 'true', 'true'], 'the tab that wrote first (the index) writes')
    t.same(results.b, ['LEVELKIT_SCHEMA_CHANGED', 'LEVELKIT_SCHEMA_CHANGED', 'LEVELKIT_SCHEMA_CHANGED'], 'the other (relationIndexes: false) is refused')
    // Reopened with either option, the stored layout decides; every acknowledged edge reads back.
    for (const [page, option] of /** @type {Array<[import('playwright-core').Page, boolean]>} */ ([[b, false], [a, true]])) {
      await page.evaluate(() => /** @type {any} */ (window).t.db.close())
      await openIn(page, location, option)
      const found = await page.evaluate(async () => {
        const { db, rel } = /** @type {any} */ (window).t
        const model = rel[Object.getOwnPropertySymbols(rel).find(s => s.description === 'model')]
        const followers = []
        for (let id = 1; id <= 8; id++) followers.push(await rel.from(id).all())
        return { followers, kind: model.reverse.kind, problems: (await db.check()).problems.length }
      })
      const expected = Array.from({ length: 8 }, (_, i) => acknowledged.filter(([, to]) => to === i + 1).map(([from]) => from).sort((x, y) => x - y))
      t.same(found, { followers: expected, kind: 'index', problems: 0 }, `reopened with relationIndexes: ${option}: the index kind, every acknowledged edge, check() clean`)
    }
  })
})
