import { Node, List, Policy } from './list.js'

/**
 * Least recently used: on a miss with the cache full, the entry read or
 * written longest ago goes.
 */
export class LruCache extends Policy {
  /** @param {number} max @param {((key: any, value: any) => void) | null} [onEvict] */
  constructor (max, onEvict = null) {
    super(max, onEvict)
    /** @type {Map<any, Node>} */
    this.map = new Map()
    this.list = new List()
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
    this.list.moveToFront(node)
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
      this.list.moveToFront(node)
      return this
    }
    if (this.map.size >= this.max) {
      // The evicted node carries the new entry: no allocation once full.
      node = this.list.back()
      this.map.delete(node.key)
      this.evicted(node)
      node.key = key
      node.value = value
      this.list.moveToFront(node)
    } else {
      node = new Node(key, value, 0, 0)
      this.list.pushFront(node)
    }
    this.map.set(key, node)
    return this
  }

  /** @param {any} key */
  delete (key) {
    const node = this.map.get(key)
    if (node === undefined) return false
    this.map.delete(key)
    this.list.remove(node)
    return true
  }

  clear () {
    this.map.clear()
    this.list.clear()
  }
}
