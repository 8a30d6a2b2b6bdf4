// Small helpers every module uses.

import { invalid, codes } from './errors.js'

const MAX_TEXT = 60
const MAX_ITEMS = 5
const MAX_DEPTH = 2
const MAX_MESSAGE = 200

const CODES = new Set(Object.values(codes))

/**
 * A short, safe description of any value for an error message: never
 * throws and stays short, whatever it is given (a BigInt, a Symbol, a
 * Proxy whose traps throw, an object with no prototype, a cycle, an array
 * nested a million deep).
 * @param {unknown} value
 * @returns {string}
 */
export function describe (value) {
  try {
    return describeAt(value, 0)
  } catch {
    return 'a value that cannot be described'
  }
}

/** @param {unknown} value @param {number} depth @returns {string} */
function describeAt (value, depth) {
  switch (typeof value) {
    case 'string': {
      const text = JSON.stringify(value.length > MAX_TEXT ? value.slice(0, MAX_TEXT) : value)
      return value.length > MAX_TEXT ? `${text.slice(0, -1)}..." (${value.length} characters)` : text
    }
    case 'number': return Object.is(value, -0) ? '-0' : String(value)
    case 'bigint': return `${String(value)}n (a bigint)`
    case 'boolean': return String(value)
    case 'undefined': return 'undefined'
    case 'symbol': return 'a symbol'
    case 'function': return 'a function'
  }
  if (value === null) return 'null'
  if (value instanceof Uint8Array) return `bytes(${value.length})`
  if (Array.isArray(value)) {
    if (depth >= MAX_DEPTH) return `an array of ${value.length}`
    const items = []
    for (let i = 0; i < value.length && i < MAX_ITEMS; i++) items.push(describeAt(value[i], depth + 1))
    if (value.length > MAX_ITEMS) items.push(`... ${value.length - MAX_ITEMS} more`)
    return `[${items.join(', ')}]`
  }
  const tag = Object.prototype.toString.call(value).slice(8, -1)
  return tag === 'Object' ? 'an object' : `a ${tag}`
}

/**
 * The message of anything thrown, for an error message of our own: an
 * Error's message (shortened), else a description of what was thrown.
 * Never throws.
 * @param {unknown} err
 * @returns {string}
 */
export function errorMessage (err) {
  try {
    if (err instanceof Error && typeof err.message === 'string') {
      return err.message.length > MAX_MESSAGE ? `${err.message.slice(0, MAX_MESSAGE)}...` : err.message
    }
  } catch {}
  return describe(err)
}

/**
 * Whether `err` is one of levelkit's own errors, which pass through the
 * door unchanged. Never throws (`err` may be anything a caller threw).
 * @param {unknown} err
 */
export function isLevelkitError (err) {
  try {
    return err instanceof Error && CODES.has(/** @type {any} */ (err).code)
  } catch {
    return false
  }
}

/**
 * What `read` returns. `read` reads the caller's input: whatever that throws
 * (a getter, a Proxy trap, a revoked Proxy, a toString) becomes
 * LEVELKIT_INVALID naming `what`, with the thrown value as its cause;
 * levelkit's own errors pass through.
 * @template T
 * @param {string} what the input, as the subject of a sentence ("The options of query()")
 * @param {() => T} read
 * @returns {T}
 */
export function readInput (what, read) {
  try {
    return read()
  } catch (err) {
    throw unreadable(what, err)
  }
}

/**
 * What readInput() throws when reading the caller's input threw `err`: for
 * hot paths that read inline in a try, so that neither a closure nor the
 * sentence naming the input is made unless the read throws.
 * @param {string} what as for readInput() @param {unknown} err
 * @returns {unknown}
 */
export function unreadable (what, err) {
  if (isLevelkitError(err)) return err
  return invalid(`${what} could not be read: ${errorMessage(err)}`, { cause: err })
}

/**
 * The own enumerable [name, value] pairs of an object, each read once.
 * @param {unknown} object @param {string} what as the subject of a sentence
 * @returns {Array<[string, unknown]>}
 */
export function entriesOf (object, what) {
  if (object === null || typeof object !== 'object') throw invalid(`${what} must be an object, got ${describe(object)}`)
  return readInput(what, () => Object.entries(object))
}

/**
 * The elements of an array, each read once, as a plain array of our own: the
 * caller's array (a Proxy, a subclass, an element getter) is not read again.
 * @param {unknown} array @param {string} what as the subject of a sentence ("The ids passed to getMany()")
 * @returns {unknown[]}
 */
export function elementsOf (array, what) {
  return readInput(what, () => {
    if (!Array.isArray(array)) throw invalid(`${what} must be an array, got ${describe(array)}`)
    const n = array.length
    const copy = []
    for (let i = 0; i < n; i++) copy.push(array[i])
    return copy
  })
}

/**
 * Freeze a parsed JSON value all the way down, so user callbacks cannot make
 * what is indexed differ from what is stored.
 * @template T
 * @param {T} value
 * @returns {T}
 */
export function deepFreeze (value) {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    // Not called for a field that is not an object: a flat record (most
    // are) is one call, not one per field (a bulk load seals each record).
    for (const key of Object.keys(value)) {
      const field = /** @type {any} */ (value)[key]
      if (field !== null && typeof field === 'object') deepFreeze(field)
    }
  }
  return value
}

/** @param {unknown} value */
export function isDefined (value) {
  return value !== undefined
}

export function noop () {}
