/* global IDBDatabase, IDBKeyRange */
import { entrySize } from './read-cache.js'
import { listsStoreOf, LIST_SLOTS, LIST_CLAIMS, slotIndexOf } from './idb-open.js'
import { nativeLayoutOf } from './native-layouts.js'
import { decodeIds } from './stored.js'
import { encode } from './tuple.js'
import { compareBytes, bytesToBinaryString } from './bytes.js'

// A lower layer under the write path and the reads for a browser-level
// database: the same object store, keys and values as browser-level writes
// them (the sublevel's prefix bytes then the key bytes; values as bytes), but
// many requests per IndexedDB transaction where browser-level opens one per
// get(), getMany(), iterator step and batch (each about a millisecond in
// Chromium, awaited one after another).
//
// IndexedDB commits a transaction once no request is pending at the end of a
// task, and refuses new requests outside the callbacks of its own requests
// (and the microtasks they run): a chain of reads that awaits only IndexedDB
// stays in one transaction, and a read after anything else (a Web Lock, a
// timer, a hash) finds it inactive or finished and starts another. That is
// safe here because the transaction is only a way to make fewer round trips:
// what keeps a critical section's reads current is the write lock of this tab
// and the cross-tab lock, held from its first read to its batch's commit.
//
// Two transactions are kept: a readwrite one for the critical sections'
// reads and their batch (so a section's reads and its batch are usually one
// transaction; sections that start while a batch commits read in it too, and
// see its writes, which the overlay shows them anyway), and a readonly one
// for reads outside the write path, which must never see a batch that is not
// committed. Reads join a transaction for a bounded time only: while a chain
// of requests keeps a transaction alive, a batch in it is not committed (its
// writes do not resolve), and transactions of this tab or others that write
// the store cannot start after a readonly one until it ends: a batch waits
// JOIN_MS at most for the reads that joined it, and another tab's writes wait
// READ_JOIN_MS at most for this tab's reads, as long as this tab's write
// path keeps the cross-tab lock under a stream of writes (lib/writer.js).
const JOIN_MS = 8
const READ_JOIN_MS = 50

// The lease cache. While this tab holds the cross-tab write lock (leased:
// kept while idle until another tab asks for it), no other tab writes the
// database, so the values this tab reads or writes stay what is stored:
// they are kept here and answer reads, inside the write path and out, with
// no IndexedDB request. The write path says when it holds the lock, and
// when it lost it or caught up after others wrote (lib/writer.js): what
// another tab wrote meanwhile is dropped key by key as its messages tell,
// or everything when this tab did not hear of all of it. A read that
// missed fills its key only if the lock was held from its request to its
// answer and no batch landed on that key meanwhile.
//
// A batch of this tab is seen by the other tabs from its commit on, and by
// this one once the task that tells it (the transaction's `complete`
// event) has run, which may be much later in a busy tab: meanwhile a read
// of a key it writes, called after another tab read the new value, must not
// answer the old one from memory. So the keys of a batch on its way are
// read from IndexedDB until it lands (a transaction made after the batch's
// waits for it), and the kept listing() answers are left aside while it
// writes a mirrored list.

const MAX_COUNT = 2 ** 32 - 1

// An entry above this share of the lease cache's bytes is not kept.
const LARGEST_SHARE = 16

const textEncoder = new TextEncoder()
const textDecoder = new TextDecoder()

/** @type {WeakMap<object, IdbDirect>} */
const direct = new WeakMap()

/**
 * The direct layer for `level` if it is a browser-level database (not a
 * sublevel of one: then keys carry a prefix of its own), else null.
 * @param {any} level
 * @returns {IdbDirect | null}
 */
export function idbDirectFor (level) {
  if (level?.type !== 'browser-level' || typeof IDBKeyRange !== 'function' || typeof level.location !== 'string' || 'prefix' in level) return null
  let layer = direct.get(level)
  if (layer === undefined) direct.set(level, layer = new IdbDirect(level))
  return layer
}

// listing() answers kept at most (then they are dropped, all at once).
const LISTINGS_KEPT = 4096
// Mirror entries' ids kept at most (#entries), likewise.
const ENTRIES_KEPT = 16384

/** A kept listing()'s name. @param {string} tag @param {number | string} id */
function listingName (tag, id) {
  return `${tag}\u0000${typeof id}:${id}`
}

/**
 * Where `key` is in `keys` (in byte order): its index, or -(insertion point) - 1.
 * @param {Uint8Array[]} keys @param {Uint8Array} key
 */
function keyPosition (keys, key) {
  let low = 0
  let high = keys.length
  while (low < high) {
    const middle = (low + high) >>> 1
    const order = compareBytes(keys[middle], key)
    if (order === 0) return middle
    if (order < 0) low = middle + 1
    else high = middle
  }
  return -low - 1
}

/**
 * @typedef {{ transaction: IDBTransaction, store: IDBObjectStore, lists: IDBObjectStore | null, write: boolean, done: boolean, strict: boolean, sealed: boolean, since: number, writes: number }} Slot
 *   `sealed`: holds a batch; `since`: when it was opened, or got its batch; `writes`: write path transactions opened before it;
 *   `lists`: levelkit's lists store (lib/idb-open.js), in the transaction once a namespace is mirrored there
 * @typedef {import('./write-scope.js').Bounds} Bounds
 * @typedef {boolean | 'strict'} Mode where a read is made: false outside the write path (a readonly
 *   transaction), true inside a critical section (the write path's readwrite transaction), 'strict' inside
 *   one whose batch is to be durable (a readwrite transaction with 'strict' durability, which the batch joins)
 */

export class IdbDirect {
  #level
  /** @type {Slot | null} the transaction of the write path */
  #write = null
  /** @type {Slot | null} the transaction of reads outside it */
  #read = null
  /** @type {WeakMap<object, { prefix: Uint8Array, upper: Uint8Array, segment: import('./idb-records.js').Segment | null }>} */
  #prefixes = new WeakMap()
  /** Write path transactions opened so far. */
  #writes = 0

  /** @type {Map<string, any> | null} the lease cache, by key id, oldest use first; null: off */
  #cache = null
  /** estimated bytes of its entries */
  #cacheBytes = 0
  #cacheMax = 0
  /** Whether the lease cache answers and fills: this tab holds the cross-tab lock and knows what is stored. */
  #held = false
  /** Moves each time the lease cache is cleared or the lock is taken or let go: a read of an older one fills nothing. */
  #epoch = 0
  /** Batches landed so far. */
  #landings = 0
  /** Reads that may fill the cache, not yet answered. */
  #fills = 0
  /** @type {Map<string, number>} while reads that may fill are out: the landing that last wrote each key */
  #touched = new Map()
  /** @type {Map<string, Promise<any>>} point reads that may fill the lease cache, not yet answered, by key id */
  #ahead = new Map()
  /** @type {Map<string, number>} the keys of the batches on their way (written, not landed), by key id: how many write each */
  #writing = new Map()
  /** How many batches on their way write a mirrored list. */
  #writingLists = 0
  /**
   * The namespaces whose lists are mirrored in the lists store, each with
   * its tag (its prefix): the first item of the mirror's keys and of the
   * index's, so that namespaces share the store.
   * @type {Map<import('./namespace.js').Namespace, string>}
   */
  #mirrors = new Map()
  /**
   * The mirrored namespaces whose lists are kept in their entries only
   * (a relation's `native: ['from', 'to']`): a batch puts or deletes the
   * entry, not the list in browser-level's store, and reads of the
   * namespace answer from the entries, their ids encoded as the list's
   * bytes again (one put per list written instead of two).
   * @type {Set<import('./namespace.js').Namespace>}
   */
  #entriesOnly = new Set()
  /**
   * Of the namespaces kept in their entries only, the namespace that is
   * their key range in browser-level's store (storedSide()).
   * @type {Map<import('./namespace.js').Namespace, import('./namespace.js').Namespace>}
   */
  #storedSides = new Map()
  /**
   * Where each mirrored namespace keeps its entries: the slot it claimed
   * (its own index, whose keys are the ids alone: LIST_SLOTS in
   * lib/idb-open.js), or -1 for the `ids` index shared by tags (a lists
   * store made before slots, or every slot taken). Absent until known: a
   * claim is read from the store (and made by the namespace's first batch
   * that writes an entry, in its transaction); a claim is never changed,
   * so once seen committed it stays known.
   * @type {Map<import('./namespace.js').Namespace, number>}
   */
  #slots = new Map()
  /** Whether the lists store has the slots' indexes (undefined: not looked yet). @type {boolean | undefined} */
  #slotted = undefined
  /**
   * Of the mirrored namespaces whose mirror entries carry their from-records
   * (`{ ids, v }`, v the record's stored value: a relation's reverse
   * direction answers the records in one request, listingRecords()): the
   * records' namespace, by lists namespace, and back.
   * @type {Map<import('./namespace.js').Namespace, import('./namespace.js').Namespace>}
   */
  #carried = new Map()
  /** @type {Map<import('./namespace.js').Namespace, import('./namespace.js').Namespace>} */
  #carriedBy = new Map()
  /**
   * The ids of the mirror entries that carry records, by their list's key
   * id (null: no entry), kept as the lease cache is (answers only while
   * this tab holds the lock; dropped as it drops values): a record written
   * alone (a chat's lastActivity) then rewrites its entry without reading
   * it. Filled by the batches that land and the entries they read.
   * @type {Map<string, unknown[] | null>}
   */
  #entries = new Map()
  /**
   * listing() answers outside the write path, by tag and id, kept as the
   * lease cache is (while this tab holds the lock): dropped whole when a
   * mirrored list lands or another tab writes one (forget(), clearCache());
   * `#listingEpoch` moves then, and when the lease changes hands,
   * so a listing read meanwhile is not kept.
   * @type {Map<string, Uint8Array[]>}
   */
  #listings = new Map()
  #listingEpoch = 0
  /**
   * The collections kept in object stores of their own (lib/idb-records.js):
   * their namespaces' reads and writes are routed there, in the same
   * transactions.
   * @type {import('./idb-records.js').NativeLayout | null}
   */
  #native
  /** @type {import('./idb-records.js').Io} requests of the native layout, made as this layer's are */
  #io = {
    settle: request => this.#settle(request),
    cursor: (request, count, entry) => this.#cursorEntries(request, count, (key, value, cursor) => entry(cursor))
  }

  /** @param {any} level a browser-level database */
  constructor (level) {
    this.#level = level
    this.#native = nativeLayoutOf(level)
  }

  /** Whether the database is open: before and after, browser-level does what it does. */
  get ready () {
    const level = this.#level
    return level.status === 'open' && typeof IDBDatabase === 'function' && level.db instanceof IDBDatabase
  }

  /**
   * The raw value of `key` in `namespace` (a string or bytes, as the
   * namespace's sublevel would return it), or undefined.
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key
   * @param {Mode} write
   * @returns {Promise<any>}
   */
  get (namespace, key, write) {
    if (this.#held && this.#cache !== null) {
      const id = namespace.keyId(key)
      // A batch on its way writes it: what IndexedDB answers (see above).
      if (this.#writing.size > 0 && this.#writing.has(id)) return this.#getNow(namespace, key, write)
      const hit = this.#hit(id)
      // As this namespace returns it (another may read the key as bytes).
      if (hit !== undefined) return Promise.resolve(decodeValue(hit[0], namespace))
      // A read of the key that may fill the cache is on its way (one made
      // ahead, see keeps): what it leaves in the cache answers, else read.
      const ahead = this.#ahead.get(id)
      if (ahead !== undefined) {
        const again = () => this.get(namespace, key, write)
        return ahead.then(again, again)
      }
      const read = this.#filling(this.#getNow(namespace, key, write).then(value => [value]), [id]).then(([value]) => value)
      this.#ahead.set(id, read)
      // Before the reactions of the reads that joined it.
      const done = () => { if (this.#ahead.get(id) === read) this.#ahead.delete(id) }
      read.then(done, done)
      return read
    }
    return this.#getNow(namespace, key, write)
  }

  /**
   * Whether a point read made now is kept for the reads after it, those of
   * the write path included (the lease cache is on and this tab holds the
   * lock): a read made ahead of a write (a username looked up while its
   * password hashes) then saves the write's critical section its round trip.
   */
  get keeps () {
    return this.#held && this.#cache !== null
  }

  /**
   * What the lease cache holds for the key `id` of `namespace`, as [value]
   * (value as the namespace returns it; undefined: the key is absent), or
   * undefined when it holds nothing for it or does not answer (this tab
   * does not hold the lock): a critical section's read then needs no
   * promise either, as where reads are synchronous.
   * @param {import('./namespace.js').Namespace} namespace @param {string} id
   * @returns {[any] | undefined}
   */
  cached (namespace, id) {
    if (!this.#held || this.#cache === null || this.#onItsWay(id)) return undefined
    const hit = this.#hit(id)
    return hit === undefined ? undefined : [decodeValue(hit[0], namespace)]
  }

  /** @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key @param {Mode} write @returns {Promise<any>} */
  #getNow (namespace, key, write) {
    const stored = this.#prefixed(namespace, key)
    const { segment } = this.#prefixOf(namespace)
    if (segment !== null) {
      const native = /** @type {import('./idb-records.js').NativeLayout} */ (this.#native)
      return this.#retrying(write, store => native.get(store.transaction, this.#io, segment, stored)).then(value => decodeValue(value, namespace))
    }
    if (this.#entriesOnly.has(namespace)) return this.#retrying(write, () => this.#listValue(namespace, key)).then(value => decodeValue(value, namespace))
    return this.#retrying(write, store => this.#settle(store.get(stored))).then(value => decodeValue(value, namespace))
  }

  /**
   * The raw values of `keys`, in order: every request made at once, in one
   * transaction.
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array[]} keys @param {Mode} write
   * @returns {Promise<any[]>}
   */
  getMany (namespace, keys, write) {
    if (keys.length === 0) return Promise.resolve([])
    if (this.#held && this.#cache !== null) {
      const values = new Array(keys.length)
      /** @type {Uint8Array[]} */
      const missed = []
      /** @type {number[]} */
      const at = []
      for (let i = 0; i < keys.length; i++) {
        const id = namespace.keyId(keys[i])
        const hit = this.#onItsWay(id) ? undefined : this.#hit(id)
        if (hit !== undefined) values[i] = decodeValue(hit[0], namespace)
        else {
          missed.push(keys[i])
          at.push(i)
        }
      }
      if (missed.length === 0) return Promise.resolve(values)
      return this.#filling(this.#getManyNow(namespace, missed, write), missed.map(key => namespace.keyId(key))).then(found => {
        for (let k = 0; k < at.length; k++) values[at[k]] = found[k]
        return values
      })
    }
    return this.#getManyNow(namespace, keys, write)
  }

  /** @param {import('./namespace.js').Namespace} namespace @param {Uint8Array[]} keys @param {Mode} write @returns {Promise<any[]>} */
  #getManyNow (namespace, keys, write) {
    const stored = keys.map(key => this.#prefixed(namespace, key))
    return this.#retrying(write, store => Promise.all(stored.map(key => this.#getIn(store, namespace, key))))
      .then(values => values.map(value => decodeValue(value, namespace)))
  }

  /**
   * The entries of `namespace` within `bounds` as [key, value] pairs (value
   * undefined without `values`), in key order or reversed, at most `limit`:
   * one getAllRecords() request with a direction where the browser has it;
   * else forward one getAll() (and one getAllKeys() beside it), backward
   * one cursor; in one transaction.
   * @param {import('./namespace.js').Namespace} namespace @param {Bounds} bounds
   * @param {{ values?: boolean, reverse?: boolean, limit?: number }} options
   * @param {Mode} write
   * @returns {Promise<Array<[Uint8Array, any]>>}
   */
  entries (namespace, bounds, options, write) {
    if (this.#entriesOnly.has(namespace)) {
      if (options.limit === 0) return Promise.resolve([])
      return this.#retrying(write, () => this.#listEntries(namespace, bounds, options))
    }
    const range = this.#range(namespace, bounds)
    if (range === null || options.limit === 0) return Promise.resolve([])
    return this.#retrying(write, store => this.#entriesOn(store, namespace, range, options))
  }

  /**
   * The lists of `namespace` (mirrored) as its entries hold them, within
   * `bounds`, as [key, list bytes] pairs: what entries() answers where the
   * namespace is kept in its entries only, whether it is or not (a layout
   * move writes them into browser-level's store from there).
   * @param {import('./namespace.js').Namespace} namespace @param {Bounds} bounds
   * @param {{ values?: boolean, reverse?: boolean, limit?: number }} options
   * @param {Mode} write
   * @returns {Promise<Array<[Uint8Array, any]>>}
   */
  listEntries (namespace, bounds, options, write) {
    if (options.limit === 0) return Promise.resolve([])
    return this.#retrying(write, () => this.#listEntries(namespace, bounds, options))
  }

  /**
   * What entries() answers, and beside it the raw values of `keys` (each a
   * [namespace, key] pair, as get() answers them), every request made at
   * once in one transaction: so the values are of the same state as the
   * entries (a parent record and its children's range, say), in one round
   * trip.
   * @param {import('./namespace.js').Namespace} namespace @param {Bounds} bounds
   * @param {{ values?: boolean, reverse?: boolean, limit?: number }} options
   * @param {Array<[import('./namespace.js').Namespace, Uint8Array]>} keys
   * @param {Mode} write
   * @returns {Promise<[Array<[Uint8Array, any]>, any[]]>}
   */
  entriesWith (namespace, bounds, options, keys, write) {
    if (this.#held && this.#cache !== null && keys.length > 0) {
      // The values the lease cache holds need no request (a chat's record
      // beside its last messages); the others are read beside the entries.
      const values = new Array(keys.length)
      /** @type {Array<[import('./namespace.js').Namespace, Uint8Array]>} */
      const missed = []
      /** @type {number[]} */
      const at = []
      for (let i = 0; i < keys.length; i++) {
        const [other, key] = keys[i]
        const id = other.keyId(key)
        const hit = this.#onItsWay(id) ? undefined : this.#hit(id)
        if (hit !== undefined) values[i] = decodeValue(hit[0], other)
        else {
          missed.push(keys[i])
          at.push(i)
        }
      }
      const read = this.#entriesWithNow(namespace, bounds, options, missed, write)
      const found = this.#filling(read.then(([, found]) => found), missed.map(([other, key]) => other.keyId(key)))
      return Promise.all([read, found]).then(([[entries], found]) => {
        for (let k = 0; k < at.length; k++) values[at[k]] = found[k]
        return /** @type {[Array<[Uint8Array, any]>, any[]]} */ ([entries, values])
      })
    }
    return this.#entriesWithNow(namespace, bounds, options, keys, write)
  }

  /**
   * entriesWith() with every value read.
   * @param {import('./namespace.js').Namespace} namespace @param {Bounds} bounds
   * @param {{ values?: boolean, reverse?: boolean, limit?: number }} options
   * @param {Array<[import('./namespace.js').Namespace, Uint8Array]>} keys
   * @param {Mode} write
   * @returns {Promise<[Array<[Uint8Array, any]>, any[]]>}
   */
  #entriesWithNow (namespace, bounds, options, keys, write) {
    const only = this.#entriesOnly.has(namespace)
    const range = only ? null : this.#range(namespace, bounds)
    const stored = keys.map(([other, key]) => this.#prefixed(other, key))
    return this.#retrying(write, store => Promise.all([
      options.limit === 0 ? [] : only ? this.#listEntries(namespace, bounds, options) : range === null ? [] : this.#entriesOn(store, namespace, range, options),
      Promise.all(stored.map((key, i) => this.#getIn(store, keys[i][0], key)))
    ])).then(([entries, values]) => [entries, values.map((value, i) => decodeValue(value, keys[i][0]))])
  }

  /**
   * The requests of entries() on `store`.
   * @param {IDBObjectStore} store @param {import('./namespace.js').Namespace} namespace @param {IDBKeyRange} range
   * @param {{ values?: boolean, reverse?: boolean, limit?: number }} options
   * @returns {Promise<Array<[Uint8Array, any]>>}
   */
  #entriesOn (store, namespace, range, options) {
    const limit = options.limit ?? Infinity
    const values = options.values !== false
    // IndexedDB takes a count up to 2 ** 32 - 1: more is all of them.
    const count = limit === Infinity || limit < 0 || limit > MAX_COUNT ? undefined : limit
    const { prefix, segment } = this.#prefixOf(namespace)
    /** @param {any} key @param {any} value @returns {[Uint8Array, any]} */
    const entry = (key, value) => [unprefixed(key, prefix.length), values ? decodeValue(value, namespace) : undefined]
    if (segment !== null) {
      const native = /** @type {import('./idb-records.js').NativeLayout} */ (this.#native)
      /** @type {import('./idb-records.js').Range} */
      const bounds = {}
      bounds[range.lowerOpen ? 'gt' : 'gte'] = new Uint8Array(range.lower)
      bounds[range.upperOpen ? 'lt' : 'lte'] = new Uint8Array(range.upper)
      return native.entries(store.transaction, this.#io, segment, bounds, options.reverse === true, count ?? Infinity, values)
        .then(found => found.map(([key, value]) => entry(key, value)))
    }
    if (typeof (/** @type {any} */ (store).getAllRecords) === 'function' && (values || options.reverse)) {
      // One request for keys and values, in either direction.
      return this.#settle(/** @type {any} */ (store).getAllRecords({ query: range, count, direction: options.reverse ? 'prev' : 'next' }))
        .then(records => records.map((/** @type {any} */ record) => entry(record.key, record.value)))
    }
    if (!options.reverse) {
      const keys = this.#settle(store.getAllKeys(range, count))
      if (!values) return keys.then((/** @type {any[]} */ keys) => keys.map(key => entry(key, undefined)))
      return Promise.all([keys, this.#settle(store.getAll(range, count))]).then(([keys, found]) => keys.map((/** @type {any} */ key, /** @type {number} */ i) => entry(key, found[i])))
    }
    return this.#cursorEntries(values ? store.openCursor(range, 'prev') : store.openKeyCursor(range, 'prev'), count ?? Infinity, entry)
  }

  /**
   * Write `ops` (each key once) as one atomic IndexedDB transaction:
   * resolves once its `complete` fired, rejects (and nothing is written) if
   * it aborts. In the write path's transaction when it is still active (the
   * critical section's reads then share it), else in a new one. A claim
   * (an op with `claim`) is an add(): if its key holds a value, IndexedDB
   * refuses it with a ConstraintError, which aborts the transaction (the
   * error is not prevented), so nothing of the batch is written and the
   * write rejects with that error.
   * @param {Array<import('./write-scope.js').Op | null>} ops
   * @param {boolean} strict with 'strict' durability (flushed before complete)
   * @param {boolean} [last] no critical section is waiting: nothing will join the transaction, which is committed at once
   * @param {Array<import('./write-scope.js').Op> | null} [claims] claims whose keys `ops` write otherwise: add()ed first
   * @param {string[] | null} [absent] ids of keys that held nothing before the batch (the lists of records
   *   it creates under new sequence ids): a carried record's mirror entry needs no read for them
   * @returns {Promise<void>}
   */
  write (ops, strict, last = false, claims = null, absent = null) {
    // Never throws: the write path's flush must stay asynchronous.
    try {
      return this.#writeNow(ops, strict, last, claims, absent)
    } catch (err) {
      return Promise.reject(err)
    }
  }

  /**
   * Whether a read of the key `id` costs no request: the lease cache holds
   * it, or a read of it that fills the cache is on its way.
   * @param {string} id
   */
  knows (id) {
    return this.#held && this.#cache !== null && !this.#onItsWay(id) && (this.#cache.has(id) || this.#ahead.has(id))
  }

  /**
   * @param {Array<import('./write-scope.js').Op | null>} ops @param {boolean} strict @param {boolean} last
   * @param {Array<import('./write-scope.js').Op> | null} claims @param {string[] | null} absent
   * @returns {Promise<void>}
   */
  #writeNow (ops, strict, last, claims, absent) {
    let slot = this.#slot(true, strict, true)
    let made = 0
    // Mirror entries waiting for a read of the transaction (#mirrorBatch()).
    let pending = 0
    let committing = false
    /** @type {Array<[string, unknown[] | null]>} mirror entries read in the transaction, kept once it lands */
    const learned = []
    /** @type {Array<[import('./namespace.js').Namespace, number]>} slots of mirrored namespaces read or claimed in it, likewise */
    const claimed = []
    const waits = {
      add: () => { pending++ },
      done: () => {
        if (--pending === 0 && committing) commitNow(slot.transaction)
      }
    }
    const epoch = this.#epoch
    /** @type {(store: IDBObjectStore) => void} */
    const put = store => {
      /**
       * Ops of native collections (lib/idb-records.js), each value as it is:
       * a record's JSON text is stored so (NativeLayout#recordObject()); an
       * index entry's value is never stored (the native index derives it
       * from the record), it only names the entry's record where the entry
       * is written without it (IndexBinding#owner() takes text or bytes):
       * encoding a covering entry's copy of the record would cost a
       * TextEncoder call per record, for nothing.
       * @type {any[] | null}
       */
      let routed = null
      if (claims !== null) {
        for (const op of claims) {
          // One lookup of the namespace per op (a bulk batch has thousands).
          const { prefix, segment } = this.#prefixOf(op.namespace)
          const key = withPrefix(prefix, op.key)
          if (segment !== null) (routed ??= []).push({ type: 'put', key, value: op.value, claim: true, entries: op.entries, segment })
          else {
            store.add(encodeValue(op.value), key)
            made++
          }
        }
      }
      for (const op of ops) {
        if (op === null) continue
        // One lookup of the namespace per op (a bulk batch has thousands).
        // Kept in its mirror entry only (#mirrorBatch() puts or deletes it).
        if (this.#entriesOnly.size > 0 && this.#entriesOnly.has(op.namespace)) continue
        const { prefix, segment } = this.#prefixOf(op.namespace)
        const key = withPrefix(prefix, op.key)
        if (segment !== null) {
          (routed ??= []).push({ type: op.type, key, value: op.type === 'put' ? op.value : undefined, claim: op.claim, entries: op.entries, own: op.key, segment })
          continue
        }
        if (op.type === 'put') {
          if (op.claim === true) store.add(encodeValue(op.value), key)
          else store.put(encodeValue(op.value), key)
        } else store.delete(key)
        made++
      }
      if (routed !== null) {
        // A native record's put carries its unique values (a taken one is
        // refused with a ConstraintError, as a claim's add() is); an
        // entry written without its record rewrites the record, after a read.
        const native = /** @type {import('./idb-records.js').NativeLayout} */ (this.#native)
        const { done } = native.write(store.transaction, native.io, routed)
        made += routed.length
        waits.add()
        done.then(waits.done, err => abortWith(slot, err))
      }
      // Committed at once below: no read joins the transaction after the batch.
      const alone = last && typeof store.transaction.commit === 'function'
      if (this.#mirrors.size > 0) this.#mirrorBatch(store, /** @type {IDBObjectStore} */ (slot.lists), ops, absent, learned, claimed, waits, alone)
    }
    try {
      put(slot.store)
    } catch (err) {
      // Only a transaction found inactive at the first request holds
      // nothing of the batch: else the batch fails whole.
      if (made > 0 || !isInactive(err)) throw abortWith(slot, err)
      this.#forget(slot)
      slot = this.#slot(true, strict, true)
      try {
        put(slot.store)
      } catch (err) {
        throw abortWith(slot, err)
      }
    }
    // Its requests are made: it may commit from now on.
    const onItsWay = this.writing(ops, claims)
    // Reads of the next critical sections may still join it, for JOIN_MS,
    // but no later batch: a batch is done only when its transaction is.
    slot.sealed = true
    slot.since = performance.now()
    const { transaction } = slot
    // With nothing to join it, commit now, as Dexie does: else IndexedDB
    // commits once every request's answer came back to this thread and
    // none was made in its callbacks, a round trip later.
    if (last && typeof transaction.commit === 'function') {
      // Not before the mirror entries that wait for a read are put: the
      // last of them commits it.
      if (pending === 0) commitNow(transaction)
      else committing = true
      slot.done = true
    }
    const written = new Promise((resolve, reject) => {
      transaction.addEventListener('complete', () => {
        // Committed, so for good (a claim is never changed); before landed() keeps entries by slot.
        for (const [namespace, at] of claimed) this.#slots.set(namespace, at)
        // Before the batch's writes resolve: a read after them finds it.
        this.written(onItsWay)
        this.landed(ops)
        if (learned.length > 0 && epoch === this.#epoch) this.#learn(learned)
        resolve(undefined)
      })
      transaction.addEventListener('abort', () => {
        this.written(onItsWay)
        // Reads that joined it may have seen its writes: of a claim refused
        // (add() of a key that holds a value), the batch's keys only.
        if (transaction.error?.name === 'ConstraintError') {
          for (const op of claims ?? []) this.forget(op.id ?? (op.id = op.namespace.keyId(op.key)))
          for (const op of ops) if (op !== null) this.forget(op.id ?? (op.id = op.namespace.keyId(op.key)))
        } else this.clearCache()
        reject(transaction.error || new Error('IndexedDB transaction aborted'))
      })
    })
    return /** @type {Promise<void>} */ (written)
  }

  /**
   * Mirror the lists of `namespace` (each value a tuple-encoded list of ids
   * that are IndexedDB keys: numbers or strings) in levelkit's lists store:
   * each batch that puts or deletes a list puts its ids or deletes them, in
   * the batch's transaction, and IndexedDB keeps a multiEntry index over
   * them: which keys' lists hold an id is then one request (listing()).
   * Where the namespace has a slot (#slots: a store made with them), as
   * `{ s<k>: [id, ...] }` under [k, key], in slot k's own index, whose keys
   * are the ids alone; else as `{ ids: [[tag, id], ...] }` under [tag, key],
   * in the `ids` index that namespaces share. Only batches written
   * here are mirrored: the caller sees that every batch of the namespace is
   * (lib/writer.js's direct path). False, and nothing mirrored, where the
   * database has no lists store (one a user brought, not opened by levelkit).
   * With `records`, the namespace of the records whose lists these are (a
   * relation's from-records, keyed as the lists are): each entry carries
   * its record's value too, `{ ids, v }`, kept in step by every batch that
   * writes the list or the record (#mirrorBatch()), so listingRecords()
   * answers the records in one request.
   * With `only`, the lists are kept in their entries only (#entriesOnly).
   * @param {import('./namespace.js').Namespace} namespace
   * @param {import('./namespace.js').Namespace} [records]
   * @param {boolean} [only]
   * @returns {boolean}
   */
  mirror (namespace, records, only = false) {
    if (this.#listsStore() === null) return false
    if (only) {
      // Reads through browser-level's interface (check(), exports) answer from the entries too.
      if (typeof this.#level.routeEntries !== 'function') return false
      this.#level.routeEntries(this, namespace)
      this.#entriesOnly.add(namespace)
    }
    if (!this.#mirrors.has(namespace)) {
      this.#mirrors.set(namespace, namespace.prefix)
      // A lists store made before slots: the shared index, no claim.
      if (!this.#hasSlots()) this.#slots.set(namespace, -1)
      // Transactions from now on take in the lists store.
      this.#write = null
      this.#read = null
    }
    // A native collection's records are in a store of their own: its lists' entries do not carry them.
    if (records !== undefined && this.#prefixOf(records).segment !== null) records = undefined
    if (records !== undefined && !this.#carried.has(namespace)) {
      this.#carried.set(namespace, records)
      this.#carriedBy.set(records, namespace)
    }
    return true
  }

  /**
   * Learn the slots of the mirrored namespaces that this tab does not know
   * yet, from their claims (one request in the transaction of `write`):
   * made as a relation's layout is compared on open, so that its first
   * read or write has no claims to read (those of a relation that claimed
   * none yet are read again then).
   * @param {Mode} write
   * @returns {Promise<void>}
   */
  learnSlots (write) {
    /** @type {Array<[import('./namespace.js').Namespace, string]>} */
    const unknown = []
    for (const [namespace, tag] of this.#mirrors) if (!this.#slots.has(namespace)) unknown.push([namespace, tag])
    if (unknown.length === 0) return Promise.resolve()
    return this.#retrying(write, () => {
      const making = /** @type {Slot} */ (this.#making)
      // Committed unless made after a batch in the same transaction.
      const committed = !making.write || !making.sealed
      return this.#settle(/** @type {IDBObjectStore} */ (making.lists).get(LIST_CLAIMS)).then(claims => {
        if (!committed) return
        for (const [namespace, tag] of unknown) {
          const slot = claimOf(claims, tag)
          if (slot !== undefined) this.#slots.set(namespace, slot)
        }
      })
    })
  }

  /**
   * Whether the mirror entries of `namespace` carry their records (mirror()).
   * @param {import('./namespace.js').Namespace} namespace
   */
  carries (namespace) {
    return this.#carried.has(namespace)
  }

  /**
   * The key range of `namespace` in browser-level's store, as a namespace
   * of its own (neither mirrored nor kept in entries): where lists written
   * before it was kept in its entries only are left, until a layout move
   * deletes them (lib/idb-entries-move.js), its reads and batches reaching
   * that store alone. Its ops are named apart from the namespace's (keyId)
   * and it keeps no caches: deleting a leftover list is not deleting the list.
   * @param {import('./namespace.js').Namespace} namespace
   * @returns {import('./namespace.js').Namespace}
   */
  storedSide (namespace) {
    let side = this.#storedSides.get(namespace)
    if (side === undefined) {
      const keyId = (/** @type {Uint8Array} */ key) => '\u0000stored' + namespace.keyId(key)
      const own = { value: null, writable: true }
      side = Object.create(namespace, { keyId: { value: keyId }, cache: own, readCache: { ...own }, listCache: { ...own }, cachesWrites: { value: false, writable: true } })
      this.#storedSides.set(namespace, /** @type {import('./namespace.js').Namespace} */ (side))
    }
    return /** @type {import('./namespace.js').Namespace} */ (side)
  }

  /**
   * Whether the lists of `namespace` are kept in their mirror entries only (mirror()).
   * @param {import('./namespace.js').Namespace} namespace
   */
  entriesOnly (namespace) {
    return this.#entriesOnly.has(namespace)
  }

  /**
   * The keys whose mirrored lists hold `id`, in key order, each with its
   * record's value (as the records' namespace reads it), as stored.
   * Outside the write path. In a tab that holds nothing: one request on
   * the lists store's index, whose entries carry their records
   * (getAllRecords(), else getAll() and getAllKeys() at once), and a second
   * in the same transaction for entries written before they did (no `v`:
   * their records are read). In the tab that holds the lease, its caches
   * most likely hold the records (it wrote or read them): the keys (a kept
   * listing() answer, else one getAllKeys()), then the records the lease
   * cache lacks, as before entries carried them (the entries' ids and
   * copies cost more to read than the keys alone).
   * @param {import('./namespace.js').Namespace} namespace mirrored with its records (mirror())
   * @param {number | string} id
   * @returns {Promise<Array<[Uint8Array, any]>>}
   */
  listingRecords (namespace, id) {
    const tag = this.#mirrors.get(namespace)
    const records = this.#carried.get(namespace)
    if (tag === undefined || records === undefined) return Promise.reject(new Error(`The records of the lists of ${namespace.prefix} are not mirrored`))
    if (this.#held && this.#cache !== null) {
      return this.listing(namespace, id, false).then(keys => this.getMany(records, keys, false)
        .then(values => keys.map((key, i) => /** @type {[Uint8Array, any]} */ ([key, values[i]]))))
    }
    return this.#retrying(false, () => this.#withSlot(namespace, tag, slot => {
      const { index, only } = indexQuery(this.#level.location, slot, tag, id)
      const source = /** @type {IDBObjectStore} */ ((/** @type {Slot} */ (this.#making)).lists).index(index)
      if (typeof (/** @type {any} */ (source).getAllRecords) === 'function') {
        return this.#settle(/** @type {any} */ (source).getAllRecords({ query: only }))
          .then(found => found.map((/** @type {any} */ record) => [record.primaryKey, record.value]))
      }
      return Promise.all([this.#settle(source.getAllKeys(only)), this.#settle(source.getAll(only))])
        .then(([keys, values]) => keys.map((/** @type {any} */ key, /** @type {number} */ i) => [key, values[i]]))
    }, /** @type {any[]} */ ([]))).then(found => {
      /** @type {Array<[Uint8Array, any]>} */
      const answer = found.map((/** @type {any[]} */ [key, entry]) => [new Uint8Array(key[1]), decodeValue(entry.v, records)])
      /** @type {Uint8Array[]} */
      const missed = []
      for (let i = 0; i < answer.length; i++) if (!('v' in found[i][1])) missed.push(answer[i][0])
      if (missed.length === 0) return answer
      // Entries mirrored before they carried records: their records read in the same transaction.
      return this.#getManyNow(records, missed, false).then(read => {
        let k = 0
        for (let i = 0; i < answer.length; i++) if (!('v' in found[i][1])) answer[i][1] = read[k++]
        return answer
      })
    })
  }

  /**
   * The keys (in `namespace`, in key order) whose mirrored lists hold `id`,
   * as stored (what a committed batch wrote, not a pending one): one
   * getAllKeys() request on the lists store's index.
   * @param {import('./namespace.js').Namespace} namespace mirrored (mirror())
   * @param {number | string} id @param {Mode} write
   * @returns {Promise<Uint8Array[]>}
   */
  listing (namespace, id, write) {
    const tag = this.#mirrors.get(namespace)
    if (tag === undefined) return Promise.reject(new Error(`The lists of ${namespace.prefix} are not mirrored`))
    const kept = write === false && this.#held && this.#cache !== null && this.#writingLists === 0
    const name = kept ? listingName(tag, id) : ''
    if (kept) {
      const hit = this.#listings.get(name)
      if (hit !== undefined) return Promise.resolve(hit)
    }
    const epoch = this.#listingEpoch
    return this.#retrying(write, () => this.#withSlot(namespace, tag, slot => {
      const { index, only } = indexQuery(this.#level.location, slot, tag, id)
      const lists = /** @type {IDBObjectStore} */ ((/** @type {Slot} */ (this.#making)).lists)
      return this.#settle(lists.index(index).getAllKeys(only))
    }, /** @type {any[]} */ ([]))).then(keys => {
      const found = keys.map((/** @type {any[]} */ key) => new Uint8Array(key[1]))
      if (kept && epoch === this.#listingEpoch && this.#held) {
        if (this.#listings.size >= LISTINGS_KEPT) this.#listings.clear()
        this.#listings.set(name, found)
      }
      return found
    })
  }

  /**
   * A batch of this tab landed: the kept listing() answers take in its
   * mirrored lists (each kept id's answer gains or loses the list's key as
   * the list now holds it or not), so what was read stays kept across
   * writes; a listing read meanwhile keeps nothing.
   * @param {Array<import('./write-scope.js').Op | null>} ops each key once
   */
  #landedListings (ops) {
    let epochMoved = false
    for (const op of ops) {
      if (op === null) continue
      const tag = this.#mirrors.get(op.namespace)
      if (tag === undefined) continue
      if (!epochMoved) {
        this.#listingEpoch++
        epochMoved = true
      }
      if (this.#listings.size === 0) continue
      /** @type {Set<string>} */
      const holds = new Set()
      if (op.type === 'put') {
        const value = op.value instanceof Uint8Array ? op.value : textEncoder.encode(op.value)
        for (const id of decodeIds(value, op.namespace, op.key)) holds.add(listingName(tag, /** @type {number | string} */ (id)))
      }
      const start = `${tag}\u0000`
      for (const [name, keys] of this.#listings) {
        if (!name.startsWith(start)) continue
        const at = keyPosition(keys, op.key)
        if ((at >= 0) === holds.has(name)) continue
        // A copy: an answer handed out before stays as it was.
        const changed = keys.slice()
        if (at >= 0) changed.splice(at, 1)
        else changed.splice(-at - 1, 0, op.key)
        this.#listings.set(name, changed)
      }
    }
  }

  /**
   * A batch of this tab landed: the kept ids of the entries of the lists it
   * wrote are what it wrote (while this tab holds the lock; else dropped).
   * @param {Array<import('./write-scope.js').Op | null>} ops each key once
   */
  #landedEntries (ops) {
    for (const op of ops) {
      if (op === null || !this.#carried.has(op.namespace)) continue
      const id = op.id ?? (op.id = op.namespace.keyId(op.key))
      if (!this.#held || this.#cache === null) {
        this.#entries.delete(id)
        continue
      }
      const tag = /** @type {string} */ (this.#mirrors.get(op.namespace))
      const slot = this.#slots.get(op.namespace)
      if (slot === undefined) this.#entries.delete(id)
      else if (op.type !== 'put') this.#entries.set(id, null)
      else {
        const value = op.value instanceof Uint8Array ? op.value : textEncoder.encode(op.value)
        this.#keepEntry(id, keptIds(slot, tag, decodeIds(value, op.namespace, op.key)))
      }
    }
  }

  /**
   * Entries a batch read in its transaction, now landed (and no lease
   * change or cache drop since it began): what is stored.
   * @param {Array<[string, unknown[] | null]>} learned
   */
  #learn (learned) {
    if (!this.#held || this.#cache === null) return
    for (const [id, ids] of learned) this.#keepEntry(id, ids)
  }

  /** @param {string} id @param {unknown[] | null} ids */
  #keepEntry (id, ids) {
    // Bounded as the listings are: dropped all at once past it.
    if (this.#entries.size >= ENTRIES_KEPT && !this.#entries.has(id)) this.#entries.clear()
    this.#entries.set(id, ids)
  }

  /** Drop the kept listing() answers (a mirrored list changed, or may have). */
  #dropListings () {
    this.#listingEpoch++
    if (this.#listings.size > 0) this.#listings.clear()
  }

  /**
   * Every mirrored list of `namespace` as [key, ids, carried], in key order
   * (for check(): they must be the namespace's lists); where the entries
   * carry their records and `withRecords`, `carried` is { v, record }: the value the entry
   * carries (undefined if none) and the record's stored value, read in the
   * same transaction; else undefined.
   * @param {import('./namespace.js').Namespace} namespace mirrored @param {Mode} write
   * @param {boolean} [withRecords] read the records too (else `carried` is undefined)
   * @returns {Promise<Array<[Uint8Array, unknown[], { v: any, record: any } | undefined]>>}
   */
  mirrored (namespace, write, withRecords = false) {
    const tag = this.#mirrors.get(namespace)
    if (tag === undefined) return Promise.reject(new Error(`The lists of ${namespace.prefix} are not mirrored`))
    const records = withRecords ? this.#carried.get(namespace) : undefined
    return this.#retrying(write, store => this.#withSlot(namespace, tag, at => {
      const slot = /** @type {Slot} */ (this.#making)
      const lists = /** @type {IDBObjectStore} */ (slot.lists)
      // [tag or slot, any bytes] lies between [tag] and [tag, []] (arrays sort after bytes).
      const range = IDBKeyRange.bound([at < 0 ? tag : at], [at < 0 ? tag : at, []], true, true)
      return Promise.all([this.#settle(lists.getAllKeys(range)), this.#settle(lists.getAll(range))]).then(([keys, values]) => {
        /** @type {[any[], any[], any[], number]} */
        const found = [keys, values, [], at]
        if (records === undefined) return found
        // The records as of the same transaction: a write between two reads would look like a mismatch.
        this.#making = slot
        return Promise.all(keys.map((/** @type {any[]} */ key) => this.#settle(store.get(this.#prefixed(records, new Uint8Array(key[1]))))))
          .then(stored => { found[2] = stored; return found })
      })
    }, /** @type {[any[], any[], any[], number]} */ ([[], [], [], -1]))).then(([keys, values, stored, at]) => keys.map((/** @type {any[]} */ key, /** @type {number} */ i) => [
      new Uint8Array(key[1]),
      // An entry without its slot's ids (planted, or of another layout) lists nothing: check() reports it.
      idsOf(at, values[i]),
      records === undefined ? undefined : { v: 'v' in values[i] ? decodeValue(values[i].v, records) : undefined, record: decodeValue(stored[i], records) }
    ]))
  }

  /**
   * The list `key` (unprefixed) of `namespace` (kept in its entries only)
   * as its bytes, from its entry, in the transaction requests are being
   * made on; undefined where it has none.
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key
   * @returns {Promise<Uint8Array | undefined>}
   */
  #listValue (namespace, key) {
    const tag = /** @type {string} */ (this.#mirrors.get(namespace))
    return this.#withSlot(namespace, tag, slot => {
      const lists = /** @type {IDBObjectStore} */ ((/** @type {Slot} */ (this.#making)).lists)
      return this.#settle(lists.get(keyOf(slot, tag, key))).then(entry => entry === undefined ? undefined : encode(idsOf(slot, entry)))
    }, /** @type {Uint8Array | undefined} */ (undefined))
  }

  /**
   * entries() of a namespace kept in its entries only: a range of the
   * lists store ([slot or tag, key bytes]: binary keys order as Level's).
   * @param {import('./namespace.js').Namespace} namespace @param {Bounds} bounds
   * @param {{ values?: boolean, reverse?: boolean, limit?: number }} options
   * @returns {Promise<Array<[Uint8Array, any]>>}
   */
  #listEntries (namespace, bounds, options) {
    const tag = /** @type {string} */ (this.#mirrors.get(namespace))
    const limit = options.limit ?? Infinity
    const values = options.values !== false
    const count = limit === Infinity || limit < 0 || limit > MAX_COUNT ? undefined : limit
    return this.#withSlot(namespace, tag, slot => {
      const lists = /** @type {IDBObjectStore} */ ((/** @type {Slot} */ (this.#making)).lists)
      const range = listRange(slot < 0 ? tag : slot, bounds)
      if (range === null) return Promise.resolve([])
      /** @param {any} key @param {any} entry @returns {[Uint8Array, any]} */
      const entry = (key, entry) => [new Uint8Array(key[1]), values ? encode(idsOf(slot, entry)) : undefined]
      if (options.reverse) return this.#cursorEntries(values ? lists.openCursor(range, 'prev') : lists.openKeyCursor(range, 'prev'), count ?? Infinity, entry)
      const keys = this.#settle(lists.getAllKeys(range, count))
      if (!values) return keys.then((/** @type {any[]} */ keys) => keys.map(key => entry(key, undefined)))
      return Promise.all([keys, this.#settle(lists.getAll(range, count))]).then(([keys, found]) => keys.map((/** @type {any} */ key, /** @type {number} */ i) => entry(key, found[i])))
    }, /** @type {Array<[Uint8Array, any]>} */ ([]))
  }

  /**
   * Whether one of `ops` writes a mirrored namespace (which only batches
   * written here keep in step with its mirror).
   * @param {Array<{ namespace: import('./namespace.js').Namespace }>} ops
   */
  mirrorsAny (ops) {
    if (this.#mirrors.size === 0) return false
    for (const op of ops) if (this.#mirrors.has(op.namespace) || this.#carriedBy.has(op.namespace)) return true
    return false
  }

  /** Whether the lists store (there) has the slots' indexes: made with it by this version. */
  #hasSlots () {
    if (this.#slotted === undefined) {
      const { store } = listsStoreOf(this.#level.location)
      // A transaction with no request: it only shows the store's indexes.
      this.#slotted = this.#level.db.transaction([store], 'readonly').objectStore(store).indexNames.contains(slotIndexOf(0))
    }
    return this.#slotted
  }

  /**
   * Call `then` with the slot of the entries of `namespace` (mirrored, tag
   * `tag`) in the transaction requests are being made on: at once where it
   * is known, else after reading the claims there (one request); `none`
   * where nothing claimed one (no entry can exist then: a claim is written
   * with the namespace's first entry). A claim read before any batch of
   * its transaction is committed, and kept; one read after one may be
   * that batch's, which has not landed.
   * @template T
   * @param {import('./namespace.js').Namespace} namespace @param {string} tag
   * @param {(slot: number) => Promise<T>} then @param {T} none
   * @returns {Promise<T>}
   */
  #withSlot (namespace, tag, then, none) {
    const known = this.#slots.get(namespace)
    if (known !== undefined) return then(known)
    const making = /** @type {Slot} */ (this.#making)
    const lists = /** @type {IDBObjectStore} */ (making.lists)
    // Committed unless made after a batch in the same transaction.
    const committed = !making.write || !making.sealed
    return this.#settle(lists.get(LIST_CLAIMS)).then(claims => {
      const slot = claimOf(claims, tag)
      if (slot === undefined) return none
      if (committed) this.#slots.set(namespace, slot)
      this.#making = making
      return then(slot)
    })
  }

  /** The name of levelkit's lists store if the database has one, else null. */
  #listsStore () {
    const level = this.#level
    const { store } = listsStoreOf(level.location)
    return this.ready && level.db.objectStoreNames.contains(store) ? store : null
  }

  /**
   * The requests that mirror the batch `ops` in the lists store: each
   * mirrored list put as an entry of its ids under its key (entryOf(),
   * keyOf(): in its namespace's slot, else under [tag, key] with [tag, id]
   * ids), or deleted; where the namespace's mirror carries its
   * from-records, with `v`, the record's value as its namespace reads it
   * (absent where there is no record), and a record written alone rewrites
   * its list's entry with its new `v` (its ids kept). The half of an entry
   * the batch does not write is known, cheapest first, from the batch
   * itself, from the lease cache (what is stored: batches are written one
   * at a time, each landed before the next), from `absent` (lists of
   * records created under new ids), else read in the batch's transaction
   * (the entry is then put in the read's callback, so the transaction is
   * not committed before). A namespace whose slot this tab does not know
   * yet has the claims read first, in the transaction (readwrite on the
   * lists store: IndexedDB runs no other that writes it meanwhile, in any
   * tab), and its slot claimed there if nothing claimed one: the lowest
   * free, else -1 (the shared index).
   * @param {IDBObjectStore} store @param {IDBObjectStore} lists
   * @param {Array<import('./write-scope.js').Op | null>} ops @param {string[] | null} absent
   * @param {Array<[string, unknown[] | null]>} learned gets the entries read, by list key id
   * @param {Array<[import('./namespace.js').Namespace, number]>} claimed gets the slots read or claimed, kept once the batch lands
   * @param {{ add: () => void, done: () => void }} waits `add` as a request the batch's entries wait for is made, `done` once they are put
   * @param {boolean} alone nothing joins the transaction after the batch (it is committed once its entries are put)
   */
  #mirrorBatch (store, lists, ops, absent, learned, claimed, waits, alone) {
    /** @type {Set<import('./namespace.js').Namespace> | null} */
    let unknown = null
    for (const op of ops) {
      if (op === null) continue
      const forward = this.#mirrors.has(op.namespace) ? op.namespace : this.#carriedBy.get(op.namespace)
      if (forward !== undefined && !this.#slots.has(forward)) (unknown ??= new Set()).add(forward)
    }
    if (unknown === null) return this.#mirrorEntries(store, lists, ops, absent, learned, this.#slots, waits, alone)
    const wanted = unknown
    waits.add()
    const request = lists.get(LIST_CLAIMS)
    request.onsuccess = () => {
      /** @type {Record<string, number>} */
      const tags = { ...request.result?.tags }
      const taken = new Set(Object.values(tags))
      let changed = false
      const slots = new Map(this.#slots)
      for (const namespace of wanted) {
        const tag = /** @type {string} */ (this.#mirrors.get(namespace))
        let slot = claimOf(request.result, tag)
        if (slot === undefined) {
          slot = -1
          for (let k = 0; k < LIST_SLOTS; k++) {
            if (!taken.has(k)) {
              slot = k
              break
            }
          }
          tags[tag] = slot
          taken.add(slot)
          changed = true
        }
        slots.set(namespace, slot)
        claimed.push([namespace, slot])
      }
      if (changed) lists.put({ tags }, LIST_CLAIMS)
      this.#mirrorEntries(store, lists, ops, absent, learned, slots, waits, alone)
      waits.done()
    }
  }

  /**
   * #mirrorBatch()'s entries, every namespace's slot in `slots`.
   * @param {IDBObjectStore} store @param {IDBObjectStore} lists
   * @param {Array<import('./write-scope.js').Op | null>} ops @param {string[] | null} absent
   * @param {Array<[string, unknown[] | null]>} learned
   * @param {Map<import('./namespace.js').Namespace, number>} slots
   * @param {{ add: () => void, done: () => void }} waits @param {boolean} alone
   */
  #mirrorEntries (store, lists, ops, absent, learned, slots, waits, alone) {
    /** @type {Map<import('./namespace.js').Namespace, Map<string, import('./write-scope.js').Op>> | null} the carried records the batch writes */
    let records = null
    for (const op of ops) {
      if (op === null || !this.#carriedBy.has(op.namespace)) continue
      records ??= new Map()
      let byKey = records.get(op.namespace)
      if (byKey === undefined) records.set(op.namespace, byKey = new Map())
      byKey.set(bytesKey(op.key), op)
    }
    /** @type {Set<string> | null} */
    let listed = null
    for (const op of ops) {
      if (op === null) continue
      const tag = this.#mirrors.get(op.namespace)
      if (tag === undefined) continue
      const slot = /** @type {number} */ (slots.get(op.namespace))
      const key = keyOf(slot, tag, op.key)
      if (op.type !== 'put') {
        lists.delete(key)
        continue
      }
      const value = op.value instanceof Uint8Array ? op.value : textEncoder.encode(op.value)
      const ids = keptIds(slot, tag, decodeIds(value, op.namespace, op.key))
      const carried = this.#carried.get(op.namespace)
      if (carried === undefined) {
        lists.put(entryOf(slot, ids, undefined), key)
        continue
      }
      const name = bytesKey(op.key)
      ;(listed ??= new Set()).add(`${tag}\u0000${name}`)
      const record = records?.get(carried)?.get(name)
      const known = record !== undefined ? [record.type === 'put' ? decodeValue(record.value, carried) : undefined] : this.cached(carried, carried.keyId(op.key))
      if (known !== undefined) {
        lists.put(entryOf(slot, ids, known[0]), key)
        continue
      }
      // The entry once its record is read: one put. Unless reads may join
      // the transaction after the batch (the next critical sections'): a
      // read of the index made before the record's answer must find the
      // ids, so they are put now, and the entry again with the record.
      if (!alone) lists.put(entryOf(slot, ids, undefined), key)
      waits.add()
      const request = store.get(this.#prefixed(carried, op.key))
      request.onsuccess = () => {
        if (request.result !== undefined) lists.put(entryOf(slot, ids, decodeValue(request.result, carried)), key)
        else if (alone) lists.put(entryOf(slot, ids, undefined), key)
        waits.done()
      }
    }
    if (records === null) return
    const fresh = absent === null ? null : new Set(absent)
    for (const [namespace, byKey] of records) {
      const forward = /** @type {import('./namespace.js').Namespace} */ (this.#carriedBy.get(namespace))
      const tag = /** @type {string} */ (this.#mirrors.get(forward))
      const slot = /** @type {number} */ (slots.get(forward))
      for (const [name, op] of byKey) {
        if (listed !== null && listed.has(`${tag}\u0000${name}`)) continue
        const key = keyOf(slot, tag, op.key)
        // A record deleted alone has no list (a relation deletes its list in the record's batch).
        if (op.type !== 'put') {
          lists.delete(key)
          continue
        }
        const v = decodeValue(op.value, namespace)
        const id = forward.keyId(op.key)
        const known = this.#held && this.#cache !== null ? this.#entries.get(id) : undefined
        if (known !== undefined) {
          if (known !== null) lists.put(entryOf(slot, known, v), key)
          continue
        }
        const list = fresh !== null && fresh.has(id) ? [undefined] : this.cached(forward, id)
        if (list !== undefined) {
          // No list: no entry to carry the record.
          if (list[0] !== undefined) lists.put(entryOf(slot, keptIds(slot, tag, decodeIds(list[0], forward, op.key)), v), key)
          continue
        }
        waits.add()
        const request = lists.get(key)
        request.onsuccess = () => {
          const entry = request.result
          const ids = entry === undefined ? null : keptOf(slot, entry)
          if (ids !== null) lists.put(entryOf(slot, ids, v), key)
          learned.push([id, ids])
          waits.done()
        }
      }
    }
  }

  /**
   * A batch of `ops` (and `claims`) is on its way: it may commit, and the
   * other tabs see it, before it lands here (landed()). Until written() is
   * called with what this returns, the lease cache does not answer for its
   * keys, nor the kept listing() answers if it writes a mirrored list.
   * @param {Array<import('./write-scope.js').Op | null>} ops
   * @param {Array<import('./write-scope.js').Op> | null} [claims]
   * @returns {{ ids: string[], lists: boolean } | null} null: nothing to undo (no lease cache)
   */
  writing (ops, claims = null) {
    if (this.#cache === null) return null
    /** @type {string[]} */
    const ids = []
    let lists = false
    const writing = this.#writing
    for (const list of claims === null ? [ops] : [ops, claims]) {
      for (const op of list) {
        if (op === null) continue
        const id = op.id ?? (op.id = op.namespace.keyId(op.key))
        ids.push(id)
        writing.set(id, (writing.get(id) ?? 0) + 1)
        if (!lists && this.#mirrors.size > 0 && this.#mirrors.has(op.namespace)) lists = true
      }
    }
    if (lists) this.#writingLists++
    return { ids, lists }
  }

  /**
   * The batch writing() was told of landed or failed (before landed() or
   * the failure's drops).
   * @param {{ ids: string[], lists: boolean } | null} onItsWay
   */
  written (onItsWay) {
    if (onItsWay === null) return
    const writing = this.#writing
    for (const id of onItsWay.ids) {
      const left = /** @type {number} */ (writing.get(id)) - 1
      if (left > 0) writing.set(id, left)
      else writing.delete(id)
    }
    if (onItsWay.lists) this.#writingLists--
  }

  /** Whether a batch on its way writes the key `id` (writing()). @param {string} id */
  #onItsWay (id) {
    return this.#writing.size > 0 && this.#writing.has(id)
  }

  /**
   * Keep a lease cache of up to `bytes` (estimated) of values: 0 turns it off.
   * @param {number} bytes
   */
  useCache (bytes) {
    this.#cacheMax = bytes
    this.#cache = bytes > 0 ? new Map() : null
    this.#cacheBytes = 0
  }

  /**
   * The write path holds the cross-tab lock and knows what is stored (true),
   * or may no longer (false): the lease cache answers only meanwhile.
   * @param {boolean} held
   */
  lease (held) {
    if (held === this.#held) return
    this.#held = held
    this.#epoch++
    // Kept as the lease cache's values are (other tabs' writes are heard, see forget()); a read in flight keeps nothing.
    this.#listingEpoch++
  }

  /** Drop every value of the lease cache. */
  clearCache () {
    this.#epoch++
    this.#dropListings()
    this.#entries.clear()
    if (this.#cache === null) return
    this.#cache.clear()
    this.#cacheBytes = 0
  }

  /**
   * Another tab wrote a key: drop its value.
   * @param {string} id the key's id (Namespace#keyId())
   */
  forget (id) {
    if (this.#listings.size > 0) {
      for (const tag of this.#mirrors.values()) if (id.startsWith(tag)) this.#dropListings()
    }
    this.#entries.delete(id)
    if (this.#cache === null) return
    this.#drop(id)
    if (this.#fills > 0) this.#touched.set(id, ++this.#landings)
  }

  /**
   * A batch of this tab landed (committed): its values are what is stored.
   * @param {Array<import('./write-scope.js').Op | null>} ops each key once
   */
  landed (ops) {
    if (this.#mirrors.size > 0) this.#landedListings(ops)
    if (this.#carried.size > 0) this.#landedEntries(ops)
    const cache = this.#cache
    if (cache === null) return
    const landing = ++this.#landings
    const touch = this.#fills > 0
    for (const op of ops) {
      if (op === null) continue
      const id = op.id ?? (op.id = op.namespace.keyId(op.key))
      if (touch) this.#touched.set(id, landing)
      if (this.#held) this.#keep(id, op.type === 'put' ? decodeValue(op.value, op.namespace) : undefined)
      else this.#drop(id)
    }
  }

  /**
   * Just after a batch of this tab landed (its write resolved): the keys
   * `ids` held nothing before it (the lists of records it created under new
   * sequence ids), so those it did not write hold nothing now.
   * @param {string[]} ids @param {Array<import('./write-scope.js').Op | null>} ops the batch's
   */
  landedAbsent (ids, ops) {
    if (this.#cache === null || !this.#held) return
    const written = new Set()
    for (const op of ops) if (op !== null) written.add(op.id ?? (op.id = op.namespace.keyId(op.key)))
    for (const id of ids) if (!written.has(id)) this.#keep(id, undefined)
  }

  /** The cached value of `id` as [value], or undefined. @param {string} id @returns {[any] | undefined} */
  #hit (id) {
    const cache = /** @type {Map<string, any>} */ (this.#cache)
    const value = cache.get(id)
    if (value === undefined && !cache.has(id)) return undefined
    // Used last: moved to the end, evicted last.
    cache.delete(id)
    cache.set(id, value)
    return [value]
  }

  /**
   * Keep what `read` answers for `ids` if the lock was held throughout
   * and no batch wrote them meanwhile.
   * @param {Promise<any[]>} read the values of `ids` @param {string[]} ids
   * @returns {Promise<any[]>}
   */
  #filling (read, ids) {
    const epoch = this.#epoch
    const since = this.#landings
    this.#fills++
    const done = () => {
      if (--this.#fills === 0) this.#touched.clear()
    }
    return read.then(values => {
      if (epoch === this.#epoch && this.#held) {
        for (let i = 0; i < ids.length; i++) {
          const landed = this.#touched.get(ids[i])
          if (landed === undefined || landed <= since) this.#keep(ids[i], values[i])
        }
      }
      done()
      return values
    }, err => {
      done()
      throw err
    })
  }

  /** @param {string} id @param {any} value */
  #keep (id, value) {
    const cache = /** @type {Map<string, any>} */ (this.#cache)
    this.#drop(id)
    const size = entrySize(id, value)
    if (size > this.#cacheMax / LARGEST_SHARE) return
    cache.set(id, value)
    this.#cacheBytes += size
    // Least recently used first.
    if (this.#cacheBytes > this.#cacheMax) {
      for (const [old, kept] of cache) {
        cache.delete(old)
        this.#cacheBytes -= entrySize(old, kept)
        if (this.#cacheBytes <= this.#cacheMax) break
      }
    }
  }

  /** @param {string} id */
  #drop (id) {
    const cache = /** @type {Map<string, any>} */ (this.#cache)
    if (!cache.has(id)) return
    this.#cacheBytes -= entrySize(id, cache.get(id))
    cache.delete(id)
  }

  /**
   * Run `request` on the transaction of `write`, once more in a new one if
   * that transaction is no longer active, or aborted while the request ran
   * (a batch's failure aborts it: a read that was only passing through is
   * then made again, and the write path refuses what rests on the batch).
   * @template T
   * @param {Mode} mode @param {(store: IDBObjectStore) => Promise<T>} request
   * @returns {Promise<T>}
   */
  #retrying (mode, request) {
    const write = mode !== false
    const strict = mode === 'strict'
    let slot = this.#slot(write, strict)
    let answer
    try {
      this.#making = slot
      answer = request(slot.store)
    } catch (err) {
      if (!isInactive(err)) return Promise.reject(err)
      // Not active in this task (it may still be in another's callbacks).
      if (write ? this.#write === slot : this.#read === slot) this.#forget(slot)
      slot = this.#slot(write, strict)
      this.#making = slot
      answer = request(slot.store)
    }
    if (!write) return answer
    return answer.catch(err => {
      if (/** @type {any} */ (err)?.name !== 'AbortError') throw err
      this.#making = this.#slot(write, strict)
      return request(this.#making.store)
    })
  }

  /**
   * The transaction to make requests on: the current one of its kind, or a
   * new one if there is none, it is finished, or it lacks the durability.
   * @param {boolean} write @param {boolean} strict @param {boolean} [batch] for a batch
   * @returns {Slot}
   */
  #slot (write, strict, batch = false) {
    const current = write ? this.#write : this.#read
    if (current !== null && !current.done && (!strict || current.strict) && this.#joinable(current, write, batch)) return current
    const level = this.#level
    const lists = this.#mirrors.size > 0 ? listsStoreOf(level.location).store : null
    const stores = [level.location]
    if (lists !== null) stores.push(lists)
    if (this.#native !== null) stores.push(...this.#native.stores)
    const transaction = level.db.transaction(stores, write ? 'readwrite' : 'readonly', strict ? { durability: 'strict' } : undefined)
    if (write) this.#writes++
    /** @type {Slot} */
    const slot = { transaction, store: transaction.objectStore(level.location), lists: lists === null ? null : transaction.objectStore(lists), write, done: false, strict, sealed: false, since: performance.now(), writes: this.#writes }
    const finish = () => { slot.done = true }
    transaction.addEventListener('complete', finish)
    transaction.addEventListener('abort', finish)
    if (write) this.#write = slot
    else this.#read = slot
    return slot
  }

  /**
   * Whether a request may join `slot`, which is not finished: a batch never
   * joins one holding a batch; reads join it for JOIN_MS after it got its
   * batch, a readonly one for READ_JOIN_MS after it was opened and only if the
   * write path opened none since (it would wait for that one, while
   * blocking it).
   * @param {Slot} slot @param {boolean} write @param {boolean} batch
   */
  #joinable (slot, write, batch) {
    if (slot.sealed) return !batch && performance.now() - slot.since < JOIN_MS
    if (write) return true
    return slot.writes === this.#writes && performance.now() - slot.since < READ_JOIN_MS
  }

  /** @type {Slot | null} the transaction requests are being made on */
  #making = null

  /** @param {Slot} slot no longer the current one of its kind */
  #forget (slot) {
    if (slot.write) this.#write = null
    else this.#read = null
  }

  /**
   * A request's answer. Its transaction is active while its callback and the
   * microtasks after it run: requests made meanwhile join it, so it becomes
   * the current one of its kind (several chains of reads may alternate, each
   * in a transaction of its own).
   * @param {IDBRequest} request
   * @returns {Promise<any>}
   */
  #settle (request) {
    const slot = /** @type {Slot} */ (this.#making)
    return new Promise((resolve, reject) => {
      request.onsuccess = () => {
        this.#dispatched(slot)
        resolve(request.result)
      }
      request.onerror = () => reject(request.error)
    })
  }

  /** @param {Slot} slot whose request's callback runs */
  #dispatched (slot) {
    if (slot.write) this.#write = slot
    else this.#read = slot
  }

  /**
   * The raw value of the full key `key` of `namespace` in the transaction of
   * `store`: one request, on browser-level's store or a native one.
   * @param {IDBObjectStore} store @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key
   * @returns {Promise<any>}
   */
  #getIn (store, namespace, key) {
    if (this.#entriesOnly.has(namespace)) return this.#listValue(namespace, key.subarray(this.#prefixOf(namespace).prefix.length))
    const { segment } = this.#prefixOf(namespace)
    if (segment === null) return this.#settle(store.get(/** @type {any} */ (key)))
    return /** @type {import('./idb-records.js').NativeLayout} */ (this.#native).get(store.transaction, this.#io, segment, key)
  }

  /**
   * Up to `count` entries from a cursor, in one transaction.
   * @param {IDBRequest<any>} request of a cursor @param {number} count
   * @param {(key: any, value: any, cursor: any) => [Uint8Array, any]} entry
   * @returns {Promise<Array<[Uint8Array, any]>>}
   */
  #cursorEntries (request, count, entry) {
    const slot = /** @type {Slot} */ (this.#making)
    /** @type {Array<[Uint8Array, any]>} */
    const entries = []
    return new Promise((resolve, reject) => {
      request.onsuccess = () => {
        const cursor = /** @type {any} */ (request.result)
        if (cursor === null || entries.length >= count) {
          this.#dispatched(slot)
          return resolve(entries)
        }
        entries.push(entry(cursor.key, cursor.value, cursor))
        if (entries.length < count) cursor.continue()
        else {
          this.#dispatched(slot)
          resolve(entries)
        }
      }
      request.onerror = () => reject(request.error)
    })
  }

  /** @param {import('./namespace.js').Namespace} namespace */
  #prefixOf (namespace) {
    let found = this.#prefixes.get(namespace)
    if (found === undefined) {
      const prefix = textEncoder.encode(namespace.prefix)
      const upper = prefix.slice()
      upper[upper.length - 1]++
      this.#prefixes.set(namespace, found = { prefix, upper, segment: this.#native?.segmentOf(prefix) ?? null })
    }
    return found
  }

  /** @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key */
  #prefixed (namespace, key) {
    return withPrefix(this.#prefixOf(namespace).prefix, key)
  }

  /**
   * The key range of `bounds` in `namespace`, or null when it is empty.
   * @param {import('./namespace.js').Namespace} namespace @param {Bounds} bounds
   * @returns {IDBKeyRange | null}
   */
  #range (namespace, bounds) {
    const { prefix, upper } = this.#prefixOf(namespace)
    const low = bounds.gte ?? bounds.gt
    const high = bounds.lte ?? bounds.lt
    try {
      return IDBKeyRange.bound(
        low === undefined ? prefix : this.#prefixed(namespace, low),
        high === undefined ? upper : this.#prefixed(namespace, high),
        low !== undefined && bounds.gte === undefined,
        high === undefined || bounds.lte === undefined
      )
    } catch (err) {
      // The lower bound is above the upper one: nothing in between.
      if (/** @type {any} */ (err)?.name === 'DataError') return null
      throw err
    }
  }
}

/** @param {unknown} err */
function isInactive (err) {
  const name = /** @type {any} */ (err)?.name
  return name === 'TransactionInactiveError' || name === 'InvalidStateError'
}

/**
 * Abort the transaction of a batch whose request could not be made, so
 * that none of its requests is written, and return the error.
 * @param {Slot} slot @param {unknown} err
 */
function abortWith (slot, err) {
  try {
    slot.transaction.abort()
  } catch {
    // Already finished: then it held none of this batch's requests.
  }
  slot.done = true
  return err
}

/** Commit `transaction` now (its requests made). @param {IDBTransaction} transaction */
function commitNow (transaction) {
  try {
    transaction.commit()
  } catch {
    // Finished already (aborted): its 'abort' event tells.
  }
}

/** A key's bytes as a string, to match keys of two namespaces. @param {Uint8Array} key */
function bytesKey (key) {
  return bytesToBinaryString(key)
}

/** As browser-level stores it: bytes. @param {any} value */
function encodeValue (value) {
  return typeof value === 'string' ? textEncoder.encode(value) : value
}

/**
 * As the namespace's sublevel returns it: a string or bytes. Strings are
 * what level-js before 5 stored.
 * @param {any} value @param {import('./namespace.js').Namespace} namespace
 */
function decodeValue (value, namespace) {
  if (value === undefined) return undefined
  if (namespace.valueEncoding === 'utf8') return typeof value === 'string' ? value : textDecoder.decode(value)
  if (value instanceof Uint8Array) return value
  if (value instanceof ArrayBuffer) return new Uint8Array(value)
  return textEncoder.encode(value)
}

/** @param {ArrayBuffer | Uint8Array} key @param {number} length the prefix's */
function unprefixed (key, length) {
  const bytes = key instanceof Uint8Array ? key : new Uint8Array(key)
  return bytes.slice(length)
}

/**
 * The slot `claims` (the value under LIST_CLAIMS) gives the namespace of
 * tag `tag`, or undefined.
 * @param {any} claims @param {string} tag
 * @returns {number | undefined}
 */
function claimOf (claims, tag) {
  const tags = claims?.tags
  if (tags === null || typeof tags !== 'object' || !Object.hasOwn(tags, tag)) return undefined
  const slot = tags[tag]
  return Number.isInteger(slot) && slot >= -1 && slot < LIST_SLOTS ? slot : undefined
}

/**
 * The key of the entry of the list `key` (of the namespace of tag `tag`) in the lists store.
 * @param {number} slot @param {string} tag @param {Uint8Array} key
 * @returns {IDBValidKey}
 */
function keyOf (slot, tag, key) {
  const bytes = /** @type {any} */ (key)
  return slot < 0 ? [tag, bytes] : [slot, bytes]
}

/**
 * A list's ids as its entry keeps them: alone in a slot, else each with
 * the tag (the shared index tells namespaces apart by it).
 * @param {number} slot @param {string} tag @param {unknown[]} ids
 */
function keptIds (slot, tag, ids) {
  return slot < 0 ? ids.map(id => [tag, id]) : ids
}

/**
 * An entry: its ids (as keptIds() makes them) under its slot's property
 * (or `ids`), and `v` unless undefined.
 * @param {number} slot @param {unknown[]} ids @param {any} v
 */
function entryOf (slot, ids, v) {
  /** @type {Record<string, any>} */
  const entry = {}
  entry[slot < 0 ? 'ids' : slotIndexOf(slot)] = ids
  if (v !== undefined) entry.v = v
  return entry
}

/** The ids an entry keeps (as keptIds() makes them), or null. @param {number} slot @param {any} entry @returns {unknown[] | null} */
function keptOf (slot, entry) {
  const ids = entry?.[slot < 0 ? 'ids' : slotIndexOf(slot)]
  return Array.isArray(ids) ? ids : null
}

/** The ids of an entry's list. @param {number} slot @param {any} entry @returns {unknown[]} */
function idsOf (slot, entry) {
  const ids = keptOf(slot, entry) ?? []
  return slot < 0 ? ids.map(item => Array.isArray(item) ? item[1] : item) : ids
}

/**
 * The index and key range that find the entries whose lists hold `id`.
 * @param {string} location @param {number} slot @param {string} tag @param {number | string} id
 */
function indexQuery (location, slot, tag, id) {
  return slot < 0
    ? { index: listsStoreOf(location).index, only: IDBKeyRange.only([tag, id]) }
    : { index: slotIndexOf(slot), only: IDBKeyRange.only(id) }
}

/**
 * The lists store's range of the entries of `bounds` (unprefixed keys) under
 * `head` (a slot, or a tag), or null where it is empty: [head, bytes] lies
 * between [head] and [head, []] (arrays sort after binary keys).
 * @param {number | string} head @param {Bounds} bounds
 * @returns {IDBKeyRange | null}
 */
function listRange (head, bounds) {
  const low = bounds.gte ?? bounds.gt
  const high = bounds.lte ?? bounds.lt
  try {
    return IDBKeyRange.bound(
      low === undefined ? [head] : [head, /** @type {any} */ (low)],
      high === undefined ? [head, []] : [head, /** @type {any} */ (high)],
      low === undefined || bounds.gte === undefined,
      high === undefined || bounds.lte === undefined
    )
  } catch (err) {
    if (/** @type {any} */ (err)?.name === 'DataError') return null
    throw err
  }
}

/**
 * A namespace's key as the store holds it: after the namespace's prefix.
 * @param {Uint8Array} prefix @param {Uint8Array} key
 */
function withPrefix (prefix, key) {
  const stored = new Uint8Array(prefix.length + key.length)
  stored.set(prefix, 0)
  stored.set(key, prefix.length)
  return stored
}
