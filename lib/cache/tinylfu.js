import { Node, List, Policy } from './list.js'
import { FrequencySketch, hashOf } from './sketch.js'

const WINDOW = 0
const PROBATION = 1
const PROTECTED = 2

/**
 * W-TinyLFU (Einziger, Friedman and Manes; Caffeine's policy with a fixed
 * window): a new entry enters a window LRU of 1% of the cache; pushed out
 * of it, it joins the probation segment of the main, segmented LRU, where
 * it must be more frequent (by a count-min sketch of recent accesses) than
 * the probation's least recent entry, or it is the one evicted. A hit in
 * probation moves an entry to the protected segment (80% of the main).
 * Memory: `max` entries and a sketch of about 8 bytes per entry; no ghosts.
 */
export class TinyLfuCache extends Policy {
  /** @param {number} max @param {((key: any, value: any) => void) | null} [onEvict] */
  constructor (max, onEvict = null) {
    super(max, onEvict)
    this.maxWindow = Math.max(1, Math.floor(max / 100))
    this.maxProtected = Math.floor((max - this.maxWindow) * 0.8)
    this.sketch = new FrequencySketch(max)
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
    this.#access(node)
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
      this.#access(node)
      return this
    }
    const hash = hashOf(key)
    this.sketch.increment(hash)
    node = new Node(key, value, WINDOW, hash)
    this.window.pushFront(node)
    this.map.set(key, node)
    if (this.window.size > this.maxWindow) this.#admit()
    return this
  }

  /** The window is over its size: its oldest entry tries to enter the main cache. */
  #admit () {
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
  #access (node) {
    this.sketch.increment(node.hash)
    if (node.where === WINDOW) {
      this.window.moveToFront(node)
    } else if (node.where === PROTECTED) {
      this.protected.moveToFront(node)
    } else {
      this.probation.remove(node)
      node.where = PROTECTED
      this.protected.pushFront(node)
      if (this.protected.size > this.maxProtected) {
        const demoted = this.protected.back()
        this.protected.remove(demoted)
        demoted.where = PROBATION
        this.probation.pushFront(demoted)
      }
    }
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
  }
}
