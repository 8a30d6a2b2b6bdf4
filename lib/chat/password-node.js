import { scrypt, pbkdf2, timingSafeEqual } from 'node:crypto'
import { channel } from 'node:diagnostics_channel'
import { parseHash, toBase64, unreadable } from './password-format.js'

// Hashes made here are scrypt (`scrypt$N$r$p$salt$hash`); PBKDF2 hashes
// made in a browser are checked too.

/** The schemes this module checks. */
export const schemes = Object.freeze(['scrypt', 'pbkdf2-sha256'])

// Every key derivation is published here with its cost, so the work a login
// does can be observed (and tested) without timing it.
const derivations = channel('levelkit:password-derive')

const R = 8
const P = 1

/**
 * The params of the hashes hashPassword() makes at this cost.
 * @param {{ scryptN: number }} cost
 */
export function paramsFor (cost) {
  return `scrypt$${cost.scryptN}$${R}$${P}`
}

/**
 * @param {string} password
 * @param {{ scryptN: number }} cost
 * @returns {Promise<string>}
 */
export async function hashPassword (password, cost) {
  const salt = crypto.getRandomValues(new Uint8Array(16))
  const hash = await deriveScrypt(password, salt, { N: cost.scryptN, r: R, p: P }, 32)
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
  let actual
  try {
    actual = scheme === 'scrypt'
      ? await deriveScrypt(password, salt, /** @type {{ N: number, r: number, p: number }} */ (cost), hash.length)
      : await derivePbkdf2(password, salt, cost.iterations, hash.length)
  } catch (err) {
    throw unreadable(`its ${scheme} parameters are refused (${/** @type {Error} */ (err).message})`, err)
  }
  return timingSafeEqual(actual, hash)
}

/**
 * @param {string} password @param {Uint8Array} salt
 * @param {{ N: number, r: number, p: number }} cost @param {number} length
 * @returns {Promise<Buffer>}
 */
function deriveScrypt (password, salt, { N, r, p }, length) {
  if (derivations.hasSubscribers) derivations.publish({ algorithm: 'scrypt', N, r, p })
  return new Promise((resolve, reject) => {
    scrypt(password, salt, length, { N, r, p, maxmem: 256 * N * r + 1024 * 1024 }, (err, key) => err ? reject(err) : resolve(key))
  })
}

/**
 * @param {string} password @param {Uint8Array} salt @param {number} iterations @param {number} length
 * @returns {Promise<Buffer>}
 */
function derivePbkdf2 (password, salt, iterations, length) {
  if (derivations.hasSubscribers) derivations.publish({ algorithm: 'pbkdf2-sha256', iterations })
  return new Promise((resolve, reject) => {
    pbkdf2(password, salt, iterations, length, 'sha256', (err, key) => err ? reject(err) : resolve(key))
  })
}
