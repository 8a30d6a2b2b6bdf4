// A count-min sketch of 4-bit counters (held in bytes, saturating at 15),
// four rows, with aging: once the increments reach ten times the cache's
// size, every counter is halved, so what was popular long ago fades
// (TinyLFU, Einziger, Friedman and Manes, arXiv 1512.00727; Caffeine's
// FrequencySketch). It never counts a key below its true, aged count.

const DEPTH = 4
const MAX_COUNT = 15

export class FrequencySketch {
  /** @param {number} size the cache's size in entries */
  constructor (size) {
    let width = 16
    while (width < 2 * size && width < 2 ** 26) width *= 2
    this.width = width
    this.mask = width - 1
    /**
     * Made by allocate(), when the cache is half full (as Caffeine does): a
     * cache that never fills costs no sketch. Until then the sketch counts
     * nothing, and says 0.
     * @type {Uint8Array | null}
     */
    this.table = null
    this.sampleSize = Math.max(10 * size, 10)
    this.additions = 0
  }

  allocate () {
    if (this.table === null) this.table = new Uint8Array(DEPTH * this.width)
  }

  /** Count one more access of the key whose hash is `hash`. @param {number} hash */
  increment (hash) {
    if (this.table === null) return
    // Row i indexes by a + i * b (double hashing): two multiplications for
    // the four rows.
    const a = spread(hash)
    const b = spread(a) | 1
    const { table, mask, width } = this
    let added = false
    for (let row = 0, at = 0; row < DEPTH; row++, at += width) {
      const i = at + ((a + row * b) >>> 0 & mask)
      if (table[i] < MAX_COUNT) {
        table[i]++
        added = true
      }
    }
    if (added && ++this.additions >= this.sampleSize) this.age()
  }

  /** The estimated accesses of the key whose hash is `hash`. @param {number} hash */
  frequency (hash) {
    if (this.table === null) return 0
    const a = spread(hash)
    const b = spread(a) | 1
    const { table, mask, width } = this
    let min = MAX_COUNT
    for (let row = 0, at = 0; row < DEPTH; row++, at += width) {
      const count = table[at + ((a + row * b) >>> 0 & mask)]
      if (count < min) min = count
    }
    return min
  }

  /** Halve every counter: O(width), once per sampleSize increments, so O(1) per access. */
  age () {
    const table = /** @type {Uint8Array} */ (this.table)
    for (let i = 0; i < table.length; i++) table[i] >>>= 1
    this.additions >>>= 1
  }

  clear () {
    this.table = null
    this.additions = 0
  }
}

/**
 * Mix every bit of `hash` into the low bits the rows index by.
 * @param {number} hash
 */
function spread (hash) {
  const h = Math.imul(hash ^ (hash >>> 16), 0x45d9f3b)
  return h ^ (h >>> 15)
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
