/* global IDBKeyRange */
// The page of bench/browser-workload.js, bundled with esbuild (levelkit's
// entry points resolve to the built bundle, dist/levelkit.browser.js, as in
// the browser tests). Exposes window.browserWorkload, which the script drives
// one slice at a time through page.evaluate(). A page holds one side (the
// script opens one page per side, each on an origin of its own, so each
// side's storage estimate is its own and neither shares the other's
// IndexedDB backing store); every time is taken here.
//
// Counting: IDBDatabase.prototype.transaction, the request methods of
// IDBObjectStore and IDBIndex, IDBCursor steps and navigator.locks.request
// are wrapped before either side opens, so both pay the same for it. The
// counts of a slice are what it made, divided by its operations. The
// wrappers (and those of IDBTransaction.commit and
// BroadcastChannel.postMessage) also time each call (`native`).

import { open } from '../../browser.js'
import { ChatStore } from '../../chat.js'
import { hashPassword } from '../../lib/chat/password-browser.js'
import { DexieChatStore } from './browser-workload-dexie.js'
import { makeData, baseOp, hash, normal } from './browser-workload-data.js'

const REQUESTS = ['get', 'getKey', 'getAll', 'getAllKeys', 'getAllRecords', 'count', 'openCursor', 'openKeyCursor', 'put', 'add', 'delete', 'clear']
const counts = { tx: 0, txReadwrite: 0, requests: 0, cursorSteps: 0, locks: 0 }
/** @type {Array<{ mode: string, requests: string[] }> | null} while tracing: each transaction opened, with its requests */
let trace = null

// ChatStore's users as a native collection (records in an object store of
// their own, IndexedDB's unique index on the username), where levelkit has
// them; --no-native opens the one-store layout.
const NATIVE = new URLSearchParams(globalThis.location.search).get('native') === '0' ? undefined : /** @type {any} */ (ChatStore).native
// Chat members kept in IndexedDB's lists store only (the default; open()'s
// relationIndexes: 'entries' with ?entries=1), or in browser-level's store
// too with ?lists=1 (relationIndexes: 'lists').
const QUERY = new URLSearchParams(globalThis.location.search)
const RELATION_INDEXES = QUERY.get('lists') === '1' ? 'lists' : QUERY.get('entries') === '1' ? 'entries' : undefined

/**
 * What a request is about: for levelkit's keys (bytes, `!namespace!...`)
 * the namespace, for Dexie's the table's key kind.
 * @param {any} key
 * @returns {string}
 */
function namespaceOf (key) {
  if (key instanceof IDBKeyRange) return `${namespaceOf(key.lower ?? key.upper)} (range)`
  if (ArrayBuffer.isView(key)) {
    const text = new TextDecoder().decode(/** @type {Uint8Array} */ (key).subarray(0, 80))
    const match = /^!([^!]*)!/.exec(text)
    return match ? match[1] : '?'
  }
  if (Array.isArray(key)) return 'compound key'
  return key === undefined ? '' : typeof key
}

/**
 * What a put's value is, for the trace: bytes, a string or an object (its
 * properties, each with its kind), so that two sides' puts compare.
 * @param {any} value
 * @returns {string}
 */
function shapeOf (value) {
  if (ArrayBuffer.isView(value)) return value.byteLength === value.buffer.byteLength ? '(bytes)' : `(bytes ${value.byteLength} of a buffer of ${value.buffer.byteLength})`
  if (typeof value === 'string') return '(string)'
  if (value === null || typeof value !== 'object') return `(${typeof value})`
  const parts = Object.entries(value).map(([k, v]) => `${k}: ${Array.isArray(v) ? `array ${v.length}` : ArrayBuffer.isView(v) ? 'bytes' : typeof v}`)
  return `({ ${parts.join(', ')} })`
}

/**
 * Milliseconds (wall) spent inside each wrapped native call so far, by
 * name: the browser's own code (a request's structured clone and its
 * message to the browser process, say), beside levelkit's or Dexie's
 * JavaScript. On a loaded machine mostly waiting: a call that wakes the
 * browser process is often where the renderer loses the CPU (on 2 vCPUs at
 * load 25-35 they added up to 2-4 times the operation's main-thread CPU,
 * bench/RESULTS.md, browser-workload, session 15).
 * @type {Record<string, number>}
 */
const nativeMs = {}
/** @template T @param {string} name @param {() => T} fn @returns {T} */
function timed (name, fn) {
  const start = performance.now()
  try {
    return fn()
  } finally {
    nativeMs[name] = (nativeMs[name] ?? 0) + performance.now() - start
  }
}

function installCounters () {
  const g = /** @type {any} */ (globalThis)
  const transaction = g.IDBDatabase.prototype.transaction
  g.IDBDatabase.prototype.transaction = function (/** @type {any[]} */ ...args) {
    counts.tx++
    if (args[1] === 'readwrite') counts.txReadwrite++
    if (trace !== null) trace.push({ mode: args[1] || 'readonly', requests: [] })
    return timed('transaction', () => transaction.apply(this, args))
  }
  const commit = g.IDBTransaction.prototype.commit
  g.IDBTransaction.prototype.commit = function () {
    return timed('commit', () => commit.call(this))
  }
  // Both sides tell other tabs of their writes over a BroadcastChannel (Dexie for liveQuery).
  const postMessage = g.BroadcastChannel.prototype.postMessage
  g.BroadcastChannel.prototype.postMessage = function (/** @type {any} */ data) {
    return timed('postMessage', () => postMessage.call(this, data))
  }
  for (const proto of [g.IDBObjectStore.prototype, g.IDBIndex.prototype]) {
    for (const name of REQUESTS) {
      const method = proto[name]
      if (typeof method !== 'function') continue
      proto[name] = function (/** @type {any[]} */ ...args) {
        counts.requests++
        if (trace !== null && trace.length > 0) trace[trace.length - 1].requests.push(`${name} ${namespaceOf(name === 'put' || name === 'add' ? args[1] ?? args[0] : args[0])}${name === 'put' || name === 'add' ? ` ${shapeOf(args[0])}` : ''}`)
        return timed(name, () => method.apply(this, args))
      }
    }
  }
  for (const name of ['continue', 'advance', 'continuePrimaryKey']) {
    const method = g.IDBCursor.prototype[name]
    g.IDBCursor.prototype[name] = function (/** @type {any[]} */ ...args) {
      counts.cursorSteps++
      if (trace !== null && trace.length > 0) trace[trace.length - 1].requests.push('cursor step')
      return method.apply(this, args)
    }
  }
  const request = g.LockManager.prototype.request
  g.LockManager.prototype.request = function (/** @type {any[]} */ ...args) {
    counts.locks++
    return timed('locks.request', () => request.apply(this, args))
  }
}
installCounters()

const snapshot = () => ({ ...counts })
/** @param {typeof counts} before */
const since = before => Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, v - /** @type {any} */ (before)[k]]))

/** @type {any} */
let data = null
/** @type {{ location: string, passwordCost: { pbkdf2Iterations: number } } | null} where this page's side is, to open it again */
let opened = null
/** @type {Record<string, any>} */
const sides = {}
/** @type {Record<string, Record<string, number>>} order-independent sums of the answers' hashes */
const digests = { levelkit: {}, dexie: {} }
/** @type {string} the side this page holds */
let mine = ''

/** What each row calls on a side. @type {Record<string, (s: any, x: any) => Promise<any>>} */
const CALLS = {
  getUser: (s, x) => s.getUser(x),
  last50: (s, x) => s.getChatMessages(x, { n: 50 }),
  getChats: (s, x) => s.getChats(x),
  checkChatMember: (s, x) => s.checkChatMember(x[0], x[1]),
  createUser: (s, x) => s.createUser(x),
  createChat: (s, x) => s.createChat(x),
  addChatMessage: (s, x) => s.addChatMessage(x)
}

/**
 * Make the data set, open this page's side on a fresh database and hash
 * the pre-loaded users' passwords.
 * @param {import('./browser-workload-data.js').DataConfig & { pbkdf2Iterations: number, tag: string, side: string }} config
 */
async function setup (config) {
  data = makeData(config)
  mine = config.side
  const cost = { pbkdf2Iterations: config.pbkdf2Iterations }
  opened = { location: `${mine}-${config.tag}`, passwordCost: cost }
  if (mine === 'levelkit') sides.levelkit = await ChatStore.open(await open({ location: opened.location, native: NATIVE, relationIndexes: RELATION_INDEXES }), { passwordCost: cost })
  else sides.dexie = await new DexieChatStore(opened.location, cost).open()
  data.hashes = await Promise.all(data.users.map((/** @type {any} */ u) => hashPassword(u.password, cost)))
  data.params = `pbkdf2-sha256$${config.pbkdf2Iterations}`
  return { users: data.users.length, chats: data.chats.length, messages: data.messages.length }
}

/**
 * Load the data set into one side in chunks of `chunk` records, each one
 * write: on levelkit a db.write() doing what ChatStore's methods do (the
 * models' writes, the hash counter, both directions of the members
 * relation, the messages' sequence), with levelkit's bulk calls where
 * ChatStore's writes have one (users.insertMany(), messages.appendMany()
 * per chat); on Dexie a bulkAdd(). Times each table.
 * With `traced`, also the IndexedDB transactions and requests of each table's part.
 * With `table`, only that table's part (the script calls it once per table,
 * in the order users, chats, messages, reading the CPU time between).
 * @param {string} side @param {number} chunk @param {boolean} [traced]
 * @param {'users' | 'chats' | 'messages'} [table]
 */
async function preload (side, chunk, traced = false, table) {
  const before = snapshot()
  const ms = { users: 0, chats: 0, messages: 0 }
  /** @type {Record<string, Array<{ mode: string, requests: string[] }>> | null} */
  const traces = traced ? {} : null
  const now = Date.now()
  const users = data.users.map((/** @type {any} */ u, /** @type {number} */ i) => ({ username: u.username, passwordHash: data.hashes[i], createdAt: now }))
  const chunks = (/** @type {any[]} */ rows) => Array.from({ length: Math.ceil(rows.length / chunk) }, (_, k) => rows.slice(k * chunk, (k + 1) * chunk))
  /** @type {Record<string, number>} */
  const records = { users: users.length, chats: data.chats.length, messages: data.messages.length }
  const timed = async (/** @type {'users' | 'chats' | 'messages'} */ name, /** @type {any[]} */ rows, /** @type {(rows: any[]) => Promise<unknown>} */ load) => {
    if (table !== undefined && name !== table) return
    if (traces !== null) trace = []
    const start = performance.now()
    try {
      for (const part of chunks(rows)) await load(part)
    } finally {
      if (traces !== null) traces[name] = /** @type {any} */ (trace)
      trace = null
    }
    ms[name] = performance.now() - start
  }
  if (side === 'dexie') {
    const store = sides.dexie
    await timed('users', users, rows => store.bulkLoad('users', rows))
    await timed('chats', data.chats, rows => store.bulkLoad('chats', rows))
    await timed('messages', data.messages, rows => store.bulkLoad('messages', rows))
  } else {
    const store = sides.levelkit
    const db = store.db
    await timed('users', users, rows => db.write(async (/** @type {any} */ w) => {
      // levelkit's bulk call, as Dexie's side uses bulkAdd(). The callback
      // only writes: it may run again, as createUser()'s does, so the
      // chunk's usernames are claimed by its batch rather than read first
      // (a taken one: the batch is refused and the chunk runs again, reading).
      await store.users.in(w).insertMany(rows, { batchSize: rows.length })
      await store.passwordCosts.in(w).add(data.params, rows.length)
    }, { rerunnable: true }))
    await timed('chats', data.chats, rows => db.write(async (/** @type {any} */ w) => {
      for (const { lastMessageId, ...chat } of rows) {
        const id = await store.chats.in(w).insert({ ...chat, private: false, passwordHash: null })
        await store.members.in(w).addMany(id, chat.members)
      }
    }))
    await timed('messages', data.messages, rows => db.write(async (/** @type {any} */ w) => {
      // Each chat's messages of the chunk in one bulk call, in order: the
      // chat read and its sequence raised once.
      /** @type {Map<number, any[]>} */
      const byChat = new Map()
      for (const message of rows) {
        const list = byChat.get(message.chatId)
        if (list === undefined) byChat.set(message.chatId, [message])
        else list.push(message)
      }
      for (const [chatId, messages] of byChat) {
        const last = await store.messages.in(w).lastSeq(chatId)
        if (last + 1 !== messages[0].id) throw new Error(`Message ${chatId}/${messages[0].id} would get sequence number ${last + 1}`)
        await store.messages.in(w).appendMany(chatId, messages, { batchSize: messages.length })
      }
    }))
  }
  return { ms, counts: since(before), records: table === undefined ? records.users + records.chats + records.messages : records[table], traces }
}

/**
 * The store a cold row reads from: the same database opened again, as a
 * second tab would (its own IndexedDB connection, empty caches). On
 * levelkit, opening takes the cross-tab lock (ChatStore's migrations run
 * in a critical section); the first store then takes it back, so the new
 * one reads as a tab that holds no lease, whose reads no cache answers.
 * Dexie keeps no values in memory: a fresh instance reads as its first did.
 * @param {string} side
 */
async function openCold (side) {
  const { location, passwordCost } = /** @type {NonNullable<typeof opened>} */ (opened)
  if (side === 'dexie') return new DexieChatStore(location, passwordCost).open()
  const store = await ChatStore.open(await open({ location, native: NATIVE, relationIndexes: RELATION_INDEXES }), { passwordCost })
  await sides.levelkit.db.schemaVersion()
  return store
}

/** @param {string} side @param {any} store */
async function closeCold (side, store) {
  if (side === 'dexie') store.close()
  else await store.db.close()
}

/**
 * One slice of one row on one side: inputs [from, to) of the measured (or,
 * with `warm`, the warm-up) inputs, `concurrency` in flight. Resolves with
 * the time and the IndexedDB calls it made; adds the answers' hashes to the
 * row's digest (a sum, so the order the answers come in does not count).
 * @param {string} side @param {string} op @param {number} from @param {number} to @param {number} concurrency @param {boolean} warm
 */
async function runSlice (side, op, from, to, concurrency, warm) {
  const cold = op.endsWith('Cold')
  const store = cold ? await openCold(side) : sides[side]
  const call = CALLS[baseOp(op)]
  const inputs = (warm ? data.warm : data.inputs)[op]
  // The cold rows run after the writes: a user's chats compared as answers() compares them then.
  const shape = cold && baseOp(op) === 'getChats' ? chatsAsCompared : (/** @type {any} */ v) => v
  let digest = 0
  const one = async (/** @type {number} */ i) => {
    const answer = await call(store, inputs[i])
    digest = (digest + hash(normal(shape(answer)))) >>> 0
  }
  const before = snapshot()
  const nativeBefore = { ...nativeMs }
  const start = performance.now()
  if (concurrency <= 1) {
    for (let i = from; i < to; i++) await one(i)
  } else {
    let i = from
    const lane = async () => {
      while (i < to) await one(i++)
    }
    await Promise.all(Array.from({ length: Math.min(concurrency, to - from) }, lane))
  }
  const ms = performance.now() - start
  const made = since(before)
  const native = Object.fromEntries(Object.entries(nativeMs).map(([k, v]) => [k, v - (nativeBefore[k] ?? 0)]))
  if (cold) await closeCold(side, store)
  if (!warm) digests[side][op] = ((digests[side][op] || 0) + digest) >>> 0
  return { ms, ops: to - from, ...made, native }
}

/**
 * A user's chats as compared once the writes ran: in id order, without
 * lastActivity (each side's Date.now() of its addChatMessage calls, by
 * which getChats() orders them).
 * @param {any[]} list
 */
function chatsAsCompared (list) {
  return list.map(({ lastActivity, ...c }) => c).sort((p, q) => p.id - q.id)
}

/**
 * This side's answers to a sample of questions, each as compared (see
 * normal()), for the script to compare with the other side's. `after`
 * (after the writes): chats in id order, without lastActivity (Date.now()
 * on each side), and the users created one at a time too.
 * @param {number} samples @param {boolean} after
 * @returns {Promise<Array<[string, string]>>}
 */
async function answers (samples, after) {
  const store = sides[mine]
  /** @type {Array<[string, string]>} */
  const list = []
  const ask = async (/** @type {string} */ what, /** @type {(s: any) => Promise<any>} */ fn, /** @type {(v: any) => any} */ shape = v => v) => {
    list.push([what, normal(shape(await fn(store)))])
  }
  const chats = after ? chatsAsCompared : (/** @type {any} */ v) => v
  const U = data.users.length
  const C = data.chats.length
  for (let k = 0; k < samples; k++) {
    const user = 1 + ((k * 7919) % U)
    const chat = 1 + ((k * 104729) % C)
    await ask(`getUser(user${user})`, s => s.getUser(`user${user}`))
    await ask(`getChats(${user})`, s => s.getChats(user), chats)
    await ask(`last50(${chat})`, s => s.getChatMessages(chat, { n: 50 }))
    await ask(`checkChatMember(${chat}, ${user})`, s => s.checkChatMember(chat, user))
  }
  await ask('last50 of a missing chat', s => s.getChatMessages(C + 1_000_000, { n: 50 }))
  await ask('getUser of nobody', s => s.getUser('nobody'))
  if (after) {
    for (const x of (data.inputs.createUser || []).slice(0, samples)) await ask(`getUser(${x.username})`, s => s.getUser(x.username))
  }
  return list
}

/**
 * The IndexedDB transactions and requests one operation of each row makes
 * on this side, in order. Run last: its writes make the sides differ.
 * @param {string[]} ops
 */
async function traceOps (ops) {
  /** @type {Record<string, Array<{ mode: string, requests: string[] }>>} */
  const traces = {}
  for (const op of ops) {
    const kind = baseOp(op)
    let input = data.inputs[op][0]
    if (kind === 'createUser') input = { ...input, username: `trace-${op}` }
    const cold = op.endsWith('Cold')
    const store = cold ? await openCold(mine) : sides[mine]
    trace = []
    try {
      await CALLS[kind](store, input)
      traces[op] = trace
    } finally {
      trace = null
      if (cold) await closeCold(mine, store)
    }
  }
  return traces
}

/** This side's digests of the rows' answers. */
function answerDigests () {
  return digests[mine]
}

/**
 * A full garbage collection of this page's heap (the script launches
 * Chromium with --js-flags=--expose-gc), timed. The script runs one, untimed,
 * before a side's preload (the data set's and setup's garbage is not the
 * preload's), and one, timed and counted in the preload's time, after it:
 * each side pays for the garbage its preload left, and both sides' rows
 * start from a collected heap, instead of the first rows paying for a
 * collection that falls in them or not, run to run.
 * @returns {number} milliseconds
 */
function collectGarbage () {
  const gc = /** @type {any} */ (globalThis).gc
  if (typeof gc !== 'function') throw new Error('collectGarbage(): no gc() in the page (launch Chromium with --js-flags=--expose-gc)')
  const start = performance.now()
  gc()
  return performance.now() - start
}

/** navigator.storage.estimate(), what the origin uses. */
async function estimate () {
  const e = /** @type {any} */ (await navigator.storage.estimate())
  return { usage: e.usage, indexedDB: e.usageDetails?.indexedDB ?? null }
}

/** ChatStore's own check of the levelkit side (db.check() and the chat invariants). */
async function checkLevelkit () {
  const { ok, problems } = await sides.levelkit.check()
  return { ok, problems: problems.slice(0, 5).map((/** @type {any} */ p) => `${p.type}: ${p.message}`) }
}

async function close () {
  if (mine === 'levelkit') await sides.levelkit.db.close()
  else sides.dexie.close()
}

/** @type {any} */ (window).browserWorkload = { setup, preload, collectGarbage, runSlice, answers, traceOps, answerDigests, estimate, checkLevelkit, close, userAgent: navigator.userAgent }
