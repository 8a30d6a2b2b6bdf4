// A small seeded PRNG, so the learner's run and the reference run see the
// same scenario, and a failing verify can be replayed with --seed.

/**
 * mulberry32: tiny, fast and good enough for generating test data.
 * @param {number} seed
 */
export function createRandom (seed) {
  let state = seed >>> 0
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  /** @param {number} min @param {number} max an integer from min to max, both included */
  const int = (min, max) => min + Math.floor(next() * (max - min + 1))
  /** @template T @param {readonly T[]} items @returns {T} */
  const pick = (items) => items[int(0, items.length - 1)]
  /** @template T @param {readonly T[]} items @returns {T[]} a shuffled copy */
  const shuffle = (items) => {
    const copy = items.slice()
    for (let i = copy.length - 1; i > 0; i--) {
      const j = int(0, i)
      ;[copy[i], copy[j]] = [copy[j], copy[i]]
    }
    return copy
  }
  const word = (min = 3, max = 8) => {
    let out = ''
    const length = int(min, max)
    for (let i = 0; i < length; i++) out += String.fromCharCode(97 + int(0, 25))
    return out
  }
  // Distinct words: scenarios often need unique keys or names.
  /** @param {number} count @param {number} [min] @param {number} [max] */
  const words = (count, min, max) => {
    const seen = new Set()
    while (seen.size < count) seen.add(word(min, max))
    return [...seen]
  }
  return { next, int, pick, shuffle, word, words }
}

/** A fresh seed for a verify run: printed, so it can be replayed. */
export function freshSeed () {
  return Math.floor(Math.random() * 0x7fffffff) + 1
}

/**
 * Derive an independent stream from a seed and a label, so adding a draw in
 * one place does not shift the data everywhere else.
 * @param {number} seed
 * @param {string} label
 */
export function deriveSeed (seed, label) {
  let h = seed >>> 0
  for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x01000193) >>> 0
  return h
}
