// The browser bundle as shipped (dist/, built by `npm run build` before the
// tests): what it exports, that it carries no Node built-in and no Buffer
// shim, and that a bundler given no configuration picks the browser build.

import test from 'tape'
import { build } from 'esbuild'
import { readFileSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { root, bundlePath } from './util/browser.js'

const minified = join(root, 'dist', 'levelkit.browser.min.js')

test('the bundle exports the core and the chat model', async t => {
  for (const file of [bundlePath, minified]) {
    const bundle = await import(file)
    for (const name of ['open', 'ChatStore', 'encodeTuple', 'decodeTuple', 'tupleEncoding']) {
      t.ok(name in bundle, `${file.slice(root.length)} exports ${name}`)
    }
  }
})

test('the bundle needs no Node built-in and carries no Buffer shim', async t => {
  const code = readFileSync(bundlePath, 'utf8')
  // Checked with t.ok: a failing t.doesNotMatch would print the whole bundle.
  const absent = (/** @type {RegExp} */ pattern, /** @type {string} */ what) => {
    const match = pattern.exec(code)
    t.ok(match === null, match ? `${what}: found ${JSON.stringify(code.slice(Math.max(0, match.index - 80), match.index + 80))}` : what)
  }
  absent(/\brequire\(\s*["'](node:)?(fs|path|events|buffer|stream|crypto|util|os|async_hooks|worker_threads)["']\s*\)/, 'no require() of a Node module')
  absent(/from\s*["']node:/, 'no import of a node: module')
  absent(/poolSize|kMaxLength/, 'no Buffer shim (the buffer package) inside')
  absent(/new ClassicLevel|new AsyncLocalStorage|scryptSync|crypto\.scrypt\(/, 'no Node-only backend, context or password code')
  // esbuild's readable output names each module it inlines in a comment.
  absent(/^\/\/ lib\/(section-cache|backends\/[^\n]*)\.js$/m, 'no module only the postgres backend uses')
  const sizes = JSON.parse(readFileSync(join(root, 'dist', 'size.json'), 'utf8'))
  const min = sizes.files['levelkit.browser.min.js']
  t.ok(min.bytes > 0 && min.gzip > 0 && min.gzip < min.bytes, `size.json records the minified size (${min.bytes} bytes, ${min.gzip} gzipped)`)
  t.ok(Object.keys(sizes.minifiedBytesByPackage).includes('levelkit'), 'and what each package costs')
})

test('a bundler that splits dynamic imports loads check() and the memory backend on first use', t => {
  const { split } = JSON.parse(readFileSync(join(root, 'dist', 'size.json'), 'utf8'))
  const loaded = split.onOpen.modules
  t.ok(loaded.includes('lib/database.js') && loaded.some((/** @type {string} */ m) => m.includes('node_modules/browser-level/')), 'opening IndexedDB loads the core and browser-level')
  t.notOk(loaded.includes('lib/check.js'), 'not check.js')
  t.ok(split.onDemand.modules.includes('lib/check.js'), 'which is a chunk of its own')
  t.notOk(loaded.some((/** @type {string} */ m) => m.includes('node_modules/memory-level/')), 'nor memory-level')
  t.ok(split.onOpen.bytes + split.onDemand.bytes > 0 && split.onOpen.gzip < split.onOpen.bytes, `sizes recorded (${split.onOpen.bytes} bytes to open, ${split.onDemand.bytes} on first use)`)
  t.end()
})

test('the single-file bundle inlines check.js as a static import (no lazy-initialisation wrapper)', t => {
  const code = readFileSync(bundlePath, 'utf8')
  t.ok(code.includes('async function checkDatabase('), 'check.js is in the bundle')
  t.notOk(/\binit_check\b/.test(code), 'not wrapped for a dynamic import (lib/check-eager.js is used for #check)')
  t.end()
})

test('a bundler with no configuration picks the browser build from the exports map', async t => {
  // Inside the package, so `levelkit` resolves to this package (self-reference).
  const dir = mkdtempSync(join(root, 'test', '.bundler-'))
  try {
    const entry = join(dir, 'app.js')
    writeFileSync(entry, "import { open } from 'levelkit'\nimport { ChatStore } from 'levelkit/chat'\nexport { open, ChatStore }\n")
    const result = await build({ entryPoints: [entry], bundle: true, platform: 'browser', format: 'esm', write: false, metafile: true, logLevel: 'silent' })
    const inputs = Object.keys(result.metafile.inputs)
    t.ok(inputs.includes('browser.js'), 'browser.js is the entry picked')
    t.notOk(inputs.includes('index.js'), 'not the Node entry')
    t.ok(inputs.some(file => file.includes('node_modules/browser-level/')), 'browser-level is bundled')
    t.notOk(inputs.some(file => file.includes('classic-level')), 'classic-level is not')
    t.ok(inputs.includes('lib/context-browser.js') && inputs.includes('lib/chat/password-browser.js'), 'the browser variants of #context and #passwords')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
