// The benchmarks' seeded PRNG, so randomized tests can be replayed.
export { prng } from '../../bench/lib/prng.js'
