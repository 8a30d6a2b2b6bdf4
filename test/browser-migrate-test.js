// Two tabs of one origin open one IndexedDB database that needs a migration
// (or an index build), at once, in a real Chromium: one tab runs it, the
// other waits (the schema lock, lib/schema-lock.js) and then finds it done.
// A control run with Web Locks hidden shows both tabs running it, so the
// test can fail.

import test from 'tape'
import { tabsInOneChromium } from './util/browser.js'

const withTabs = tabsInOneChromium(test)

// 600 records: the build takes three batches and the migration twelve
// transactions, so a waiting tab waits on work under way (1,500 took two
// and a half times as long and showed nothing more).
const RECORDS = 600

/**
 * Start a call in each tab and release them together, on an event rather
 * than after a fixed sleep a loaded machine can outlast: each tab calls
 * window.tabReady() (a binding) once it has opened the database and waits
 * on a promise whose resolver is window.release; once all have, the test resolves their waits at
 * once. Resolves with the calls' promises, released. A tab whose call ends
 * before it is ready rejects it. With `release: false`, resolves once all
 * are ready, leaving them waiting (the caller releases them).
 * @param {any[]} pages @param {(page: any) => Promise<any>} call
 * @param {{ release?: boolean }} [options]
 * @returns {Promise<Promise<any>[]>}
 */
async function releasedTogether (pages, call, { release = true } = {}) {
  /** @type {Array<() => void>} */
  const readies = []
  const ready = pages.map((_, i) => new Promise(resolve => { readies[i] = () => resolve(undefined) }))
  await Promise.all(pages.map((page, i) => page.exposeFunction('tabReady', () => readies[i]())))
  const running = pages.map(call)
  const endedEarly = running.map(call => call.then(() => { throw new Error('a tab ended before every tab was ready') }))
  await Promise.race([Promise.all(ready), ...endedEarly])
  endedEarly.forEach(ended => ended.catch(() => {}))
  if (release) await Promise.all(pages.map(page => page.evaluate(() => /** @type {any} */ (window).release())))
  return running
}

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
 * record's `n` and counts its runs (m.write()); the tab starts when
 * released with the other (releasedTogether()).
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
    await new Promise(resolve => { w.release = resolve; w.tabReady() })
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
  // Both tabs have opened the database and wait: start them together.
  const running = await releasedTogether(pages, page => migrate(page, location, hideLocks))
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
 * One tab declares the index byTitle on the seeded records and builds it;
 * resolves with what db.schemaStatus() says of it then (`done` is left out
 * when this tab found it built) and what the index answers. With
 * `together`, it opens the database, then waits to be released
 * (releasedTogether()) before it declares the index (the comparison with the
 * stored schema) and builds; with `whenBuilding`, it calls
 * window.building() (a binding) as its build keys its first record (in the
 * critical section of its first batch; db.schemaStatus() would wait for
 * the build's critical sections, and the binding's call reaches the test
 * only once the tab's synchronous keying of the batch is over); with
 * `slowKeyMs`, its key function takes that long per record (a batch of 256
 * takes 256 times as long), so that another tab can act between batches.
 * @param {any} page @param {string} location @param {{ together?: boolean, whenBuilding?: boolean, slowKeyMs?: number }} [options]
 */
function build (page, location, { together = false, whenBuilding = false, slowKeyMs = 0 } = {}) {
  return page.evaluate(async ({ location, together, whenBuilding, slowKeyMs }) => {
    const { open } = /** @type {any} */ (window).levelkit
    const db = await open({ location })
    const w = /** @type {any} */ (window)
    if (together) await new Promise(resolve => { w.release = resolve; w.tabReady() })
    let keyed = 0
    const byTitle = (/** @type {any} */ r) => {
      // The first record of the first batch, keyed in the critical section
      // that writes it: another tab's comparison now waits for that batch.
      if (whenBuilding && ++keyed === 1) w.building()
      for (const end = performance.now() + slowKeyMs; performance.now() < end;);
      return r.title
    }
    const items = db.collection('items', { indexes: { byN: { key: (/** @type {any} */ r) => r.n }, byTitle: { key: byTitle } } })
    // As compared with the stored schema, before this tab builds anything.
    const declared = (await db.schemaStatus()).items.byTitle
    await db.buildIndexes()
    const status = (await db.schemaStatus()).items.byTitle
    const found = await items.query({ index: 'byTitle', eq: 't7' }).all()
    await db.close()
    return { declared: [declared.state, declared.done ?? null], state: status.state, done: status.done ?? null, total: status.total ?? null, found: found.map((/** @type {any} */ r) => r.title) }
  }, { location, together, whenBuilding, slowKeyMs })
}

test('two tabs declare an index on existing records, started together: one tab builds it, the other waits and finds it built', { timeout: 120000 }, async t => {
  await withTabs(2, async pages => {
    const location = 'build-two-tabs'
    await seed(pages[0], location)
    const perTab = await Promise.all(await releasedTogether(pages, page => build(page, location, { together: true })))
    t.comment(JSON.stringify(perTab))
    t.ok(perTab.every(r => r.state === 'ready'), 'ready in both tabs')
    t.same(perTab.map(r => r.done).sort(), [RECORDS, null].sort(), 'one tab indexed every record, the other none')
    t.ok(perTab.every(r => r.found.length === 1 && r.found[0] === 't7'), 'the index answers in both')
  })
})

// What `done` says of an index another tab built, whatever this tab read of
// it first: the other's build under way (the progress it had stored), or the
// index built (the count its build stored with it). Neither is this tab's.
test('a tab that opens while another tab builds the index, or after: ready, with no progress of its own', { timeout: 120000 }, async t => {
  await withTabs(2, async pages => {
    const location = 'build-opened-during'
    await seed(pages[0], location)
    /** @type {() => void} */
    let building = () => {}
    const stored = new Promise(resolve => { building = () => resolve(undefined) })
    await pages[0].exposeFunction('building', () => building())
    // The second tab opens the database and waits; the first builds.
    const [secondRun] = await releasedTogether([pages[1]], page => build(page, location, { together: true }), { release: false })
    const first = build(pages[0], location, { whenBuilding: true, slowKeyMs: 3 })
    await Promise.race([stored, first])
    // The first tab's build is writing its first batch (of three, the first
    // two about 0.8 s each): the second tab declares the index now, compares
    // it with the stored schema between two batches, then waits for the build.
    await pages[1].evaluate(() => /** @type {any} */ (window).release())
    const second = await secondRun
    const built = await first
    t.comment(JSON.stringify({ built, second }))
    t.same([built.state, built.done, built.total], ['ready', RECORDS, RECORDS], 'the building tab: ready, every record done')
    t.ok(second.declared[0] === 'building' && second.declared[1] > 0 && second.declared[1] < RECORDS, `the second tab compared during the build: building, the other tab's progress (${second.declared})`)
    t.same([second.state, second.done, second.total], ['ready', null, null], 'the tab opened during the build: ready, no done (it indexed nothing)')
    t.same(second.found, ['t7'], 'the index answers there')
    const after = await build(pages[1], location)
    t.same([after.state, after.done, after.total], ['ready', null, null], 'opened again after the build: ready, no done')
  })
})
