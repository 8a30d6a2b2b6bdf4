// Counts what levelkit asks a backend for, on any abstract-level 3 database
// (classic-level, memory-level, browser-level): every sublevel forwards its
// reads to the root's implementation methods (_iterator, _get, ...), so
// wrapping those on the root instance sees them all.

const ITERATORS = ['_iterator', '_keys', '_values']
const ITERATOR_READS = ['_next', '_nextv', '_all']
const POINT_READS = ['_get', '_getSync']

/**
 * @typedef {{ iterators: number, open: number, entries: number, gets: number }} ReadCounts
 *   iterators opened, those not closed yet, entries (or keys, or values) they
 *   yielded, point reads (one per key of a getMany)
 */

/**
 * Start counting the reads of `level` (for good: open a database per test).
 * @param {any} level
 */
export function countReads (level) {
  /** @type {ReadCounts} */
  const counts = { iterators: 0, open: 0, entries: 0, gets: 0 }
  /**
   * Wrap `target[name]` to count what it returns. An implementation may build
   * one read method on another (abstract-level's default _all calls _nextv,
   * browser-level's _next calls _nextv): a call made while another call of
   * the same object is unsettled is part of it and does not count again
   * (abstract-level allows one read at a time per iterator). Point reads of
   * the database itself may overlap, and each counts.
   * @param {any} target @param {string} name
   * @param {(result: any, args: any[]) => void} count
   * @param {boolean} [iterator]
   */
  const wrap = (target, name, count, iterator = false) => {
    const original = target[name]
    if (typeof original !== 'function') return
    target[name] = function (/** @type {any[]} */ ...args) {
      if (busy.has(target)) return original.apply(this, args)
      if (iterator) busy.add(target)
      let result
      try {
        result = original.apply(this, args)
      } catch (err) {
        busy.delete(target)
        throw err
      }
      if (!(result instanceof Promise)) {
        busy.delete(target)
        count(result, args)
        return result
      }
      return result.then(value => {
        busy.delete(target)
        count(value, args)
        return value
      }, err => {
        busy.delete(target)
        throw err
      })
    }
  }
  /** @type {WeakSet<object>} objects with a read in progress */
  const busy = new WeakSet()
  // An implementation may make one kind of iterator from another
  // (abstract-level's default _keys wraps an _iterator): only the outer one
  // counts.
  let creating = 0
  for (const name of ITERATORS) {
    const create = level[name]
    level[name] = function (/** @type {any[]} */ ...args) {
      if (creating > 0) return create.apply(this, args)
      creating++
      let iterator
      try {
        iterator = create.apply(this, args)
      } finally {
        creating--
      }
      counts.iterators++
      counts.open++
      const close = iterator._close
      iterator._close = function (/** @type {any[]} */ ...args) {
        counts.open--
        return close.apply(this, args)
      }
      for (const read of ITERATOR_READS) {
        wrap(iterator, read, result => {
          if (Array.isArray(result)) counts.entries += result.length
          else if (result !== undefined) counts.entries++
        }, true)
      }
      return iterator
    }
  }
  for (const name of POINT_READS) wrap(level, name, () => { counts.gets++ })
  wrap(level, '_getMany', (result, args) => { counts.gets += args[0].length })

  return {
    counts,
    /**
     * Run `fn` and return what it resolved with and the reads it made.
     * @template T
     * @param {() => Promise<T>} fn
     * @returns {Promise<{ result: T, counts: ReadCounts }>}
     */
    async measure (fn) {
      const before = { ...counts }
      const result = await fn()
      return {
        result,
        counts: {
          iterators: counts.iterators - before.iterators,
          open: counts.open - before.open,
          entries: counts.entries - before.entries,
          gets: counts.gets - before.gets
        }
      }
    }
  }
}
