import { compareBytes } from './bytes.js'

// Up to this many keys of a batch are looked up with a point read each;
// past it, with one range read (see readKeys()).
export const POINT_READS = 64

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
 * @param {import('./write-scope.js').WriteScope} scope
 * @param {import('./namespace.js').Namespace} namespace
 * @param {Uint8Array[]} keys
 * @param {boolean} values whether the values are wanted: else `true` stands for each stored one
 * @returns {Promise<any[]>}
 */
export async function readKeys (scope, namespace, keys, values) {
  const n = keys.length
  /** @type {any[]} */
  const found = new Array(n).fill(undefined)
  if (n === 0) return found
  let increasing = true
  for (let i = 1; i < n && increasing; i++) increasing = compareBytes(keys[i - 1], keys[i]) < 0
  let low = keys[0]
  let high = keys[n - 1]
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
  if (unknown.length <= POINT_READS && writer.syncReads && sublevel.status === 'open') {
    // A few synchronous point reads cost less than a round trip to a thread.
    for (const i of unknown) {
      const value = sublevel.getSync(keys[i])
      if (value !== undefined) found[i] = values ? value : true
    }
    return found
  }
  /** @type {Array<[Uint8Array, any]>} */
  const stored = await sublevel.iterator({ gte: low, lte: high, limit: unknown.length + 1, values }).all()
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
