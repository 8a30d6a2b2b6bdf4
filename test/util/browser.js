// Helpers for the tests that run in a real Chromium: bundle a test entry with
// esbuild, serve files on 127.0.0.1, launch Debian's chromium through
// playwright-core, and turn the browser's results back into tape assertions.

import { build } from 'esbuild'
import { createServer } from 'node:http'
import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { extname, join } from 'node:path'
import { chromium } from 'playwright-core'

export const root = fileURLToPath(new URL('../..', import.meta.url))
export const bundlePath = join(root, 'dist', 'levelkit.browser.js')

/** Where Chromium is: $LEVELKIT_CHROMIUM, else Debian's package. */
export const chromiumPath = process.env.LEVELKIT_CHROMIUM || '/usr/bin/chromium'

// As root in a VM with no network: no sandbox, no GPU, and none of the
// background connections a closed network refuses.
const CHROMIUM_ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-default-apps', '--disable-extensions', '--mute-audio'
]

function assertChromium () {
  if (!existsSync(chromiumPath)) {
    throw new Error(`Chromium is not installed at ${chromiumPath}: run \`bash scripts/install-system-packages.sh\` (npm test does it first), or set LEVELKIT_CHROMIUM`)
  }
}

/** Launch headless Chromium, or throw saying how to install it. */
export async function launchChromium () {
  assertChromium()
  return chromium.launch({ executablePath: chromiumPath, headless: true, args: CHROMIUM_ARGS })
}

/**
 * Launch headless Chromium on a profile folder that outlives it (IndexedDB
 * data stays there), as a browser context.
 * @param {string} userDataDir
 * @param {{ timeout?: number, extraArgs?: string[] }} [options] timeout: Playwright's bound on the launch in ms
 *   (30,000; 0: none, for a caller that bounds it); extraArgs: command-line flags after the usual ones
 *   (the browser bench's `--js-flags=--expose-gc`)
 */
export async function launchPersistentChromium (userDataDir, options = {}) {
  assertChromium()
  const { extraArgs = [], ...rest } = options
  return chromium.launchPersistentContext(userDataDir, { executablePath: chromiumPath, headless: true, args: [...CHROMIUM_ARGS, ...extraArgs], ...rest })
}

/** A page that loads the bundle as `window.levelkit`. */
export const LEVELKIT_PAGE = {
  body: `<!doctype html><meta charset="utf-8"><title>levelkit</title>
<script type="module">import * as levelkit from '/levelkit.js'; window.levelkit = levelkit</script>`
}

/**
 * Bundle a test entry for the browser, with every import of the package's
 * entry points (index.js, browser.js, chat.js) pointed at the built bundle,
 * so the tests exercise what ships.
 * @param {string} entry path relative to the repository root
 * @returns {Promise<string>} the bundled code
 */
export async function bundleForBrowser (entry) {
  if (!existsSync(bundlePath)) throw new Error(`${bundlePath} is missing: run \`npm run build\` (npm test does it first)`)
  const entryPoints = new Set(['index.js', 'browser.js', 'chat.js'].map(name => join(root, name)))
  const result = await build({
    entryPoints: [join(root, entry)],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    write: false,
    logLevel: 'warning',
    plugins: [{
      name: 'use-the-built-bundle',
      setup (b) {
        b.onResolve({ filter: /\.js$/ }, args => {
          const resolved = join(args.resolveDir, args.path)
          return entryPoints.has(resolved) ? { path: bundlePath } : undefined
        })
      }
    }]
  })
  return result.outputFiles[0].text
}

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.json': 'application/json' }

/**
 * Serve `files` (URL path → file path on disk, or { body }) on an ephemeral
 * port of 127.0.0.1. Anything else is a 404.
 * @param {Record<string, string | { body: string }>} files
 * @returns {Promise<{ url: string, close: () => Promise<void> }>}
 */
export async function serve (files) {
  const server = createServer((req, res) => {
    const path = new URL(req.url || '/', 'http://localhost').pathname
    const file = files[path]
    if (file === undefined) {
      res.writeHead(404).end('not found')
      return
    }
    const body = typeof file === 'string' ? readFileSync(file) : file.body
    const type = TYPES[/** @type {keyof TYPES} */ (extname(typeof file === 'string' ? file : path) || '.html')] || 'application/octet-stream'
    res.writeHead(200, { 'content-type': type, 'cache-control': 'no-store' }).end(body)
  })
  await new Promise(resolve => server.listen(0, '127.0.0.1', () => resolve(undefined)))
  const address = /** @type {import('node:net').AddressInfo} */ (server.address())
  return {
    url: `http://127.0.0.1:${address.port}`,
    close: () => new Promise(resolve => {
      server.closeAllConnections()
      server.close(() => resolve(undefined))
    })
  }
}

/** A page that loads one module script. @param {string} src */
export function modulePage (src) {
  return { body: `<!doctype html><meta charset="utf-8"><title>levelkit tests</title><script type="module" src="${src}"></script>` }
}

/**
 * Replay the results of test/browser/harness.js as tape assertions: one per
 * browser assertion, plus a failure for each test that threw or asserted
 * nothing.
 * @param {any} t
 * @param {import('../browser/harness.js').TestResult[]} results
 */
export function replay (t, results) {
  t.ok(results.length > 0, 'the browser ran tests')
  for (const result of results) {
    for (const a of result.assertions) {
      const detail = a.ok || a.actual === undefined ? '' : ` (${a.operator}: expected ${a.expected}, got ${a.actual})`
      t.ok(a.ok, `${result.name}: ${a.name}${detail}`)
    }
    if (result.error !== undefined) t.fail(`${result.name}: threw ${result.error}`)
    else if (result.assertions.length === 0) t.fail(`${result.name}: asserted nothing`)
  }
}

/**
 * Bundle the test entry `entry` (test/browser/harness.js tests), run it in
 * a page of a headless Chromium, and replay its results as tape
 * assertions, with one more that the page threw nothing uncaught. The page
 * is in a browser context of its own: in `shared` if given (left open, so
 * the tests of a file can share one launch: oneChromium()), else in a
 * Chromium launched for it and closed after.
 * With `pool` (oneChromium()), the page is one of the pool's, on an origin
 * of its own, given back to it after.
 * @param {any} t @param {string} entry @param {import('playwright-core').Browser} [shared]
 * @param {ReturnType<typeof pagePool>} [pool]
 */
export async function runEntryInChromium (t, entry, shared, pool) {
  const code = await bundleForBrowser(entry)
  const server = await serve({ '/': modulePage('/entry.js'), '/entry.js': { body: code } })
  /** @param {import('playwright-core').Page} page */
  const run = async (page) => {
    /** @type {string[]} */
    const pageErrors = []
    const onError = (/** @type {Error} */ err) => { pageErrors.push(err.message) }
    page.on('pageerror', onError)
    try {
      await page.goto(server.url + '/')
      await page.waitForFunction(() => /** @type {any} */ (window).levelkitTests !== undefined)
      const results = await page.evaluate(() => /** @type {any} */ (window).levelkitTests.run())
      replay(t, results)
      t.same(pageErrors, [], 'no uncaught error in the page')
    } finally {
      page.off('pageerror', onError)
    }
  }
  if (pool) {
    /** @type {import('playwright-core').Page[]} */
    let pages = []
    try {
      pages = await pool.take(1)
      await run(pages[0])
    } finally {
      await pool.give(pages)
      await server.close()
    }
    return
  }
  const browser = shared ?? await launchChromium()
  /** @type {import('playwright-core').BrowserContext | undefined} */
  let context
  try {
    context = await browser.newContext()
    await run(await context.newPage())
  } finally {
    if (shared) await context?.close()
    else await browser.close()
    await server.close()
  }
}

/**
 * One Chromium for the tests of a file, launched at the first use and
 * closed when tape is done (a launch is about 3 s of CPU, more on a loaded
 * machine). Its tests' tabs are pages of one browser context, kept from
 * test to test (pagePool()): a page opened in a new context is a renderer
 * process started, about 1 s of CPU on the CI machine, against a quarter of
 * that to navigate a kept one. Each test still starts on storage, locks
 * and channels of its own: its pages load from a server of its own, on a
 * port of its own, an origin no other test used.
 * @param {{ onFinish: (fn: () => void) => void }} test tape's test function
 * @returns {{
 *   withTabs: (count: number, fn: (pages: import('playwright-core').Page[]) => Promise<void>) => Promise<void>,
 *   runEntry: (t: any, entry: string) => Promise<void>
 * }} withTabs() and runEntryInChromium() in that Chromium
 */
export function oneChromium (test) {
  /** @type {Promise<import('playwright-core').Browser> | undefined} */
  let launched
  test.onFinish(() => { launched?.then(browser => browser.close(), () => {}) })
  const browser = () => (launched ??= launchChromium())
  const pool = pagePool(async () => (await browser()).newContext())
  return {
    withTabs: async (count, fn) => withTabs(count, fn, undefined, pool),
    runEntry: async (t, entry) => runEntryInChromium(t, entry, undefined, pool)
  }
}

/**
 * Pages kept for the next test of a file, in one browser context. A page
 * given back is navigated to about:blank first, which unloads the test's
 * document (its IndexedDB connections, locks and channels go with it;
 * Playwright's Chromium keeps no back-forward cache). A page the test
 * closed is dropped, and one it changed beyond its document (a function
 * exposed, a route, an init script, a listener of its own) is closed: the
 * next test gets a new one.
 * @param {() => Promise<import('playwright-core').BrowserContext>} newContext
 */
export function pagePool (newContext) {
  /** @type {Promise<import('playwright-core').BrowserContext> | undefined} */
  let context
  /** @type {import('playwright-core').Page[]} */
  const idle = []
  /** @type {WeakSet<import('playwright-core').Page>} */
  const altered = new WeakSet()
  /** @type {WeakMap<import('playwright-core').Page, string>} */
  const listeners = new WeakMap()
  const listening = (/** @type {import('playwright-core').Page} */ page) => page.eventNames().map(name => `${String(name)}:${page.listenerCount(name)}`).join(',')
  return {
    /** @param {number} count @returns {Promise<import('playwright-core').Page[]>} */
    async take (count) {
      const pages = []
      while (pages.length < count) {
        let page = idle.shift()
        if (page?.isClosed()) continue
        if (page === undefined) {
          page = await (await (context ??= newContext())).newPage()
          for (const method of /** @type {const} */ (['exposeFunction', 'exposeBinding', 'addInitScript', 'route', 'routeFromHAR', 'routeWebSocket', 'setExtraHTTPHeaders', 'setViewportSize', 'emulateMedia'])) {
            const original = /** @type {any} */ (page)[method].bind(page)
            const marked = /** @type {import('playwright-core').Page} */ (page)
            Object.defineProperty(page, method, { value: (/** @type {any[]} */ ...args) => { altered.add(marked); return original(...args) } })
          }
        }
        listeners.set(page, listening(page))
        pages.push(page)
      }
      return pages
    },
    /** @param {import('playwright-core').Page[]} pages */
    async give (pages) {
      for (const page of pages) {
        if (page.isClosed()) continue
        let reusable = !altered.has(page) && listeners.get(page) === listening(page)
        if (reusable) reusable = await page.goto('about:blank', { timeout: 10000 }).then(() => true, () => false)
        if (reusable) idle.push(page)
        else await page.close().catch(() => {})
      }
    }
  }
}

/**
 * withTabs() for the tests of a file, all in one Chromium (oneChromium()).
 * @param {{ onFinish: (fn: () => void) => void }} test tape's test function
 * @returns {(count: number, fn: (pages: import('playwright-core').Page[]) => Promise<void>) => Promise<void>}
 */
export function tabsInOneChromium (test) {
  return oneChromium(test).withTabs
}

/**
 * Run `fn` with `count` tabs of one origin open, each with the bundle
 * loaded as window.levelkit; close them after. The tabs are in a browser
 * context of their own (its own storage): in `browser` if given (left
 * open), else in a Chromium launched for them and closed after; or, with
 * `pool` (oneChromium()), pages of the pool's context on an origin of
 * their own, given back to it after.
 * @param {number} count @param {(pages: import('playwright-core').Page[]) => Promise<void>} fn
 * @param {import('playwright-core').Browser} [shared]
 * @param {ReturnType<typeof pagePool>} [pool]
 */
export async function withTabs (count, fn, shared, pool) {
  const server = await serve({ '/': LEVELKIT_PAGE, '/levelkit.js': bundlePath })
  /** @type {import('playwright-core').Page[]} */
  let pages = []
  if (pool) {
    try {
      pages = await pool.take(count)
      for (const page of pages) await load(page, server.url)
      await fn(pages)
    } finally {
      await pool.give(pages)
      await server.close()
    }
    return
  }
  const browser = shared ?? await launchChromium()
  /** @type {import('playwright-core').BrowserContext | undefined} */
  let context
  try {
    context = await browser.newContext()
    for (let i = 0; i < count; i++) {
      const page = await context.newPage()
      await load(page, server.url)
      pages.push(page)
    }
    await fn(pages)
  } finally {
    if (shared) await context?.close()
    else await browser.close()
    await server.close()
  }
}

/** Load LEVELKIT_PAGE from `url` in `page`, until window.levelkit is there. @param {import('playwright-core').Page} page @param {string} url */
async function load (page, url) {
  await page.goto(url + '/')
  await page.waitForFunction(() => /** @type {any} */ (window).levelkit !== undefined)
}
