// Input checks and errors the benchmarks' peer stores (SQLite, PostgreSQL)
// share: they answer bad input as ChatStore does, code for code, without
// importing ChatStore's internals.

import { levelkitError, invalid, codes } from '../../lib/errors.js'

/** @param {number} a @param {number} b */
export function byNumber (a, b) {
  return a - b
}

/** @param {unknown} id @param {string} what @returns {number} */
export function assertId (id, what) {
  if (!Number.isSafeInteger(id) || /** @type {number} */ (id) < 1) throw invalid(`${what} must be a positive integer, got ${String(id)}`)
  return /** @type {number} */ (id)
}

/** @param {unknown} ids @param {string} what @returns {number[]} */
export function idList (ids, what) {
  if (!Array.isArray(ids)) throw invalid(`${what} must be an array`)
  return Array.from(ids, id => assertId(id, `${what} item`))
}

/** @param {unknown} password */
export function assertPassword (password) {
  if (typeof password !== 'string' || password.length === 0 || password.length > 1024) {
    throw invalid('password must be a non-empty string of at most 1024 characters')
  }
}

/** @param {string} message @param {unknown} [cause] */
export function notFound (message, cause) {
  return levelkitError(codes.NOT_FOUND, message, { cause })
}

/** @param {string} message */
export function limit (message) {
  return levelkitError(codes.LIMIT, message)
}

/**
 * An options or record argument: an object, or undefined for none (a copy).
 * @param {unknown} value @param {string} what
 * @returns {any}
 */
export function optionsObject (value, what) {
  if (value === undefined) return {}
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalid(`${what} takes an object`)
  return { ...value }
}

/** Length in code points: an emoji is one character. @param {string} text */
export function characters (text) {
  let n = 0
  for (const _ of text) n++ // eslint-disable-line no-unused-vars
  return n
}
