/**
 * The order tuple keys must have, written independently of any byte
 * encoding: used to check levelkit's tuple encoding (test/tuple-test.js) and
 * every codec the tuple benchmark compares (bench/tuple-codec.js). The type
 * order is bytewise's, taken from the tags in bytewise-core/base.js:
 * null 0x10 < false 0x20 < true 0x21 < numbers 0x40..0x43 (< dates 0x51/0x52)
 * < binary 0x60 < string 0x70 < array 0xa0 (< undefined 0xf0). Note that
 * typewise's own compare() puts undefined first; undefined is rejected here.
 * Strings compare by code point, which is UTF-8 byte order: NOT JavaScript's
 * `<`, which compares UTF-16 code units.
 * @param {any} a @param {any} b
 * @returns {-1 | 0 | 1}
 */
export function reference (a, b) {
  const ra = rank(a)
  const rb = rank(b)
  if (ra !== rb) return ra < rb ? -1 : 1
  if (ra === 3) return a < b ? -1 : a > b ? 1 : 0 // -0 equals 0
  if (ra === 4 || ra === 5 || ra === 6) {
    const x = ra === 5 ? Array.from(a, (/** @type {string} */ c) => c.codePointAt(0)) : a
    const y = ra === 5 ? Array.from(b, (/** @type {string} */ c) => c.codePointAt(0)) : b
    const n = Math.min(x.length, y.length)
    for (let i = 0; i < n; i++) {
      const c = ra === 6 ? reference(x[i], y[i]) : sign(x[i] - y[i])
      if (c !== 0) return c
    }
    return sign(x.length - y.length)
  }
  return 0
}

/** @param {unknown} v */
function rank (v) {
  if (v === null) return 0
  if (v === false) return 1
  if (v === true) return 2
  if (typeof v === 'number') return 3
  if (v instanceof Uint8Array) return 4
  if (typeof v === 'string') return 5
  if (Array.isArray(v)) return 6
  throw new Error(`No reference order for ${String(v)}`)
}

/** @param {number} n @returns {-1 | 0 | 1} */
function sign (n) {
  return n < 0 ? -1 : n > 0 ? 1 : 0
}
