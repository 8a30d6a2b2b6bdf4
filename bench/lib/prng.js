import { createRandom } from '../../workshop/lib/random.js'

/**
 * A small seeded PRNG (the workshop's mulberry32), so data sets are the same
 * from run to run and from side to side, and randomized tests can be
 * replayed (test/util/prng.js is this one).
 * @param {number} seed
 */
export function prng (seed) {
  const { next } = createRandom(seed)
  const random = () => next()
  random.int = (/** @type {number} */ n) => Math.floor(next() * n)
  random.pick = (/** @type {any[]} */ list) => list[Math.floor(next() * list.length)]
  return random
}
