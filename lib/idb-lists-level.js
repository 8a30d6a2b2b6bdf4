import { AbstractIterator } from 'abstract-level'
import { compareBytes, concatBytes } from './bytes.js'
import { levelkitError, codes } from './errors.js'

// The abstract-level side of relations whose forward lists are kept in
// levelkit's lists store only (open({ relationIndexes: 'entries' }),
// IdbDirect's entries-only namespaces): a BrowserLevel whose point reads and
// iterators answer those namespaces' key ranges from their entries (through
// lib/idb-direct.js, which encodes each entry's ids as the list's bytes), so
// everything that reads through sublevels (check(), exports, layout checks)
// sees the lists as before. Writes reach them through the write path only
// (lib/writer.js sends every batch of a mirrored namespace to
// lib/idb-direct.js): one made here is refused.

/**
 * @typedef {import('./namespace.js').Namespace} Namespace
 * @typedef {{ namespace: Namespace, prefix: Uint8Array, upper: Uint8Array }} Route
 * @typedef {{ gt?: Uint8Array, gte?: Uint8Array, lt?: Uint8Array, lte?: Uint8Array }} Range
 */

const textEncoder = new TextEncoder()

/**
 * A BrowserLevel class whose databases route the key ranges of entries-only
 * namespaces (registered by lib/idb-direct.js once a relation's layout is
 * settled) to the lists store.
 * @param {any} BrowserLevel
 */
export function listsLevelClass (BrowserLevel) {
  return class ListsBrowserLevel extends BrowserLevel {
    /** @type {Route[]} */
    #routes = []
    /** @type {import('./idb-direct.js').IdbDirect | null} */
    #direct = null

    /**
     * Route the keys of `namespace` (its lists kept in their entries only)
     * to `direct`.
     * @param {import('./idb-direct.js').IdbDirect} direct @param {Namespace} namespace
     */
    routeEntries (direct, namespace) {
      if (this.#routes.some(route => route.namespace === namespace)) return
      const prefix = textEncoder.encode(namespace.prefix)
      const upper = prefix.slice()
      upper[upper.length - 1]++
      this.#direct = direct
      this.#routes.push({ namespace, prefix, upper })
    }

    /** @param {Uint8Array} key @returns {Route | null} */
    #routeOf (key) {
      for (const route of this.#routes) {
        if (compareBytes(key, route.prefix) >= 0 && compareBytes(key, route.upper) < 0) return route
      }
      return null
    }

    /** @param {Route} route @param {Uint8Array} key @returns {Promise<Uint8Array | undefined>} */
    #read (route, key) {
      const direct = /** @type {import('./idb-direct.js').IdbDirect} */ (this.#direct)
      return direct.get(route.namespace, key.subarray(route.prefix.length), false).then(asBytes)
    }

    /** @param {Uint8Array} key @param {any} options */
    async _get (key, options) {
      const route = this.#routes.length === 0 ? null : this.#routeOf(key)
      return route === null ? super._get(key, options) : this.#read(route, key)
    }

    /** @param {Uint8Array[]} keys @param {any} options */
    async _getMany (keys, options) {
      if (this.#routes.length === 0 || !keys.some(key => this.#routeOf(key) !== null)) return super._getMany(keys, options)
      return Promise.all(keys.map(key => this._get(key, options)))
    }

    /** @param {Uint8Array} key @param {any} options */
    async _has (key, options) {
      return (await this._get(key, options)) !== undefined
    }

    /** @param {Uint8Array[]} keys @param {any} options */
    async _hasMany (keys, options) {
      return (await this._getMany(keys, options)).map((/** @type {unknown} */ value) => value !== undefined)
    }

    /** @param {Array<{ key: Uint8Array }>} operations @param {any} options */
    async _batch (operations, options) {
      if (this.#routes.length > 0) for (const op of operations) this.#refuse(this.#routeOf(op.key))
      return super._batch(operations, options)
    }

    /** @param {Uint8Array} key @param {any} value @param {any} options */
    async _put (key, value, options) {
      if (this.#routes.length > 0) this.#refuse(this.#routeOf(key))
      return super._put(key, value, options)
    }

    /** @param {Uint8Array} key @param {any} options */
    async _del (key, options) {
      if (this.#routes.length > 0) this.#refuse(this.#routeOf(key))
      return super._del(key, options)
    }

    /** @param {any} options */
    async _clear (options) {
      for (const route of this.#routes) if (overlaps(options, route)) this.#refuse(route)
      return super._clear(options)
    }

    /** @param {Route | null} route */
    #refuse (route) {
      if (route === null) return
      throw levelkitError(codes.INVALID, `The lists of ${route.namespace.prefix} are kept in IndexedDB's lists store only: they are written by levelkit's write path, not through the database's abstract-level interface`)
    }

    /** @param {any} options */
    _iterator (options) {
      const routes = this.#routes.filter(route => overlaps(options, route))
      if (routes.length === 0) return super._iterator(options)
      // Keys to merge by; the limit is this iterator's.
      const inner = super._iterator({ ...options, keys: true, limit: -1 })
      return new EntriesIterator(this, options, inner, routes, /** @type {import('./idb-direct.js').IdbDirect} */ (this.#direct))
    }
  }
}

/** A list's value as browser-level's side gives it: bytes. @param {any} value */
function asBytes (value) {
  return typeof value === 'string' ? textEncoder.encode(value) : value
}

/** Whether the range `options` and the namespace of `route` share a key. @param {Range} options @param {Route} route */
function overlaps (options, route) {
  const low = options.gte ?? options.gt
  const high = options.lte ?? options.lt
  if (low !== undefined && compareBytes(low, route.upper) >= 0) return false
  if (high !== undefined && (options.lte !== undefined ? compareBytes(high, route.prefix) < 0 : compareBytes(high, route.prefix) <= 0)) return false
  return true
}

/**
 * The bounds, within `route`'s namespace (unprefixed), of the part of
 * `range` in it.
 * @param {Range} range @param {Route} route
 */
function boundsIn (range, route) {
  /** @type {Range} */
  const bounds = {}
  const n = route.prefix.length
  const low = range.gte ?? range.gt
  if (low !== undefined && compareBytes(low, route.prefix) >= 0) bounds[range.gte !== undefined ? 'gte' : 'gt'] = low.slice(n)
  const high = range.lte ?? range.lt
  if (high !== undefined && compareBytes(high, route.upper) < 0) bounds[range.lte !== undefined ? 'lte' : 'lt'] = high.slice(n)
  return bounds
}

/**
 * browser-level's iterator (which finds nothing in the routed namespaces:
 * their lists are not in its store) merged in key order with the entries
 * of the routed namespaces in the range, read at the first step.
 */
/** @extends {AbstractIterator<any, Uint8Array, Uint8Array>} */
class EntriesIterator extends AbstractIterator {
  #inner
  #routes
  #direct
  #options
  /** @type {Array<[Uint8Array, any]> | null} the routed entries in order, once read */
  #extra = null
  #at = 0
  /** @type {Array<[Uint8Array, any]>} */
  #buffer = []
  #innerDone = false
  /** @type {Uint8Array | null} where a seek before the first step goes */
  #target = null

  /**
   * @param {any} db @param {any} options @param {any} inner browser-level's iterator (keys on, no limit)
   * @param {Route[]} routes @param {import('./idb-direct.js').IdbDirect} direct
   */
  constructor (db, options, inner, routes, direct) {
    super(db, options)
    this.#inner = inner
    this.#routes = routes
    this.#direct = direct
    this.#options = options
  }

  async #load () {
    if (this.#extra !== null) return
    const reverse = this.#options.reverse === true
    const values = this.#options.values !== false
    /** @type {Array<[Uint8Array, any]>} */
    const extra = []
    for (const route of this.#routes) {
      const found = await this.#direct.entries(route.namespace, boundsIn(this.#options, route), { values, reverse }, false)
      for (const [key, value] of found) extra.push([concatBytes(route.prefix, key), values ? asBytes(value) : undefined])
    }
    extra.sort((a, b) => reverse ? compareBytes(b[0], a[0]) : compareBytes(a[0], b[0]))
    this.#extra = extra
    if (this.#target !== null) this.#skipTo(this.#target)
  }

  /** Past the routed entries before `target`, in the iterator's direction. @param {Uint8Array} target */
  #skipTo (target) {
    const extra = /** @type {Array<[Uint8Array, any]>} */ (this.#extra)
    const reverse = this.#options.reverse === true
    this.#at = 0
    while (this.#at < extra.length && (reverse ? compareBytes(extra[this.#at][0], target) > 0 : compareBytes(extra[this.#at][0], target) < 0)) this.#at++
  }

  /** @param {number} size @param {any} options */
  async _nextv (size, options) {
    await this.#load()
    const extra = /** @type {Array<[Uint8Array, any]>} */ (this.#extra)
    const reverse = this.#options.reverse === true
    /** @type {Array<[any, any]>} */
    const out = []
    while (out.length < size) {
      if (this.#buffer.length === 0 && !this.#innerDone) {
        const items = await this.#inner._nextv(Math.max(size - out.length, 16), {})
        if (items.length === 0) this.#innerDone = true
        else this.#buffer = items
      }
      const a = this.#buffer[0]
      const b = extra[this.#at]
      if (a === undefined && b === undefined) break
      const takeExtra = a === undefined || (b !== undefined && (reverse ? compareBytes(b[0], a[0]) > 0 : compareBytes(b[0], a[0]) < 0))
      const entry = takeExtra ? extra[this.#at++] : /** @type {[Uint8Array, any]} */ (this.#buffer.shift())
      out.push([this.#options.keys === false ? undefined : entry[0], entry[1]])
    }
    return out
  }

  async _next () {
    const [entry] = await this._nextv(1, {})
    return entry
  }

  /** @param {Uint8Array} target @param {any} options */
  _seek (target, options) {
    this.#inner._seek(target, options)
    this.#buffer = []
    this.#innerDone = false
    this.#target = target
    if (this.#extra !== null) this.#skipTo(target)
  }

  async _close () {
    await this.#inner.close()
  }
}
