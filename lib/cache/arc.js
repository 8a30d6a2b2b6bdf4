import { Node, List, Policy } from './list.js'

const T1 = 0
const T2 = 1
const B1 = 2
const B2 = 3

/**
 * ARC (Megiddo and Modha, FAST '03): T1 holds entries seen once recently,
 * T2 entries seen at least twice; B1 and B2 remember the keys (ghosts)
 * evicted from each. A miss on a ghost of B1 says T1 was too small, on B2
 * that T2 was: the target size `p` of T1 moves towards the list that
 * would have hit. Memory: at most `max` entries and `max` ghosts.
 *
 * As in the paper, with deletes added: a delete drops the entry or ghost,
 * so a cache with ghosts may have room, and then evicts nothing.
 */
export class ArcCache extends Policy {
  /** @param {number} max @param {((key: any, value: any) => void) | null} [onEvict] */
  constructor (max, onEvict = null) {
    super(max, onEvict)
    /** the target size of T1 */
    this.p = 0
    /** @type {Map<any, Node>} entries and ghosts */
    this.map = new Map()
    this.t1 = new List()
    this.t2 = new List()
    this.b1 = new List()
    this.b2 = new List()
  }

  get size () {
    return this.t1.size + this.t2.size
  }

  /** @param {any} key */
  get (key) {
    const node = this.map.get(key)
    if (node === undefined || node.where >= B1) {
      this.misses++
      return undefined
    }
    this.hits++
    this.toT2(node)
    return node.value
  }

  /** @param {any} key */
  has (key) {
    const node = this.map.get(key)
    return node !== undefined && node.where < B1
  }

  /** @param {any} key @param {any} value */
  set (key, value) {
    let node = this.map.get(key)
    if (node !== undefined && node.where < B1) {
      node.value = value
      this.toT2(node)
      return this
    }
    if (node !== undefined) {
      // A ghost: the list it was evicted from should have been larger.
      const inB2 = node.where === B2
      if (inB2) {
        this.p = Math.max(0, this.p - Math.max(this.b1.size / this.b2.size, 1))
      } else {
        this.p = Math.min(this.max, this.p + Math.max(this.b2.size / this.b1.size, 1))
      }
      if (this.full()) this.evictFor(inB2)
      ;(inB2 ? this.b2 : this.b1).remove(node)
      node.value = value
      node.where = T2
      this.t2.pushFront(node)
      return this
    }
    if (this.t1.size + this.b1.size >= this.max) {
      if (this.t1.size < this.max) {
        this.dropGhost(this.b1)
        if (this.full()) this.evictFor(false)
      } else {
        const lru = this.t1.back()
        this.t1.remove(lru)
        this.map.delete(lru.key)
        this.evicted(lru)
      }
    } else {
      const total = this.t1.size + this.t2.size + this.b1.size + this.b2.size
      if (total >= this.max) {
        if (total >= 2 * this.max) this.dropGhost(this.b2)
        if (this.full()) this.evictFor(false)
      }
    }
    node = new Node(key, value, T1, 0)
    this.t1.pushFront(node)
    this.map.set(key, node)
    return this
  }

  /** The value of `key` without counting a hit or a miss, or moving it. @param {any} key */
  peek (key) {
    const node = this.map.get(key)
    return node !== undefined && node.where < B1 ? node.value : undefined
  }

  /** Change the value of `key` if it is held, as a write the cache did not see used. @param {any} key @param {any} value */
  replace (key, value) {
    const node = this.map.get(key)
    if (node === undefined || !(node.where < B1)) return false
    node.value = value
    return true
  }

  /** Evict the entry the policy would evict next; false when empty. */
  evict () {
    if (this.t1.size + this.t2.size === 0) return false
    this.evictFor(false)
    return true
  }

  /** Drop the entry, or the ghost of the key. @param {any} key */
  delete (key) {
    const node = this.map.get(key)
    if (node === undefined) return false
    this.map.delete(key)
    this.listOf(node.where).remove(node)
    return node.where < B1
  }

  clear () {
    this.map.clear()
    this.t1.clear()
    this.t2.clear()
    this.b1.clear()
    this.b2.clear()
    this.p = 0
  }

  full () {
    return this.t1.size + this.t2.size >= this.max
  }

  /**
   * Evict one entry, from T1 or T2 as `p` says, and remember its key.
   * @param {boolean} inB2 the key being brought in is a ghost of B2
   */
  evictFor (inB2) {
    const t1 = this.t1.size
    const fromT1 = t1 > 0 && ((inB2 && t1 === this.p) || t1 > this.p || this.t2.size === 0)
    const node = (fromT1 ? this.t1 : this.t2).back()
    ;(fromT1 ? this.t1 : this.t2).remove(node)
    this.evicted(node)
    node.value = undefined
    node.where = fromT1 ? B1 : B2
    ;(fromT1 ? this.b1 : this.b2).pushFront(node)
  }

  /** @param {List} ghosts B1 or B2 */
  dropGhost (ghosts) {
    if (ghosts.size === 0) return
    const node = ghosts.back()
    ghosts.remove(node)
    this.map.delete(node.key)
  }

  /** @param {Node} node an entry of T1 or T2 */
  toT2 (node) {
    if (node.where === T2) {
      this.t2.moveToFront(node)
      return
    }
    this.t1.remove(node)
    node.where = T2
    this.t2.pushFront(node)
  }

  /** @param {number} where */
  listOf (where) {
    return where === T1 ? this.t1 : where === T2 ? this.t2 : where === B1 ? this.b1 : this.b2
  }
}
