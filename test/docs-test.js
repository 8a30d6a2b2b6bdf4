// The documentation must not rot: every relative link and #anchor resolves,
// generated figures are what the code measures now, and the tables that list
// what the code defines (error codes, check() problem types, the test files)
// list exactly that.

import test from 'tape'
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { marked } from 'marked'
import { codes } from '../index.js'
import { buildBundles, currentSizeBlock, sizeBlock, sizeDoc } from '../scripts/build.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const read = (/** @type {string} */ file) => readFileSync(join(root, file), 'utf8')

/** The documents whose links are checked (bench/RESULTS.md links into the docs). */
function documents () {
  const docs = readdirSync(join(root, 'docs')).filter(name => name.endsWith('.md')).map(name => `docs/${name}`)
  return ['README.md', 'CHANGELOG.md', 'workshop/README.md', 'bench/RESULTS.md', ...docs]
}

/** @param {any[]} tokens */
function plainText (tokens) {
  let text = ''
  for (const token of tokens) {
    if (token.tokens) text += plainText(token.tokens)
    else if (token.type !== 'html') text += token.text ?? ''
  }
  return text
}

/**
 * GitHub's heading anchor: lower case, punctuation other than `-` and `_`
 * dropped, spaces as `-`, and `-1`, `-2`, ... for repeated headings.
 * @param {string} text @param {Map<string, number>} seen
 */
function anchor (text, seen) {
  const base = text.toLowerCase().trim().replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '').replace(/ /g, '-')
  const count = seen.get(base) ?? 0
  seen.set(base, count + 1)
  return count === 0 ? base : `${base}-${count}`
}

/** @type {Map<string, { anchors: Set<string>, links: string[] }>} */
const parsed = new Map()

/** @param {string} file a path from the repository root */
function parse (file) {
  let result = parsed.get(file)
  if (!result) {
    const tokens = marked.lexer(read(file))
    const anchors = new Set()
    /** @type {string[]} */
    const links = []
    const seen = new Map()
    marked.walkTokens(tokens, token => {
      if (token.type === 'heading') anchors.add(anchor(plainText(token.tokens ?? []), seen))
      if (token.type === 'link' || token.type === 'image') links.push(token.href)
    })
    result = { anchors, links }
    parsed.set(file, result)
  }
  return result
}

/**
 * Why `href` in `file` does not resolve, or null if it does.
 * @param {string} file @param {string} href
 */
function brokenLink (file, href) {
  if (/^[a-z][a-z0-9+.-]*:/i.test(href)) return null // absolute: http:, mailto:, ...
  const [path, hash] = href.split('#', 2)
  const target = path === '' ? join(root, file) : resolve(root, dirname(file), decodeURIComponent(path))
  const inRepo = relative(root, target)
  if (inRepo.startsWith('..')) return 'points outside the repository'
  if (!existsSync(target)) return `${inRepo} does not exist`
  if (hash === undefined) return null
  if (!inRepo.endsWith('.md') || statSync(target).isDirectory()) return `an anchor into ${inRepo}, which is not a markdown file`
  return parse(inRepo).anchors.has(decodeURIComponent(hash)) ? null : `${inRepo} has no heading #${hash}`
}

test('anchors are computed as GitHub computes them', t => {
  const seen = new Map()
  t.is(anchor('`chat.watch(chatId, { after, signal, viewerId })`', seen), 'chatwatchchatid--after-signal-viewerid-')
  t.is(anchor('Session 4 (2026-11-22): messages in blocks; every read row at or above SQLite', seen), 'session-4-2026-11-22-messages-in-blocks-every-read-row-at-or-above-sqlite')
  t.is(anchor('Chat model: `levelkit/chat`', seen), 'chat-model-levelkitchat')
  t.is(anchor('Keys — the tuple_encoding', seen), 'keys--the-tuple_encoding')
  t.is(anchor('Chat model: `levelkit/chat`', seen), 'chat-model-levelkitchat-1', 'a repeated heading gets a suffix')
  t.end()
})

test('the link checker finds a broken link, a missing anchor and a way out of the repository', t => {
  t.is(brokenLink('README.md', 'docs/api.md#no-such-heading'), 'docs/api.md has no heading #no-such-heading')
  t.is(brokenLink('README.md', 'docs/nothing.md'), 'docs/nothing.md does not exist')
  t.is(brokenLink('docs/api.md', '../../elsewhere.md'), 'points outside the repository')
  t.is(brokenLink('docs/api.md', '#dbwritefn-options'), null)
  t.is(brokenLink('docs/api.md', 'https://example.com/#anything'), null)
  t.end()
})

test('every relative link and #anchor in the docs resolves', t => {
  let total = 0
  for (const file of documents()) {
    const { links } = parse(file)
    total += links.length
    const broken = links.map(href => [href, brokenLink(file, href)]).filter(([, why]) => why !== null)
    t.same(broken, [], `${file}: ${links.length} links, none broken`)
  }
  t.ok(total > 100, `${total} links checked`)
  t.end()
})

test('the bundle sizes in docs/browser.md are what the current build measures', async t => {
  const fresh = sizeBlock(await buildBundles({ write: false }))
  const stale = currentSizeBlock(readFileSync(sizeDoc, 'utf8'))
  t.is(stale, fresh, 'up to date (`npm run build -- --docs` rewrites the block)')
})

/**
 * The first column of the table that follows `heading` in a markdown file,
 * where it is one code span.
 * @param {string} file @param {string} heading
 */
function firstColumn (file, heading) {
  const tokens = marked.lexer(read(file))
  const at = tokens.findIndex(token => token.type === 'heading' && plainText(token.tokens ?? []) === heading)
  const table = tokens.slice(at + 1).find(token => token.type === 'table' || token.type === 'heading')
  if (at === -1 || !table || table.type !== 'table') throw new Error(`No table after "${heading}" in ${file}`)
  return table.rows.map((/** @type {any[]} */ row) => /^`([^`]+)`$/.exec(row[0].text)?.[1] ?? row[0].text)
}

test('the errors table lists exactly the codes levelkit exports', t => {
  t.same(firstColumn('docs/api.md', 'Errors').sort(), Object.values(codes).sort(), 'one row per code, no other')
  t.end()
})

test('the check() table lists exactly the problem types lib/check.js reports and index.d.ts declares', t => {
  const documented = firstColumn('docs/api.md', 'db.check(options)').sort()
  const reported = [...new Set([...read('lib/check.js').matchAll(/\bproblem\('([a-z-]+)'/g)].map(m => m[1]))].sort()
  const union = /export interface Problem \{\s*type:([^\n]*(?:\n\s*\|?\s*'[^\n]*)*)/.exec(read('index.d.ts'))
  const declared = [...(union?.[1] ?? '').matchAll(/'([a-z-]+)'/g)].map(m => m[1]).sort()
  t.ok(reported.length > 10, `found ${reported.length} problem types in lib/check.js`)
  t.same(documented, reported, 'docs/api.md documents every type check() reports, and no other')
  t.same(declared, reported, 'index.d.ts declares the same types')
  t.end()
})

test('docs/testing.md names every test file', t => {
  const inventory = read('docs/testing.md')
  const files = readdirSync(join(root, 'test')).filter(name => name.endsWith('-test.js'))
  t.ok(files.length > 20, `${files.length} test files`)
  t.same(files.filter(name => !inventory.includes(`\`${name}\``)), [], 'none missing from the inventory')
  t.end()
})
