import { encode } from './tuple.js'
import { invalid } from './errors.js'
import { assertName, layout } from './names.js'
import { Space } from './space.js'

const NO_VALUE = new Uint8Array(0)

/**
 * @typedef {{ key: Uint8Array, value: Uint8Array, indexValue: unknown }} IndexEntry
 * @typedef {Map<string, IndexEntry>} IndexEntries entries by namespace-qualified key
 */

/** @type {IndexEntries} */
export const NO_ENTRIES = new Map()

/**
 * One secondary index of a collection. Entry layout in its own namespace:
 * - unique:     encode([value])     -> encode(id)
 * - non-unique: encode([value, id]) -> (empty)
 * so both kinds range over `value` the same way (see bounds.js).
 */
export class IndexSpec {
  /**
   * @param {any} root
   * @param {string} collection
   * @param {string} name
   * @param {unknown} options
   */
  constructor (root, collection, name, options) {
    assertName(name, 'Index')
    if (options === null || typeof options !== 'object') {
      throw invalid(`Index "${name}" of "${collection}" needs an options object with a key function`)
    }
    const { key, unique = false, multi = false, ...rest } = /** @type {any} */ (options)
    const unknown = Object.keys(rest)
    if (unknown.length > 0) throw invalid(`Index "${name}" of "${collection}" has unknown option(s): ${unknown.join(', ')}`)
    if (typeof key !== 'function') throw invalid(`Index "${name}" of "${collection}" needs a key function, record => value`)
    if (typeof unique !== 'boolean' || typeof multi !== 'boolean') {
      throw invalid(`Index "${name}" of "${collection}": unique and multi must be booleans`)
    }
    this.collection = collection
    this.name = name
    this.key = key
    this.unique = unique
    this.multi = multi
    this.space = new Space(root, layout.index(collection, name), 'view')
  }

  /**
   * The entries `record` needs in this index. A key function that returns
   * undefined leaves the record out of the index (a sparse index).
   *
   * @param {object} record
   * @param {unknown} id
   * @param {Uint8Array} idBytes
   * @returns {IndexEntries}
   */
  entries (record, id, idBytes) {
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
    const values = this.multi ? computed : [computed]
    /** @type {IndexEntries} */
    const entries = new Map()
    for (const value of values) {
      let key
      try {
        key = this.unique ? encode([value]) : encode([value, id])
      } catch (err) {
        throw invalid(`Index "${this.name}" of "${this.collection}" computed a value that is not a valid key: ${/** @type {Error} */ (err).message}`, { cause: err })
      }
      entries.set(this.space.id(key), { key, value: this.unique ? idBytes : NO_VALUE, indexValue: value })
    }
    return entries
  }
}
