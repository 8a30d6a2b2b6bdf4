import { decodeError } from '../errors.js'

// A stored password hash is `<params>$<salt>$<hash>`, salt and hash in
// base64, where the params name the scheme and its cost: `scrypt$N$r$p`
// (Node) or `pbkdf2-sha256$iterations` (browsers). The cost travels with
// the hash, so it can be raised later; the params alone say what checking a
// hash costs, which is what ChatStore counts and what a dummy hash copies.

const COST_FIELDS = Object.freeze({ scrypt: ['N', 'r', 'p'], 'pbkdf2-sha256': ['iterations'] })
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
// Hashes made here are 32 bytes. A shorter one (an empty one would match
// every password) was not made here.
const MIN_HASH_BYTES = 16

/**
 * @typedef {{ scheme: 'scrypt' | 'pbkdf2-sha256', params: string, cost: Record<string, number>, salt: Uint8Array, hash: Uint8Array }} ParsedHash
 */

/**
 * @param {unknown} stored
 * @returns {ParsedHash}
 */
export function parseHash (stored) {
  if (typeof stored !== 'string') throw unreadable(`it is ${stored === undefined ? 'missing' : `a ${typeof stored}`}, not a string`)
  const parts = stored.split('$')
  const scheme = parts[0]
  if (scheme !== 'scrypt' && scheme !== 'pbkdf2-sha256') throw unreadable(`the scheme ${JSON.stringify(scheme.slice(0, 32))} is not scrypt or pbkdf2-sha256`)
  const fields = COST_FIELDS[scheme]
  if (parts.length !== fields.length + 3) throw unreadable(`a ${scheme} hash has ${fields.length + 3} fields, this one ${parts.length}`)
  /** @type {Record<string, number>} */
  const cost = {}
  fields.forEach((field, i) => {
    const text = parts[i + 1]
    const value = Number(text)
    if (!/^[1-9][0-9]*$/.test(text) || !Number.isSafeInteger(value)) throw unreadable(`its ${field} is not a positive integer`)
    cost[field] = value
  })
  const [salt, hash] = parts.slice(-2).map((text, i) => {
    if (!BASE64.test(text)) throw unreadable(`its ${i === 0 ? 'salt' : 'hash'} is not base64`)
    return fromBase64(text)
  })
  if (hash.length < MIN_HASH_BYTES) throw unreadable(`its hash is ${hash.length} bytes, not at least ${MIN_HASH_BYTES}`)
  return { scheme, params: parts.slice(0, -2).join('$'), cost, salt, hash }
}

/**
 * A stored hash with these params that no password matches (its salt and
 * hash are random): checking it costs what checking a real one does.
 * @param {string} params
 */
export function dummyHash (params) {
  const random = (/** @type {number} */ n) => toBase64(crypto.getRandomValues(new Uint8Array(n)))
  return `${params}$${random(16)}$${random(32)}`
}

/** The scheme of a hash's params. @param {string} params */
export function schemeOf (params) {
  return params.split('$')[0]
}

/**
 * A stored hash this code cannot check (for the message, the reason).
 * @param {string} reason @param {unknown} [cause]
 */
export function unreadable (reason, cause) {
  return decodeError(`The stored password hash cannot be checked: ${reason}`, { cause })
}

/** @param {Uint8Array} bytes */
export function toBase64 (bytes) {
  let s = ''
  for (const b of bytes) s += String.fromCharCode(b)
  return btoa(s)
}

/** @param {string} s */
function fromBase64 (s) {
  return Uint8Array.from(atob(s), c => c.charCodeAt(0))
}
