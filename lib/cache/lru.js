import { Policy } from './list.js'

// Slots are allocated as the cache fills, doubling up to its size: a cache
// of a million entries costs nothing until it holds them.
const FIRST_SLOTS = 64

/**
 * Least recently used: on a miss with the cache full, the entry read or
 * written longest ago goes. The recency list is two index arrays over
 * slots (as mnemonist's LRUMap): no object per entry, and moving an entry
 * touches a few numbers held side by side.
 */
export class LruCache extends Policy {
  /** @param {number} max @param {((key: any, value: any) => void) | null} [onEvict] */
  constructor (max, onEvict = null) {
    super(max, onEvict)
    /** @type {Map<any, number>} slot by key */
    this.map = new Map()
    const slots = Math.min(max, FIRST_SLOTS)
    /** @type {any[]} */
    this.keys = new Array(slots)
    /** @type {any[]} */
    this.values = new Array(slots)
    /** towards the least recently used */
    this.older = new Uint32Array(slots)
    /** towards the most recently used */
    this.newer = new Uint32Array(slots)
    this.head = 0
    this.tail = 0
    /** slots used so far (the high-water mark) */
    this.used = 0
    /** @type {number[]} slots freed by delete() */
    this.free = []
  }

  get size () {
    return this.map.size
  }

  /** @param {any} key */
  get (key) {
    const slot = this.map.get(key)
    if (slot === undefined) {
      this.misses++
      return undefined
    }
    this.hits++
    this.toFront(slot)
    return this.values[slot]
  }

  /** @param {any} key */
  has (key) {
    return this.map.has(key)
  }

  /** @param {any} key @param {any} value */
  set (key, value) {
    let slot = this.map.get(key)
    if (slot !== undefined) {
      this.values[slot] = value
      this.toFront(slot)
      return this
    }
    if (this.map.size >= this.max) {
      // The least recent entry's slot takes the new one.
      slot = this.tail
      const old = this.keys[slot]
      const oldValue = this.values[slot]
      this.map.delete(old)
      this.keys[slot] = key
      this.values[slot] = value
      this.map.set(key, slot)
      this.toFront(slot)
      this.evictions++
      if (this.onEvict !== null) this.onEvict(old, oldValue)
      return this
    }
    slot = this.free.length > 0 ? /** @type {number} */ (this.free.pop()) : this.newSlot()
    this.keys[slot] = key
    this.values[slot] = value
    if (this.map.size === 0) {
      this.tail = slot
    } else {
      this.newer[this.head] = slot
      this.older[slot] = this.head
    }
    this.head = slot
    this.map.set(key, slot)
    return this
  }

  /** The value of `key` without counting a hit or a miss, or moving it. @param {any} key */
  peek (key) {
    const slot = this.map.get(key)
    return slot === undefined ? undefined : this.values[slot]
  }

  /** Change the value of `key` if it is held, as a write the cache did not see used. @param {any} key @param {any} value */
  replace (key, value) {
    const slot = this.map.get(key)
    if (slot === undefined) return false
    this.values[slot] = value
    return true
  }

  /** Evict the entry the policy would evict next; false when empty. */
  evict () {
    if (this.map.size === 0) return false
    const key = this.keys[this.tail]
    const value = this.values[this.tail]
    this.delete(key)
    this.evictions++
    if (this.onEvict !== null) this.onEvict(key, value)
    return true
  }

  /** @param {any} key */
  delete (key) {
    const slot = this.map.get(key)
    if (slot === undefined) return false
    this.map.delete(key)
    if (this.map.size > 0) {
      if (slot === this.head) {
        this.head = this.older[slot]
      } else if (slot === this.tail) {
        this.tail = this.newer[slot]
      } else {
        this.newer[this.older[slot]] = this.newer[slot]
        this.older[this.newer[slot]] = this.older[slot]
      }
    }
    this.keys[slot] = undefined
    this.values[slot] = undefined
    this.free.push(slot)
    return true
  }

  clear () {
    this.map.clear()
    this.keys.fill(undefined)
    this.values.fill(undefined)
    this.used = 0
    this.free = []
  }

  /** @param {number} slot an entry's */
  toFront (slot) {
    if (slot === this.head) return
    const older = this.older[slot]
    const newer = this.newer[slot]
    if (slot === this.tail) this.tail = newer
    else this.newer[older] = newer
    this.older[newer] = older
    this.older[slot] = this.head
    this.newer[this.head] = slot
    this.head = slot
  }

  newSlot () {
    if (this.used === this.older.length) {
      const slots = Math.min(this.max, 2 * this.used)
      this.keys.length = slots
      this.values.length = slots
      const older = new Uint32Array(slots)
      older.set(this.older)
      this.older = older
      const newer = new Uint32Array(slots)
      newer.set(this.newer)
      this.newer = newer
    }
    return this.used++
  }
}
