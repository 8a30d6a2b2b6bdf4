import { encode, encodeItems, ARRAY_START, ARRAY_END } from './tuple.js'
import { compareBytes, concatBytes } from './bytes.js'
import { decodeKey, decodeList, checkNumberList } from './stored.js'
import { Namespace } from './namespace.js'
import { tupleBounds, within } from './bounds.js'
import { after } from './model-handle.js'
import { isDefined } from './common.js'

const EMPTY = ''
// A positive number is its tag and eight bytes: a list of sequence ids is
// ARRAY_START, 9 bytes per id in id order, ARRAY_END.
const NUMBER_BYTES = 9

/**
 * @typedef {import('./write-scope.js').WriteScope} WriteScope
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
    this.namespace = new Namespace(root, name, 'utf8', { readCache: pointReads ? readCache : 0, listCache: readCache })
    this.kind = /** @type {const} */ ('edges')
  }

  /**
   * Whether the edge is stored: a value, or a promise of one where reads are asynchronous.
   * @param {(namespace: Namespace, key: Uint8Array) => any} read
   * @param {unknown} head @param {unknown} other
   * @returns {boolean | Promise<boolean>}
   */
  has (read, head, other) {
    return after(read(this.namespace, encode([head, other])), isDefined)
  }

  /**
   * A blind write: the caller has checked that the edge is new.
   * @param {WriteScope} scope @param {unknown} head @param {unknown} other
   * @returns {boolean}
   */
  add (scope, head, other) {
    scope.put(this.namespace, encode([head, other]), EMPTY)
    return true
  }

  /**
   * A blind delete: the caller has checked that the edge exists.
   * @param {WriteScope} scope @param {unknown} head @param {unknown} other
   * @returns {boolean}
   */
  remove (scope, head, other) {
    scope.del(this.namespace, encode([head, other]))
    return true
  }

  /**
   * The other ids of `head`'s edges, in id order, as the critical section sees them.
   * @param {WriteScope} scope @param {unknown} head
   * @returns {Promise<unknown[]>}
   */
  async others (scope, head) {
    const entries = await scope.entries(this.namespace, tupleBounds([head], {}), { values: false })
    return entries.map(([key]) => /** @type {unknown[]} */ (decodeKey(key, this.namespace))[1])
  }

  /** @param {WriteScope} scope @param {unknown} head @param {unknown[]} others */
  removeAll (scope, head, others) {
    for (const other of others) scope.del(this.namespace, encode([head, other]))
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
    this.namespace = new Namespace(root, name, 'view', { readCache })
    this.kind = /** @type {const} */ ('lists')
    this.sequenceIds = sequenceIds
  }

  /**
   * @param {(namespace: Namespace, key: Uint8Array) => any} read
   * @param {unknown} head @param {unknown} other
   * @returns {boolean | Promise<boolean>}
   */
  has (read, head, other) {
    const key = encode(head)
    return after(read(this.namespace, key), (/** @type {Uint8Array | undefined} */ value) => {
      if (value === undefined) return false
      if (this.sequenceIds) return numberPosition(checkNumberList(value, NUMBER_BYTES, this.namespace, key), encode(other)) >= 0
      return indexOf(decodeList(value, this.namespace, key), other) >= 0
    })
  }

  /**
   * The ids in the list of `head` (none when it has no list), read with `read`.
   * @param {(namespace: Namespace, key: Uint8Array) => any} read @param {unknown} head
   * @returns {unknown[] | Promise<unknown[]>}
   */
  list (read, head) {
    const key = encode(head)
    return after(read(this.namespace, key), (/** @type {Uint8Array | undefined} */ value) => this.#ids(value, key))
  }

  /**
   * The keys [head, other] an edge direction would hold for the list of
   * `head`, within `bounds`, in key order. A list of sequence ids is not
   * decoded: its items have a fixed size, so the bounds are found by binary
   * search and only the keys asked for are made.
   * @param {(namespace: Namespace, key: Uint8Array) => any} read @param {unknown} head
   * @param {import('./bounds.js').ByteBounds} bounds
   * @returns {import('./query.js').ListedKeys | Promise<import('./query.js').ListedKeys>}
   */
  keysWithin (read, head, bounds) {
    const key = encode(head)
    return after(read(this.namespace, key), (/** @type {Uint8Array | undefined} */ value) => {
      if (value === undefined) return []
      if (this.sequenceIds) return new SequenceListKeys(checkNumberList(value, NUMBER_BYTES, this.namespace, key), head, bounds)
      return this.#ids(value, key).map(other => encode([head, other])).filter(item => within(item, bounds))
    })
  }

  /**
   * Add `other` to the list of `head`, in order (a value where the read is
   * synchronous, else a promise).
   * @param {WriteScope} scope @param {unknown} head @param {unknown} other
   * @returns {boolean | Promise<boolean>} false if it was there already
   */
  add (scope, head, other) {
    const key = encode(head)
    return after(scope.get(this.namespace, key), (/** @type {Uint8Array | undefined} */ value) => {
      if (this.sequenceIds) {
        const item = encode(other)
        const at = value === undefined ? -1 : numberPosition(checkNumberList(value, NUMBER_BYTES, this.namespace, key), item)
        if (at >= 0) return false
        scope.put(this.namespace, key, value === undefined ? listOf(item) : spliceBytes(value, 1 + (-at - 1) * NUMBER_BYTES, 0, item))
        return true
      }
      const ids = this.#ids(value, key)
      const at = insertionPoint(ids, other)
      if (at < ids.length && compareIds(ids[at], other) === 0) return false
      ids.splice(at, 0, other)
      scope.put(this.namespace, key, encode(ids))
      return true
    })
  }

  /**
   * Add each of `others` to the list of `head`, in order, with one read and
   * at most one put of the list (add() of each in turn reads and puts it
   * each time): the same list as they would leave.
   * @param {WriteScope} scope @param {unknown} head @param {unknown[]} others
   * @param {Uint8Array[]} [otherKeys] the encodings of `others`, where the caller has them
   * @returns {unknown[] | Promise<unknown[]>} those that were not there already, in order
   */
  addAll (scope, head, others, otherKeys) {
    const key = encode(head)
    return after(scope.get(this.namespace, key), (/** @type {Uint8Array | undefined} */ value) => {
      if (this.sequenceIds && value !== undefined) checkNumberList(value, NUMBER_BYTES, this.namespace, key)
      if (this.sequenceIds && otherKeys !== undefined && allItems(otherKeys)) {
        return this.#addItems(scope, key, value, others, otherKeys)
      }
      const ids = this.#ids(value, key)
      const added = []
      for (const other of others) {
        const at = insertionPoint(ids, other)
        if (at < ids.length && compareIds(ids[at], other) === 0) continue
        ids.splice(at, 0, other)
        added.push(other)
      }
      if (added.length > 0) scope.put(this.namespace, key, encode(ids))
      return added
    })
  }

  /**
   * addAll() of sequence ids, with their encodings (a list's items): the
   * list as bytes, searched per new id and written in one merge of the
   * stored items with the new ones in id order, without decoding it or
   * encoding it again (per id, insertion into a decoded list and its
   * encoding made most of a bulk load's chat of 20 members).
   * @param {WriteScope} scope @param {Uint8Array} key @param {Uint8Array | undefined} value checked
   * @param {unknown[]} others @param {Uint8Array[]} items their encodings, NUMBER_BYTES each
   * @returns {unknown[]} those that were not there already, in order
   */
  #addItems (scope, key, value, others, items) {
    /** @type {unknown[]} */
    const added = []
    /** @type {Uint8Array[]} */
    const addedItems = []
    // Repeats are found by order while the new ids ascend (a chat's sorted
    // members), by a set of them once they do not. (Sequence ids are
    // numbers above zero, whose items sort as they do.)
    let ascending = true
    /** @type {Set<number> | null} */
    let seen = null
    let last = 0
    for (let i = 0; i < others.length; i++) {
      const other = /** @type {number} */ (others[i])
      const item = items[i]
      if (value !== undefined && numberPosition(value, item) >= 0) continue
      if (seen === null && other <= last) {
        seen = new Set(/** @type {number[]} */ (added))
        ascending = false
      }
      if (seen !== null) {
        if (seen.has(other)) continue
        seen.add(other)
      }
      last = other
      added.push(other)
      addedItems.push(item)
    }
    if (added.length === 0) return added
    const sorted = ascending ? addedItems : added.map((_, k) => k).sort((a, b) => /** @type {number} */ (added[a]) - /** @type {number} */ (added[b])).map(k => addedItems[k])
    const stored = value === undefined ? 0 : (value.length - 2) / NUMBER_BYTES
    const list = new Uint8Array(2 + (stored + sorted.length) * NUMBER_BYTES)
    list[0] = ARRAY_START
    list[list.length - 1] = ARRAY_END
    // One merge of two ascending runs (no id is in both).
    let from = 0
    let at = 1
    for (const item of sorted) {
      const start = from
      while (from < stored && compareItems(/** @type {Uint8Array} */ (value), 1 + from * NUMBER_BYTES, item) < 0) from++
      if (from > start) {
        list.set(/** @type {Uint8Array} */ (value).subarray(1 + start * NUMBER_BYTES, 1 + from * NUMBER_BYTES), at)
        at += (from - start) * NUMBER_BYTES
      }
      list.set(item, at)
      at += NUMBER_BYTES
    }
    if (from < stored) list.set(/** @type {Uint8Array} */ (value).subarray(1 + from * NUMBER_BYTES, /** @type {Uint8Array} */ (value).length - 1), at)
    scope.put(this.namespace, key, list)
    return added
  }

  /**
   * Remove `other` from the list of `head`, deleting a list left empty.
   * @param {WriteScope} scope @param {unknown} head @param {unknown} other
   * @returns {boolean | Promise<boolean>} false if it was not there
   */
  remove (scope, head, other) {
    const key = encode(head)
    return after(scope.get(this.namespace, key), (/** @type {Uint8Array | undefined} */ value) => {
      if (value === undefined) return false
      if (this.sequenceIds) {
        const at = numberPosition(checkNumberList(value, NUMBER_BYTES, this.namespace, key), encode(other))
        if (at < 0) return false
        if (value.length === 2 + NUMBER_BYTES) scope.del(this.namespace, key)
        else scope.put(this.namespace, key, spliceBytes(value, 1 + at * NUMBER_BYTES, NUMBER_BYTES))
        return true
      }
      const ids = this.#ids(value, key)
      const at = indexOf(ids, other)
      if (at === -1) return false
      ids.splice(at, 1)
      if (ids.length === 0) scope.del(this.namespace, key)
      else scope.put(this.namespace, key, encode(ids))
      return true
    })
  }

  /** @param {WriteScope} scope @param {unknown} head @returns {Promise<unknown[]>} */
  async others (scope, head) {
    const key = encode(head)
    return this.#ids(await scope.get(this.namespace, key), key)
  }

  /**
   * The ids in a stored list (none when there is no list).
   * @param {Uint8Array | undefined} value @param {Uint8Array} key
   * @returns {unknown[]}
   */
  #ids (value, key) {
    return value === undefined ? [] : decodeList(value, this.namespace, key)
  }

  /** @param {WriteScope} scope @param {unknown} head @param {unknown[]} others */
  removeAll (scope, head, others) {
    if (others.length > 0) scope.del(this.namespace, encode(head))
  }
}

/**
 * The keys [head, id] of the ids of a stored list of sequence ids that lie
 * within some bounds, by position, made when asked for.
 */
class SequenceListKeys {
  /**
   * @param {Uint8Array} list @param {unknown} head
   * @param {import('./bounds.js').ByteBounds} bounds
   */
  constructor (list, head, bounds) {
    this.list = list
    // Every key starts with the array's start and the head's encoding.
    this.base = concatBytes([ARRAY_START], encodeItems([head]))
    const count = (list.length - 2) / NUMBER_BYTES
    this.start = bounds.gte ? this.#firstAtOrAbove(bounds.gte, 0, count) : 0
    const end = bounds.lt ? this.#firstAtOrAbove(bounds.lt, this.start, count) : count
    this.length = end - this.start
  }

  /** @param {number} i @returns {Uint8Array | undefined} */
  at (i) {
    return i >= 0 && i < this.length ? this.#keyAt(this.start + i) : undefined
  }

  /** @param {number} position */
  #keyAt (position) {
    const base = this.base
    const key = new Uint8Array(base.length + NUMBER_BYTES + 1)
    key.set(base, 0)
    const from = 1 + position * NUMBER_BYTES
    key.set(this.list.subarray(from, from + NUMBER_BYTES), base.length)
    key[key.length - 1] = ARRAY_END
    return key
  }

  /**
   * The first position from `low` (up to `high`) whose key is at or above `bound`.
   * @param {Uint8Array} bound @param {number} low @param {number} high
   */
  #firstAtOrAbove (bound, low, high) {
    while (low < high) {
      const middle = (low + high) >>> 1
      if (compareBytes(this.#keyAt(middle), bound) < 0) low = middle + 1
      else high = middle
    }
    return low
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

/**
 * The byte order of the item at `at` of `bytes` and the item `item`
 * (NUMBER_BYTES each): below zero, zero or above.
 * @param {Uint8Array} bytes @param {number} at @param {Uint8Array} item
 */
function compareItems (bytes, at, item) {
  for (let i = 0; i < NUMBER_BYTES; i++) {
    const order = bytes[at + i] - item[i]
    if (order !== 0) return order
  }
  return 0
}

/** Whether each of `keys` is a list's item (NUMBER_BYTES long). @param {Uint8Array[]} keys */
function allItems (keys) {
  for (let i = 0; i < keys.length; i++) if (keys[i].length !== NUMBER_BYTES) return false
  return true
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

/**
 * The reverse direction of a relation whose forward direction keeps lists,
 * kept by IndexedDB itself: the direct layer mirrors each forward list in
 * levelkit's lists store, in the batch's transaction, and the store's
 * multiEntry index answers which lists hold an id (lib/idb-direct.js,
 * mirror() and listing()). It writes nothing: an edge is its forward list.
 * Only on a database levelkit opened (the lists store exists) whose stored
 * layout says so (RelationModel.settleLayout()).
 */
export class IndexDirection {
  /**
   * @param {ListDirection} forward the forward direction, mirrored
   * @param {ListDirection} lists the reverse lists this replaces: their
   *   namespace names the direction (queries, cursors) and holds nothing
   * @param {import('./idb-direct.js').IdbDirect} idb
   */
  constructor (forward, lists, idb) {
    this.forward = forward
    this.namespace = lists.namespace
    this.idb = idb
    this.kind = /** @type {const} */ ('index')
  }

  /**
   * Whether the forward list of `other` holds `head`.
   * @param {(namespace: Namespace, key: Uint8Array) => any} read
   * @param {unknown} head @param {unknown} other
   * @returns {boolean | Promise<boolean>}
   */
  has (read, head, other) {
    return this.forward.has(read, other, head)
  }

  /** Nothing to write: the forward list's mirror is the edge. @returns {boolean} */
  add () {
    return true
  }

  /** @returns {boolean} */
  remove () {
    return true
  }

  /** Nothing to remove. */
  removeAll () {}

  /**
   * The heads of the forward lists that hold `id`, in id order, as stored
   * (committed batches): one request on the index. Outside a write only.
   * @param {unknown} id @returns {Promise<unknown[]>}
   */
  async stored (id) {
    const keys = await this.idb.listing(this.forward.namespace, /** @type {number | string} */ (id), false)
    return keys.map(key => decodeKey(key, this.forward.namespace))
  }

  /**
   * The keys of the forward lists that hold `id`, in id order, each with
   * the value of its from-record, as stored: one request on the index when
   * its entries carry their records (IdbDirect.listingRecords()). Outside
   * a write only.
   * @param {unknown} id @returns {Promise<Array<[Uint8Array, any]>>}
   */
  storedRecords (id) {
    return this.idb.listingRecords(this.forward.namespace, /** @type {number | string} */ (id))
  }

  /**
   * The ids whose forward lists hold `head`, in id order, as the critical
   * section sees them: the index over what is written, and the section's
   * own pending lists on top (WriteScope.listing()).
   * @param {WriteScope} scope @param {unknown} head
   * @returns {Promise<unknown[]>}
   */
  async others (scope, head) {
    const keys = await scope.listing(this.forward.namespace, /** @type {number | string} */ (head))
    return keys.map(key => decodeKey(key, this.forward.namespace))
  }

  /**
   * The ids whose forward lists hold `head`, read in db.transaction() `tx`:
   * a range read over the whole forward namespace, so that the transaction
   * validates against any change to those lists (correct; it conflicts more
   * than a read of one list would).
   * @param {import('./transaction.js').Transaction} tx @param {unknown} head
   * @returns {Promise<unknown[]>}
   */
  async inTransaction (tx, head) {
    const namespace = this.forward.namespace
    const found = []
    for (const [key, value] of await tx.entries(namespace, {}, { values: true })) {
      const ids = decodeList(value, namespace, key)
      if (indexOf(ids, head) >= 0) found.push(decodeKey(key, namespace))
    }
    return found
  }
}
