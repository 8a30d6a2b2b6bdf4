// More probes for exercises 08-13: faults on tuple-keyed sublevel writes, and
// a backend that records which entries its iterators yielded (to prove that a
// query never reads outside its range, whatever the learner's key layout).
import { InstrumentedLevel, failWritesTo } from './backends.js'
import { encodeTuple } from 'levelkit'

/** @typedef {{ key?: string, value?: string }} LogEntry */

const latin1 = (/** @type {string | Uint8Array} */ k) => typeof k === 'string' ? k : Buffer.from(k).toString('latin1')

/**
 * Make every write of one tuple key in one sublevel fail, through a root
 * prewrite hook (the whole put/del/batch is refused, nothing of it written).
 * Both a root batch op routed with `sublevel` (its key still an array) and a
 * write made through the sublevel itself are matched (see opKeyString).
 * @param {any} db the root
 * @param {string} prefix the sublevel's prefix, e.g. '!groupUsers!'
 * @param {any[]} tuple the key, e.g. ['dev', 'ann']
 * @returns {() => void} removes the fault
 */
export function failTupleWrites (db, prefix, tuple) {
  return failWritesTo(db, prefix + latin1(encodeTuple(tuple)))
}

/**
 * An InstrumentedLevel that, while `log` is an array, appends every entry its
 * iterators yield as { key, value } text (keys latin1 with their sublevel
 * prefix, values utf8; undefined when the iterator did not read it).
 */
export class RecordingLevel extends InstrumentedLevel {
  /** @param {any} [options] */
  constructor (options) {
    super(options)
    /** @type {null | LogEntry[]} */
    this.log = null
  }

  /** @param {any} options */
  _iterator (options) {
    return this.#record(super._iterator(options), (/** @type {[any, any]} */ item) => ({ key: latin1(item[0]), value: text(item[1]) }))
  }

  /** @param {any} options */
  _keys (options) {
    return this.#record(super._keys(options), (/** @type {any} */ key) => ({ key: latin1(key) }))
  }

  /** @param {any} options */
  _values (options) {
    return this.#record(super._values(options), (/** @type {any} */ value) => ({ value: text(value) }))
  }

  /**
   * @param {import('./backends.js').PrivateIterator} iterator
   * @param {(item: any) => LogEntry} entry
   * @returns {import('./backends.js').PrivateIterator}
   */
  #record (iterator, entry) {
    const log = () => this.log
    const next = iterator._next
    const nextv = iterator._nextv
    const all = iterator._all
    iterator._next = async function (...args) {
      const item = await next.apply(this, args)
      if (item !== undefined && log()) /** @type {LogEntry[]} */ (log()).push(entry(item))
      return item
    }
    iterator._nextv = async function (...args) {
      const items = await nextv.apply(this, args)
      if (log()) for (const item of items) /** @type {LogEntry[]} */ (log()).push(entry(item))
      return items
    }
    iterator._all = async function (...args) {
      const items = await all.apply(this, args)
      if (log()) for (const item of items) /** @type {LogEntry[]} */ (log()).push(entry(item))
      return items
    }
    return iterator
  }
}

/** @param {string | Uint8Array | undefined} v */
function text (v) {
  if (v === undefined) return undefined
  return typeof v === 'string' ? v : Buffer.from(v).toString('utf8')
}
