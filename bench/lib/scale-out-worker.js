// One writer process of bench/scale-out.js (forked by it): opens one store
// (the hand-written SQL store on PostgreSQL, or levelkit's ChatStore on
// PostgreSQL or on LevelDB), and then does what the parent asks, one message
// at a time: populate the data set (the first process only), run its share
// of a slice of an operation's inputs with --concurrency in flight, answer the sample
// reads that must agree across stores, check the final state, close.
// Every answer is one message { ok, result } or { ok: false, code, error }.

import path from 'node:path'
import fs from 'node:fs'
import { Session } from 'node:inspector/promises'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { createRequire } from 'node:module'
import pg from 'pg'
import { open as openLevelkit } from 'levelkit'
import { ChatStore as LevelkitChatStore } from 'levelkit/chat'
import { prng } from 'levelkit-testkit/prng'
import { PgChatStore } from './pg-chat-store.js'
import { warmShare, warmWritten, routedToProcess } from './scale-out-warm.js'

/**
 * @typedef {'sql' | 'levelkit-pg' | 'levelkit-pg-keys' | 'levelkit-pg-serializable' | 'levelkit-leveldb'} Kind
 * @typedef {{
 *   kind: Kind, rank: number, processes: number, connectionString?: string, schema?: string, table?: string,
 *   location?: string, concurrency: number, scryptN: number, userChats?: 'list' | 'edges', sqlIds?: 'serial' | 'gapfree',
 *   idleMs?: number, library?: string, shardChats?: boolean
 * }} OpenConfig
 *   library: the root of another copy of levelkit to load (scale-out.js --base-library), else this one's
 * @typedef {ReturnType<typeof import('./chat-workload-worker.js').makeWorkload> & { steady?: import('./scale-out-warm.js').WarmInputs }} Work
 *   (a type only: this process does not load that module); steady: the --warm-ops inputs, if any
 */

/**
 * The operations of the benchmark, in the order they run: each takes one
 * input of its row of the workload (makeWorkload()'s inputs).
 */
export const OPERATIONS = /** @type {const} */ ([
  { key: 'createUser', label: 'createUser', write: true, call: (/** @type {any} */ s, /** @type {any} */ x) => s.createUser(x) },
  { key: 'createChat', label: 'createChat, 20 members', write: true, call: (/** @type {any} */ s, /** @type {any} */ x) => s.createChat(x) },
  { key: 'addChatMessage', label: 'addChatMessage', write: true, call: (/** @type {any} */ s, /** @type {any} */ x) => s.addChatMessage(x) },
  { key: 'last50', label: 'last 50 messages', write: false, call: (/** @type {any} */ s, /** @type {any} */ x) => s.getChatMessages(x, { n: 50 }) },
  { key: 'getChats', label: 'getChats of a user', write: false, call: (/** @type {any} */ s, /** @type {any} */ x) => s.getChats(x) }
])

// How long a pool keeps an idle connection (the same for every side),
// unless the parent says (config.idleMs). With --turns slices every cell
// stays open while the others take their turns, and all of them together
// would hold more connections than the server allows, so they go after a
// second; but then a cell's slice finds its connections gone and opens new
// ones (backends with cold caches, statements prepared again): see
// `connects` below. With --turns cells only one cell is open at a time and
// the parent keeps them for the whole cell.
const IDLE_MS = 1000

// Every statement sent to PostgreSQL by this process, whichever store sends
// it (pg's Pool runs its queries through Client#query): a phase's round
// trips per operation. A query of several statements is one round trip.
// Every connection this process opens to PostgreSQL (a pool's new client, a
// snapshot's, the writer's): a slice that opens connections pays a backend's
// start and its cold caches in its time, which a warm cell does not.
let queries = 0
let connects = 0
/** @type {WeakSet<object>} the Client prototypes counted, each once */
const counted = new WeakSet()
/**
 * Count the statements and connections of one copy of `pg`: this one's, and
 * another copy of levelkit's (--base-library) if it resolves its own (a
 * checkout with its own node_modules): uncounted, its cells showed 0 round
 * trips (session 20).
 * @param {any} module the `pg` module
 */
function countOn (module) {
  const proto = module.Client.prototype
  if (counted.has(proto)) return
  counted.add(proto)
  const clientQuery = proto.query
  const clientConnect = proto.connect
  proto.query = /** @this {any} @param {...any} args */ function countQueries (...args) {
    queries++
    return clientQuery.apply(this, args)
  }
  proto.connect = /** @this {any} @param {...any} args */ function countConnects (...args) {
    connects++
    return clientConnect.apply(this, args)
  }
}
countOn(pg)

/** Run `fn` over `items` with `concurrency` in flight. @template T @param {T[]} items @param {number} concurrency @param {(x: T) => Promise<unknown>} fn */
async function pump (items, concurrency, fn) {
  let i = 0
  const lane = async () => {
    while (i < items.length) await fn(items[i++])
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, lane))
}

/** This process's share of a list: every `processes`-th item from `rank`. @template T @param {T[]} items @param {number} rank @param {number} processes @returns {T[]} */
export function share (items, rank, processes) {
  return items.filter((_, i) => i % processes === rank)
}

/**
 * This process's part of an operation's inputs: its share(), or with
 * --shard-chats the messages to the chats routed to it (routedToProcess()),
 * as a chat server routing each chat to one process would send them.
 * @param {string} op @param {any[]} items @param {OpenConfig} config
 */
export function inputsOf (op, items, config) {
  return config.shardChats === true && op === 'addChatMessage'
    ? items.filter(message => routedToProcess(message.chatId, config.processes) === config.rank)
    : share(items, config.rank, config.processes)
}

/** @param {OpenConfig} config @returns {Promise<{ store: any, retries: () => number | null, lockStats: () => Record<string, any> | null, close: () => Promise<void> }>} */
async function openStore (config) {
  const passwordCost = { scryptN: config.scryptN, pbkdf2Iterations: 1000 }
  if (config.kind === 'sql') {
    const pool = new pg.Pool({ connectionString: config.connectionString, max: config.concurrency, idleTimeoutMillis: config.idleMs ?? IDLE_MS })
    pool.on('error', () => {})
    const store = await PgChatStore.open(pool, { passwordCost, schema: config.schema, ids: config.sqlIds ?? 'serial' })
    return { store, retries: () => store.retries, lockStats: () => null, close: async () => { await store.close(); await pool.end() } }
  }
  // Shared in every cell, one process too: the curve over 1, 2, 4 processes
  // is then of one configuration.
  // Another copy of levelkit (a base to compare with): the `pg` it resolves
  // is counted too, whether it is this one's or its own.
  if (config.library !== undefined && config.kind !== 'levelkit-leveldb') countOn(createRequire(path.join(config.library, 'index.js'))('pg'))
  const { open, ChatStore } = config.library === undefined
    ? { open: openLevelkit, ChatStore: LevelkitChatStore }
    : { open: (await import(pathToFileURL(path.join(config.library, 'index.js')).href)).open, ChatStore: (await import(pathToFileURL(path.join(config.library, 'chat.js')).href)).ChatStore }
  const locking = config.kind === 'levelkit-pg-keys' ? 'keys' : config.kind === 'levelkit-pg-serializable' ? 'serializable' : 'table'
  const db = config.kind !== 'levelkit-leveldb'
    ? await open({ backend: 'postgres', connectionString: config.connectionString, table: config.table, poolSize: config.concurrency, shared: true, locking, pg: { idleTimeoutMillis: config.idleMs ?? IDLE_MS } })
    : await open({ backend: 'leveldb', location: config.location })
  try {
    const store = await ChatStore.open(db, { passwordCost, ...(config.userChats && config.kind !== 'levelkit-leveldb' ? { userChats: config.userChats } : {}) })
    // ChatStore's writes are critical sections (db.write()), serialized in
    // memory and, across processes, by the shared writer lock: PostgreSQL
    // never aborts one, and levelkit retries none.
    // With key locks or serializable transactions, the sections run again
    // (a busy key, a serialization failure): counted by the lock.
    const lock = config.kind === 'levelkit-leveldb' ? null : /** @type {any} */ (db).level.sharedWriterLock?.()
    // What the lock counts (lock hand-overs and waits with the table lock;
    // transactions, failures and busy keys by namespace otherwise): where
    // the processes wait for each other.
    return { store, retries: () => lock?.stats?.retries ?? 0, lockStats: () => lock?.stats ? structuredClone(lock.stats) : null, close: () => db.close() }
  } catch (err) {
    await db.close().catch(() => {})
    throw err
  }
}

/**
 * Fill the store with the data set, in an order that gives every store the
 * same ids: users one at a time, chats one at a time, each chat's messages
 * in order (chats 32 at a time).
 * @param {any} store @param {Work} work
 */
async function populate (store, work) {
  const ms = { users: 0, chats: 0, messages: 0 }
  let start = performance.now()
  for (const user of work.users) await store.createUser(user)
  ms.users = performance.now() - start
  start = performance.now()
  for (const chat of work.chats) await store.createChat(chat)
  ms.chats = performance.now() - start
  start = performance.now()
  /** @type {Map<number, any[]>} */
  const byChat = new Map()
  for (const m of work.messages) {
    const list = byChat.get(m.chatId)
    if (list) list.push(m)
    else byChat.set(m.chatId, [m])
  }
  await pump([...byChat.values()], 32, async list => { for (const m of list) await store.addChatMessage(m) })
  ms.messages = performance.now() - start
  return ms
}

/** Strip what legitimately differs between stores (creation times). @param {any} value */
export function normal (value) {
  return JSON.stringify(value, (key, v) => {
    if (key === 'createdAt' || key === 'lastActivity') return undefined
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v
    return Object.fromEntries(Object.keys(v).sort().map(k => [k, v[k]]))
  })
}

/**
 * Reads of the pre-populated data, which every store must answer alike.
 * @param {any} store @param {Work} work @param {number} seed
 */
async function sample (store, work, seed) {
  const random = prng(seed + 7)
  const answers = []
  for (let k = 0; k < 20; k++) {
    const user = 1 + random.int(work.users.length)
    const chat = 1 + random.int(work.chats.length)
    answers.push(await store.getUser(`user${user}`))
    answers.push((await store.getChats(user)).sort((/** @type {any} */ a, /** @type {any} */ b) => a.id - b.id))
    answers.push(await store.getChatMessages(chat, { n: 50 }))
  }
  return normal(answers)
}

/**
 * After every phase: what must hold whatever the interleaving of the
 * processes, and a digest of what must be the same in every store. New
 * users and chats get ids in the order the processes' writes land, so the
 * digest holds them as sorted multisets; each chat's messages are numbered
 * 1..N without gap, and hold the messages sent to it. The --warm-ops
 * writes (`steady`: as many as the cell has processes) are checked alike
 * but left out of the digest, which then agrees between cells of any
 * process count.
 * @param {any} store @param {Work} work @param {{ createUser: any[], createChat: any[], addChatMessage: any[] }} written every input written after population, by every process, but the --warm-ops ones
 * @param {{ createUser: any[], createChat: any[], addChatMessage: any[] }} steady the --warm-ops inputs written, by every process
 */
async function finalCheck (store, work, written, steady) {
  /** @type {string[]} */
  const problems = []
  const users = work.users.length + written.createUser.length + steady.createUser.length
  if (!(await store.getUserById(users))) problems.push(`user ${users} is missing`)
  if (await store.getUserById(users + 1)) problems.push(`user ${users + 1} exists: more users than were created`)
  const names = []
  for (const { username } of [...written.createUser.slice(0, 200), ...steady.createUser.slice(0, 50)]) {
    const user = await store.getUser(username)
    if (!user || user.id <= work.users.length || user.id > users) problems.push(`user ${username}: ${JSON.stringify(user)}`)
    names.push(username)
  }
  const steadyNames = new Set(steady.createUser.map(u => u.username))
  const steadyChats = new Set(steady.createChat.map(c => c.name))
  const chats = work.chats.length + written.createChat.length + steady.createChat.length
  const created = []
  let steadyCreated = 0
  for (let id = work.chats.length + 1; id <= chats; id++) {
    const chat = await store.getChat(id)
    if (!chat) problems.push(`chat ${id} is missing`)
    else if (steadyChats.has(chat.name)) steadyCreated++
    else created.push(`${chat.name}:${chat.members.join(',')}`)
  }
  if (steadyCreated !== steady.createChat.length) problems.push(`${steadyCreated} of the ${steady.createChat.length} --warm-ops chats found`)
  if (await store.getChat(chats + 1)) problems.push(`chat ${chats + 1} exists: more chats than were created`)
  /** @type {Map<number, string[]>} */
  const sent = new Map()
  /** @type {Map<number, number>} */
  const steadySent = new Map()
  for (const m of steady.addChatMessage) steadySent.set(m.chatId, (steadySent.get(m.chatId) ?? 0) + 1)
  for (const m of [...work.messages, ...written.addChatMessage, ...steady.addChatMessage]) {
    const list = sent.get(m.chatId)
    const line = `${m.senderId}|${m.timestamp}|${m.text}`
    if (list) list.push(line)
    else sent.set(m.chatId, [line])
  }
  const counts = []
  for (let id = 1; id <= work.chats.length; id++) {
    const expected = sent.get(id) ?? []
    const [last] = await store.getChatMessages(id, { n: 1 })
    const top = last ? last.id : 0
    if (top !== expected.length) problems.push(`chat ${id}: last message id ${top}, ${expected.length} messages sent`)
    counts.push(top - (steadySent.get(id) ?? 0))
  }
  // Ten chats read whole: ids 1..N and the messages sent, each once.
  const random = prng(chats)
  for (let k = 0; k < Math.min(10, work.chats.length); k++) {
    const id = 1 + random.int(work.chats.length)
    const expected = (sent.get(id) ?? []).slice().sort()
    const messages = await store.getChatMessages(id, { from: 1, n: expected.length + 10 })
    const ids = messages.map((/** @type {any} */ m) => m.id)
    if (ids.some((/** @type {number} */ x, /** @type {number} */ i) => x !== i + 1)) problems.push(`chat ${id}: ids are not 1..N: ${ids.slice(0, 20).join(',')}`)
    const got = messages.map((/** @type {any} */ m) => `${m.senderId}|${m.timestamp}|${m.text}`).sort()
    if (JSON.stringify(got) !== JSON.stringify(expected)) problems.push(`chat ${id}: its messages are not the ones sent to it`)
  }
  const digest = JSON.stringify({ users: users - steady.createUser.length, names: names.filter(name => !steadyNames.has(name)).sort(), chats: created.sort(), counts })
  return { problems, digest }
}

/**
 * With LEVELKIT_BENCH_CPU_PROFILE=<dir>: a CPU profile of this process over
 * one timed slice (node:inspector, sampled every 100 µs), not its whole life
 * as `node --cpu-prof` would take (the fill and warm-up too). Resolves with
 * the function that stops it and writes <dir>/<name>.<pid>.cpuprofile; null
 * without the variable.
 * @returns {Promise<((name: string) => Promise<void>) | null>}
 */
async function startProfile () {
  const dir = process.env.LEVELKIT_BENCH_CPU_PROFILE
  if (!dir) return null
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.setSamplingInterval', { interval: 100 })
  await session.post('Profiler.start')
  return async name => {
    const { profile } = await session.post('Profiler.stop')
    session.disconnect()
    fs.mkdirSync(dir, { recursive: true })
    fs.writeFileSync(path.join(dir, `${name}.${process.pid}.cpuprofile`), JSON.stringify(profile))
  }
}

/**
 * Run `inputs` through `call` with `concurrency` in flight; the latency of
 * every call, and the start and end as epoch milliseconds (comparable
 * across the processes of one machine).
 * @param {(x: any) => Promise<unknown>} call @param {any[]} inputs @param {number} concurrency
 */
async function timed (call, inputs, concurrency) {
  const latencies = new Array(inputs.length)
  let i = 0
  const lane = async () => {
    while (i < inputs.length) {
      const k = i++
      const start = performance.now()
      await call(inputs[k])
      latencies[k] = performance.now() - start
    }
  }
  const start = performance.timeOrigin + performance.now()
  await Promise.all(Array.from({ length: Math.min(concurrency, inputs.length) }, lane))
  const end = performance.timeOrigin + performance.now()
  return { start, end, latencies }
}

/**
 * What changed between two copies of a stats object (numbers, and objects
 * of numbers by name), leaving out what did not.
 * @param {Record<string, any>} before @param {Record<string, any>} after
 * @returns {Record<string, any>}
 */
export function statsDelta (before, after) {
  /** @type {Record<string, any>} */
  const out = {}
  for (const [key, value] of Object.entries(after)) {
    if (typeof value === 'number') {
      const d = value - (typeof before[key] === 'number' ? before[key] : 0)
      if (d !== 0) out[key] = d
    } else if (value !== null && typeof value === 'object') {
      const d = statsDelta(before[key] ?? {}, value)
      if (Object.keys(d).length > 0) out[key] = d
    }
  }
  return out
}

/** The process's side of the conversation with bench/scale-out.js. */
function serve () {
  /** @type {Awaited<ReturnType<typeof openStore>> | null} */
  let opened = null
  /** @type {OpenConfig | null} */
  let config = null
  /** @type {Work | null} */
  let work = null
  /** @type {Record<string, (message: any) => Promise<any>>} */
  const handlers = {
    async open (message) {
      config = message.config
      work = message.work
      opened = await openStore(/** @type {OpenConfig} */ (config))
      return { pid: process.pid }
    },
    async populate () {
      return populate(opened?.store, /** @type {Work} */ (work))
    },
    async sample (message) {
      return sample(opened?.store, /** @type {Work} */ (work), message.seed)
    },
    async warmup () {
      const c = /** @type {OpenConfig} */ (config)
      const w = /** @type {Work} */ (work).warm
      const store = opened?.store
      for (const u of share(w.createUser, c.rank, c.processes)) await store.createUser(u)
      for (const x of share(w.createChat, c.rank, c.processes)) await store.createChat(x)
      await pump(inputsOf('addChatMessage', w.addChatMessage, c), c.concurrency, m => store.addChatMessage(m))
      await pump(w.last50, c.concurrency, x => store.getChatMessages(x, { n: 50 }))
      await pump(w.getChats, c.concurrency, x => store.getChats(x))
      return null
    },
    // --warm-ops: this process's own inputs of each measured operation, run
    // as the timed ones are (--concurrency in flight, every process of the
    // cell at once), untimed; what it took, for the record.
    async steady () {
      const c = /** @type {OpenConfig} */ (config)
      const warm = /** @type {Work} */ (work).steady
      if (!warm) throw new Error('No --warm-ops inputs in the workload')
      const store = opened?.store
      const sent = queries
      const cpu = process.cpuUsage()
      const start = performance.now()
      let ops = 0
      for (const op of OPERATIONS) {
        const inputs = warmShare(warm, warm[op.key], c, op.key)
        ops += inputs.length
        await pump(inputs, c.concurrency, x => op.call(store, x))
      }
      const { user, system } = process.cpuUsage(cpu)
      return { ops, ms: performance.now() - start, cpuMs: (user + system) / 1000, queries: queries - sent }
    },
    async phase (message) {
      const c = /** @type {OpenConfig} */ (config)
      const op = OPERATIONS.find(o => o.key === message.op)
      if (!op) throw new Error(`Unknown operation ${message.op}`)
      const inputs = inputsOf(op.key, /** @type {Work} */ (work).inputs[op.key].slice(message.from, message.to), c)
      const before = opened?.retries() ?? null
      const statsBefore = opened?.lockStats() ?? null
      const sent = queries
      const connected = connects
      const profiling = await startProfile()
      const cpu = process.cpuUsage()
      const result = await timed(x => op.call(opened?.store, x), inputs, c.concurrency)
      const { user, system } = process.cpuUsage(cpu)
      await profiling?.(`${c.kind}${c.library ? '-base' : ''}-x${c.processes}-${op.key}-r${c.rank}-${message.from}`)
      const after = opened?.retries() ?? null
      const statsAfter = opened?.lockStats() ?? null
      // A write on PostgreSQL sends at least one statement: none counted
      // means the store's `pg` is a copy this process does not count, and
      // every round-trip figure of the cell would be a silent 0.
      if (op.write && inputs.length > 0 && queries === sent && c.kind !== 'levelkit-leveldb') {
        throw Object.assign(new Error(`${c.kind}${c.library ? ` over ${c.library}` : ''}: ${inputs.length} ${op.key} calls and not one statement to PostgreSQL counted: its \`pg\` is a copy this process does not count (round trips would read 0)`), { code: 'LEVELKIT_BENCH_UNCOUNTED' })
      }
      return {
        ...result,
        ops: inputs.length,
        retries: before === null || after === null ? null : after - before,
        queries: queries - sent,
        connects: connects - connected,
        cpuMs: (user + system) / 1000,
        lock: statsBefore === null || statsAfter === null ? null : statsDelta(statsBefore, statsAfter)
      }
    },
    async check () {
      const w = /** @type {Work} */ (work)
      // The --warm-ops writes of every process of the cell count as written.
      return finalCheck(opened?.store, w, {
        createUser: [...w.warm.createUser, ...w.inputs.createUser],
        createChat: [...w.warm.createChat, ...w.inputs.createChat],
        addChatMessage: [...w.warm.addChatMessage, ...w.inputs.addChatMessage]
      }, warmWritten(w.steady, /** @type {OpenConfig} */ (config).processes))
    },
    async close () {
      if (opened) await opened.close()
      opened = null
      return { peakRssBytes: process.resourceUsage().maxRSS * 1024 }
    }
  }
  process.on('message', (/** @type {any} */ message) => {
    const handler = handlers[message.type]
    Promise.resolve().then(() => handler(message)).then(
      result => process.send?.({ ok: true, result }),
      err => process.send?.({ ok: false, code: err && err.code, error: err && err.stack ? err.stack : String(err) })
    )
  })
  process.on('disconnect', () => process.exit(0))
}

if (process.send) serve()
