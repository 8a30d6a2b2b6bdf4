// Which account a client of bench/transactions.js touches next: uniform over
// the accounts, or Zipf (hot keys: account 1 is the most popular, then 2,
// ...), drawn with a client's own seeded PRNG so every side of a comparison
// sees the same sequences.

/** @typedef {'uniform' | 'hot'} Distribution */

export const DISTRIBUTIONS = /** @type {const} */ (['uniform', 'hot'])

/**
 * A chooser of ids 1..n: `choose(rand)` with `rand()` a number in [0, 1).
 * For 'hot', P(id = k) is proportional to k^-s (Zipf); the cumulative
 * distribution is computed once and searched by bisection.
 * @param {Distribution} distribution
 * @param {number} n
 * @param {number} s the Zipf exponent (used by 'hot' only)
 * @returns {(rand: () => number) => number}
 */
export function keyChooser (distribution, n, s) {
  if (distribution === 'uniform') return rand => 1 + Math.floor(rand() * n)
  if (distribution !== 'hot') throw new Error(`Unknown key distribution ${JSON.stringify(distribution)}`)
  const cdf = new Float64Array(n)
  let total = 0
  for (let k = 1; k <= n; k++) {
    total += k ** -s
    cdf[k - 1] = total
  }
  for (let k = 0; k < n; k++) cdf[k] /= total
  return rand => {
    const u = rand()
    let lo = 0
    let hi = n - 1
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (cdf[mid] > u) hi = mid
      else lo = mid + 1
    }
    return lo + 1
  }
}
