// Real-time order across tabs of one IndexedDB database (headless Chromium,
// the built bundle: run `npm run build` after changing lib/): once an
// operation is acknowledged in one tab, an operation called after it in
// another sees it, through the leased cross-tab lock and the lease cache
// (lib/cross-tab.js, lib/idb-direct.js), without the cache (readCache: 0),
// and with the cache in tabs that hear of their own commits late. The
// driver here runs each operation in a tab and times the call before it is
// sent and the answer after it came back, so a pair it finds "called after
// acknowledged" really was (test/util/realtime.js checks every pair). LEVELKIT_REALTIME_OPS (default 300) operations a history;
// LEVELKIT_REALTIME_SEED replays one.
import test from 'tape'
import { bundleForBrowser, launchChromium, modulePage, serve } from './util/browser.js'
import { prng } from './util/prng.js'
import { runHistory, checkHistory, crossHandlePairs } from './util/realtime.js'

const COUNT = Number(process.env.LEVELKIT_REALTIME_OPS ?? 300)
const SEED = Number(process.env.LEVELKIT_REALTIME_SEED ?? Date.now() % 1e9)
const REGISTERS = 3

/** @param {number} ms */
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

// The third: each tab runs its batches' `complete` listeners up to 25 ms
// late, as a busy tab does (the other tab sees a batch from its commit on):
// the lease cache must not answer the value before a batch of its own tab
// that the other tab may already have read (before the lease cache left the
// keys of a batch on its way aside, 4 runs of 6 found such a pair).
/** @type {Array<{ name: string, options: object, late?: number }>} */
const configs = [{ name: 'lease cache', options: {} }, { name: 'readCache: 0', options: { readCache: 0 } }, { name: 'lease cache, commits heard late', options: {}, late: 25 }]

test('browser realtime: an operation called after another tab\'s was acknowledged sees it', { timeout: 300000 }, async t => {
  const code = await bundleForBrowser('test/browser/realtime-entry.js')
  const server = await serve({ '/': modulePage('/entry.js'), '/entry.js': { body: code } })
  const browser = await launchChromium()
  try {
    for (const [n, { name, options, late }] of configs.entries()) {
      const seedValue = SEED + n
      const context = await browser.newContext()
      /** @type {string[]} */
      const pageErrors = []
      /** @type {import('playwright-core').Page[]} */
      const pages = []
      for (let i = 0; i < 2; i++) {
        const page = await context.newPage()
        page.on('pageerror', err => pageErrors.push(err.message))
        await page.goto(server.url + '/')
        await page.waitForFunction(() => /** @type {any} */ (window).realtime !== undefined)
        if (late !== undefined) await page.evaluate(ms => /** @type {any} */ (window).realtime.lateComplete(ms), late)
        pages.push(page)
      }
      const layout = { lists: seedValue % 2 === 0, blockSize: seedValue % 3 === 0 ? 4 : 0 }
      for (const page of pages) await page.evaluate(([options, layout]) => /** @type {any} */ (window).realtime.open('realtime', options, layout), /** @type {const} */ ([options, layout]))
      await pages[0].evaluate(registers => /** @type {any} */ (window).realtime.seed(registers), REGISTERS)
      const handles = pages.map(page => ({
        run: async (/** @type {string} */ op, /** @type {any} */ args) => {
          const { result, error } = await page.evaluate(([op, args]) => /** @type {any} */ (window).realtime.run(op, args), /** @type {const} */ ([op, args]))
          if (error !== undefined) throw Object.assign(new Error(error.message), { code: error.code })
          return result
        }
      }))
      for (const handle of handles) await handle.run('watch', {})
      const events = await runHistory({ handles, random: prng(seedValue), count: COUNT, clients: 6, registers: REGISTERS })
      const problems = checkHistory(events)
      for (const problem of problems.slice(0, 10)) t.comment(problem)
      t.same(problems.slice(0, 10), [], `${name}, seed ${seedValue}: ${events.length} operations, ${crossHandlePairs(events)} close pairs across the tabs, no violation of real-time order (${problems.length} found)`)
      const appended = events.filter(e => e.op === 'append' && e.result !== undefined).length
      for (const [i, handle] of handles.entries()) {
        let watched = await handle.run('watched', {})
        for (let waited = 0; watched.seqs.length < appended && waited < 5000; waited += 20) {
          await sleep(20)
          watched = await handle.run('watched', {})
        }
        await handle.run('watched', { stop: true })
        t.same(watched.seqs, Array.from({ length: appended }, (_, k) => k + 1), `${name}: tab ${i}'s watcher delivered the ${appended} children in order, none missed or repeated${watched.error ? ` (it failed: ${watched.error})` : ''}`)
      }
      t.same(await pages[1].evaluate(() => /** @type {any} */ (window).realtime.check()), [], `${name}: check() is clean`)
      for (const page of pages) await page.evaluate(() => /** @type {any} */ (window).realtime.close())
      t.same(pageErrors, [], `${name}: no uncaught error in the pages`)
      await context.close()
    }
  } finally {
    await browser.close()
    await server.close()
  }
})
