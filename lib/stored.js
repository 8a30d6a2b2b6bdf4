// Stored data read back: parsed as what levelkit writes there, or refused
// with LEVELKIT_DECODE_ERROR (written behind levelkit's back, or damaged),
// never a raw SyntaxError and never LEVELKIT_INVALID, which means the
// caller's input is bad. The checks cost nothing on data that parses; the
// messages are built only on failure.

import { decode, ARRAY_START, ARRAY_END, POSITIVE } from './tuple.js'
import { decodeError } from './errors.js'
import { describe, errorMessage } from './common.js'

/**
 * @typedef {{ name: string }} Named a namespace (only its name is used)
 */

/**
 * A stored JSON value.
 * @param {string} text @param {Named} namespace @param {Uint8Array} [key]
 * @returns {any}
 */
export function parseJson (text, namespace, key) {
  try {
    return JSON.parse(text)
  } catch (err) {
    throw damaged('a value that is not JSON', namespace, key, err)
  }
}

/**
 * A stored record: a JSON object.
 * @param {string} text @param {Named} namespace @param {Uint8Array} [key]
 * @returns {any}
 */
export function parseRecord (text, namespace, key) {
  const record = parseJson(text, namespace, key)
  if (record === null || typeof record !== 'object' || Array.isArray(record)) {
    throw damaged(`${describe(record)}, not a record (a JSON object)`, namespace, key)
  }
  return record
}

/**
 * A stored record, frozen all the way down (what deepFreeze() makes of
 * it), for code that hands it to user callbacks: a walk that can skip
 * deepFreeze()'s checks, since what JSON.parse() just made is plain, new
 * and shared with nobody: no object of it is frozen yet or reached twice.
 * @param {string} text @param {Named} namespace @param {Uint8Array} [key]
 * @returns {any}
 */
export function parseFrozenRecord (text, namespace, key) {
  return freezeParsed(parseRecord(text, namespace, key))
}

/** @param {object} value @returns {object} */
function freezeParsed (value) {
  Object.freeze(value)
  // Own keys (not for-in: an enumerable property someone added to
  // Object.prototype is no part of the record).
  const keys = Object.keys(value)
  for (let i = 0; i < keys.length; i++) {
    const item = /** @type {any} */ (value)[keys[i]]
    if (item !== null && typeof item === 'object') freezeParsed(item)
  }
  return value
}

/**
 * A stored integer (a sequence, a counter), as levelkit writes it: String(n).
 * @param {string} text @param {Named} namespace @param {Uint8Array} [key]
 * @returns {number}
 */
export function parseInteger (text, namespace, key) {
  const n = Number(text)
  if (!Number.isSafeInteger(n) || String(n) !== text) throw damaged(`${describe(text)}, not an integer`, namespace, key)
  return n
}

/**
 * A stored key (or a stored list of ids): a tuple.
 * @param {Uint8Array} bytes @param {Named} namespace
 * @returns {any}
 */
export function decodeKey (bytes, namespace) {
  try {
    return decode(bytes)
  } catch (err) {
    throw damaged('a key that is not a tuple', namespace, undefined, err)
  }
}

/**
 * A stored list of ids: a tuple array.
 * @param {Uint8Array} bytes @param {Named} namespace @param {Uint8Array} key
 * @returns {unknown[]}
 */
export function decodeList (bytes, namespace, key) {
  let list
  try {
    list = decode(bytes)
  } catch (err) {
    throw damaged('a list that is not a tuple', namespace, key, err)
  }
  if (!Array.isArray(list)) throw damaged(`${describe(list)}, not a list of ids`, namespace, key)
  return list
}

/**
 * decodeList() of a list, the same ids, read in one loop where it holds
 * numbers above zero only (a list of sequence ids, which every batch that
 * writes one to IndexedDB decodes to mirror it): nine bytes each, read as
 * a float64; anything else as decodeList() reads it (and refuses it).
 * @param {Uint8Array} bytes @param {Named} namespace @param {Uint8Array} key
 * @returns {unknown[]}
 */
export function decodeIds (bytes, namespace, key) {
  const n = bytes.length
  if (n < 2 || bytes[0] !== ARRAY_START || bytes[n - 1] !== ARRAY_END || (n - 2) % 9 !== 0) return decodeList(bytes, namespace, key)
  const view = new DataView(bytes.buffer, bytes.byteOffset, n)
  const ids = []
  for (let at = 1; at < n - 1; at += 9) {
    const id = view.getFloat64(at + 1)
    // As decode() takes a number: its canonical bytes only (sign bit clear, finite).
    if (bytes[at] !== POSITIVE || bytes[at + 1] >= 0x80 || !(id < Infinity)) return decodeList(bytes, namespace, key)
    ids.push(id)
  }
  return ids
}

/**
 * A stored list of sequence ids, which is searched and changed as bytes:
 * its frame must be right (ARRAY_START, items of `itemBytes` each, ARRAY_END).
 * @param {Uint8Array} bytes @param {number} itemBytes @param {Named} namespace @param {Uint8Array} key
 * @returns {Uint8Array}
 */
export function checkNumberList (bytes, itemBytes, namespace, key) {
  const n = bytes.length
  if (n < 2 || bytes[0] !== ARRAY_START || bytes[n - 1] !== ARRAY_END || (n - 2) % itemBytes !== 0) {
    throw damaged('a list that is not a tuple array of ids', namespace, key)
  }
  return bytes
}

/**
 * @param {string} what @param {Named} namespace @param {Uint8Array | undefined} key @param {unknown} [cause]
 */
function damaged (what, namespace, key, cause) {
  const where = key === undefined ? '' : ` under ${describeKey(key)}`
  const why = cause === undefined ? '' : ` (${errorMessage(cause)})`
  return decodeError(`"${namespace.name}" holds ${what}${where}${why}: it was written behind levelkit's back, or is damaged`, { cause, namespace: namespace.name })
}

/** @param {Uint8Array} key */
function describeKey (key) {
  try {
    return describe(decode(key))
  } catch {
    return `a key that is not a tuple, ${describe(key)}`
  }
}
