#!/usr/bin/env node
// Build the browser bundle: dist/levelkit.browser.js (ESM, readable) and
// dist/levelkit.browser.min.js, with the chat model, from the package's
// browser entry. Prints each file's size (raw, gzipped) and what each
// dependency costs in the minified bundle, and writes them to dist/size.json.

import { build } from 'esbuild'
import { gzipSync } from 'node:zlib'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'

const root = fileURLToPath(new URL('..', import.meta.url))
const dist = join(root, 'dist')

/** Everything a browser user imports: the core and the chat model. */
const entry = "export * from './browser.js'\nexport * from './chat.js'\n"

/**
 * abstract-level and level-transcoder require('buffer') for Buffer-format
 * encodings only, and fall back when it resolves to nothing: so the bundle
 * carries no Buffer shim (the 'buffer' and 'binary' encodings are then
 * unavailable; levelkit uses 'view' and 'utf8').
 * @type {import('esbuild').Plugin}
 */
const noBufferShim = {
  name: 'no-buffer-shim',
  setup (build) {
    build.onResolve({ filter: /^buffer\/?$/ }, () => ({ path: 'buffer', namespace: 'no-buffer-shim' }))
    build.onLoad({ filter: /.*/, namespace: 'no-buffer-shim' }, () => ({ contents: 'module.exports = null', loader: 'js' }))
  }
}

/** @param {boolean} minify @param {string} outfile */
async function bundle (minify, outfile) {
  const result = await build({
    stdin: { contents: entry, resolveDir: root, sourcefile: 'levelkit.browser.js', loader: 'js' },
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify,
    metafile: true,
    legalComments: minify ? 'eof' : 'inline',
    outfile,
    plugins: [noBufferShim],
    logLevel: 'warning'
  })
  return result.metafile
}

/** Bytes each package (or levelkit itself) contributes to one output. @param {import('esbuild').Metafile} metafile */
function costByPackage (metafile) {
  /** @type {Record<string, number>} */
  const cost = {}
  for (const output of Object.values(metafile.outputs)) {
    for (const [file, { bytesInOutput }] of Object.entries(output.inputs)) {
      const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)
      const name = match ? match[1] : 'levelkit'
      cost[name] = (cost[name] || 0) + bytesInOutput
    }
  }
  return Object.fromEntries(Object.entries(cost).sort((a, b) => b[1] - a[1]))
}

/** @param {number} bytes */
function kib (bytes) {
  return `${(bytes / 1024).toFixed(1)} KiB`
}

mkdirSync(dist, { recursive: true })
const files = { 'levelkit.browser.js': false, 'levelkit.browser.min.js': true }
/** @type {Record<string, { bytes: number, gzip: number }>} */
const sizes = {}
let packages = {}
for (const [name, minify] of Object.entries(files)) {
  const metafile = await bundle(minify, join(dist, name))
  const code = readFileSync(join(dist, name))
  sizes[name] = { bytes: code.length, gzip: gzipSync(code, { level: 9 }).length }
  if (minify) packages = costByPackage(metafile)
}

writeFileSync(join(dist, 'size.json'), JSON.stringify({ files: sizes, minifiedBytesByPackage: packages }, null, 2) + '\n')
for (const [name, { bytes, gzip }] of Object.entries(sizes)) {
  console.log(`dist/${name}  ${kib(bytes)}  (${kib(gzip)} gzipped)`)
}
console.log('Minified bytes by package:')
for (const [name, bytes] of Object.entries(packages)) console.log(`  ${name.padEnd(24)} ${kib(bytes).padStart(10)}`)
