import { bytesToBinaryString } from './tuple.js'
import { levelkitError, codes } from './errors.js'

// Enough for the sequences of many parents; past it the cache starts over.
const CACHE_LIMIT = 10000

/** @type {WeakMap<object, Map<string, Space>>} the spaces of each root database, by prefix */
const spacesOfRoot = new WeakMap()

/**
 * The space declared on `root` whose sublevel has `prefix`, if any.
 * @param {object} root @param {string} prefix
 */
export function spaceByPrefix (root, prefix) {
  return spacesOfRoot.get(root)?.get(prefix)
}

/**
 * One namespace of the database: a flat sublevel of the root whose keys are
 * tuple-encoded bytes (we encode them ourselves, once) and whose values are
 * JSON strings ('utf8') or bytes ('view').
 */
export class Space {
  /**
   * @param {import('abstract-level').AbstractLevel<any, any, any>} root
   * @param {string} name
   * @param {'utf8' | 'view'} valueEncoding
   * @param {{ cache?: boolean, readCache?: number }} [options]
   *   `cache`: cache values the write path decides (sequences): it is the
   *   only writer, so the cache stays exact.
   *   `readCache`: keep up to this many values read with getSync() (0: none);
   *   the write path updates them as its batches are written
   */
  constructor (root, name, valueEncoding, options) {
    this.name = name
    /** @type {Map<string, any> | null} value (undefined: absent) by bytesToBinaryString(key) */
    this.cache = options?.cache ? new Map() : null
    /**
     * Written values (undefined: absent) by bytesToBinaryString(key), filled
     * by synchronous reads only, so a read that started before a batch can
     * never put back what that batch replaced. Two generations: when the
     * recent one is half the limit it becomes the older one and the previous
     * older one is dropped; a hit in the older one moves to the recent one.
     * (Evicting one by one from a Map is slow: deleted entries stay in its
     * table until it is rebuilt.)
     * @type {{ limit: number, recent: Map<string, any>, older: Map<string, any> } | null}
     */
    this.readCache = options?.readCache ? { limit: options.readCache, recent: new Map(), older: new Map() } : null
    this.valueEncoding = valueEncoding
    /** @type {any} keys are Uint8Array, values string or Uint8Array per valueEncoding */
    this.sublevel = root.sublevel(name, { keyEncoding: 'view', valueEncoding })
    this.prefix = this.sublevel.prefix
    let spaces = spacesOfRoot.get(root)
    if (!spaces) spacesOfRoot.set(root, spaces = new Map())
    spaces.set(this.prefix, this)
  }

  /**
   * A string that names `key` in this space, unique across all spaces: used
   * to find decided-but-unwritten ops.
   * @param {Uint8Array} key
   */
  id (key) {
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
   * Bring a cached value up to date with a write that is now on disk. Only
   * values already cached are touched: a bulk load does not flush the cache.
   * @param {import('./transaction.js').Op} op
   */
  written (op) {
    const { recent, older } = /** @type {NonNullable<Space['readCache']>} */ (this.readCache)
    const name = bytesToBinaryString(op.key)
    const value = op.type === 'put' ? op.value : undefined
    if (recent.has(name)) recent.set(name, value)
    if (older.has(name)) older.set(name, value)
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
      if (!sync) return sublevel.get(key, options)
      const readCache = this.readCache
      if (readCache === null || options !== undefined) return sublevel.getSync(key, options)
      const name = bytesToBinaryString(key)
      let value = readCache.recent.get(name)
      if (value !== undefined || readCache.recent.has(name)) return value
      value = readCache.older.get(name)
      if (value === undefined && !readCache.older.has(name)) value = sublevel.getSync(key)
      readCache.recent.set(name, value)
      if (readCache.recent.size * 2 >= readCache.limit) {
        readCache.older = readCache.recent
        readCache.recent = new Map()
      }
      return value
    }
    assertNotClosed(sublevel)
    return sublevel.get(key, options)
  }
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
