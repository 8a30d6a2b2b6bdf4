// Two tabs of one origin open one IndexedDB database that needs a migration
// (or an index build), at once, in a real Chromium: one tab runs it, the
// other waits (the schema lock, lib/schema-lock.js) and then finds it done.
// A control run with Web Locks hidden shows both tabs running it, so the
// test can fail.

import test from 'tape'
import { tabsInOneChromium } from './util/browser.js'

const withTabs = tabsInOneChromium(test)

const RECORDS = 1500

/** Write the records the migration rewrites (no migration run yet). @param {any} page @param {string} location */
function seed (page, location) {
  return page.evaluate(async ({ location, records }) => {
    const { open } = /** @type {any} */ (window).levelkit
    const db = await open({ location })
    const items = db.collection('items', { indexes: { byN: { key: (/** @type {any} */ r) => r.n } } })
    await items.insertMany(Array.from({ length: records }, (_, i) => ({ title: `t${i}`, n: 0 })))
    await db.close()
  }, { location, records: RECORDS })
}

/**
 * One tab opens the database and migrates it: migration 1 adds 1 to every
 * record's `n` and counts its runs (m.write()); the tab starts when `go` is
 * set, so both start at once.
 * @param {any} page @param {string} location @param {boolean} hideLocks
 */
function migrate (page, location, hideLocks) {
  return page.evaluate(async ({ location, hideLocks }) => {
    if (hideLocks) Object.defineProperty(navigator, 'locks', { value: undefined })
    const { open } = /** @type {any} */ (window).levelkit
    const db = await open({ location })
    const items = db.collection('items', { indexes: { byN: { key: (/** @type {any} */ r) => r.n } } })
    const runs = db.counter('runs')
    const w = /** @type {any} */ (window)
    while (!w.go) await new Promise(resolve => setTimeout(resolve, 1))
    let ups = 0
    const result = await db.migrate([{
      version: 1,
      async up (/** @type {any} */ m) {
        ups++
        if (hideLocks) {
          // The control's tabs meet here, so neither can finish before the
          // other has read the schema version, however the machine is loaded.
          w.inUp = true
          const until = Date.now() + 60000
          while (!w.bothInUp && Date.now() < until) await new Promise(resolve => setTimeout(resolve, 5))
        }
        await m.collection(items).modify((/** @type {any} */ r) => ({ ...r, n: r.n + 1 }), { batchSize: 50 })
        await m.write(async (/** @type {any} */ w) => { await runs.in(w).add('v1', 1) })
      }
    }])
    await db.close()
    return { ran: result.ran, ups }
  }, { location, hideLocks })
}

/** The records' `n`, the runs counted and check(), from one tab. @param {any} page @param {string} location */
function inspect (page, location) {
  return page.evaluate(async (location) => {
    const { open } = /** @type {any} */ (window).levelkit
    const db = await open({ location })
    const items = db.collection('items', { indexes: { byN: { key: (/** @type {any} */ r) => r.n } } })
    const runs = db.counter('runs')
    const ns = (await items.query().all()).map((/** @type {any} */ r) => r.n)
    const result = { ns: [...new Set(ns)], count: ns.length, runs: await runs.get('v1'), version: await db.schemaVersion(), problems: (await db.check()).problems.map((/** @type {any} */ p) => p.type) }
    await db.close()
    return result
  }, location)
}

/** @param {any[]} pages @param {string} location @param {boolean} hideLocks */
async function race (pages, location, hideLocks) {
  await seed(pages[0], location)
  const running = pages.map(page => migrate(page, location, hideLocks))
  // Both tabs have opened the database and wait: start them together.
  await new Promise(resolve => setTimeout(resolve, 300))
  await Promise.all(pages.map(page => page.evaluate(() => { /** @type {any} */ (window).go = true })))
  if (hideLocks) {
    // Both tabs in up() at once, or a minute passed: release them.
    const until = Date.now() + 60000
    while (Date.now() < until) {
      const inUp = await Promise.all(pages.map(page => page.evaluate(() => Boolean(/** @type {any} */ (window).inUp))))
      if (inUp.every(Boolean)) break
      await new Promise(resolve => setTimeout(resolve, 20))
    }
    await Promise.all(pages.map(page => page.evaluate(() => { /** @type {any} */ (window).bothInUp = true })))
  }
  return Promise.all(running)
}

test('two tabs open a database that needs a migration: it runs once, in one tab; the other waits and finds it done', { timeout: 120000 }, async t => {
  await withTabs(2, async pages => {
    const location = 'migrate-two-tabs'
    const perTab = await race(pages, location, false)
    t.comment(JSON.stringify(perTab))
    t.same(perTab.map(r => r.ran.length).sort(), [0, 1], 'one tab ran migration 1, the other found it done')
    t.same(perTab.map(r => r.ups).sort(), [0, 1], 'up() ran in one tab only')
    const state = await inspect(pages[0], location)
    t.same(state.ns, [1], `every record went through it once (${state.count} records)`)
    t.is(state.count, RECORDS, 'none lost')
    t.is(state.runs, 1, 'its m.write() ran once')
    t.is(state.version, 1, 'the schema version is 1')
    t.same(state.problems, [], 'check() is clean')
  })
})

test('control: without Web Locks both tabs run the migration (so the test above can fail)', { timeout: 120000 }, async t => {
  await withTabs(2, async pages => {
    const location = 'migrate-two-tabs-unlocked'
    const perTab = await race(pages, location, true)
    const state = await inspect(pages[0], location)
    t.comment(JSON.stringify({ perTab, state: { ...state, problems: state.problems.length } }))
    t.ok(perTab.every(r => r.ups === 1) && (state.runs > 1 || state.ns.some((/** @type {number} */ n) => n !== 1)), 'both ran it: records rewritten twice, or its m.write() counted twice')
  })
})

/**
 * One tab declares the index byTitle on the seeded records and builds it,
 * starting when `go` is set; resolves with how far this tab's build went
 * (`done` is left out when this tab found it built) and what the index answers.
 * @param {any} page @param {string} location @param {boolean} hideLocks
 */
function build (page, location, hideLocks) {
  return page.evaluate(async ({ location, hideLocks }) => {
    if (hideLocks) Object.defineProperty(navigator, 'locks', { value: undefined })
    const { open } = /** @type {any} */ (window).levelkit
    const db = await open({ location })
    const items = db.collection('items', { indexes: { byN: { key: (/** @type {any} */ r) => r.n }, byTitle: { key: (/** @type {any} */ r) => r.title } } })
    const w = /** @type {any} */ (window)
    while (!w.goBuild) await new Promise(resolve => setTimeout(resolve, 1))
    await db.buildIndexes()
    const status = (await db.schemaStatus()).items.byTitle
    const found = await items.query({ index: 'byTitle', eq: 't7' }).all()
    await db.close()
    return { state: status.state, done: status.done ?? null, found: found.map((/** @type {any} */ r) => r.title) }
  }, { location, hideLocks })
}

test('two tabs declare an index on existing records: one tab builds it, the other waits and finds it built', { timeout: 120000 }, async t => {
  await withTabs(2, async pages => {
    const location = 'build-two-tabs'
    await seed(pages[0], location)
    const running = pages.map(page => build(page, location, false))
    await new Promise(resolve => setTimeout(resolve, 300))
    await Promise.all(pages.map(page => page.evaluate(() => { /** @type {any} */ (window).goBuild = true })))
    const perTab = await Promise.all(running)
    t.comment(JSON.stringify(perTab))
    t.ok(perTab.every(r => r.state === 'ready'), 'ready in both tabs')
    t.same(perTab.map(r => r.done).sort(), [RECORDS, null].sort(), 'one tab indexed every record, the other none')
    t.ok(perTab.every(r => r.found.length === 1 && r.found[0] === 't7'), 'the index answers in both')
  })
})
