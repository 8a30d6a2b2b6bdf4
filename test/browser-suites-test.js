// The conformance and chat suites, unchanged, in a real headless Chromium on
// IndexedDB (browser-level), against the built bundle. Each assertion made in
// the browser comes back as an assertion of this test.

import test from 'tape'
import { bundleForBrowser, launchChromium, modulePage, replay, serve } from './util/browser.js'

test('conformance and chat suites in Chromium on IndexedDB', { timeout: 300000 }, async t => {
  const code = await bundleForBrowser('test/browser/suites-entry.js')
  const server = await serve({ '/': modulePage('/suites.js'), '/suites.js': { body: code } })
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
