import { encode, decode, compareBytes } from './tuple.js'
import { Space } from './space.js'
import { tupleBounds, within } from './bounds.js'
import { layout } from './names.js'

/**
 * How a set of ordered children is stored. Both layouts answer the same
 * questions, so `children.js` does not know which one it uses:
 *
 * - `KeyPerChild` (the default): `<name>` holds [parentId, seq] -> value.
 * - `ChildBlocks` (`blockSize: n`): children are written one key each, as
 *   above, until their block of n is complete; the append that completes
 *   it packs them into `<name>.blocks` under [parentId, first] -> the JSON
 *   array of their [seq, value] pairs, and deletes their keys, in its batch.
 *   A page of 50 is then a few point reads of blocks plus the newest, open
 *   block's keys, while each child is written about twice in all (once as
 *   a key, once in its block), whatever n is.
 *
 * Whether a block is complete follows from the parent's last seq: block
 * [first, first + n - 1] is packed once the last seq reaches first + n - 1,
 * and stays packed. Readers that are not in the write path read the last
 * seq first, and read the open block's keys before looking for its block:
 * a pack that lands in between moves keys into a block, never the other way
 * round, so no child is missed.
 *
 * @typedef {import('./transaction.js').Transaction} Transaction
 * @typedef {import('./bounds.js').ByteBounds} ByteBounds
 * @typedef {Pick<import('./query.js').QuerySource, 'space' | 'values' | 'load' | 'scan'>} LayoutSource
 *   what a layout adds to the Query source of a range of children
 * @typedef {(space: Space, keys: Uint8Array[]) => Promise<Array<string | undefined>>} ReadValues
 *   reads raw values: through a write scope, or what is written
 */

// Tag of a non-negative number in the tuple encoding (lib/tuple.js); the
// tags of the other types sort below it (null, booleans, negative numbers)
// or above it (Infinity, bytes, strings, arrays).
const POS = 0x42

export class KeyPerChild {
  /**
   * @param {any} root @param {string} name
   */
  constructor (root, name) {
    this.blockSize = 1
    this.space = new Space(root, layout.records(name), 'utf8')
    /** every namespace that holds children */
    this.spaces = [this.space]
  }

  /**
   * The values of children `seqs` of `parentId` (undefined where there is none).
   * @param {ReadValues} read @param {unknown} parentId @param {number[]} seqs
   */
  async read (read, parentId, seqs) {
    const values = await read(this.space, seqs.map(seq => encode([parentId, seq])))
    return values.map(value => value === undefined ? undefined : JSON.parse(value))
  }

  /** @param {Transaction} tx @param {unknown} parentId @param {number} seq @param {string} json */
  append (tx, parentId, seq, json) {
    tx.put(this.space, encode([parentId, seq]), json)
  }

  /**
   * Replace an existing child. @returns {Promise<boolean>} false if there is none
   * @param {Transaction} tx @param {unknown} parentId @param {number} seq @param {string} json
   */
  async replace (tx, parentId, seq, json) {
    return replaceKey(tx, this.space, encode([parentId, seq]), json)
  }

  /** @param {Transaction} tx @param {unknown} parentId @param {number} seq @returns {Promise<boolean>} */
  async remove (tx, parentId, seq) {
    return removeKey(tx, this.space, encode([parentId, seq]))
  }

  /**
   * The keys holding a parent's children and how many children they hold.
   * @param {Transaction} tx @param {unknown} parentId
   * @returns {Promise<{ keys: Array<[Space, Uint8Array]>, count: number }>}
   */
  async stored (tx, parentId) {
    const entries = await tx.entries(this.space, tupleBounds([parentId], {}), { values: false })
    return { keys: entries.map(entry => [this.space, entry[0]]), count: entries.length }
  }

  /**
   * The Query source fields that read `parentId`'s children within `bounds`
   * (over [parentId, seq] keys).
   * @param {unknown} parentId
   * @returns {LayoutSource}
   */
  source (parentId) {
    return {
      space: this.space,
      values: true,
      load: entries => entries.map(([key, value]) => [seqOf(key), JSON.parse(value), key])
    }
  }
}

export class ChildBlocks {
  /**
   * @param {any} root @param {string} name @param {number} blockSize
   * @param {number} readCache @param {Space} keys the namespace of the open blocks' keys
   * @param {Space} sequence the last seq per parent
   * @param {ReadValues} readValues reads what is written, for range reads
   */
  constructor (root, name, blockSize, readCache, keys, sequence, readValues) {
    this.blockSize = blockSize
    this.space = new Space(root, layout.blocks(name), 'utf8', { readCache })
    this.keys = keys
    this.sequence = sequence
    this.spaces = [this.space, keys]
    this.readValues = readValues
  }

  /** The first seq of the block holding `seq`. @param {number} seq */
  first (seq) {
    return seq - (seq - 1) % this.blockSize
  }

  /** Whether the block holding `seq` is packed when the last seq is `last`. @param {number} seq @param {number} last */
  packed (seq, last) {
    return this.first(seq) + this.blockSize - 1 <= last
  }

  /** @param {ReadValues} read @param {unknown} parentId @param {number[]} seqs */
  async read (read, parentId, seqs) {
    const [stored] = await read(this.sequence, [encode(parentId)])
    const last = stored === undefined ? 0 : Number(stored)
    /** @type {any[]} */
    const result = new Array(seqs.length).fill(undefined)
    /** @type {number[]} */
    const open = []
    /** @type {Map<number, number[]>} positions in `seqs` by the first seq of their packed block */
    const packed = new Map()
    for (let i = 0; i < seqs.length; i++) {
      if (!this.packed(seqs[i], last)) {
        open.push(i)
        continue
      }
      const first = this.first(seqs[i])
      const at = packed.get(first)
      if (at) at.push(i)
      else packed.set(first, [i])
    }
    if (open.length > 0) {
      const values = await read(this.keys, open.map(i => encode([parentId, seqs[i]])))
      for (let k = 0; k < open.length; k++) {
        const value = values[k]
        // Not there: it may have been packed since `last` was read.
        if (value === undefined) this.#group(packed, this.first(seqs[open[k]]), open[k])
        else result[open[k]] = JSON.parse(value)
      }
    }
    if (packed.size > 0) {
      const firsts = [...packed.keys()]
      const blocks = await read(this.space, firsts.map(first => encode([parentId, first])))
      for (let k = 0; k < firsts.length; k++) {
        if (blocks[k] === undefined) continue
        const pairs = JSON.parse(/** @type {string} */ (blocks[k]))
        for (const i of /** @type {number[]} */ (packed.get(firsts[k]))) {
          const at = indexOf(pairs, seqs[i])
          if (at >= 0) result[i] = pairs[at][1]
        }
      }
    }
    return result
  }

  /** @param {Map<number, number[]>} groups @param {number} first @param {number} i */
  #group (groups, first, i) {
    const at = groups.get(first)
    if (at) at.push(i)
    else groups.set(first, [i])
  }

  /**
   * A child goes in as a key; the one that completes its block packs the
   * block's children into one value and deletes their keys.
   * @param {Transaction} tx @param {unknown} parentId @param {number} seq @param {string} json
   */
  async append (tx, parentId, seq, json) {
    const first = this.first(seq)
    if (seq - first < this.blockSize - 1) {
      tx.put(this.keys, encode([parentId, seq]), json)
      return
    }
    let text = '['
    for (let s = first; s < seq; s++) {
      const key = encode([parentId, s])
      const value = await tx.get(this.keys, key)
      if (value === undefined) continue
      text += `[${s},${value}],`
      tx.del(this.keys, key)
    }
    tx.put(this.space, encode([parentId, first]), `${text}[${seq},${json}]]`)
  }

  /** @param {Transaction} tx @param {unknown} parentId @param {number} seq @param {string} json */
  async replace (tx, parentId, seq, json) {
    if (!(await this.#inBlock(tx, parentId, seq))) return replaceKey(tx, this.keys, encode([parentId, seq]), json)
    return this.#change(tx, parentId, seq, pairs => pairs.splice(indexOf(pairs, seq), 1, [seq, JSON.parse(json)]))
  }

  /** @param {Transaction} tx @param {unknown} parentId @param {number} seq */
  async remove (tx, parentId, seq) {
    if (!(await this.#inBlock(tx, parentId, seq))) return removeKey(tx, this.keys, encode([parentId, seq]))
    return this.#change(tx, parentId, seq, pairs => pairs.splice(indexOf(pairs, seq), 1))
  }

  /** @param {Transaction} tx @param {unknown} parentId @param {number} seq */
  async #inBlock (tx, parentId, seq) {
    const stored = await tx.get(this.sequence, encode(parentId))
    return this.packed(seq, stored === undefined ? 0 : Number(stored))
  }

  /**
   * Change child `seq`'s block with `edit`, if the block holds it.
   * @param {Transaction} tx @param {unknown} parentId @param {number} seq
   * @param {(pairs: Array<[number, any]>) => void} edit
   */
  async #change (tx, parentId, seq, edit) {
    const key = encode([parentId, this.first(seq)])
    const block = await tx.get(this.space, key)
    const pairs = block === undefined ? undefined : JSON.parse(block)
    if (pairs === undefined || indexOf(pairs, seq) < 0) return false
    edit(pairs)
    if (pairs.length === 0) tx.del(this.space, key)
    else tx.put(this.space, key, JSON.stringify(pairs))
    return true
  }

  /** @param {Transaction} tx @param {unknown} parentId */
  async stored (tx, parentId) {
    const bounds = tupleBounds([parentId], {})
    const blocks = await tx.entries(this.space, bounds)
    const keys = await tx.entries(this.keys, bounds, { values: false })
    let count = keys.length
    for (const [, block] of blocks) count += JSON.parse(block).length
    /** @type {Array<[Space, Uint8Array]>} */
    const all = blocks.map(([key]) => [this.space, key])
    for (const [key] of keys) all.push([this.keys, key])
    return { keys: all, count }
  }

  /**
   * The open block's children are read first, then the packed blocks that
   * may hold a child within the bounds, up to the open block (a block packed
   * in between holds children already read).
   * @param {unknown} parentId
   * @returns {LayoutSource}
   */
  source (parentId) {
    return {
      space: this.space,
      values: true,
      scan: (bounds, reverse) => this.#scan(parentId, bounds, reverse),
      load: entries => entries.map(([key, pair]) => [pair[0], pair[1], key])
    }
  }

  /**
   * @param {unknown} parentId @param {ByteBounds} bounds @param {boolean} reverse
   * @returns {AsyncGenerator<Array<[Uint8Array, [number, any]]>>}
   */
  async * #scan (parentId, bounds, reverse) {
    const base = /** @type {Uint8Array} */ (tupleBounds([parentId], {}).gte)
    const lo = Math.max(1, lowestSeq(base, bounds.gte))
    const hi = highestSeq(base, bounds.lt)
    if (lo > hi || lo === Infinity) return
    // The open block, by point reads (as read() does). Block children from
    // its first seq on were either read here or appended (and packed) since:
    // the latter may be left out, as for any write during the read, and
    // leaving them out keeps the order.
    const [stored] = await this.readValues(this.sequence, [encode(parentId)])
    const last = stored === undefined ? 0 : Number(stored)
    const cut = this.packed(last, last) ? last + 1 : this.first(last)
    /** @type {Array<[Uint8Array, [number, any]]>} */
    const open = []
    const from = Math.max(cut, lo)
    const to = Math.min(last, hi)
    if (from <= to) {
      const seqs = Array.from({ length: to - from + 1 }, (_, i) => from + i)
      const values = await this.read(this.readValues, parentId, seqs)
      for (let i = 0; i < seqs.length; i++) {
        if (values[i] === undefined) continue
        const key = encode([parentId, seqs[i]])
        if (within(key, bounds)) open.push([key, [seqs[i], values[i]]])
      }
    }
    if (reverse && open.length > 0) yield open.reverse()
    const blockRange = { gte: this.first(lo), lte: hi === Infinity ? undefined : this.first(hi) }
    const it = this.space.sublevel.iterator({ ...tupleBounds([parentId], blockRange), reverse })
    try {
      // A first small read: a page of recent children is in the last blocks.
      for (let blocks = await it.nextv(4); blocks.length > 0; blocks = await it.nextv(32)) {
        /** @type {Array<[Uint8Array, [number, any]]>} */
        const entries = []
        for (const [, block] of blocks) {
          const pairs = /** @type {Array<[number, any]>} */ (JSON.parse(block))
          if (reverse) pairs.reverse()
          for (const pair of pairs) {
            if (pair[0] < lo || pair[0] > hi || pair[0] >= cut) continue
            const key = encode([parentId, pair[0]])
            if (within(key, bounds)) entries.push([key, pair])
          }
        }
        if (entries.length > 0) yield entries
      }
    } finally {
      await it.close()
    }
    if (!reverse && open.length > 0) yield open
  }
}

/** @param {Transaction} tx @param {Space} space @param {Uint8Array} key @param {string} json */
async function replaceKey (tx, space, key, json) {
  if (await tx.get(space, key) === undefined) return false
  tx.put(space, key, json)
  return true
}

/** @param {Transaction} tx @param {Space} space @param {Uint8Array} key */
async function removeKey (tx, space, key) {
  if (await tx.get(space, key) === undefined) return false
  tx.del(space, key)
  return true
}

/** @param {Uint8Array} key an encoded [parentId, seq] */
function seqOf (key) {
  return /** @type {number} */ (/** @type {unknown[]} */ (decode(key))[1])
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
