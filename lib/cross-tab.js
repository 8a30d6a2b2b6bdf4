// Two tabs of one origin are two writers on one IndexedDB database. The
// in-memory write lock serializes the critical sections of one tab only, so
// on IndexedDB the write path also holds a Web Lock named after the database
// (one holder across all tabs and workers of the origin), and tells the other
// tabs what it wrote over a BroadcastChannel of the same name, so their
// watchers wake up.

import { noop } from './common.js'

/**
 * @typedef {{ prefix: string, type: 'put' | 'del', key: Uint8Array }} RemoteOp
 * @typedef {object} CrossTab
 * @property {string} name
 * @property {() => Promise<() => void>} acquire waits for the lock; resolves with its release function
 * @property {(ops: RemoteOp[]) => void} post tells the other tabs about a written batch
 * @property {(listener: (ops: RemoteOp[]) => void) => void} listen
 * @property {() => void} close
 */

/**
 * Coordination for the browser-level database `level`, or null where it is
 * not needed (any other backend) or not possible (no Web Locks: every
 * browser that has IndexedDB and is still supported has them).
 * @param {any} level
 * @returns {CrossTab | null}
 */
export function crossTabFor (level) {
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
  /** @type {Set<(ops: RemoteOp[]) => void>} */
  const listeners = new Set()
  channel.onmessage = (event) => {
    const ops = event.data?.ops
    if (!Array.isArray(ops)) return
    for (const listener of listeners) listener(ops)
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
    post (ops) {
      channel.postMessage({ ops })
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
