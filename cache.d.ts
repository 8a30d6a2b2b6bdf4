/**
 * The eviction policies of `createCache()`:
 * - `'lru'`: least recently used.
 * - `'2q'`: 2Q (Johnson and Shasha, 1994): keys seen once wait in a FIFO
 *   of a quarter of the cache, keys seen again (remembered as ghosts, half
 *   the size) enter an LRU; one-time scans do not push out the hot keys.
 * - `'arc'`: ARC (Megiddo and Modha, 2003): recency and frequency lists
 *   whose sizes adapt to the trace, with as many ghosts as entries.
 * - `'tinylfu'`: W-TinyLFU (Caffeine's policy): a window LRU (1% at
 *   first, resized by a hill climber as the hit rate says), then a
 *   segmented LRU that a new entry enters only if a count-min sketch of
 *   recent accesses, aged by halving, says it is used more often than the
 *   entry it would push out.
 */
export type CachePolicy = 'lru' | '2q' | 'arc' | 'tinylfu'

/** The policies, in the order above. */
export const policies: readonly CachePolicy[]

export interface CacheOptions {
  /** How the cache chooses what to evict (default `'lru'`). */
  policy?: CachePolicy
  /** The entries it holds at most: a whole number, at least 1. */
  size: number
}

export interface CacheStats {
  /** Calls of `get()` that found the key. */
  hits: number
  /** Calls of `get()` that did not. */
  misses: number
  /** Entries pushed out to make room (not those deleted or replaced). */
  evictions: number
}

/**
 * A bounded map: `get()`, `set()`, `delete()` and `has()` take O(1) time
 * whatever the policy and size. Keys are compared as a Map compares them
 * (SameValueZero); `'tinylfu'` hashes them for its sketch (strings and
 * numbers spread well; other keys hash by their `String()`).
 */
export interface Cache<K = unknown, V = unknown> {
  /** The value of `key`, or undefined when it is not held; a hit counts as a use of the key. */
  get (key: K): V | undefined
  /**
   * Hold `value` for `key`, evicting an entry if the cache is full (which
   * one is the policy's choice; it may be this new one, for `'tinylfu'`).
   * Setting a key already held replaces its value and counts as a use.
   */
  set (key: K, value: V): this
  /** Drop the entry of `key` (and any ghost of it); whether there was an entry. */
  delete (key: K): boolean
  /** Whether an entry for `key` is held (an undefined value too); not a use, not counted. */
  has (key: K): boolean
  /** Drop every entry and ghost; the statistics are kept. */
  clear (): void
  /** The entries held (ghosts, the keys some policies remember without a value, not counted). */
  readonly size: number
  /** Counts since the cache was made. */
  stats (): CacheStats
}

/**
 * A cache of `size` entries evicting by `policy`. Throws LEVELKIT_INVALID
 * for an unknown policy or option, or a size that is not a whole number at
 * least 1.
 *
 * @example
 * import { createCache } from 'levelkit/cache'
 * const cache = createCache({ policy: 'arc', size: 1000 })
 * cache.set('a', 1)
 * cache.get('a') // 1
 * cache.stats() // { hits: 1, misses: 0, evictions: 0 }
 */
export function createCache<K = unknown, V = unknown> (options: CacheOptions): Cache<K, V>
