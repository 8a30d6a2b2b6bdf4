import { cacheOf, policies } from './cache/index.js'
import { invalid } from './errors.js'
import { describe, readInput } from './common.js'
import { optionsObject } from './options.js'

// Per entry, on top of its key and value: the Map entry, the policy's node
// (or slot), the headers of the key string and the value, and W-TinyLFU's
// sketch (up to 16 bytes an entry) (estimated for V8, 64-bit). The ghost
// keys of 2Q (up to half the entries' limit) and ARC (up to the limit) are
// not counted: bounded in number, not in bytes; W-TinyLFU, the default,
// has none.
const ENTRY_OVERHEAD = 112
// Per Uint8Array value: the view and its ArrayBuffer.
const BYTES_OVERHEAD = 96
// An entry above this share of the budget is not kept: a few huge values
// would push out everything else.
const LARGEST_SHARE = 16

/**
 * The policy of the read caches when open() names none, and their size in
 * entries per namespace (values kept by default: enough for the hot records
 * of most apps, and bounded by the byte budget anyway): W-TinyLFU, which
 * bench/cache-policies.js measured at or above LRU on every trace, near ARC
 * or above it, and resistant to scans and loops, with no ghost keys. An
 * object so that the tests can run whole suites under another policy
 * (test/util/read-cache-policy.js), or with tiny caches that evict all
 * the time.
 */
export const readCacheDefaults = { policy: /** @type {CachePolicy} */ ('tinylfu'), size: 10000 }

/** @typedef {import('./cache/index.js').CachePolicy} CachePolicy */

/**
 * open()'s readCache option, checked: a number of entries (the default
 * policy), or { policy, size } (either may be left out). Size 0 turns the
 * caches off.
 * @param {unknown} option
 * @returns {{ size?: number, policy?: CachePolicy }}
 */
export function readCacheOption (option) {
  if (option === undefined) return {}
  const entries = (/** @type {unknown} */ size) => typeof size === 'number' && Number.isSafeInteger(size) && size >= 0
  if (typeof option === 'number') {
    if (!entries(option)) throw invalid(`The readCache option must be a non-negative integer (values kept per namespace; 0 turns the cache off) or { policy, size }, not ${describe(option)}`)
    return { size: option }
  }
  // A plain object only: a Date, a Map, a boxed number... are mistakes.
  if (option === null || typeof option !== 'object' || readInput('The readCache option', () => Object.getPrototypeOf(option)) !== Object.prototype) {
    throw invalid(`The readCache option must be a number of entries or { policy, size }, not ${describe(option)}`)
  }
  // Read once, and refused with LEVELKIT_INVALID if it cannot be read.
  const { policy, size, ...rest } = optionsObject(option, 'open() readCache')
  const unknown = Object.keys(rest)
  if (unknown.length > 0) throw invalid(`The readCache option has unknown option(s): ${unknown.map(describe).join(', ')} (it takes policy, size)`, { options: unknown })
  if (policy !== undefined && !(typeof policy === 'string' && policies.includes(/** @type {any} */ (policy)))) {
    throw invalid(`The readCache policy is one of ${policies.join(', ')}, not ${describe(policy)}`)
  }
  if (size !== undefined && !entries(size)) throw invalid(`The readCache size must be a non-negative integer (values kept per namespace; 0 turns the cache off), not ${describe(size)}`)
  return /** @type {{ size?: number, policy?: CachePolicy }} */ ({ size, policy })
}

/**
 * The byte budget that the read caches of one database share (keys and
 * values, estimated), and the policy they evict by. When their entries add
 * up to more, the cache holding the most evicts until they fit.
 */
export class CacheBudget {
  /** @param {number} max bytes @param {CachePolicy} [policy] */
  constructor (max, policy = readCacheDefaults.policy) {
    this.max = max
    this.policy = policy
    /** the largest entry a cache keeps */
    this.largest = Math.floor(max / LARGEST_SHARE)
    this.used = 0
    /** @type {Set<ReadCache>} */
    this.caches = new Set()
  }

  /** Evict, fullest cache first, until the entries fit. */
  fit () {
    while (this.used > this.max) {
      /** @type {ReadCache | null} */
      let fullest = null
      for (const cache of this.caches) {
        if (fullest === null || cache.bytes > fullest.bytes) fullest = cache
      }
      if (fullest === null || fullest.bytes === 0) return
      fullest.shed(this.used - this.max)
    }
  }
}

/**
 * A bounded map for the read caches of a Namespace: a cache of
 * levelkit/cache (`policy`: LRU, 2Q, ARC or W-TinyLFU) of `limit` entries,
 * whose entries' bytes count against the database's budget when it has
 * one. Values may be undefined (a cached absence).
 */
export class ReadCache {
  /** @param {number} limit @param {CacheBudget | null} [budget] @param {CachePolicy} [policy] */
  constructor (limit, budget = null, policy = budget?.policy ?? readCacheDefaults.policy) {
    this.limit = limit
    this.budget = budget
    this.policy = policy
    /** the estimated bytes of the entries held */
    this.bytes = 0
    // What the policy evicts gives its bytes back.
    this.entries = cacheOf(policy, limit, (name, value) => this.#charge(-entrySize(name, value)))
    budget?.caches.add(this)
  }

  get size () {
    return this.entries.size
  }

  /**
   * The entry for `name` as [value], or undefined when there is none (the
   * value itself may be undefined: a cached absence). Counts a hit or a miss.
   * @param {string} name
   * @returns {[any] | undefined}
   */
  lookup (name) {
    const value = this.entries.get(name)
    if (value !== undefined || this.entries.has(name)) return [value]
    return undefined
  }

  /** Keep `value` for `name`, read from the store. @param {string} name @param {any} value */
  set (name, value) {
    const size = entrySize(name, value)
    if (this.budget !== null && size > this.budget.largest) {
      this.delete(name)
      return
    }
    if (this.entries.has(name)) this.#charge(-entrySize(name, this.entries.peek(name)))
    // Charged first: the policy may evict this very entry, which gives it back.
    this.#charge(size)
    this.entries.set(name, value)
    this.budget?.fit()
  }

  /**
   * Change the entry for `name` if there is one (a write landed): not a use
   * of it, so the policy's order and statistics stay as they are.
   * @param {string} name @param {any} value
   */
  update (name, value) {
    if (!this.entries.has(name)) return
    const size = entrySize(name, value)
    if (this.budget !== null && size > this.budget.largest) {
      this.delete(name)
      return
    }
    this.#charge(size - entrySize(name, this.entries.peek(name)))
    this.entries.replace(name, value)
    this.budget?.fit()
  }

  /** @param {string} name */
  delete (name) {
    if (!this.entries.has(name)) return
    this.#charge(-entrySize(name, this.entries.peek(name)))
    this.entries.delete(name)
  }

  clear () {
    this.#charge(-this.bytes)
    this.entries.clear()
  }

  /**
   * For the budget: evict by the policy at least `over` bytes, and at least
   * a sixteenth of what this cache holds, so that a budget under pressure
   * looks for the fullest cache once per many entries, not once per entry.
   * @param {number} over
   */
  shed (over) {
    const target = Math.min(this.bytes - over, this.bytes - this.bytes / 16)
    while (this.bytes > target) {
      if (!this.entries.evict()) return
    }
  }

  /** Hits, misses and evictions since it was made, and the entries it holds. */
  stats () {
    return { ...this.entries.stats(), size: this.entries.size }
  }

  /** @param {number} bytes added */
  #charge (bytes) {
    this.bytes += bytes
    if (this.budget !== null) this.budget.used += bytes
  }
}

/**
 * The estimated bytes an entry holds: its key (a binary string, one byte
 * per character) and its value.
 * @param {string} name @param {any} value
 */
export function entrySize (name, value) {
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
