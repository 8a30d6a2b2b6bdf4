// Two tabs of one origin are two writers on one IndexedDB database, and two
// processes that open one PostgreSQL table with the shared option are two
// writers on it. The in-memory write lock serializes the critical sections
// of one tab (or process) only, so the write path also holds a shared
// writer lock (one holder across all of them) and tells the others what it
// wrote, so their watchers wake up and their caches and transactions learn
// of it. On IndexedDB: a Web Lock named after the database and a
// BroadcastChannel of the same name (here); on PostgreSQL, an advisory lock
// and LISTEN/NOTIFY (lib/backends/postgres-shared.js).

import { noop } from './common.js'

/**
 * @typedef {{ prefix: string, type: 'put' | 'del', key: Uint8Array }} RemoteOp
 * @typedef {object} RemoteMessage what a writer tells the others of a batch it wrote
 * @property {number | null} generation the database's generation the batch wrote (lib/writer.js); null: unknown
 * @property {RemoteOp[] | null} ops what it wrote, or null when that is unknown
 * @property {string[] | null} prefixes without ops: the namespaces it wrote in (null: any)
 * @typedef {object} CrossTab a shared writer lock
 * @property {string} name
 * @property {() => Promise<() => void>} acquire waits for the lock; resolves with its release function
 * @property {() => boolean} [held] false once the lock is known to be lost while held (its connection failed)
 * @property {(message: RemoteMessage) => void} [stage] called before a batch is written: tell the others with the batch itself, when it commits
 * @property {(message: RemoteMessage) => void} post called once a batch is written
 * @property {(listener: (message: RemoteMessage) => void) => void} listen
 * @property {() => Promise<boolean>} [catchUp] resolves once every message sent before is heard (false if that is not sure)
 * @property {() => Promise<void>} [listening] resolves once every message sent from then on is heard
 * @property {boolean} [validatesByValue] whether transactions check again at commit the values they read (true unless false)
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
  channel.onmessage = (event) => {
    const ops = event.data?.ops
    if (!Array.isArray(ops)) return
    const generation = event.data.generation
    /** @type {RemoteMessage} */
    const message = { generation: Number.isSafeInteger(generation) ? generation : null, ops, prefixes: null }
    for (const listener of listeners) listener(message)
  }

  return {
    name,
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
        locks.request(name, { mode: 'exclusive' }, () => {
          resolve(() => release())
          return held
        }).catch(reject)
      })
    },
    post (message) {
      channel.postMessage({ generation: message.generation, ops: message.ops })
    },
    listen (listener) {
      listeners.add(listener)
    },
    close () {
      listeners.clear()
      channel.close()
    }
  }
}
