// The seeded PRNG shared with the benchmarks, so randomized tests can be replayed.
export { prng } from 'levelkit-testkit/prng'
