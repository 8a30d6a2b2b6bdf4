// A tab still running older declarations after another tab changed the
// stored schema (lib/schema-watch.js), on IndexedDB in a real Chromium. Tab
// A opens with a relation without lists (or a collection without an index)
// and writes; tab B opens with `lists` (or the new index) and moves the data
// (builds the index). A's next write to that model rejects with
// LEVELKIT_SCHEMA_CHANGED and writes nothing; its writes to other models go
// on; check() is clean in B. Both when A heard B's batches on the
// BroadcastChannel and when it heard none of them (its channel drops them):
// then A finds out as it takes the writer lock (the stored generation).
// Control: without the watch, A's edge lands in the old layout (check()
// reports `edge-in-old-layout`) and its record misses the new index
// (`missing-index-entry`). Then an index declared in one tab on an empty
// collection (nothing to build) and records written first by a tab that
// does not know it: the first tab compares again and builds it (control:
// without that, its index misses them). The same on PostgreSQL:
// test/schema-changed-test.js.

import test from 'tape'
import { tabsInOneChromium } from './util/browser.js'

const withTabs = tabsInOneChromium(test)

/**
 * Tab A: open `location` with the old declarations and write some, as
 * `window.t`. With `deaf`, its BroadcastChannel drops every batch another
 * tab tells of (it still hears who wants the writer lock).
 * @param {import('playwright-core').Page} page @param {string} location @param {boolean} deaf
 */
function openOld (page, location, deaf) {
  return page.evaluate(async ({ location, deaf }) => {
    const w = /** @type {any} */ (window)
    if (deaf) {
      const Channel = BroadcastChannel
      w.BroadcastChannel = class extends Channel {
        get onmessage () {
          return super.onmessage
        }

        /** @param {any} listener */
        set onmessage (listener) {
          super.onmessage = (/** @type {MessageEvent} */ event) => { if (event.data?.want === true) listener(event) }
        }
      }
    }
    const db = await w.levelkit.open({ location })
    const people = db.collection('people')
    const follows = db.relation('follows', { from: people, to: people })
    const tags = db.collection('tags', { indexes: { byName: { key: (/** @type {any} */ t) => t.name } } })
    const other = db.collection('other')
    await people.insertMany([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }])
    await follows.add(1, 2)
    await follows.add(2, 3)
    await tags.insertMany([{ name: 'a', color: 'red' }, { name: 'b', color: 'blue' }])
    w.t = { db, people, follows, tags, other }
  }, { location, deaf })
}

/**
 * Tab B: open `location` with the new declarations (lists both ways, an
 * index by color) and move and build.
 * @param {import('playwright-core').Page} page @param {string} location
 */
function openNew (page, location) {
  return page.evaluate(async ({ location }) => {
    const w = /** @type {any} */ (window)
    const db = await w.levelkit.open({ location })
    const people = db.collection('people')
    const follows = db.relation('follows', { from: people, to: people, lists: ['from', 'to'] })
    const tags = db.collection('tags', { indexes: { byName: { key: (/** @type {any} */ t) => t.name }, byColor: { key: (/** @type {any} */ t) => t.color } } })
    await db.buildIndexes()
    w.t = { db, people, follows, tags }
  }, { location })
}

/**
 * In tab A, before it writes: a read of the relation, tried until it
 * rejects (it hears B's batches soon after they are written), up to 2 s.
 * @param {import('playwright-core').Page} page
 */
function readOld (page) {
  return page.evaluate(async () => {
    const { follows } = /** @type {any} */ (window).t
    for (const began = Date.now(); Date.now() - began < 2000;) {
      const code = await follows.to(1).all().then(() => 'ok', (/** @type {any} */ err) => err.code ?? String(err))
      if (code !== 'ok') return code
      await new Promise(resolve => setTimeout(resolve, 20))
    }
    return 'ok'
  })
}

/** In tab A: its writes and reads after B's change, each as 'ok' or its error code. @param {import('playwright-core').Page} page */
function writeOld (page) {
  return page.evaluate(async () => {
    const { people, follows, tags, other } = /** @type {any} */ (window).t
    /** @param {() => Promise<unknown>} fn */
    const outcome = fn => fn().then(() => 'ok', (/** @type {any} */ err) => err.code ?? String(err))
    return {
      edge: await outcome(() => follows.add(4, 3)),
      cascade: await outcome(() => people.del(2)),
      readEdges: await outcome(() => follows.to(1).all()),
      tag: await outcome(() => tags.insert({ name: 'c', color: 'green' })),
      readTags: await outcome(() => tags.query({ index: 'byName', eq: 'a' }).all()),
      person: await outcome(() => people.insert({ n: 5 })),
      other: await outcome(() => other.insert({ x: 1 }))
    }
  })
}

/** In tab B: what is stored, and check(). @param {import('playwright-core').Page} page */
function inspectNew (page) {
  return page.evaluate(async () => {
    const { db, people, follows, tags } = /** @type {any} */ (window).t
    return {
      to4: await follows.to(4).all(),
      from3: await follows.from(3).all(),
      person2: (await people.get(2)) !== undefined,
      tags: await tags.count(),
      green: (await tags.query({ index: 'byColor', eq: 'green' }).all()).length,
      problems: (await db.check()).problems.map((/** @type {any} */ p) => p.type)
    }
  })
}

const EXPECTED_OLD = { edge: 'LEVELKIT_SCHEMA_CHANGED', cascade: 'LEVELKIT_SCHEMA_CHANGED', readEdges: 'LEVELKIT_SCHEMA_CHANGED', tag: 'LEVELKIT_SCHEMA_CHANGED', readTags: 'ok', person: 'ok', other: 'ok' }
const EXPECTED_NEW = { to4: [], from3: [2], person2: true, tags: 2, green: 0, problems: [] }

for (const deaf of [false, true]) {
  test(`IndexedDB, two tabs: a tab with older declarations is refused once another tab moved a relation and built an index${deaf ? ' (it heard none of the other tab\'s batches)' : ''}`, async t => {
    await withTabs(2, async ([a, b]) => {
      const location = `schema-changed-${deaf}`
      await openOld(a, location, deaf)
      await openNew(b, location)
      if (!deaf) t.is(await readOld(a), 'LEVELKIT_SCHEMA_CHANGED', 'tab A, having heard tab B\'s batches, rejects a read of the relation before it writes anything')
      const old = await writeOld(a)
      t.deepEqual(old, EXPECTED_OLD, 'tab A: its edge, its delete (which would remove edges) and its tag reject with LEVELKIT_SCHEMA_CHANGED, as does a read of the relation; reads of an index both declare alike and writes to other models go on')
      t.deepEqual(await inspectNew(b), EXPECTED_NEW, 'tab B: nothing tab A was refused is stored, and check() is clean')
    })
  })
}

test('IndexedDB, two tabs: an index a tab declared on an empty collection is built when a tab that does not know it fills the collection first', async t => {
  await withTabs(2, async ([a, b]) => {
    const location = 'schema-changed-empty'
    const declare = (/** @type {import('playwright-core').Page} */ page, /** @type {boolean} */ indexed) => page.evaluate(async ({ location, indexed }) => {
      const w = /** @type {any} */ (window)
      const db = await w.levelkit.open({ location })
      const tags = db.collection('tags', indexed ? { indexes: { byName: { key: (/** @type {any} */ t) => t.name } } } : {})
      await db.schemaStatus()
      w.t = { db, tags }
    }, { location, indexed })
    await declare(a, false)
    await declare(b, true)
    await a.evaluate(() => /** @type {any} */ (window).t.tags.insertMany([{ name: 'x' }, { name: 'y' }]))
    const got = await b.evaluate(async () => {
      const { db, tags } = /** @type {any} */ (window).t
      const id = await tags.insert({ name: 'z' })
      const x = (await tags.query({ index: 'byName', eq: 'x' }).all()).map((/** @type {any} */ r) => r.id)
      return { id, x, problems: (await db.check()).problems.map((/** @type {any} */ p) => p.type) }
    })
    t.deepEqual(got, { id: 3, x: [1], problems: [] }, 'tab B\'s index holds the records tab A wrote before B\'s first write, and check() is clean')
    const code = await a.evaluate(() => /** @type {any} */ (window).t.tags.insert({ name: 'w' }).then(() => 'ok', (/** @type {any} */ err) => err.code))
    t.is(code, 'LEVELKIT_SCHEMA_CHANGED', 'tab A is refused once the index is stored')
  })
})
