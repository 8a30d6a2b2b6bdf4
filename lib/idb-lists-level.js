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
 * Routed entries read per request, at most: a large range (an export, a
 * check() of a large relation) is read a chunk at a time as the iterator
 * goes, not all at its first step.
 */
export const ENTRIES_CHUNK = 128

/**
 * `range` narrowed to start at `from` (a key read last, or a seek's
 * target) in the iterator's direction, where that is tighter.
 * @param {Range} range @param {{ key: Uint8Array, inclusive: boolean } | null} from @param {boolean} reverse
 * @returns {Range}
 */
function narrowed (range, from, reverse) {
  /** @type {Range} */
  const out = {}
  for (const bound of /** @type {Array<keyof Range>} */ (['gt', 'gte', 'lt', 'lte'])) if (range[bound] !== undefined) out[bound] = range[bound]
  if (from === null) return out
  const [open, closed] = reverse ? /** @type {const} */ (['lt', 'lte']) : /** @type {const} */ (['gt', 'gte'])
  const start = out[closed] ?? out[open]
  const order = start === undefined ? 1 : compareBytes(from.key, start) * (reverse ? -1 : 1)
  if (order > 0 || (order === 0 && !from.inclusive)) {
    delete out[open]
    delete out[closed]
    out[from.inclusive ? closed : open] = from.key
  }
  return out
}

/**
 * browser-level's iterator (which finds nothing in the routed namespaces
 * but the lists a move into the entries has not deleted yet: those give
 * way to their entries) merged in key order with the entries
 * of the routed namespaces in the range, read ENTRIES_CHUNK at a time (one
 * request each) as the merge reaches them, route after route in the
 * iterator's direction.
 */
/** @extends {AbstractIterator<any, Uint8Array, Uint8Array>} */
class EntriesIterator extends AbstractIterator {
  #inner
  /** @type {Route[]} in the iterator's direction */
  #routes
  #direct
  #options
  #reverse
  /** the route being read */
  #route = 0
  /** whether that route's entries are all read into #chunk */
  #routeDone = false
  /** @type {Array<[Uint8Array, any]>} the current chunk of routed entries, in order */
  #chunk = []
  #at = 0
  /** @type {{ key: Uint8Array, inclusive: boolean } | null} where the next chunk starts: past the last key read, or at a seek's target */
  #from = null
  /** @type {Array<[Uint8Array, any]>} */
  #buffer = []
  #innerDone = false

  /**
   * @param {any} db @param {any} options @param {any} inner browser-level's iterator (keys on, no limit)
   * @param {Route[]} routes @param {import('./idb-direct.js').IdbDirect} direct
   */
  constructor (db, options, inner, routes, direct) {
    super(db, options)
    this.#inner = inner
    this.#reverse = options.reverse === true
    this.#routes = [...routes].sort((a, b) => compareBytes(a.prefix, b.prefix) * (this.#reverse ? -1 : 1))
    this.#direct = direct
    this.#options = options
  }

  /**
   * The next routed entry in order (not taken), reading the next chunk
   * where the current one is used up; undefined past the last.
   * @returns {Promise<[Uint8Array, any] | undefined>}
   */
  async #peek () {
    while (this.#at >= this.#chunk.length && this.#route < this.#routes.length) {
      const route = this.#routes[this.#route]
      const range = narrowed(this.#options, this.#from, this.#reverse)
      if (this.#routeDone || !overlaps(range, route)) {
        this.#route++
        this.#routeDone = false
        continue
      }
      const values = this.#options.values !== false
      // No more than the iterator may still return (its limit counts every entry, routed or not).
      const count = this.limit === Infinity ? ENTRIES_CHUNK : Math.max(1, Math.min(ENTRIES_CHUNK, this.limit - this.count))
      const found = await this.#direct.entries(route.namespace, boundsIn(range, route), { values, reverse: this.#reverse, limit: count }, false)
      this.#chunk = found.map(([key, value]) => [concatBytes(route.prefix, key), values ? asBytes(value) : undefined])
      this.#at = 0
      if (found.length < count) this.#routeDone = true
      if (this.#chunk.length > 0) this.#from = { key: this.#chunk[this.#chunk.length - 1][0], inclusive: false }
    }
    return this.#chunk[this.#at]
  }

  /** @param {number} size @param {any} options */
  async _nextv (size, options) {
    const reverse = this.#reverse
    /** @type {Array<[any, any]>} */
    const out = []
    while (out.length < size) {
      if (this.#buffer.length === 0 && !this.#innerDone) {
        const items = await this.#inner._nextv(Math.max(size - out.length, 16), {})
        if (items.length === 0) this.#innerDone = true
        else this.#buffer = items
      }
      let a = this.#buffer[0]
      const b = await this.#peek()
      if (a === undefined && b === undefined) break
      if (a !== undefined && b !== undefined && compareBytes(a[0], b[0]) === 0) {
        // A list a move into the entries has not deleted yet (it runs, or
        // its tab closed mid-move): the entry holds the list, so it wins.
        this.#buffer.shift()
        a = this.#buffer[0]
        if (a === undefined && !this.#innerDone) continue
      }
      const takeExtra = a === undefined || (b !== undefined && (reverse ? compareBytes(b[0], a[0]) > 0 : compareBytes(b[0], a[0]) < 0))
      const entry = takeExtra ? this.#chunk[this.#at++] : /** @type {[Uint8Array, any]} */ (this.#buffer.shift())
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
    // The routed entries from the target on, read again from there.
    this.#route = 0
    this.#routeDone = false
    this.#chunk = []
    this.#at = 0
    this.#from = { key: target, inclusive: true }
  }

  async _close () {
    await this.#inner.close()
  }
}
