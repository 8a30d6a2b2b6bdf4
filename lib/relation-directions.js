import { encode, decode, compareBytes, ARRAY_START, ARRAY_END } from './tuple.js'
import { Space } from './space.js'
import { tupleBounds } from './bounds.js'
import { after } from './scope.js'

const EMPTY = ''
// A positive number is its tag and eight bytes: a list of sequence ids is
// ARRAY_START, 9 bytes per id in id order, ARRAY_END.
const NUMBER_BYTES = 9

/**
 * @typedef {import('./transaction.js').Transaction} Transaction
 */

/**
 * One direction of a relation stored as edges: one empty value per
 * [head, other] key. Adding or removing an edge is one blind write; listing
 * a head's others is a range read.
 */
export class EdgeDirection {
  /**
   * @param {any} root @param {string} name
   * @param {number} readCache values (point reads of edges) and lists to keep
   * @param {boolean} pointReads whether has() reads this direction (so its values are worth caching)
   */
  constructor (root, name, readCache, pointReads) {
    this.space = new Space(root, name, 'utf8', { readCache: pointReads ? readCache : 0, listCache: readCache })
    this.kind = /** @type {const} */ ('edges')
  }

  /**
   * Whether the edge is stored: a value, or a promise of one where reads are asynchronous.
   * @param {(space: Space, key: Uint8Array) => any} read
   * @param {unknown} head @param {unknown} other
   * @returns {boolean | Promise<boolean>}
   */
  has (read, head, other) {
    return after(read(this.space, encode([head, other])), isDefined)
  }

  /**
   * A blind write: the caller has checked that the edge is new.
   * @param {Transaction} tx @param {unknown} head @param {unknown} other
   * @returns {boolean}
   */
  add (tx, head, other) {
    tx.put(this.space, encode([head, other]), EMPTY)
    return true
  }

  /**
   * A blind delete: the caller has checked that the edge exists.
   * @param {Transaction} tx @param {unknown} head @param {unknown} other
   * @returns {boolean}
   */
  remove (tx, head, other) {
    tx.del(this.space, encode([head, other]))
    return true
  }

  /**
   * The other ids of `head`'s edges, in id order, as the critical section sees them.
   * @param {Transaction} tx @param {unknown} head
   * @returns {Promise<unknown[]>}
   */
  async others (tx, head) {
    const entries = await tx.entries(this.space, tupleBounds([head], {}), { values: false })
    return entries.map(([key]) => /** @type {unknown[]} */ (decode(key))[1])
  }

  /** @param {Transaction} tx @param {unknown} head @param {unknown[]} others */
  removeAll (tx, head, others) {
    for (const other of others) tx.del(this.space, encode([head, other]))
  }
}

/**
 * One direction of a relation stored as lists: one value per head, the
 * tuple-encoded array of its others in id (tuple) order. Listing is one
 * point read; adding or removing an edge reads and rewrites the list, so it
 * suits lists of up to a few thousand ids.
 */
export class ListDirection {
  /**
   * @param {any} root @param {string} name @param {number} readCache
   * @param {boolean} sequenceIds whether the listed ids are sequence ids
   *   (positive integers): then a list is searched and changed as bytes,
   *   without decoding it
   */
  constructor (root, name, readCache, sequenceIds) {
    this.space = new Space(root, name, 'view', { readCache })
    this.kind = /** @type {const} */ ('lists')
    this.sequenceIds = sequenceIds
  }

  /**
   * @param {(space: Space, key: Uint8Array) => any} read
   * @param {unknown} head @param {unknown} other
   * @returns {boolean | Promise<boolean>}
   */
  has (read, head, other) {
    return after(read(this.space, encode(head)), (/** @type {Uint8Array | undefined} */ value) => {
      if (value === undefined) return false
      if (this.sequenceIds) return numberPosition(value, encode(other)) >= 0
      return indexOf(decodeList(value), other) >= 0
    })
  }

  /**
   * The ids in the list of `head` (none when it has no list), read with `read`.
   * @param {(space: Space, key: Uint8Array) => any} read @param {unknown} head
   * @returns {unknown[] | Promise<unknown[]>}
   */
  list (read, head) {
    return after(read(this.space, encode(head)), decodeList)
  }

  /**
   * Add `other` to the list of `head`, in order (a value where the read is
   * synchronous, else a promise).
   * @param {Transaction} tx @param {unknown} head @param {unknown} other
   * @returns {boolean | Promise<boolean>} false if it was there already
   */
  add (tx, head, other) {
    const key = encode(head)
    return after(tx.get(this.space, key), (/** @type {Uint8Array | undefined} */ value) => {
      if (this.sequenceIds) {
        const item = encode(other)
        const at = value === undefined ? -1 : numberPosition(value, item)
        if (at >= 0) return false
        tx.put(this.space, key, value === undefined ? listOf(item) : spliceBytes(value, 1 + (-at - 1) * NUMBER_BYTES, 0, item))
        return true
      }
      const ids = decodeList(value)
      const at = insertionPoint(ids, other)
      if (at < ids.length && compareIds(ids[at], other) === 0) return false
      ids.splice(at, 0, other)
      tx.put(this.space, key, encode(ids))
      return true
    })
  }

  /**
   * Remove `other` from the list of `head`, deleting a list left empty.
   * @param {Transaction} tx @param {unknown} head @param {unknown} other
   * @returns {boolean | Promise<boolean>} false if it was not there
   */
  remove (tx, head, other) {
    const key = encode(head)
    return after(tx.get(this.space, key), (/** @type {Uint8Array | undefined} */ value) => {
      if (value === undefined) return false
      if (this.sequenceIds) {
        const at = numberPosition(value, encode(other))
        if (at < 0) return false
        if (value.length === 2 + NUMBER_BYTES) tx.del(this.space, key)
        else tx.put(this.space, key, spliceBytes(value, 1 + at * NUMBER_BYTES, NUMBER_BYTES))
        return true
      }
      const ids = decodeList(value)
      const at = indexOf(ids, other)
      if (at === -1) return false
      ids.splice(at, 1)
      if (ids.length === 0) tx.del(this.space, key)
      else tx.put(this.space, key, encode(ids))
      return true
    })
  }

  /** @param {Transaction} tx @param {unknown} head @returns {Promise<unknown[]>} */
  async others (tx, head) {
    return decodeList(await tx.get(this.space, encode(head)))
  }

  /** @param {Transaction} tx @param {unknown} head @param {unknown[]} others */
  removeAll (tx, head, others) {
    if (others.length > 0) tx.del(this.space, encode(head))
  }
}

/**
 * Where the encoded number `item` is in a list of sequence ids, by binary
 * search over its 9-byte items: its index, or -(insertion point) - 1.
 * @param {Uint8Array} list @param {Uint8Array} item
 */
function numberPosition (list, item) {
  let low = 0
  let high = (list.length - 2) / NUMBER_BYTES
  while (low < high) {
    const middle = (low + high) >>> 1
    const start = 1 + middle * NUMBER_BYTES
    let order = 0
    for (let i = 0; i < NUMBER_BYTES && order === 0; i++) order = list[start + i] - item[i]
    if (order === 0) return middle
    if (order < 0) low = middle + 1
    else high = middle
  }
  return -low - 1
}

/** The list holding one encoded item. @param {Uint8Array} item */
function listOf (item) {
  const list = new Uint8Array(item.length + 2)
  list[0] = ARRAY_START
  list.set(item, 1)
  list[list.length - 1] = ARRAY_END
  return list
}

/**
 * A copy of `bytes` with `remove` bytes at `at` replaced by `insert`.
 * @param {Uint8Array} bytes @param {number} at @param {number} remove @param {Uint8Array} [insert]
 */
function spliceBytes (bytes, at, remove, insert) {
  const added = insert ? insert.length : 0
  const out = new Uint8Array(bytes.length - remove + added)
  out.set(bytes.subarray(0, at), 0)
  if (insert) out.set(insert, at)
  out.set(bytes.subarray(at + remove), at + added)
  return out
}

/** @param {Uint8Array | undefined} value a stored list @returns {unknown[]} */
export function decodeList (value) {
  return value === undefined ? [] : /** @type {unknown[]} */ (decode(value))
}

/**
 * Tuple order of two ids: numeric for numbers (sequence ids), else by their
 * encoding.
 * @param {unknown} a @param {unknown} b
 */
export function compareIds (a, b) {
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0
  return compareBytes(encode(a), encode(b))
}

/** The first position whose id is not below `id` (binary search). @param {unknown[]} ids @param {unknown} id */
function insertionPoint (ids, id) {
  let low = 0
  let high = ids.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (compareIds(ids[middle], id) < 0) low = middle + 1
    else high = middle
  }
  return low
}

/** @param {unknown[]} ids @param {unknown} id */
function indexOf (ids, id) {
  const at = insertionPoint(ids, id)
  return at < ids.length && compareIds(ids[at], id) === 0 ? at : -1
}

/** @param {unknown} value */
function isDefined (value) {
  return value !== undefined
}
