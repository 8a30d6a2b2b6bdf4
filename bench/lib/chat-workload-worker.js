// One run of bench/chat-workload.js, in a process of its own (forked by it):
// fresh databases on both sides, the same pre-population, then every
// operation timed on both sides in alternating slices. Receives one config
// message, answers with one result message, and exits.
//
// Also usable directly for profiling one side:
//   node --cpu-prof bench/lib/chat-workload-worker.js '<config JSON>'

import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { Progress } from './progress.js'
import { serveOneRun } from './child-run.js'
import { openLevelkit, openSqlite, hashPassword } from './chat-workload-sides.js'
import { prng } from 'levelkit-testkit/prng'
import { dirSize } from './seeds-common.js'

/**
 * @typedef {{
 *   users: number, chats: number, members: number, pairChats: number, messages: number,
 *   n: Record<string, number>, concurrency: number, slices: number, scryptN: number,
 *   seed: number, zipf?: number, readCache?: 0 | { policy: string, size?: number }, run: number, dbDir: string, keepDb: boolean, ops: string[], sides: string[],
 *   warmup: boolean, label: string, floorN: number
 * }} Config
 * @typedef {import('./chat-workload-sides.js').Side} Side
 */

const WORDS = ['hello', 'there', 'ok', 'see', 'you', 'tomorrow', 'lunch', 'deploy', 'is', 'done', 'the', 'build', 'broke', 'again', 'thanks', 'sure', 'meeting', 'at', 'noon', 'coffee', 'ship', 'it', 'review', 'please', 'why', 'not', 'sqlite', 'level']

/** A message text of 10..150 characters. @param {ReturnType<typeof prng>} random */
function text (random) {
  const target = 10 + random.int(140)
  let s = WORDS[random.int(WORDS.length)]
  while (s.length < target) s += ' ' + WORDS[random.int(WORDS.length)]
  return s.slice(0, target)
}

/**
 * A picker of 1..n: uniform, or with Zipf skew `s` over a fixed random
 * permutation of the ids (so the hot ids are spread over the key space, not
 * the first ones).
 * @param {number} n @param {number} s @param {ReturnType<typeof prng>} random
 * @returns {() => number}
 */
function picker (n, s, random) {
  if (!(s > 0)) return () => 1 + random.int(n)
  const cdf = new Float64Array(n)
  let total = 0
  for (let rank = 1; rank <= n; rank++) cdf[rank - 1] = (total += 1 / Math.pow(rank, s))
  const ids = Array.from({ length: n }, (_, i) => i + 1)
  for (let i = n - 1; i > 0; i--) {
    const j = random.int(i + 1)
    const id = ids[i]
    ids[i] = ids[j]
    ids[j] = id
  }
  return () => {
    const x = random() * total
    let lo = 0
    let hi = n - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (cdf[mid] < x) lo = mid + 1
      else hi = mid
    }
    return ids[lo]
  }
}

/**
 * The data set and the inputs of every operation, the same for both sides.
 * Ids are deterministic on both sides: users are created one at a time (1..U),
 * chats in order (1..C: the 20-member chats, then the 2-member ones).
 * @param {Config} config
 */
export function makeWorkload (config) {
  const random = prng(config.seed)
  const U = config.users
  const users = []
  for (let i = 0; i < U; i++) users.push({ username: `user${i + 1}`, password: `pw${i + 1}` })
  /** @type {Array<{ name: string, adminId: number, userIds: number[] }>} */
  const chats = []
  /** @type {number[][]} members of chat id k + 1 */
  const members = []
  const pick = (/** @type {number} */ k, /** @type {number} */ exclude = 0) => {
    const set = new Set()
    while (set.size < k) {
      const id = 1 + random.int(U)
      if (id !== exclude) set.add(id)
    }
    return [...set]
  }
  const memberCount = Math.min(config.members, U)
  for (let c = 0; c < config.chats; c++) {
    const [adminId, ...userIds] = pick(memberCount)
    chats.push({ name: `chat ${c + 1}`, adminId, userIds })
    members.push([adminId, ...userIds])
  }
  /** @type {Array<[number, number]>} */
  const pairs = []
  for (let c = 0; c < config.pairChats; c++) {
    const [a, b] = pick(2)
    chats.push({ name: `pair ${c + 1}`, adminId: a, userIds: [b] })
    members.push([a, b])
    pairs.push([a, b])
  }
  const bigChats = Math.max(1, config.chats)
  const t0 = Date.now() + 60000
  let clock = 0
  const message = () => {
    const chatId = 1 + random.int(Math.min(bigChats, members.length))
    const list = members[chatId - 1]
    return { chatId, senderId: list[random.int(list.length)], text: text(random), timestamp: t0 + clock++ }
  }
  const messages = []
  for (let i = 0; i < config.messages; i++) messages.push(message())

  /** @type {Record<string, any[]>} */
  const inputs = {}
  const n = config.n
  const gen = (/** @type {number} */ count, /** @type {() => any} */ fn) => Array.from({ length: count }, fn)
  let fresh = 0
  const newUser = () => { fresh++; return { username: `new${config.run}x${fresh}`, password: `pw${fresh}` } }
  const newChat = () => {
    const [adminId, ...userIds] = pick(memberCount)
    return { name: `new chat ${++fresh}`, adminId, userIds }
  }
  inputs.createUser = gen(n.createUser, newUser)
  inputs.createUserC = gen(n.createUserC, newUser)
  // The read rows pick users and chats with --zipf's skew (uniformly at 0).
  const user = picker(U, config.zipf ?? 0, random)
  const bigChat = picker(bigChats, config.zipf ?? 0, random)
  const anyChat = picker(members.length, config.zipf ?? 0, random)
  inputs.getUser = gen(n.getUser, () => `user${user()}`)
  inputs.createChat = gen(n.createChat, newChat)
  inputs.createChatC = gen(n.createChatC, newChat)
  inputs.addChatMessage = gen(n.addChatMessage, message)
  inputs.addChatMessageC = gen(n.addChatMessageC, message)
  inputs.last50 = gen(n.last50, () => bigChat())
  inputs.getChats = gen(n.getChats, () => user())
  // Half members, half (almost always) not.
  inputs.checkChatMember = gen(n.checkChatMember, () => {
    const chatId = anyChat()
    const list = members[chatId - 1]
    return [chatId, random() < 0.5 ? list[random.int(list.length)] : user()]
  })
  // Half pairs that have a chat of their own (when there are pair chats), half random pairs.
  inputs.existsChat = gen(n.existsChat, () => {
    if (pairs.length > 0 && random() < 0.5) {
      const [a, b] = pairs[random.int(pairs.length)]
      return random() < 0.5 ? [a, b] : [b, a]
    }
    const [a, b] = pick(2)
    return [a, b]
  })
  // Warm-up inputs: the same kinds, not timed, run on both sides before the timed phases.
  const warm = {
    createUser: gen(20, () => ({ username: `warm${config.run}x${++fresh}`, password: 'pw' })),
    createChat: gen(10, newChat),
    addChatMessage: gen(100, message),
    getUser: gen(300, () => `user${user()}`),
    last50: gen(100, () => bigChat()),
    getChats: gen(300, () => user()),
    checkChatMember: gen(300, () => [anyChat(), user()]),
    existsChat: gen(300, () => pick(2))
  }
  return { users, chats, messages, inputs, warm, pairs, members }
}

/**
 * The operations, in the order they are measured: reads first, on the
 * pre-populated data set exactly as configured, then writes.
 * @param {number} c concurrency of the "in flight" variants
 */
export function operations (c) {
  return [
    { key: 'getUser', label: 'getUser by username', write: false, concurrency: 1, call: (/** @type {Side} */ s, /** @type {any} */ x) => s.getUser(x) },
    { key: 'last50', label: 'last 50 messages', write: false, concurrency: 1, call: (/** @type {Side} */ s, /** @type {any} */ x) => s.getChatMessages(x, { n: 50 }) },
    { key: 'getChats', label: 'getChats of a user', write: false, concurrency: 1, call: (/** @type {Side} */ s, /** @type {any} */ x) => s.getChats(x) },
    { key: 'checkChatMember', label: 'checkChatMember', write: false, concurrency: 1, call: (/** @type {Side} */ s, /** @type {any} */ x) => s.checkChatMember(x[0], x[1]) },
    { key: 'existsChat', label: 'existsChat', write: false, concurrency: 1, call: (/** @type {Side} */ s, /** @type {any} */ x) => s.existsChat(x[0], x[1]) },
    { key: 'createUser', label: 'createUser', write: true, concurrency: 1, call: (/** @type {Side} */ s, /** @type {any} */ x) => s.createUser(x) },
    { key: 'createUserC', label: `createUser, ${c} in flight`, write: true, concurrency: c, call: (/** @type {Side} */ s, /** @type {any} */ x) => s.createUser(x) },
    { key: 'createChat', label: 'createChat, 20 members', write: true, concurrency: 1, call: (/** @type {Side} */ s, /** @type {any} */ x) => s.createChat(x) },
    { key: 'createChatC', label: `createChat, ${c} in flight`, write: true, concurrency: c, call: (/** @type {Side} */ s, /** @type {any} */ x) => s.createChat(x) },
    { key: 'addChatMessage', label: 'addChatMessage', write: true, concurrency: 1, call: (/** @type {Side} */ s, /** @type {any} */ x) => s.addChatMessage(x) },
    { key: 'addChatMessageC', label: `addChatMessage, ${c} in flight`, write: true, concurrency: c, call: (/** @type {Side} */ s, /** @type {any} */ x) => s.addChatMessage(x) }
  ]
}

/**
 * Run `call` over inputs[from..to) with `concurrency` in flight (1: each
 * awaited before the next) and return the wall time in ms.
 * @param {(x: any) => Promise<unknown>} call @param {any[]} inputs
 * @param {number} from @param {number} to @param {number} concurrency
 */
async function timed (call, inputs, from, to, concurrency) {
  const start = performance.now()
  if (concurrency <= 1) {
    for (let i = from; i < to; i++) await call(inputs[i])
  } else {
    let i = from
    const lane = async () => {
      while (i < to) await call(inputs[i++])
    }
    const lanes = []
    for (let k = 0; k < Math.min(concurrency, to - from); k++) lanes.push(lane())
    await Promise.all(lanes)
  }
  return performance.now() - start
}

/** Run `fn` over `items` with `concurrency` in flight. @param {any[]} items @param {number} concurrency @param {(x: any) => Promise<unknown>} fn */
export async function pump (items, concurrency, fn) {
  let i = 0
  const lane = async () => {
    while (i < items.length) await fn(items[i++])
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, lane))
}

/** Strip what legitimately differs between the sides (creation times). @param {any} value */
function normal (value) {
  return JSON.stringify(value, (key, v) => {
    if (key === 'createdAt' || key === 'lastActivity') return undefined
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v
    return Object.fromEntries(Object.keys(v).sort().map(k => [k, v[k]]))
  })
}

/** @param {Config} config */
export async function runOnce (config) {
  const work = makeWorkload(config)
  const ops = operations(config.concurrency).filter(op => config.ops.includes(op.key))
  const base = path.join(config.dbDir, `levelkit-chat-workload-${process.pid}-${config.run}`)
  fs.rmSync(base, { recursive: true, force: true })
  fs.mkdirSync(base, { recursive: true })
  const levelDir = path.join(base, 'level')
  const sqliteFile = path.join(base, 'chat.sqlite')
  const cost = { scryptN: config.scryptN }
  /** @type {Side[]} */
  const sides = []
  /** @type {any} */
  let lk = null
  /** @type {any} */
  let sq = null
  if (config.sides.includes('levelkit')) sides.push(lk = await openLevelkit(levelDir, cost, config.readCache))
  if (config.sides.includes('sqlite')) sides.push(sq = openSqlite(sqliteFile, cost))

  const populateTotal = work.users.length + work.chats.length + work.messages.length
  const measureTotal = ops.reduce((sum, op) => sum + config.n[op.key], 0) * sides.length
  const progress = new Progress(`${config.label}: populate`, populateTotal * sides.length + measureTotal)
  let done = 0
  const populate = /** @type {Record<string, Record<string, number>>} */ ({})

  // Pre-population, not measured. levelkit through ChatStore: users one at a
  // time (their ids must match the SQLite side's), chats in order, messages
  // 64 in flight (per-chat ids stay in order: the write path is FIFO).
  if (lk) {
    const t = { users: 0, chats: 0, messages: 0 }
    let start = performance.now()
    for (const u of work.users) {
      await lk.createUser(u)
      if (++done % 1000 === 0) progress.update(done)
    }
    t.users = performance.now() - start
    start = performance.now()
    await pump(work.chats, 64, async chat => { await lk.createChat(chat); if (++done % 1000 === 0) progress.update(done) })
    t.chats = performance.now() - start
    start = performance.now()
    await pump(work.messages, 64, async m => { await lk.addChatMessage(m); if (++done % 1000 === 0) progress.update(done) })
    t.messages = performance.now() - start
    populate.levelkit = t
  }
  // SQLite: the same rows, one transaction per 1000.
  if (sq) {
    const t = { users: 0, chats: 0, messages: 0 }
    let start = performance.now()
    const hashes = []
    for (const u of work.users) hashes.push([u.username, await hashPassword(u.password, cost)])
    for (let i = 0; i < hashes.length; i += 1000) { sq.bulk.users(hashes.slice(i, i + 1000)); done += Math.min(1000, hashes.length - i); progress.update(done) }
    t.users = performance.now() - start
    start = performance.now()
    for (let i = 0; i < work.chats.length; i += 1000) { sq.bulk.chats(work.chats.slice(i, i + 1000)); done += Math.min(1000, work.chats.length - i); progress.update(done) }
    t.chats = performance.now() - start
    start = performance.now()
    for (let i = 0; i < work.messages.length; i += 1000) { sq.bulk.messages(work.messages.slice(i, i + 1000)); done += Math.min(1000, work.messages.length - i); progress.update(done) }
    t.messages = performance.now() - start
    populate.sqlite = t
  }

  // The pre-populated data must be the same on both sides.
  /** @type {string[]} */
  const mismatches = []
  const compare = async (/** @type {string} */ what, /** @type {(s: Side) => Promise<any>} */ fn) => {
    if (sides.length < 2) return
    const [a, b] = await Promise.all(sides.map(fn))
    if (normal(a) !== normal(b)) mismatches.push(`${what}: ${normal(a).slice(0, 200)} != ${normal(b).slice(0, 200)}`)
  }
  const check = async (/** @type {string} */ when) => {
    const random = prng(config.seed + 7)
    for (let k = 0; k < 20; k++) {
      const user = 1 + random.int(config.users)
      const chat = 1 + random.int(work.chats.length)
      await compare(`${when} getUser`, s => s.getUser(`user${user}`))
      await compare(`${when} getChats(${user})`, s => s.getChats(user).then(list => list.sort((x, y) => x.id - y.id)))
      await compare(`${when} last50(${chat})`, s => s.getChatMessages(chat, { n: 50 }))
      await compare(`${when} checkChatMember(${chat}, ${user})`, s => s.checkChatMember(chat, user))
    }
    for (const [x, y] of work.pairs.slice(0, 20)) await compare(`${when} existsChat(${x}, ${y})`, s => s.existsChat(x, y))
  }
  await check('after population')

  if (config.warmup) {
    progress.label = `${config.label}: warm-up`
    for (const side of sides) {
      for (const u of work.warm.createUser) await side.createUser(u)
      for (const c of work.warm.createChat) await side.createChat(c)
      for (const m of work.warm.addChatMessage) await side.addChatMessage(m)
      for (const x of work.warm.getUser) await side.getUser(x)
      for (const x of work.warm.last50) await side.getChatMessages(x, { n: 50 })
      for (const x of work.warm.getChats) await side.getChats(x)
      for (const [a, b] of work.warm.checkChatMember) await side.checkChatMember(a, b)
      for (const [a, b] of work.warm.existsChat) await side.existsChat(a, b)
    }
  }

  /** @type {Record<string, any>} */
  const results = {}
  for (const op of ops) {
    progress.label = `${config.label}: ${op.key}`
    const inputs = work.inputs[op.key]
    const total = inputs.length
    const slices = Math.max(1, Math.min(config.slices, total))
    /** @type {Record<string, { ms: number, ops: number, slices: number[] }>} */
    const perSide = {}
    for (const side of sides) perSide[side.name] = { ms: 0, ops: 0, slices: [] }
    for (let s = 0; s < slices; s++) {
      const from = Math.floor(s * total / slices)
      const to = Math.floor((s + 1) * total / slices)
      // A B B A A B ...: which side goes first alternates by slice and by run.
      const order = (s + config.run) % 2 === 0 ? sides : [...sides].reverse()
      for (const side of order) {
        const ms = await timed(x => op.call(side, x), inputs, from, to, op.concurrency)
        const r = perSide[side.name]
        r.ms += ms
        r.ops += to - from
        r.slices.push((to - from) / ms * 1000)
        done += to - from
        progress.update(done)
      }
    }
    const entry = { label: op.label, write: op.write, concurrency: op.concurrency, sides: /** @type {Record<string, any>} */ ({}) }
    for (const [name, r] of Object.entries(perSide)) {
      entry.sides[name] = { ops: r.ops, ms: r.ms, opsPerSec: r.ops / r.ms * 1000, sliceOpsPerSec: r.slices }
    }
    results[op.key] = entry
  }
  await check('after the timed writes')
  progress.done()

  // The floor under any sequential Level write, on this machine, now: one
  // awaited round trip into classic-level (a thread-pool hop each way).
  const floor = lk ? await measureFloor(lk.db.level, config.floorN) : null

  // What both sides' createUser pay for hashing the password (same function, same cost).
  const hashStart = performance.now()
  for (let i = 0; i < 200; i++) await hashPassword(`pw${i}`, cost)
  const hashUs = (performance.now() - hashStart) / 200 * 1000

  const dbBytes = { levelkit: lk ? dirSize(levelDir) : null, sqlite: sq ? dirSize(sqliteFile) + dirSize(sqliteFile + '-wal') : null }
  for (const side of sides) await side.close()
  if (!config.keepDb) fs.rmSync(base, { recursive: true, force: true })
  return { run: config.run, results, populate, hashUs, floor, dbBytes, mismatches, loadAverage: os.loadavg(), peakRssBytes: process.resourceUsage().maxRSS * 1024 }
}

/**
 * Microseconds per awaited classic-level call, one at a time, on the
 * benchmark's own database (a namespace of its own): get() of a missing key,
 * and batch() of 3 and of 43 puts of 100 bytes, the sizes of addChatMessage
 * and createUser, and of createChat with 20 members. Median of 5 slices.
 * @param {any} root the levelkit database's classic-level
 * @param {number} n calls per kind (a tenth of that for the 43-put batches)
 */
export async function measureFloor (root, n) {
  const sub = root.sublevel('bench-floor', { valueEncoding: 'utf8' })
  await sub.open()
  const value = 'x'.repeat(100)
  const slices = 5
  const per = Math.max(1, Math.ceil(n / slices))
  const perBig = Math.max(1, Math.ceil(per / 10))
  /** @type {Record<string, number[]>} */
  const us = { get: [], batch3: [], batch43: [] }
  let k = 0
  const puts = (/** @type {number} */ count) => Array.from({ length: count }, (_, i) => ({ type: 'put', key: `${String(k).padStart(10, '0')}!${i}`, value }))
  for (let s = 0; s < slices; s++) {
    let start = performance.now()
    for (let i = 0; i < per; i++) await sub.get(`missing!${i}`)
    us.get.push((performance.now() - start) / per * 1000)
    start = performance.now()
    for (let i = 0; i < per; i++, k++) await sub.batch(puts(3))
    us.batch3.push((performance.now() - start) / per * 1000)
    start = performance.now()
    for (let i = 0; i < perBig; i++, k++) await sub.batch(puts(43))
    us.batch43.push((performance.now() - start) / perBig * 1000)
  }
  await sub.clear()
  const median = (/** @type {number[]} */ xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  return { getUs: median(us.get), batch3Us: median(us.batch3), batch43Us: median(us.batch43) }
}

const direct = process.argv[1] && path.resolve(process.argv[1]) === path.resolve(fileURLToPath(import.meta.url))
if (direct && process.argv[2]) {
  // Direct use (profiling): the config as a JSON argument; prints the result.
  runOnce(JSON.parse(process.argv[2])).then(result => console.log(JSON.stringify(result, (k, v) => k === 'sliceOpsPerSec' ? undefined : v, 2)))
} else if (direct) {
  serveOneRun(runOnce)
}
