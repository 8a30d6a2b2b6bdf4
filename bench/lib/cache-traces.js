// The access traces of bench/cache-policies.js, and what a cache of each
// policy, or Bélády's optimal offline policy, hits on them.
//
// A trace is an Int32Array of keys. Synthetic ones are drawn with a seeded
// PRNG (the same trace on every run); the public ones are read from
// bench/fixtures/traces/ (see its README.md for their source and licence).

import fs from 'node:fs'
import path from 'node:path'
import zlib from 'node:zlib'
import { fileURLToPath } from 'node:url'
import { prng } from 'levelkit-testkit/prng'
import { keyChooser } from './transactions-keys.js'

const fixtures = fileURLToPath(new URL('../fixtures/traces/', import.meta.url))

/**
 * @typedef {{ name: string, text: string, sizes: number[], keys: () => Int32Array }} TraceSpec
 */

/**
 * The traces, by name, each with the cache sizes to try. `length` scales
 * the synthetic ones (accesses); the public ones are what they are.
 * @param {number} length @param {number} seed
 * @returns {TraceSpec[]}
 */
export function traceSpecs (length, seed) {
  const zipf = (/** @type {number} */ s) => ({
    name: `zipf-${s.toFixed(1)}`,
    text: `Zipf s=${s.toFixed(1)} over 10,000 keys, ${length.toLocaleString('en-US')} accesses`,
    sizes: [100, 250, 500, 1000, 2000],
    keys: () => zipfTrace(length, 10000, s, seed)
  })
  return [
    {
      name: 'seed',
      text: `the seed's experiment: 250 keys, uniformly random, ${length.toLocaleString('en-US')} accesses (size 125 is the seed's)`,
      sizes: [25, 50, 125, 200],
      keys: () => uniformTrace(length, 250, seed)
    },
    zipf(0.8),
    zipf(1.0),
    zipf(1.2),
    {
      name: 'scan',
      text: 'a hot set of 500 keys (Zipf s=0.8), 5,000 accesses at a time, between one-time scans of 2,000 new keys',
      sizes: [250, 500, 750, 1000],
      keys: () => scanTrace(length, 500, 5000, 2000, seed)
    },
    {
      name: 'loop',
      text: 'keys 0..1,099 in order, again and again: a loop 10% larger than a cache of 1,000',
      sizes: [250, 500, 1000, 1050],
      keys: () => loopTrace(length, 1100)
    },
    {
      name: 'web07',
      text: 'cache2k web07 (CC BY 4.0): HTTP requests on a product page, 76,118 accesses, 20,484 keys',
      sizes: [300, 600, 1200, 3000],
      keys: () => readTrace('trace-mt-20130703.trc.bin.gz')
    },
    {
      name: 'web12',
      text: 'cache2k web12 (CC BY 4.0): HTTP requests on a product page, 95,607 accesses, 13,756 keys',
      sizes: [300, 600, 1200, 3000],
      keys: () => readTrace('trace-mt-20121220.trc.bin.gz')
    }
  ]
}

/** @param {number} length @param {number} keys @param {number} seed */
export function uniformTrace (length, keys, seed) {
  const random = prng(seed)
  const trace = new Int32Array(length)
  for (let i = 0; i < length; i++) trace[i] = random.int(keys)
  return trace
}

/** Key k drawn with probability proportional to k^-s. @param {number} length @param {number} keys @param {number} s @param {number} seed */
export function zipfTrace (length, keys, s, seed) {
  const random = prng(seed)
  const choose = keyChooser('hot', keys, s)
  const trace = new Int32Array(length)
  for (let i = 0; i < length; i++) trace[i] = choose(random)
  return trace
}

/**
 * `burst` accesses to a hot set (Zipf s=0.8), then `scan` keys never seen
 * before, in turn.
 * @param {number} length @param {number} hot @param {number} burst @param {number} scan @param {number} seed
 */
export function scanTrace (length, hot, burst, scan, seed) {
  const random = prng(seed)
  const choose = keyChooser('hot', hot, 0.8)
  const trace = new Int32Array(length)
  let fresh = hot + 1
  for (let i = 0; i < length;) {
    for (let j = 0; j < burst && i < length; j++) trace[i++] = choose(random)
    for (let j = 0; j < scan && i < length; j++) trace[i++] = fresh++
  }
  return trace
}

/** @param {number} length @param {number} keys */
export function loopTrace (length, keys) {
  const trace = new Int32Array(length)
  for (let i = 0; i < length; i++) trace[i] = i % keys
  return trace
}

/** A cache2k trace: gzip of big-endian int32 keys. @param {string} file */
export function readTrace (file) {
  const bytes = zlib.gunzipSync(fs.readFileSync(path.join(fixtures, file)))
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const trace = new Int32Array(bytes.byteLength >>> 2)
  for (let i = 0; i < trace.length; i++) trace[i] = view.getInt32(i * 4)
  return trace
}

/**
 * The hits of a cache read through on the trace: each access reads the
 * key, and on a miss writes it.
 * @param {{ get (key: any): any, set (key: any, value: any): any }} cache @param {Int32Array} trace
 */
export function hitsOf (cache, trace) {
  let hits = 0
  for (let i = 0; i < trace.length; i++) {
    const key = trace[i]
    if (cache.get(key) !== undefined) hits++
    else cache.set(key, 1)
  }
  return hits
}

/**
 * The hits of Bélády's optimal offline policy with `size` entries: on a
 * miss with the cache full, evict the entry whose next use is farthest in
 * the future, or keep nothing if that is the key just read (a policy may
 * decline to admit, as W-TinyLFU does: the bound must allow it too). No
 * policy can hit more. O(n log n): a max-heap of next uses, stale entries
 * skipped as they surface.
 * @param {Int32Array} trace @param {number} size
 */
export function optimalHits (trace, size) {
  const n = trace.length
  // The index of the next access of the same key; n + i when there is none,
  // distinct so that a heap entry is current iff the map still has it.
  const next = new Float64Array(n)
  /** @type {Map<number, number>} */
  const seen = new Map()
  for (let i = n - 1; i >= 0; i--) {
    next[i] = seen.get(trace[i]) ?? n + i
    seen.set(trace[i], i)
  }
  /** @type {Map<number, number>} next use by resident key */
  const resident = new Map()
  const heap = new MaxHeap()
  let hits = 0
  for (let i = 0; i < n; i++) {
    const key = trace[i]
    const nextUse = next[i]
    if (resident.has(key)) {
      hits++
      resident.set(key, nextUse)
      heap.push(nextUse, key)
    } else if (nextUse < n) {
      if (resident.size >= size) {
        while (resident.get(heap.topKey()) !== heap.topPriority()) heap.pop()
        if (heap.topPriority() < nextUse) continue
        resident.delete(heap.topKey())
        heap.pop()
      }
      resident.set(key, nextUse)
      heap.push(nextUse, key)
    }
    // Stale entries pile up on hits: rebuild from the resident keys now and then.
    if (heap.size > 4 * size + 64) {
      heap.size = 0
      for (const [k, use] of resident) heap.push(use, k)
    }
  }
  return hits
}

class MaxHeap {
  constructor () {
    this.priorities = new Float64Array(64)
    this.keys = new Int32Array(64)
    this.size = 0
  }

  topKey () { return this.keys[0] }
  topPriority () { return this.priorities[0] }

  /** @param {number} priority @param {number} key */
  push (priority, key) {
    if (this.size === this.keys.length) {
      const priorities = new Float64Array(2 * this.size)
      priorities.set(this.priorities)
      this.priorities = priorities
      const keys = new Int32Array(2 * this.size)
      keys.set(this.keys)
      this.keys = keys
    }
    const { priorities, keys } = this
    let i = this.size++
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (priorities[parent] >= priority) break
      priorities[i] = priorities[parent]
      keys[i] = keys[parent]
      i = parent
    }
    priorities[i] = priority
    keys[i] = key
  }

  pop () {
    const { priorities, keys } = this
    const last = --this.size
    const priority = priorities[last]
    const key = keys[last]
    let i = 0
    while (true) {
      let child = 2 * i + 1
      if (child >= last) break
      if (child + 1 < last && priorities[child + 1] > priorities[child]) child++
      if (priorities[child] <= priority) break
      priorities[i] = priorities[child]
      keys[i] = keys[child]
      i = child
    }
    priorities[i] = priority
    keys[i] = key
  }
}
