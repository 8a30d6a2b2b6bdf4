// Two tabs of one origin are two writers on one IndexedDB database, and two
// processes that open one PostgreSQL table with the shared option are two
// writers on it. The in-memory write lock serializes the critical sections
// of one tab (or process) only, so the write path also holds a shared
// writer lock (one holder across all of them) and tells the others what it
// wrote, so their watchers wake up and their caches and transactions learn
// of it. On IndexedDB: a Web Lock named after the database and a
// BroadcastChannel of the same name (here); on PostgreSQL, an advisory lock
// and LISTEN/NOTIFY (lib/backends/postgres-shared.js).
//
// A Web Lock is leased: the tab that holds it keeps it while idle, so that
// writes awaited one at a time take it once, not once each. A tab that wants
// it queues up for it and says so on the channel ('want'), and again every
// WANT_REPEAT_MS while it waits (a message may be missed: sent before the
// holder listened, or heard by a tab that held nothing yet); the holder
// lets go once idle, if a request for the lock is still pending then (a
// 'want' can arrive after its sender got the lock). The Web Lock alone
// still keeps the writers apart: a missed 'want' only delays its sender.
// What a tab writes is posted only while another tab may hear it (a tab
// alone posts nothing per batch; lib/cross-tab-peers.js).

import { noop } from './common.js'
import { peersOn, tabId } from './cross-tab-peers.js'

// How often a tab waiting for a leased lock says again that it wants it.
export const WANT_REPEAT_MS = 100

/**
 * @typedef {{ prefix: string, type: 'put' | 'del', key: Uint8Array }} RemoteOp
 * @typedef {object} RemoteMessage what a writer tells the others of a batch it wrote
 * @property {number | null} generation the generation of the lock holding that wrote the batch (lib/writer.js); null: unknown
 * @property {number} [sequence] the batch's number within its holding, from 1; with `end`, how many batches the holding wrote
 * @property {true} [end] the holding ended (the lock let go normally, every batch of it written): no batch, ops null
 * @property {RemoteOp[] | null} ops what it wrote, or null when that is unknown
 * @property {string[] | null} prefixes without ops: the namespaces it wrote in (null: any)
 * @typedef {object} CrossTab a shared writer lock
 * @property {string} name
 * @property {() => Promise<() => void>} acquire waits for the lock; resolves with its release function
 * @property {() => boolean} [held] false once the lock is known to be lost while held (its connection failed)
 * @property {(message: RemoteMessage) => void} [stage] called before a batch is written: tell the others with the batch itself, when it commits
 * @property {(message: RemoteMessage) => void} post called once a batch is written
 * @property {(message: RemoteMessage) => void} [ended] called with a holding's end, just before the lock is let go
 * @property {(listener: (message: RemoteMessage) => void) => void} listen
 * @property {() => Promise<boolean>} [catchUp] resolves once every message sent before is heard (false if that is not sure)
 * @property {(ms: number) => Promise<void>} [nextMessage] resolves once the next message is heard (its listeners called), or after `ms`
 * @property {() => Promise<void>} [listening] resolves once every message sent from then on is heard
 * @property {boolean} [validatesByValue] whether transactions check again at commit the values they read (true unless false)
 * @property {boolean} [leased] whether the lock may be kept while idle, until another writer wants it (wanted() tells when)
 * @property {(listener: () => void) => void} [wanted] calls `listener` each time another writer says it waits for the lock
 * @property {() => void} close
 */

/**
 * The shared writer lock of `level`: its own (a postgres database opened
 * with the shared option), one over Web Locks for a browser-level database,
 * or null where it is not needed (any other backend) or not possible (no Web
 * Locks: every browser that has IndexedDB and is still supported has them).
 * @param {any} level
 * @returns {CrossTab | null}
 */
export function crossTabFor (level) {
  // A backend that offers one (postgres, with the shared option).
  if (typeof level.sharedWriterLock === 'function') return level.sharedWriterLock()
  if (level.type !== 'browser-level') return null
  const locks = globalThis.navigator?.locks
  if (!locks || typeof BroadcastChannel !== 'function') return null
  // The name IndexedDB knows the database by (browser-level adds a prefix).
  return crossTab(locks, `levelkit:${level.namePrefix}${level.location}`)
}

/**
 * @param {LockManager} locks
 * @param {string} name
 * @returns {CrossTab}
 */
function crossTab (locks, name) {
  const channel = new BroadcastChannel(name)
  /** @type {Set<(message: RemoteMessage) => void>} */
  const listeners = new Set()
  /** @type {Set<() => void>} */
  const wantListeners = new Set()
  // This writer's own requests for the lock not granted yet.
  let waiting = 0
  /** @type {Set<() => void>} nextMessage()'s callers */
  const nextWaiters = new Set()
  const wantedNow = () => {
    for (const listener of wantListeners) listener()
  }
  /** @param {object} data */
  const send = data => {
    try {
      channel.postMessage(data)
    } catch {} // closed meanwhile
  }
  // What it writes is posted only while another tab may listen (lib/cross-tab-peers.js).
  const self = tabId()
  const peers = peersOn(send, () => send({ tab: self, gap: true }), self)
  channel.onmessage = (event) => {
    if (peers.heard(event.data)) return
    if (event.data?.want === true) {
      // A 'want' is said again while its tab waits, so one may arrive after
      // that tab got the lock and let it go: heard only while a request for
      // the lock other than this writer's own is pending, or a lease would
      // be let go for nobody.
      if (typeof locks.query !== 'function') wantedNow()
      else {
        locks.query().then(({ pending }) => {
          if ((pending ?? []).filter(lock => lock.name === name).length > waiting) wantedNow()
        }, wantedNow)
      }
      return
    }
    const data = event.data
    const end = data?.end === true
    if (data?.gap === true) {
      // Another tab wrote what it did not tell: nothing is known of it.
      /** @type {RemoteMessage} */
      const gap = { generation: null, ops: null, prefixes: null }
      deliver(gap)
      return
    }
    /** @type {RemoteOp[] | null} */
    let ops = null
    if (!end) {
      // Packed (packOps()), or as an earlier version sent them: an object per op.
      ops = data?.k instanceof Uint8Array && Array.isArray(data.p) ? unpackOps(data.p, data.k) : Array.isArray(data?.ops) ? data.ops : null
      if (ops === null) return
    }
    const { generation, sequence } = data
    /** @type {RemoteMessage} */
    const message = { generation: Number.isSafeInteger(generation) ? generation : null, ops, prefixes: null }
    if (Number.isSafeInteger(sequence)) message.sequence = sequence
    if (end) {
      if (message.sequence === undefined) return
      message.end = true
    }
    deliver(message)
  }
  /** @param {RemoteMessage} message */
  const deliver = (message) => {
    for (const listener of listeners) listener(message)
    for (const waiter of nextWaiters) waiter()
    nextWaiters.clear()
  }

  // A tab about to be frozen or put in the back/forward cache would hear no
  // 'want': it lets an idle lease go now, as if another tab wanted it.
  globalThis.document?.addEventListener?.('freeze', wantedNow)
  globalThis.addEventListener?.('pagehide', wantedNow)

  return {
    name,
    leased: true,
    acquire () {
      return new Promise((resolve, reject) => {
        // The lock is held until the promise returned to request() settles:
        // hand its resolver out as the release function.
        /** @type {(value?: any) => void} */
        let release = noop
        /** @type {Promise<void>} */
        const held = new Promise(resolve => {
          release = resolve
        })
        // Ask whoever holds it (maybe idle, keeping it) to let go, until
        // granted; asked once the request is queued, where the holder looks.
        // Said even with no other tab known: a tab of an earlier levelkit
        // says no 'hello', and may hold the lock (a closed channel: the
        // request still waits its turn).
        const want = () => send({ want: true, tab: self })
        /** @type {ReturnType<typeof setInterval> | undefined} */
        let repeat
        let granted = false
        waiting++
        locks.request(name, { mode: 'exclusive' }, () => {
          granted = true
          waiting--
          clearInterval(repeat)
          resolve(() => release())
          return held
        }).catch(err => {
          if (!granted) waiting--
          granted = true
          clearInterval(repeat)
          reject(err)
        })
        want()
        if (!granted) repeat = setInterval(want, WANT_REPEAT_MS)
      })
    },
    wanted (listener) {
      wantListeners.add(listener)
    },
    post (message) {
      if (!peers.any()) return peers.skipped()
      const ops = /** @type {RemoteOp[]} */ (message.ops)
      const { prefixes, keys } = packOps(ops)
      channel.postMessage({ tab: self, generation: message.generation, sequence: message.sequence, p: prefixes, k: keys })
    },
    ended (message) {
      if (!peers.any()) return peers.skipped()
      channel.postMessage({ tab: self, generation: message.generation, sequence: message.sequence, end: true })
    },
    listen (listener) {
      listeners.add(listener)
    },
    nextMessage (ms) {
      return new Promise(resolve => {
        const timer = setTimeout(done, ms)
        function done () {
          clearTimeout(timer)
          nextWaiters.delete(done)
          resolve(undefined)
        }
        nextWaiters.add(done)
      })
    },
    close () {
      for (const waiter of [...nextWaiters]) waiter()
      listeners.clear()
      wantListeners.clear()
      globalThis.document?.removeEventListener?.('freeze', wantedNow)
      globalThis.removeEventListener?.('pagehide', wantedNow)
      peers.close()
      channel.close()
    }
  }
}

/**
 * A batch's ops as one buffer and the prefixes they name: each op is its
 * prefix's index in `prefixes`, its type (0 put, 1 del) and its key, the
 * index and the key's length as unsigned LEB128. Posted so, a message is
 * cloned as one array of a few strings and one buffer, where an object per
 * op (with a buffer of its own) cost the writing tab about 8% of a
 * createUser (bench/RESULTS.md, browser-workload, session 12).
 * @param {RemoteOp[]} ops
 * @returns {{ prefixes: string[], keys: Uint8Array }}
 */
export function packOps (ops) {
  /** @type {string[]} */
  const prefixes = []
  /** @type {Map<string, number>} */
  const indexOf = new Map()
  let size = 0
  for (const op of ops) size += op.key.length + 11
  const keys = new Uint8Array(size)
  let at = 0
  /** @param {number} n */
  const varint = n => {
    while (n > 0x7f) {
      keys[at++] = (n & 0x7f) | 0x80
      n >>>= 7
    }
    keys[at++] = n
  }
  for (const op of ops) {
    let index = indexOf.get(op.prefix)
    if (index === undefined) {
      index = prefixes.push(op.prefix) - 1
      indexOf.set(op.prefix, index)
    }
    varint(index)
    keys[at++] = op.type === 'del' ? 1 : 0
    varint(op.key.length)
    keys.set(op.key, at)
    at += op.key.length
  }
  return { prefixes, keys: keys.subarray(0, at) }
}

/**
 * The ops packOps() packed; null if `keys` is not such a buffer (each key a
 * view of it).
 * @param {unknown[]} prefixes @param {Uint8Array} keys
 * @returns {RemoteOp[] | null}
 */
export function unpackOps (prefixes, keys) {
  /** @type {RemoteOp[]} */
  const ops = []
  let at = 0
  const varint = () => {
    let n = 0
    let shift = 0
    for (;;) {
      if (at >= keys.length || shift > 28) return -1
      const byte = keys[at++]
      n += (byte & 0x7f) * 2 ** shift
      if (byte < 0x80) return n
      shift += 7
    }
  }
  while (at < keys.length) {
    const prefix = prefixes[varint()]
    const type = keys[at++]
    const length = varint()
    if (typeof prefix !== 'string' || type > 1 || length < 0 || at + length > keys.length) return null
    ops.push({ prefix, type: type === 1 ? 'del' : 'put', key: keys.subarray(at, at + length) })
    at += length
  }
  return ops
}
