import { encode } from './tuple.js'
import { compareBytes, bytesToBinaryString } from './bytes.js'
import { invalid, levelkitError, codes } from './errors.js'
import { assertName, layout } from './names.js'
import { Namespace } from './namespace.js'
import { describe, errorMessage, isLevelkitError, readInput, elementsOf } from './common.js'
import { parseRecord } from './stored.js'
import { IndexState } from './index-state.js'
import { readKeys } from './read-keys.js'

const NO_VALUE = new Uint8Array(0)

/**
 * @typedef {{ key: Uint8Array, value: Uint8Array | string, indexValue: unknown }} IndexEntry
 * @typedef {import('./write-scope.js').WriteScope} WriteScope
 * @typedef {import('./collection.js').CollectionModel} CollectionModel
 */

/** @type {IndexEntry[]} */
const NO_ENTRIES = []

/**
 * One secondary index of a collection. Entry layout in its own namespace:
 * - unique:     encode([value])     -> encode(id)
 * - covering:   encode([value])     -> the record's JSON (a unique index that
 *   holds a copy of the record, so getBy() is one read)
 * - non-unique: encode([value, id]) -> (empty)
 * so all kinds range over `value` the same way (see bounds.js).
 */
export class SecondaryIndex {
  /**
   * @param {any} root
   * @param {string} collection
   * @param {string} name
   * @param {unknown} options
   * @param {number} [readCache] values of a unique index to keep in memory (see Namespace)
   */
  constructor (root, collection, name, options, readCache = 0) {
    assertName(name, 'Index')
    if (options === null || typeof options !== 'object') {
      throw invalid(`Index "${name}" of "${collection}" needs an options object with a key function`)
    }
    const { key, unique = false, multi = false, covering = false, version = 0, unknown } = readInput(`The options of index "${name}" of "${collection}"`, () => {
      const { key, unique, multi, covering, version, ...rest } = /** @type {any} */ (options)
      return { key, unique, multi, covering, version, unknown: Object.keys(rest) }
    })
    if (unknown.length > 0) throw invalid(`Index "${name}" of "${collection}" has unknown option(s): ${unknown.join(', ')}`)
    if (typeof key !== 'function') throw invalid(`Index "${name}" of "${collection}" needs a key function, record => value`)
    if (typeof unique !== 'boolean' || typeof multi !== 'boolean' || typeof covering !== 'boolean') {
      throw invalid(`Index "${name}" of "${collection}": unique, multi and covering must be booleans`)
    }
    if (!Number.isSafeInteger(version) || version < 0) {
      throw invalid(`Index "${name}" of "${collection}": version must be a non-negative integer (raise it when the key function changes), got ${describe(version)}`)
    }
    if (covering && (!unique || multi)) throw invalid(`Index "${name}" of "${collection}": covering needs a unique index with one value per record (unique: true, not multi)`)
    this.collection = collection
    this.name = name
    this.key = key
    this.unique = unique
    this.multi = multi
    this.covering = covering
    /** Raised by the user when the key function changes: the index is then rebuilt (lib/schema.js). */
    this.version = version
    /** Whether it is ready to be read, or being built (lib/schema.js). */
    this.status = new IndexState()
    // Unique entries are point-read (getBy, unique checks): cache them.
    this.namespace = new Namespace(root, layout.index(collection, name), covering ? 'utf8' : 'view', { readCache: unique ? readCache : 0 })
  }

  /**
   * The entries `record` needs in this index. A key function that returns
   * undefined leaves the record out of the index (a sparse index).
   *
   * @param {object} record
   * @param {unknown} id
   * @param {Uint8Array} idBytes
   * @param {string} [json] the record as stored, for a covering index's value
   * @returns {IndexEntry[]} distinct entries
   */
  entries (record, id, idBytes, json) {
    let computed
    try {
      computed = this.key(record)
    } catch (err) {
      if (isLevelkitError(err)) throw err
      throw invalid(`The key function of index "${this.name}" of "${this.collection}" threw: ${errorMessage(err)}`, { cause: err })
    }
    if (computed === undefined) return NO_ENTRIES
    if (!this.multi) return [this.entry(computed, id, idBytes, json)]
    if (computed === null || typeof computed !== 'object' || !readInput(this.#returned(), () => Array.isArray(computed))) {
      throw invalid(`The key function of multi index "${this.name}" of "${this.collection}" must return an array (or undefined), got ${describe(computed)}`)
    }
    /** @type {IndexEntry[]} */
    const entries = []
    const seen = new Set()
    const values = elementsOf(computed, this.#returned())
    for (let i = 0; i < values.length; i++) {
      const entry = this.entry(values[i], id, idBytes, undefined, i)
      const name = bytesToBinaryString(entry.key)
      if (seen.has(name)) continue
      seen.add(name)
      entries.push(entry)
    }
    return entries
  }

  /**
   * @param {unknown} value @param {unknown} id @param {Uint8Array} idBytes
   * @param {string} [json] the record as stored (covering)
   * @param {number} [element] the position of `value` in what a multi index's key function returned
   * @returns {IndexEntry}
   */
  entry (value, id, idBytes, json, element) {
    let key
    try {
      key = this.unique ? encode([value]) : encode([value, id])
    } catch (err) {
      throw this.#notAKey(/** @type {any} */ (err), value, id, element)
    }
    return { key, value: this.covering ? /** @type {string} */ (json) : this.unique ? idBytes : NO_VALUE, indexValue: value }
  }

  #returned () {
    return `What the key function of index "${this.name}" of "${this.collection}" returned`
  }

  /**
   * The error for a value the key function returned that is not a key: which
   * index, which record, where in the value, and how to leave a record out.
   * @param {any} err what encode() threw @param {unknown} value @param {unknown} id @param {number} [element]
   */
  #notAKey (err, value, id, element) {
    // encode() names the path within [value, ...]: drop the leading 0.
    const inner = Array.isArray(err.path) && err.path.length > 0 ? err.path.slice(1) : []
    const path = element === undefined ? inner : [element, ...inner]
    const where = path.length > 0 ? `, at [${path.join('][')}]` : ''
    const what = element === undefined ? describe(value) : `${describe(value)} as element [${element}] of a multi index key`
    const hint = err.reason === 'unsupported value: undefined'
      ? ': a field the key function reads is missing? To leave a record out of the index, return undefined from the key function (a sparse index)'
      : ''
    return invalid(`Index "${this.name}" of "${this.collection}": the key function returned ${what} for record ${describe(id)}, which is not a valid key${where} (${err.reason || errorMessage(err)})${hint}`, {
      cause: err, collection: this.collection, index: this.name, id, path
    })
  }
}

/**
 * The entries only in `before` and those only in `after`. Most indexes give
 * a record one entry, which is compared directly.
 * @param {IndexEntry[]} before
 * @param {IndexEntry[]} after
 * @returns {{ removed: IndexEntry[], added: IndexEntry[] }}
 */
function diffEntries (before, after) {
  if (before.length <= 1 && after.length <= 1) {
    if (before.length === 1 && after.length === 1 && compareBytes(before[0].key, after[0].key) === 0) {
      return { removed: NO_ENTRIES, added: NO_ENTRIES }
    }
    return { removed: before, added: after }
  }
  const names = (/** @type {IndexEntry[]} */ entries) => new Set(entries.map(e => bytesToBinaryString(e.key)))
  const beforeNames = names(before)
  const afterNames = names(after)
  return {
    removed: before.filter(e => !afterNames.has(bytesToBinaryString(e.key))),
    added: after.filter(e => !beforeNames.has(bytesToBinaryString(e.key)))
  }
}

/**
 * Bring a record's index entries from what `old` needs to what `record`
 * needs (either may be undefined: an insert, a delete): check every unique
 * value first, then delete and put, all in `scope`.
 *
 * @param {WriteScope} scope
 * @param {CollectionModel} collection
 * @param {unknown} id
 * @param {Uint8Array} idBytes
 * @param {object | undefined} old
 * @param {object | undefined} record
 * @param {string} [json] `record` as stored (a covering index keeps a copy)
 * @returns {Promise<Array<[SecondaryIndex, IndexEntry[]]>>} every entry `record` has, by index (indexes
 *   without any left out): what a native collection's put carries (see Op.entries)
 */
export async function writeIndexEntries (scope, collection, id, idBytes, old, record, json) {
  const changes = []
  /** @type {Array<[SecondaryIndex, IndexEntry[]]>} */
  const afters = []
  for (const index of collection.indexes.values()) {
    // While the entries of its older declaration are cleared, an index is
    // left alone: its build then indexes every record (lib/schema.js).
    if (!index.status.maintained) continue
    const before = old ? index.entries(old, id, idBytes) : NO_ENTRIES
    const after = record ? index.entries(record, id, idBytes, json) : NO_ENTRIES
    if (after.length > 0) afters.push([index, after])
    let { removed, added } = diffEntries(before, after)
    // A covering entry holds the record: rewritten whenever it changes.
    if (index.covering) added = after
    if (removed.length > 0 || added.length > 0) changes.push({ index, removed, added })
  }
  /** @type {Set<IndexEntry> | null} new unique entries claimed instead of read (WriteScope#mayClaim()) */
  let claimed = null
  for (const { index, added } of changes) {
    if (!index.unique) continue
    for (const entry of added) {
      // A new record's unique value.
      if (old === undefined && scope.mayClaim(index.namespace, entry.key)) {
        (claimed ??= new Set()).add(entry)
        continue
      }
      await assertFree(scope, collection, index, entry, idBytes)
    }
  }
  for (const { index, removed, added } of changes) {
    for (const entry of removed) {
      // A unique entry is only ours to remove if it points at us: in a
      // damaged database another record may hold it (check() reports that).
      if (index.unique) {
        const owner = await scope.get(index.namespace, entry.key)
        if (owner === undefined || compareBytes(ownerKey(collection, index, owner), idBytes) !== 0) continue
      }
      scope.del(index.namespace, entry.key)
    }
    for (const entry of added) {
      if (claimed !== null && claimed.has(entry)) scope.claim(index.namespace, entry.key, entry.value)
      else scope.put(index.namespace, entry.key, entry.value)
    }
  }
  return afters
}

/**
 * Refuse `entry` of a unique index if another record than `idBytes` holds its value.
 * @param {WriteScope} scope @param {CollectionModel} collection @param {SecondaryIndex} index
 * @param {IndexEntry} entry @param {Uint8Array} idBytes
 */
async function assertFree (scope, collection, index, entry, idBytes) {
  const owner = await scope.get(index.namespace, entry.key)
  if (owner !== undefined && compareBytes(ownerKey(collection, index, owner), idBytes) !== 0) {
    throw levelkitError(codes.UNIQUE, `Collection "${collection.name}" already has a record with ${index.name} ${describe(entry.indexValue)}`, {
      collection: collection.name, index: index.name, value: entry.indexValue
    })
  }
}

/**
 * What writeIndexEntries() does for a new record (no old one: nothing to
 * diff or remove), without a promise when it need not wait: every unique
 * value claimed by the batch (WriteScope#mayClaim()) rather than read, as
 * createUser()'s username is on IndexedDB. Checks every unique value
 * before it writes any entry, in the same order as writeIndexEntries().
 * @param {WriteScope} scope @param {CollectionModel} collection
 * @param {unknown} id @param {Uint8Array} idBytes @param {object} record
 * @param {string} json `record` as stored
 * @returns {Array<[SecondaryIndex, IndexEntry[]]> | Promise<Array<[SecondaryIndex, IndexEntry[]]>>}
 *   every entry of the record, by index (as writeIndexEntries() resolves with)
 */
export function newRecordEntries (scope, collection, id, idBytes, record, json) {
  /** @type {Array<[SecondaryIndex, IndexEntry[]]>} */
  const afters = []
  for (const index of collection.indexes.values()) {
    if (!index.status.maintained) continue
    const after = index.entries(record, id, idBytes, json)
    if (after.length > 0) afters.push([index, after])
  }
  /** @type {Set<IndexEntry> | null} */
  let claimed = null
  for (let i = 0; i < afters.length; i++) {
    const [index, entries] = afters[i]
    if (!index.unique) continue
    for (let j = 0; j < entries.length; j++) {
      if (scope.mayClaim(index.namespace, entries[j].key)) {
        (claimed ??= new Set()).add(entries[j])
        continue
      }
      // A value to read: from here on as writeIndexEntries() goes.
      return checkNewFrom(scope, collection, idBytes, afters, i, j, claimed)
    }
  }
  putNewEntries(scope, afters, claimed)
  return afters
}

/**
 * newRecordEntries() from its first unique value that must be read
 * (entry `j` of `afters[i]`): the rest checked in order, then every entry put.
 * @param {WriteScope} scope @param {CollectionModel} collection @param {Uint8Array} idBytes
 * @param {Array<[SecondaryIndex, IndexEntry[]]>} afters @param {number} i0 @param {number} j0
 * @param {Set<IndexEntry> | null} claimed
 */
async function checkNewFrom (scope, collection, idBytes, afters, i0, j0, claimed) {
  for (let i = i0; i < afters.length; i++) {
    const [index, entries] = afters[i]
    if (!index.unique) continue
    for (let j = i === i0 ? j0 : 0; j < entries.length; j++) {
      if ((i !== i0 || j !== j0) && scope.mayClaim(index.namespace, entries[j].key)) {
        (claimed ??= new Set()).add(entries[j])
        continue
      }
      await assertFree(scope, collection, index, entries[j], idBytes)
    }
  }
  putNewEntries(scope, afters, claimed)
  return afters
}

/**
 * A new record's entries put in `scope`, claimed where they were claimable.
 * @param {WriteScope} scope @param {Array<[SecondaryIndex, IndexEntry[]]>} afters @param {Set<IndexEntry> | null} claimed
 */
function putNewEntries (scope, afters, claimed) {
  for (const [index, entries] of afters) {
    for (const entry of entries) {
      if (claimed !== null && claimed.has(entry)) scope.claim(index.namespace, entry.key, entry.value)
      else scope.put(index.namespace, entry.key, entry.value)
    }
  }
}

/**
 * The index entries of new records, a bulk load's batch (none of them is
 * stored, no two have one id, and the scope has no ops of its own), with
 * every unique value checked for the whole batch at once: against the
 * records before it in the batch, then, where the section may claim it
 * (WriteScope#mayClaim(): on IndexedDB, in a section that may run again),
 * claimed by the batch instead of read, as insert() claims a new record's;
 * else against ops decided and not yet written and stored entries (one
 * readKeys() per index, of the keys alone: a stored entry's value, for a
 * covering index the whole record, is read only to see whose it is). What
 * as many writeIndexEntries() would decide, without a read per record. A
 * record's refusal (a key function that threw, a value another record
 * holds) is kept for the caller, which refuses the first refused record in
 * input order once the checks that come first (its id, its validation)
 * have passed.
 * @param {WriteScope} scope @param {CollectionModel} collection
 * @param {object[]} records @param {unknown[]} ids @param {Uint8Array[]} idKeys
 * @param {string[]} jsons the records as stored
 * @returns {Promise<{ prepared: Array<{ added: Array<[SecondaryIndex, IndexEntry[]]>, refusal: unknown }>, claimed: Set<IndexEntry> | null }>}
 *   `claimed`: the entries to write with WriteScope#claim()
 */
export async function newRecordsEntries (scope, collection, records, ids, idKeys, jsons) {
  /** @type {Array<{ added: Array<[SecondaryIndex, IndexEntry[]]>, refusal: unknown }>} */
  const prepared = []
  for (let i = 0; i < records.length; i++) {
    /** @type {Array<[SecondaryIndex, IndexEntry[]]>} */
    const added = []
    let refusal
    try {
      for (const index of collection.indexes.values()) {
        if (!index.status.maintained) continue
        const entries = index.entries(records[i], ids[i], idKeys[i], jsons[i])
        if (entries.length > 0) added.push([index, entries])
      }
    } catch (err) {
      refusal = err
    }
    prepared.push({ added, refusal })
  }
  /** @type {Set<IndexEntry> | null} */
  let claimed = null
  for (const index of collection.indexes.values()) {
    if (!index.unique || !index.status.maintained) continue
    /** @type {number[]} */
    const owners = []
    /** @type {IndexEntry[]} */
    const entries = []
    for (let i = 0; i < prepared.length; i++) {
      const { added, refusal } = prepared[i]
      if (refusal !== undefined) continue
      for (const [own, ownEntries] of added) {
        if (own !== index) continue
        for (const entry of ownEntries) {
          owners.push(i)
          entries.push(entry)
        }
      }
    }
    const n = entries.length
    /** @type {Uint8Array} 1: the value is another record's (of the batch or stored) */
    const taken = new Uint8Array(n)
    /** @type {number[]} the entries whose value is read */
    const unknown = []
    const namespace = index.namespace
    // Asked once for the batch: nothing changes it while the loop runs.
    const claims = scope.claimsIn(namespace)
    /** @type {Map<string, number>} the record of the batch that takes each value first, by key id */
    const holders = new Map()
    for (let k = 0; k < n; k++) {
      const i = owners[k]
      const id = namespace.keyId(entries[k].key)
      const holder = holders.get(id)
      if (holder !== undefined) {
        if (holder !== i) taken[k] = 1
        continue
      }
      holders.set(id, i)
      if (claims && scope.mayClaimKey(namespace, entries[k].key, id)) (claimed ??= new Set()).add(entries[k])
      else unknown.push(k)
    }
    if (unknown.length > 0) {
      const found = await readKeys(scope, namespace, unknown.map(k => entries[k].key), false)
      /** @type {number[]} */
      const held = []
      for (let u = 0; u < unknown.length; u++) if (found[u] !== undefined) held.push(unknown[u])
      if (held.length > 0) {
        // Whose each is: an entry of the record's own id is not another's.
        const values = await readKeys(scope, namespace, held.map(k => entries[k].key), true)
        for (let h = 0; h < held.length; h++) {
          const k = held[h]
          if (values[h] !== undefined && compareBytes(ownerKey(collection, index, values[h]), idKeys[owners[k]]) !== 0) taken[k] = 1
        }
      }
    }
    // Each record keeps its first refusal (indexes, then entries, in order).
    for (let k = 0; k < n; k++) {
      const i = owners[k]
      if (taken[k] === 1 && prepared[i].refusal === undefined) {
        prepared[i].refusal = levelkitError(codes.UNIQUE, `Collection "${collection.name}" already has a record with ${index.name} ${describe(entries[k].indexValue)}`, {
          collection: collection.name, index: index.name, value: entries[k].indexValue
        })
      }
    }
  }
  return { prepared, claimed }
}

/**
 * The key of the record a unique entry points at: its value, or for a
 * covering index the id of the record it holds.
 * @param {CollectionModel} collection @param {SecondaryIndex} index @param {Uint8Array | string} value
 * @returns {Uint8Array}
 */
export function ownerKey (collection, index, value) {
  if (!index.covering) return /** @type {Uint8Array} */ (value)
  return encode(collection.idOf(parseRecord(/** @type {string} */ (value), index.namespace)))
}

/**
 * Whether `record` (stored under `id`) still has the entry `entryKey` in
 * `index`: what a read that found the record through that entry, without a
 * snapshot, checks before it trusts the pairing.
 * @param {SecondaryIndex} index @param {any} record @param {unknown} id
 * @param {Uint8Array} idBytes @param {Uint8Array} entryKey
 */
export function holdsEntry (index, record, id, idBytes, entryKey) {
  try {
    return index.entries(record, id, idBytes).some(entry => compareBytes(entry.key, entryKey) === 0)
  } catch {
    return false
  }
}

/**
 * The key of a unique index's entry for `value`.
 * @param {SecondaryIndex} index @param {unknown} value
 */
export function uniqueEntryKey (index, value) {
  try {
    return encode([value])
  } catch (err) {
    throw invalid(`Not a valid value for index "${index.name}": ${errorMessage(err)}`, { cause: err })
  }
}
