import { invalid } from '../errors.js'

// WebCrypto has PBKDF2 but no scrypt. Stored as
// `pbkdf2-sha256$iterations$salt$hash` (base64); Node can verify these too.

/**
 * @param {string} password
 * @param {{ pbkdf2Iterations: number }} cost
 * @returns {Promise<string>}
 */
export async function hashPassword (password, cost) {
  const salt = crypto.getRandomValues(new Uint8Array(16))
  const hash = await derive(password, salt, cost.pbkdf2Iterations, 32)
  return `pbkdf2-sha256$${cost.pbkdf2Iterations}$${toBase64(salt)}$${toBase64(hash)}`
}

/**
 * @param {string} password
 * @param {string} stored
 * @returns {Promise<boolean>}
 */
export async function checkPassword (password, stored) {
  const parts = stored.split('$')
  if (parts[0] !== 'pbkdf2-sha256' || parts.length !== 4) {
    throw invalid('This password hash was made in Node.js (scrypt), which browsers cannot verify')
  }
  const expected = fromBase64(parts[3])
  const actual = await derive(password, fromBase64(parts[2]), Number(parts[1]), expected.length)
  // Constant time: look at every byte whatever the first difference.
  let diff = actual.length ^ expected.length
  for (let i = 0; i < expected.length; i++) diff |= actual[i] ^ expected[i]
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

/** @param {Uint8Array} bytes */
function toBase64 (bytes) {
  let s = ''
  for (const b of bytes) s += String.fromCharCode(b)
  return btoa(s)
}

/** @param {string} s */
function fromBase64 (s) {
  return Uint8Array.from(atob(s), c => c.charCodeAt(0))
}
