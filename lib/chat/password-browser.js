import { parseHash, toBase64, unreadable } from './password-format.js'

// WebCrypto has PBKDF2 but no scrypt. Stored as
// `pbkdf2-sha256$iterations$salt$hash` (base64); Node can verify these too.

/** The schemes this module checks. */
export const schemes = Object.freeze(['pbkdf2-sha256'])

/**
 * The params of the hashes hashPassword() makes at this cost.
 * @param {{ pbkdf2Iterations: number }} cost
 */
export function paramsFor (cost) {
  return `pbkdf2-sha256$${cost.pbkdf2Iterations}`
}

/**
 * @param {string} password
 * @param {{ pbkdf2Iterations: number }} cost
 * @returns {Promise<string>}
 */
export async function hashPassword (password, cost) {
  const salt = crypto.getRandomValues(new Uint8Array(16))
  const hash = await derive(password, salt, cost.pbkdf2Iterations, 32)
  return `${paramsFor(cost)}$${toBase64(salt)}$${toBase64(hash)}`
}

/**
 * Compare in constant time. A stored hash that cannot be checked rejects
 * with LEVELKIT_DECODE_ERROR.
 * @param {string} password
 * @param {unknown} stored
 * @returns {Promise<boolean>}
 */
export async function checkPassword (password, stored) {
  const { scheme, cost, salt, hash } = parseHash(stored)
  if (scheme !== 'pbkdf2-sha256') throw unreadable('it was made in Node.js (scrypt), which browsers cannot verify')
  let actual
  try {
    actual = await derive(password, salt, cost.iterations, hash.length)
  } catch (err) {
    throw unreadable(`its PBKDF2 parameters are refused (${/** @type {Error} */ (err).message})`, err)
  }
  // Constant time: look at every byte whatever the first difference.
  let diff = actual.length ^ hash.length
  for (let i = 0; i < hash.length; i++) diff |= actual[i] ^ hash[i]
  return diff === 0
}

/**
 * @param {string} password @param {Uint8Array} salt @param {number} iterations @param {number} length
 * @returns {Promise<Uint8Array>}
 */
async function derive (password, salt, iterations, length) {
  const key = await crypto.subtle.importKey('raw', new TextEncoder().encode(password), 'PBKDF2', false, ['deriveBits'])
  const saltBytes = /** @type {BufferSource} */ (salt)
  /** @type {Pbkdf2Params} */
  const params = { name: 'PBKDF2', hash: 'SHA-256', salt: saltBytes, iterations }
  const bits = await crypto.subtle.deriveBits(params, key, length * 8)
  return new Uint8Array(bits)
}
