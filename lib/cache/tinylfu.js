import { Node, List, Policy } from './list.js'
import { FrequencySketch, hashOf } from './sketch.js'

const WINDOW = 0
const PROBATION = 1
const PROTECTED = 2

// Caffeine's hill climber (BoundedLocalCache): after each sample of 10 ×
// the size of accesses, move the window's size by a step, the same way if
// the hit rate rose, back if it fell; a change of 5 points or more restarts
// with a step of 6.25% of the size, else the step decays by 2% a sample.
// Unlike Caffeine, the first step grows the window: the first steps decide
// on a short trace, and on the web traces of bench/cache-policies.js
// shrinking first lost up to 3 points to LRU at 1,200 and 3,000 entries,
// growing first won 1-4 points over it (and lost up to 2 on Zipf).
const STEP_PERCENT = 0.0625
const RESTART_THRESHOLD = 0.05
const STEP_DECAY_RATE = 0.98
// Entries moved between segments at most per adjustment: O(1) per access.
const TRANSFER_LIMIT = 1000

/**
 * W-TinyLFU (Einziger, Friedman and Manes; Caffeine's policy): a new entry
 * enters a window LRU (1% of the cache at first); pushed out of it, it
 * joins the probation segment of the main, segmented LRU, where it must be
 * more frequent (by a count-min sketch of recent accesses) than the
 * probation's least recent entry, or it is the one evicted. A hit in
 * probation moves an entry to the protected segment (80% of the main). A
 * hill climber resizes the window as the hit rate says: large for traces
 * where recency wins, small where frequency does.
 * Memory: `max` entries, and once half full a sketch of 8 bytes per entry
 * of its size; no ghosts.
 */
export class TinyLfuCache extends Policy {
  /** @param {number} max @param {((key: any, value: any) => void) | null} [onEvict] */
  constructor (max, onEvict = null) {
    super(max, onEvict)
    this.maxWindow = max - Math.floor(0.99 * max)
    this.maxProtected = Math.floor((max - this.maxWindow) * 0.8)
    this.sketch = new FrequencySketch(max)
    this.sampleHits = 0
    this.sampleMisses = 0
    this.previousHitRate = 0
    this.stepSize = STEP_PERCENT * max
    /** @type {Map<any, Node>} */
    this.map = new Map()
    this.window = new List()
    this.probation = new List()
    this.protected = new List()
  }

  get size () {
    return this.map.size
  }

  /** @param {any} key */
  get (key) {
    const node = this.map.get(key)
    if (node === undefined) {
      this.misses++
      return undefined
    }
    this.hits++
    this.access(node)
    return node.value
  }

  /** @param {any} key */
  has (key) {
    return this.map.has(key)
  }

  /** @param {any} key @param {any} value */
  set (key, value) {
    let node = this.map.get(key)
    if (node !== undefined) {
      node.value = value
      this.access(node)
      return this
    }
    const hash = hashOf(key)
    if (this.sketch.table === null && 2 * (this.map.size + 1) >= this.max) this.sketch.allocate()
    this.sketch.increment(hash)
    node = new Node(key, value, WINDOW, hash)
    this.window.pushFront(node)
    this.map.set(key, node)
    if (this.window.size > this.maxWindow) this.admit()
    this.sampleMisses++
    this.climb()
    return this
  }

  /** The window is over its size: its oldest entry tries to enter the main cache. */
  admit () {
    const candidate = this.window.back()
    this.window.remove(candidate)
    candidate.where = PROBATION
    this.probation.pushFront(candidate)
    if (this.map.size <= this.max) return
    const victim = this.probation.back()
    const sketch = this.sketch
    const evict = sketch.frequency(candidate.hash) > sketch.frequency(victim.hash) ? victim : candidate
    this.probation.remove(evict)
    this.map.delete(evict.key)
    this.evicted(evict)
  }

  /** @param {Node} node */
  access (node) {
    this.sketch.increment(node.hash)
    if (node.where === WINDOW) {
      this.window.moveToFront(node)
    } else if (node.where === PROTECTED) {
      this.protected.moveToFront(node)
    } else {
      this.probation.remove(node)
      node.where = PROTECTED
      this.protected.pushFront(node)
      this.demote()
    }
    this.sampleHits++
    this.climb()
  }

  /** Move the protected segment's least recent entries to probation until it fits. */
  demote () {
    while (this.protected.size > this.maxProtected) {
      const demoted = this.protected.back()
      this.protected.remove(demoted)
      demoted.where = PROBATION
      this.probation.pushFront(demoted)
    }
  }

  /** At the end of a sample, resize the window by the hill climber's step. */
  climb () {
    // As Caffeine: no sample until the cache is half full (the warm-up's
    // rising hit rate would steer the climber).
    if (2 * this.map.size < this.max) {
      this.sampleHits = 0
      this.sampleMisses = 0
      return
    }
    const requests = this.sampleHits + this.sampleMisses
    if (requests < this.sketch.sampleSize) return
    const hitRate = this.sampleHits / requests
    const change = hitRate - this.previousHitRate
    const amount = change >= 0 ? this.stepSize : -this.stepSize
    this.stepSize = Math.abs(change) >= RESTART_THRESHOLD
      ? STEP_PERCENT * this.max * (amount >= 0 ? 1 : -1)
      : STEP_DECAY_RATE * amount
    this.previousHitRate = hitRate
    this.sampleHits = 0
    this.sampleMisses = 0
    const adjustment = Math.trunc(amount)
    if (adjustment > 0) this.growWindow(adjustment)
    else if (adjustment < 0) this.shrinkWindow(-adjustment)
  }

  /** @param {number} by entries taken from the protected segment's share */
  growWindow (by) {
    let quota = Math.min(by, this.maxProtected)
    if (quota === 0) return
    this.maxProtected -= quota
    this.maxWindow += quota
    this.demote()
    // Fill the window's new room with the main's least recent entries.
    for (let i = 0; i < TRANSFER_LIMIT && quota > 0; i++) {
      const from = this.probation.size > 0 ? this.probation : this.protected
      if (from.size === 0) break
      const node = from.back()
      from.remove(node)
      node.where = WINDOW
      this.window.pushFront(node)
      quota--
    }
    // Room left unfilled goes back to the main.
    this.maxProtected += quota
    this.maxWindow -= quota
  }

  /** @param {number} by entries given to the protected segment's share */
  shrinkWindow (by) {
    let quota = Math.min(by, Math.max(0, this.maxWindow - 1))
    if (quota === 0) return
    this.maxProtected += quota
    this.maxWindow -= quota
    for (let i = 0; i < TRANSFER_LIMIT && quota > 0 && this.window.size > 0; i++) {
      const node = this.window.back()
      this.window.remove(node)
      node.where = PROBATION
      this.probation.pushFront(node)
      quota--
    }
    this.maxProtected -= quota
    this.maxWindow += quota
  }

  /** The value of `key` without counting a hit or a miss, or moving it. @param {any} key */
  peek (key) {
    return this.map.get(key)?.value
  }

  /** Change the value of `key` if it is held, as a write the cache did not see used. @param {any} key @param {any} value */
  replace (key, value) {
    const node = this.map.get(key)
    if (node === undefined) return false
    node.value = value
    return true
  }

  /** Evict the entry the policy would evict next (probation's least recent first); false when empty. */
  evict () {
    const list = this.probation.size > 0 ? this.probation : this.window.size > 0 ? this.window : this.protected
    if (list.size === 0) return false
    const node = list.back()
    list.remove(node)
    this.map.delete(node.key)
    this.evicted(node)
    return true
  }

  /** @param {any} key */
  delete (key) {
    const node = this.map.get(key)
    if (node === undefined) return false
    this.map.delete(key)
    const list = node.where === WINDOW ? this.window : node.where === PROTECTED ? this.protected : this.probation
    list.remove(node)
    return true
  }

  clear () {
    this.map.clear()
    this.window.clear()
    this.probation.clear()
    this.protected.clear()
    this.sketch.clear()
    this.sampleHits = 0
    this.sampleMisses = 0
  }
}
