import { invalid } from './errors.js'

/**
 * Serialize a record to JSON, refusing anything JSON would silently change:
 * NaN and ±Infinity (become null), undefined array items (become null),
 * functions, symbols, bigints, Dates, Maps, class instances and cycles.
 * `undefined` object properties are allowed: they read back as absent, which
 * is what `undefined` already means.
 *
 * @param {unknown} value
 * @param {string} what names the value in error messages
 * @returns {string}
 */
export function encodeJson (value, what) {
  try {
    assertPlainJson(value, 0)
  } catch (err) {
    if (!(err instanceof Rejection)) throw err
    if (err === TOO_DEEP) {
      const cycle = findCycle(value, [], new Set())
      if (cycle) throw invalid(`${what} has a circular reference at ${pathString(cycle)}`, { path: cycle })
      throw invalid(`${what} is nested more than ${MAX_DEPTH} levels deep`)
    }
    const path = err.path.reverse()
    throw invalid(`${what} has ${err.reason} at ${pathString(path)}`, { path })
  }
  return JSON.stringify(value)
}

// Past this depth we look for a cycle (which is what it usually is); the
// fast path keeps no set of ancestors.
const MAX_DEPTH = 256

/**
 * A rejection on its way up: each level adds its key to `path` (innermost
 * first), so the happy path allocates nothing.
 */
class Rejection {
  /** @param {string} reason */
  constructor (reason) {
    this.reason = reason
    /** @type {(string | number)[]} */
    this.path = []
  }
}

/**
 * @param {unknown} value
 * @param {number} depth
 */
function assertPlainJson (value, depth) {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return
    case 'number':
      if (Number.isFinite(value)) return
      throw new Rejection(`a non-finite number (${value})`)
    case 'object': {
      if (value === null) return
      if (depth > MAX_DEPTH) throw TOO_DEEP
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          const item = value[i]
          if (item === undefined) throw withKey(new Rejection(i in value ? 'an undefined array item' : 'a hole in an array'), i)
          try {
            assertPlainJson(item, depth + 1)
          } catch (err) {
            throw withKey(err, i)
          }
        }
        return
      }
      const proto = Object.getPrototypeOf(value)
      if (proto !== Object.prototype && proto !== null) {
        const name = proto && proto.constructor ? proto.constructor.name : 'object'
        throw new Rejection(`a ${name}; only plain objects, arrays, strings, finite numbers, booleans and null are stored`)
      }
      for (const key in value) {
        if (!Object.prototype.hasOwnProperty.call(value, key)) continue
        const item = /** @type {Record<string, unknown>} */ (value)[key]
        if (item === undefined) continue
        try {
          assertPlainJson(item, depth + 1)
        } catch (err) {
          throw withKey(err, key)
        }
      }
      return
    }
    default:
      throw new Rejection(`a ${typeof value}, which JSON cannot store`)
  }
}

const TOO_DEEP = new Rejection('nesting too deep')

/** @param {unknown} err @param {string | number} key */
function withKey (err, key) {
  if (err instanceof Rejection && err !== TOO_DEEP) err.path.push(key)
  return err
}

/**
 * The path to the first value that contains itself, or null.
 * @param {unknown} value @param {(string | number)[]} path @param {Set<object>} ancestors
 * @returns {(string | number)[] | null}
 */
function findCycle (value, path, ancestors) {
  if (value === null || typeof value !== 'object') return null
  if (ancestors.has(value)) return path
  ancestors.add(value)
  for (const key of Object.keys(value)) {
    const found = findCycle(/** @type {any} */ (value)[key], [...path, Array.isArray(value) ? Number(key) : key], ancestors)
    if (found) return found
  }
  ancestors.delete(value)
  return null
}

/** @param {(string|number)[]} path */
function pathString (path) {
  return path.length === 0 ? 'the top level' : path.map(p => typeof p === 'number' ? `[${p}]` : `.${p}`).join('').replace(/^\./, '')
}
