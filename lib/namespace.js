import { decode } from './tuple.js'
import { bytesToBinaryString } from './bytes.js'
import { tupleBounds } from './bounds.js'
import { ReadCache, CacheBudget } from './read-cache.js'
import { levelkitError, codes } from './errors.js'
import { idbDirectFor } from './idb-direct.js'

// Keys read one getSync() each by readMany(); past it, one getMany().
const SYNC_READ_LIMIT = 256

// Enough for the sequences of many parents; past it the cache starts over.
const CACHE_LIMIT = 10000

/** @type {WeakMap<object, Map<string, Namespace>>} the namespaces of each root database, by prefix */
const namespacesOfRoot = new WeakMap()

/** @type {WeakMap<object, CacheBudget>} the byte budget the read caches of each root database share */
const budgetOfRoot = new WeakMap()

/**
 * Give the read caches of the namespaces declared on `root` from now on a
 * shared budget of `bytes`, and the policy they evict by.
 * @param {object} root @param {number} bytes
 * @param {import('./read-cache.js').CachePolicy} [policy]
 */
export function setReadCacheBudget (root, bytes, policy) {
  budgetOfRoot.set(root, new CacheBudget(bytes, policy))
}

/**
 * The statistics of the read caches of each namespace declared on `root`
 * that has one (its values' and its lists' caches added up).
 * @param {object} root
 * @returns {Record<string, { hits: number, misses: number, evictions: number, size: number }>}
 */
export function readCacheStats (root) {
  /** @type {Record<string, { hits: number, misses: number, evictions: number, size: number }>} */
  const stats = {}
  for (const namespace of namespacesOfRoot.get(root)?.values() || []) {
    const caches = [namespace.readCache, namespace.listCache].filter(cache => cache !== null)
    if (caches.length === 0) continue
    const sum = { hits: 0, misses: 0, evictions: 0, size: 0 }
    for (const cache of /** @type {ReadCache[]} */ (caches)) {
      const { hits, misses, evictions, size } = cache.stats()
      sum.hits += hits
      sum.misses += misses
      sum.evictions += evictions
      sum.size += size
    }
    stats[namespace.name] = sum
  }
  return stats
}

/**
 * The byte budget of `root`'s read caches, if it has one: what they hold.
 * @param {object} root
 */
export function readCacheBudget (root) {
  return budgetOfRoot.get(root)
}

/**
 * The namespace declared on `root` whose sublevel has `prefix`, if any.
 * @param {object} root @param {string} prefix
 */
export function namespaceByPrefix (root, prefix) {
  return namespacesOfRoot.get(root)?.get(prefix)
}

/**
 * Every namespace declared on `root`.
 * @param {object} root
 * @returns {Iterable<Namespace>}
 */
export function namespacesOf (root) {
  return namespacesOfRoot.get(root)?.values() ?? []
}

/**
 * Empty the read caches of every namespace declared on `root`: for a repair,
 * whose damage was written behind levelkit's back, so what the caches hold
 * may not be what is stored.
 * @param {object} root
 */
export function clearReadCaches (root) {
  for (const namespace of namespacesOfRoot.get(root)?.values() || []) namespace.clearReadCaches()
}

/**
 * One namespace of the database: a flat sublevel of the root whose keys are
 * tuple-encoded bytes (we encode them ourselves, once) and whose values are
 * JSON strings ('utf8') or bytes ('view').
 */
export class Namespace {
  /**
   * @param {import('abstract-level').AbstractLevel<any, any, any>} root
   * @param {string} name
   * @param {'utf8' | 'view'} valueEncoding
   * @param {{ cache?: boolean, readCache?: number, listCache?: number }} [options]
   *   `cache`: cache values the write path decides (sequences): it is the
   *   only writer, so the cache stays exact.
   *   `readCache`: keep up to this many values read with getSync() (0: none);
   *   the write path updates them as its batches are written.
   *   `listCache`: keep up to this many lists of keys under a first tuple
   *   element (a relation's edges from one id); a write under that element
   *   drops its list
   */
  constructor (root, name, valueEncoding, options) {
    this.name = name
    /** @type {Map<string, any> | null} value (undefined: absent) by bytesToBinaryString(key) */
    this.cache = options?.cache ? new Map() : null
    /**
     * For a cached namespace whose stored values may lag what the write
     * path decided (on IndexedDB, a collection's sequence: see
     * Collection#settleSequence()): turns a value read from the database
     * into the current one before the cache keeps it.
     * @type {((key: Uint8Array, stored: any) => Promise<any>) | null}
     */
    this.settle = null
    const budget = budgetOfRoot.get(root) ?? null
    /**
     * Written values (undefined: absent) by bytesToBinaryString(key), filled
     * by synchronous reads only, so a read that started before a batch can
     * never put back what that batch replaced.
     * @type {ReadCache | null}
     */
    this.readCache = options?.readCache ? new ReadCache(options.readCache, budget) : null
    /**
     * What the keys under a prefix (bytesToBinaryString of the prefix) list,
     * as read by an iterator. An iterator is not synchronous: a list is kept
     * only if no write to this namespace was written while it was read
     * (listVersion).
     * @type {ReadCache | null}
     */
    this.listCache = options?.listCache ? new ReadCache(options.listCache, budget) : null
    this.listVersion = 0
    /**
     * Keys (bytesToBinaryString) in the batch being written, and how many of
     * its ops each has.
     * @type {Map<string, number>}
     */
    this.inFlight = new Map()
    /** Whether the write path must tell this namespace about the ops it writes. */
    this.cachesWrites = this.readCache !== null || this.listCache !== null
    /**
     * Whether a bulk load's batch is being written into this namespace while
     * its caches hold nothing (see writing()): then nothing fills them until
     * it is written, and its ops need no bookkeeping one by one.
     */
    this.wholeBatch = false
    this.valueEncoding = valueEncoding
    /** @type {any} keys are Uint8Array, values string or Uint8Array per valueEncoding */
    this.sublevel = root.sublevel(name, { keyEncoding: 'view', valueEncoding })
    this.prefix = this.sublevel.prefix
    /** On IndexedDB: reads made many per transaction (lib/idb-direct.js). */
    this.idb = idbDirectFor(root)
    /**
     * On PostgreSQL (the database itself, not a sublevel of it): point
     * reads made without options go to it directly (levelkitReadKey() and
     * levelkitReadKeys()), with the keys prefixed here, past
     * abstract-level's get().
     * @type {any}
     */
    this.pg = typeof (/** @type {any} */ (root).levelkitReadKeys) === 'function' ? root : null
    let namespaces = namespacesOfRoot.get(root)
    if (!namespaces) namespacesOfRoot.set(root, namespaces = new Map())
    namespaces.set(this.prefix, this)
  }

  clearReadCaches () {
    // On IndexedDB the lease cache holds values of every namespace.
    this.idb?.clearCache()
    this.readCache?.clear()
    if (this.listCache !== null) {
      this.listCache.clear()
      this.listVersion++
    }
  }

  /**
   * A string that names `key` in this namespace, unique across all namespaces: used
   * to find decided-but-unwritten ops.
   * @param {Uint8Array} key
   */
  keyId (key) {
    return this.prefix + bytesToBinaryString(key)
  }

  /**
   * Remember the value a write decided for `key` (undefined for a delete).
   * @param {Uint8Array} key @param {any} value
   */
  remember (key, value) {
    const cache = /** @type {Map<string, any>} */ (this.cache)
    if (cache.size >= CACHE_LIMIT) cache.clear()
    cache.set(bytesToBinaryString(key), value)
  }

  /**
   * A batch holding `op` is about to be written. From the moment the backend
   * applies it until the write path hears back, reads of the disk see the new
   * value: so until written() or unwritten(), reads of the key neither use
   * nor fill the cache, and the list under its head is dropped now.
   *
   * For the batch of a bulk load (`wholes` given) into a namespace whose
   * caches are empty, the namespace instead keeps its caches empty until the
   * batch is written (wholeWritten()): no read fills them meanwhile, so no
   * key of the batch can be cached behind it, and its ops, up to hundreds of
   * thousands a second, are not counted one by one. The namespace is then
   * added to `wholes`.
   * @param {import('./write-scope.js').Op} op
   * @param {Namespace[] | null} [wholes]
   */
  writing (op, wholes = null) {
    if (this.wholeBatch) return
    if (wholes !== null && (this.readCache === null || this.readCache.size === 0) && (this.listCache === null || this.listCache.size === 0)) {
      this.wholeBatch = true
      // A list being read now may be read before or after the batch lands.
      this.listVersion++
      wholes.push(this)
      return
    }
    if (this.readCache !== null) {
      const name = bytesToBinaryString(op.key)
      this.inFlight.set(name, (this.inFlight.get(name) ?? 0) + 1)
    }
    if (this.listCache !== null) this.#dropList(op)
  }

  /**
   * `op` is on disk and the write path knows it: a cached value is brought
   * up to date, once the last op of its key in the batch is done. Only
   * values already cached are touched: a bulk load does not flush the cache.
   * @param {import('./write-scope.js').Op} op
   */
  written (op) {
    if (this.wholeBatch) return
    if (this.readCache !== null) {
      const name = bytesToBinaryString(op.key)
      if (this.#landed(name) === 0) this.readCache.update(name, op.type === 'put' ? op.value : undefined)
    }
    if (this.listCache !== null) this.#dropList(op)
  }

  /**
   * The batch holding `op` failed: nothing of it is on disk, and the cached
   * value, if any, is still what is stored.
   * @param {import('./write-scope.js').Op} op
   */
  unwritten (op) {
    if (this.wholeBatch) return
    if (this.readCache !== null) this.#landed(bytesToBinaryString(op.key))
    if (this.listCache !== null) this.listVersion++
  }

  /**
   * The bulk batch writing() let in whole is written, or failed: reads fill
   * the caches again, and a list read meanwhile is not kept.
   */
  wholeWritten () {
    this.wholeBatch = false
    this.listVersion++
  }

  /** @param {string} name @returns {number} the ops of the key still in flight */
  #landed (name) {
    const ops = (this.inFlight.get(name) ?? 1) - 1
    if (ops === 0) this.inFlight.delete(name)
    else this.inFlight.set(name, ops)
    return ops
  }

  /**
   * Drop the list `op` changes, and keep any list read meanwhile out of the
   * cache (it may have been read before or after the batch landed).
   * @param {import('./write-scope.js').Op} op
   */
  #dropList (op) {
    const listCache = /** @type {ReadCache} */ (this.listCache)
    this.listVersion++
    if (listCache.size === 0) return
    let head
    try {
      head = /** @type {unknown[]} */ (decode(op.key))[0]
    } catch {
      // A malformed key (a repair deleting it): drop every list.
      listCache.clear()
      return
    }
    listCache.delete(listName(head))
  }

  /**
   * What the raw keys under the tuple prefix [head] list, as `fromKeys`
   * makes it: from the list cache, or read (and remembered when no write
   * landed meanwhile). The list cache keeps what `fromKeys` returns, which
   * is smaller than the keys (the ids they end with), and returns it as it
   * is: callers must not change it.
   * @template T
   * @param {unknown} head
   * @param {(keys: Uint8Array[]) => T} fromKeys
   * @returns {Promise<T>}
   */
  async listUnder (head, fromKeys) {
    const listCache = /** @type {ReadCache} */ (this.listCache)
    const bounds = tupleBounds([head], {})
    const name = bytesToBinaryString(/** @type {Uint8Array} */ (bounds.gte))
    const hit = listCache.lookup(name)
    if (hit !== undefined) return hit[0]
    const version = this.listVersion
    const list = fromKeys(await this.sublevel.keys(bounds).all())
    if (this.listVersion === version && !this.wholeBatch) listCache.set(name, list)
    return list
  }

  /**
   * Read one raw value: with getSync() when allowed and the sublevel is open
   * (it opens a tick after it is declared), else with get().
   * @param {Uint8Array} key
   * @param {boolean} sync
   * @param {any} [options] left undefined where possible: getSync() has a fast path for that
   * @returns {any} the value, or a promise of it
   */
  read (key, sync, options) {
    const sublevel = this.sublevel
    if (sublevel.status === 'open') {
      if (!sync) {
        if (options === undefined) {
          if (this.idb !== null && this.idb.ready) return this.idb.get(this, key, false)
          if (this.pg !== null && this.pg.status === 'open') return this.pg.levelkitReadKey(sublevel.prefixKey(key, 'buffer', false), this.valueEncoding === 'utf8')
        }
        return sublevel.get(key, options)
      }
      const readCache = this.readCache
      if (readCache === null || options !== undefined) return sublevel.getSync(key, options)
      const name = bytesToBinaryString(key)
      // A key whose batch is being written reads what the disk has now, old
      // or new: the cache may be behind it, and must not keep it.
      if (this.inFlight.size > 0 && this.inFlight.has(name)) return sublevel.getSync(key)
      const hit = readCache.lookup(name)
      if (hit !== undefined) return hit[0]
      const value = sublevel.getSync(key)
      if (!this.wholeBatch) readCache.set(name, value)
      return value
    }
    assertNotClosed(sublevel)
    return sublevel.get(key, options)
  }

  /**
   * Read several raw values: with getSync() per key where allowed and the
   * keys are a page or so (a page of point reads beats a getMany() round
   * trip, and an iterator), else with one getMany(). Optionally from a
   * snapshot.
   * @param {Uint8Array[]} keys
   * @param {boolean} sync
   * @param {any} [snapshot]
   * @returns {Promise<any[]>}
   */
  async readMany (keys, sync, snapshot) {
    const sublevel = this.sublevel
    assertNotClosed(sublevel)
    // With a snapshot, the encodings too: else abstract-level clones the
    // options on every read. Without, none: getSync() has a fast path.
    const options = snapshot ? { snapshot, keyEncoding: 'view', valueEncoding: this.valueEncoding } : undefined
    if (sync && keys.length <= SYNC_READ_LIMIT && sublevel.status === 'open') {
      return keys.map(key => this.read(key, true, options))
    }
    if (options === undefined && this.idb !== null && this.idb.ready && sublevel.status === 'open') return this.idb.getMany(this, keys, false)
    if (options === undefined && this.pg !== null && this.pg.status === 'open' && sublevel.status === 'open') return this.#readPg(keys)
    return sublevel.getMany(keys, options)
  }

  /**
   * A point read whose value waits for `locked` (a key lock of locking:
   * 'keys', lib/write-scope.js): on PostgreSQL in the lock's statement.
   * @param {Uint8Array} key @param {Promise<void>} locked
   * @returns {Promise<any>}
   */
  readLocked (key, locked) {
    if (this.pg !== null && this.pg.status === 'open' && this.sublevel.status === 'open') return this.pg.levelkitReadKey(this.sublevel.prefixKey(key, 'buffer', false), this.valueEncoding === 'utf8', locked)
    return this.read(key, false, { levelkitLocked: locked })
  }

  /**
   * `keys` read from PostgreSQL directly (see this.pg), decoded as the
   * sublevel's get() decodes them (values are Buffers: 'view' keeps them).
   * @param {Uint8Array[]} keys
   * @returns {Promise<any[]>}
   */
  #readPg (keys) {
    const sublevel = this.sublevel
    const read = this.pg.levelkitReadKeys(keys.map(key => sublevel.prefixKey(key, 'buffer', false)))
    return this.valueEncoding === 'utf8' ? read.then(utf8Values) : read
  }
}

/** @param {Array<Buffer | undefined>} values */
function utf8Values (values) {
  return values.map(value => value === undefined ? undefined : value.toString('utf8'))
}

/**
 * Throw LEVELKIT_NOT_OPEN for a closed (or closing) database; a database
 * that is still opening is fine, abstract-level defers until it is open.
 * @param {any} db
 */
export function assertNotClosed (db) {
  if (db.status === 'closed' || db.status === 'closing') {
    throw levelkitError(codes.NOT_OPEN, 'The database is closed')
  }
}

/** The list cache's name for the keys under [head]. @param {unknown} head */
function listName (head) {
  return bytesToBinaryString(/** @type {Uint8Array} */ (tupleBounds([head], {}).gte))
}
