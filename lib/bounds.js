import { encode, encodeItems, ARRAY_START, HIGH } from './tuple.js'
import { concatBytes, compareBytes } from './bytes.js'
import { invalid } from './errors.js'
import { readInput } from './common.js'

/**
 * Range options ({ gt, gte, lt, lte, eq, prefix }) turned into byte bounds
 * { gte, lt }. Every bound reduces to those two, because for byte strings
 * k > x  <=>  k >= x + [0x00]  and  k <= x  <=>  k < x + [0x00].
 *
 * @typedef {{ gt?: unknown, gte?: unknown, lt?: unknown, lte?: unknown, eq?: unknown, prefix?: unknown[] }} RangeOptions
 * @typedef {{ gte?: Uint8Array, lt?: Uint8Array }} ByteBounds
 */

const ZERO = [0x00]

/**
 * Bounds over keys that are the encoded values themselves (primary keys).
 * @param {RangeOptions} options
 * @returns {ByteBounds}
 */
export function valueBounds (options) {
  const b = new BoundsBuilder()
  if (has(options, 'gte')) b.lower(encode(options.gte))
  if (has(options, 'gt')) b.lower(concatBytes(encode(options.gt), ZERO))
  if (has(options, 'lt')) b.upper(encode(options.lt))
  if (has(options, 'lte')) b.upper(concatBytes(encode(options.lte), ZERO))
  if (has(options, 'eq')) {
    const key = encode(options.eq)
    b.lower(key)
    b.upper(concatBytes(key, ZERO))
  }
  if (has(options, 'prefix')) {
    const start = concatBytes([ARRAY_START], encodeItems(prefixOf(options)))
    b.lower(start)
    b.upper(concatBytes(start, [HIGH]))
  }
  return b.bounds()
}

/**
 * Bounds over keys shaped encode([...head, v, ...rest]), ranging over v. Keys
 * with v equal to b all start with START + items(head) + items([b]) and, since
 * element encodings are self-delimiting and never start with 0xFF, all sort
 * below that prefix + 0xFF.
 *
 * @param {unknown[]} head
 * @param {RangeOptions} options
 * @returns {ByteBounds}
 */
export function tupleBounds (head, options) {
  const base = concatBytes([ARRAY_START], encodeItems(head))
  const at = (/** @type {unknown} */ v) => concatBytes(base, encodeItems([v]))
  const b = new BoundsBuilder()
  if (head.length > 0) {
    b.lower(base)
    b.upper(concatBytes(base, [HIGH]))
  }
  if (has(options, 'gte')) b.lower(at(options.gte))
  if (has(options, 'gt')) b.lower(concatBytes(at(options.gt), [HIGH]))
  if (has(options, 'lt')) b.upper(at(options.lt))
  if (has(options, 'lte')) b.upper(concatBytes(at(options.lte), [HIGH]))
  if (has(options, 'eq')) {
    const start = at(options.eq)
    b.lower(start)
    b.upper(concatBytes(start, [HIGH]))
  }
  if (has(options, 'prefix')) {
    const start = concatBytes(base, [ARRAY_START], encodeItems(prefixOf(options)))
    b.lower(start)
    b.upper(concatBytes(start, [HIGH]))
  }
  return b.bounds()
}

/** @param {RangeOptions} options */
function prefixOf (options) {
  if (!readInput('The prefix option', () => Array.isArray(options.prefix))) throw invalid('The prefix option must be an array of leading tuple elements')
  return /** @type {unknown[]} */ (options.prefix)
}

/** @param {object} options @param {string} key */
function has (options, key) {
  return Object.prototype.hasOwnProperty.call(options, key) && /** @type {any} */ (options)[key] !== undefined
}

class BoundsBuilder {
  /** @type {Uint8Array | undefined} */ #gte
  /** @type {Uint8Array | undefined} */ #lt

  /** @param {Uint8Array} key */
  lower (key) {
    if (!this.#gte || compareBytes(key, this.#gte) > 0) this.#gte = key
  }

  /** @param {Uint8Array} key */
  upper (key) {
    if (!this.#lt || compareBytes(key, this.#lt) < 0) this.#lt = key
  }

  /** @returns {ByteBounds} */
  bounds () {
    /** @type {ByteBounds} */
    const result = {}
    if (this.#gte) result.gte = this.#gte
    if (this.#lt) result.lt = this.#lt
    return result
  }
}

/**
 * Whether `key` lies within `bounds`.
 * @param {Uint8Array} key @param {{ gt?: Uint8Array, gte?: Uint8Array, lt?: Uint8Array, lte?: Uint8Array }} bounds
 */
export function within (key, bounds) {
  if (bounds.gte && compareBytes(key, bounds.gte) < 0) return false
  if (bounds.gt && compareBytes(key, bounds.gt) <= 0) return false
  if (bounds.lte && compareBytes(key, bounds.lte) > 0) return false
  if (bounds.lt && compareBytes(key, bounds.lt) >= 0) return false
  return true
}
