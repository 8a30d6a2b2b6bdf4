// A seeded PRNG for levelkit's tests and benchmarks: one seed gives the same
// data on every run and on both sides of a comparison, so a randomized test
// that fails can be replayed. pure-rand's xoroshiro128+ makes the numbers.
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus'
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64'
import { uniformInt } from 'pure-rand/distribution/uniformInt'

/**
 * @typedef {object} Random
 * @property {(n: number) => number} int an integer from 0 to n - 1
 * @property {<T>(list: readonly T[]) => T} pick one element of a non-empty list
 */

/**
 * @param {number} seed any number: its low 32 bits are the seed
 * @returns {(() => number) & Random} random(): a number in [0, 1)
 */
export function prng (seed) {
  const rng = xoroshiro128plus(seed)
  const random = () => uniformFloat64(rng)
  random.int = (/** @type {number} */ n) => uniformInt(rng, 0, n - 1)
  random.pick = /** @type {<T>(list: readonly T[]) => T} */ (list) => list[random.int(list.length)]
  return random
}
