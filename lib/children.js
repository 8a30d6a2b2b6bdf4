import { encode } from './tuple.js'
import { invalid, levelkitError, codes } from './errors.js'
import { encodeJson } from './json-value.js'
import { parseInteger, decodeKey } from './stored.js'
import { assertName, layout } from './names.js'
import { Namespace } from './namespace.js'
import { Query, BACKEND_LIMIT } from './query.js'
import { tupleBounds } from './bounds.js'
import { compareBytes } from './bytes.js'
import { ModelHandle, modelOf, scopeOf, readThrough, after, allOf, promised, transactionIn } from './model-handle.js'
import { describe, noop, readInput, elementsOf } from './common.js'
import { optionsOf } from './options.js'
import { batchSizeOf, loadInBatches } from './bulk.js'
import { KeyPerChild, ChildBlocks, regroupChildren } from './child-layouts.js'
import { IndexState } from './index-state.js'
import { onWrittenTo } from './written-listeners.js'
import { layoutReady, layoutPrepare, layoutWrite } from './layout-moves.js'

const ON_DELETE = ['cascade', 'restrict', 'purge']

// Children deleted per batch by a background purge: bounded, so deleting a
// parent with millions of children never builds a huge batch.
const PURGE_CHUNK = 1000
const PURGE_RETRIES = 5

const MAX_BLOCK_SIZE = 1024

// Blocks looked at to tell whether a database without a stored blockSize
// keeps its blocks at the declared size.
const SAMPLE_BLOCKS = 256

// Children a watcher reads at a time.
const WATCH_PAGE = 64

/** @typedef {import('./write-scope.js').WriteScope} WriteScope */

/**
 * Ordered children of a parent record (messages of a chat): `<name>` holds
 * [parentId, seq] -> value, or with `blockSize` `<name>.blocks` holds blocks
 * of that many children per value (lib/child-layouts.js); `<name>.seq` holds
 * the last seq per parent.
 * Sequence numbers start at 1 per parent and have no gaps: they are assigned
 * in the critical section and persisted in the same batch as the child.
 *
 * With onDelete 'purge', deleting a parent writes a marker in `<name>.purge`
 * in the same batch; from then on the parent's children are invisible, and a
 * background job deletes them in bounded batches, removing the marker (and
 * the sequence) with the last one. The job resumes after a restart.
 */
export class ChildrenModel {
  /**
   * @param {import('./database.js').Database} db
   * @param {string} name
   * @param {any} options
   * @param {(collection: unknown) => import('./collection.js').CollectionModel} modelOf
   */
  constructor (db, name, options, modelOf) {
    assertName(name, 'Children')
    const { parent, onDelete = 'cascade', blockSize } = optionsOf(options, 'db.children()', `Children "${name}"`)
    if (!ON_DELETE.includes(onDelete)) throw invalid(`The onDelete option of children "${name}" must be 'cascade', 'restrict' or 'purge'`)
    if (blockSize !== undefined && !(Number.isInteger(blockSize) && blockSize >= 2 && blockSize <= MAX_BLOCK_SIZE)) {
      throw invalid(`The blockSize option of children "${name}" must be an integer from 2 to ${MAX_BLOCK_SIZE}, got ${describe(blockSize)}`)
    }
    this.name = name
    this.writer = db.writer
    this.root = db.level
    this.parent = modelOf(parent)
    this.onDelete = onDelete
    // Both layouts' namespaces exist so that check() can find children a
    // declaration with another blockSize left, and move them.
    this.keyPerChild = new KeyPerChild(this.root, name, 0)
    this.blocks = new ChildBlocks(this.root, name, blockSize ?? 0, db.readCache)
    /** @type {KeyPerChild | ChildBlocks} */
    this.storage = blockSize === undefined ? this.keyPerChild : this.blocks
    /** the namespace holding the children */
    this.items = this.storage.namespace
    this.sequence = new Namespace(this.root, layout.sequence(name), 'utf8', { cache: true })
    this.writer.registerCache(this.sequence)
    // The blocks other processes write: where the next append() goes (its read hint, appendReads()).
    if (this.storage === this.blocks) {
      const blocks = this.blocks
      const prefix = blocks.namespace.prefix
      this.writer.onRemote(message => {
        if (message === null || message.ops === null) return
        for (const op of message.ops) if (op.type === 'put' && op.prefix === prefix) blocks.heard(op.key)
      })
    }
    this.parent.dependents.push({
      name,
      beforeDelete: (scope, id) => this.beforeDelete(scope, id),
      beforeCreate: (scope, id) => this.beforeCreate(scope, id)
    })
    /** @type {Namespace | null} */
    this.purge = null
    /** @type {Promise<void> | null} */
    this.purging = null
    this.purgeAgain = false
    /** @type {unknown} the error that stopped the last purge, if any */
    this.purgeError = undefined
    if (onDelete === 'purge') {
      if (!this.parent.sequential) {
        throw invalid(`Children "${name}" with onDelete 'purge' need a parent collection with sequence ids (ids that are never reused)`)
      }
      this.purge = new Namespace(this.root, layout.purge(name), 'utf8', { readCache: db.readCache })
      const purge = this.purge
      onWrittenTo(this.writer, [purge], ops => {
        for (const op of ops) {
          if (op.namespace === purge && op.type === 'put') {
            this.startPurge()
            return
          }
        }
      })
      // Resume what a previous process left (started now, so settled()
      // right after declaring waits for it).
      this.startPurge()
    }
    this.layoutKind = /** @type {const} */ ('children')
    /** Whether its children are in the declared layout: reads and writes wait for it (lib/layout-moves.js). */
    this.layoutState = new IndexState()
    /** @type {((scope: WriteScope) => void) | null} */
    this.layoutRecord = null
    /** Start the move of its data into the declared layout, if one is waiting (lib/schema.js). */
    this.startLayoutMove = noop
    db.schema.declareLayout(this)
  }

  /** What the stored schema keeps of the declaration: 0 for one key per child. */
  declaredLayout () {
    return { blockSize: this.storage === this.blocks ? this.blocks.blockSize : 0 }
  }

  /**
   * Whether the children are in the declared layout. The namespace of the
   * other layout must hold nothing; with blocks in use, the blocks must be
   * of the declared size: known if the stored schema says so, else (a
   * database of an earlier levelkit, or another blockSize stored) told
   * from the first SAMPLE_BLOCKS blocks, each of which must be aligned to
   * the size and hold only seqs of its own block (a block of another size
   * that does not show among them is missed: check() reports it).
   * @param {WriteScope} scope @param {Record<string, unknown> | undefined} stored
   */
  async layoutMatches (scope, stored) {
    const other = this.storage === this.blocks ? this.keyPerChild : this.blocks
    if ((await other.namespace.sublevel.keys({ limit: 1 }).all()).length > 0) return false
    if (this.storage !== this.blocks || stored?.blockSize === this.blocks.blockSize) return true
    /** @type {Array<[any, any]>} */
    const sample = await this.blocks.namespace.sublevel.iterator({ limit: SAMPLE_BLOCKS }).all()
    return sample.every(([key, text]) => this.blocks.aligned(key, text))
  }

  /**
   * Move the children of about `size` stored keys into the declared
   * layout, a parent at a time (regroupChildren()): first the parents with
   * a child in the namespace of the other layout, then (with blocks in use)
   * those with blocks, which are rewritten unless each is of the declared
   * size. `progress.after` is where the next batch starts in the phase's
   * namespace, past the last parent done.
   * @param {WriteScope} scope @param {import('./layout-moves.js').LayoutProgress} progress @param {number} size
   */
  async moveLayoutBatch (scope, progress, size) {
    await this.writer.drain()
    const phases = this.storage === this.blocks ? ['keys', 'blocks'] : ['blocks']
    if (progress.phase === null || !phases.includes(progress.phase)) {
      progress.phase = phases[0]
      progress.after = null
    }
    const namespace = progress.phase === 'keys' ? this.keyPerChild.namespace : this.blocks.namespace
    const keys = await namespace.sublevel.keys(progress.after === null ? { limit: size } : { gte: progress.after, limit: size }).all()
    /** @type {unknown[]} */
    const parents = []
    let last = null
    for (const key of keys) {
      const parentKey = encode(/** @type {unknown[]} */ (decodeKey(key, namespace))[0])
      if (last !== null && compareBytes(last, parentKey) === 0) continue
      last = parentKey
      parents.push(/** @type {unknown[]} */ (decodeKey(key, namespace))[0])
    }
    for (const parentId of parents) {
      // Children of a parent being purged are deleted, not moved; so are
      // those of a parent gone (its purge may have ended before this batch
      // reached them; ids are never reused with 'purge').
      const purged = this.purge !== null && (await scope.get(this.purge, encode(parentId)) !== undefined || await scope.get(this.parent.records, encode(parentId)) === undefined)
      progress.done += await regroupChildren(scope, this.storage, this.keyPerChild, this.blocks, parentId, purged)
    }
    if (keys.length === size) {
      progress.after = /** @type {Uint8Array} */ (tupleBounds([parents[parents.length - 1]], {}).lt)
      return false
    }
    const next = phases.indexOf(progress.phase) + 1
    if (next === phases.length) return true
    progress.phase = phases[next]
    progress.after = null
    return false
  }

  /** Run the background purge, or have the running one look again. */
  startPurge () {
    this.purgeAgain = true
    if (!this.purging) {
      this.purging = this.purgeAll().finally(() => { this.purging = null })
    }
    return this.purging
  }

  /** Delete purged parents' children, one bounded batch at a time. */
  async purgeAll () {
    const purge = /** @type {Namespace} */ (this.purge)
    let failures = 0
    this.purgeError = undefined
    while (true) {
      try {
        this.purgeAgain = false
        const finished = await this.writer.run(async scope => {
          await this.writer.drain()
          const [marker] = await purge.sublevel.keys({ limit: 1 }).all()
          if (marker === undefined) return true
          const parentId = decodeKey(marker, purge)
          // At most PURGE_CHUNK children per batch, in either layout.
          const chunk = Math.max(1, Math.floor(PURGE_CHUNK / this.storage.blockSize))
          const keys = await this.items.sublevel.keys({ ...tupleBounds([parentId], {}), limit: chunk }).all()
          for (const key of keys) scope.del(this.items, key)
          if (keys.length < chunk) {
            scope.del(purge, marker)
            scope.del(this.sequence, marker)
          }
          return false
        })
        failures = 0
        // A marker written after the last look is looked at again.
        if (finished && !this.purgeAgain) return
      } catch (err) {
        // Closing the database stops the purge; a later open resumes it.
        if (/** @type {any} */ (err).code === codes.NOT_OPEN || this.writer.closed) return
        // A failed batch is retried with backoff; the markers stay, so a
        // later open resumes it too. settled() reports the last failure.
        if (++failures > PURGE_RETRIES) {
          this.purgeError = err
          return
        }
        await new Promise(resolve => setTimeout(resolve, 50 * 2 ** failures))
      }
    }
  }

  /**
   * True if `parentId`'s children are being purged (so they are invisible).
   * @param {unknown} parentId
   * @param {WriteScope | null} [scope] read through this scope (its own deletes count)
   * @param {WriteScope | null} [section] else, read as stored, as the reads of this scope's critical section (WriteScope#startRead())
   */
  async isPurging (parentId, scope = null, section = null) {
    if (this.purge === null) return false
    const key = encode(parentId)
    const purge = this.purge
    const stored = () => purge.read(key, this.writer.syncReads)
    return (await (scope ? scope.get(purge, key) : section ? section.startRead(stored) : stored())) !== undefined
  }

  /**
   * What append(scope, parentId, ...) reads, as a read hint (lib/writer.js
   * readHints): the parent's record, its sequence and its purge marker,
   * and where the layout guesses the child goes (the block of the seq after
   * the last this process appended; the sequence tells the real one). None
   * for an id the parent collection refuses: append() tells why.
   * @param {unknown} parentId
   * @returns {import('./writer.js').ReadHint[]}
   */
  appendReads (parentId) {
    let key
    try {
      key = this.parent.keyOf(parentId)
    } catch {
      return []
    }
    const hints = [{ namespace: this.parent.records, keys: [key] }, { namespace: this.sequence, keys: [key] }]
    if (this.purge !== null) hints.push({ namespace: this.purge, keys: [key] })
    return hints.concat(this.storage.appendReads(parentId))
  }

  /** @param {WriteScope} scope @param {unknown} parentId */
  async lastSeq (scope, parentId) {
    const key = encode(parentId)
    const stored = await scope.get(this.sequence, key)
    return stored === undefined ? 0 : parseInteger(stored, this.sequence, key)
  }

  /** @param {WriteScope} scope @param {unknown} parentId @param {string} json */
  async append (scope, parentId, json) {
    if (this.layoutRecord !== null) this.layoutRecord(scope)
    const parentKey = this.parent.keyOf(parentId)
    if (await scope.get(this.parent.records, parentKey) === undefined) {
      throw levelkitError(codes.NOT_FOUND, `Children "${this.name}": parent "${this.parent.name}" has no record with id ${describe(parentId)}`, {
        children: this.name, collection: this.parent.name, id: parentId
      })
    }
    const seq = (await this.lastSeq(scope, parentId)) + 1
    await this.storage.append(scope, parentId, seq, json)
    scope.put(this.sequence, parentKey, String(seq))
    return seq
  }

  /**
   * Append values (their JSON, checked by the caller) to one parent's
   * children in one scope, in order: the parent read and the sequence
   * raised once.
   * @param {WriteScope} scope @param {unknown} parentId @param {string[]} jsons
   */
  async appendMany (scope, parentId, jsons) {
    if (this.layoutRecord !== null) this.layoutRecord(scope)
    const parentKey = this.parent.keyOf(parentId)
    if (await scope.get(this.parent.records, parentKey) === undefined) {
      throw levelkitError(codes.NOT_FOUND, `Children "${this.name}": parent "${this.parent.name}" has no record with id ${describe(parentId)}`, {
        children: this.name, collection: this.parent.name, id: parentId
      })
    }
    const seq = await this.lastSeq(scope, parentId)
    await this.storage.appendMany(scope, parentId, seq + 1, jsons)
    scope.put(this.sequence, parentKey, String(seq + jsons.length))
  }

  /** @param {WriteScope} scope @param {unknown} parentId @param {unknown} seq @param {string} json */
  async put (scope, parentId, seq, json) {
    if (this.layoutRecord !== null) this.layoutRecord(scope)
    const n = this.assertChild(parentId, seq)
    if (await this.isPurging(parentId, scope) || !(await this.storage.replace(scope, parentId, n, json))) {
      throw levelkitError(codes.NOT_FOUND, `Children "${this.name}" of ${describe(parentId)} has no item ${describe(seq)}`, { children: this.name, id: parentId, seq })
    }
  }

  /** @param {WriteScope} scope @param {unknown} parentId @param {unknown} seq */
  async del (scope, parentId, seq) {
    if (this.layoutRecord !== null) this.layoutRecord(scope)
    const n = this.assertChild(parentId, seq)
    if (await this.isPurging(parentId, scope)) return false
    return this.storage.remove(scope, parentId, n)
  }

  /** @param {WriteScope} scope @param {unknown} parentId */
  async beforeDelete (scope, parentId) {
    if (this.purge !== null) {
      scope.put(this.purge, encode(parentId), '')
      return
    }
    const { keys, count: kept } = await this.storage.stored(scope, parentId, this.onDelete === 'restrict')
    let count = kept
    // While the children move between layouts, some may be in the other one.
    if (this.layoutState.state !== 'ready') {
      const other = this.storage === this.blocks ? this.keyPerChild : this.blocks
      const old = await other.stored(scope, parentId, this.onDelete === 'restrict')
      count += old.count
      if (this.onDelete !== 'restrict') for (const key of old.keys) scope.del(other.namespace, key)
    }
    if (this.onDelete === 'restrict' && count > 0) {
      throw levelkitError(codes.RESTRICT, `Cannot delete ${describe(parentId)} from "${this.parent.name}": it has ${count} "${this.name}" (onDelete: 'restrict')`, {
        collection: this.parent.name, children: this.name, id: parentId
      })
    }
    for (const key of keys) scope.del(this.items, key)
    scope.del(this.sequence, encode(parentId))
  }

  /**
   * Refuse to give a parent id back to a record while the children of the
   * record that had it are still being purged.
   * @param {WriteScope} scope @param {unknown} parentId
   */
  async beforeCreate (scope, parentId) {
    if (this.purge === null) return
    if (await scope.get(this.purge, encode(parentId)) !== undefined) {
      throw invalid(`Id ${describe(parentId)} of "${this.parent.name}" cannot be reused until the "${this.name}" of the record deleted under it are purged`)
    }
  }

  /**
   * The range of a parent's children in sequence order.
   * @param {unknown} parentId
   * @param {any} options checked by the caller
   * @param {(() => Promise<boolean>) | undefined} scoped
   * @param {import('./transaction.js').Transaction} [transaction] the transaction the range reads in
   * @param {WriteScope | null} [scope] the write scope of the critical section it reads in, if any
   */
  range (parentId, options, scoped, transaction, scope = null) {
    parentId = this.parent.idArg(parentId)
    this.parent.keyOf(parentId)
    const source = this.storage.source(parentId)
    // On IndexedDB, outside scopes and transactions: one request for the
    // children (and their parent's record beside it), not a purge marker
    // read then an iterator (a transaction per step).
    const direct = this.items.idb !== null && scoped === undefined && transaction === undefined
    return new Query({
      root: this.root,
      ...source,
      bounds: tupleBounds([parentId], options),
      // Cursors name the children, not the layout: one stays valid if
      // blockSize changes.
      tag: this.name,
      consistent: false,
      scope,
      transaction,
      ...direct
        ? { scan: (bounds, reverse, tx, limit) => this.directScan(parentId, bounds, reverse, limit ?? Infinity, source) }
        : { prepare: async () => (!scoped || await scoped()) && !(await this.isPurging(parentId, transaction, scope)) }
    }, options)
  }

  /**
   * A range's children on IndexedDB (see range()): with onDelete 'purge',
   * the parent's record is read beside them, in the same transaction, and
   * they are visible if it is there. That is what the purge marker says
   * (written in the batch that deletes the parent, and a record is never
   * created under a marked id; check() reports a marker beside its
   * record), and a caller that needs the parent too (the chat of a page of
   * messages) learns it exists from a page that is not empty.
   * @param {unknown} parentId @param {import('./bounds.js').ByteBounds} bounds @param {boolean} reverse
   * @param {number} limit @param {import('./child-layouts.js').LayoutSource} source
   * @returns {AsyncGenerator<Array<[Uint8Array, any]>>}
   */
  async * directScan (parentId, bounds, reverse, limit, source) {
    const idb = /** @type {import('./idb-direct.js').IdbDirect} */ (this.items.idb)
    if (!idb.ready) {
      // Still opening: the way of other backends.
      if (await this.isPurging(parentId)) return
      if (source.scan !== undefined) {
        yield * source.scan(bounds, reverse, undefined, limit)
        return
      }
      const it = this.items.sublevel.iterator({ ...bounds, reverse, limit: limit > BACKEND_LIMIT ? -1 : limit })
      try {
        for (let entries = await it.nextv(64); entries.length > 0; entries = await it.nextv(512)) yield entries
      } finally {
        await it.close()
      }
      return
    }
    /** @type {Array<[Namespace, Uint8Array]>} */
    const keys = this.purge === null ? [] : [[this.parent.records, this.parent.keyOf(parentId)]]
    yield * this.storage.direct(idb, parentId, bounds, reverse, limit, keys, values => keys.length === 0 || values[0] !== undefined)
  }

  /**
   * Check a parent id and a sequence number, and return the number.
   * @param {unknown} parentId @param {unknown} seq @returns {number}
   */
  assertChild (parentId, seq) {
    this.parent.keyOf(parentId)
    return this.assertSeq(seq)
  }

  /** @param {unknown} seq @returns {number} */
  assertSeq (seq) {
    if (!Number.isSafeInteger(seq) || /** @type {number} */ (seq) < 1) throw invalid(`Sequence numbers of "${this.name}" are positive integers, got ${describe(seq)}`)
    return /** @type {number} */ (seq)
  }
}

/** The public handle of a children set (one per set, plus one per `in(w)` scope). */
export class Children extends ModelHandle {
  /**
   * Append a value to a parent's children.
   * @param {unknown} parentId @param {unknown} value any JSON value
   * @returns {Promise<number>} its sequence number: 1 for the first child, then +1
   */
  append (parentId, value) {
    return promised(() => {
      const parent = modelOf(this).parent.idArg(parentId)
      const json = encodeJson(value, `Value for "${this.name}"`)
      return layoutWrite(this, modelOf(this), scope => modelOf(this).append(scope, parent, json))
    })
  }

  /**
   * Append values (an array, an iterable or an async iterable) to a
   * parent's children in batches of `batchSize`, each batch atomic with the
   * parent's sequence: gap-free sequence numbers, in input order (another
   * append may come between two batches).
   * @param {unknown} parentId @param {Iterable<unknown> | AsyncIterable<unknown>} values
   * @param {{ batchSize?: number }} [options]
   * @returns {Promise<number>} how many were appended
   */
  appendMany (parentId, values, options) {
    return promised(() => {
      const model = modelOf(this)
      const parent = model.parent.idArg(parentId)
      model.parent.keyOf(parent)
      const size = batchSizeOf(options, 'children.appendMany()')
      let n = 0
      return after(layoutReady(model, scopeOf(this) !== null), () => loadInBatches(this, values, size, `The values passed to appendMany() of "${model.name}"`,
        items => items.map(value => encodeJson(value, `Value ${n++} passed to appendMany() of "${model.name}"`)),
        (scope, jsons) => model.appendMany(scope, parent, jsons)))
    })
  }

  /** Replace an existing child. @param {unknown} parentId @param {number} seq @param {unknown} value */
  put (parentId, seq, value) {
    return promised(() => {
      const parent = modelOf(this).parent.idArg(parentId)
      const json = encodeJson(value, `Value for "${this.name}"`)
      return layoutWrite(this, modelOf(this), scope => modelOf(this).put(scope, parent, seq, json))
    })
  }

  /** @param {unknown} parentId @param {number} seq @returns {Promise<boolean>} true if it existed */
  del (parentId, seq) {
    return promised(() => {
      const parent = modelOf(this).parent.idArg(parentId)
      return layoutWrite(this, modelOf(this), scope => modelOf(this).del(scope, parent, seq))
    })
  }

  /** @param {unknown} parentId @param {number} seq @returns {Promise<any>} the value, or undefined */
  async get (parentId, seq) {
    const model = modelOf(this)
    const parent = model.parent.idArg(parentId)
    const n = model.assertChild(parent, seq)
    await layoutReady(model, scopeOf(this) !== null)
    const key = model.storage.keyOf(parent, n)
    const value = model.storage.find(model.storage.parse(await readThrough(this, model.items, key), parent, key), n)
    if (value === undefined || await model.isPurging(parent, scopeOf(this))) return undefined
    return value
  }

  /**
   * Several children of one parent by sequence number, in the order asked,
   * undefined where there is none: point reads, so a known page (say the
   * last 50 of a gap-free sequence) is read without an iterator.
   * @param {unknown} parentId @param {number[]} seqs
   * @returns {Promise<Array<any>>}
   */
  async getMany (parentId, seqs) {
    const model = modelOf(this)
    const storage = model.storage
    const parent = model.parent.idArg(parentId)
    const parentKey = model.parent.keyOf(parent)
    const wanted = elementsOf(seqs, `The sequence numbers passed to getMany() of "${model.name}"`).map(seq => model.assertSeq(seq))
    await layoutReady(model, scopeOf(this) !== null)
    // Each stored value is read once: with blocks, one read serves many seqs.
    /** @type {Uint8Array[]} */
    const keys = []
    /** @type {Map<number, number>} index in `keys` by the stored value's first seq */
    const indexOf = new Map()
    const slots = new Array(wanted.length)
    for (let i = 0; i < wanted.length; i++) {
      const first = storage.first(wanted[i])
      let slot = indexOf.get(first)
      if (slot === undefined) {
        slot = keys.push(storage.keyOf(parent, first)) - 1
        indexOf.set(first, slot)
      }
      slots[i] = slot
    }
    const scope = scopeOf(this)
    /** @type {Array<string | undefined>} */
    const values = scope
      ? await allOf(keys, key => scope.get(model.items, key))
      : await model.items.readMany(keys, model.writer.syncReads)
    // Checked after the values: children go only with their parent (cascade,
    // or a purge marker written before any is deleted), so a parent still
    // there, unmarked, means no read straddled the batch that removed them.
    const gone = scope
      ? await readThrough(this, model.parent.records, parentKey) === undefined || await model.isPurging(parent, scope)
      : await Promise.all([readThrough(this, model.parent.records, parentKey), model.isPurging(parent, null)]).then(([record, purging]) => record === undefined || purging)
    if (gone) return wanted.map(() => undefined)
    const parsed = values.map((value, slot) => storage.parse(value, parent, keys[slot]))
    return wanted.map((seq, i) => storage.find(parsed[slots[i]], seq))
  }

  /**
   * A parent's children in sequence order; iterate `entries()` for [seq, value].
   * @param {unknown} parentId
   * @param {any} [options] gt/gte/lt/lte over seq, limit, reverse, cursor
   */
  range (parentId, options) {
    const model = modelOf(this)
    return model.range(parentId, optionsOf(options, 'children.range()'), layoutPrepare(this, model), transactionIn(this), scopeOf(this))
  }

  /** The last sequence number handed out for `parentId` (0 if none). @param {unknown} parentId */
  lastSeq (parentId) {
    return promised(() => {
      const model = modelOf(this)
      const key = model.parent.keyOf(parentId)
      // What isPurging() reads, without a promise when the read is
      // synchronous; read beside the sequence, not after it (on IndexedDB,
      // two requests of one transaction).
      // In a scope, reads stay one after the other (a transaction checks
      // each against the ones before).
      const early = model.purge !== null && scopeOf(this) === null
      const purging = early ? readThrough(this, /** @type {Namespace} */ (model.purge), key) : undefined
      if (purging instanceof Promise) purging.catch(noop)
      return after(readThrough(this, model.sequence, key), value => {
        if (value === undefined) return 0
        const seq = parseInteger(value, model.sequence, key)
        if (model.purge === null) return seq
        return after(early ? purging : readThrough(this, model.purge, key), marker => marker === undefined ? seq : 0)
      })
    })
  }

  /**
   * Each child appended to `parentId` after sequence number `after`, as
   * [seq, value], in order, as its batch is written: no gap and no
   * duplicate, whatever the consumer's pace. Ends when `signal` aborts, the
   * parent is deleted or the database closes.
   * @param {unknown} parentId
   * @param {{ after?: number, signal?: AbortSignal }} [options] `after` defaults to the current last sequence number
   * @returns {AsyncGenerator<[number, any]>}
   */
  watch (parentId, options) {
    // The arguments are read now, and so is the default starting point: a
    // child appended before the first next() is delivered. What is wrong
    // with them is thrown by the first next().
    /** @type {{ parent: unknown, after?: number, signal?: AbortSignal } | Error} */
    let args
    try {
      args = { parent: modelOf(this).parent.idArg(parentId), ...watchOptions(optionsOf(options, 'children.watch()')) }
    } catch (err) {
      args = /** @type {Error} */ (err)
    }
    // (Outside a scope, as of the call: see Writer#readAsOfCall().)
    const start = args instanceof Error || args.after !== undefined
      ? undefined
      : scopeOf(this) !== null ? this.lastSeq(args.parent) : modelOf(this).writer.readAsOfCall(() => this.lastSeq(/** @type {any} */ (args).parent))
    start?.catch(noop)
    return this.#watch(args, start)
  }

  /**
   * @param {{ parent: unknown, after?: number, signal?: AbortSignal } | Error} args @param {Promise<number> | undefined} start
   * @returns {AsyncGenerator<[number, any]>}
   */
  async * #watch (args, start) {
    const model = modelOf(this)
    if (args instanceof Error) throw args
    const { parent: parentId, after, signal } = args
    let last = after === undefined ? await /** @type {Promise<number>} */ (start) : after
    const { wakeup, stop } = watchParent(model, parentId, signal)
    // Lives as long as this generator: if the generator is dropped while
    // suspended at a yield, it is collected, and the registry removes the
    // listeners that would otherwise stay registered, waking nothing,
    // forever. The finally below must refer to it: V8 keeps a suspended
    // generator's variables only while code still to run uses them.
    const lifeline = {}
    abandoned.register(lifeline, stop, lifeline)
    const ended = () => !!signal?.aborted || model.writer.closed
    try {
      while (!ended()) {
        if (!wakeup.dirty) await wakeup.wait()
        if (ended()) return
        wakeup.dirty = false
        // Whatever woke us, read everything after the last child delivered:
        // that is what makes the stream gap-free and duplicate-free.
        try {
          const parentKey = model.parent.keyOf(parentId)
          if (await readThrough(this, model.parent.records, parentKey) === undefined) return
          // Children are appended with the next sequence number: what is new
          // is the run of seqs from the last delivered up to the last handed
          // out, read with point reads (one read per block), a page at a time,
          // each read whole before any is yielded. No iterator: opening one
          // per wake-up was most of a watcher's cost.
          for (let top = await this.lastSeq(parentId); last < top;) {
            const seqs = Array.from({ length: Math.min(WATCH_PAGE, top - last) }, (_, i) => last + 1 + i)
            const values = await this.getMany(parentId, seqs)
            // None there: deleted one by one, or with the parent (then end).
            if (values.every(value => value === undefined) && await readThrough(this, model.parent.records, parentKey) === undefined) return
            for (let i = 0; i < seqs.length; i++) {
              if (values[i] === undefined) continue
              yield /** @type {[number, any]} */ ([seqs[i], values[i]])
              if (ended()) return
            }
            last = seqs[seqs.length - 1]
          }
        } catch (err) {
          // The database closed under a read: the watch ends, like on abort.
          if (model.writer.closed) return
          throw err
        }
      }
    } finally {
      abandoned.unregister(lifeline)
      stop()
    }
  }

  /** Resolves when no background purge of this children set is running. */
  async settled () {
    const model = modelOf(this)
    while (model.purging) await model.purging
    if (model.purgeError) throw model.purgeError
  }
}

/** Removes the listeners of a watcher whose generator was dropped at a yield. */
const abandoned = new FinalizationRegistry((/** @type {() => void} */ stop) => stop())

/**
 * Whether a watcher must look again: set by writes that concern its parent,
 * cleared by the watcher as it reads. It refers to the watcher's generator
 * only while its consumer waits for a child (through the function that
 * resumes it), never while the generator is suspended at a yield.
 */
class Wakeup {
  dirty = true
  /** @type {(() => void) | null} */
  #resume = null

  notify () {
    this.dirty = true
    const resume = this.#resume
    this.#resume = null
    if (resume) resume()
  }

  /** @returns {Promise<void>} resolves at the next notify() */
  wait () {
    return new Promise(resolve => { this.#resume = resolve })
  }
}

/**
 * Register what a watcher of `parentId`'s children listens to: the batches
 * written that touch the parent's record, its children or its purge marker
 * (no other parent's), the database's close and the abort signal. Made
 * outside the generator, so that no listener refers to it. `stop()` removes
 * them all; ending (close or abort) stops at once, even while the generator
 * is suspended at a yield and no one calls next().
 * @param {ChildrenModel} model @param {unknown} parentId @param {AbortSignal | undefined} signal
 */
function watchParent (model, parentId, signal) {
  const wakeup = new Wakeup()
  const parentKey = model.parent.keyOf(parentId)
  const prefix = /** @type {Uint8Array} */ (tupleBounds([parentId], {}).gte)
  const { items, purge } = model
  const records = model.parent.records
  const concerns = (/** @type {import('./write-scope.js').Op} */ op) =>
    op.namespace === items
      ? op.any === true || startsWith(op.key, prefix)
      : (op.namespace === records || op.namespace === purge) && (op.any === true || sameBytes(op.key, parentKey))
  // On the writer's own listeners, not onWrittenTo(): a watcher is counted there (listenerCounts).
  const stopWritten = model.writer.onWritten(ops => {
    if (ops.some(concerns)) wakeup.notify()
  })
  let stopped = false
  const stop = () => {
    if (stopped) return
    stopped = true
    stopWritten()
    stopClose()
    signal?.removeEventListener('abort', end)
  }
  const end = () => {
    stop()
    wakeup.notify()
  }
  signal?.addEventListener('abort', end)
  const stopClose = model.writer.onClose(end)
  return { wakeup, stop }
}

/** @param {Uint8Array} a @param {Uint8Array} b */
function sameBytes (a, b) {
  return a.length === b.length && startsWith(a, b)
}

/**
 * The options of watch(), checked.
 * @param {Record<string, any>} options
 * @returns {{ after?: number, signal?: AbortSignal }}
 */
function watchOptions ({ after, signal }) {
  if (after !== undefined && !(Number.isSafeInteger(after) && after >= 0)) throw invalid(`The after option must be a non-negative integer, got ${describe(after)}`)
  if (signal !== undefined && !readInput('The signal option', () => signal instanceof AbortSignal)) throw invalid(`The signal option must be an AbortSignal, got ${describe(signal)}`)
  return { after: after === undefined ? undefined : after + 0, signal }
}

/** @param {Uint8Array} bytes @param {Uint8Array} prefix */
function startsWith (bytes, prefix) {
  if (bytes.length < prefix.length) return false
  for (let i = 0; i < prefix.length; i++) if (bytes[i] !== prefix[i]) return false
  return true
}
