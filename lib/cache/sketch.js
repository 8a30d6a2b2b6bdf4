// A count-min sketch of 4-bit counters (held in bytes, saturating at 15),
// four rows, with aging: once the increments reach ten times the cache's
// size, every counter is halved, so what was popular long ago fades
// (TinyLFU, Einziger, Friedman and Manes, arXiv 1512.00727; Caffeine's
// FrequencySketch). It never counts a key below its true, aged count.

const DEPTH = 4
const MAX_COUNT = 15
// One odd multiplier per row: the rows index by independent-looking hashes.
const SEEDS = [0x9e3779b1, 0x85ebca77, 0xc2b2ae3d, 0x27d4eb2f]

export class FrequencySketch {
  /** @param {number} size the cache's size in entries */
  constructor (size) {
    let width = 16
    while (width < 2 * size && width < 2 ** 26) width *= 2
    this.width = width
    this.mask = width - 1
    this.table = new Uint8Array(DEPTH * width)
    this.sampleSize = Math.max(10 * size, 10)
    this.additions = 0
  }

  /** @param {number} hash @param {number} row */
  index (hash, row) {
    let h = Math.imul(hash, SEEDS[row])
    h ^= h >>> 15
    return row * this.width + (h & this.mask)
  }

  /** Count one more access of the key whose hash is `hash`. @param {number} hash */
  increment (hash) {
    const table = this.table
    let added = false
    for (let row = 0; row < DEPTH; row++) {
      const i = this.index(hash, row)
      if (table[i] < MAX_COUNT) {
        table[i]++
        added = true
      }
    }
    if (added && ++this.additions >= this.sampleSize) this.age()
  }

  /** The estimated accesses of the key whose hash is `hash`. @param {number} hash */
  frequency (hash) {
    const table = this.table
    let min = MAX_COUNT
    for (let row = 0; row < DEPTH; row++) {
      const count = table[this.index(hash, row)]
      if (count < min) min = count
    }
    return min
  }

  /** Halve every counter: O(width), once per sampleSize increments, so O(1) per access. */
  age () {
    const table = this.table
    for (let i = 0; i < table.length; i++) table[i] >>>= 1
    this.additions >>>= 1
  }

  clear () {
    this.table.fill(0)
    this.additions = 0
  }
}

/**
 * A 32-bit hash of a cache key: integers mixed, strings by FNV-1a over
 * their UTF-16 code units, anything else by its String().
 * @param {any} key
 * @returns {number}
 */
export function hashOf (key) {
  if (typeof key === 'number' && (key | 0) === key) {
    let h = Math.imul(key ^ (key >>> 16), 0x45d9f3b)
    h = Math.imul(h ^ (h >>> 16), 0x45d9f3b)
    return (h ^ (h >>> 16)) | 0
  }
  const text = typeof key === 'string' ? key : String(key)
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return h | 0
}
