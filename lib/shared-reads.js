// With key locks that can be shared (PostgreSQL, locking: 'keys'), a record
// a critical section only checks exists (a relation's endpoint) is read
// under a shared lock (lib/write-scope.js getShared()). The sections that
// share one key transaction (a group of calls in flight) often check the
// same records (the members of several chats): without a cache, each
// section read them again, a statement each (session 17: 2.98 round trips
// per createChat with one process, against 2.10 before shared locks).
//
// Exact for the life of the key transaction only: while it holds a key's
// lock, shared, no other process can take that key exclusively, and every
// process's sections read a record exclusively before they rewrite or
// delete it, so its value stays what was read. This process's own
// decisions are looked up before this cache (ops, the writer's overlay) and
// forget their keys here as they are decided. Everything goes when the
// transaction ends (commit, rollback, lost connection): the locks go with
// it. Kept apart from the section cache and the namespaces' caches, whose
// values sections decide on under exclusive locks: a get() of a key held
// here still asks for its exclusive lock.
//
// Only values that exist are kept: a key's absence is not protected by its
// lock (a new record's put, under an id from a sequence, takes none).

/**
 * @typedef {[any]} Hit a value read under a shared lock
 */

export class SharedReads {
  /** @type {Map<string, any>} by key id */
  #entries = new Map()
  /** @type {Map<string, number>} by key id, how many times it was forgotten in this generation */
  #forgotten = new Map()
  /** Raised at every transaction's end: a read started before is not kept. */
  #generation = 0

  get size () {
    return this.#entries.size
  }

  /** @param {string} id @returns {Hit | undefined} */
  lookup (id) {
    return this.#entries.has(id) ? [this.#entries.get(id)] : undefined
  }

  /** @param {string} id */
  has (id) {
    return this.#entries.has(id)
  }

  /**
   * Mark the start of a read of `id`, for keep().
   * @param {string} id @returns {[number, number]}
   */
  start (id) {
    return [this.#generation, this.#forgotten.get(id) ?? 0]
  }

  /**
   * Keep what a read started at `mark` found, if it exists and neither the
   * transaction ended nor the key was forgotten since the read started.
   * @param {string} id @param {any} value @param {[number, number]} mark
   */
  keep (id, value, mark) {
    if (value !== undefined && mark[0] === this.#generation && mark[1] === (this.#forgotten.get(id) ?? 0)) this.#entries.set(id, value)
  }

  /** A key this process decided (or heard of): its value here is no longer known. @param {string} id */
  delete (id) {
    this.#forgotten.set(id, (this.#forgotten.get(id) ?? 0) + 1)
    this.#entries.delete(id)
  }

  /** The key transaction ended, or anything may have changed. */
  clear () {
    this.#generation++
    this.#entries.clear()
    this.#forgotten.clear()
  }
}
