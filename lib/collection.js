import { encode, snapshot } from './tuple.js'
import { compareBytes, bytesToBinaryString } from './bytes.js'
import { invalid, levelkitError, codes } from './errors.js'
import { encodeJson, encodeJsonWithCopy } from './json-value.js'
import { parseRecord, parseInteger, decodeKey } from './stored.js'
import { assertName, layout } from './names.js'
import { bindNative } from './native-collection.js'
import { Namespace, assertNotClosed } from './namespace.js'
import { SecondaryIndex, writeIndexEntries, newRecordEntries, newRecordsEntries, holdsEntry, uniqueEntryKey } from './indexes.js'
import { Query } from './query.js'
import { valueBounds, tupleBounds } from './bounds.js'
import { ModelHandle, modelOf, scopeOf, writeThrough, readThrough, scopedPrepare, after, allOf, promised, transactionOf, transactionIn } from './model-handle.js'
import { lockModeOf } from './transaction.js'
import { describe, isDefined, errorMessage, isLevelkitError, readInput, entriesOf, elementsOf, deepFreeze } from './common.js'
import { optionsOf } from './options.js'
import { batchSizeOf, loadInBatches } from './bulk.js'
import { readKeys, isIncreasing, Gap } from './read-keys.js'
import { RecordVersions, ifVersionOf } from './versions.js'
import { isPlaceholder, PLACEHOLDER_BASE } from './deferred-ids.js'

const SEQUENCE_KEY = encode('last')
// Its name in the sequence namespace's cache.
const SEQUENCE_NAME = bytesToBinaryString(SEQUENCE_KEY)

// Without snapshots, how many times getBy() reads an entry and its record
// while writes keep moving the value on in between, before it reads them as
// a read of the write path, which no write can come between.
const GET_BY_ATTEMPTS = 3
// The id bytes insertReads() gives a unique index's entries: their keys hold only the value.
const EMPTY_KEY = new Uint8Array(0)
// put() reads the record it replaces unless given it (putMany()).
const UNREAD = Symbol('unread')

/**
 * @typedef {import('./write-scope.js').WriteScope} WriteScope
 * @typedef {import('./write-scope.js').Op} Op
 * @typedef {import('./indexes.js').IndexEntry} IndexEntry
 * @typedef {{ name: string, beforeDelete: (scope: WriteScope, id: unknown) => Promise<void>, beforeCreate?: (scope: WriteScope, id: unknown) => Promise<void>, created?: (scope: WriteScope, id: unknown) => void }} Dependent
 *   `created`: a record gets a new sequence id in `scope`, so nothing keyed by it is stored yet
 */

/**
 * The shared state and the write logic of a collection. `Collection` is the
 * public handle: one per collection, plus one per `in(w)` scope.
 */
export class CollectionModel {
  /**
   * @param {import('./database.js').Database} db
   * @param {string} name
   * @param {any} options
   */
  constructor (db, name, options) {
    assertName(name, 'Collection')
    const { id = 'sequence', indexes = {}, validate, versioned = false } = optionsOf(options, 'db.collection()', `Collection "${name}"`)
    if (id !== 'sequence' && typeof id !== 'function') {
      throw invalid(`The id option of collection "${name}" must be 'sequence' or a function record => id`)
    }
    if (validate !== undefined && typeof validate !== 'function') {
      throw invalid(`The validate option of collection "${name}" must be a function`)
    }
    if (typeof versioned !== 'boolean') throw invalid(`The versioned option of collection "${name}" must be a boolean`)
    if (indexes === null || typeof indexes !== 'object') throw invalid(`The indexes option of collection "${name}" must be an object`)
    const specs = entriesOf(indexes, `The indexes option of collection "${name}"`)

    this.db = db
    this.name = name
    this.writer = db.writer
    this.root = db.level
    this.sequential = id === 'sequence'
    /** @type {((record: any) => unknown) | null} */
    this.idFunction = this.sequential ? null : id
    this.validate = validate || null
    this.records = new Namespace(this.root, layout.records(name), 'utf8', { readCache: db.readCache })
    // A versioned collection keeps its version counter there too (see lib/versions.js).
    this.sequence = this.sequential || versioned ? new Namespace(this.root, layout.sequence(name), 'utf8', { cache: true }) : null
    if (this.sequence) this.writer.registerCache(this.sequence)
    if (this.sequential && this.writer.lazySequences) {
      const sequence = /** @type {Namespace} */ (this.sequence)
      sequence.settle = (key, stored) => compareBytes(key, SEQUENCE_KEY) === 0 ? this.settleSequence(stored) : Promise.resolve(stored)
    }
    /** @type {RecordVersions | null} */
    this.versions = this.sequence !== null && versioned ? new RecordVersions(this.root, name, this.sequence, db.readCache) : null
    /** @type {Map<string, SecondaryIndex>} */
    this.indexes = new Map()
    for (const [indexName, spec] of specs) {
      this.indexes.set(indexName, new SecondaryIndex(this.root, name, indexName, spec, db.readCache))
    }
    // User code that sees records gets them frozen, so what it indexes or
    // accepts is what is stored; with none, freezing would only cost time.
    this.showsRecords = this.validate !== null || this.idFunction !== null || this.indexes.size > 0
    /** @type {Dependent[]} */
    this.dependents = []
    /** @type {number | null} the highest stored id when this process first used the sequence */
    this.idFloor = null
    /** The highest id a transaction has taken (it may not have committed yet): no insert hands it out again. */
    this.reservedId = 0
    /**
     * With lazy sequences (Writer#lazySequences): a value the stored sequence
     * is known to be at or past (it never goes down). A delete of a record
     * past it writes the sequence (see del()).
     */
    this.storedSequenceFloor = 0
    /**
     * What the comparison with the stored schema left for the first write
     * (declarations to store) and first use (builds to start), if anything
     * (lib/schema.js).
     * @type {{ ops: Map<string, { key: Uint8Array, value: string }>, builds: SecondaryIndex[] } | null}
     */
    this.schemaWork = null
    // On IndexedDB, a collection kept in a store of its own (open()'s native option).
    /** Whether its record puts carry their index entries (Op.entries): set by bindNative(). */
    this.carriesEntries = false
    bindNative(this)
  }

  /**
   * What inserting `record` reads besides its sequence, as a read hint
   * (lib/writer.js readHints): the entry of each of its unique values
   * (whose holder, if any, refuses it). None for an index whose key
   * function refuses the record: the insert tells why.
   * @param {object} record
   * @returns {import('./writer.js').ReadHint[]}
   */
  insertReads (record) {
    /** @type {import('./writer.js').ReadHint[]} */
    const hints = []
    for (const index of this.indexes.values()) {
      if (!index.unique) continue
      try {
        const keys = index.entries(record, 0, EMPTY_KEY).map(entry => entry.key)
        if (keys.length > 0) hints.push({ namespace: index.namespace, keys })
      } catch {
        // Refused again, and told, by the insert.
      }
    }
    return hints
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
   * An id passed by the user, read once: checked, and if it is not a
   * primitive, replaced by a frozen copy (see snapshot() in tuple.js). Every
   * public method takes its ids through here, synchronously, so what an
   * operation checks is what it writes.
   * @param {unknown} id
   */
  idArg (id) {
    return snapshot(id, this)
  }

  /**
   * The last id the sequence handed out. The first time a process asks, it
   * also reads the highest stored id and takes the larger of the two, so a
   * sequence that lags its records (check() calls that sequence-behind) can
   * never hand out an id in use; after that, the write path is the only
   * writer of both and keeps them in step.
   * @param {WriteScope} scope
   * @returns {Promise<number>}
   */
  async lastId (scope) {
    const stored = await scope.peek(/** @type {Namespace} */ (this.sequence), SEQUENCE_KEY)
    let last = stored === undefined ? 0 : parseInteger(stored, /** @type {Namespace} */ (this.sequence), SEQUENCE_KEY)
    if (scope.defersCounters && this.writer.lazySequences) {
      // A transaction peeks at the sequence as stored, which may lag the
      // records (settleSequence()): the value this tab decided, if it knows
      // it, else the highest stored id, so that it need not try the ids in
      // between one read at a time (nextId()).
      const cache = /** @type {Map<string, any>} */ (/** @type {Namespace} */ (this.sequence).cache)
      const known = cache.get(SEQUENCE_NAME)
      if (known !== undefined) last = Math.max(last, parseInteger(known, /** @type {Namespace} */ (this.sequence), SEQUENCE_KEY))
      else this.idFloor = Math.max(this.idFloor ?? 0, await this.highestStoredId(scope))
    }
    // The floor stays in memory: whether or not this write goes through, no
    // id at or below the highest stored one is ever handed out.
    if (this.idFloor === null) this.idFloor = await this.highestStoredId(scope)
    return Math.max(last, this.idFloor, this.reservedId)
  }

  /**
   * The value of the sequence, as the scope sees it (0 for none).
   * @param {WriteScope} scope
   * @returns {Promise<number>}
   */
  async sequenceValue (scope) {
    const stored = await scope.peek(/** @type {Namespace} */ (this.sequence), SEQUENCE_KEY)
    return stored === undefined ? 0 : parseInteger(stored, /** @type {Namespace} */ (this.sequence), SEQUENCE_KEY)
  }

  /**
   * The value of the sequence as stored, read outside any write (0 for
   * none): what a write decided and has not yet written is not in it.
   * @returns {Promise<number>}
   */
  async storedSequenceValue () {
    const stored = await /** @type {Namespace} */ (this.sequence).read(SEQUENCE_KEY, false)
    const value = stored === undefined ? 0 : parseInteger(stored, /** @type {Namespace} */ (this.sequence), SEQUENCE_KEY)
    // The sequence as stored may lag the records (see settleSequence()).
    return this.sequential && this.writer.lazySequences ? Math.max(value, await this.highestStoredId()) : value
  }

  /**
   * On IndexedDB (Writer#lazySequences) an insert whose batch goes there
   * directly does not write the sequence: the record it writes under the
   * new id says as much, and a request fewer is a quarter of createUser's
   * (bench/RESULTS.md, browser-workload). The sequence's op is still decided,
   * so this tab's cache and the other tabs (told of every batch's keys, they
   * drop what they cached) learn of it. So the sequence is the larger of
   * the stored one and the highest stored id: what this turns the stored
   * value into when a write reads it (WriteScope#get(), under the
   * cross-tab lock), before the cache keeps it. Ids are never reused: a
   * delete of a record past the stored sequence writes the sequence with it
   * (del()), so every id handed out is at or below one or the other.
   * @param {any} stored the raw stored value, or undefined
   * @returns {Promise<string | undefined>}
   */
  async settleSequence (stored) {
    const sequence = /** @type {Namespace} */ (this.sequence)
    const value = stored === undefined ? 0 : parseInteger(stored, sequence, SEQUENCE_KEY)
    if (value > this.storedSequenceFloor) this.storedSequenceFloor = value
    const highest = await this.highestStoredId()
    // Also the floor lastId() would read next (no id at or below it is new).
    if (this.idFloor === null || highest > this.idFloor) this.idFloor = highest
    return highest > value ? String(highest) : stored
  }

  /**
   * The id a new record gets. A transaction takes it without reading the
   * sequence into the attempt (see Transaction#defersCounters): it reserves
   * it in memory, so no other insert hands it out, and reads the record's
   * key, so a put() of that id committed meanwhile is a conflict. An
   * attempt that does not commit leaves its id unused.
   * @param {WriteScope} scope
   * @returns {Promise<number>}
   */
  async nextId (scope) {
    let id = (await this.lastId(scope)) + 1
    if (scope.defersCounters) {
      for (;;) {
        // Another transaction may have reserved one while this one read.
        id = Math.max(id, this.reservedId + 1)
        this.reservedId = id
        // A record there already is one the sequence does not know of yet:
        // a put() of that id whose commit this read waited for (a lock), or
        // an insert outside the attempt decided after it read the sequence.
        if (await scope.get(this.records, encode(id)) === undefined) break
        id++
      }
    }
    return id
  }

  /**
   * The highest id among the written records. (A scope's own puts need not
   * count: each one also raised the sequence in the same scope.)
   * @param {WriteScope} [scope] the write scope of the critical section reading it, if any
   */
  async highestStoredId (scope) {
    await this.writer.drain()
    // Ids of a sequence collection are positive integers below the
    // placeholders (lib/deferred-ids.js); anything else (only there if
    // written behind levelkit's back, or by a bug) is check()'s business.
    const keys = () => this.records.sublevel.keys({ reverse: true, lt: encode(PLACEHOLDER_BASE), limit: 1 })
    const highest = await (scope === undefined ? keys() : scope.startRead(keys)).all()
    const id = highest.length === 0 ? 0 : decodeKey(highest[0], this.records)
    // Keys below the positive numbers (null, booleans, negative numbers) are no ids.
    return typeof id === 'number' && id > 0 ? Math.floor(id) : 0
  }

  /**
   * @param {WriteScope} scope @param {string} json
   * @param {any} [copy] a copy of the record as JSON.parse(json) would make it (recordJsonWithCopy()), this insert's own
   */
  async insert (scope, json, copy) {
    const record = copy ?? JSON.parse(json)
    if (!this.sequential) return this.create(scope, record, json, this.computeId(deepFreeze(record)))
    this.assertNoId(record)
    const id = await this.nextId(scope)
    // After a deferred insert whose batch is not written yet: the sequence
    // holds a placeholder, so this id is one too (see insertDeferred()).
    if (isPlaceholder(id - 1)) return this.#insertWithPlaceholder(scope, record, json)
    // A transaction's id is only reserved (a put() of it may commit first).
    if (!scope.defersCounters) for (const dependent of this.dependents) dependent.created?.(scope, id)
    await this.create(scope, record, json, id)
    // Unstored on IndexedDB: the record makes up for it (settleSequence()).
    scope.raise(/** @type {Namespace} */ (this.sequence), SEQUENCE_KEY, id, this.writer.lazySequences)
    return id
  }

  /**
   * insert(), with the id taken in the statement that writes the section's
   * batch where the write path can (Writer#defersIds, lib/deferred-ids.js):
   * the sequence key is then neither read nor locked by the section. The id
   * it resolves with is a placeholder until the batch is written (the
   * write path answers the section's caller with the real one, when that
   * answer is the id itself): the section may put it in keys and in
   * values as a key's element (relation lists and edges), not in another
   * record's JSON (only the record's own "id" is replaced there), and must
   * not compute with it or branch on its value. Elsewhere, insert().
   * @param {WriteScope} scope @param {string} json
   */
  async insertDeferred (scope, json) {
    if (!this.sequential || scope.defersCounters || !scope.writer.defersIds) return this.insert(scope, json)
    // After a plain insert of the group, not yet written: the batch's bump
    // would count from the stored sequence, under that insert's id, so the
    // next id comes from the one it decided (its lock is held already).
    const decided = scope.decidedPut(/** @type {Namespace} */ (this.sequence), SEQUENCE_KEY)
    if (decided !== undefined && !isPlaceholder(parseInteger(decided, /** @type {Namespace} */ (this.sequence), SEQUENCE_KEY))) return this.insert(scope, json)
    const record = JSON.parse(json)
    this.assertNoId(record)
    return this.#insertWithPlaceholder(scope, record, json)
  }

  /** @param {WriteScope} scope @param {any} record @param {string} json */
  async #insertWithPlaceholder (scope, record, json) {
    const sequence = /** @type {Namespace} */ (this.sequence)
    const id = scope.writer.takePlaceholder(scope, sequence)
    for (const dependent of this.dependents) dependent.created?.(scope, id)
    await this.create(scope, record, json, id)
    // Its value is the placeholder: the batch's statement bumps the stored one instead.
    scope.raise(sequence, SEQUENCE_KEY, id)
    scope.ops[scope.ops.length - 1].deferredSequence = true
    return id
  }

  /**
   * Insert records (their JSON, checked by the caller) in one scope, in
   * order: what as many insert()s would do, or refuse, with the sequence
   * raised once and, for function ids, whether each id is taken read for
   * the whole batch at once (see takenKeys()).
   * @param {WriteScope} scope @param {Array<[string, any]>} pairs each record's JSON and a copy of it (encodeJsonWithCopy())
   * @param {Gap | null} [gap] what the bulk call knows of where its ids are free (see Gap)
   */
  async insertMany (scope, pairs, gap = null) {
    // In a transaction, or after other writes of the same scope: one by one.
    if (scope.defersCounters || scope.ops.length > 0) {
      for (const [json] of pairs) await this.insert(scope, json)
      return
    }
    const records = []
    const ids = []
    const keys = []
    const jsons = []
    /** @type {unknown} what computing the id of record `records.length` threw */
    let failure
    let failed = false
    let last = 0
    if (this.sequential) {
      for (const [, record] of pairs) this.assertNoId(record)
      last = await this.lastId(scope)
      // A deferred insert's placeholder is pending (see insert()): one by one.
      if (isPlaceholder(last)) {
        for (const [json] of pairs) await this.insert(scope, json)
        return
      }
      for (const [json, record] of pairs) {
        const id = ++last
        record.id = id
        records.push(this.seal(record))
        ids.push(id)
        keys.push(encode(id))
        jsons.push(withIdJson(json, id))
        for (const dependent of this.dependents) dependent.created?.(scope, id)
      }
    } else {
      for (const [json, copy] of pairs) {
        const record = deepFreeze(copy)
        try {
          const [id, key] = this.computeIdAndKey(record)
          ids.push(id)
          keys.push(key)
        } catch (err) {
          // Records before it may be refused first (an id that is taken), as
          // insert()s one by one would be.
          failure = err
          failed = true
          break
        }
        records.push(record)
        jsons.push(json)
      }
    }
    // A sequence id is new by construction (see lastId()).
    const taken = this.sequential ? null : await this.takenKeys(scope, keys, gap)
    const indexed = this.indexes.size > 0 ? await newRecordsEntries(scope, this, records, ids, keys, jsons) : null
    // What store() would check and write for each record, in order.
    for (let i = 0; i < records.length; i++) {
      if (taken !== null && taken[i] === 1) {
        throw levelkitError(codes.EXISTS, `Collection "${this.name}" already has a record with id ${describe(ids[i])}`, { collection: this.name, id: ids[i] })
      }
      this.validateRecord(records[i])
      if (indexed !== null) {
        const { added, refusal } = indexed.prepared[i]
        if (refusal !== undefined) throw refusal
        const claimed = indexed.claimed
        for (const [index, entries] of added) {
          for (const entry of entries) {
            if (claimed !== null && claimed.has(entry)) scope.claim(index.namespace, entry.key, entry.value)
            else scope.put(index.namespace, entry.key, entry.value)
          }
        }
      }
      const stamping = this.#put(scope, jsons[i], keys[i], indexed === null ? undefined : indexed.prepared[i].added)
      if (stamping !== undefined) await stamping
    }
    // Unstored on IndexedDB: the last record makes up for it (settleSequence()).
    if (this.sequential) scope.raise(/** @type {Namespace} */ (this.sequence), SEQUENCE_KEY, last, this.writer.lazySequences)
    if (failed) throw failure
  }

  /**
   * Which of `keys` a record has (1) or not (0): one decided and not yet
   * written, a stored one (see readKeys()), or one earlier in `keys`.
   * @param {WriteScope} scope with no ops of its own
   * @param {Uint8Array[]} keys
   * @param {Gap | null} gap
   * @returns {Promise<Uint8Array>}
   */
  async takenKeys (scope, keys, gap) {
    const increasing = isIncreasing(keys)
    const found = await readKeys(scope, this.records, keys, false, gap, increasing)
    const taken = new Uint8Array(keys.length)
    for (let i = 0; i < keys.length; i++) if (found[i] !== undefined) taken[i] = 1
    if (!increasing) {
      // A later record with the same id is refused.
      const seen = new Set()
      for (let i = 0; i < keys.length; i++) {
        const id = this.records.keyId(keys[i])
        if (seen.has(id)) taken[i] = 1
        else seen.add(id)
      }
    }
    return taken
  }

  /** @template {{ id?: unknown }} T @param {T} record @returns {T} */
  assertNoId (record) {
    if (record.id !== undefined) {
      throw invalid(`Records of collection "${this.name}" get their id from its sequence: insert them without an id, or use put(id, record)`)
    }
    return record
  }

  /**
   * Write a new record under `id` (from the sequence, or computed from the
   * record): refused if a record has that id, or one of its unique values.
   * @param {WriteScope} scope @param {any} record parsed from `json` @param {string} json @param {unknown} id
   */
  async create (scope, record, json, id) {
    let stored = json
    if (this.sequential) {
      record.id = id
      stored = withIdJson(json, /** @type {number} */ (id))
    }
    this.seal(record)
    const idBytes = encode(id)
    // A sequence id is new by construction (see lastId()).
    if (!this.sequential && await scope.get(this.records, idBytes) !== undefined) {
      throw levelkitError(codes.EXISTS, `Collection "${this.name}" already has a record with id ${describe(id)}`, { collection: this.name, id })
    }
    await this.store(scope, record, stored, id, idBytes)
    return id
  }

  /**
   * Write a new record whose id is known to be free, with its index entries.
   * @param {WriteScope} scope @param {any} record sealed @param {string} stored its JSON, as stored
   * @param {unknown} id @param {Uint8Array} idBytes
   * @returns {Promise<void> | undefined} a promise only if it has to wait:
   *   a bulk load's batch stores hundreds of records, and most need not
   */
  store (scope, record, stored, id, idBytes) {
    this.validateRecord(record)
    if (this.indexes.size === 0) return this.#put(scope, stored, idBytes)
    const entries = newRecordEntries(scope, this, id, idBytes, record, stored)
    // A promise only if a unique value had to be read.
    return Array.isArray(entries) ? this.#put(scope, stored, idBytes, entries) : entries.then(all => this.#put(scope, stored, idBytes, all))
  }

  /**
   * store()'s end.
   * @param {WriteScope} scope @param {string} stored @param {Uint8Array} idBytes
   * @param {Array<[SecondaryIndex, IndexEntry[]]>} [entries] every entry of the new record, by index, as the
   *   model computed them (indexes without any left out)
   */
  #put (scope, stored, idBytes, entries) {
    if (this.schemaWork !== null) this.db.schema.onWrite(scope, this)
    /** @type {Op} */
    const op = { type: 'put', id: undefined, key: idBytes, value: stored, sublevel: this.records.sublevel, namespace: this.records }
    // A native collection's store keeps the entries' keys in the record's
    // object: handed over, they are not computed again from its JSON (a parse
    // and every key function once more per record). Only there: other ops
    // keep one shape.
    if (entries !== undefined && this.carriesEntries) op.entries = entries
    scope.push(op)
    if (this.versions !== null) return this.versions.stamp(scope, idBytes, false)
  }

  /**
   * Put [id, json] entries (checked by the caller) in one scope, in order:
   * what as many put()s would do, with the records they replace read for
   * the whole batch at once (see readKeys(); not through the read cache,
   * which a load would fill with absent keys).
   * @param {WriteScope} scope @param {Array<[unknown, string]>} entries
   */
  async putMany (scope, entries) {
    const keys = scope.defersCounters || scope.ops.length > 0 || entries.length < 2 ? null : entries.map(([id]) => this.keyOf(id))
    // In a transaction, after other writes of the same scope, or with an id
    // twice (the later put() replaces what the earlier one decided): one by one.
    if (keys === null || (!isIncreasing(keys) && new Set(keys.map(key => this.records.keyId(key))).size < keys.length)) {
      for (const [id, json] of entries) await this.put(scope, id, json)
      return
    }
    const stored = await readKeys(scope, this.records, keys, true)
    for (let i = 0; i < entries.length; i++) await this.put(scope, entries[i][0], entries[i][1], undefined, stored[i])
  }

  /**
   * @param {WriteScope} scope @param {unknown} id @param {string} json
   * @param {number} [ifVersion] write only if the record is at this version
   * @param {string | undefined | typeof UNREAD} [known] the record it replaces, if the caller read it (putMany())
   * @returns {Promise<boolean>} true if created
   */
  async put (scope, id, json, ifVersion, known = UNREAD) {
    const idBytes = this.keyOf(id)
    const parsed = JSON.parse(json)
    const stored = this.sequential && parsed.id === undefined ? withIdJson(json, /** @type {number} */ (id)) : json
    const record = this.seal(this.withId(parsed, id, idBytes))
    this.validateRecord(record)
    const previous = known === UNREAD ? await scope.get(this.records, idBytes) : known
    if (ifVersion !== undefined) await this.expectVersion(scope, id, idBytes, previous, ifVersion)
    if (previous === undefined) {
      for (const dependent of this.dependents) if (dependent.beforeCreate) await dependent.beforeCreate(scope, id)
    }
    const old = previous === undefined ? undefined : parseRecord(previous, this.records, idBytes)
    // Keep the sequence ahead of every id, so insert() never hands this one
    // out and check() finds no record past it. Compared with the sequence
    // itself, not lastId(): an id a transaction took and never committed is
    // past the sequence but not past lastId().
    const raise = this.sequential && /** @type {number} */ (id) > await this.sequenceValue(scope)
    await writeIndexEntries(scope, this, id, idBytes, old, record, stored)
    if (this.schemaWork !== null) this.db.schema.onWrite(scope, this)
    scope.put(this.records, idBytes, stored)
    if (raise) scope.raise(/** @type {Namespace} */ (this.sequence), SEQUENCE_KEY, /** @type {number} */ (id))
    if (this.versions !== null) await this.versions.stamp(scope, idBytes, false)
    return old === undefined
  }

  /**
   * @param {WriteScope} scope
   * @param {unknown} id
   * @param {{ json: string, removed: string[] } | ((record: any) => any)} change a patch, or a function old => new
   * @param {number} [ifVersion] write only if the record is at this version
   */
  async update (scope, id, change, ifVersion) {
    const idBytes = this.keyOf(id)
    const previous = await scope.get(this.records, idBytes)
    if (ifVersion !== undefined) await this.expectVersion(scope, id, idBytes, previous, ifVersion)
    if (previous === undefined) {
      throw levelkitError(codes.NOT_FOUND, `Collection "${this.name}" has no record with id ${describe(id)}`, { collection: this.name, id })
    }
    const old = parseRecord(previous, this.records, idBytes)
    /** @type {any} */
    let next
    if (typeof change === 'function') {
      try {
        // A copy of its own: the function may change it.
        next = change(JSON.parse(previous))
      } catch (err) {
        if (isLevelkitError(err)) throw err
        throw invalid(`The update function for "${this.name}" threw: ${errorMessage(err)}`, { cause: err })
      }
      if (readInput(`The record returned by the update function for "${this.name}"`, () => next instanceof Promise)) {
        throw invalid('An update function must return the new record synchronously, not a promise')
      }
      next = JSON.parse(recordJson(next, `The record returned by the update function for "${this.name}"`))
    } else {
      next = { ...old, ...JSON.parse(change.json) }
      for (const key of change.removed) delete next[key]
    }
    // A patch that leaves the id alone needs no copy to put the id first.
    const record = this.seal(this.sequential && next.id === id ? next : this.withId(next, id, idBytes))
    this.validateRecord(record)
    const json = JSON.stringify(record)
    await writeIndexEntries(scope, this, id, idBytes, old, record, json)
    if (this.schemaWork !== null) this.db.schema.onWrite(scope, this)
    scope.put(this.records, idBytes, json)
    if (this.versions !== null) await this.versions.stamp(scope, idBytes, false)
    // The caller's own copy: an unfrozen record nothing else holds is one.
    return this.showsRecords ? JSON.parse(json) : record
  }

  /**
   * @param {WriteScope} scope @param {unknown} id
   * @param {number} [ifVersion] delete only if the record is at this version
   * @returns {Promise<boolean>} true if it existed
   */
  async del (scope, id, ifVersion) {
    const idBytes = this.keyOf(id)
    const previous = await scope.get(this.records, idBytes)
    if (ifVersion !== undefined) await this.expectVersion(scope, id, idBytes, previous, ifVersion)
    if (previous === undefined) return false
    for (const dependent of this.dependents) await dependent.beforeDelete(scope, id)
    await writeIndexEntries(scope, this, id, idBytes, parseRecord(previous, this.records, idBytes), undefined)
    if (this.schemaWork !== null) this.db.schema.onWrite(scope, this)
    scope.del(this.records, idBytes)
    // Where the stored sequence may lag the records (settleSequence()),
    // the record with the sequence's id, past the stored sequence, was all
    // that held it: the sequence takes over. (A record below it leaves one
    // that holds it: a record decided before this delete is written before
    // it, or with it.)
    if (this.sequential && this.writer.lazySequences && /** @type {number} */ (id) > this.storedSequenceFloor) {
      const current = await this.sequenceValue(scope)
      if (/** @type {number} */ (id) >= current) scope.raise(/** @type {Namespace} */ (this.sequence), SEQUENCE_KEY, /** @type {number} */ (id))
    }
    if (this.versions !== null) await this.versions.stamp(scope, idBytes, true)
    return true
  }

  /**
   * Refuse a write made with `ifVersion` (LEVELKIT_CONFLICT) unless the
   * record is at that version. Only a versioned collection takes one (see
   * ifVersionOf()).
   * @param {WriteScope} scope @param {unknown} id @param {Uint8Array} idBytes
   * @param {string | undefined} previous the stored record @param {number} ifVersion
   */
  expectVersion (scope, id, idBytes, previous, ifVersion) {
    return /** @type {RecordVersions} */ (this.versions).expect(scope, id, idBytes, previous !== undefined, ifVersion)
  }

  /** The id of a stored record. @param {any} record */
  idOf (record) {
    return this.sequential ? record.id : this.computeId(record)
  }

  /**
   * The id the id function gives a (frozen) record, and its key.
   * @param {any} record @returns {[unknown, Uint8Array]}
   */
  computeIdAndKey (record) {
    const id = this.#idFunctionOf(record)
    if (id === null || typeof id !== 'object') return [id, this.keyOf(id)]
    const copy = this.idArg(id)
    return [copy, this.keyOf(copy)]
  }

  /** @param {any} record */
  computeId (record) {
    const id = this.#idFunctionOf(record)
    // idArg() checks an id that is not a primitive (it encodes it to copy it).
    if (id === null || typeof id !== 'object') this.keyOf(id)
    return this.idArg(id)
  }

  /** What the id function returns for `record`, if not undefined. @param {any} record */
  #idFunctionOf (record) {
    let id
    try {
      id = /** @type {Function} */ (this.idFunction)(record)
    } catch (err) {
      if (isLevelkitError(err)) throw err
      throw invalid(`The id function of collection "${this.name}" threw: ${errorMessage(err)}`, { cause: err })
    }
    if (id === undefined) throw invalid(`The id function of collection "${this.name}" returned undefined`)
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
  validateRecord (record) {
    if (!this.validate) return
    try {
      this.validate(record)
    } catch (err) {
      throw invalid(`Invalid record for "${this.name}": ${errorMessage(err)}`, { cause: err, collection: this.name })
    }
  }

  /** @param {string} indexName */
  index (indexName) {
    const index = this.indexes.get(indexName)
    if (!index) throw invalid(`Collection "${this.name}" has no index ${describe(indexName)}`)
    return index
  }
}

/**
 * A collection of records, stored whole as JSON under their id, with its
 * secondary indexes kept in the same atomic batch as every change.
 */
export class Collection extends ModelHandle {
  /** @param {object} record @returns {Promise<unknown>} the new id */
  insert (record) {
    return promised(() => {
      const model = modelOf(this)
      // The serializer's copy of the record (as insertMany() makes): not
      // parsed back from its JSON. Frozen for an id function, as insertMany().
      let [json, copy] = recordJsonWithCopy(record, () => `Record for "${model.name}"`, !model.sequential)
      // It may run again (see Writer#run()): its unique values are claimed.
      // The copy goes to the first run only (it takes the id and is sealed);
      // a run again parses the JSON.
      return writeThrough(this, scope => {
        const given = copy
        copy = undefined
        return model.insert(scope, json, given)
      }, true)
    })
  }

  /**
   * Insert records from an array, an iterable or an async iterable, in
   * batches of `batchSize`, each one atomic with its index entries and its
   * ids; see loadInBatches() in lib/bulk.js.
   * @param {Iterable<object> | AsyncIterable<object>} records
   * @param {{ batchSize?: number }} [options]
   * @returns {Promise<number>} how many were inserted
   */
  insertMany (records, options) {
    return promised(() => {
      const model = modelOf(this)
      const size = batchSizeOf(options, 'collection.insertMany()')
      let n = 0
      // Function ids: the copy is handed to the id function frozen (see
      // insertMany() of the model), frozen here as it is made.
      const freeze = !model.sequential
      const gap = new Gap()
      return loadInBatches(this, records, size, `The records passed to insertMany() of "${model.name}"`,
        items => items.map(record => {
          const at = n++
          return recordJsonWithCopy(record, () => `Record ${at} passed to insertMany() of "${model.name}"`, freeze)
        }),
        (scope, pairs) => model.insertMany(scope, pairs, gap),
        // A batch run again (a refused claim): each record's copy parsed
        // from its JSON, as insert() does (the first run took the copies).
        pairs => pairs.map(([json]) => /** @type {[string, any]} */ ([json, JSON.parse(json)])))
    })
  }

  /**
   * Put [id, record] entries (an array of pairs, a Map, any iterable or
   * async iterable of them) in batches, like insertMany().
   * @param {Iterable<[unknown, object]> | AsyncIterable<[unknown, object]>} entries
   * @param {{ batchSize?: number }} [options]
   * @returns {Promise<number>} how many were put
   */
  putMany (entries, options) {
    return promised(() => {
      const model = modelOf(this)
      const size = batchSizeOf(options, 'collection.putMany()')
      let n = 0
      return loadInBatches(this, entries, size, `The entries passed to putMany() of "${model.name}"`,
        items => items.map(entry => {
          const what = `Entry ${n++} passed to putMany() of "${model.name}"`
          const [id, record] = readInput(what, () => {
            if (!Array.isArray(entry) || entry.length !== 2) throw invalid(`${what} must be an [id, record] pair, got ${describe(entry)}`)
            return [entry[0], entry[1]]
          })
          const key = model.idArg(id)
          model.keyOf(key)
          return /** @type {[unknown, string]} */ ([key, recordJson(record, `The record of ${what.charAt(0).toLowerCase()}${what.slice(1)}`)])
        }),
        (scope, pairs) => model.putMany(scope, pairs))
    })
  }

  /**
   * @param {unknown} id @param {object} record
   * @param {{ ifVersion?: number }} [options]
   * @returns {Promise<boolean>} true if created
   */
  put (id, record, options) {
    return promised(() => {
      const key = modelOf(this).idArg(id)
      const json = recordJson(record, `Record for "${this.name}"`)
      const ifVersion = options === undefined ? undefined : ifVersionOf(modelOf(this), options, 'collection.put()')
      return writeThrough(this, scope => modelOf(this).put(scope, key, json, ifVersion))
    })
  }

  /**
   * Change a record: shallow-merge a patch (a property set to undefined is
   * removed), or replace it with what `fn(old)` returns.
   * @param {unknown} id
   * @param {object | ((record: any) => object)} change
   * @param {{ ifVersion?: number }} [options]
   */
  update (id, change, options) {
    return promised(() => {
      const key = modelOf(this).idArg(id)
      /** @type {string[]} */
      const removed = []
      const arg = typeof change === 'function'
        ? /** @type {(record: any) => any} */ (change)
        : { json: recordJson(change, `Patch for "${this.name}"`, removed), removed }
      const ifVersion = options === undefined ? undefined : ifVersionOf(modelOf(this), options, 'collection.update()')
      return writeThrough(this, scope => modelOf(this).update(scope, key, arg, ifVersion))
    })
  }

  /**
   * @param {unknown} id
   * @param {{ ifVersion?: number }} [options]
   * @returns {Promise<boolean>} true if a record was deleted
   */
  del (id, options) {
    return promised(() => {
      const key = modelOf(this).idArg(id)
      const ifVersion = options === undefined ? undefined : ifVersionOf(modelOf(this), options, 'collection.del()')
      return writeThrough(this, scope => modelOf(this).del(scope, key, ifVersion))
    })
  }

  /**
   * The version of record `id` in a versioned collection: 0 for a record
   * not written since the collection became versioned, undefined for none.
   * @param {unknown} id
   * @returns {Promise<number | undefined>}
   */
  version (id) {
    return promised(() => {
      const model = modelOf(this)
      const versions = model.versions
      if (versions === null) throw invalid(`Collection "${model.name}" is not versioned: declare it with versioned: true`)
      const key = model.keyOf(id)
      const scope = scopeOf(this)
      return scope === null ? readVersion(model, versions, key) : versionInScope(scope, model, versions, key)
    })
  }

  /**
   * @param {unknown} id
   * @param {{ lock?: import('./transaction.js').LockMode }} [options] `lock`: in a transaction, lock the record first
   * @returns {Promise<any>} the record, or undefined
   */
  get (id, options) {
    if (options === undefined) return this.#readOne(id, recordOf)
    return promised(() => {
      const lock = lockModeOf(optionsOf(options, 'collection.get()').lock)
      if (lock === undefined) return this.#readOne(id, recordOf)
      const tx = transactionOf(this)
      const model = modelOf(this)
      const key = model.keyOf(id)
      return after(tx.lockKey(model.records, key, lock), () => after(tx.get(model.records, key), value => recordOf(value, model.records, key)))
    })
  }

  /** @param {unknown} id @returns {Promise<boolean>} */
  has (id) {
    return this.#readOne(id, isDefined)
  }

  /**
   * What `use` makes of the stored value of record `id` (undefined if none).
   * @template T
   * @param {unknown} id @param {(value: string | undefined, namespace: Namespace, key: Uint8Array) => T} use
   * @returns {Promise<T>}
   */
  #readOne (id, use) {
    return promised(() => {
      const model = modelOf(this)
      const key = model.keyOf(id)
      if (scopeOf(this) === null) return model.records.readMany([key], model.writer.syncReads).then((/** @type {Array<string | undefined>} */ values) => use(values[0], model.records, key))
      return after(readThrough(this, model.records, key), value => use(value, model.records, key))
    })
  }

  /** @param {unknown[]} ids @returns {Promise<any[]>} records in the same order; undefined where missing */
  async getMany (ids) {
    const model = modelOf(this)
    const keys = elementsOf(ids, 'The ids passed to getMany()').map(id => model.keyOf(id))
    const scope = scopeOf(this)
    /** @type {Array<string | undefined>} */
    const values = scope
      ? await allOf(keys, key => scope.get(model.records, key))
      : await model.records.readMany(keys, model.writer.syncReads)
    return values.map((value, i) => recordOf(value, model.records, keys[i]))
  }

  /**
   * The record whose unique index `indexName` has `value`, or undefined.
   * @param {string} indexName
   * @param {unknown} value
   * @param {{ lock?: import('./transaction.js').LockMode }} [options] `lock`: in a transaction, lock the index entry and the record first
   * @returns {Promise<any>}
   */
  getBy (indexName, value, options) {
    return promised(() => {
      const model = modelOf(this)
      const index = model.index(indexName)
      if (!index.unique) throw invalid(`getBy() needs a unique index; "${indexName}" of "${model.name}" is not unique: use query({ index, eq })`)
      const key = uniqueEntryKey(index, value)
      const given = options === undefined ? undefined : optionsOf(options, 'collection.getBy()')
      const lock = given === undefined ? undefined : lockModeOf(given.lock)
      const wait = given === undefined ? undefined : waitOf(given)
      if (index.status.ready) return this.#getBy(model, index, key, lock)
      return indexReady(this, model, index, wait).then(() => this.#getBy(model, index, key, lock))
    })
  }

  /**
   * getBy() of an index that can be read.
   * @param {CollectionModel} model @param {SecondaryIndex} index @param {Uint8Array} key
   * @param {import('./transaction.js').LockMode | undefined} lock
   * @returns {any}
   */
  #getBy (model, index, key, lock) {
    if (lock !== undefined) return getByLocked(transactionOf(this), model, index, key, lock)
    const scope = scopeOf(this)
    if (scope) return getByInScope(scope, model, index, key)
    assertNotClosed(model.root)
    // A covering entry is the record: one read, nothing to pair up.
    if (index.covering) return after(index.namespace.read(key, model.writer.syncReads), value => recordOf(value, index.namespace, key))
    if (model.writer.syncReads && index.namespace.sublevel.status === 'open' && model.records.sublevel.status === 'open') {
      // Two synchronous reads need no snapshot to be paired up right: a batch
      // that lands between them (LevelDB writes on its own thread) can only
      // make the record stop holding the value, and then we read both again
      // from one snapshot below. A record that still holds the value holds it
      // now. (One that is gone may have passed the value on in the same
      // batch: that, too, is read again below.)
      const owner = index.namespace.read(key, true)
      if (owner === undefined) return undefined
      const stored = model.records.read(owner, true)
      if (stored !== undefined) {
        const record = parseRecord(stored, model.records, owner)
        if (holdsEntry(index, record, decodeKey(owner, index.namespace), owner, key)) return record
      }
    }
    return getBySnapshot(model, index, key)
  }

  /**
   * Records in id order, or in the order of an index.
   * @param {{ index?: string, gt?: unknown, gte?: unknown, lt?: unknown, lte?: unknown, eq?: unknown, prefix?: unknown[], limit?: number, reverse?: boolean, cursor?: string | null }} [given]
   */
  query (given) {
    const options = optionsOf(given, 'collection.query()')
    const model = modelOf(this)
    const lock = lockModeOf(options.lock)
    const wait = waitOf(options)
    const transaction = lock === undefined ? transactionIn(this) : transactionOf(this)
    if (options.index === undefined) {
      return new Query({
        root: model.root,
        namespace: model.records,
        bounds: valueBounds(options),
        tag: model.records.name,
        values: true,
        consistent: false,
        prepare: scopedPrepare(this),
        scope: scopeOf(this),
        transaction,
        lock,
        load: entries => entries.map(([key, value]) => [decodeKey(key, model.records), parseRecord(value, model.records, key), key])
      }, options)
    }
    const index = model.index(options.index)
    // An index not yet ready is waited for before it is read (ready stays ready).
    const prepare = index.status.ready ? scopedPrepare(this) : readyPrepare(this, model, index, wait)
    if (index.covering) {
      // The entries hold the records: no second read, nothing to pair up.
      return new Query({
        root: model.root,
        namespace: index.namespace,
        bounds: tupleBounds([], options),
        tag: index.namespace.name,
        values: true,
        consistent: false,
        prepare,
        scope: scopeOf(this),
        transaction,
        lock,
        load: entries => entries.map(([key, value]) => {
          const record = parseRecord(value, index.namespace, key)
          return [model.idOf(record), record, key]
        })
      }, options)
    }
    return new Query({
      root: model.root,
      namespace: index.namespace,
      bounds: tupleBounds([], options),
      tag: index.namespace.name,
      values: index.unique,
      consistent: true,
      prepare,
      scope: scopeOf(this),
      transaction,
      lock,
      load: async (entries, snapshot, tx) => {
        const keys = entries.map(([key, value]) => index.unique ? value : encode(/** @type {any[]} */ (decodeKey(key, index.namespace))[1]))
        const stored = tx === undefined
          ? await model.records.readMany(keys, model.writer.syncReads, snapshot)
          : await allOf(keys, key => after(lock === undefined ? null : tx.lockKey(model.records, key, lock), () => tx.get(model.records, key)))
        /** @type {Array<[unknown, any, Uint8Array]>} */
        const items = []
        for (let i = 0; i < keys.length; i++) {
          const value = stored[i]
          if (value === undefined) continue
          const id = decodeKey(keys[i], index.namespace)
          const record = parseRecord(value, model.records, keys[i])
          // Without a snapshot (browser-level) the record may have changed
          // since its index entry was read: keep it only if it still has it.
          if (!snapshot && !holdsEntry(index, record, id, keys[i], entries[i][0])) continue
          items.push([id, record, entries[i][0]])
        }
        return items
      }
    }, options)
  }

  /**
   * Number of records (or index entries in range, with `index`).
   * @param {Parameters<Collection['query']>[0]} [options]
   */
  async count (options) {
    return this.query(optionsOf(options, 'collection.count()')).count()
  }
}

/**
 * The `wait` option of a read that needs an index: false to be refused with
 * LEVELKIT_INDEX_BUILDING rather than wait for its build.
 * @param {{ wait?: unknown }} options
 * @returns {boolean | undefined}
 */
function waitOf (options) {
  const { wait } = options
  if (wait !== undefined && typeof wait !== 'boolean') throw invalid(`The wait option must be a boolean, got ${describe(wait)}`)
  return wait
}

/**
 * Wait until `index` can be read (lib/schema.js). Inside a db.write()
 * callback, which holds the write path its build needs, it cannot wait.
 * @param {Collection} handle @param {CollectionModel} model @param {SecondaryIndex} index @param {boolean | undefined} wait
 */
function indexReady (handle, model, index, wait) {
  const canWait = scopeOf(handle) === null || transactionIn(handle) !== undefined
  return model.db.schema.whenReady(model, index, canWait, wait)
}

/**
 * A query's prepare step for an index that was not ready when the query
 * was made: wait for it, then what the handle's scope needs.
 * @param {Collection} handle @param {CollectionModel} model @param {SecondaryIndex} index @param {boolean | undefined} wait
 */
function readyPrepare (handle, model, index, wait) {
  const scoped = scopedPrepare(handle)
  return async () => {
    if (!index.status.ready) await indexReady(handle, model, index, wait)
    return scoped === undefined ? true : scoped()
  }
}

/**
 * The record a stored value holds (undefined: none).
 * @param {string | undefined} value @param {Namespace} namespace @param {Uint8Array} key
 */
function recordOf (value, namespace, key) {
  return value === undefined ? undefined : parseRecord(value, namespace, key)
}

/**
 * version() inside a write scope: what the scope sees, its own writes included.
 * @param {WriteScope} scope @param {CollectionModel} model
 * @param {RecordVersions} versions @param {Uint8Array} key
 */
async function versionInScope (scope, model, versions, key) {
  if (await scope.get(model.records, key) === undefined) return undefined
  return versions.parse(await scope.get(versions.namespace, key), key)
}

/**
 * version() of what is written: the record, then its entry. An entry is
 * written and deleted with its record, in one batch, so an entry read after
 * the record is the version of a record that exists. Without one, the
 * record was written before the collection was versioned (version 0), or
 * was deleted in between: only then are both read again, with no write
 * landing between the two reads.
 * @param {CollectionModel} model @param {RecordVersions} versions @param {Uint8Array} key
 */
async function readVersion (model, versions, key) {
  const sync = model.writer.syncReads
  if (await model.records.read(key, sync) === undefined) return undefined
  const stored = await versions.namespace.read(key, sync)
  if (stored !== undefined) return versions.parse(stored, key)
  if (!model.root.supports.explicitSnapshots) return model.writer.read(() => readBoth(model, versions, key))
  const snapshot = model.root.snapshot()
  try {
    return await readBoth(model, versions, key, snapshot)
  } finally {
    await snapshot.close()
  }
}

/**
 * The record's version from reads no write lands between: from `snapshot`,
 * or inside Writer.read().
 * @param {CollectionModel} model @param {RecordVersions} versions @param {Uint8Array} key @param {any} [snapshot]
 */
async function readBoth (model, versions, key, snapshot) {
  const [record] = await model.records.readMany([key], model.writer.syncReads, snapshot)
  if (record === undefined) return undefined
  const [stored] = await versions.namespace.readMany([key], model.writer.syncReads, snapshot)
  return versions.parse(stored, key)
}

/**
 * getBy() inside a write scope: what the scope sees, its own writes included.
 * @param {import('./write-scope.js').WriteScope} scope @param {CollectionModel} model
 * @param {SecondaryIndex} index @param {Uint8Array} key
 */
async function getByInScope (scope, model, index, key) {
  const owner = await scope.get(index.namespace, key)
  if (owner === undefined || index.covering) return recordOf(owner, index.namespace, key)
  return recordOf(await scope.get(model.records, owner), model.records, owner)
}

/**
 * getBy() with a lock, in a transaction: the entry locked, then the record
 * it names.
 * @param {import('./transaction.js').Transaction} tx @param {CollectionModel} model
 * @param {SecondaryIndex} index @param {Uint8Array} key @param {import('./transaction.js').LockMode} lock
 */
async function getByLocked (tx, model, index, key, lock) {
  await tx.lockKey(index.namespace, key, lock)
  const owner = await tx.get(index.namespace, key)
  if (owner === undefined || index.covering) return recordOf(owner, index.namespace, key)
  await tx.lockKey(model.records, owner, lock)
  return recordOf(await tx.get(model.records, owner), model.records, owner)
}

/**
 * getBy() reading the entry and the record from one snapshot where there
 * are snapshots, so a concurrent update cannot pair them up wrongly.
 * @param {CollectionModel} model @param {SecondaryIndex} index @param {Uint8Array} key
 */
async function getBySnapshot (model, index, key) {
  if (!model.root.supports.explicitSnapshots) return getByRechecked(model, index, key)
  const snapshot = model.root.snapshot()
  try {
    const owner = await index.namespace.read(key, model.writer.syncReads, { snapshot, keyEncoding: 'view', valueEncoding: 'view' })
    if (owner === undefined) return undefined
    const [stored] = await model.records.readMany([owner], model.writer.syncReads, snapshot)
    return recordOf(stored, model.records, owner)
  } finally {
    await snapshot.close()
  }
}

/**
 * getBy() without snapshots (IndexedDB): the entry, then its record, each
 * read on its own, so a write may land in between and leave the record
 * without the value. The record is kept only if it holds the value; else
 * both are read again, and in the end as a read of the write path.
 * @param {CollectionModel} model @param {SecondaryIndex} index @param {Uint8Array} key
 */
async function getByRechecked (model, index, key) {
  for (let attempt = 0; attempt < GET_BY_ATTEMPTS; attempt++) {
    const found = await ownerHolding(model, index, key)
    if (found !== MOVED_ON) return found
  }
  return model.writer.read(async () => {
    const found = await ownerHolding(model, index, key)
    // Nothing was written between the two reads: the record holds the value.
    return found === MOVED_ON ? undefined : found
  })
}

const MOVED_ON = Symbol('moved on')

/**
 * The record a unique entry names, if it holds the entry's value;
 * undefined if there is no entry; MOVED_ON if the record no longer holds
 * the value (or is gone).
 * @param {CollectionModel} model @param {SecondaryIndex} index @param {Uint8Array} key
 */
async function ownerHolding (model, index, key) {
  const owner = await index.namespace.read(key, model.writer.syncReads)
  if (owner === undefined) return undefined
  const [stored] = await model.records.readMany([owner], model.writer.syncReads)
  if (stored === undefined) return MOVED_ON
  const record = parseRecord(stored, model.records, owner)
  return holdsEntry(index, record, decodeKey(owner, index.namespace), owner, key) ? record : MOVED_ON
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
 * The JSON of a record, read once, and a copy of the record as JSON.parse()
 * would make it (frozen all the way down with `freeze`).
 * @param {unknown} record @param {() => string} what made only for an error
 * @param {boolean} freeze
 * @returns {[string, any]}
 */
function recordJsonWithCopy (record, what, freeze) {
  let array = false
  if (record !== null && typeof record === 'object') {
    // What readInput() does, with no closure per record.
    try {
      array = Array.isArray(record)
    } catch (err) {
      if (isLevelkitError(err)) throw err
      throw invalid(`${what()} could not be read: ${errorMessage(err)}`, { cause: err })
    }
  }
  if (record === null || typeof record !== 'object' || array) {
    throw invalid(`${what()} must be a plain object, got ${describe(record)}`)
  }
  return encodeJsonWithCopy(record, what, freeze)
}

/**
 * The JSON of a record (or patch), read once.
 * @param {unknown} record @param {string} what @param {string[]} [removed] see encodeJson()
 */
function recordJson (record, what, removed) {
  if (record === null || typeof record !== 'object' || readInput(what, () => Array.isArray(record))) {
    throw invalid(`${what} must be a plain object, got ${describe(record)}`)
  }
  return encodeJson(record, what, removed)
}
