import { Node, List, Policy } from './list.js'

const IN = 0
const MAIN = 1
const OUT = 2

/**
 * 2Q (Johnson and Shasha, VLDB '94), the full version: a key seen once
 * enters A1in, a FIFO of a quarter of the cache; evicted from there, its key
 * is remembered in A1out, a FIFO of ghosts (keys without values) of half the
 * size; a miss on a ghost enters Am, an LRU of the rest. Keys read once in
 * a scan pass through A1in without pushing out Am. Memory: at most `max`
 * entries plus `max / 2` ghosts.
 */
export class TwoQueueCache extends Policy {
  /** @param {number} max @param {((key: any, value: any) => void) | null} [onEvict] */
  constructor (max, onEvict = null) {
    super(max, onEvict)
    this.maxIn = Math.max(1, Math.floor(max / 4))
    this.maxOut = Math.max(1, Math.floor(max / 2))
    /** @type {Map<any, Node>} entries and ghosts */
    this.map = new Map()
    this.in = new List()
    this.main = new List()
    this.out = new List()
  }

  get size () {
    return this.in.size + this.main.size
  }

  /** @param {any} key */
  get (key) {
    const node = this.map.get(key)
    if (node === undefined || node.where === OUT) {
      this.misses++
      return undefined
    }
    this.hits++
    // A1in is a FIFO: a hit there does not move the entry.
    if (node.where === MAIN) this.main.moveToFront(node)
    return node.value
  }

  /** @param {any} key */
  has (key) {
    const node = this.map.get(key)
    return node !== undefined && node.where !== OUT
  }

  /** @param {any} key @param {any} value */
  set (key, value) {
    let node = this.map.get(key)
    if (node !== undefined && node.where !== OUT) {
      node.value = value
      if (node.where === MAIN) this.main.moveToFront(node)
      return this
    }
    if (node !== undefined) {
      this.out.remove(node)
      this.reclaim()
      node.value = value
      node.where = MAIN
      this.main.pushFront(node)
      return this
    }
    this.reclaim()
    node = new Node(key, value, IN, 0)
    this.in.pushFront(node)
    this.map.set(key, node)
    return this
  }

  /** The value of `key` without counting a hit or a miss, or moving it. @param {any} key */
  peek (key) {
    const node = this.map.get(key)
    return node !== undefined && node.where !== OUT ? node.value : undefined
  }

  /** Change the value of `key` if it is held, as a write the cache did not see used. @param {any} key @param {any} value */
  replace (key, value) {
    const node = this.map.get(key)
    if (node === undefined || !(node.where !== OUT)) return false
    node.value = value
    return true
  }

  /** Evict the entry the policy would evict next; false when empty. */
  evict () {
    if (this.in.size + this.main.size === 0) return false
    this.reclaim(true)
    return true
  }

  /** Make room for one entry (evict one even if there is room: `force`). */
  reclaim (force = false) {
    if (!force && this.in.size + this.main.size < this.max) return
    if (this.in.size > this.maxIn || this.main.size === 0) {
      const node = this.in.back()
      this.in.remove(node)
      this.evicted(node)
      node.value = undefined
      node.where = OUT
      this.out.pushFront(node)
      if (this.out.size > this.maxOut) {
        const ghost = this.out.back()
        this.out.remove(ghost)
        this.map.delete(ghost.key)
      }
    } else {
      const node = this.main.back()
      this.main.remove(node)
      this.map.delete(node.key)
      this.evicted(node)
    }
  }

  /** Drop the entry, and the ghost of the key if there is one. @param {any} key */
  delete (key) {
    const node = this.map.get(key)
    if (node === undefined) return false
    this.map.delete(key)
    this.listOf(node.where).remove(node)
    return node.where !== OUT
  }

  clear () {
    this.map.clear()
    this.in.clear()
    this.main.clear()
    this.out.clear()
  }

  /** @param {number} where */
  listOf (where) {
    return where === IN ? this.in : where === MAIN ? this.main : this.out
  }
}
