// The building block of every policy: an entry (or a ghost: a key the
// policy remembers without its value) that sits in one doubly-linked list,
// so moving or dropping it is O(1), with no scan and no array shifting.

export class Node {
  /**
   * @param {any} key @param {any} value
   * @param {number} where the list it is in (each policy numbers its lists)
   * @param {number} hash the key's hash, for a frequency sketch (0 without one)
   */
  constructor (key, value, where, hash) {
    this.key = key
    this.value = value
    this.where = where
    this.hash = hash
    /** @type {Node} */
    this.prev = this
    /** @type {Node} */
    this.next = this
  }
}

/**
 * A circular list around a sentinel: the front is the most recently
 * used end, the back the least.
 */
export class List {
  constructor () {
    this.sentinel = new Node(undefined, undefined, -1, 0)
    this.size = 0
  }

  /** @param {Node} node not in any list */
  pushFront (node) {
    const first = this.sentinel.next
    node.prev = this.sentinel
    node.next = first
    first.prev = node
    this.sentinel.next = node
    this.size++
  }

  /** @param {Node} node in this list */
  remove (node) {
    node.prev.next = node.next
    node.next.prev = node.prev
    node.prev = node
    node.next = node
    this.size--
  }

  /** @param {Node} node in this list */
  moveToFront (node) {
    const sentinel = this.sentinel
    if (sentinel.next === node) return
    node.prev.next = node.next
    node.next.prev = node.prev
    const first = sentinel.next
    node.prev = sentinel
    node.next = first
    first.prev = node
    sentinel.next = node
  }

  /** The least recently used node; the sentinel itself when the list is empty. */
  back () {
    return this.sentinel.prev
  }

  clear () {
    this.sentinel.prev = this.sentinel
    this.sentinel.next = this.sentinel
    this.size = 0
  }
}

/**
 * What every policy shares: the statistics, and the callback told of each
 * entry it evicts (a byte budget counts on it).
 *
 * The policies' helpers are plain methods, not #private ones: on Node 20,
 * calling a private method on the get path made W-TinyLFU's gets about
 * half as fast (bench/cache-policies.js).
 */
export class Policy {
  /** @param {number} max entries @param {((key: any, value: any) => void) | null} onEvict */
  constructor (max, onEvict) {
    this.max = max
    this.onEvict = onEvict
    this.hits = 0
    this.misses = 0
    this.evictions = 0
  }

  stats () {
    return { hits: this.hits, misses: this.misses, evictions: this.evictions }
  }

  /** @param {Node} node an entry just evicted */
  evicted (node) {
    this.evictions++
    if (this.onEvict !== null) this.onEvict(node.key, node.value)
  }
}
