// Two checkouts of levelkit side by side in one process: ChatStore from
// each tree on its own LevelDB, the same data and the same operations, timed
// in alternating slices. Answers "what did this change cost?" with a ratio
// measured at the same moment on the same machine, which a comparison of two
// separate chat-workload runs on a shared 2-core VM cannot (their noise is
// larger than most changes).
//
//   git worktree add ../levelkit-before <rev>
//   ln -s "$PWD/node_modules" ../levelkit-before/node_modules
//   node bench/compare-trees.js --before ../levelkit-before
//
// --after defaults to this repository. Each tree's index.js and chat.js are
// imported by path, so a tree needs no install of its own (the packages its
// lib/ imports resolve from the node_modules it finds).

import { pathToFileURL, fileURLToPath } from 'node:url'
import { mkdtempSync, rmSync, existsSync } from 'node:fs'
import os, { tmpdir } from 'node:os'
import path from 'node:path'
import { parseCli, failWith, optionOf, startRun, printMachine, finishRun, writeCsv, printTable, prng } from './lib/seeds-common.js'
import { median, min, max, fmt, parseCount } from './lib/stats.js'

const NAME = 'compare-trees'
const USAGE = `Usage: node bench/${NAME}.js --before <dir> [options]
  --before DIR     a levelkit checkout (a git worktree of an earlier commit)
  --after DIR      another one (default: this repository)
  --users N        users (default 2000)
  --chats N        chats of 20 members (default 400)
  --messages N     messages spread over the chats before timing (default 20000)
  --ops a,b,...    only these (getUser, getChats, last50, checkChatMember, addChatMessage, addChatMessageC, createUserC)
  --n N            operations per slice (default: 1,000 to 20,000, by operation)
  --slices N       alternating slices per operation (default 12)
  --out DIR        output folder (default bench/out)`

/**
 * What each operation does with one side's store, for items [from, to).
 * @type {Record<string, { n: number, run: (side: Side, from: number, to: number) => Promise<void> }>}
 */
const OPS = {
  getUser: { n: 10000, run: async (s, from, to) => { for (let i = from; i < to; i++) await s.chat.getUser(`user${(i * 7) % s.users.length}`) } },
  getChats: { n: 3000, run: async (s, from, to) => { for (let i = from; i < to; i++) await s.chat.getChats(s.users[i % s.users.length]) } },
  last50: { n: 1000, run: async (s, from, to) => { for (let i = from; i < to; i++) await s.chat.getChatMessages(s.chats[i % s.chats.length], { n: 50 }) } },
  checkChatMember: { n: 20000, run: async (s, from, to) => { for (let i = from; i < to; i++) await s.chat.checkChatMember(s.chats[i % s.chats.length], s.users[(i * 3) % s.users.length]) } },
  addChatMessage: { n: 1000, run: async (s, from, to) => { for (let i = from; i < to; i++) await send(s, i) } },
  addChatMessageC: { n: 3000, run: (s, from, to) => inFlight(from, to, i => send(s, i)) },
  createUserC: { n: 1000, run: (s, from, to) => inFlight(from, to, i => s.chat.createUser({ username: `new${i}`, password: 'pw' })) }
}

/**
 * @typedef {{ chat: any, db: any, users: number[], chats: number[], members: number[][], dir: string }} Side
 */

const args = parseCli(NAME, USAGE, {
  before: { type: 'string' },
  after: { type: 'string', default: fileURLToPath(new URL('..', import.meta.url)) },
  users: { type: 'string', default: '2000' },
  chats: { type: 'string', default: '400' },
  messages: { type: 'string', default: '20000' },
  ops: { type: 'string' },
  n: { type: 'string' },
  slices: { type: 'string', default: '12' },
  out: { type: 'string', default: 'bench/out' }
})
if (!args.before) failWith(NAME, USAGE, '--before is required')
const trees = { before: path.resolve(args.before), after: path.resolve(args.after) }
for (const [side, dir] of Object.entries(trees)) {
  if (!existsSync(path.join(dir, 'index.js')) || !existsSync(path.join(dir, 'chat.js'))) failWith(NAME, USAGE, `--${side} ${dir} is not a levelkit checkout (no index.js and chat.js)`)
}
const sizes = optionOf(NAME, USAGE, () => ({
  users: parseCount(args.users), chats: parseCount(args.chats), messages: parseCount(args.messages), slices: parseCount(args.slices), n: args.n === undefined ? undefined : parseCount(args.n)
}))
if (sizes.users < 20) failWith(NAME, USAGE, '--users must be at least 20 (a chat has 20 members)')
const ops = args.ops === undefined ? Object.keys(OPS) : args.ops.split(',')
for (const op of ops) if (!(op in OPS)) failWith(NAME, USAGE, `unknown operation ${op}`)

const run = { name: NAME, ...startRun(NAME, args.out, ['classic-level']) }
console.log(`${NAME}: ChatStore from two trees on LevelDB, alternating slices in one process`)
console.log(`  before ${trees.before}\n  after  ${trees.after}`)
console.log(`  data: ${fmt(sizes.users)} users, ${fmt(sizes.chats)} chats of 20 members, ${fmt(sizes.messages)} messages; ${sizes.slices} slices per operation`)
printMachine(run, ['classic-level'])

/** @type {Record<string, Side>} */
const sides = {}
for (const [name, dir] of Object.entries(trees)) sides[name] = await setUp(dir)

const rows = []
/** @type {Record<string, unknown>} */
const results = {}
for (const op of ops) {
  const n = sizes.n ?? OPS[op].n
  /** @type {Record<string, number[]>} ops/s per slice */
  const rates = { before: [], after: [] }
  for (let k = 0; k < sizes.slices; k++) {
    for (const side of k % 2 === 0 ? ['before', 'after'] : ['after', 'before']) {
      const start = performance.now()
      await OPS[op].run(sides[side], k * n, (k + 1) * n)
      rates[side].push(n / ((performance.now() - start) / 1000))
    }
  }
  // The ratio within each pair of slices, then the median: robust to a
  // load spike that hits one pair.
  const ratios = rates.after.map((rate, k) => rate / rates.before[k])
  results[op] = { n, rates, ratio: median(ratios) }
  rows.push([op, fmt(n), fmt(median(rates.before)), fmt(median(rates.after)), `${median(ratios).toFixed(3)}×`, `${min(ratios).toFixed(2)}..${max(ratios).toFixed(2)}`])
}
console.log()
printTable([['operation', 'per slice', 'before ops/s', 'after ops/s', 'after/before', 'min..max'], ...rows])
console.log()
console.log('  Medians over the slices; after/before is the median of the ratio within each pair of slices (> 1: after is faster).')

for (const side of Object.values(sides)) {
  await side.db.close()
  rmSync(side.dir, { recursive: true, force: true })
}
writeCsv(path.join(run.outDir, 'results.csv'), ['operation', 'slice', 'before_ops_per_s', 'after_ops_per_s'],
  ops.flatMap(op => /** @type {any} */ (results[op]).rates.before.map((/** @type {number} */ b, /** @type {number} */ k) => [op, k, b, /** @type {any} */ (results[op]).rates.after[k]])))
finishRun(run.outDir, { ...run, loadAfter: os.loadavg() }, { trees, sizes, results }, ['results.csv'])

/**
 * One side: the tree's ChatStore on a fresh LevelDB, with the data set
 * (the same on both sides: one seed).
 * @param {string} dir @returns {Promise<Side>}
 */
async function setUp (dir) {
  const { open } = await import(pathToFileURL(path.join(dir, 'index.js')).href)
  const { ChatStore } = await import(pathToFileURL(path.join(dir, 'chat.js')).href)
  const location = mkdtempSync(path.join(tmpdir(), `${NAME}-`))
  const db = await open({ location })
  const options = { passwordCost: { scryptN: 2 } }
  // Trees from before ChatStore.open() existed construct it directly.
  const chat = typeof ChatStore.open === 'function' ? await ChatStore.open(db, options) : new ChatStore(db, options)
  const rand = prng(1)
  const users = []
  for (let i = 0; i < sizes.users; i++) users.push(await chat.createUser({ username: `user${i}`, password: 'pw' }))
  const chats = []
  const members = []
  for (let c = 0; c < sizes.chats; c++) {
    const ids = new Set([users[c % users.length]])
    while (ids.size < 20) ids.add(users[rand.int(users.length)])
    const list = [...ids]
    members.push(list)
    chats.push(await chat.createChat({ name: `chat${c}`, adminId: list[0], userIds: list.slice(1) }))
  }
  const side = { chat, db, users, chats, members, dir: location }
  await inFlight(0, sizes.messages, i => send(side, i))
  return side
}

/** A message from a member of chat `i % chats`. @param {Side} s @param {number} i */
function send (s, i) {
  const c = i % s.chats.length
  return s.chat.addChatMessage({ chatId: s.chats[c], senderId: s.members[c][i % 20], text: `message ${i} of the compare-trees run` })
}

/**
 * Run `fn(i)` for i in [from, to) with 64 in flight.
 * @param {number} from @param {number} to @param {(i: number) => Promise<unknown>} fn
 */
async function inFlight (from, to, fn) {
  let next = from
  const worker = async () => { while (next < to) await fn(next++) }
  await Promise.all(Array.from({ length: 64 }, worker))
}
