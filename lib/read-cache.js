// Per entry, on top of its key and value: the Map entry and the headers of
// the key string and the value (estimated for V8, 64-bit).
const ENTRY_OVERHEAD = 80
// Per Uint8Array value: the view and its ArrayBuffer.
const BYTES_OVERHEAD = 96
// An entry above this share of the budget is not kept: a few huge values
// would push out everything else.
const LARGEST_SHARE = 16

/**
 * The byte budget that the read caches of one database share (keys and
 * values, estimated). When their entries add up to more, the cache holding
 * the most drops a generation until they fit.
 */
export class CacheBudget {
  /** @param {number} max bytes */
  constructor (max) {
    this.max = max
    /** the largest entry a cache keeps */
    this.largest = Math.floor(max / LARGEST_SHARE)
    this.used = 0
    /** @type {Set<ReadCache>} */
    this.caches = new Set()
  }

  /** Drop generations, fullest cache first, until the entries fit. */
  fit () {
    while (this.used > this.max) {
      /** @type {ReadCache | null} */
      let fullest = null
      for (const cache of this.caches) {
        if (fullest === null || cache.bytes > fullest.bytes) fullest = cache
      }
      if (fullest === null || fullest.bytes === 0) return
      fullest.shed()
    }
  }
}

/**
 * A bounded map for the read caches of a Namespace: two generations. When the
 * recent one holds half the limit (of entries, or of the budget's bytes) it
 * becomes the older one and the previous older one is dropped; a hit in the
 * older one moves to the recent one. So it holds at most `limit` entries and
 * keeps the ones in use. (Evicting one entry at a time from a Map is slow:
 * deleted entries stay in its table until it is rebuilt.) With a budget, its
 * bytes count against what the database's caches may hold together.
 */
export class ReadCache {
  /** @param {number} limit @param {CacheBudget | null} [budget] */
  constructor (limit, budget = null) {
    this.limit = limit
    this.budget = budget
    /** @type {Map<string, any>} */
    this.recent = new Map()
    /** @type {Map<string, any>} */
    this.older = new Map()
    // An entry promoted from the older generation counts in both until the
    // older one is dropped: an overestimate, never an underestimate.
    this.recentBytes = 0
    this.olderBytes = 0
    budget?.caches.add(this)
  }

  get size () {
    return this.recent.size + this.older.size
  }

  get bytes () {
    return this.recentBytes + this.olderBytes
  }

  /**
   * The entry for `name` as [value], or undefined when there is none (the
   * value itself may be undefined: a cached absence).
   * @param {string} name
   * @returns {[any] | undefined}
   */
  lookup (name) {
    const value = this.recent.get(name)
    if (value !== undefined || this.recent.has(name)) return [value]
    const older = this.older.get(name)
    if (older === undefined && !this.older.has(name)) return undefined
    this.set(name, older)
    return [older]
  }

  /** @param {string} name @param {any} value */
  set (name, value) {
    const size = entrySize(name, value)
    if (this.budget !== null && size > this.budget.largest) {
      this.delete(name)
      return
    }
    const replaced = this.recent.get(name)
    if (replaced !== undefined || this.recent.has(name)) this.#charge(-entrySize(name, replaced), 0)
    this.recent.set(name, value)
    this.#charge(size, 0)
    if (this.recent.size * 2 >= this.limit || (this.budget !== null && this.recentBytes * 2 >= this.budget.max)) this.#rotate()
    this.budget?.fit()
  }

  /** Change the entry for `name` if there is one. @param {string} name @param {any} value */
  update (name, value) {
    const inRecent = this.recent.has(name)
    const inOlder = this.older.has(name)
    if (!inRecent && !inOlder) return
    const size = entrySize(name, value)
    if (this.budget !== null && size > this.budget.largest) {
      this.delete(name)
      return
    }
    if (inRecent) {
      this.#charge(size - entrySize(name, this.recent.get(name)), 0)
      this.recent.set(name, value)
    }
    if (inOlder) {
      this.#charge(0, size - entrySize(name, this.older.get(name)))
      this.older.set(name, value)
    }
    this.budget?.fit()
  }

  /** @param {string} name */
  delete (name) {
    if (this.recent.has(name)) {
      this.#charge(-entrySize(name, this.recent.get(name)), 0)
      this.recent.delete(name)
    }
    if (this.older.has(name)) {
      this.#charge(0, -entrySize(name, this.older.get(name)))
      this.older.delete(name)
    }
  }

  clear () {
    this.#charge(-this.recentBytes, -this.olderBytes)
    this.recent = new Map()
    this.older = new Map()
  }

  /** Drop the older generation, or the recent one when that is all there is: for the budget. */
  shed () {
    if (this.olderBytes === 0) this.#rotate()
    this.#charge(0, -this.olderBytes)
    this.older = new Map()
  }

  #rotate () {
    this.#charge(0, -this.olderBytes)
    this.older = this.recent
    this.olderBytes = this.recentBytes
    this.recent = new Map()
    this.recentBytes = 0
  }

  /** @param {number} recent @param {number} older bytes added to each generation */
  #charge (recent, older) {
    this.recentBytes += recent
    this.olderBytes += older
    if (this.budget !== null) this.budget.used += recent + older
  }
}

/**
 * The estimated bytes an entry holds: its key (a binary string, one byte
 * per character) and its value.
 * @param {string} name @param {any} value
 */
function entrySize (name, value) {
  return ENTRY_OVERHEAD + name.length + valueSize(value)
}

/**
 * The values the caches hold: strings (JSON), bytes, arrays of ids (a
 * relation's list), numbers and undefined (a cached absence).
 * @param {any} value
 * @returns {number}
 */
function valueSize (value) {
  if (typeof value === 'string') return TWO_BYTE.test(value) ? 2 * value.length : value.length
  if (value instanceof Uint8Array) return BYTES_OVERHEAD + value.byteLength
  if (Array.isArray(value)) {
    let size = 16 + 8 * value.length
    for (const item of value) if (typeof item !== 'number') size += 16 + valueSize(item)
    return size
  }
  return 0
}

// V8 keeps a string of Latin-1 characters at one byte per character, any
// other at two.
const TWO_BYTE = /[\u0100-\uffff]/
