// The IndexedDB layer under the write path (lib/idb-direct.js) in a real
// headless Chromium: one transaction per critical section (counted, with a
// control that takes many), atomic batches when a request fails, and range
// reads with a count and a direction that answer as browser-level's
// iterator. Each assertion made in the browser comes back as one here.

import test from 'tape'
import { bundleForBrowser, launchChromium, modulePage, replay, serve } from './util/browser.js'

test('idb-direct in Chromium on IndexedDB', { timeout: 300000 }, async t => {
  const code = await bundleForBrowser('test/browser/idb-direct-entry.js')
  const server = await serve({ '/': modulePage('/entry.js'), '/entry.js': { body: code } })
  const browser = await launchChromium()
  try {
    const page = await browser.newPage()
    /** @type {string[]} */
    const pageErrors = []
    page.on('pageerror', err => pageErrors.push(err.message))
    await page.goto(server.url + '/')
    await page.waitForFunction(() => /** @type {any} */ (window).levelkitTests !== undefined)
    const results = await page.evaluate(() => /** @type {any} */ (window).levelkitTests.run())
    replay(t, results)
    t.same(pageErrors, [], 'no uncaught error in the page')
  } finally {
    await browser.close()
    await server.close()
  }
})
