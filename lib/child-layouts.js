import { encode, decode } from './tuple.js'
import { compareBytes } from './bytes.js'
import { Namespace } from './namespace.js'
import { tupleBounds, within } from './bounds.js'
import { layout } from './names.js'

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

  /** What a stored value holds, parsed (undefined: nothing). @param {string | undefined} stored */
  parse (stored) {
    return stored === undefined ? undefined : JSON.parse(stored)
  }

  /** The value of child `seq` in what `parse` returned, or undefined. @param {any} parsed @param {number} seq */
  find (parsed, seq) {
    return parsed
  }

  /** @param {WriteScope} scope @param {unknown} parentId @param {number} seq @param {string} json */
  append (scope, parentId, seq, json) {
    scope.put(this.namespace, encode([parentId, seq]), json)
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
   * @param {WriteScope} scope @param {unknown} parentId
   * @returns {Promise<{ keys: Uint8Array[], count: number }>}
   */
  async stored (scope, parentId) {
    const entries = await scope.entries(this.namespace, tupleBounds([parentId], {}), { values: false })
    return { keys: entries.map(entry => entry[0]), count: entries.length }
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
      load: entries => entries.map(([key, value]) => [seqOf(key), JSON.parse(value), key])
    }
  }
}

export class ChildBlocks {
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

  /** @param {unknown} parentId @param {number} seq */
  keyOf (parentId, seq) {
    return encode([parentId, this.first(seq)])
  }

  /** @param {string | undefined} stored @returns {Array<[number, any]> | undefined} */
  parse (stored) {
    return stored === undefined ? undefined : JSON.parse(stored)
  }

  /** @param {Array<[number, any]> | undefined} pairs @param {number} seq */
  find (pairs, seq) {
    if (pairs === undefined) return undefined
    const i = indexOf(pairs, seq)
    return i >= 0 ? pairs[i][1] : undefined
  }

  /** @param {WriteScope} scope @param {unknown} parentId @param {number} seq @param {string} json */
  async append (scope, parentId, seq, json) {
    const key = encode([parentId, this.first(seq)])
    const block = await scope.get(this.namespace, key)
    // The new child has the highest seq: it goes last, and the block's other
    // values are kept as stored, without parsing them.
    scope.put(this.namespace, key, block === undefined ? `[[${seq},${json}]]` : `${block.slice(0, -1)},[${seq},${json}]]`)
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
    const pairs = this.parse(await scope.get(this.namespace, key))
    if (pairs === undefined || indexOf(pairs, seq) < 0) return false
    edit(pairs)
    if (pairs.length === 0) scope.del(this.namespace, key)
    else scope.put(this.namespace, key, JSON.stringify(pairs))
    return true
  }

  /** @param {WriteScope} scope @param {unknown} parentId */
  async stored (scope, parentId) {
    const entries = await scope.entries(this.namespace, tupleBounds([parentId], {}))
    let count = 0
    for (const [, block] of entries) count += this.parse(block)?.length ?? 0
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
    const blockRange = { gte: this.first(lo), lte: hi === Infinity ? undefined : this.first(hi) }
    const it = this.namespace.sublevel.iterator({ ...tupleBounds([parentId], blockRange), reverse })
    try {
      // A first small read: a page of recent children is in the last blocks.
      for (let blocks = await it.nextv(4); blocks.length > 0; blocks = await it.nextv(32)) {
        /** @type {Array<[Uint8Array, [number, any]]>} */
        const entries = []
        for (const [, block] of blocks) {
          const pairs = /** @type {Array<[number, any]>} */ (this.parse(block))
          if (reverse) pairs.reverse()
          for (const pair of pairs) {
            if (pair[0] < lo || pair[0] > hi) continue
            const key = encode([parentId, pair[0]])
            if (within(key, bounds)) entries.push([key, pair])
          }
        }
        if (entries.length > 0) yield entries
      }
    } finally {
      await it.close()
    }
  }
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
