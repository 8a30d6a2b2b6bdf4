import { compareBytes } from './bytes.js'
import { HIGH } from './tuple.js'

// Up to this many keys of a batch are looked up with a point read each;
// past it, with one range read (see readKeys()).
export const POINT_READS = 64

// Above every key levelkit writes: no encoded key begins with HIGH.
const TOP = Uint8Array.of(HIGH)

/**
 * What one bulk call knows about the keys of a namespace beyond those it
 * wrote: none is stored after `after` and before `before` (null: the end of
 * the namespace), as long as no critical section but its own has decided
 * ops since the read that found it out. A sorted load's batches follow one
 * another into that gap: each batch inside it needs no read (a range read
 * each was a fifth of a sorted load's CPU). Read anew whenever another
 * critical section decided anything (writer.decisions moved on by more
 * than the call's own batch), and never where other tabs or processes
 * write the database. Like the read caches and the unique indexes, it
 * assumes levelkit is the only writer of its namespaces: a key written to
 * `db.level` directly in the middle of a load is not seen.
 */
export class Gap {
  constructor () {
    /** @type {Uint8Array | null} the last key the call wrote (null: none yet) */
    this.after = null
    /** @type {Uint8Array | null} */
    this.before = null
    /** writer.decisions when the next batch may rely on the gap; -1: nothing known */
    this.decisions = -1
  }

  /**
   * Whether keys from `low` to `high` are all inside the gap, for a
   * critical section of the call's.
   * @param {import('./write-scope.js').WriteScope} scope @param {Uint8Array} low @param {Uint8Array} high
   */
  holds (scope, low, high) {
    return this.decisions === scope.writer.decisions &&
      (this.after === null || compareBytes(this.after, low) < 0) &&
      (this.before === null || compareBytes(high, this.before) < 0)
  }

  /**
   * The call's batch ending at `high` is decided: the gap begins after it,
   * for the call's next critical section, which comes after that batch's
   * commit (one more decision) if no other comes between them.
   * @param {import('./write-scope.js').WriteScope} scope @param {Uint8Array} high
   */
  advance (scope, high) {
    this.after = high
    this.decisions = scope.writer.decisions + 1
  }
}

/**
 * Whether `keys` are in strictly increasing order (so none is there twice).
 * @param {Uint8Array[]} keys
 */
export function isIncreasing (keys) {
  for (let i = 1; i < keys.length; i++) if (compareBytes(keys[i - 1], keys[i]) >= 0) return false
  return true
}

/**
 * The current values of `keys` of `namespace` (undefined: absent), read for
 * a whole batch of a bulk load at once, from a critical section with no ops
 * of its own: ops decided and not yet written first, then what is stored,
 * with getSync() for a few keys, else with one range read of the keys' span
 * when it holds few other entries (a sorted load: one seek, on LevelDB's
 * thread, where a point read each costs the main thread ~8% of a load's
 * time), else with one getMany(). Keys in increasing order (a sorted load)
 * are matched by comparing bytes, with no lookup id each. Not through the
 * read cache, which a load would only fill with absent keys.
 *
 * With a `gap` (a bulk load's batch, where no other tab or process writes)
 * and keys in increasing order: keys inside the gap are not read at all;
 * else the range read goes on past `high` to the next stored key, which
 * makes a new gap from `high` to it. (In a db.write() scope only a load's
 * first batch comes here: the gap is never used.)
 * @param {import('./write-scope.js').WriteScope} scope
 * @param {import('./namespace.js').Namespace} namespace
 * @param {Uint8Array[]} keys
 * @param {boolean} values whether the values are wanted: else `true` stands for each stored one
 * @param {Gap | null} [gap]
 * @param {boolean} [increasing] whether `keys` are in increasing order, if the caller knows
 * @returns {Promise<any[]>}
 */
export async function readKeys (scope, namespace, keys, values, gap = null, increasing = isIncreasing(keys)) {
  const n = keys.length
  /** @type {any[]} */
  const found = new Array(n).fill(undefined)
  if (n === 0) return found
  let low = keys[0]
  let high = keys[n - 1]
  if (gap !== null) {
    if (increasing && !scope.writer.acrossTabs && gap.holds(scope, low, high)) {
      gap.advance(scope, high)
      return found
    }
    gap.decisions = -1
    // A gap read from the store holds only if no op decided and not yet
    // written may land in it: checked before the read, while this critical
    // section keeps new ones from being decided.
    const writer = scope.writer
    if (!increasing || writer.acrossTabs || (writer.pending && writer.pendingWithin(namespace, high, TOP))) gap = null
  }
  if (!increasing) {
    for (const key of keys) {
      if (compareBytes(key, low) < 0) low = key
      if (compareBytes(key, high) > 0) high = key
    }
  }
  /** @type {string[] | null} lookup ids, where they are needed */
  let keyIds = null
  /** @type {number[]} the keys the overlay says nothing about */
  const unknown = []
  const writer = scope.writer
  // The overlay first: an op it drops was written before the reads below.
  if (writer.pending && writer.pendingWithin(namespace, low, high)) {
    keyIds = keys.map(key => namespace.keyId(key))
    for (let i = 0; i < n; i++) {
      const op = writer.lookup(keyIds[i])
      if (op === undefined) unknown.push(i)
      else if (op.type === 'put') found[i] = values ? op.value : true
    }
    if (unknown.length === 0) return found
  } else {
    for (let i = 0; i < n; i++) unknown.push(i)
  }
  scope.assertOpen()
  const sublevel = namespace.sublevel
  if (gap === null && unknown.length <= POINT_READS && writer.syncReads && sublevel.status === 'open') {
    // A few synchronous point reads cost less than a round trip to a thread.
    for (const i of unknown) {
      const value = sublevel.getSync(keys[i])
      if (value !== undefined) found[i] = values ? value : true
    }
    return found
  }
  const limit = unknown.length + 1
  /** @type {Array<[Uint8Array, any]>} */
  const stored = await sublevel.iterator(gap === null ? { gte: low, lte: high, limit, values } : { gte: low, limit, values }).all()
  if (gap !== null) {
    // Past `high`: the next stored key, if the read got that far.
    let inside = stored.length
    while (inside > 0 && compareBytes(stored[inside - 1][0], high) > 0) inside--
    if (inside < stored.length || stored.length < limit) {
      gap.before = inside < stored.length ? stored[inside][0] : null
      gap.advance(scope, high)
    }
    stored.length = inside
  }
  if (stored.length > unknown.length) {
    const read = await sublevel.getMany(unknown.map(i => keys[i]))
    unknown.forEach((i, k) => { if (read[k] !== undefined) found[i] = values ? read[k] : true })
  } else if (increasing) {
    // Both in key order: one merge.
    let j = 0
    for (const i of unknown) {
      while (j < stored.length && compareBytes(stored[j][0], keys[i]) < 0) j++
      if (j === stored.length) break
      if (compareBytes(stored[j][0], keys[i]) === 0) found[i] = values ? stored[j][1] : true
    }
  } else {
    const ids = keyIds ?? keys.map(key => namespace.keyId(key))
    const byId = new Map(stored.map(([key, value]) => [namespace.keyId(key), value]))
    for (const i of unknown) if (byId.has(ids[i])) found[i] = values ? byId.get(ids[i]) : true
  }
  return found
}
