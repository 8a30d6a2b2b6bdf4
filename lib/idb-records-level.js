/* global IDBKeyRange */
import { AbstractIterator } from 'abstract-level'
import { compareBytes } from './bytes.js'
import { registerNativeLayout } from './native-layouts.js'
import { plainIo, asKey, bytesOf } from './idb-records.js'

// The abstract-level side of native collections (lib/idb-records.js): a
// BrowserLevel whose reads, writes, iterators and clears route a native
// layout's key ranges to its object stores, so everything above (sublevels,
// levelkit's model, check(), exports) sees one ordered key space.

/**
 * @typedef {import('./idb-records.js').NativeLayout} NativeLayout
 * @typedef {import('./idb-records.js').Range} Range
 */

/**
 * A BrowserLevel class whose databases route `layout`'s key ranges to its
 * object stores: every read, write, iterator and clear sees one ordered key
 * space, as abstract-level defines it.
 * @param {any} BrowserLevel @param {NativeLayout} nativeLayout
 */
export function nativeLevelClass (BrowserLevel, nativeLayout) {
  return class NativeBrowserLevel extends BrowserLevel {
    /** @param {string} location @param {any} options */
    constructor (location, options) {
      super(location, options)
      registerNativeLayout(this, nativeLayout)
    }

    /** @param {'readonly' | 'readwrite'} mode */
    _transaction (mode) {
      return this.db.transaction([this.location, ...nativeLayout.stores], mode)
    }

    /** @param {Uint8Array} key @param {any} options */
    async _get (key, options) {
      const segment = nativeLayout.segmentOf(key)
      if (segment === null) return super._get(key, options)
      return done(this._transaction('readonly'), tx => nativeLayout.get(tx, plainIo, segment, key).then(fromStore))
    }

    /** @param {Uint8Array[]} keys @param {any} options */
    async _getMany (keys, options) {
      return done(this._transaction('readonly'), tx => Promise.all(keys.map(key => {
        const segment = nativeLayout.segmentOf(key)
        if (segment !== null) return nativeLayout.get(tx, plainIo, segment, key).then(fromStore)
        return plainIo.settle(tx.objectStore(this.location).get(asKey(key))).then(fromStore)
      })))
    }

    /** @param {Uint8Array} key @param {any} options */
    async _has (key, options) {
      return (await this._get(key, options)) !== undefined
    }

    /** @param {Uint8Array[]} keys @param {any} options */
    async _hasMany (keys, options) {
      return (await this._getMany(keys, options)).map(value => value !== undefined)
    }

    /** @param {Uint8Array} key @param {Uint8Array} value @param {any} options */
    async _put (key, value, options) {
      return this._batch([{ type: 'put', key, value }], options)
    }

    /** @param {Uint8Array} key @param {any} options */
    async _del (key, options) {
      return this._batch([{ type: 'del', key }], options)
    }

    /** @param {Array<{ type: 'put' | 'del', key: Uint8Array, value?: Uint8Array }>} operations @param {any} options */
    async _batch (operations, options) {
      const tx = this._transaction('readwrite')
      return done(tx, tx => {
        const store = tx.objectStore(this.location)
        const routed = []
        for (const op of operations) {
          const segment = nativeLayout.segmentOf(op.key)
          if (segment !== null) routed.push({ ...op, segment })
          else if (op.type === 'del') store.delete(asKey(op.key))
          else store.put(op.value, asKey(op.key))
        }
        return nativeLayout.write(tx, plainIo, routed).done
      }, true)
    }

    /** @param {any} options */
    async _clear (options) {
      const range = /** @type {Range} */ ({ gt: options.gt, gte: options.gte, lt: options.lt, lte: options.lte })
      if (options.limit >= 0) {
        // As browser-level does with a limit: the keys first, then a batch.
        const keys = await this.keys({ ...range, limit: options.limit, reverse: options.reverse === true, keyEncoding: 'view' }).all()
        return this._batch(keys.map((/** @type {Uint8Array} */ key) => ({ type: 'del', key })), {})
      }
      const keyRange = wholeRange(range)
      if (keyRange === false) return
      return done(this._transaction('readwrite'), tx => {
        const store = tx.objectStore(this.location)
        return Promise.all([
          nativeLayout.clear(tx, plainIo, range),
          plainIo.settle(keyRange === null ? store.clear() : store.delete(keyRange))
        ])
      }, true)
    }

    /** @param {any} options */
    _iterator (options) {
      return new NativeIterator(this, nativeLayout, options)
    }
  }
}

const textEncoder = new TextEncoder()

/**
 * A value as browser-level's side gives it to abstract-level: bytes. A
 * native record's may be stored as text (NativeLayout#recordObject()).
 * @param {any} value
 */
function fromStore (value) {
  if (value === undefined || value instanceof Uint8Array) return value
  return typeof value === 'string' ? textEncoder.encode(value) : new Uint8Array(value)
}

/**
 * Run `requests` in `tx` and resolve with what they resolve to once `tx`
 * completed (rejects if it aborts, with the error that aborted it).
 * @template T
 * @param {IDBTransaction} tx @param {(tx: IDBTransaction) => Promise<T>} requests @param {boolean} [commit] commit once they are answered
 * @returns {Promise<T>}
 */
function done (tx, requests, commit = false) {
  return new Promise((resolve, reject) => {
    /** @type {any} */
    let result
    /** @type {unknown} */
    let failure
    tx.oncomplete = () => resolve(result)
    tx.onabort = () => reject(failure ?? tx.error ?? new Error('IndexedDB transaction aborted'))
    let answer
    try {
      answer = requests(tx)
    } catch (err) {
      failure = err
      tx.abort()
      return
    }
    answer.then(value => {
      result = value
      if (commit && typeof tx.commit === 'function') {
        try { tx.commit() } catch {}
      }
    }, err => {
      failure ??= err
      try { tx.abort() } catch {}
    })
  })
}

/**
 * An iterator over browser-level's store and the native stores together:
 * each step reads up to its size from each source the remaining range
 * overlaps, in one readonly transaction, and takes the first of them in
 * order (browser-level's store holds no routed key, so the sources'
 * entries are disjoint).
 */
/** @extends {AbstractIterator<any, Uint8Array, Uint8Array>} */
class NativeIterator extends AbstractIterator {
  #layout
  /** @type {Range & { reverse: boolean, keys: boolean, values: boolean }} */
  #options
  /** @type {Range} */
  #range
  /** @type {Array<[any, any]>} */
  #buffer = []
  #finished = false
  #first = true

  /** @param {any} db @param {NativeLayout} nativeLayout @param {any} options */
  constructor (db, nativeLayout, options) {
    super(db, options)
    this.#layout = nativeLayout
    this.#options = options
    this.#range = { gt: options.gt, gte: options.gte, lt: options.lt, lte: options.lte }
    this.#finished = this.limit === 0
  }

  /** @param {number} size @returns {Promise<Array<[any, any]>>} */
  async #fetch (size) {
    if (this.#finished) return []
    const db = /** @type {any} */ (this.db)
    const reverse = this.#options.reverse === true
    const values = this.#options.values !== false
    const range = this.#range
    const tx = db._transaction('readonly')
    /** @type {Array<Promise<Array<[Uint8Array, any]>>>} */
    const sources = []
    // Browser-level's store holds no routed key: its entries and the
    // native stores' are disjoint, merged by key below.
    const mainRange = wholeRange(range)
    if (mainRange !== false) {
      const store = tx.objectStore(db.location)
      const direction = reverse ? 'prev' : 'next'
      const request = values ? store.openCursor(mainRange, direction) : store.openKeyCursor(mainRange, direction)
      sources.push(plainIo.cursor(request, size, cursor => [bytesOf(cursor.key), values ? fromStore(cursor.value) : undefined]))
    }
    for (const segment of this.#layout.segmentsIn(range)) {
      sources.push(values ? this.#layout.entries(tx, plainIo, segment, range, reverse, size, true).then(entries => entries.map(([key, value]) => [key, fromStore(value)])) : this.#layout.entries(tx, plainIo, segment, range, reverse, size, false))
    }
    const found = (await done(tx, () => Promise.all(sources))).flat()
    found.sort((a, b) => reverse ? compareBytes(b[0], a[0]) : compareBytes(a[0], b[0]))
    const taken = found.slice(0, size)
    if (taken.length < size) this.#finished = true
    if (taken.length > 0) {
      const last = taken[taken.length - 1][0]
      if (reverse) this.#range = { ...range, lt: last, lte: undefined }
      else this.#range = { ...range, gt: last, gte: undefined }
    }
    return taken.map(([key, value]) => /** @type {[any, any]} */ ([this.#options.keys === false ? undefined : key, value]))
  }

  /** @param {number} size @param {any} options */
  async _nextv (size, options) {
    this.#first = false
    if (this.#buffer.length > 0) return this.#buffer.splice(0, Math.min(size, this.#buffer.length))
    return this.#fetch(size)
  }

  async _next () {
    if (this.#buffer.length === 0 && !this.#finished) {
      // The first step reads one: many iterators are made for one entry.
      const size = this.#first ? 1 : Math.min(100, this.limit - this.count)
      this.#first = false
      this.#buffer = await this.#fetch(size)
    }
    return this.#buffer.shift()
  }

  /** @param {any} options */
  async _all (options) {
    this.#first = false
    const buffered = this.#buffer.splice(0)
    const size = this.limit - this.count - buffered.length
    if (size <= 0) return buffered
    return buffered.concat(await this.#fetch(size))
  }

  /** @param {Uint8Array} target @param {any} options */
  _seek (target, options) {
    this.#buffer = []
    this.#first = true
    const original = this.#options
    const range = { gt: original.gt, gte: original.gte, lt: original.lt, lte: original.lte }
    // Past the range's start: from the target on (past its end: nothing,
    // the range being empty then).
    if (original.reverse) {
      const high = range.lte ?? range.lt
      if (high === undefined || compareBytes(target, high) < 0 || (range.lte !== undefined && compareBytes(target, high) === 0)) {
        range.lt = undefined
        range.lte = target
      }
    } else {
      const low = range.gte ?? range.gt
      if (low === undefined || compareBytes(target, low) > 0 || (range.gte !== undefined && compareBytes(target, low) === 0)) {
        range.gt = undefined
        range.gte = target
      }
    }
    this.#range = range
    this.#finished = this.limit === 0
  }
}

/**
 * `range` as an IDBKeyRange over browser-level's whole store (null: all of
 * it), or false when it holds nothing.
 * @param {Range} range
 * @returns {IDBKeyRange | null | false}
 */
function wholeRange (range) {
  const lower = range.gte ?? range.gt
  const upper = range.lte ?? range.lt
  try {
    if (lower !== undefined && upper !== undefined) return IDBKeyRange.bound(lower, upper, range.gte === undefined, range.lte === undefined)
    if (lower !== undefined) return IDBKeyRange.lowerBound(lower, range.gte === undefined)
    if (upper !== undefined) return IDBKeyRange.upperBound(upper, range.lte === undefined)
    return null
  } catch {
    return false
  }
}
