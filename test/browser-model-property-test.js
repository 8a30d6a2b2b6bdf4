// The model property test (test/model-property-test.js, test/util/model-*.js)
// in headless Chromium on IndexedDB, against the built bundle (run `npm run
// build` after changing lib/): fast-check runs in a first tab
// (test/browser/model-property-entry.js), each run on a new database; the
// scenarios' 'other' commands run in a second tab on the same database
// (cross-tab lock hand-over, the lease cache dropping the other tab's keys),
// and each run ends with the state compared through both tabs and through
// the first reopened. 'reopen' commands close both and open again, with
// relationIndexes drawn at random (false → true moves the members' reverse
// lists into IndexedDB's index).
//
// LEVELKIT_MODEL_RUNS=<n> sets the number of runs (default 6); a failure
// prints the counterexample and its replay command (LEVELKIT_MODEL_SEED,
// LEVELKIT_MODEL_PATH, LEVELKIT_MODEL_ONLY=indexeddb).

import test from 'tape'
import { bundleForBrowser, launchChromium, modulePage, serve } from './util/browser.js'
import { MODEL_PATH, MODEL_RUNS, MODEL_SEED, reportModel, skipped } from './util/model-node.js'

const RUNS = MODEL_RUNS ?? 6
const FILE = 'test/browser-model-property-test.js'

test('model: levelkit on IndexedDB (two tabs) behaves like the reference model', { skip: skipped('indexeddb'), timeout: 3600000 }, async t => {
  const seed = MODEL_SEED + 20
  t.comment(`fast-check seed ${seed}, ${RUNS} runs (rerun with LEVELKIT_MODEL_SEED=${MODEL_SEED})`)
  const code = await bundleForBrowser('test/browser/model-property-entry.js')
  const server = await serve({ '/': modulePage('/entry.js'), '/entry.js': { body: code } })
  const browser = await launchChromium()
  try {
    const context = await browser.newContext()
    /** @type {string[]} */
    const pageErrors = []
    const pages = []
    for (let i = 0; i < 2; i++) {
      const page = await context.newPage()
      page.on('pageerror', err => pageErrors.push(`tab ${i}: ${err.message}`))
      await page.goto(server.url + '/')
      await page.waitForFunction(() => /** @type {any} */ (window).model !== undefined)
      pages.push(page)
    }
    await pages[1].evaluate(() => /** @type {any} */ (window).model.serve())
    const options = { seed, numRuns: RUNS, path: MODEL_PATH, timeout: 60000, tabs: 2 }
    const result = await pages[0].evaluate(options => /** @type {any} */ (window).model.check(options), options)
    reportModel(t, { name: 'indexeddb', file: FILE, seed }, result)
    const served = await pages[1].evaluate(() => /** @type {any} */ (window).model.served())
    if (MODEL_PATH === undefined) t.ok(served > 0 || RUNS < 3, `the second tab ran ${served} of the commands`)
    t.same(pageErrors, [], 'no uncaught error in the tabs')
  } finally {
    await browser.close()
    await server.close()
  }
})
