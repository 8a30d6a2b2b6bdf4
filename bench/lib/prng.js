/**
 * A small seeded PRNG (mulberry32, the same as test/util/prng.js), so data
 * sets are the same from run to run and from side to side.
 * @param {number} seed
 */
export function prng (seed) {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = a
    x = Math.imul(x ^ (x >>> 15), x | 1)
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61)
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
  next.int = (/** @type {number} */ n) => Math.floor(next() * n)
  return next
}
