// Where a read is a round trip (a backend without getSync: postgres), a
// critical section that reads a chat record, a message block and a purge
// marker waits three round trips, and sections run one at a time: the
// write path's throughput is one section per few round trips. The values
// critical sections read and decide are kept here, by key id, so that the
// next sections find them without a round trip.
//
// Exact, not a hint: only critical sections read it, after the ops decided
// and not yet written (WriteScope.get()), and while one runs no other
// section of this process decides anything and, with the shared option, no
// other process writes (the shared writer lock is held). What this process
// decides is set here when it is decided (and everything forgotten when a
// batch fails); what other processes write is forgotten as the writer hears
// of it (key by key, or everything when its keys are unknown), and when the
// writer takes the shared lock again and finds it did not hear of every
// batch written meanwhile, everything is forgotten (lib/writer.js
// #catchUp()). A read that was in flight while anything changed or was
// forgotten is not kept: `version` tells.

/**
 * @typedef {[any]} Hit a cached value (undefined: the key is absent)
 */

export class SectionCache {
  /** @type {Map<string, any>} by key id, least recently used first */
  #entries = new Map()
  #limit
  /** Raised by every change: a read started at an older version is not kept. */
  version = 0

  /** @param {number} limit entries kept at most */
  constructor (limit) {
    this.#limit = limit
  }

  get size () {
    return this.#entries.size
  }

  /** @param {string} id @returns {Hit | undefined} */
  lookup (id) {
    const entries = this.#entries
    if (!entries.has(id)) return undefined
    const value = entries.get(id)
    // Most recently used last.
    entries.delete(id)
    entries.set(id, value)
    return [value]
  }

  /** @param {string} id */
  has (id) {
    return this.#entries.has(id)
  }

  /**
   * Keep what a read started at `version` found, unless anything changed
   * since it started.
   * @param {string} id @param {any} value @param {number} version
   */
  keep (id, value, version) {
    if (version === this.version) this.#put(id, value)
  }

  /**
   * Keep what a read made in a serializable transaction found (lib/writer.js
   * hintedReads()), unless a value is kept for the key already: the cache
   * is emptied when that transaction ends, and until then its snapshot
   * holds that value whatever other processes committed meanwhile (what
   * the writer forgets as it hears of their writes, raising `version`).
   * What a section decided is kept for the key, or (its op not yet
   * written) found first by the caller.
   * @param {string} id @param {any} value
   */
  fill (id, value) {
    if (!this.#entries.has(id)) this.#put(id, value)
  }

  /** A value decided by a critical section. @param {string} id @param {any} value undefined for a deletion */
  set (id, value) {
    this.version++
    this.#put(id, value)
  }

  /** @param {string} id */
  delete (id) {
    this.version++
    this.#entries.delete(id)
  }

  clear () {
    this.version++
    this.#entries.clear()
  }

  /** @param {string} id @param {any} value */
  #put (id, value) {
    const entries = this.#entries
    entries.delete(id)
    entries.set(id, value)
    if (entries.size > this.#limit) {
      const oldest = entries.keys().next().value
      if (oldest !== undefined) entries.delete(oldest)
    }
  }
}
