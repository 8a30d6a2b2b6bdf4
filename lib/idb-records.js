/* global IDBKeyRange */
import { levelkitError, codes } from './errors.js'
import { compareBytes, concatBytes } from './bytes.js'
import { layout } from './names.js'
import { RECORDS_STORES } from './native-layouts.js'

// Layout C on IndexedDB: a collection's records in an object store of their
// own, `<location>/levelkit-records/<collection>`, as `{ v, k0, k1, ... }`
// (v: the record as stored, its JSON text (bytes where written through
// db.level, or by levelkit before 0.2: both are read; see recordObject());
// kN: the full keys of its entries in its Nth
// index, an array: one native index kind serves indexes with one entry per
// record and multi ones), with one multiEntry native index per declared
// index over kN (binary keys:
// IndexedDB orders them byte by byte, as Level orders keys). IndexedDB
// maintains the indexes in the transaction of each write, and refuses a
// write that gives two records one entry (unique: true on every native
// index: a unique index's entry key is its value, a non-unique one's ends
// with the record's id) with a ConstraintError that aborts the transaction:
// a new record and its unique values are one put().
//
// Everything above sees one ordered key space, as before: the records'
// namespace (its sublevel prefix) and its indexes' namespaces are routed
// here by key range, underneath the abstract-level interface (nativeLevel())
// and under levelkit's direct IndexedDB path (lib/idb-direct.js), so every
// path that reads or writes them (getters, queries, getBy, check() and
// repair, builds, moves, exports) keeps working unchanged. An index's
// namespace is virtual: its entries are the native index's keys, its values
// derived from the record (covering: the record; unique: its id; else
// empty). A write into it changes nothing by itself: the record's put that
// comes with it in the batch writes the entry; one that comes alone (a
// repair, an index build) rewrites the record it names, so its entries are
// computed again from its value. The abstract-level side:
// lib/idb-records-level.js.

/** @param {string} location @param {string} collection */
export function recordsStoreOf (location, collection) {
  return `${location}${RECORDS_STORES}${collection}`
}

const textEncoder = new TextEncoder()
const EMPTY = new Uint8Array(0)
// IndexedDB takes a count up to 2 ** 32 - 1: more is all of them.
const MAX_COUNT = 2 ** 32 - 1

/**
 * What open() is told: the native collections and the names of their
 * indexes, all of them (a native index can only be made by an IndexedDB
 * version upgrade over existing records, which this layout does not do).
 * @typedef {{ collection: string, indexes: string[] }} NativeSpec
 *
 * What the model gives an index once the collection is declared:
 * `keys`: the entry keys (in the index's namespace) of the record stored
 * under `key` (in the records' namespace) with `value` (its JSON, text or bytes; `computed`: the
 * record's entries by index, as the model computed them for the put, else
 * computed here from `value`);
 * `value`: what an entry holds; `owner`: the key of the record an entry
 * (key, value as written) belongs to.
 * @typedef {{ keys: (value: StoredValue, key: Uint8Array, computed?: Entries) => Uint8Array[], value: 'record' | 'id' | 'empty', owner: (key: Uint8Array, value: StoredValue) => Uint8Array }} IndexBinding
 *
 * A record's value as a native store holds it: text, or bytes (see recordObject()).
 * @typedef {string | Uint8Array} StoredValue
 *
 * @typedef {import('./write-scope.js').Op['entries']} Entries
 * @typedef {{ name: string, native: string, field: string, prefix: Uint8Array, upper: Uint8Array, binding: IndexBinding | null, collection: NativeCollection }} NativeIndex
 * @typedef {{ name: string, store: string, prefix: Uint8Array, upper: Uint8Array, indexes: NativeIndex[] }} NativeCollection
 * @typedef {{ prefix: Uint8Array, upper: Uint8Array, collection: NativeCollection, index: NativeIndex | null }} Segment
 * @typedef {{ gt?: Uint8Array, gte?: Uint8Array, lt?: Uint8Array, lte?: Uint8Array }} Range
 * @typedef {{ settle: (request: IDBRequest) => Promise<any>, cursor: (request: IDBRequest, count: number, entry: (cursor: any) => [Uint8Array, any]) => Promise<Array<[Uint8Array, any]>> }} Io
 *   how requests are awaited: lib/idb-direct.js passes its own, which keep its transaction current
 */

/** The bytes of a sublevel's prefix (abstract-level's, for a flat sublevel of the root). @param {string} name */
function prefixOf (name) {
  const prefix = textEncoder.encode(`!${name}!`)
  const upper = prefix.slice()
  upper[upper.length - 1]++
  return { prefix, upper }
}

/** A Level key as an IndexedDB key (a binary one). @param {Uint8Array} key @returns {IDBValidKey} */
export function asKey (key) {
  return /** @type {any} */ (key)
}

/** @param {any} key an IndexedDB binary key as it comes back @returns {Uint8Array} */
export function bytesOf (key) {
  return key instanceof Uint8Array ? key : new Uint8Array(key)
}

/** A record's `v` as it comes back: text, or bytes (an ArrayBuffer from a store written otherwise). @param {any} v @returns {StoredValue} */
export function storedValue (v) {
  return typeof v === 'string' ? v : bytesOf(v)
}

/** @param {string} message @param {any} [details] */
const layoutError = (message, details) => levelkitError(codes.NATIVE_LAYOUT, message, details)

/** The Io of requests made outside lib/idb-direct.js. @type {Io} */
export const plainIo = {
  settle: request => new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result)
    request.onerror = () => reject(request.error)
  }),
  cursor: (request, count, entry) => new Promise((resolve, reject) => {
    /** @type {Array<[Uint8Array, any]>} */
    const entries = []
    request.onsuccess = () => {
      const cursor = /** @type {any} */ (request.result)
      if (cursor === null) return resolve(entries)
      entries.push(entry(cursor))
      if (entries.length < count) cursor.continue()
      else resolve(entries)
    }
    request.onerror = () => reject(request.error)
  })
}

export class NativeLayout {
  /** How requests are awaited outside lib/idb-direct.js. */
  io = plainIo
  /** @type {NativeCollection[]} */
  collections = []
  /** @type {Segment[]} in key order */
  segments = []
  /** @type {string[]} the object stores, beside browser-level's */
  stores = []

  /**
   * @param {string} location browser-level's store
   * @param {NativeSpec[]} specs
   */
  constructor (location, specs) {
    this.location = location
    const seen = new Set()
    for (const spec of specs) {
      if (seen.has(spec.collection)) throw layoutError(`Collection "${spec.collection}" is named twice in the native option`)
      seen.add(spec.collection)
      const store = recordsStoreOf(location, spec.collection)
      /** @type {NativeCollection} */
      const collection = { name: spec.collection, store, ...prefixOf(layout.records(spec.collection)), indexes: [] }
      spec.indexes.forEach((index, i) => {
        collection.indexes.push({ name: index, native: index, field: `k${i}`, ...prefixOf(layout.index(spec.collection, index)), binding: null, collection })
      })
      this.collections.push(collection)
      this.stores.push(store)
      this.segments.push({ prefix: collection.prefix, upper: collection.upper, collection, index: null })
      for (const index of collection.indexes) this.segments.push({ prefix: index.prefix, upper: index.upper, collection, index })
    }
    this.segments.sort((a, b) => compareBytes(a.prefix, b.prefix))
  }

  /**
   * Make this layout's stores in an upgrade of `db` (`upgrade`: its
   * versionchange transaction), or with null only check them: see
   * nativeStoresReady().
   * @param {IDBDatabase} db @param {IDBTransaction | null} upgrade
   */
  storesReady (db, upgrade) {
    return nativeStoresReady(db, upgrade, this.location, this)
  }

  /**
   * The first collection of this layout whose records browser-level's
   * store holds (in `tx`), or null. @param {IDBTransaction} tx
   */
  switching (tx) {
    return switchingCollection(tx, this.location, this)
  }

  /** @param {string} name */
  collection (name) {
    return this.collections.find(c => c.name === name)
  }

  /**
   * Give the indexes of `name` what the model computes (its key functions):
   * until then its records are written without entries, and its entries
   * can be neither read nor written (LEVELKIT_NATIVE_LAYOUT). The
   * indexes must be the ones the database was opened with, in any order.
   * @param {string} name @param {Map<string, IndexBinding>} bindings
   */
  bind (name, bindings) {
    const collection = /** @type {NativeCollection} */ (this.collection(name))
    const declared = [...bindings.keys()].sort()
    const opened = collection.indexes.map(i => i.name).sort()
    if (declared.join('\u0000') !== opened.join('\u0000')) {
      throw layoutError(`Collection "${name}" is native on IndexedDB with the indexes ${JSON.stringify(opened)} (declared when the database was opened), and is declared with ${JSON.stringify(declared)}: a native collection's indexes are fixed when its store is made`, { collection: name })
    }
    for (const index of collection.indexes) {
      index.binding = /** @type {IndexBinding} */ (bindings.get(index.name))
    }
  }

  /**
   * The segment `key` is in, or null (browser-level's store).
   * @param {Uint8Array} key
   * @returns {Segment | null}
   */
  segmentOf (key) {
    const segments = this.segments
    let low = 0
    let high = segments.length
    // The last segment whose prefix is at or below key.
    while (low < high) {
      const middle = (low + high) >>> 1
      if (compareBytes(segments[middle].prefix, key) <= 0) low = middle + 1
      else high = middle
    }
    if (low === 0) return null
    const segment = segments[low - 1]
    return compareBytes(key, segment.upper) < 0 ? segment : null
  }

  /**
   * The segments `range` overlaps, in key order.
   * @param {Range} range
   */
  segmentsIn (range) {
    const low = range.gte ?? range.gt
    const high = range.lte ?? range.lt
    return this.segments.filter(s =>
      (low === undefined || compareBytes(low, s.upper) < 0) &&
      (high === undefined || compareBytes(s.prefix, high) < 0 || (range.lte !== undefined && compareBytes(s.prefix, high) === 0)))
  }

  /** @param {NativeIndex} index */
  #binding (index) {
    if (index.binding === null) throw layoutError(`Index "${index.name}" of native collection "${index.collection.name}" is read or written before the collection is declared`, { collection: index.collection.name, index: index.name })
    return index.binding
  }

  /**
   * The object a record is stored as: its value and its entries' keys.
   * The value is kept as it comes: levelkit's write path hands over the
   * record's JSON text, which is cheaper than bytes at both ends (no
   * TextEncoder on the way in, no TextDecoder on the way out, and V8 clones
   * a one-byte string for less main-thread time than a Uint8Array in an
   * object); db.level's puts (abstract-level encodes them) and rewrites of
   * records stored before bring bytes, kept as bytes: every reader takes both.
   * @param {NativeCollection} collection @param {Uint8Array} key full @param {StoredValue} value
   * @param {Entries} [computed] the entries the model computed for this put (Op.entries)
   */
  recordObject (collection, key, value, computed) {
    /** @type {Record<string, any>} */
    const object = { v: value }
    const own = key.subarray(collection.prefix.length)
    for (const index of collection.indexes) {
      // Written before the collection is declared (straight to db.level):
      // stored without entries, as one store would hold such a record,
      // and check() reports them once it is declared.
      if (index.binding === null) continue
      const keys = index.binding.keys(value, own, computed)
      if (keys.length > 0) object[index.field] = keys.map(k => concatBytes(index.prefix, k))
    }
    return object
  }

  /**
   * The value of the routed key `key` in transaction `tx` (a record's: text or bytes, as stored).
   * @param {IDBTransaction} tx @param {Io} io @param {Segment} segment @param {Uint8Array} key
   * @returns {Promise<StoredValue | undefined>}
   */
  get (tx, io, segment, key) {
    const store = tx.objectStore(segment.collection.store)
    const index = segment.index
    if (index === null) return io.settle(store.get(asKey(key))).then(object => object?.v)
    const native = store.index(index.native)
    // Before the collection is declared, an entry's value is not known: an
    // absent one reads as absent (a database's first use), one there throws.
    if (index.binding === null) {
      return io.settle(native.getKey(asKey(key))).then(primary => {
        if (primary !== undefined) this.#binding(index)
        return undefined
      })
    }
    const kind = index.binding.value
    if (kind === 'record') return io.settle(native.get(asKey(key))).then(object => object?.v)
    const prefixLength = segment.collection.prefix.length
    return io.settle(native.getKey(asKey(key))).then(primary => primary === undefined ? undefined : kind === 'id' ? bytesOf(primary).slice(prefixLength) : EMPTY)
  }

  /**
   * The entries of `segment` within `range`, in order or reversed, at most
   * `count`, as full keys and values (undefined without `values`; a
   * record's: text or bytes, as stored).
   * @param {IDBTransaction} tx @param {Io} io @param {Segment} segment @param {Range} range
   * @param {boolean} reverse @param {number} count @param {boolean} values
   * @returns {Promise<Array<[Uint8Array, any]>>}
   */
  entries (tx, io, segment, range, reverse, count, values) {
    const keyRange = clampRange(range, segment)
    if (keyRange === null || count <= 0) return Promise.resolve([])
    const store = tx.objectStore(segment.collection.store)
    const direction = reverse ? 'prev' : 'next'
    const index = segment.index
    // One getAllRecords() request in either direction where the browser
    // has it (a record: its key, primary key and value), else a cursor.
    const all = count === Infinity || count > MAX_COUNT ? undefined : count
    if (index === null) {
      if (typeof (/** @type {any} */ (store).getAllRecords) === 'function') {
        return io.settle(/** @type {any} */ (store).getAllRecords({ query: keyRange, count: all, direction }))
          .then(records => records.map((/** @type {any} */ record) => [bytesOf(record.key), values ? record.value.v : undefined]))
      }
      const request = values ? store.openCursor(keyRange, direction) : store.openKeyCursor(keyRange, direction)
      return io.cursor(request, count, cursor => [bytesOf(cursor.key), values ? cursor.value.v : undefined])
    }
    const native = store.index(index.native)
    if (index.binding === null) {
      return io.cursor(native.openKeyCursor(keyRange, direction), 1, cursor => [bytesOf(cursor.key), undefined]).then(found => {
        if (found.length > 0) this.#binding(index)
        return []
      })
    }
    const kind = index.binding.value
    const prefixLength = segment.collection.prefix.length
    /** @param {any} record an IDBRecord or a cursor @returns {[Uint8Array, any]} */
    const entry = record => {
      if (!values) return [bytesOf(record.key), undefined]
      const value = kind === 'record' ? record.value.v : kind === 'id' ? bytesOf(record.primaryKey).slice(prefixLength) : EMPTY
      return [bytesOf(record.key), value]
    }
    if (typeof (/** @type {any} */ (native).getAllRecords) === 'function') {
      return io.settle(/** @type {any} */ (native).getAllRecords({ query: keyRange, count: all, direction })).then(records => records.map(entry))
    }
    const request = values && kind === 'record' ? native.openCursor(keyRange, direction) : native.openKeyCursor(keyRange, direction)
    return io.cursor(request, count, entry)
  }

  /**
   * Make the requests of the routed ops of a batch in `tx`: records put
   * (add()ed if claimed: refused if the key holds one) or deleted with their
   * entries; an entry's op rewrites its record, unless the batch writes that
   * record itself. Resolves once every request made was answered (entries'
   * records are read first); a refused request aborts `tx`.
   * @param {IDBTransaction} tx @param {Io} io
   * @param {Array<{ type: 'put' | 'del', key: Uint8Array, value?: StoredValue, claim?: boolean, entries?: Entries, own?: Uint8Array, segment: Segment }>} ops
   *   `own`: an entry's key in its index's namespace, as the model made it (the object)
   * @returns {{ made: number, done: Promise<void> }}
   */
  write (tx, io, ops) {
    let made = 0
    /** @type {Array<[NativeCollection, Uint8Array]>} records the batch writes */
    const records = []
    /** @type {Array<{ segment: Segment, key: Uint8Array, value?: StoredValue, type: 'put' | 'del' }>} */
    const entryOps = []
    /**
     * The keys (the objects) of the entries that the batch's record puts
     * carry (Op.entries): their puts are written by those records' puts,
     * so their records need not be found (a covering entry's record parsed)
     * to see that they are written already.
     * @type {Set<Uint8Array> | null}
     */
    let carried = null
    for (const op of ops) {
      if (op.entries === undefined || op.segment.index !== null || op.type !== 'put') continue
      for (const [, entries] of op.entries) for (const entry of entries) (carried ??= new Set()).add(entry.key)
    }
    for (const op of ops) {
      const segment = op.segment
      const collection = segment.collection
      if (segment.index !== null) {
        made++
        if (op.type === 'put' && carried !== null && op.own !== undefined && carried.has(op.own)) continue
        entryOps.push({ segment, key: op.key, value: op.value, type: op.type })
        continue
      }
      const store = tx.objectStore(collection.store)
      records.push([collection, op.key])
      if (op.type === 'del') store.delete(asKey(op.key))
      else {
        const object = this.recordObject(collection, op.key, /** @type {StoredValue} */ (op.value), op.entries)
        if (op.claim === true) store.add(object, asKey(op.key))
        else store.put(object, asKey(op.key))
      }
      made++
    }
    if (entryOps.length === 0) return { made, done: Promise.resolve() }
    /** @type {Set<string>} */
    const written = new Set(records.map(([collection, key]) => collection.store + '\u0000' + keyName(key)))
    // Entries written alone: their records are rewritten, computed again.
    /** @type {Promise<any>[]} */
    const owners = []
    for (const op of entryOps) {
      const { segment } = op
      const index = /** @type {NativeIndex} */ (segment.index)
      const collection = segment.collection
      const store = tx.objectStore(collection.store)
      if (op.type === 'put') {
        const own = this.#binding(index).owner(op.key.subarray(index.prefix.length), /** @type {StoredValue} */ (op.value))
        owners.push(Promise.resolve(concatBytes(collection.prefix, own)))
      } else {
        owners.push(io.settle(store.index(index.native).getKey(asKey(op.key))).then(primary => primary === undefined ? undefined : bytesOf(primary)))
      }
    }
    const done = Promise.all(owners).then(keys => {
      /** @type {Promise<any>[]} */
      const rewrites = []
      keys.forEach((key, i) => {
        if (key === undefined) return
        const collection = entryOps[i].segment.collection
        const name = collection.store + '\u0000' + keyName(key)
        if (written.has(name)) return
        written.add(name)
        const store = tx.objectStore(collection.store)
        rewrites.push(io.settle(store.get(key)).then(object => {
          if (object !== undefined) return io.settle(store.put(this.recordObject(collection, key, storedValue(object.v)), key))
        }))
      })
      return Promise.all(rewrites).then(() => {})
    })
    return { made, done }
  }

  /**
   * Delete the routed keys of `range` in `tx`. An index's namespace is
   * derived from its records: clearing it deletes nothing (a build that
   * follows rewrites each record, computing its entries again).
   * @param {IDBTransaction} tx @param {Io} io @param {Range} range
   * @returns {Promise<unknown>}
   */
  clear (tx, io, range) {
    const requests = []
    for (const segment of this.segmentsIn(range)) {
      if (segment.index !== null) continue
      const keyRange = clampRange(range, segment)
      if (keyRange !== null) requests.push(io.settle(tx.objectStore(segment.collection.store).delete(keyRange)))
    }
    return Promise.all(requests)
  }
}

/** @param {Uint8Array} key */
function keyName (key) {
  return String.fromCharCode.apply(null, /** @type {any} */ (key))
}

/**
 * `range` within `segment`'s keys, as an IDBKeyRange, or null if nothing is.
 * @param {Range} range @param {{ prefix: Uint8Array, upper: Uint8Array }} segment
 * @returns {IDBKeyRange | null}
 */
export function clampRange (range, segment) {
  let lower = segment.prefix
  let lowerOpen = false
  const low = range.gte ?? range.gt
  if (low !== undefined && compareBytes(low, lower) >= 0) {
    lower = low
    lowerOpen = range.gte === undefined
  }
  let upper = segment.upper
  let upperOpen = true
  const high = range.lte ?? range.lt
  if (high !== undefined && compareBytes(high, upper) <= 0) {
    upper = high
    upperOpen = range.lte === undefined
  }
  const order = compareBytes(lower, upper)
  if (order > 0 || (order === 0 && (lowerOpen || upperOpen))) return null
  return IDBKeyRange.bound(lower, upper, lowerOpen, upperOpen)
}

/**
 * Make the native stores of `layout` in an upgrade of `db`, checking those
 * that exist: the stores of collections no longer native, or native ones
 * whose indexes changed, are refused (LEVELKIT_NATIVE_LAYOUT).
 * @param {IDBDatabase} db @param {IDBTransaction | null} upgrade the versionchange transaction, or null: only check
 * @param {string} location @param {NativeLayout | null} layout
 * @returns {boolean} whether every store is there as it should be
 */
export function nativeStoresReady (db, upgrade, location, layout) {
  const wanted = new Set(layout?.stores ?? [])
  for (const name of Array.from(db.objectStoreNames)) {
    if (name.startsWith(location + RECORDS_STORES) && !wanted.has(name)) {
      throw layoutError(`The IndexedDB database keeps collection "${name.slice((location + RECORDS_STORES).length)}" native (in its own object store): open it with that collection in the native option`, { store: name })
    }
  }
  let ready = true
  for (const collection of layout?.collections ?? []) {
    if (!db.objectStoreNames.contains(collection.store)) {
      if (upgrade === null) {
        ready = false
        continue
      }
      const store = db.createObjectStore(collection.store)
      for (const index of collection.indexes) store.createIndex(index.native, index.field, { unique: true, multiEntry: true })
      continue
    }
    const store = (upgrade ?? db.transaction([collection.store], 'readonly')).objectStore(collection.store)
    const names = Array.from(store.indexNames).sort()
    const want = collection.indexes.map(i => i.native).sort()
    const same = names.join('\u0000') === want.join('\u0000') && collection.indexes.every(index => {
      const native = store.index(index.native)
      return native.keyPath === index.field && native.multiEntry && native.unique
    })
    if (!same) throw layoutError(`Native collection "${collection.name}" was made with the indexes ${JSON.stringify(names)}, and is opened with ${JSON.stringify(want)}: a native collection's indexes are fixed when its store is made`, { collection: collection.name })
  }
  return ready
}

/**
 * Whether browser-level's store (in `tx`) holds keys of a collection that
 * `layout` makes native (its records were written in browser-level's store
 * before): such a collection cannot switch layout.
 * @param {IDBTransaction} tx @param {string} location @param {NativeLayout} layout
 * @returns {Promise<string | null>} the first such collection's name
 */
export async function switchingCollection (tx, location, layout) {
  const store = tx.objectStore(location)
  for (const segment of layout.segments) {
    const count = await plainIo.settle(store.count(IDBKeyRange.bound(segment.prefix, segment.upper, false, true)))
    if (count > 0) return segment.collection.name
  }
  return null
}

export { nativeLevelClass } from './idb-records-level.js'
