import { encode, compareBytes, bytesToBinaryString } from './tuple.js'
import { invalid } from './errors.js'
import { assertName, layout } from './names.js'
import { Space } from './space.js'

const NO_VALUE = new Uint8Array(0)

/**
 * @typedef {{ key: Uint8Array, value: Uint8Array | string, indexValue: unknown }} IndexEntry
 */

/** @type {IndexEntry[]} */
export const NO_ENTRIES = []

/**
 * One secondary index of a collection. Entry layout in its own namespace:
 * - unique:     encode([value])     -> encode(id)
 * - covering:   encode([value])     -> the record's JSON (a unique index that
 *   holds a copy of the record, so getBy() is one read)
 * - non-unique: encode([value, id]) -> (empty)
 * so all kinds range over `value` the same way (see bounds.js).
 */
export class IndexSpec {
  /**
   * @param {any} root
   * @param {string} collection
   * @param {string} name
   * @param {unknown} options
   * @param {number} [readCache] values of a unique index to keep in memory (see Space)
   */
  constructor (root, collection, name, options, readCache = 0) {
    assertName(name, 'Index')
    if (options === null || typeof options !== 'object') {
      throw invalid(`Index "${name}" of "${collection}" needs an options object with a key function`)
    }
    const { key, unique = false, multi = false, covering = false, ...rest } = /** @type {any} */ (options)
    const unknown = Object.keys(rest)
    if (unknown.length > 0) throw invalid(`Index "${name}" of "${collection}" has unknown option(s): ${unknown.join(', ')}`)
    if (typeof key !== 'function') throw invalid(`Index "${name}" of "${collection}" needs a key function, record => value`)
    if (typeof unique !== 'boolean' || typeof multi !== 'boolean' || typeof covering !== 'boolean') {
      throw invalid(`Index "${name}" of "${collection}": unique, multi and covering must be booleans`)
    }
    if (covering && (!unique || multi)) throw invalid(`Index "${name}" of "${collection}": covering needs a unique index with one value per record (unique: true, not multi)`)
    this.collection = collection
    this.name = name
    this.key = key
    this.unique = unique
    this.multi = multi
    this.covering = covering
    // Unique entries are point-read (getBy, unique checks): cache them.
    this.space = new Space(root, layout.index(collection, name), covering ? 'utf8' : 'view', { readCache: unique ? readCache : 0 })
  }

  /**
   * The entries `record` needs in this index. A key function that returns
   * undefined leaves the record out of the index (a sparse index).
   *
   * @param {object} record
   * @param {unknown} id
   * @param {Uint8Array} idBytes
   * @param {string} [json] the record as stored, for a covering index's value
   * @returns {IndexEntry[]} distinct entries
   */
  entries (record, id, idBytes, json) {
    let computed
    try {
      computed = this.key(record)
    } catch (err) {
      throw invalid(`The key function of index "${this.name}" of "${this.collection}" threw: ${/** @type {Error} */ (err).message}`, { cause: err })
    }
    if (computed === undefined) return NO_ENTRIES
    if (this.multi && !Array.isArray(computed)) {
      throw invalid(`The key function of multi index "${this.name}" of "${this.collection}" must return an array (or undefined)`)
    }
    if (!this.multi) return [this.entry(computed, id, idBytes, json)]
    /** @type {IndexEntry[]} */
    const entries = []
    const seen = new Set()
    for (const value of computed) {
      const entry = this.entry(value, id, idBytes)
      const name = bytesToBinaryString(entry.key)
      if (seen.has(name)) continue
      seen.add(name)
      entries.push(entry)
    }
    return entries
  }

  /**
   * @param {unknown} value @param {unknown} id @param {Uint8Array} idBytes
   * @param {string} [json] the record as stored (covering)
   * @returns {IndexEntry}
   */
  entry (value, id, idBytes, json) {
    let key
    try {
      key = this.unique ? encode([value]) : encode([value, id])
    } catch (err) {
      throw invalid(`Index "${this.name}" of "${this.collection}" computed a value that is not a valid key: ${/** @type {Error} */ (err).message}`, { cause: err })
    }
    return { key, value: this.covering ? /** @type {string} */ (json) : this.unique ? idBytes : NO_VALUE, indexValue: value }
  }
}

/**
 * The entries only in `before` and those only in `after`. Most indexes give
 * a record one entry, which is compared directly.
 * @param {IndexEntry[]} before
 * @param {IndexEntry[]} after
 * @returns {{ removed: IndexEntry[], added: IndexEntry[] }}
 */
export function diffEntries (before, after) {
  if (before.length <= 1 && after.length <= 1) {
    if (before.length === 1 && after.length === 1 && compareBytes(before[0].key, after[0].key) === 0) {
      return { removed: NO_ENTRIES, added: NO_ENTRIES }
    }
    return { removed: before, added: after }
  }
  const names = (/** @type {IndexEntry[]} */ entries) => new Set(entries.map(e => bytesToBinaryString(e.key)))
  const beforeNames = names(before)
  const afterNames = names(after)
  return {
    removed: before.filter(e => !afterNames.has(bytesToBinaryString(e.key))),
    added: after.filter(e => !beforeNames.has(bytesToBinaryString(e.key)))
  }
}
