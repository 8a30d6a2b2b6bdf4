import { encode, decode } from './tuple.js'
import { compareBytes, bytesToBinaryString } from './bytes.js'
import { compareIds } from './relation-directions.js'
import { invalid } from './errors.js'
import { assertNotClosed, clearReadCaches } from './namespace.js'
import { parseBlock } from './child-layouts.js'
import { optionsOf } from './options.js'
import { describe } from './common.js'
import { COUNTER_KEY } from './versions.js'
import { isJson } from './json-value.js'
import { decodeKey } from './stored.js'
import { isPlaceholder } from './deferred-ids.js'

/**
 * @typedef {import('./namespace.js').Namespace} Namespace
 * @typedef {{ type: string, namespace: string, key: unknown, message: string, repaired: boolean }} Problem
 * @typedef {{ type: 'put' | 'del', namespace: Namespace, key: Uint8Array, value?: any, needs?: Array<Fix | null> }} Fix
 *   `needs`: for a fix that takes data out of a key to move it elsewhere, the
 *   writes that put it there (null: one that cannot be written). It is
 *   applied only with all of them, so a repair never deletes what it did not
 *   rewrite.
 */

/**
 * Walk every declared namespace and compare it with what the records imply.
 * Reads come from one snapshot where the backend has snapshots; without,
 * they run as a read of the write path (Writer.read()), so no write lands
 * while they read; a repair runs as a critical section, so none lands
 * between what it reads and what it fixes, and its fixes are one atomic batch.
 *
 * @param {import('./database.js').Database} db
 * @param {unknown} options { repair }
 * @returns {Promise<{ ok: boolean, problems: Problem[], repaired: number, unchecked?: Array<{ collection: string, index: string, state: string }> }>}
 */
export async function checkDatabase (db, options) {
  const result = await checkOrRepair(db, options)
  // A relation or children set whose data had to move into its declared
  // layout waits for its first use to move it (lib/schema.js); if its data
  // is in that layout now (repaired, or found so), it is ready. Not inside
  // a db.write() callback, which holds the write path that needs.
  if (!db.writer.inWriteCallback && !db.writer.closed) await db.schema.adoptLayouts()
  return result
}

/**
 * @param {import('./database.js').Database} db
 * @param {unknown} options { repair }
 * @returns {Promise<{ ok: boolean, problems: Problem[], repaired: number, unchecked?: Array<{ collection: string, index: string, state: string }> }>}
 */
async function checkOrRepair (db, options) {
  const { repair = false } = optionsOf(options, 'db.check()')
  if (typeof repair !== 'boolean') throw invalid('The repair option must be a boolean')
  const root = db.level
  assertNotClosed(root)
  // An index being built is incomplete by design (db.schemaStatus() tells
  // how far it got): not checked, nor repaired. Read before the snapshot,
  // so an index that becomes ready meanwhile is left out, never checked
  // against a snapshot from before its last batch.
  const unbuilt = unbuiltIndexes(db)
  // What it looks for was written behind levelkit's back: on IndexedDB,
  // read it from the database, not from the values the lease cache keeps;
  // on postgres, critical sections after it decide on what is stored, not on
  // what the section cache kept.
  db.writer.idb?.clearCache()
  db.writer.sectionCache?.clear()

  if (!repair) {
    if (!root.supports.explicitSnapshots) return db.writer.read(async () => report(await scan(db, undefined, new Set(unbuilt.keys())), new Set(), unbuilt))
    const snapshot = root.snapshot()
    try {
      return report(await scan(db, snapshot, new Set(unbuilt.keys())), new Set(), unbuilt)
    } finally {
      await snapshot.close()
    }
  }
  return db.writer.run(async scope => {
    await db.writer.drain()
    clearReadCaches(root)
    const unbuiltNow = unbuiltIndexes(db)
    const found = await scan(db, undefined, new Set(unbuiltNow.keys()))
    const applied = applicable(found)
    for (const { fix } of found) {
      if (fix === null || !applied.has(fix)) continue
      if (fix.type === 'put') scope.put(fix.namespace, fix.key, fix.value)
      else scope.del(fix.namespace, fix.key)
    }
    return report(found, applied, unbuiltNow)
  })
}

/**
 * @param {Array<{ problem: Omit<Problem, 'repaired'>, fix: Fix | null }>} found
 * @param {Set<Fix>} applied
 * @param {Map<import('./indexes.js').SecondaryIndex, string>} unbuilt the indexes left out, with their state then
 */
function report (found, applied, unbuilt) {
  const problems = found.map(({ problem, fix }) => ({ ...problem, repaired: fix !== null && applied.has(fix) }))
  const result = { ok: problems.length === 0, problems, repaired: problems.filter(p => p.repaired).length }
  if (unbuilt.size === 0) return result
  return { ...result, unchecked: Array.from(unbuilt, ([index, state]) => ({ collection: index.collection, index: index.name, state })) }
}

/**
 * The fixes a repair applies: every fix whose needs are all applied. Moves
 * may need each other (two blocks trading children), so this is the largest
 * such set: start from all, drop what needs something dropped, until stable.
 * @param {Array<{ fix: Fix | null }>} found
 * @returns {Set<Fix>}
 */
function applicable (found) {
  /** @type {Set<Fix>} */
  const fixes = new Set()
  for (const { fix } of found) if (fix !== null) fixes.add(fix)
  let dropped = true
  while (dropped) {
    dropped = false
    for (const fix of fixes) {
      if (fix.needs && fix.needs.some(need => need === null || !fixes.has(need))) {
        fixes.delete(fix)
        dropped = true
      }
    }
  }
  return fixes
}

/**
 * The distinct fixes of a list (undefined where none is needed).
 * @param {Iterable<Fix | null | undefined>} fixes
 * @returns {Array<Fix | null>}
 */
function needsOf (fixes) {
  const needs = new Set(fixes)
  needs.delete(undefined)
  return /** @type {Array<Fix | null>} */ ([...needs])
}

/**
 * The indexes whose entries are being cleared or built (lib/schema.js),
 * with that state.
 * @param {import('./database.js').Database} db
 * @returns {Map<import('./indexes.js').SecondaryIndex, string>}
 */
function unbuiltIndexes (db) {
  const unbuilt = new Map()
  for (const { kind, model } of db.models()) {
    if (kind !== 'collection') continue
    for (const index of model.indexes.values()) {
      if (index.status.state === 'building' || index.status.state === 'clearing') unbuilt.set(index, index.status.state)
    }
  }
  return unbuilt
}

/**
 * @param {import('./database.js').Database} db
 * @param {any} snapshot
 * @param {Set<import('./indexes.js').SecondaryIndex>} unbuilt indexes to leave out
 */
async function scan (db, snapshot, unbuilt) {
  /** @type {Array<{ problem: Omit<Problem, 'repaired'>, fix: Fix | null }>} */
  const found = []
  /** @type {Map<any, Set<string>>} record ids (as key ids) per collection model */
  const existing = new Map()
  const models = db.models()

  /**
   * @param {string} type @param {Namespace} namespace @param {Uint8Array} key
   * @param {string} message @param {Fix | null} fix
   */
  const problem = (type, namespace, key, message, fix) => {
    found.push({ problem: { type, namespace: namespace.name, key: safeDecode(key), message }, fix })
  }

  for (const { kind, model } of models) {
    if (kind === 'collection') existing.set(model, await checkCollection(model, snapshot, problem, unbuilt))
  }
  for (const { kind, model } of models) {
    if (kind === 'relation') await checkRelation(model, snapshot, existing, problem)
    if (kind === 'children') await checkChildren(model, snapshot, existing, problem)
    if (kind === 'counter') await checkCounter(model, snapshot, problem)
  }
  return found
}

/**
 * @param {import('./collection.js').CollectionModel} model
 * @param {any} snapshot
 * @param {Function} problem
 * @param {Set<import('./indexes.js').SecondaryIndex>} unbuilt indexes to leave out
 */
async function checkCollection (model, snapshot, problem, unbuilt) {
  const ids = new Set()
  const indexes = Array.from(model.indexes.values()).filter(index => !unbuilt.has(index))
  /** @type {Map<any, Map<string, { key: Uint8Array, value: Uint8Array | string, claims: unknown[] }>>} */
  const expected = new Map()
  for (const index of indexes) expected.set(index, new Map())
  /**
   * Records whose entries cannot be computed (not JSON, or a key function
   * throws), by index: their entries are not dangling, only unknown, and
   * deleting them would free a unique value the record may still hold.
   * @type {Map<any, Set<string>>}
   */
  const unreadable = new Map()
  for (const index of indexes) unreadable.set(index, new Set())
  let maxId = 0

  for (const [key, value] of await readAll(model.records, snapshot)) {
    const id = tryDecode(key)
    if (id === INVALID || (model.sequential && !(Number.isSafeInteger(id) && /** @type {number} */ (id) > 0))) {
      problem('invalid-key', model.records, key, `"${model.name}" has a key that is not ${model.sequential ? 'a positive integer id' : 'a valid tuple'}`, { type: 'del', namespace: model.records, key })
      continue
    }
    ids.add(model.records.keyId(key))
    if (model.sequential && isPlaceholder(id)) {
      // A deferred insert's id written as it was taken (lib/deferred-ids.js):
      // the real one is lost, and raising the sequence to it would make every
      // later id a placeholder too.
      problem('placeholder-id', model.records, key, `Record ${label(id)} of "${model.name}" has a placeholder id, not the id its insert took`, null)
    } else if (model.sequential && typeof id === 'number' && id > maxId) maxId = id
    let record
    try {
      record = JSON.parse(value)
    } catch {
      problem('invalid-record', model.records, key, `Record ${label(id)} of "${model.name}" is not valid JSON`, null)
      for (const ids of unreadable.values()) ids.add(model.records.keyId(key))
      continue
    }
    for (const [index, wanted] of expected) {
      let entries
      try {
        entries = index.entries(record, id, key, value)
      } catch (err) {
        problem('invalid-record', model.records, key, `Record ${label(id)} of "${model.name}" has no valid "${index.name}" entry: ${/** @type {Error} */ (err).message}`, null)
        unreadable.get(index)?.add(model.records.keyId(key))
        continue
      }
      for (const entry of entries) {
        const entryId = index.namespace.keyId(entry.key)
        const claim = wanted.get(entryId)
        if (claim) claim.claims.push(id)
        else wanted.set(entryId, { key: entry.key, value: entry.value, claims: [id] })
      }
    }
  }

  for (const [index, wanted] of expected) {
    const seen = new Set()
    for (const [key, value] of await readAll(index.namespace, snapshot)) {
      const entryId = index.namespace.keyId(key)
      const claim = wanted.get(entryId)
      const owner = unreadableOwner(model, index, key, value, /** @type {Set<string>} */ (unreadable.get(index)))
      if (owner !== null && (!claim || !index.covering)) {
        // The record it points at cannot be read: whether the entry is
        // right is unknown, so a repair leaves it (and the value it holds).
        problem('dangling-index-entry', index.namespace, key, `Index "${index.name}" of "${model.name}" has an entry for ${owner}: left as it is until the record is fixed`, null)
        if (claim) seen.add(entryId)
        continue
      }
      if (!claim) {
        problem('dangling-index-entry', index.namespace, key, `Index "${index.name}" of "${model.name}" has an entry that no record has`, { type: 'del', namespace: index.namespace, key })
        continue
      }
      seen.add(entryId)
      if (index.covering) {
        // A copy of the record: it must be the stored record, exactly.
        if (value !== claim.value) {
          problem('dangling-index-entry', index.namespace, key, `Covering index "${index.name}" of "${model.name}" holds a copy that is not record ${label(claim.claims[0])} as stored`, { type: 'put', namespace: index.namespace, key, value: claim.value })
        }
      } else if (index.unique && !claim.claims.some(id => compareBytes(encode(id), value) === 0)) {
        problem('dangling-index-entry', index.namespace, key, `Unique index "${index.name}" of "${model.name}" points at ${label(safeDecode(value))}, which does not have that value`, { type: 'put', namespace: index.namespace, key, value: claim.value })
      }
    }
    for (const [entryId, claim] of wanted) {
      if (index.unique && claim.claims.length > 1) {
        problem('unique-violation', index.namespace, claim.key, `Records ${claim.claims.map(label).join(', ')} of "${model.name}" share the unique "${index.name}" value`, null)
      }
      if (!seen.has(entryId)) {
        problem('missing-index-entry', index.namespace, claim.key, `Record ${label(claim.claims[0])} of "${model.name}" has no "${index.name}" entry`, { type: 'put', namespace: index.namespace, key: claim.key, value: claim.value })
      }
    }
  }

  if (model.sequential) {
    const sequence = /** @type {Namespace} */ (model.sequence)
    const key = encode('last')
    const stored = await sequence.read(key, false, snapshot ? { snapshot } : undefined)
    const last = stored === undefined ? 0 : storedInteger(stored)
    if (last === null) {
      problem('invalid-sequence', sequence, key, `The sequence of "${model.name}" holds ${describe(stored)}, not an integer`, { type: 'put', namespace: sequence, key, value: String(maxId) })
    } else if (isPlaceholder(last)) {
      problem('placeholder-id', sequence, key, `The sequence of "${model.name}" is at a placeholder id (${last}), not at the highest id in use`, { type: 'put', namespace: sequence, key, value: String(maxId) })
    } else if (maxId > last && !model.writer.lazySequences) {
      // (On IndexedDB the sequence is the larger of the two: Collection#settleSequence().)
      problem('sequence-behind', sequence, key, `The sequence of "${model.name}" is at ${last} but id ${maxId} exists`, { type: 'put', namespace: sequence, key, value: String(maxId) })
    }
  }
  if (model.versions !== null) await checkVersions(model, model.versions, snapshot, ids, problem)
  return ids
}

/**
 * A versioned collection's version entries: each for a record that exists,
 * holding a version levelkit writes (a positive integer) no greater than
 * the counter, which must be an integer. An entry deleted by a repair
 * leaves its record at version 0.
 * @param {import('./collection.js').CollectionModel} model
 * @param {import('./versions.js').RecordVersions} versions
 * @param {any} snapshot
 * @param {Set<string>} ids the records, by key id
 * @param {Function} problem
 */
async function checkVersions (model, versions, snapshot, ids, problem) {
  const namespace = versions.namespace
  /** @type {Array<[Uint8Array, unknown, number]>} */
  const valid = []
  let highest = 0
  for (const [key, value] of await readAll(namespace, snapshot)) {
    const id = tryDecode(key)
    if (id === INVALID) {
      problem('invalid-key', namespace, key, `"${model.name}" keeps a version under a key that is not a valid tuple`, { type: 'del', namespace, key })
      continue
    }
    if (!ids.has(model.records.keyId(key))) {
      problem('orphan-version', namespace, key, `"${model.name}" keeps a version for ${label(id)}, which it does not have`, { type: 'del', namespace, key })
      continue
    }
    const version = storedInteger(value)
    if (version === null || version < 1) {
      problem('invalid-version', namespace, key, `The version of ${label(id)} in "${model.name}" is ${describe(value)}, not a positive integer: a repair deletes it (version 0)`, { type: 'del', namespace, key })
      continue
    }
    valid.push([key, id, version])
    if (version > highest) highest = version
  }
  const counter = versions.counter
  const stored = await counter.read(COUNTER_KEY, false, snapshot ? { snapshot } : undefined)
  const last = stored === undefined ? 0 : storedInteger(stored)
  /** @type {Fix} */
  const raise = { type: 'put', namespace: counter, key: COUNTER_KEY, value: String(highest) }
  if (last === null) {
    problem('invalid-sequence', counter, COUNTER_KEY, `The version counter of "${model.name}" holds ${describe(stored)}, not an integer`, raise)
    return
  }
  // The counter is raised past every such version, once, whichever is reported.
  for (const [key, id, version] of valid) {
    if (version > last) problem('invalid-version', namespace, key, `The version of ${label(id)} in "${model.name}" is ${version}, past the version counter (${last}): a repair raises the counter`, raise)
  }
}

/**
 * The id of the record an index entry points at, if that record is one of
 * `unreadable` (by key id), else null. Where the entry itself does not say
 * (a covering copy that does not parse), any unreadable record may own it.
 * @param {import('./collection.js').CollectionModel} model
 * @param {import('./indexes.js').SecondaryIndex} index
 * @param {Uint8Array} key @param {any} value @param {Set<string>} unreadable
 * @returns {string | null} the owner, described for a message, or null
 */
function unreadableOwner (model, index, key, value, unreadable) {
  if (unreadable.size === 0) return null
  let ownerKey
  if (index.covering) {
    try {
      ownerKey = encode(model.idOf(JSON.parse(value)))
    } catch {
      return 'a record that cannot be read'
    }
  } else if (index.unique) {
    ownerKey = value
  } else {
    const pair = tryPair(key)
    if (pair === null) return null
    try {
      ownerKey = encode(pair[1])
    } catch {
      return null
    }
  }
  return unreadable.has(model.records.keyId(ownerKey)) ? `record ${label(safeDecode(ownerKey))}, which cannot be read` : null
}

/**
 * Both directions of a relation against each other and against the
 * collections: every edge must join two existing records and be stored in
 * both directions; a direction kept as lists must hold, per id, exactly the
 * ids of its edges, in order. Edges left in the namespaces of the layout a
 * direction no longer uses (its `lists` option changed) count as edges: a
 * repair moves them into the layout in use, in the same batch.
 * @param {import('./relation.js').RelationModel} model
 * @param {any} snapshot
 * @param {Map<any, Set<string>>} existing
 * @param {Function} problem
 */
async function checkRelation (model, snapshot, existing, problem) {
  const fromIds = /** @type {Set<string>} */ (existing.get(model.from))
  const toIds = /** @type {Set<string>} */ (existing.get(model.to))
  /** @param {unknown} fromId @param {unknown} toId */
  const endpointsExist = (fromId, toId) =>
    fromIds.has(model.from.records.keyId(encode(fromId))) && toIds.has(model.to.records.keyId(encode(toId)))
  const sides = [
    { direction: model.forward, reversed: false, ...await readDirection(model, model.forward, false, snapshot, problem) },
    { direction: model.reverse, reversed: true, ...await readDirection(model, model.reverse, true, snapshot, problem) }
  ]
  const old = [
    { direction: model.unused.forward, reversed: false, ...await readDirection(model, model.unused.forward, false, snapshot, problem) },
    { direction: model.unused.reverse, reversed: true, ...await readDirection(model, model.unused.reverse, true, snapshot, problem) }
  ]
  // Kept by the index, the reverse direction's lists are of a layout it no longer uses too (a move into it not over).
  if (model.reverse.kind === 'index') old.push({ direction: model.reverseLists, reversed: true, ...await readDirection(model, model.reverseLists, true, snapshot, problem) })
  /** @type {Map<string, { pair: [unknown, unknown], namespace: Namespace, key: Uint8Array }>} every edge that should stay, by its forward key, and where one copy of it is */
  const valid = new Map()
  for (const { direction, pairs } of [...sides, ...old]) {
    for (const [name, { pair, key }] of pairs) {
      if (!valid.has(name) && endpointsExist(pair[0], pair[1])) valid.set(name, { pair, namespace: direction.namespace, key })
    }
  }
  /** @type {Array<{ fix: Fix, edges: string[] }>} deletes of keys in the old layout, with the edges each holds (by forward key) */
  const moves = []
  for (const { direction, reversed, pairs, lists } of old) {
    const namespace = direction.namespace
    const where = `in "${namespace.name}", a namespace of the layout it no longer uses (${direction === model.reverseLists ? "native: ['from']" : `lists: ${reversed ? "'from'" : "'to'"} changed`})`
    /** @type {Map<string, string[]>} the edges each key holds, by bytesToBinaryString(key) */
    const held = new Map()
    for (const [name, { key }] of pairs) {
      const edges = held.get(bytesToBinaryString(key))
      if (edges) edges.push(name)
      else held.set(bytesToBinaryString(key), [name])
    }
    const entries = direction.kind === 'lists' ? [...lists.values()] : [...pairs.values()].map(({ key }) => ({ key, readable: true }))
    for (const { key, readable } of entries) {
      if (!readable) {
        problem('edge-in-old-layout', namespace, key, `Relation "${model.name}" has a list ${where} that does not decode: its edges cannot be moved, so it is left as it is`, null)
        continue
      }
      /** @type {Fix} */
      const fix = { type: 'del', namespace, key }
      moves.push({ fix, edges: held.get(bytesToBinaryString(key)) || [] })
      problem('edge-in-old-layout', namespace, key, `Relation "${model.name}" has ${direction.kind === 'lists' ? 'a list' : 'an edge'} ${where}; a repair moves it`, fix)
    }
  }
  /** @type {Array<Map<string, Fix>>} per direction in use, the write that puts an edge (by forward key) there */
  const homes = []
  for (const { direction, reversed, pairs, lists } of sides) {
    if (direction.kind === 'index') {
      await checkMirror(model, direction, sides[0].lists, problem)
      homes.push(new Map())
      continue
    }
    if (direction.kind === 'lists') {
      homes.push(checkLists(model, direction.namespace, reversed, valid, lists, problem))
      continue
    }
    /** @type {Map<string, Fix>} */
    const written = new Map()
    homes.push(written)
    for (const [name, { pair: [fromId, toId], key }] of pairs) {
      if (valid.has(name)) continue
      problem('dangling-edge', direction.namespace, key, `Relation "${model.name}"${reversed ? ' (reverse)' : ''} links ${label(fromId)} to ${label(toId)}, but one of them does not exist`, { type: 'del', namespace: direction.namespace, key })
    }
    for (const [name, { pair: [fromId, toId], namespace, key }] of valid) {
      if (pairs.has(name)) continue
      const message = `Relation "${model.name}" has ${label(fromId)} -> ${label(toId)} without its ${reversed ? 'reverse' : 'forward'} entry`
      const entry = reversed ? encode([toId, fromId]) : encode([fromId, toId])
      /** @type {Fix} */
      const fix = { type: 'put', namespace: direction.namespace, key: entry, value: '' }
      written.set(name, fix)
      problem('one-sided-edge', namespace, key, message, fix)
    }
  }
  // An old key goes only with the writes that put its edges into the layout
  // in use (its dangling edges go for good).
  for (const { fix, edges } of moves) fix.needs = needsOf(edges.flatMap(name => homes.map(written => written.get(name))))
}

/**
 * What a direction holds: its edges as [from, to] pairs by their forward key
 * (with the key or list they came from), and for a list direction its
 * stored lists. A key or list that does not decode is reported.
 * @param {import('./relation.js').RelationModel} model
 * @param {import('./relation.js').Direction} direction
 * @param {boolean} reversed keyed by the to id
 * @param {any} snapshot
 * @param {Function} problem
 */
async function readDirection (model, direction, reversed, snapshot, problem) {
  const namespace = direction.namespace
  /** @type {Map<string, { pair: [unknown, unknown], key: Uint8Array }>} */
  const pairs = new Map()
  /** @type {Map<string, { head: unknown, key: Uint8Array, value: Uint8Array, readable: boolean }>} */
  const lists = new Map()
  /** @param {unknown} head @param {unknown} other @param {Uint8Array} key */
  const add = (head, other, key) => {
    const pair = /** @type {[unknown, unknown]} */ (reversed ? [other, head] : [head, other])
    pairs.set(bytesToBinaryString(encode(pair)), { pair, key })
  }
  // The index kind holds no edges of its own: its mirror of the forward
  // lists is compared with them (checkMirror()).
  if (direction.kind === 'index') return { pairs, lists }
  if (direction.kind === 'edges') {
    for (const [key] of await readAll(namespace, snapshot, false)) {
      const pair = tryPair(key)
      if (pair) add(pair[0], pair[1], key)
      else problem('invalid-key', namespace, key, `Relation "${model.name}"${reversed ? ' (reverse) has a key that is not a [to, from] pair' : ' has a key that is not a [from, to] pair'}`, { type: 'del', namespace, key })
    }
    return { pairs, lists }
  }
  for (const [key, value] of await readAll(namespace, snapshot)) {
    const head = tryDecode(key)
    if (head === INVALID) {
      problem('invalid-key', namespace, key, `Relation "${model.name}" keeps a list under a key that is not a valid tuple`, { type: 'del', namespace, key })
      continue
    }
    const others = tryDecode(value)
    lists.set(bytesToBinaryString(key), { head, key, value, readable: Array.isArray(others) })
    if (Array.isArray(others)) for (const other of others) add(head, other, key)
  }
  return { pairs, lists }
}

/**
 * Compare a direction's stored lists with the ones its valid edges give.
 * @param {import('./relation.js').RelationModel} model
 * @param {Namespace} namespace
 * @param {boolean} reversed keyed by the to id (the lists from() reads)
 * @param {Map<string, { pair: [unknown, unknown] }>} valid
 * @param {Map<string, { head: unknown, key: Uint8Array, value: Uint8Array }>} lists what is stored
 * @param {Function} problem
 * @returns {Map<string, Fix>} the write that puts an edge (by forward key) into its list, where one is needed
 */
function checkLists (model, namespace, reversed, valid, lists, problem) {
  const call = reversed ? 'from' : 'to'
  /** @type {Map<string, { head: unknown, key: Uint8Array, ids: unknown[], edges: string[] }>} */
  const wanted = new Map()
  for (const [edge, { pair }] of valid) {
    const [head, other] = reversed ? [pair[1], pair[0]] : pair
    const key = encode(head)
    const name = bytesToBinaryString(key)
    const list = wanted.get(name)
    if (list) {
      list.ids.push(other)
      list.edges.push(edge)
    } else {
      wanted.set(name, { head, key, ids: [other], edges: [edge] })
    }
  }
  /** @type {Map<string, Fix>} */
  const written = new Map()
  /** @param {{ edges: string[] }} list @param {Fix} fix */
  const write = (list, fix) => {
    for (const edge of list.edges) written.set(edge, fix)
    return fix
  }
  for (const [name, { head, key, value }] of lists) {
    const want = wanted.get(name)
    wanted.delete(name)
    if (want === undefined) {
      problem('edge-list-mismatch', namespace, key, `Relation "${model.name}" keeps a ${call}(${label(head)}) list, but ${label(head)} has no edges`, { type: 'del', namespace, key })
      continue
    }
    const bytes = encode(want.ids.sort(compareIds))
    if (compareBytes(value, bytes) !== 0) {
      problem('edge-list-mismatch', namespace, key, `Relation "${model.name}" lists ${listLabel(value)} as ${call}(${label(head)}), but its edges give ${label(want.ids)}`, write(want, { type: 'put', namespace, key, value: bytes }))
    }
  }
  for (const want of wanted.values()) {
    const { head, key, ids } = want
    problem('edge-list-mismatch', namespace, key, `Relation "${model.name}" has edges for ${label(head)} but no ${call}(${label(head)}) list`, write(want, { type: 'put', namespace, key, value: encode(ids.sort(compareIds)) }))
  }
  return written
}

/**
 * Compare the mirror of a relation's forward lists in levelkit's lists
 * store (its reverse direction, the index kind) with the stored forward
 * lists: a list missing, stale or extra there is repaired by writing the
 * forward list again (or deleting its key) through the write path, which
 * writes the mirror in the same transaction.
 * @param {import('./relation.js').RelationModel} model
 * @param {import('./relation-directions.js').IndexDirection} direction
 * @param {Map<string, { head: unknown, key: Uint8Array, value: Uint8Array, readable: boolean }>} lists the stored forward lists
 * @param {Function} problem
 */
async function checkMirror (model, direction, lists, problem) {
  const namespace = direction.forward.namespace
  const mirrored = new Map()
  const records = model.from.records
  for (const [key, ids, carried] of await direction.idb.mirrored(namespace, false, true)) {
    mirrored.set(bytesToBinaryString(key), { key, ids })
    // An entry carries its from-record's value (IdbDirect.mirror()): it must be the stored one.
    // Without one (written before entries carried them) its record is read instead: not a problem.
    if (carried === undefined || carried.v === undefined || carried.v === carried.record) continue
    const head = decodeKey(key, namespace)
    if (carried.record === undefined) {
      problem('mirror-record-mismatch', namespace, key, `Relation "${model.name}"'s IndexedDB index carries a "${model.from.name}" record for ${label(head)}, which does not exist (its list's edges are dangling: reported, and repaired, as such)`, null)
      continue
    }
    problem('mirror-record-mismatch', records, key, `Relation "${model.name}"'s IndexedDB index carries a "${model.from.name}" record for ${label(head)} that differs from the stored one; a repair writes the record again`, { type: 'put', namespace: records, key, value: carried.record })
  }
  for (const [name, { head, key, value, readable }] of lists) {
    const mirror = mirrored.get(name)
    mirrored.delete(name)
    if (!readable) continue
    const ids = /** @type {unknown[]} */ (decode(value))
    if (mirror !== undefined && mirror.ids.length === ids.length && mirror.ids.every((/** @type {unknown} */ id, /** @type {number} */ i) => compareIds(id, ids[i]) === 0)) continue
    const what = mirror === undefined ? 'has no copy' : `has ${label(mirror.ids)}`
    problem('edge-list-mismatch', namespace, key, `Relation "${model.name}" lists ${label(ids)} as to(${label(head)}), but its IndexedDB index (from()) ${what}; a repair writes the list again`, { type: 'put', namespace, key, value })
  }
  for (const { key, ids } of mirrored.values()) {
    problem('edge-list-mismatch', namespace, key, `Relation "${model.name}"'s IndexedDB index (from()) holds ${label(ids)} for a to() list that is not stored; a repair deletes it`, { type: 'del', namespace, key })
  }
}

/** @param {Uint8Array} value a stored list */
function listLabel (value) {
  const ids = tryDecode(value)
  return Array.isArray(ids) ? label(ids) : 'bytes that are not a list of ids'
}

/**
 * @param {import('./children.js').ChildrenModel} model
 * @param {any} snapshot
 * @param {Map<any, Set<string>>} existing
 * @param {Function} problem
 */
async function checkChildren (model, snapshot, existing, problem) {
  const parents = /** @type {Set<string>} */ (existing.get(model.parent))
  // Children of a deleted parent whose purge is pending are not orphans: the
  // background purge deletes them (and is resumed on open).
  const purging = new Set()
  if (model.purge !== null) {
    for (const [key] of await readAll(model.purge, snapshot, false)) {
      if (tryDecode(key) === INVALID) {
        // The background purge could not tell whose children to delete.
        problem('invalid-key', model.purge, key, `"${model.name}" keeps a purge marker under a key that is not a valid tuple`, { type: 'del', namespace: model.purge, key })
        continue
      }
      const parentKeyId = model.parent.records.keyId(key)
      if (parents.has(parentKeyId)) {
        problem('purge-of-live-parent', model.purge, key, `"${model.name}" of ${label(decode(key))} are marked for purging, but "${model.parent.name}" has that record`, { type: 'del', namespace: model.purge, key })
      } else {
        purging.add(parentKeyId)
      }
    }
  }
  const found = await findChildren(model, snapshot, parents, purging, problem)
  if (model.storage === model.blocks) checkBlocks(model, found, problem)
  else checkKeysPerChild(model, found, problem)

  const stored = new Map()
  for (const [key, value] of await readAll(model.sequence, snapshot)) {
    const parentId = tryDecode(key)
    if (parentId === INVALID) {
      problem('invalid-key', model.sequence, key, `"${model.name}" keeps a sequence under a key that is not a valid tuple`, { type: 'del', namespace: model.sequence, key })
      continue
    }
    const parentKeyId = model.parent.records.keyId(key)
    if (purging.has(parentKeyId)) continue
    if (!parents.has(parentKeyId)) {
      problem('orphan-sequence', model.sequence, key, `"${model.name}" keeps a sequence for ${label(parentId)}, which "${model.parent.name}" does not have`, { type: 'del', namespace: model.sequence, key })
      continue
    }
    const last = storedInteger(value)
    if (last === null) {
      let max = 0
      for (const seq of found.parents.get(parentKeyId)?.children.keys() ?? []) if (seq > max) max = seq
      problem('invalid-sequence', model.sequence, key, `The "${model.name}" sequence of ${label(parentId)} holds ${describe(value)}, not an integer`, { type: 'put', namespace: model.sequence, key, value: String(max) })
    }
    stored.set(parentKeyId, last)
  }
  for (const [parentKeyId, { parentId, children }] of found.parents) {
    let max = 0
    for (const seq of children.keys()) if (seq > max) max = seq
    const last = stored.get(parentKeyId) || 0
    if (max > last && stored.get(parentKeyId) !== null) {
      const key = encode(parentId)
      problem('sequence-behind', model.sequence, key, `The "${model.name}" sequence of ${label(parentId)} is at ${last} but item ${max} exists`, { type: 'put', namespace: model.sequence, key, value: String(max) })
    }
  }
}

/**
 * @typedef {{ json: string | null, from: string, home: boolean }} FoundChild
 *   `json` null: a child kept as its own key whose value was not read (not needed);
 *   `from`: the key id of the key it was found under; `home`: that key is where
 *   the layout in use keeps it
 * @typedef {{ parents: Map<string, { parentId: unknown, children: Map<number, FoundChild> }>,
 *   keys: Array<[Uint8Array, unknown, number]>, blocks: Map<string, { key: Uint8Array, parentId: unknown, first: number, seqs: number[] }>,
 *   invalid: Set<string> }} FoundChildren
 *   `keys`: the children kept as keys of their own, as [key, parentId, seq];
 *   `blocks`: the blocks that parse, by key id, with the seqs they hold;
 *   `invalid`: the key ids of blocks that do not parse, which a repair leaves as they are
 */

/**
 * Every child of a live parent, in either layout: where it is kept in the
 * layout in use wins over a copy kept elsewhere. Reports keys that are not
 * children (invalid keys, orphans, blocks that do not parse).
 * @param {import('./children.js').ChildrenModel} model
 * @param {any} snapshot @param {Set<string>} parents @param {Set<string>} purging @param {Function} problem
 * @returns {Promise<FoundChildren>}
 */
async function findChildren (model, snapshot, parents, purging, problem) {
  const blocksInUse = model.storage === model.blocks
  /** @type {FoundChildren} */
  const found = { parents: new Map(), keys: [], blocks: new Map(), invalid: new Set() }
  /** @param {unknown} parentId @param {string} parentKeyId @param {number} seq @param {FoundChild} child */
  const add = (parentId, parentKeyId, seq, child) => {
    let entry = found.parents.get(parentKeyId)
    if (!entry) found.parents.set(parentKeyId, entry = { parentId, children: new Map() })
    const before = entry.children.get(seq)
    if (!before || (child.home && !before.home)) entry.children.set(seq, child)
  }
  /**
   * The parent of a [parentId, n] key, or null after reporting why it has none.
   * @param {Namespace} namespace @param {Uint8Array} key @param {string} what
   * @returns {[unknown, number, string] | null}
   */
  const parentOf = (namespace, key, what) => {
    const pair = tryPair(key)
    if (!pair || !Number.isSafeInteger(pair[1]) || /** @type {number} */ (pair[1]) < 1) {
      problem('invalid-key', namespace, key, `"${model.name}" has a key that is not a [parent, seq] pair`, { type: 'del', namespace, key })
      return null
    }
    const [parentId, n] = /** @type {[unknown, number]} */ (pair)
    const parentKeyId = model.parent.records.keyId(encode(parentId))
    if (purging.has(parentKeyId)) return null
    if (!parents.has(parentKeyId)) {
      problem('orphan-child', namespace, key, `"${model.name}" ${what}${label(n)} belongs to ${label(parentId)}, which "${model.parent.name}" does not have`, { type: 'del', namespace, key })
      return null
    }
    return [parentId, n, parentKeyId]
  }

  const keyNamespace = model.keyPerChild.namespace
  for (const [key, value] of await readAll(keyNamespace, snapshot)) {
    const owner = parentOf(keyNamespace, key, '')
    if (!owner) continue
    const [parentId, seq, parentKeyId] = owner
    if (!blocksInUse && !isJson(value)) {
      problem('invalid-child', keyNamespace, key, `"${model.name}" ${label(seq)} of ${label(parentId)} is not valid JSON`, null)
    }
    // A child to move into a block is copied into it as text: one that is
    // not JSON would make the whole block unreadable, so it stays where it is.
    if (blocksInUse && !isJson(value)) {
      problem('child-in-old-layout', keyNamespace, key, `"${model.name}" ${label(seq)} of ${label(parentId)} is kept as a key of its own, but "${model.name}" is kept in blocks of ${model.blocks.blockSize}, and it is not valid JSON: it cannot be moved into its block, so it is left as it is`, null)
      continue
    }
    found.keys.push([key, parentId, seq])
    add(parentId, parentKeyId, seq, { json: blocksInUse ? value : null, from: keyNamespace.keyId(key), home: !blocksInUse })
  }

  const blockNamespace = model.blocks.namespace
  const size = model.blocks.blockSize
  for (const [key, value] of await readAll(blockNamespace, snapshot)) {
    const owner = parentOf(blockNamespace, key, 'block from ')
    if (!owner) continue
    const [parentId, first, parentKeyId] = owner
    let pairs
    try {
      pairs = parseBlock(value)
    } catch {
      problem('invalid-block', blockNamespace, key, `"${model.name}" block from ${label(first)} of ${label(parentId)} is not a JSON array of [seq, value] pairs in seq order`, null)
      found.invalid.add(blockNamespace.keyId(key))
      continue
    }
    const from = blockNamespace.keyId(key)
    found.blocks.set(from, { key, parentId, first, seqs: pairs.map(pair => pair[0]) })
    const aligned = blocksInUse && (first - 1) % size === 0
    for (const [seq, child] of pairs) {
      add(parentId, parentKeyId, seq, { json: JSON.stringify(child), from, home: aligned && seq >= first && seq < first + size })
    }
  }
  return found
}

/**
 * With blocks in use: every aligned block holds exactly its children; keys
 * of the other layout, and blocks of another size, are emptied into them.
 * A key or block gives up a child only with the write of the block it moves
 * into: if that block cannot be written (it does not parse), the child stays.
 * @param {import('./children.js').ChildrenModel} model @param {FoundChildren} found @param {Function} problem
 */
function checkBlocks (model, found, problem) {
  const namespace = model.blocks.namespace
  const blocks = model.blocks
  /** @type {Map<string, { key: Uint8Array, parentId: unknown, first: number, pairs: Array<[number, FoundChild]> }>} */
  const wanted = new Map()
  for (const { parentId, children } of found.parents.values()) {
    for (const [seq, child] of children) {
      const key = blocks.keyOf(parentId, seq)
      const id = namespace.keyId(key)
      let block = wanted.get(id)
      if (!block) wanted.set(id, block = { key, parentId, first: blocks.first(seq), pairs: [] })
      block.pairs.push([seq, child])
    }
  }
  /** @type {Map<string, Fix | null>} the write a block in use needs to hold its children (null: it cannot be written), by key id; none where it holds them */
  const homes = new Map()
  for (const [id, { key, parentId, first, pairs }] of wanted) {
    const stored = found.blocks.get(id)
    if (stored && stored.seqs.length === pairs.length && pairs.every(([, child]) => child.from === id)) continue
    pairs.sort((a, b) => a[0] - b[0])
    const value = `[${pairs.map(([seq, child]) => `[${seq},${child.json}]`).join(',')}]`
    const moved = pairs.filter(([, child]) => child.from !== id).length
    // A block that does not parse is left for a person to look at.
    /** @type {Fix | null} */
    const fix = found.invalid.has(id) ? null : { type: 'put', namespace, key, value }
    homes.set(id, fix)
    const state = stored ? `holds ${stored.seqs.length} children` : found.invalid.has(id) ? 'does not parse' : 'is missing'
    problem('child-block-mismatch', namespace, key, `"${model.name}" block from ${label(first)} of ${label(parentId)} ${state}; it should hold ${pairs.length}${moved > 0 ? `, ${moved} of them kept elsewhere` : ''}`, fix)
  }
  /**
   * The writes that give children `seqs` of `parentId`, taken out of the key
   * or block `from`, their blocks.
   * @param {unknown} parentId @param {number[]} seqs @param {string} from
   */
  const homesOf = (parentId, seqs, from) => needsOf(seqs.map(seq => {
    const id = namespace.keyId(blocks.keyOf(parentId, seq))
    return id === from ? undefined : homes.get(id)
  }))
  // A block rewritten without the children of another block it holds (one
  // of another size, under the same key) gives them up too.
  for (const [id, fix] of homes) {
    const stored = found.blocks.get(id)
    if (fix && stored) fix.needs = homesOf(stored.parentId, stored.seqs, id)
  }
  for (const [id, { key, parentId, first, seqs }] of found.blocks) {
    if (wanted.has(id)) continue
    problem('child-in-old-layout', namespace, key, `"${model.name}" block from ${label(first)} of ${label(parentId)} is not a block of ${blocks.blockSize}: its children are moved into the blocks in use`, { type: 'del', namespace, key, needs: homesOf(parentId, seqs, id) })
  }
  const keyNamespace = model.keyPerChild.namespace
  for (const [key, parentId, seq] of found.keys) {
    const fix = { type: 'del', namespace: keyNamespace, key, needs: homesOf(parentId, [seq], keyNamespace.keyId(key)) }
    problem('child-in-old-layout', keyNamespace, key, `"${model.name}" ${label(seq)} is kept as a key of its own, but "${model.name}" is kept in blocks of ${blocks.blockSize}: it is moved into its block`, fix)
  }
}

/**
 * With one key per child in use: children found in blocks are written as
 * keys of their own, and the blocks deleted.
 * @param {import('./children.js').ChildrenModel} model @param {FoundChildren} found @param {Function} problem
 */
function checkKeysPerChild (model, found, problem) {
  const keyNamespace = model.keyPerChild.namespace
  /** @type {Map<string, Fix>} the write of a child's own key, by its key id */
  const homes = new Map()
  for (const { parentId, children } of found.parents.values()) {
    for (const [seq, child] of children) {
      if (child.home) continue
      const key = encode([parentId, seq])
      /** @type {Fix} */
      const fix = { type: 'put', namespace: keyNamespace, key, value: child.json }
      homes.set(keyNamespace.keyId(key), fix)
      problem('child-in-old-layout', keyNamespace, key, `"${model.name}" ${label(seq)} of ${label(parentId)} is kept in a block, but "${model.name}" keeps one key per child: it is moved to its own key`, fix)
    }
  }
  const namespace = model.blocks.namespace
  for (const { key, parentId, first, seqs } of found.blocks.values()) {
    const needs = needsOf(seqs.map(seq => homes.get(keyNamespace.keyId(encode([parentId, seq])))))
    problem('child-in-old-layout', namespace, key, `"${model.name}" keeps a block from ${label(first)} of ${label(parentId)}, but keeps one key per child: the block is deleted once its children are moved`, { type: 'del', namespace, key, needs })
  }
}

/**
 * Every counter must be kept under a tuple key, as an integer (a counter
 * back at 0 is deleted, so 0 is never stored).
 * @param {import('./counter.js').CounterModel} model @param {any} snapshot @param {Function} problem
 */
async function checkCounter (model, snapshot, problem) {
  const namespace = model.namespace
  for (const [key, value] of await readAll(namespace, snapshot)) {
    if (tryDecode(key) === INVALID) {
      problem('invalid-key', namespace, key, `Counter "${model.name}" has a key that is not a valid tuple`, { type: 'del', namespace, key })
    } else if (storedInteger(value) === null) {
      problem('invalid-counter', namespace, key, `Counter "${model.name}" holds ${describe(value)}, not an integer`, null)
    }
  }
}

/**
 * A stored integer as levelkit writes it (String(n), a safe integer), or null.
 * @param {string} text
 */
function storedInteger (text) {
  const n = Number(text)
  return Number.isSafeInteger(n) && String(n) === text ? n : null
}

/**
 * @param {Namespace} namespace @param {any} snapshot @param {boolean} [values]
 * @returns {Promise<Array<[Uint8Array, any]>>}
 */
function readAll (namespace, snapshot, values = true) {
  return namespace.sublevel.iterator({ snapshot, values }).all()
}

const INVALID = Symbol('invalid key')

/** @param {Uint8Array} bytes @returns {unknown} the decoded key, or INVALID */
function tryDecode (bytes) {
  try {
    return decode(bytes)
  } catch {
    return INVALID
  }
}

/** @param {Uint8Array} bytes @returns {[unknown, unknown] | null} */
function tryPair (bytes) {
  const value = tryDecode(bytes)
  return Array.isArray(value) && value.length === 2 ? /** @type {[unknown, unknown]} */ (value) : null
}

/** The decoded key, or the bytes themselves if they do not decode. @param {Uint8Array} bytes */
function safeDecode (bytes) {
  const value = tryDecode(bytes)
  return value === INVALID ? bytes : value
}

/** @param {unknown} value */
function label (value) {
  return typeof value === 'string' ? JSON.stringify(value) : Array.isArray(value) ? JSON.stringify(value) : String(value)
}
