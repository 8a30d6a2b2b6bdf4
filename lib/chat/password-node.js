import { scrypt, pbkdf2, randomBytes, timingSafeEqual } from 'node:crypto'
import { invalid } from '../errors.js'

// Stored as `scrypt$N$r$p$salt$hash` (salt and hash in base64): the
// parameters travel with the hash, so they can be raised later.

/**
 * @param {string} password
 * @param {{ scryptN: number }} cost
 * @returns {Promise<string>}
 */
export async function hashPassword (password, cost) {
  const N = cost.scryptN
  const r = 8
  const p = 1
  const salt = randomBytes(16)
  const hash = await derive(password, salt, N, r, p)
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64')}$${hash.toString('base64')}`
}

/**
 * Compare in constant time (for hashes of the same length).
 * @param {string} password
 * @param {string} stored
 * @returns {Promise<boolean>}
 */
export async function checkPassword (password, stored) {
  const parts = stored.split('$')
  if (parts[0] === 'scrypt' && parts.length === 6) {
    const [, N, r, p, salt, hash] = parts
    const expected = Buffer.from(hash, 'base64')
    const actual = await derive(password, Buffer.from(salt, 'base64'), Number(N), Number(r), Number(p), expected.length)
    return timingSafeEqual(actual, expected)
  }
  if (parts[0] === 'pbkdf2-sha256' && parts.length === 4) {
    // Hashes made in a browser (WebCrypto has no scrypt).
    const [, iterations, salt, hash] = parts
    const expected = Buffer.from(hash, 'base64')
    const actual = await new Promise((resolve, reject) => {
      pbkdf2(password, Buffer.from(salt, 'base64'), Number(iterations), expected.length, 'sha256', (err, key) => err ? reject(err) : resolve(key))
    })
    return timingSafeEqual(/** @type {Buffer} */ (actual), expected)
  }
  throw invalid('Unknown password hash format')
}

/**
 * @param {string} password @param {Buffer} salt
 * @param {number} N @param {number} r @param {number} p @param {number} [length]
 * @returns {Promise<Buffer>}
 */
function derive (password, salt, N, r, p, length = 32) {
  return new Promise((resolve, reject) => {
    scrypt(password, salt, length, { N, r, p, maxmem: 256 * N * r + 1024 * 1024 }, (err, key) => err ? reject(err) : resolve(key))
  })
}
