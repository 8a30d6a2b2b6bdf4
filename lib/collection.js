import { encode, decode, compareBytes } from './tuple.js'
import { invalid, levelkitError, codes } from './errors.js'
import { encodeJson } from './json-value.js'
import { assertName, layout } from './names.js'
import { Space, assertNotClosed } from './space.js'
import { IndexSpec, NO_ENTRIES, diffEntries } from './indexes.js'
import { Query } from './query.js'
import { valueBounds, tupleBounds } from './bounds.js'
import { ModelFace, modelOf, scopeOf, writeThrough, readThrough, scopedPrepare, after, promised } from './scope.js'

const SEQUENCE_KEY = encode('last')

/**
 * @typedef {import('./transaction.js').Transaction} Transaction
 * @typedef {{ name: string, beforeDelete: (tx: Transaction, id: unknown) => Promise<void>, beforeCreate?: (tx: Transaction, id: unknown) => Promise<void> }} Dependent
 */

/**
 * The shared state and the write logic of a collection. `Collection` is the
 * public face: one per collection, plus one per `in(w)` scope.
 */
export class CollectionModel {
  /**
   * @param {import('./database.js').Database} db
   * @param {string} name
   * @param {any} options
   */
  constructor (db, name, options) {
    assertName(name, 'Collection')
    if (options === undefined) options = {}
    if (options === null || typeof options !== 'object') throw invalid(`Options of collection "${name}" must be an object`)
    const { id = 'sequence', indexes = {}, validate, ...rest } = options
    const unknown = Object.keys(rest)
    if (unknown.length > 0) throw invalid(`Collection "${name}" has unknown option(s): ${unknown.join(', ')}`)
    if (id !== 'sequence' && typeof id !== 'function') {
      throw invalid(`The id option of collection "${name}" must be 'sequence' or a function record => id`)
    }
    if (validate !== undefined && typeof validate !== 'function') {
      throw invalid(`The validate option of collection "${name}" must be a function`)
    }
    if (indexes === null || typeof indexes !== 'object') throw invalid(`The indexes option of collection "${name}" must be an object`)

    this.db = db
    this.name = name
    this.writer = db.writer
    this.root = db.level
    this.sequential = id === 'sequence'
    /** @type {((record: any) => unknown) | null} */
    this.idFunction = this.sequential ? null : id
    this.validate = validate || null
    this.records = new Space(this.root, layout.records(name), 'utf8', { readCache: db.readCache })
    this.sequence = this.sequential ? new Space(this.root, layout.sequence(name), 'utf8', { cache: true }) : null
    if (this.sequence) this.writer.registerCache(this.sequence)
    /** @type {Map<string, IndexSpec>} */
    this.indexes = new Map()
    for (const [indexName, spec] of Object.entries(indexes)) {
      this.indexes.set(indexName, new IndexSpec(this.root, name, indexName, spec, db.readCache))
    }
    // User code that sees records gets them frozen, so what it indexes or
    // accepts is what is stored; with none, freezing would only cost time.
    this.showsRecords = this.validate !== null || this.idFunction !== null || this.indexes.size > 0
    /** @type {Dependent[]} */
    this.dependents = []
    /** @type {number | null} the highest stored id when this process first used the sequence */
    this.idFloor = null
  }

  /** Encode and check an id passed by the user. @param {unknown} id */
  keyOf (id) {
    if (this.sequential && !(Number.isSafeInteger(id) && /** @type {number} */ (id) > 0)) {
      throw invalid(`Ids of collection "${this.name}" are positive integers (it uses a sequence), got ${describe(id)}`)
    }
    try {
      return encode(id)
    } catch (err) {
      throw invalid(`Not a valid id for collection "${this.name}": ${/** @type {Error} */ (err).message}`, { cause: err })
    }
  }

  /**
   * The last id the sequence handed out. The first time a process asks, it
   * also reads the highest stored id and takes the larger of the two, so a
   * sequence that lags its records (check() calls that sequence-behind) can
   * never hand out an id in use; after that, the write path is the only
   * writer of both and keeps them in step.
   * @param {Transaction} tx
   * @returns {Promise<number>}
   */
  async lastId (tx) {
    const stored = await tx.get(/** @type {Space} */ (this.sequence), SEQUENCE_KEY)
    const last = stored === undefined ? 0 : Number(stored)
    // The floor stays in memory: whether or not this write goes through, no
    // id at or below the highest stored one is ever handed out.
    if (this.idFloor === null) this.idFloor = await this.highestStoredId()
    return Math.max(last, this.idFloor)
  }

  /**
   * The highest id among the written records. (A scope's own puts need not
   * count: each one also raised the sequence in the same scope.)
   */
  async highestStoredId () {
    await this.writer.drain()
    // Ids of a sequence collection are positive integers; anything else
    // (only there if written behind levelkit's back) is check()'s business.
    const highest = await this.records.sublevel.keys({ reverse: true, lte: encode(Number.MAX_SAFE_INTEGER), limit: 1 }).all()
    return highest.length === 0 ? 0 : Number(decode(highest[0]))
  }

  /** @param {Transaction} tx @param {string} json */
  async insert (tx, json) {
    const record = JSON.parse(json)
    let id
    let stored = json
    if (this.sequential) {
      if (record.id !== undefined) {
        throw invalid(`Records of collection "${this.name}" get their id from its sequence: insert them without an id, or use put(id, record)`)
      }
      id = (await this.lastId(tx)) + 1
      record.id = id
      stored = withIdJson(json, id)
    } else {
      id = this.computeId(deepFreeze(record))
    }
    this.seal(record)
    const idBytes = encode(id)
    // A sequence id is new by construction (see lastId()).
    if (!this.sequential && await tx.get(this.records, idBytes) !== undefined) {
      throw levelkitError(codes.EXISTS, `Collection "${this.name}" already has a record with id ${describe(id)}`, { collection: this.name, id })
    }
    this.check(record)
    await this.writeIndexes(tx, id, idBytes, undefined, record, stored)
    tx.put(this.records, idBytes, stored)
    if (this.sequential) tx.put(/** @type {Space} */ (this.sequence), SEQUENCE_KEY, String(id))
    return id
  }

  /** @param {Transaction} tx @param {unknown} id @param {string} json @returns {Promise<boolean>} true if created */
  async put (tx, id, json) {
    const idBytes = this.keyOf(id)
    const parsed = JSON.parse(json)
    const stored = this.sequential && parsed.id === undefined ? withIdJson(json, /** @type {number} */ (id)) : json
    const record = this.seal(this.withId(parsed, id, idBytes))
    this.check(record)
    const previous = await tx.get(this.records, idBytes)
    if (previous === undefined) {
      for (const dependent of this.dependents) if (dependent.beforeCreate) await dependent.beforeCreate(tx, id)
    }
    const old = previous === undefined ? undefined : JSON.parse(previous)
    // Keep the sequence ahead of every id, so insert() never hands this one out.
    const raise = this.sequential && /** @type {number} */ (id) > await this.lastId(tx)
    await this.writeIndexes(tx, id, idBytes, old, record, stored)
    tx.put(this.records, idBytes, stored)
    if (raise) tx.put(/** @type {Space} */ (this.sequence), SEQUENCE_KEY, String(id))
    return old === undefined
  }

  /**
   * @param {Transaction} tx
   * @param {unknown} id
   * @param {{ json: string, removed: string[] } | ((record: any) => any)} change a patch, or a function old => new
   */
  async update (tx, id, change) {
    const idBytes = this.keyOf(id)
    const previous = await tx.get(this.records, idBytes)
    if (previous === undefined) {
      throw levelkitError(codes.NOT_FOUND, `Collection "${this.name}" has no record with id ${describe(id)}`, { collection: this.name, id })
    }
    const old = JSON.parse(previous)
    let next
    if (typeof change === 'function') {
      next = change(JSON.parse(previous))
      if (next !== null && typeof next === 'object' && typeof next.then === 'function') {
        throw invalid('An update function must return the new record synchronously, not a promise')
      }
      next = parseRecord(next, `The record returned by the update function for "${this.name}"`)
    } else {
      next = { ...old, ...JSON.parse(change.json) }
      for (const key of change.removed) delete next[key]
    }
    // A patch that leaves the id alone needs no copy to put the id first.
    const record = this.seal(this.sequential && next.id === id ? next : this.withId(next, id, idBytes))
    this.check(record)
    const json = JSON.stringify(record)
    await this.writeIndexes(tx, id, idBytes, old, record, json)
    tx.put(this.records, idBytes, json)
    // The caller's own copy: an unfrozen record nothing else holds is one.
    return this.showsRecords ? JSON.parse(json) : record
  }

  /** @param {Transaction} tx @param {unknown} id @returns {Promise<boolean>} true if it existed */
  async del (tx, id) {
    const idBytes = this.keyOf(id)
    const previous = await tx.get(this.records, idBytes)
    if (previous === undefined) return false
    for (const dependent of this.dependents) await dependent.beforeDelete(tx, id)
    await this.writeIndexes(tx, id, idBytes, JSON.parse(previous), undefined)
    tx.del(this.records, idBytes)
    return true
  }

  /**
   * Write the difference between the index entries of `old` and `record`:
   * check every unique value first, then delete and put.
   *
   * @param {Transaction} tx
   * @param {unknown} id
   * @param {Uint8Array} idBytes
   * @param {object | undefined} old
   * @param {object | undefined} record
   * @param {string} [json] `record` as stored (a covering index keeps a copy)
   */
  async writeIndexes (tx, id, idBytes, old, record, json) {
    const changes = []
    for (const index of this.indexes.values()) {
      const before = old ? index.entries(old, id, idBytes) : NO_ENTRIES
      const after = record ? index.entries(record, id, idBytes, json) : NO_ENTRIES
      let { removed, added } = diffEntries(before, after)
      // A covering entry holds the record: rewritten whenever it changes.
      if (index.covering) added = after
      if (removed.length > 0 || added.length > 0) changes.push({ index, removed, added })
    }
    for (const { index, added } of changes) {
      if (!index.unique) continue
      for (const entry of added) {
        const owner = await tx.get(index.space, entry.key)
        if (owner !== undefined && compareBytes(this.ownerOf(index, owner), idBytes) !== 0) {
          throw levelkitError(codes.UNIQUE, `Collection "${this.name}" already has a record with ${index.name} ${describe(entry.indexValue)}`, {
            collection: this.name, index: index.name, value: entry.indexValue
          })
        }
      }
    }
    for (const { index, removed, added } of changes) {
      for (const entry of removed) {
        // A unique entry is only ours to remove if it points at us: in a
        // damaged database another record may hold it (check() reports that).
        if (index.unique) {
          const owner = await tx.get(index.space, entry.key)
          if (owner === undefined || compareBytes(this.ownerOf(index, owner), idBytes) !== 0) continue
        }
        tx.del(index.space, entry.key)
      }
      for (const entry of added) tx.put(index.space, entry.key, entry.value)
    }
  }

  /**
   * The key of the record a unique entry points at: its value, or for a
   * covering index the id of the record it holds.
   * @param {IndexSpec} index @param {Uint8Array | string} value
   * @returns {Uint8Array}
   */
  ownerOf (index, value) {
    if (!index.covering) return /** @type {Uint8Array} */ (value)
    return encode(this.idOf(JSON.parse(/** @type {string} */ (value))))
  }

  /** The id of a stored record. @param {any} record */
  idOf (record) {
    return this.sequential ? record.id : this.computeId(record)
  }

  /** @param {any} record */
  computeId (record) {
    let id
    try {
      id = /** @type {Function} */ (this.idFunction)(record)
    } catch (err) {
      throw invalid(`The id function of collection "${this.name}" threw: ${/** @type {Error} */ (err).message}`, { cause: err })
    }
    if (id === undefined) throw invalid(`The id function of collection "${this.name}" returned undefined`)
    this.keyOf(id)
    return id
  }

  /**
   * The record as stored under `id`: sequence collections keep the id in the
   * record's `id` property; function ids must agree with the record.
   * @param {any} record @param {unknown} id @param {Uint8Array} idBytes
   */
  withId (record, id, idBytes) {
    if (this.sequential) {
      if (record.id !== undefined && record.id !== id) {
        throw invalid(`The record's id ${describe(record.id)} differs from the id ${describe(id)} it is written under in "${this.name}"`)
      }
      const { id: _, ...rest } = record
      return { id, ...rest }
    }
    const computed = this.computeId(record)
    if (compareBytes(encode(computed), idBytes) !== 0) {
      throw invalid(`The record's id ${describe(computed)} (from the id function) differs from the id ${describe(id)} it is written under in "${this.name}"`)
    }
    return record
  }

  /**
   * Freeze a record that user code will see.
   * @template T @param {T} record @returns {T}
   */
  seal (record) {
    return this.showsRecords ? deepFreeze(record) : record
  }

  /** @param {object} record */
  check (record) {
    if (!this.validate) return
    try {
      this.validate(record)
    } catch (err) {
      throw invalid(`Invalid record for "${this.name}": ${/** @type {Error} */ (err).message}`, { cause: err, collection: this.name })
    }
  }

  /** @param {string} indexName */
  index (indexName) {
    const index = this.indexes.get(indexName)
    if (!index) throw invalid(`Collection "${this.name}" has no index "${indexName}"`)
    return index
  }

  /**
   * Read records by encoded id, optionally from a snapshot. Uses getSync()
   * where the backend has it: one call instead of a round trip per record.
   * @param {Uint8Array[]} keys
   * @param {any} [snapshot]
   * @returns {Promise<Array<string | undefined>>}
   */
  async readMany (keys, snapshot) {
    assertNotClosed(this.records.sublevel)
    const options = readOptions(snapshot)
    // getSync() per key beats one getMany() round trip up to a page or so.
    if (this.writer.syncReads && keys.length <= 64 && this.records.sublevel.status === 'open') {
      return keys.map(key => this.records.read(key, true, options))
    }
    return this.records.sublevel.getMany(keys, options)
  }
}

/**
 * A collection of records, stored whole as JSON under their id, with its
 * secondary indexes kept in the same atomic batch as every change.
 */
export class Collection extends ModelFace {
  /** @param {object} record @returns {Promise<unknown>} the new id */
  insert (record) {
    return promised(() => {
      const json = recordJson(record, `Record for "${this.name}"`)
      return writeThrough(this, tx => modelOf(this).insert(tx, json))
    })
  }

  /** @param {unknown} id @param {object} record @returns {Promise<boolean>} true if created */
  put (id, record) {
    return promised(() => {
      const json = recordJson(record, `Record for "${this.name}"`)
      return writeThrough(this, tx => modelOf(this).put(tx, id, json))
    })
  }

  /**
   * Change a record: shallow-merge a patch (a property set to undefined is
   * removed), or replace it with what `fn(old)` returns.
   * @param {unknown} id
   * @param {object | ((record: any) => object)} change
   */
  update (id, change) {
    return promised(() => {
      const arg = typeof change === 'function'
        ? /** @type {(record: any) => any} */ (change)
        : { json: recordJson(change, `Patch for "${this.name}"`), removed: Object.keys(change).filter(key => /** @type {any} */ (change)[key] === undefined) }
      return writeThrough(this, tx => modelOf(this).update(tx, id, arg))
    })
  }

  /** @param {unknown} id @returns {Promise<boolean>} true if a record was deleted */
  del (id) {
    return writeThrough(this, tx => modelOf(this).del(tx, id))
  }

  /** @param {unknown} id @returns {Promise<any>} the record, or undefined */
  get (id) {
    return this.#readOne(id, parseStored)
  }

  /** @param {unknown} id @returns {Promise<boolean>} */
  has (id) {
    return this.#readOne(id, isDefined)
  }

  /**
   * What `use` makes of the stored value of record `id` (undefined if none).
   * @template T
   * @param {unknown} id @param {(value: string | undefined) => T} use
   * @returns {Promise<T>}
   */
  #readOne (id, use) {
    return promised(() => {
      const model = modelOf(this)
      const key = model.keyOf(id)
      if (scopeOf(this) === null) return model.readMany([key]).then((/** @type {Array<string | undefined>} */ values) => use(values[0]))
      return after(readThrough(this, model.records, key), use)
    })
  }

  /** @param {unknown[]} ids @returns {Promise<any[]>} records in the same order; undefined where missing */
  async getMany (ids) {
    if (!Array.isArray(ids)) throw invalid('getMany() takes an array of ids')
    const model = modelOf(this)
    const keys = ids.map(id => model.keyOf(id))
    const scope = scopeOf(this)
    /** @type {Array<string | undefined>} */
    const values = scope
      ? await Promise.all(keys.map(key => scope.get(model.records, key)))
      : await model.readMany(keys)
    return values.map(value => value === undefined ? undefined : JSON.parse(value))
  }

  /**
   * The record whose unique index `indexName` has `value`, or undefined.
   * @param {string} indexName
   * @param {unknown} value
   * @returns {Promise<any>}
   */
  getBy (indexName, value) {
    return promised(() => {
      const model = modelOf(this)
      const index = model.index(indexName)
      if (!index.unique) throw invalid(`getBy() needs a unique index; "${indexName}" of "${model.name}" is not unique: use query({ index, eq })`)
      const key = encodeIndexValue(index, value)
      const scope = scopeOf(this)
      if (scope) return getByInScope(scope, model, index, key)
      assertNotClosed(model.root)
      // A covering entry is the record: one read, nothing to pair up.
      if (index.covering) return after(index.space.read(key, model.writer.syncReads), parseStored)
      if (model.writer.syncReads && index.space.sublevel.status === 'open' && model.records.sublevel.status === 'open') {
        // Two synchronous reads need no snapshot to be paired up right: a batch
        // that lands between them (LevelDB writes on its own thread) can only
        // make the record stop holding the value, and then we read both again
        // from one snapshot below. A record that still holds the value holds it
        // now. (One that is gone may have passed the value on in the same
        // batch: that, too, is read again below.)
        const owner = index.space.read(key, true)
        if (owner === undefined) return undefined
        const stored = model.records.read(owner, true)
        if (stored !== undefined) {
          const record = JSON.parse(stored)
          if (hasEntry(index, record, decode(owner), owner, key)) return record
        }
      }
      return getBySnapshot(model, index, key)
    })
  }

  /**
   * Records in id order, or in the order of an index.
   * @param {{ index?: string, gt?: unknown, gte?: unknown, lt?: unknown, lte?: unknown, eq?: unknown, prefix?: unknown[], limit?: number, reverse?: boolean, cursor?: string | null }} [options]
   */
  query (options = {}) {
    if (options === null || typeof options !== 'object') throw invalid('query() takes an options object')
    const model = modelOf(this)
    if (options.index === undefined) {
      return new Query({
        root: model.root,
        space: model.records,
        bounds: valueBounds(options),
        tag: model.records.name,
        values: true,
        consistent: false,
        prepare: scopedPrepare(this),
        load: entries => entries.map(([key, value]) => [decode(key), JSON.parse(value), key])
      }, options)
    }
    const index = model.index(options.index)
    if (index.covering) {
      // The entries hold the records: no second read, nothing to pair up.
      return new Query({
        root: model.root,
        space: index.space,
        bounds: tupleBounds([], options),
        tag: index.space.name,
        values: true,
        consistent: false,
        prepare: scopedPrepare(this),
        load: entries => entries.map(([key, value]) => {
          const record = JSON.parse(value)
          return [model.idOf(record), record, key]
        })
      }, options)
    }
    return new Query({
      root: model.root,
      space: index.space,
      bounds: tupleBounds([], options),
      tag: index.space.name,
      values: index.unique,
      consistent: true,
      prepare: scopedPrepare(this),
      load: async (entries, snapshot) => {
        const keys = entries.map(([key, value]) => index.unique ? value : encode(/** @type {any[]} */ (decode(key))[1]))
        const stored = await model.readMany(keys, snapshot)
        /** @type {Array<[unknown, any, Uint8Array]>} */
        const items = []
        for (let i = 0; i < keys.length; i++) {
          const value = stored[i]
          if (value === undefined) continue
          const id = decode(keys[i])
          const record = JSON.parse(value)
          // Without a snapshot (browser-level) the record may have changed
          // since its index entry was read: keep it only if it still has it.
          if (!snapshot && !hasEntry(index, record, id, keys[i], entries[i][0])) continue
          items.push([id, record, entries[i][0]])
        }
        return items
      }
    }, options)
  }

  /** Number of records (or index entries in range, with `index`). */
  async count (options = {}) {
    return this.query(options).count()
  }
}

/**
 * Options for reading records: none without a snapshot (getSync() has a fast
 * path for that); with one, the encodings too, else abstract-level clones the
 * options on every read.
 * @param {any} snapshot
 * @returns {any}
 */
function readOptions (snapshot) {
  return snapshot ? { snapshot, keyEncoding: 'view', valueEncoding: 'utf8' } : undefined
}

/** @param {string | undefined} value */
function parseStored (value) {
  return value === undefined ? undefined : JSON.parse(value)
}

/**
 * getBy() inside a write scope: what the scope sees, its own writes included.
 * @param {import('./transaction.js').Transaction} scope @param {CollectionModel} model
 * @param {IndexSpec} index @param {Uint8Array} key
 */
async function getByInScope (scope, model, index, key) {
  const owner = await scope.get(index.space, key)
  if (owner === undefined || index.covering) return parseStored(owner)
  const stored = await scope.get(model.records, owner)
  return stored === undefined ? undefined : JSON.parse(stored)
}

/**
 * getBy() reading the entry and the record from one snapshot where there
 * are snapshots, so a concurrent update cannot pair them up wrongly.
 * @param {CollectionModel} model @param {IndexSpec} index @param {Uint8Array} key
 */
async function getBySnapshot (model, index, key) {
  const snapshot = model.root.supports.explicitSnapshots ? model.root.snapshot() : undefined
  try {
    const options = snapshot ? { snapshot, keyEncoding: 'view', valueEncoding: 'view' } : undefined
    const owner = await index.space.read(key, model.writer.syncReads, options)
    if (owner === undefined) return undefined
    const [stored] = await model.readMany([owner], snapshot)
    return stored === undefined ? undefined : JSON.parse(stored)
  } finally {
    if (snapshot) await snapshot.close()
  }
}

/** @param {unknown} value */
function isDefined (value) {
  return value !== undefined
}

/**
 * The JSON of a record with `"id":id` as its first property, from the JSON of
 * the record without one: no second JSON.stringify.
 * @param {string} json @param {number} id
 */
function withIdJson (json, id) {
  return json.length === 2 ? `{"id":${id}}` : `{"id":${id},${json.slice(1)}`
}

/**
 * @param {IndexSpec} index @param {any} record @param {unknown} id
 * @param {Uint8Array} idBytes @param {Uint8Array} entryKey
 */
function hasEntry (index, record, id, idBytes, entryKey) {
  try {
    return index.entries(record, id, idBytes).some(entry => compareBytes(entry.key, entryKey) === 0)
  } catch {
    return false
  }
}

/** @param {IndexSpec} index @param {unknown} value */
function encodeIndexValue (index, value) {
  try {
    return encode([value])
  } catch (err) {
    throw invalid(`Not a valid value for index "${index.name}": ${/** @type {Error} */ (err).message}`, { cause: err })
  }
}

/** @param {unknown} record @param {string} what */
function recordJson (record, what) {
  if (record === null || typeof record !== 'object' || Array.isArray(record)) {
    throw invalid(`${what} must be a plain object, got ${describe(record)}`)
  }
  return encodeJson(record, what)
}

/** @param {unknown} record @param {string} what */
function parseRecord (record, what) {
  return JSON.parse(recordJson(record, what))
}

/** @param {unknown} value @returns {string} */
export function describe (value) {
  if (value instanceof Uint8Array) return `bytes(${value.length})`
  if (typeof value === 'string') return JSON.stringify(value)
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined) return String(value)
  if (Array.isArray(value)) return `[${value.map(describe).join(', ')}]`
  return typeof value
}

/**
 * Freeze a parsed JSON value all the way down, so user callbacks cannot make
 * what is indexed differ from what is stored.
 * @template T
 * @param {T} value
 * @returns {T}
 */
function deepFreeze (value) {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const key of Object.keys(value)) deepFreeze(/** @type {any} */ (value)[key])
  }
  return value
}
