/* global IDBDatabase, IDBObjectStore, LockManager */

/**
 * Count, while `fn` runs, IndexedDB object store requests by method
 * (get, put, add, delete), transactions, readwrite ones and those that
 * aborted, and Web Lock requests. Restores what it replaced, whatever `fn` does.
 * @template T
 * @param {() => Promise<T>} fn
 * @returns {Promise<{ made: Record<'get' | 'put' | 'add' | 'delete' | 'transactions' | 'readwrite' | 'aborted' | 'locks', number>, answer: T }>}
 */
export async function countRequests (fn) {
  const made = { get: 0, put: 0, add: 0, delete: 0, transactions: 0, readwrite: 0, aborted: 0, locks: 0 }
  const store = /** @type {any} */ (IDBObjectStore.prototype)
  const originals = /** @type {const} */ (['get', 'put', 'add', 'delete']).map(name => /** @type {const} */ ([name, store[name]]))
  for (const [name, original] of originals) {
    store[name] = function (/** @type {any[]} */ ...args) {
      made[name]++
      return original.apply(this, args)
    }
  }
  const transaction = IDBDatabase.prototype.transaction
  IDBDatabase.prototype.transaction = function (/** @type {any} */ stores, /** @type {any} */ mode, /** @type {any} */ options) {
    const tx = /** @type {IDBTransaction} */ (transaction.call(this, stores, mode, options))
    made.transactions++
    if (mode === 'readwrite') {
      made.readwrite++
      tx.addEventListener('abort', () => { made.aborted++ })
    }
    return tx
  }
  const request = LockManager.prototype.request
  LockManager.prototype.request = function (/** @type {any[]} */ ...args) {
    made.locks++
    return /** @type {any} */ (request).apply(this, args)
  }
  try {
    return { made, answer: await fn() }
  } finally {
    for (const [name, original] of originals) store[name] = original
    IDBDatabase.prototype.transaction = transaction
    LockManager.prototype.request = request
  }
}
