// Unique claims on IndexedDB in a real headless Chromium: createUser makes
// no read of the username (its entry is add()ed), a claim refused in a
// group leaves the other writes of its IndexedDB transaction written (their
// sections run again) and writes nothing of its own, a claim that a later
// op of its group replaces is still made, and two databases on one
// IndexedDB claiming the same names get one winner each. Each assertion made
// in the browser comes back as one here.

import test from 'tape'
import { bundleForBrowser, launchChromium, modulePage, replay, serve } from './util/browser.js'

test('unique claims in Chromium on IndexedDB', { timeout: 300000 }, async t => {
  const code = await bundleForBrowser('test/browser/idb-claims-entry.js')
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
