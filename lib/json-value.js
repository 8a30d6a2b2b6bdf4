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
  assertPlainJson(value, what, [], new Set())
  return JSON.stringify(value)
}

/**
 * @param {unknown} value
 * @param {string} what
 * @param {(string|number)[]} path
 * @param {Set<object>} ancestors
 */
function assertPlainJson (value, what, path, ancestors) {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return
    case 'number':
      if (Number.isFinite(value)) return
      throw invalid(`${what} has a non-finite number at ${pathString(path)}`, { path })
    case 'object': {
      if (value === null) return
      if (ancestors.has(value)) {
        throw invalid(`${what} has a circular reference at ${pathString(path)}`, { path })
      }
      ancestors.add(value)
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          if (!(i in value) || value[i] === undefined) {
            throw invalid(`${what} has an undefined array item at ${pathString([...path, i])}`, { path: [...path, i] })
          }
          assertPlainJson(value[i], what, [...path, i], ancestors)
        }
      } else {
        const proto = Object.getPrototypeOf(value)
        if (proto !== Object.prototype && proto !== null) {
          const name = proto && proto.constructor ? proto.constructor.name : 'object'
          throw invalid(`${what} has a ${name} at ${pathString(path)}; only plain objects, arrays, strings, finite numbers, booleans and null are stored`, { path })
        }
        for (const key of Object.keys(value)) {
          const item = /** @type {Record<string, unknown>} */ (value)[key]
          if (item !== undefined) assertPlainJson(item, what, [...path, key], ancestors)
        }
      }
      ancestors.delete(value)
      return
    }
    default:
      throw invalid(`${what} has a ${typeof value} at ${pathString(path)}, which JSON cannot store`, { path })
  }
}

/** @param {(string|number)[]} path */
function pathString (path) {
  return path.length === 0 ? 'the top level' : path.map(p => typeof p === 'number' ? `[${p}]` : `.${p}`).join('').replace(/^\./, '')
}
