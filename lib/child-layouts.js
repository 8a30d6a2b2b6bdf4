import { encode, decode } from './tuple.js'
import { compareBytes, bytesToBinaryString, concatBytes } from './bytes.js'
import { Namespace } from './namespace.js'
import { tupleBounds, within } from './bounds.js'
import { layout } from './names.js'
import { decodeError } from './errors.js'
import { describe } from './common.js'
import { decodeKey } from './stored.js'
import { BACKEND_LIMIT } from './query.js'
import { isJson } from './json-value.js'

/**
 * How a set of ordered children is stored. Both layouts answer the same
 * questions, so `children.js` does not know which one it uses:
 *
 * - `KeyPerChild` (the default): `<name>` holds [parentId, seq] -> value.
 * - `ChildBlocks` (`blockSize: n`): `<name>.blocks` holds [parentId, first]
 *   -> the JSON array of the [seq, value] pairs of seqs first .. first+n-1,
 *   in seq order. A page of 50 children is then about 50 / n + 1 point
 *   reads instead of 50, and an append rewrites one block (the newest, so
 *   usually in the read cache or in the overlay of unwritten ops).
 *
 * @typedef {import('./write-scope.js').WriteScope} WriteScope
 * @typedef {import('./bounds.js').ByteBounds} ByteBounds
 * @typedef {Pick<import('./query.js').QuerySource, 'namespace' | 'values' | 'load' | 'scan'>} LayoutSource
 *   what a layout adds to the Query source of a range of children
 */

// Blocks whose text this process wrote, remembered so that an append need
// not parse its block to know it is sound (parsing a block of 16 chat
// messages costs about 6 µs): enough for the blocks being appended to,
// bounded (past it, it starts over).
const SOUND_LIMIT = 1024

// Tag of a non-negative number in the tuple encoding (lib/tuple.js); the
// tags of the other types sort below it (null, booleans, negative numbers)
// or above it (Infinity, bytes, strings, arrays).
const POS = 0x42

export class KeyPerChild {
  /**
   * @param {any} root @param {string} name @param {number} readCache
   */
  constructor (root, name, readCache) {
    this.blockSize = 1
    this.namespace = new Namespace(root, layout.records(name), 'utf8', { readCache })
  }

  /** The first seq of the stored value that holds child `seq`: its own. @param {number} seq */
  first (seq) {
    return seq
  }

  /** The key of the stored value that holds child `seq`. @param {unknown} parentId @param {number} seq */
  keyOf (parentId, seq) {
    return encode([parentId, seq])
  }

  /**
   * What a stored value holds, parsed (undefined: nothing).
   * @param {string | undefined} stored @param {unknown} parentId @param {Uint8Array} key where it is stored
   */
  parse (stored, parentId, key) {
    return stored === undefined ? undefined : parseChild(this.namespace, stored, parentId, key)
  }

  /** The value of child `seq` in what `parse` returned, or undefined. @param {any} parsed @param {number} seq */
  find (parsed, seq) {
    return parsed
  }

  /** @param {WriteScope} scope @param {unknown} parentId @param {number} seq @param {string} json */
  append (scope, parentId, seq, json) {
    scope.put(this.namespace, encode([parentId, seq]), json)
  }

  /** What append() reads: nothing (a read hint, lib/writer.js readHints). @param {unknown} parentId @returns {import('./writer.js').ReadHint[]} */
  appendReads (parentId) {
    return []
  }

  /** Append `jsons` as the children from seq `from` on. @param {WriteScope} scope @param {unknown} parentId @param {number} from @param {string[]} jsons */
  appendMany (scope, parentId, from, jsons) {
    for (let k = 0; k < jsons.length; k++) this.append(scope, parentId, from + k, jsons[k])
  }

  /**
   * Replace an existing child. @returns {Promise<boolean>} false if there is none
   * @param {WriteScope} scope @param {unknown} parentId @param {number} seq @param {string} json
   */
  async replace (scope, parentId, seq, json) {
    const key = encode([parentId, seq])
    if (await scope.get(this.namespace, key) === undefined) return false
    scope.put(this.namespace, key, json)
    return true
  }

  /** @param {WriteScope} scope @param {unknown} parentId @param {number} seq @returns {Promise<boolean>} */
  async remove (scope, parentId, seq) {
    const key = encode([parentId, seq])
    if (await scope.get(this.namespace, key) === undefined) return false
    scope.del(this.namespace, key)
    return true
  }

  /**
   * The keys holding a parent's children and how many children they hold.
   * @param {WriteScope} scope @param {unknown} parentId @param {boolean} counting
   * @returns {Promise<{ keys: Uint8Array[], count: number }>}
   */
  async stored (scope, parentId, counting) {
    const entries = await scope.entries(this.namespace, tupleBounds([parentId], {}), { values: false })
    return { keys: entries.map(entry => entry[0]), count: entries.length }
  }

  /**
   * On IndexedDB: the stored children within `bounds` (over [parentId, seq]
   * keys), at most `limit`, as raw [key, value] entries, in one request
   * (IdbDirect.entries()), with the raw values of `keys` read beside them;
   * nothing if `visible` says no to those values.
   * @param {import('./idb-direct.js').IdbDirect} idb @param {unknown} parentId @param {ByteBounds} bounds
   * @param {boolean} reverse @param {number} limit @param {Array<[Namespace, Uint8Array]>} keys
   * @param {(values: any[]) => boolean} visible
   * @returns {AsyncGenerator<Array<[Uint8Array, any]>>}
   */
  async * direct (idb, parentId, bounds, reverse, limit, keys, visible) {
    const [entries, values] = await idb.entriesWith(this.namespace, bounds, { reverse, limit }, keys, false)
    if (visible(values) && entries.length > 0) yield entries
  }

  /**
   * The Query source fields that read `parentId`'s children within `bounds`
   * (over [parentId, seq] keys).
   * @param {unknown} parentId
   * @returns {LayoutSource}
   */
  source (parentId) {
    return {
      namespace: this.namespace,
      values: true,
      load: entries => entries.map(([key, value]) => [seqOf(key, this.namespace), parseChild(this.namespace, value, parentId, key), key])
    }
  }
}

export class ChildBlocks {
  /** @type {Map<string, string>} the sound text of a block, by bytesToBinaryString(key): see SOUND_LIMIT */
  #sound = new Map()
  /**
   * The newest block known of each parent (appendReads()'s guess): its
   * first seq, and its last one where this process appended it (null when
   * another process wrote it, heard()); bounded as #sound.
   * @type {Map<unknown, { first: number, last: number | null }>}
   */
  #latest = new Map()

  /**
   * @param {any} root @param {string} name @param {number} blockSize @param {number} readCache
   */
  constructor (root, name, blockSize, readCache) {
    this.blockSize = blockSize
    this.namespace = new Namespace(root, layout.blocks(name), 'utf8', { readCache })
  }

  /** The first seq of the block holding `seq`. @param {number} seq */
  first (seq) {
    return seq - (seq - 1) % this.blockSize
  }

  /**
   * Whether a stored block is a block of this size: aligned to it, holding
   * only children of its own seqs. One that does not parse counts as one
   * (nothing can be moved out of it; check() reports it).
   * @param {Uint8Array} key @param {string} text
   */
  aligned (key, text) {
    const first = firstOf(key, this.namespace)
    let pairs
    try {
      pairs = parseBlock(text)
    } catch {
      return true
    }
    return this.first(first) === first && pairs.every(pair => this.first(pair[0]) === first)
  }

  /** @param {unknown} parentId @param {number} seq */
  keyOf (parentId, seq) {
    return encode([parentId, this.first(seq)])
  }

  /**
   * The pairs of a stored block (undefined: none).
   * @param {string | undefined} stored @param {unknown} parentId @param {Uint8Array} key where it is stored
   * @returns {Array<[number, any]> | undefined}
   */
  parse (stored, parentId, key) {
    if (stored === undefined) return undefined
    try {
      return parseBlock(stored)
    } catch (err) {
      throw unreadable(this.namespace, `block from ${firstOf(key, this.namespace)} of parent ${describe(parentId)}`, err, { parentId, first: firstOf(key, this.namespace) })
    }
  }

  /** @param {Array<[number, any]> | undefined} pairs @param {number} seq */
  find (pairs, seq) {
    if (pairs === undefined) return undefined
    const i = indexOf(pairs, seq)
    return i >= 0 ? pairs[i][1] : undefined
  }

  /**
   * Append `jsons` as the children from seq `from` on: what append() one by
   * one stores, each block read, checked and built once. Appending one by
   * one rebuilt a block's whole text per child (a block of n children made
   * n texts of up to n children each, all but the last dropped at once):
   * the garbage that made appendMany()'s bulk loads GC-bound.
   * @param {WriteScope} scope @param {unknown} parentId @param {number} from @param {string[]} jsons
   */
  async appendMany (scope, parentId, from, jsons) {
    let i = 0
    while (i < jsons.length) {
      const seq = from + i
      const first = this.first(seq)
      // The children of this block: up to its end, or the last given.
      const end = Math.min(jsons.length, i + this.blockSize - (seq - first))
      const pairs = []
      for (let k = i; k < end; k++) pairs.push(`[${from + k},${jsons[k]}]`)
      const key = encode([parentId, first])
      const name = bytesToBinaryString(key)
      // A child that starts a block starts a new one: no child above the
      // parent's sequence is stored (check() reports one as sequence-behind),
      // so nothing is there to read. Where reads are round trips (IndexedDB),
      // that is one per blockSize appends saved, in the middle of a section.
      const block = first === seq ? undefined : await scope.get(this.namespace, key)
      // The new children have the highest seqs: they go last, and the
      // block's other values are kept as stored, without parsing them, once
      // the block is known to be sound. One that does not parse is refused,
      // not appended to: the new children would be lost in it.
      if (block !== undefined && this.#sound.get(name) !== block) this.parse(block, parentId, key)
      this.#put(scope, key, name, block === undefined ? `[${pairs.join(',')}]` : `${block.slice(0, -1)},${pairs.join(',')}]`)
      i = end
    }
    if (jsons.length > 0) {
      const last = from + jsons.length - 1
      this.#note(parentId, this.first(last), last)
    }
  }

  /** @param {WriteScope} scope @param {unknown} parentId @param {number} seq @param {string} json */
  append (scope, parentId, seq, json) {
    return this.appendMany(scope, parentId, seq, [json])
  }

  /**
   * What the next append() to `parentId` will read, as a read hint
   * (lib/writer.js readHints), guessed from the newest block known of it
   * (appended here, or heard of from another process): that block and the
   * one after, where other processes' appends unheard of yet would have
   * gone past it (only the one after when the seq after the last this
   * process appended starts it: the append reads none, unless another
   * process appended since). A guess only: a wrong one costs its keys in
   * the statement for nothing, and the append its own read. (Making the
   * block's key from the sequence's value in the statement, as the append
   * does, costs PostgreSQL more than a round trip saved: bench/RESULTS.md.)
   * @param {unknown} parentId
   * @returns {import('./writer.js').ReadHint[]}
   */
  appendReads (parentId) {
    const latest = this.#latest.get(parentId)
    if (latest === undefined) return []
    const { first, last } = latest
    const after = encode([parentId, first + this.blockSize])
    const keys = last !== null && this.first(last + 1) === last + 1 ? [after] : [encode([parentId, first]), after]
    return [{ namespace: this.namespace, keys }]
  }

  /**
   * Another process wrote the block at `key` (lib/children.js hears it):
   * the newest of its parent, if none newer is known.
   * @param {Uint8Array} key
   */
  heard (key) {
    let parentId, first
    try {
      [parentId, first] = /** @type {[unknown, number]} */ (decodeKey(key, this.namespace))
    } catch {
      return
    }
    if (typeof first === 'number') this.#note(parentId, first, null)
  }

  /**
   * The newest block known of `parentId` is at `first`, and `last` is the
   * last seq this process appended there (null: unknown, and then an
   * older block than the one known is not taken: what this process just
   * appended is).
   * @param {unknown} parentId @param {number} first @param {number | null} last
   */
  #note (parentId, first, last) {
    // (Ids that are values only: a Map would keep an object id alive, and never find it again.)
    if (typeof parentId === 'object') return
    const known = this.#latest.get(parentId)
    if (known !== undefined && last === null && first < known.first) return
    if (known === undefined && this.#latest.size >= SOUND_LIMIT) this.#latest.clear()
    this.#latest.set(parentId, { first, last })
  }

  /**
   * Write a block's text, and remember it is sound.
   * @param {WriteScope} scope @param {Uint8Array} key @param {string} name bytesToBinaryString(key) @param {string} text
   */
  #put (scope, key, name, text) {
    if (this.#sound.size >= SOUND_LIMIT) this.#sound.clear()
    this.#sound.set(name, text)
    scope.put(this.namespace, key, text)
  }

  /** @param {WriteScope} scope @param {unknown} parentId @param {number} seq @param {string} json */
  async replace (scope, parentId, seq, json) {
    return this.#change(scope, parentId, seq, pairs => pairs.splice(indexOf(pairs, seq), 1, [seq, JSON.parse(json)]))
  }

  /** @param {WriteScope} scope @param {unknown} parentId @param {number} seq */
  async remove (scope, parentId, seq) {
    return this.#change(scope, parentId, seq, pairs => pairs.splice(indexOf(pairs, seq), 1))
  }

  /**
   * Change child `seq`'s block with `edit`, if the block holds it.
   * @param {WriteScope} scope @param {unknown} parentId @param {number} seq
   * @param {(pairs: Array<[number, any]>) => void} edit
   */
  async #change (scope, parentId, seq, edit) {
    const key = encode([parentId, this.first(seq)])
    const pairs = this.parse(await scope.get(this.namespace, key), parentId, key)
    if (pairs === undefined || indexOf(pairs, seq) < 0) return false
    edit(pairs)
    if (pairs.length === 0) scope.del(this.namespace, key)
    else this.#put(scope, key, bytesToBinaryString(key), JSON.stringify(pairs))
    return true
  }

  /**
   * The keys holding a parent's children, and with `counting` how many
   * children they hold (which parses every block: without, a block that
   * does not parse is deleted with the others).
   * @param {WriteScope} scope @param {unknown} parentId @param {boolean} counting
   */
  async stored (scope, parentId, counting) {
    const entries = await scope.entries(this.namespace, tupleBounds([parentId], {}), { values: counting })
    let count = 0
    if (counting) for (const [key, block] of entries) count += /** @type {Array<[number, any]>} */ (this.parse(block, parentId, key)).length
    return { keys: entries.map(entry => entry[0]), count }
  }

  /**
   * Blocks are read with an iterator over the blocks that may hold a child
   * within the bounds, and their children that are within are kept.
   * @param {unknown} parentId
   * @returns {LayoutSource}
   */
  source (parentId) {
    return {
      namespace: this.namespace,
      values: true,
      scan: (bounds, reverse, tx) => this.#scan(parentId, bounds, reverse, tx),
      load: entries => entries.map(([key, pair]) => [pair[0], pair[1], key])
    }
  }

  /**
   * @param {unknown} parentId @param {ByteBounds} bounds @param {boolean} reverse
   * @param {import('./transaction.js').Transaction} [tx] read the blocks in this transaction
   * @returns {AsyncGenerator<Array<[Uint8Array, [number, any]]>>}
   */
  async * #scan (parentId, bounds, reverse, tx) {
    const within = this.#within(parentId, bounds)
    if (within === null) return
    const { blockBounds } = within
    const it = tx === undefined
      ? this.namespace.sublevel.iterator({ ...blockBounds, reverse })
      : transactionBlocks(tx, this.namespace, blockBounds, reverse)
    try {
      // A first small read: a page of recent children is in the last blocks.
      for (let blocks = await it.nextv(4); blocks.length > 0; blocks = await it.nextv(32)) {
        const entries = this.#children(parentId, blocks, reverse, within, bounds, Infinity)
        if (entries.length > 0) yield entries
      }
    } finally {
      await it.close()
    }
  }

  /**
   * On IndexedDB: the children within `bounds`, at most `limit` (in
   * chunks, as [key, [seq, value]] entries): the blocks that hold them read
   * with one request (IdbDirect.entries(), as many blocks as `limit`
   * children fill), more only if those blocks held fewer (children deleted
   * one by one); the first with the raw values of `keys` read beside it,
   * and nothing if `visible` says no to those values. Blocks past the
   * limit are not parsed.
   * @param {import('./idb-direct.js').IdbDirect} idb @param {unknown} parentId @param {ByteBounds} bounds
   * @param {boolean} reverse @param {number} limit @param {Array<[Namespace, Uint8Array]>} keys
   * @param {(values: any[]) => boolean} visible
   * @returns {AsyncGenerator<Array<[Uint8Array, [number, any]]>>}
   */
  async * direct (idb, parentId, bounds, reverse, limit, keys, visible) {
    const within = this.#within(parentId, bounds)
    if (within === null) return
    let blockBounds = within.blockBounds
    // The first block read may hold only one child within the bounds.
    const needed = Math.ceil(limit / this.blockSize) + 1
    let count = needed > BACKEND_LIMIT ? undefined : needed
    let remaining = limit
    const first = await idb.entriesWith(this.namespace, blockBounds, { reverse, limit: count }, keys, false)
    if (!visible(first[1])) return
    let blocks = first[0]
    while (true) {
      const entries = this.#children(parentId, blocks, reverse, within, bounds, remaining)
      remaining -= entries.length
      if (entries.length > 0) yield entries
      if (remaining <= 0 || count === undefined || blocks.length < count) return
      // Past the last block read.
      const last = blocks[blocks.length - 1][0]
      blockBounds = reverse ? { gte: blockBounds.gte, lt: last } : { gte: concatBytes(last, [0]), lt: blockBounds.lt }
      count = Math.max(count, 32)
      blocks = await idb.entries(this.namespace, blockBounds, { reverse, limit: count }, false)
    }
  }

  /**
   * The seqs a child within `bounds` may have, and the bounds of the blocks
   * that may hold them; null if none can be within.
   * @param {unknown} parentId @param {ByteBounds} bounds
   * @returns {{ lo: number, hi: number, blockBounds: ByteBounds } | null}
   */
  #within (parentId, bounds) {
    const base = /** @type {Uint8Array} */ (tupleBounds([parentId], {}).gte)
    const lo = Math.max(1, lowestSeq(base, bounds.gte))
    const hi = highestSeq(base, bounds.lt)
    if (lo > hi || lo === Infinity) return null
    const blockRange = { gte: this.first(lo), lte: hi === Infinity ? undefined : this.first(hi) }
    return { lo, hi, blockBounds: tupleBounds([parentId], blockRange) }
  }

  /**
   * The children of stored `blocks` that are within `bounds`, in the order
   * read (each block's reversed when `reverse`), at most `max`: the blocks
   * after those are not parsed.
   * @param {unknown} parentId @param {Array<[Uint8Array, any]>} blocks @param {boolean} reverse
   * @param {{ lo: number, hi: number }} within @param {ByteBounds} bounds @param {number} max
   * @returns {Array<[Uint8Array, [number, any]]>}
   */
  #children (parentId, blocks, reverse, { lo, hi }, bounds, max) {
    /** @type {Array<[Uint8Array, [number, any]]>} */
    const entries = []
    for (const [key, block] of blocks) {
      if (entries.length >= max) break
      const pairs = /** @type {Array<[number, any]>} */ (this.parse(block, parentId, key))
      if (reverse) pairs.reverse()
      for (const pair of pairs) {
        if (pair[0] < lo || pair[0] > hi) continue
        const key = encode([parentId, pair[0]])
        if (within(key, bounds)) entries.push([key, pair])
      }
    }
    return entries
  }
}

/**
 * Rewrite the children of one parent into the layout in use, `storage`,
 * in a critical section: its children kept as keys of their own and in
 * blocks (of any size) are read, and written again as `storage` keeps
 * them, unless they are so already; where a child is in both, the copy in
 * blocks wins with blocks in use, the key of its own otherwise (as check()
 * decides). A child of its own key that is not JSON cannot go into a block:
 * it is left as it is. With `purged` (the parent is being purged), the
 * children are deleted instead. Returns how many children were moved.
 * @param {WriteScope} scope @param {KeyPerChild | ChildBlocks} storage
 * @param {KeyPerChild} keyPerChild @param {ChildBlocks} blocks @param {unknown} parentId @param {boolean} purged
 */
export async function regroupChildren (scope, storage, keyPerChild, blocks, parentId, purged) {
  const bounds = tupleBounds([parentId], {})
  const keyed = /** @type {Array<[Uint8Array, string]>} */ (await scope.entries(keyPerChild.namespace, bounds))
  const blocked = /** @type {Array<[Uint8Array, string]>} */ (await scope.entries(blocks.namespace, bounds))
  if (purged) {
    for (const [key] of keyed) scope.del(keyPerChild.namespace, key)
    for (const [key] of blocked) scope.del(blocks.namespace, key)
    return 0
  }
  if (storage === keyPerChild) {
    const kept = new Set(keyed.map(([key]) => seqOf(key, keyPerChild.namespace)))
    let moved = 0
    for (const [key, text] of blocked) {
      for (const [seq, value] of /** @type {Array<[number, any]>} */ (blocks.parse(text, parentId, key))) {
        if (kept.has(seq)) continue
        scope.put(keyPerChild.namespace, encode([parentId, seq]), JSON.stringify(value))
        moved++
      }
      scope.del(blocks.namespace, key)
    }
    return moved
  }
  if (keyed.length === 0 && blocked.every(([key, text]) => blocks.aligned(key, text))) return 0
  /** @type {Map<number, string>} each child's JSON, by seq */
  const children = new Map()
  for (const [key, text] of blocked) {
    for (const [seq, value] of /** @type {Array<[number, any]>} */ (blocks.parse(text, parentId, key))) {
      if (!children.has(seq)) children.set(seq, JSON.stringify(value))
    }
  }
  let moved = 0
  for (const [key, json] of keyed) {
    const seq = seqOf(key, keyPerChild.namespace)
    if (!children.has(seq)) {
      if (!isJson(json)) continue
      children.set(seq, json)
      moved++
    }
    scope.del(keyPerChild.namespace, key)
  }
  // Deleted first: a block written below at one of these keys replaces the delete.
  for (const [key] of blocked) scope.del(blocks.namespace, key)
  /** @type {string[]} */
  let group = []
  let first = 0
  const flush = () => {
    if (group.length > 0) scope.put(blocks.namespace, encode([parentId, first]), `[${group.join(',')}]`)
    group = []
  }
  for (const seq of [...children.keys()].sort((a, b) => a - b)) {
    if (blocks.first(seq) !== first) {
      flush()
      first = blocks.first(seq)
    }
    group.push(`[${seq},${children.get(seq)}]`)
  }
  flush()
  return moved
}

/**
 * The blocks within `bounds` as transaction `tx` sees them, read in one go
 * and handed out like an iterator's nextv().
 * @param {import('./transaction.js').Transaction} tx @param {Namespace} namespace
 * @param {ByteBounds} bounds @param {boolean} reverse
 */
function transactionBlocks (tx, namespace, bounds, reverse) {
  /** @type {Promise<Array<[Uint8Array, any]>> | null} */
  let all = null
  let next = 0
  return {
    /** @param {number} n */
    async nextv (n) {
      const blocks = await (all ??= tx.entries(namespace, bounds, { reverse }))
      const chunk = blocks.slice(next, next + n)
      next += chunk.length
      return chunk
    },
    async close () {}
  }
}

/** @param {Uint8Array} key an encoded [parentId, seq] @param {Namespace} namespace where it is stored */
function seqOf (key, namespace) {
  return /** @type {number} */ (/** @type {unknown[]} */ (decodeKey(key, namespace))[1])
}

/** The first seq a block can hold, from its key [parentId, first]. */
const firstOf = seqOf

/**
 * The [seq, value] pairs of a stored block. Throws a SyntaxError if it is
 * not what levelkit writes there: a non-empty JSON array of such pairs, in
 * ascending seq order.
 * @param {string} text
 * @returns {Array<[number, any]>}
 */
export function parseBlock (text) {
  const pairs = JSON.parse(text)
  if (!Array.isArray(pairs) || pairs.length === 0) throw new SyntaxError('A block is a non-empty JSON array of [seq, value] pairs')
  let last = 0
  for (const pair of pairs) {
    if (!Array.isArray(pair) || pair.length !== 2 || !Number.isSafeInteger(pair[0]) || pair[0] <= last) {
      throw new SyntaxError(`A block holds [seq, value] pairs in ascending seq order, not ${describe(pair)} after seq ${last}`)
    }
    last = pair[0]
  }
  return pairs
}

/**
 * A child kept as a key of its own, parsed.
 * @param {Namespace} namespace @param {string} text @param {unknown} parentId @param {Uint8Array} key
 */
function parseChild (namespace, text, parentId, key) {
  try {
    return JSON.parse(text)
  } catch (err) {
    throw unreadable(namespace, `child ${seqOf(key, namespace)} of parent ${describe(parentId)}`, err, { parentId, seq: seqOf(key, namespace) })
  }
}

/**
 * LEVELKIT_DECODE_ERROR for stored children that do not parse (written
 * behind levelkit's back, or damaged), naming where they are.
 * @param {Namespace} namespace @param {string} what @param {unknown} cause @param {object} details
 */
function unreadable (namespace, what, cause, details) {
  return decodeError(`"${namespace.name}" ${what} does not parse: ${/** @type {Error} */ (cause).message}`, { cause, namespace: namespace.name, ...details })
}

/**
 * Index of `seq` in pairs sorted by seq, or -1. A block is usually full and
 * gap-free, so the guess `seq - first` is tried first.
 * @param {Array<[number, any]>} pairs @param {number} seq
 */
function indexOf (pairs, seq) {
  const guess = pairs.length > 0 ? seq - pairs[0][0] : -1
  if (guess >= 0 && guess < pairs.length && pairs[guess][0] === seq) return guess
  let lo = 0
  let hi = pairs.length - 1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    const at = pairs[mid][0]
    if (at === seq) return mid
    if (at < seq) lo = mid + 1
    else hi = mid - 1
  }
  return -1
}

/**
 * A seq at or below the lowest one whose key [parentId, seq] is >= `bound`
 * (keys start with `base`, the encoded [parentId). Conservative: the keys of
 * the children read are checked against the bounds themselves.
 * @param {Uint8Array} base @param {Uint8Array | undefined} bound
 */
function lowestSeq (base, bound) {
  const at = seqAt(base, bound)
  return at === BELOW || at === UNKNOWN ? 1 : at === ABOVE ? Infinity : Math.floor(at)
}

/**
 * A seq at or above the highest one whose key is < `bound`.
 * @param {Uint8Array} base @param {Uint8Array | undefined} bound
 */
function highestSeq (base, bound) {
  if (bound === undefined) return Infinity
  const at = seqAt(base, bound)
  return at === BELOW ? 0 : at === ABOVE || at === UNKNOWN ? Infinity : Math.ceil(at)
}

const BELOW = -1
const ABOVE = -2
const UNKNOWN = -3

/**
 * Where `bound` lies among the keys [parentId, seq]: below all of them,
 * above all of them, or at the number it holds in the seq position (or
 * UNKNOWN).
 * @param {Uint8Array} base @param {Uint8Array | undefined} bound
 * @returns {number}
 */
function seqAt (base, bound) {
  if (bound === undefined) return BELOW
  const head = compareBytes(bound.subarray(0, base.length), base)
  if (head !== 0) return head < 0 ? BELOW : ABOVE
  if (bound.length === base.length) return BELOW
  const tag = bound[base.length]
  if (tag !== POS) return tag < POS ? BELOW : ABOVE
  // Shorter than a number's encoding: not a bound levelkit builds; reading
  // every block is always correct.
  if (bound.length < base.length + 9) return UNKNOWN
  return /** @type {number} */ (decode(bound.subarray(base.length, base.length + 9)))
}
