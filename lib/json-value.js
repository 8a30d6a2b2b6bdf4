import { invalid } from './errors.js'
import { errorMessage } from './common.js'

/**
 * Serialize a value to JSON, refusing anything JSON would silently change:
 * NaN and ±Infinity (become null), -0 (becomes 0), undefined array items and
 * holes (become null), a toJSON method anywhere, own or inherited (JSON would
 * store what it returns), symbol-keyed and non-enumerable properties, and
 * properties of an array other than its elements (JSON drops them),
 * functions, symbols, bigints, Dates, Maps, class instances (Array
 * subclasses too) and cycles. `undefined` object properties are allowed:
 * they read back as absent, which is what `undefined` already means.
 *
 * The value is serialized here, in the same pass that checks it, reading
 * each property exactly once: a getter or a Proxy cannot make what is
 * stored differ from what was checked, and nothing the caller does later
 * changes it. Whatever reading it throws becomes LEVELKIT_INVALID.
 *
 * @param {unknown} value
 * @param {string} what names the value in error messages
 * @param {string[]} [removed] for a patch: gets the top-level properties
 *   that read as undefined
 * @returns {string} the JSON text, as JSON.stringify would write it
 */
export function encodeJson (value, what, removed) {
  try {
    return serialize(value, 0, removed, NONE)
  } catch (err) {
    throw refusal(err, what)
  }
}

/**
 * encodeJson(), and a copy of the value made in the same pass: what
 * JSON.parse() of the JSON would return (plain objects and arrays, the same
 * strings, numbers, booleans and nulls), at a fraction of its cost. For a
 * bulk load, where every record is serialized and then handed to user code
 * (an id function, index keys) as its own copy.
 * @param {object} value
 * @param {string | (() => string)} what names the value in error messages
 *   (a function: made only for an error, not for each of a million records)
 * @param {boolean} [freeze] freeze every object and array of the copy, the
 *   copy itself too, as deepFreeze() would: as they are made, with no
 *   second walk
 * @returns {[string, any]} the JSON text and the copy
 */
export function encodeJsonWithCopy (value, what, freeze = false) {
  try {
    const json = serialize(value, 0, undefined, freeze ? FROZEN : COPY)
    const copy = value !== null && typeof value === 'object' ? lastCopy : value
    return [json, copy]
  } catch (err) {
    throw refusal(err, typeof what === 'function' ? what() : what)
  } finally {
    lastCopy = undefined
  }
}

// What serialize() makes besides the JSON: nothing, a copy of the value, or
// a frozen copy.
const NONE = 0
const COPY = 1
const FROZEN = 2

// While copying, the copy of the object or array serialize() wrote last.
/** @type {any} */
let lastCopy

// Past this depth we look for a cycle (which is what it usually is).
const MAX_DEPTH = 256

const hasOwn = Object.prototype.hasOwnProperty
const PLAIN = 'only plain objects, arrays, strings, finite numbers, booleans and null are stored'

// Characters JSON escapes (and surrogates, in case one is lone): strings
// without them are written as they are, the rest by JSON.stringify. Written
// as the complement of the characters that need nothing (0x20-0x21,
// 0x23-0x5b, 0x5d-0xd7ff, 0xe000-0xffff), the same set as
// /["\\\u0000-\u001f\ud800-\udfff]/: V8 tests a string against it about a
// third faster, and a bulk load tests every string of every record.
const NEEDS_ESCAPE = /[^\x20\x21\x23-\x5b\x5d-\ud7ff\ue000-\uffff]/

// The JSON of property names seen lately, each with the colon after it. The
// records of a load share their few property names: one lookup each, where
// writing one costs a test for characters to escape and a new string.
/** @type {Map<string, string>} */
const keyJsons = new Map()
// Names up to this long are remembered, up to this many (then forgotten all
// at once): at most about 100 KB, whatever the records' names.
const KEY_JSON_LENGTH = 48
const KEY_JSONS = 1024

/** The JSON of a property name, and the colon after it. @param {string} key */
function keyJson (key) {
  let json = keyJsons.get(key)
  if (json === undefined) {
    json = (NEEDS_ESCAPE.test(key) ? JSON.stringify(key) : `"${key}"`) + ':'
    if (key.length <= KEY_JSON_LENGTH) {
      if (keyJsons.size >= KEY_JSONS) keyJsons.clear()
      keyJsons.set(key, json)
    }
  }
  return json
}

/**
 * A rejection on its way up: each level adds its key to `path` (innermost
 * first), so the happy path allocates nothing.
 */
class Rejection {
  /** @param {string} reason @param {unknown} [cause] what reading the value threw */
  constructor (reason, cause) {
    this.reason = reason
    this.cause = cause
    /** @type {(string | number)[]} */
    this.path = []
    /** @type {object[] | null} for nesting too deep: the containers on the way up, innermost first */
    this.containers = null
  }
}

/**
 * @param {unknown} value @param {number} depth @param {string[] | undefined} removed
 * @param {number} copy NONE, or also make a copy of an object or array (left
 *   in lastCopy), frozen if FROZEN
 * @returns {string}
 */
function serialize (value, depth, removed, copy) {
  switch (typeof value) {
    case 'string':
      return NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`
    case 'number':
      if (value === 0) {
        if (1 / value < 0) throw new Rejection('-0 (JSON stores it as 0)')
        return '0'
      }
      if (!Number.isFinite(value)) throw new Rejection(`a non-finite number (${value})`)
      // Small integers hit V8's number-string cache; JSON.stringify writes
      // other numbers (timestamps, fractions) about twice as fast.
      return (value | 0) === value ? '' + value : JSON.stringify(value)
    case 'boolean':
      return value ? 'true' : 'false'
    case 'object':
      if (value === null) return 'null'
      if (depth > MAX_DEPTH) {
        const rejection = new Rejection('nesting too deep')
        rejection.containers = []
        throw rejection
      }
      return Array.isArray(value) ? serializeArray(value, depth, copy) : serializeObject(value, depth, removed, copy)
    default:
      throw new Rejection(`a ${typeof value}, which JSON cannot store`)
  }
}

/** @param {unknown[]} array @param {number} depth @param {number} copy */
function serializeArray (array, depth, copy) {
  const proto = Object.getPrototypeOf(array)
  if (proto !== Array.prototype) throw new Rejection(`${nameOf(proto)}, an Array subclass (${PLAIN})`)
  if ('toJSON' in array) throw new Rejection('a toJSON method (JSON would store what it returns)')
  const n = array.length
  let json = '['
  /** @type {unknown[] | null} */
  const target = copy !== NONE ? [] : null
  for (let i = 0; i < n; i++) {
    try {
      const item = array[i]
      if (item === undefined) throw new Rejection(i in array ? 'an undefined array item' : 'a hole in an array')
      // A small integer other than 0 (ids: a chat's members) as serialize()
      // writes it, without the call: arrays of ids are most of some records.
      const text = typeof item === 'number' && (item | 0) === item && item !== 0 ? '' + item : serialize(item, depth + 1, undefined, copy)
      json += (i === 0 ? '' : ',') + text
      if (target !== null) target.push(item !== null && typeof item === 'object' ? lastCopy : item)
    } catch (err) {
      throw withKey(err, i, array)
    }
  }
  // JSON keeps the elements only.
  if (Object.keys(array).length !== n || Object.getOwnPropertySymbols(array).length !== 0) {
    throw new Rejection(`a property that is not an element of the array, ${extraName(array, n)} (JSON drops it)`)
  }
  if (target !== null) lastCopy = copy === FROZEN ? Object.freeze(target) : target
  return json + ']'
}

/** @param {object} object @param {number} depth @param {string[] | undefined} removed @param {number} copy */
function serializeObject (object, depth, removed, copy) {
  const proto = Object.getPrototypeOf(object)
  if (proto !== Object.prototype && proto !== null) {
    throw new Rejection(`${nameOf(proto)} (${PLAIN})`)
  }
  if ('toJSON' in object) throw new Rejection('a toJSON method (JSON would store what it returns)')
  let json = '{'
  let own = 0
  /** @type {Record<string, unknown> | null} */
  const target = copy !== NONE ? {} : null
  for (const key in object) {
    if (!hasOwn.call(object, key)) continue
    own++
    try {
      const item = /** @type {Record<string, unknown>} */ (object)[key]
      if (item === undefined) {
        if (removed !== undefined) removed.push(key)
        continue
      }
      // A string without escapes and a small integer other than 0 (most
      // fields: a username, a hash, an id) as serialize() writes them, without the call.
      const text = typeof item === 'string'
        ? NEEDS_ESCAPE.test(item) ? JSON.stringify(item) : `"${item}"`
        : typeof item === 'number' && (item | 0) === item && item !== 0 ? '' + item : serialize(item, depth + 1, undefined, copy)
      json += (json.length === 1 ? '' : ',') + keyJson(key) + text
      if (target !== null) {
        const value = item !== null && typeof item === 'object' ? lastCopy : item
        // JSON.parse() makes "__proto__" an own property; assigning it would set the prototype.
        if (key === '__proto__') Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true })
        else target[key] = value
      }
    } catch (err) {
      throw withKey(err, key, object)
    }
  }
  // JSON keeps own enumerable string-keyed properties only.
  if (Object.getOwnPropertyNames(object).length !== own) throw new Rejection(`a non-enumerable property, ${hiddenName(object)} (JSON drops it)`)
  if (Object.getOwnPropertySymbols(object).length !== 0) throw new Rejection('a symbol-keyed property (JSON drops it)')
  if (target !== null) lastCopy = copy === FROZEN ? Object.freeze(target) : target
  return json + '}'
}

/** @param {object | null} proto */
function nameOf (proto) {
  const name = proto && typeof proto.constructor === 'function' ? proto.constructor.name : ''
  return name ? `a ${name}` : 'an object with another prototype'
}

/** The name of a property of an array that is not one of its elements. @param {unknown[]} array @param {number} n */
function extraName (array, n) {
  for (const key of Object.keys(array)) if (!(String(Number(key)) === key && Number(key) < n)) return JSON.stringify(key)
  return 'a symbol-keyed one'
}

/** The name of a non-enumerable own property. @param {object} object */
function hiddenName (object) {
  for (const key of Object.getOwnPropertyNames(object)) if (!Object.prototype.propertyIsEnumerable.call(object, key)) return JSON.stringify(key)
  return 'one'
}

/**
 * Add the key of the level the rejection passes (a Rejection for whatever
 * else was thrown: a getter, a Proxy trap).
 * @param {unknown} err @param {string | number} key @param {object} container
 */
function withKey (err, key, container) {
  const rejection = err instanceof Rejection ? err : new Rejection(`a value that threw when read (${errorMessage(err)})`, err)
  rejection.path.push(key)
  if (rejection.containers !== null) rejection.containers.push(container)
  return rejection
}

/**
 * The LEVELKIT_INVALID error for what serialize() threw.
 * @param {unknown} err @param {string} what
 */
function refusal (err, what) {
  const rejection = err instanceof Rejection ? err : new Rejection(`a value that threw when read (${errorMessage(err)})`, err)
  const path = rejection.path.reverse()
  if (rejection.containers !== null) {
    // Nested too deep: a cycle if a container on the way down is one of
    // its own ancestors (they were read on the way down; none is read again).
    const containers = rejection.containers.reverse()
    const seen = new Set()
    for (let i = 0; i < containers.length; i++) {
      if (seen.has(containers[i])) {
        const cycle = path.slice(0, i)
        return invalid(`${what} has a circular reference at ${pathString(cycle)}`, { path: cycle })
      }
      seen.add(containers[i])
    }
    return invalid(`${what} is nested more than ${MAX_DEPTH} levels deep`)
  }
  return invalid(`${what} has ${rejection.reason} at ${pathString(path)}`, { path, cause: rejection.cause })
}

/** @param {(string|number)[]} path */
function pathString (path) {
  return path.length === 0 ? 'the top level' : path.map(p => typeof p === 'number' ? `[${p}]` : `.${p}`).join('').replace(/^\./, '')
}

/** Whether `text` parses as JSON. @param {string} text */
export function isJson (text) {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}
