import { encode } from './tuple.js'
import { compareBytes, bytesToHex, hexToBytes, bytesToBinaryString } from './bytes.js'
import { tupleBounds } from './bounds.js'
import { Namespace } from './namespace.js'
import { schemaLockFor } from './schema-lock.js'
import { SchemaWatch } from './schema-watch.js'
import { layout } from './names.js'
import { levelkitError, codes } from './errors.js'
import { parseJson, parseRecord, parseFrozenRecord, decodeKey } from './stored.js'
import { ownerKey, holdsEntry } from './indexes.js'
import { onWrittenTo } from './written-listeners.js'
import { describe, errorMessage, noop } from './common.js'

/**
 * @typedef {import('./collection.js').CollectionModel} CollectionModel
 * @typedef {import('./indexes.js').SecondaryIndex} SecondaryIndex
 * @typedef {import('./write-scope.js').WriteScope} WriteScope
 * @typedef {{ unique: boolean, multi: boolean, covering: boolean, version: number }} Declaration
 * @typedef {Declaration & { state: 'ready' | 'clearing' | 'building' | 'failed' | 'undeclared' | 'dropping', after?: string | null, done?: number, total?: number, error?: StoredError }} StoredIndex
 *   `after`: the key of the last record the build indexed (hex), null before the first;
 *   `undeclared`: a process used the collection without declaring the index, so its
 *   entries were not kept: declared again, it is rebuilt; `dropping`: dropUndeclared()
 *   is deleting its entries
 * @typedef {{ code: string, message: string, [detail: string]: unknown }} StoredError
 * @typedef {{ state: string, declared: boolean, done?: number, total?: number, error?: Error }} IndexStatus
 * @typedef {import('./layout-moves.js').LayoutModel} LayoutModel
 * @typedef {import('./layout-moves.js').LayoutProgress} LayoutProgress
 */

// Records indexed (or entries cleared) per critical section: each batch
// holds the write path this long, and writes queued meanwhile go first.
let batchSize = 256

/**
 * How many records a build batch indexes (entries a clearing batch
 * deletes): tests make it small to have many batches.
 * @param {number} n
 */
export function setBuildBatchSize (n) {
  batchSize = n
}

// With no other writes, a build's batches grow (doubling) up to this many
// times the batch size: fewer critical sections, markers and page reads.
// The first write of another caller brings them back to the batch size.
// Not more: pages kept while their batch is written then outlive the young
// generation, and at 16 times (4096 records) garbage collection took 15% of
// a build's CPU profile, against 5% at 256.
const QUIET_GROWTH = 4

// With no other writes, how many of a build's batches may be decided and
// not yet written at a time (lib/writer.js writes them in order).
const QUIET_IN_FLIGHT = 4

/** @type {((page: ReadonlyArray<Uint8Array>) => Promise<void> | void) | null} */
let pageHook = null

/**
 * For tests: call `hook` with the keys of each page of records a build has
 * read ahead, before the critical section that indexes it: writes the hook
 * makes land between the two. Null removes it.
 * @param {((page: ReadonlyArray<Uint8Array>) => Promise<void> | void) | null} hook
 */
export function setBuildPageHook (hook) {
  pageHook = hook
}

// The stored schema's keys: ['index', collection, index] for an index's
// declaration and state (room for relations, children and a schema version).
const INDEX = 'index'

/**
 * What levelkit knows about a database's declarations across runs: for each
 * index, the declaration it was built for and how far it is built, in
 * `:levelkit.meta`. Declaring a collection compares its indexes with that
 * record, in a critical section queued at once, so every write to the
 * collection comes after it and sees each index's state; an index that
 * needs it is then built in the background, a bounded batch per critical
 * section, each batch atomic with its progress marker.
 */
export class Schema {
  /** @type {import('./database.js').Database} */
  #db
  #namespace
  /** @type {Map<CollectionModel, Promise<void>>} comparisons not yet done */
  #comparing = new Map()
  /** @type {Map<SecondaryIndex, Promise<void>>} builds running */
  #builds = new Map()
  /** @type {Map<SecondaryIndex, () => Promise<void>>} per build running, what counts its total (once) */
  #totals = new Map()
  /** @type {Map<LayoutModel, Promise<void>>} layout comparisons and moves running */
  #moves = new Map()
  /** @type {WeakSet<LayoutModel>} models whose move (if they need one) was started */
  #movesStarted = new WeakSet()
  /** @type {Map<LayoutModel, Promise<unknown>>} layout comparisons not yet done */
  #layoutCompares = new Map()
  /** @type {SchemaWatch | null} where other tabs or processes write too: what they change of it */
  #watch = null

  /** @param {import('./database.js').Database} db */
  constructor (db) {
    this.#db = db
    this.#namespace = new Namespace(db.level, layout.schema(), 'utf8')
    if (db.writer.acrossTabs) this.#watch = new SchemaWatch(db.writer, this.#namespace, db.level, model => this.#compare(model))
  }

  /** The stored schema's namespace, where migrations keep the schema version too (lib/migrate.js). */
  get namespace () {
    return this.#namespace
  }

  /**
   * Compare a collection just declared with the stored schema, and start
   * the builds it needs. Returns at once.
   * @param {CollectionModel} model
   */
  declare (model) {
    const writer = this.#db.writer
    if (writer.closed) return
    // run() takes its place in the write path's queue now, before any write
    // the caller makes next: each sees the state of every index.
    const compared = writer.run(() => this.#compare(model)).finally(() => { this.#comparing.delete(model) })
    compared.catch(noop)
    this.#comparing.set(model, compared)
  }

  /**
   * Resolves once every declaration so far is compared with the stored
   * schema, and every layout move under way is over. A move not started
   * stays so: check() then reports the data in the old layout (a program
   * may check data it declared models over to tell whether it is its own,
   * and must not have moved it by then).
   */
  async compared () {
    await Promise.allSettled(this.#comparing.values())
    await Promise.allSettled(this.#layoutCompares.values())
    await Promise.allSettled([...this.#moves].filter(([model]) => model.layoutState.state === 'building' && this.#movesStarted.has(model)).map(([, moved]) => moved))
  }

  /**
   * Compare the layout of a relation or children set just declared with
   * the stored one, and move its data into the declared layout if it is
   * not there yet (lib/layout-moves.js). Starts at once; until it is over,
   * the model's reads and writes wait for its `layoutState`.
   * @param {LayoutModel} model
   */
  declareLayout (model) {
    const state = model.layoutState
    const writer = this.#db.writer
    if (writer.closed) return state.set('ready')
    /** @type {() => void} */
    let start = noop
    const started = new Promise(resolve => {
      start = () => {
        this.#movesStarted.add(model)
        resolve(undefined)
      }
    })
    model.startLayoutMove = start
    writer.onClose(start)
    const moved = this.#layout(model, started).finally(() => { this.#moves.delete(model) })
    moved.catch(noop)
    this.#moves.set(model, moved)
  }

  /**
   * Compare; if the data must move, wait for its first use to start the move.
   * @param {LayoutModel} model @param {Promise<unknown>} started
   */
  async #layout (model, started) {
    const writer = this.#db.writer
    const state = model.layoutState
    const key = encode([model.layoutKind, model.name])
    let declared = model.declaredLayout()
    try {
      // In a critical section queued now: no write to the model is decided
      // before it. Its outcome is the state from the end of the section,
      // not once run() resolves: a write of the model queued meanwhile (a
      // first use after open, lib/layout-moves.js) reads it in its own.
      const compared = writer.run(async scope => {
        const progress = await this.#compareLayout(scope, model, key, declared, false)
        if (state.state === 'unknown') {
          if (progress === null) state.set('ready')
          else {
            state.set('building')
            state.done = progress.done
          }
        }
        return progress
      })
      this.#layoutCompares.set(model, compared.finally(() => this.#layoutCompares.delete(model)).catch(noop))
      let progress = await compared
      declared = model.declaredLayout()
      if (progress === null) return state.state === 'unknown' ? state.set('ready') : undefined
      if (state.state === 'unknown') state.set('building')
      state.done = progress.done
      // Moved from the model's first use (a read, a write), or
      // db.buildIndexes(), db.check(), db.migrate(): not merely declared
      // (a program may declare models over data that is not its own, and
      // refuse it).
      await started
      // On IndexedDB, one tab moves it; another waits, then finds it moved.
      await schemaLockFor(this.#db.level).hold(async () => {
        if (writer.closed) return
        progress = await writer.run(scope => this.#compareLayout(scope, model, key, declared, true))
        while (progress !== null) {
          if (writer.closed) return
          const current = progress
          const finished = await paced(writer, async scope => {
            const finished = await model.moveLayoutBatch(scope, current, batchSize)
            scope.put(this.#namespace, key, JSON.stringify(finished
              ? { ...declared, state: 'ready' }
              : { ...declared, state: 'moving', phase: current.phase, after: current.after === null ? null : bytesToHex(current.after), done: current.done }))
            return finished
          })
          state.done = current.done
          if (finished) progress = null
        }
      })
      if (progress === null) state.set('ready')
      else state.interrupt(levelkitError(codes.NOT_OPEN, `The database was closed before the data of "${model.name}" was moved into its declared layout (the next open resumes it)`))
    } catch (err) {
      if (writer.closed || /** @type {any} */ (err)?.code === codes.NOT_OPEN) {
        state.interrupt(levelkitError(codes.NOT_OPEN, `The database was closed before the data of "${model.name}" was moved into its declared layout (the next open resumes it)`))
        return
      }
      state.set('failed', /** @type {Error} */ (err))
    }
  }

  /**
   * In a critical section: null if the data of `model` is in its declared
   * layout (stored as such), else where its move starts or resumes, with
   * the move's marker stored.
   * @param {WriteScope} scope @param {LayoutModel} model @param {Uint8Array} key @param {Record<string, unknown>} declared
   * @param {boolean} moving whether the move starts now (else nothing is stored for it yet)
   * @returns {Promise<LayoutProgress | null>}
   */
  async #compareLayout (scope, model, key, declared, moving) {
    await scope.writer.drain()
    const value = await current(scope, this.#namespace, key)
    const stored = value === undefined ? undefined : parseJson(value, this.#namespace, key)
    // A model whose declaration depends on what is stored (a relation's
    // IndexedDB index kind) settles it first.
    if (model.settleLayout !== undefined) {
      await model.settleLayout(scope, stored)
      declared = model.declaredLayout()
    }
    this.#watch?.layoutCompared(model, stored)
    const same = stored !== undefined && sameLayout(stored, declared)
    if (same && stored.state === 'ready') return null
    if (same && stored.state === 'moving') {
      return { phase: stored.phase ?? null, after: typeof stored.after === 'string' ? hexToBytes(stored.after) : null, done: stored.done ?? 0 }
    }
    // No stored layout (a database of an earlier levelkit), another one, or
    // a move towards another one: the data says whether it needs moving.
    if (await model.layoutMatches(scope, stored === undefined ? undefined : { ...stored, state: undefined })) {
      this.#deferLayout(model, key, { ...declared, state: 'ready' })
      return null
    }
    // A move whose first phase depends on where the data is (a relation's
    // lists between IndexedDB's two layouts) stores it at once: resumed
    // from the marker, it takes the same way.
    const phase = model.firstLayoutPhase?.() ?? null
    if (moving) scope.put(this.#namespace, key, JSON.stringify({ ...declared, state: 'moving', phase, after: null, done: 0 }))
    return { phase, after: null, done: 0 }
  }

  /**
   * Store a layout record with the model's next write, in its batch (as a
   * collection's declarations are, see onWrite()): declaring writes nothing.
   * @param {LayoutModel} model @param {Uint8Array} key @param {object} record
   */
  #deferLayout (model, key, record) {
    const namespace = this.#namespace
    const writer = this.#db.writer
    const id = namespace.keyId(key)
    const value = JSON.stringify(record)
    model.layoutRecord = scope => scope.push({ type: 'put', id, key, value, sublevel: namespace.sublevel, namespace })
    const stop = onWrittenTo(writer, [namespace], written => {
      // A loop, not some(): a batch that writes the schema beside a bulk load's records has thousands of ops.
      let stored = false
      for (const op of written) {
        if (op.namespace === namespace && (op.id ?? namespace.keyId(op.key)) === id) {
          stored = true
          break
        }
      }
      if (!stored) return
      model.layoutRecord = null
      stop()
    })
    writer.onClose(stop)
  }

  /**
   * Take as moved the relations and children sets whose move waits for
   * their first use but whose data is in the declared layout now (a
   * repair moved it, see check()): their move is started, finds nothing to
   * move, and they are ready when this resolves. Others stay waiting.
   */
  async adoptLayouts () {
    const writer = this.#db.writer
    const adopted = []
    for (const [model, moved] of this.#moves) {
      if (model.layoutState.state !== 'building' || this.#movesStarted.has(model)) continue
      const key = encode([model.layoutKind, model.name])
      const progress = await writer.run(scope => this.#compareLayout(scope, model, key, model.declaredLayout(), false))
      if (progress !== null) continue
      model.startLayoutMove()
      adopted.push(moved)
    }
    await Promise.allSettled(adopted)
  }

  /** The layout moves not over, for db.schemaStatus(). */
  #layoutStatus () {
    /** @type {Record<string, Record<string, IndexStatus>>} */
    const result = {}
    for (const { kind, model } of this.#db.models()) {
      // Collections and counters have no layout.
      if (kind !== 'relation' && kind !== 'children') continue
      const { state, done, error } = /** @type {LayoutModel} */ (model).layoutState
      if (state === 'ready') continue
      /** @type {IndexStatus} */
      const status = { state: state === 'building' ? 'moving' : state, declared: true, done }
      if (error !== null) status.error = error
      result[model.name] = { layout: status }
    }
    return result
  }

  /**
   * Wait until `index` can be read: ready, or (with `wait: false`, or where
   * waiting would never end) reject with LEVELKIT_INDEX_BUILDING; a failed
   * build rejects with its error.
   * @param {CollectionModel} model @param {SecondaryIndex} index
   * @param {boolean} canWait false inside a db.write() callback, which holds the write path the build needs
   * @param {unknown} wait the read's `wait` option
   */
  async whenReady (model, index, canWait, wait) {
    const status = index.status
    if (status.state === 'unknown') {
      const comparing = this.#comparing.get(model)
      // Inside a db.write() callback the comparison may be queued behind it:
      // the callback then reads the index as its writes keep it.
      if (comparing !== undefined && canWait) await comparing
    }
    switch (status.state) {
      case 'ready':
      case 'unknown':
        return
      case 'failed':
        throw status.error
    }
    if (model.writer.closed) throw levelkitError(codes.NOT_OPEN, 'The database is closed')
    if (model.schemaWork !== null) this.#startBuilds(model)
    // Whatever stopped it, a build that is waited for runs.
    this.#start(model, index)
    if (wait === false || !canWait) {
      // Not waited for: a later error, or db.schemaStatus(), has it.
      this.#totals.get(index)?.()
      const why = wait === false
        ? 'and the read was made with { wait: false }'
        : 'and inside a db.write() callback a read cannot wait for it (the build needs the write path): read it outside, or after db.buildIndexes()'
      throw levelkitError(codes.INDEX_BUILDING, `Index "${index.name}" of "${model.name}" is being built (${status.done} of about ${Math.max(status.total, status.done)} records) ${why}`, {
        collection: model.name, index: index.name, done: status.done, total: Math.max(status.total, status.done)
      })
    }
    return status.settled()
  }

  /**
   * Build every declared index that is not ready: resolves when all are,
   * rejects with the error of one that failed (after all have settled).
   */
  async buildIndexes () {
    for (const model of this.#moves.keys()) model.startLayoutMove()
    await Promise.allSettled(this.#moves.values())
    await this.compared()
    const indexes = this.#declaredIndexes()
    for (const { model, index } of indexes) {
      if (model.schemaWork !== null) this.#startBuilds(model)
      if (index.status.state === 'failed' && !schemaChanged(index.status.error)) this.#start(model, index)
    }
    await Promise.all(this.#builds.values())
    for (const { index } of indexes) {
      if (index.status.state === 'failed') throw index.status.error
    }
    for (const { kind, model } of this.#db.models()) {
      // Collections and counters have no layout.
      const state = kind === 'relation' || kind === 'children' ? /** @type {LayoutModel} */ (model).layoutState : null
      if (state !== null && state.state === 'failed') throw state.error
    }
  }

  /**
   * The state of each index of each declared collection, and of the
   * indexes still stored for them but no longer declared.
   * @returns {Promise<Record<string, Record<string, IndexStatus>>>}
   */
  async status () {
    // Not the layout moves: their progress is what it reports.
    await Promise.allSettled(this.#comparing.values())
    await Promise.allSettled(this.#layoutCompares.values())
    await Promise.all([...this.#totals.values()].map(count => count()))
    /** @type {Record<string, Record<string, IndexStatus>>} */
    const result = {}
    for (const { model, index } of this.#declaredIndexes()) {
      const { state, done, total, error } = index.status
      const collection = result[model.name] || (result[model.name] = {})
      /** @type {IndexStatus} */
      const status = { state, declared: true }
      if (state !== 'ready' || done > 0) Object.assign(status, { done, total: Math.max(total, done) })
      if (error !== null) status.error = error
      collection[index.name] = status
    }
    Object.assign(result, this.#layoutStatus())
    for (const { collection, name, stored } of await this.#undeclared()) {
      (result[collection] || (result[collection] = {}))[name] = { state: stored.state === 'dropping' ? 'dropping' : 'undeclared', declared: false }
    }
    return result
  }

  /**
   * Delete the entries and the stored declaration of every index stored for
   * a declared collection but no longer declared, in bounded batches.
   * @returns {Promise<Array<{ collection: string, index: string }>>} what was dropped
   */
  async dropUndeclared () {
    await this.compared()
    const writer = this.#db.writer
    const dropped = []
    for (const { collection, name, key, stored } of await this.#undeclared()) {
      const namespace = new Namespace(this.#db.level, layout.index(collection, name), 'view')
      // Marked first: declared again before it is gone, it is rebuilt.
      if (stored.state !== 'dropping') {
        await writer.run(scope => scope.put(this.#namespace, key, JSON.stringify({ ...stored, state: 'dropping' })))
      }
      for (let finished = false; !finished;) {
        finished = await writer.run(async scope => {
          await writer.drain()
          const keys = await namespace.sublevel.keys({ limit: batchSize }).all()
          for (const entry of keys) scope.del(namespace, entry)
          if (keys.length < batchSize) scope.del(this.#namespace, key)
          return keys.length < batchSize
        })
      }
      dropped.push({ collection, index: name })
    }
    return dropped
  }

  /** @returns {Array<{ model: CollectionModel, index: SecondaryIndex }>} */
  #declaredIndexes () {
    const found = []
    for (const { kind, model } of this.#db.models()) {
      if (kind !== 'collection') continue
      for (const index of model.indexes.values()) found.push({ model, index })
    }
    return found
  }

  /** The stored indexes of declared collections that are not declared. */
  async #undeclared () {
    const declared = new Map()
    for (const { kind, model } of this.#db.models()) if (kind === 'collection') declared.set(model.name, model)
    const found = []
    const stored = await this.#read(() => this.#namespace.sublevel.iterator(tupleBounds([INDEX], {})).all())
    for (const [key, value] of stored) {
      const [, collection, name] = decodeKey(key, this.#namespace)
      const model = declared.get(collection)
      if (model === undefined || model.indexes.has(name)) continue
      found.push({ collection, name, key, stored: parseStored(value, this.#namespace, key) })
    }
    return found
  }

  /**
   * The comparison, as a critical section that writes nothing: each
   * declared index gets its state. What it has to store (the declarations
   * of a collection that holds nothing, the mark of a stored index no
   * longer declared) is stored with the first write to the collection, and
   * the builds it needs start at the first use of the collection (a write,
   * a read of the index) or at db.buildIndexes(): declaring models on a
   * database, even one that is not the program's own, writes nothing.
   * @param {CollectionModel} model
   */
  async #compare (model) {
    await model.writer.drain()
    /** @type {Map<string, { key: Uint8Array, stored: StoredIndex }>} */
    const stored = new Map()
    for (const [key, value] of await this.#namespace.sublevel.iterator(tupleBounds([INDEX, model.name], {})).all()) {
      stored.set(decodeKey(key, this.#namespace)[2], { key, stored: parseStored(value, this.#namespace, key) })
    }
    this.#watch?.indexesCompared(model, stored)
    const hasRecords = await isNotEmpty(model.records)
    /** @type {Array<[SecondaryIndex, StoredIndex]>} */
    const decided = []
    /** @type {Map<string, { key: Uint8Array, value: string }>} */
    const ops = new Map()
    const store = (/** @type {Uint8Array} */ key, /** @type {StoredIndex} */ value) => ops.set(this.#namespace.keyId(key), { key, value: JSON.stringify(value) })
    for (const index of model.indexes.values()) {
      const found = stored.get(index.name)
      stored.delete(index.name)
      const declaration = declarationOf(index)
      /** @type {StoredIndex} */
      let next
      if (found !== undefined && sameDeclaration(found.stored, declaration) && found.stored.state !== 'undeclared' && found.stored.state !== 'dropping') {
        // As built; a build that failed is tried again.
        next = found.stored
      } else if (found !== undefined && await isNotEmpty(index.namespace)) {
        // Entries of another declaration (or of a key function since
        // changed): cleared first, then every record is indexed.
        next = { ...declaration, state: 'clearing', after: null, done: 0, total: 0 }
      } else if (hasRecords) {
        // Not stored: a new index, or one of a database written before
        // levelkit stored its schema. Its build only adds entries.
        next = { ...declaration, state: 'building', after: null, done: 0, total: 0 }
      } else {
        // Nothing to build: from its first record on, it is kept as declared.
        next = { ...declaration, state: 'ready' }
        if (found === undefined || found.stored.state !== 'ready' || !sameDeclaration(found.stored, declaration)) store(encode([INDEX, model.name, index.name]), next)
      }
      decided.push([index, next])
    }
    // Writes from now on do not keep them: declared again, they are rebuilt.
    for (const { key, stored: left } of stored.values()) {
      if (left.state !== 'undeclared' && left.state !== 'dropping') store(key, { ...left, state: 'undeclared' })
    }
    for (const [index, next] of decided) {
      // A build's progress, as stored (another tab's or process's, or this
      // one's before a crash); none for a ready index: only this database's
      // own build reports what it indexed (db.schemaStatus()).
      index.status.done = next.state === 'ready' ? 0 : next.done ?? 0
      index.status.total = next.state === 'ready' ? 0 : next.total ?? 0
      index.status.set(next.state === 'failed' ? 'building' : /** @type {any} */ (next.state))
    }
    const builds = decided.filter(([, next]) => next.state !== 'ready').map(([index]) => index)
    if (ops.size > 0 || builds.length > 0) this.#pending(model, ops, builds)
  }

  /**
   * Keep what a comparison has to store until a batch that writes it is
   * written, and the builds it needs until the collection is used.
   * @param {CollectionModel} model @param {Map<string, { key: Uint8Array, value: string }>} ops @param {SecondaryIndex[]} builds
   */
  #pending (model, ops, builds) {
    const work = { ops, builds }
    model.schemaWork = work
    if (ops.size === 0) return
    const stop = onWrittenTo(model.writer, [this.#namespace], written => {
      for (const op of written) if (op.namespace === this.#namespace) ops.delete(op.id ?? op.namespace.keyId(op.key))
      if (ops.size > 0) return
      stop()
      if (work.builds.length === 0 && model.schemaWork === work) model.schemaWork = null
    })
    model.writer.onClose(stop)
  }

  /**
   * A write to the collection, in its critical section: what the comparison
   * has to store goes into the same batch, and its builds start (after it).
   * @param {WriteScope} scope @param {CollectionModel} model
   */
  onWrite (scope, model) {
    const work = /** @type {{ ops: Map<string, { key: Uint8Array, value: string }>, builds: SecondaryIndex[] }} */ (model.schemaWork)
    for (const [id, { key, value }] of work.ops) {
      scope.push({ type: 'put', id, key, value, sublevel: this.#namespace.sublevel, namespace: this.#namespace })
    }
    if (work.builds.length > 0) this.#startBuilds(model)
  }

  /** Start the builds a collection's comparison left for its first use. @param {CollectionModel} model */
  #startBuilds (model) {
    const work = /** @type {{ ops: Map<string, any>, builds: SecondaryIndex[] }} */ (model.schemaWork)
    const builds = work.builds
    work.builds = []
    if (work.ops.size === 0) model.schemaWork = null
    for (const index of builds) this.#start(model, index)
  }

  /** @param {CollectionModel} model @param {SecondaryIndex} index */
  #start (model, index) {
    if (this.#builds.has(index)) return
    const build = this.#build(model, index).finally(() => { this.#builds.delete(index) })
    this.#builds.set(index, build)
  }

  /**
   * Clear and build `index` batch by batch until it is ready or fails. It
   * settles, never rejects: a failure is the index's state. A database
   * closed meanwhile stops it where it is; the next open resumes it.
   * @param {CollectionModel} model @param {SecondaryIndex} index
   */
  async #build (model, index) {
    const status = index.status
    // On IndexedDB, one tab builds it; another waits, then finds it built.
    await schemaLockFor(this.#db.level).hold(() => this.#run(model, index))
    if (status.state !== 'ready' && status.state !== 'failed') {
      status.interrupt(levelkitError(codes.NOT_OPEN, `The database was closed before index "${index.name}" of "${model.name}" was built (the next open resumes it)`))
    }
  }

  /** @param {CollectionModel} model @param {SecondaryIndex} index */
  async #run (model, index) {
    const writer = model.writer
    const status = index.status
    const key = encode([INDEX, model.name, index.name])
    // Tried again (buildIndexes()): waiting again, from where it stopped;
    // not when another tab or process changed its declaration.
    if (status.state === 'failed' && schemaChanged(status.error)) return
    if (status.state === 'failed') status.set('building')
    let stored
    try {
      stored = await this.#read(() => this.#namespace.read(key, false))
    } catch (err) {
      if (writer.closed || /** @type {any} */ (err)?.code === codes.NOT_OPEN) return
      throw err
    }
    /** @type {{ after: Uint8Array | null, done: number, total: number }} */
    const progress = { after: null, done: 0, total: 0 }
    if (stored !== undefined) {
      const found = parseStored(stored, this.#namespace, key)
      // Another tab built it (or got it past its clearing) while this one
      // waited for the schema lock.
      if (sameDeclaration(found, declarationOf(index))) {
        if (found.state === 'ready') {
          // Not this database's build: the progress its comparison read
          // (another build's, under way then) is stale.
          status.done = status.total = 0
          return status.set('ready')
        }
        if (found.state === 'building' && status.state === 'clearing') status.set('building')
      }
      const { after, done, total } = found
      progress.after = typeof after === 'string' ? hexToBytes(after) : null
      progress.done = done ?? 0
      progress.total = total ?? 0
    }
    try {
      while (status.state === 'clearing') {
        if (writer.closed) return
        await writer.run(scope => this.#clearBatch(scope, model, index, key))
      }
      if (progress.after === null && status.state === 'building') progress.done = 0
      if (status.state === 'building') {
        /** @type {Promise<void> | null} */
        let counting = null
        // The total is an estimate for the progress, and a scan of every
        // key: 10-15% of a build's CPU time. Counted only once asked for
        // (db.schemaStatus(), a read told the index is being built), beside
        // the batches.
        this.#totals.set(index, () => (counting ??= countRecords(model).then(n => { progress.total = status.total = Math.max(n, progress.done) }, noop)))
        try {
          if (writer.acrossTabs) await this.#buildFresh(model, index, key, progress)
          else await this.#buildAhead(model, index, key, progress)
        } finally {
          this.#totals.delete(index)
          await counting
        }
      }
    } catch (err) {
      if (writer.closed || /** @type {any} */ (err)?.code === codes.NOT_OPEN) return
      status.set('failed', /** @type {Error} */ (err))
      // A fault of the data (not of the backend) is kept: reads reject with it until a build succeeds.
      const code = /** @type {any} */ (err)?.code
      if (code !== codes.UNIQUE && code !== codes.INVALID && code !== codes.DECODE_ERROR) return
      const failed = { ...declarationOf(index), state: 'failed', after: progress.after === null ? null : bytesToHex(progress.after), done: progress.done, total: progress.total, error: storedError(err) }
      await writer.run(scope => scope.put(this.#namespace, key, JSON.stringify(failed))).catch(noop)
    }
  }

  /**
   * Read what every write decided so far left stored: in a critical
   * section (or beside a db.write() callback that holds the write path,
   * see Writer#read()), since outside one, under a steady stream of writes,
   * there is always a batch being written and drain() can wait a long time.
   * @template T
   * @param {() => Promise<T>} read
   * @returns {Promise<T>}
   */
  #read (read) {
    return this.#db.writer.read(read)
  }

  /**
   * Build batch by batch, each reading its page in its critical section
   * once every write decided before it is written. Where other tabs write
   * the database (IndexedDB): this tab hears of their writes only after
   * they are written, too late for #buildAhead() to tell which records of a
   * page read ahead they changed.
   * @param {CollectionModel} model @param {SecondaryIndex} index @param {Uint8Array} key
   * @param {{ after: Uint8Array | null, done: number, total: number }} progress
   */
  async #buildFresh (model, index, key, progress) {
    const writer = model.writer
    const status = index.status
    while (status.state === 'building') {
      if (writer.closed) return
      const finished = await paced(writer, scope => this.#buildBatch(scope, model, index, key, progress))
      // Ready once its last batch is written: a read it lets through reads what is written.
      if (finished) status.set('ready')
    }
  }

  /**
   * Build with one iterator over the records, reading and computing the
   * entries of batch N+1 while batch N is written; the critical section of
   * a batch then only checks and puts them, with the marker. A record a
   * write changed after its page was read (written since the build started
   * listening, or decided and not yet written) is read again there, as it
   * is now: a write keeps the entries of what it writes (as for every
   * declared index) only as a change from the record it replaces, so the
   * entries of the record as it is are put (again). A record inserted in a
   * page's range after it was read is not in it: its write put its entries.
   * With no other writes, batches grow and follow each other without
   * waiting for the one before to be written; with other writes, each is
   * paced as paced() does, at the batch size.
   * @param {CollectionModel} model @param {SecondaryIndex} index @param {Uint8Array} key
   * @param {{ after: Uint8Array | null, done: number, total: number }} progress
   */
  async #buildAhead (model, index, key, progress) {
    const writer = model.writer
    const status = index.status
    const reader = new PageReader(model, index, progress.after)
    /** @type {Array<Promise<unknown>>} the writes of batches decided and not yet awaited, oldest first */
    const unwritten = []
    /** @type {Promise<Page> | null} */
    let ahead = null
    try {
      let size = batchSize
      let page = await reader.read(size)
      // Decisions are counted from one batch's to the next: the writes of
      // others are decided while a batch is written, before the next is queued.
      let before = writer.decisions
      for (;;) {
        if (pageHook !== null) await pageHook(page.rows.map(row => row.key))
        if (writer.closed) return
        const started = Date.now()
        let at = before
        const current = page
        /** @type {() => void} */
        let onDecided = noop
        const decided = new Promise(resolve => { onDecided = () => resolve(undefined) })
        const written = writer.run(scope => this.#indexPage(scope, model, index, key, progress, current, reader), false, () => {
          at = writer.decisions
          // Alone, read ahead while this batch is written. Not while others
          // write: the pause after the batch is theirs, and reading and
          // computing entries then would take the thread from them (with
          // the read ahead in the pause, 8 writers did 3.5-4.6x fewer
          // writes/s during a build of 200k records, against 1.8-2.6x
          // before the build read ahead; bench/index-build.js).
          if (!current.last && !others(at, before)) {
            ahead = reader.read(Math.min(size * 2, batchSize * QUIET_GROWTH))
            ahead.catch(noop)
          }
          onDecided()
        })
        written.catch(noop)
        await Promise.race([decided, written])
        const busy = others(at, before)
        before = at
        unwritten.push(written)
        if (current.last) {
          while (unwritten.length > 0) await unwritten.shift()
          // Ready once its last batch is written: a read it lets through reads what is written.
          status.set('ready')
          return
        }
        if (busy) {
          // Other writes go on: this batch is written before the next is
          // queued, and a pause as long as it took leaves them the write path.
          size = batchSize
          while (unwritten.length > 0) await unwritten.shift()
          const pause = Math.min(Date.now() - started, MAX_PAUSE_MS)
          if (pause > 0 && !writer.closed) await new Promise(resolve => setTimeout(resolve, pause))
          ahead = reader.read(size)
        } else {
          // Alone: up to QUIET_IN_FLIGHT batches decided and not yet written.
          // The writer writes its groups in order, each one atomic batch, so
          // the marker of a batch is never stored before the entries of the
          // batches before it; the batches decided while one is written go
          // in one group, and the thread computes the next pages meanwhile.
          size = Math.min(size * 2, batchSize * QUIET_GROWTH)
          while (unwritten.length > QUIET_IN_FLIGHT) await unwritten.shift()
        }
        page = await /** @type {Promise<Page>} */ (ahead)
        ahead = null
      }
    } finally {
      // Nothing of the build left running: its writes, its read ahead.
      for (const write of unwritten) await write.catch(noop)
      if (ahead !== null) await /** @type {Promise<Page>} */ (ahead).catch(noop)
      await reader.close()
    }
  }

  /**
   * Index a page read ahead and advance the marker past it, in one
   * critical section (see #buildAhead()). Returns whether it was the last.
   * @param {WriteScope} scope @param {CollectionModel} model @param {SecondaryIndex} index
   * @param {Uint8Array} key @param {{ after: Uint8Array | null, done: number, total: number }} progress
   * @param {Page} page @param {PageReader} reader
   */
  async #indexPage (scope, model, index, key, progress, page, reader) {
    const writer = model.writer
    const records = model.records
    const rows = page.rows
    // A chained batch: cheaper for the backend to take than an array batch of as many ops (lib/writer.js).
    scope.bulk = true
    // No two of its ops have one key: entries of distinct records (a
    // record's entries are distinct, and a unique value two records share
    // throws in #claim()) and the marker. The writer then skips its
    // per-key de-duplication (Writer#writeChained(), which stays correct
    // if a key did repeat: a chained batch applies its ops in order).
    scope.distinctKeys = true
    // Nobody else decides while this runs: what is not pending now in the
    // page's range is not pending until it is done.
    const pending = rows.length > 0 && writer.pending && writer.pendingWithin(records, rows[0].key, rows[rows.length - 1].key)
    for (let row of rows) {
      if (reader.changed(row.key, pending)) {
        const json = await current(scope, records, row.key)
        if (json === undefined) continue
        row = computeRow(index, records, row.key, json)
      }
      if (row.error !== null) throw row.error
      for (const entry of row.entries) {
        if (index.unique) await this.#claim(scope, model, index, entry, row.id, row.key)
        scope.put(index.namespace, entry.key, entry.value)
      }
    }
    const after = rows.length > 0 ? rows[rows.length - 1].key : progress.after
    if (after !== null) reader.passed(after)
    return this.#advance(scope, index, key, progress, after, rows.length, page.last)
  }

  /**
   * Delete a batch of the entries of an older declaration; after the last,
   * the index is built from its first record on, and writes maintain it.
   * @param {WriteScope} scope @param {CollectionModel} model @param {SecondaryIndex} index @param {Uint8Array} key
   */
  async #clearBatch (scope, model, index, key) {
    await model.writer.drain()
    const keys = await index.namespace.sublevel.keys({ limit: batchSize }).all()
    for (const entry of keys) scope.del(index.namespace, entry)
    const cleared = keys.length < batchSize
    scope.put(this.#namespace, key, JSON.stringify({ ...declarationOf(index), state: cleared ? 'building' : 'clearing', after: null, done: 0, total: 0 }))
    // Decided here: the next critical section (a write) keeps the index.
    if (cleared) index.status.set('building')
  }

  /**
   * Index the next batch of records after the marker and advance it, in
   * one critical section: the records are read as they are now (every
   * write decided before is written first), and a write that comes after
   * keeps the entries of the record it writes, as it does for every
   * declared index. Returns whether it was the last batch.
   * @param {WriteScope} scope @param {CollectionModel} model @param {SecondaryIndex} index
   * @param {Uint8Array} key @param {{ after: Uint8Array | null, done: number, total: number }} progress
   */
  async #buildBatch (scope, model, index, key, progress) {
    await model.writer.drain()
    const records = model.records
    /** @type {any} */
    const range = { limit: batchSize }
    if (progress.after !== null) range.gt = progress.after
    const page = await records.sublevel.iterator(range).all()
    for (const [recordKey, json] of page) {
      const id = decodeKey(recordKey, records)
      // Key functions see a frozen record, as on every write.
      const record = parseFrozenRecord(json, records, recordKey)
      for (const entry of index.entries(record, id, recordKey, json)) {
        if (index.unique) await this.#claim(scope, model, index, entry, id, recordKey)
        scope.put(index.namespace, entry.key, entry.value)
      }
    }
    const after = page.length > 0 ? page[page.length - 1][0] : progress.after
    return this.#advance(scope, index, key, progress, after, page.length, page.length < batchSize)
  }

  /**
   * Put a build batch's marker in its critical section, past the `count`
   * records it indexed (up to `after`): ready after the last batch. Returns
   * `finished`.
   * @param {WriteScope} scope @param {SecondaryIndex} index @param {Uint8Array} key
   * @param {{ after: Uint8Array | null, done: number, total: number }} progress
   * @param {Uint8Array | null} after @param {number} count @param {boolean} finished
   */
  #advance (scope, index, key, progress, after, count, finished) {
    const done = progress.done + count
    const total = Math.max(progress.total, done)
    scope.put(this.#namespace, key, JSON.stringify(finished
      ? { ...declarationOf(index), state: 'ready', done, total }
      : { ...declarationOf(index), state: 'building', after: after === null ? null : bytesToHex(after), done, total }))
    // Advanced only as the batch is decided: a batch that throws is done again.
    progress.after = after
    progress.done = index.status.done = done
    progress.total = index.status.total = total
    return finished
  }

  /**
   * Refuse a unique value another record holds (LEVELKIT_UNIQUE naming
   * both). An entry whose record does not hold its value (left by an index
   * of an earlier levelkit, or damage) is replaced.
   * @param {WriteScope} scope @param {CollectionModel} model @param {SecondaryIndex} index
   * @param {import('./indexes.js').IndexEntry} entry @param {unknown} id @param {Uint8Array} idBytes
   */
  async #claim (scope, model, index, entry, id, idBytes) {
    const owner = await current(scope, index.namespace, entry.key)
    if (owner === undefined) return
    const ownerBytes = ownerKey(model, index, owner)
    if (compareBytes(ownerBytes, idBytes) === 0) return
    const stored = await current(scope, model.records, ownerBytes)
    if (stored === undefined) return
    const ownerId = decodeKey(ownerBytes, model.records)
    if (!holdsEntry(index, parseRecord(stored, model.records, ownerBytes), ownerId, ownerBytes, entry.key)) return
    throw levelkitError(codes.UNIQUE, `Index "${index.name}" of "${model.name}" cannot be built: records ${describe(ownerId)} and ${describe(id)} share its value ${describe(entry.indexValue)}; it cannot be read until one of them changes, then db.buildIndexes() builds it`, {
      collection: model.name, index: index.name, value: entry.indexValue, ids: [ownerId, id]
    })
  }
}

// The longest pause between two batches of background work.
const MAX_PAUSE_MS = 50

/**
 * Run one batch of background work (an index build's, a migration's) as a
 * critical section; then, if other writes were decided while it waited and
 * ran, pause as long as that took before the next batch, so the write path
 * is free for them at least half the time. Back to back, each writer that
 * waits for its write between two batches gets one write per batch in:
 * measured with 8 writers during a build, about a tenth of their writes/s
 * without one (bench/index-build.js). With no other writes, batches follow
 * each other at once.
 * @template T
 * @param {import('./writer.js').Writer} writer
 * @param {(scope: WriteScope) => Promise<T> | T} batch
 * @returns {Promise<T>}
 */
export async function paced (writer, batch) {
  const started = Date.now()
  const before = writer.decisions
  const result = await writer.run(batch)
  // One decision is the batch's own.
  if (writer.decisions - before > 1 && !writer.closed) {
    const pause = Math.min(Date.now() - started, MAX_PAUSE_MS)
    if (pause > 0) await new Promise(resolve => setTimeout(resolve, pause))
  }
  return result
}

/**
 * The value of `key` as a critical section that has drained the write path
 * sees it: its own ops, else what is stored, read past the read cache (a
 * build would fill it with values nobody asked for).
 * @param {WriteScope} scope @param {Namespace} namespace @param {Uint8Array} key
 */
function current (scope, namespace, key) {
  if (scope.ops.length > 0 || scope.writer.pending) {
    const id = namespace.keyId(key)
    if (scope.ops.length > 0) scope.index()
    // Decided by this section, else by one before it and not yet written
    // (a build that reads ahead does not wait for them to be written).
    const op = scope.local.get(id) ?? scope.writer.lookup(id)
    if (op !== undefined) return op.type === 'put' ? op.value : undefined
  }
  return namespace.read(key, scope.writer.syncReads, { keyEncoding: 'view', valueEncoding: namespace.valueEncoding })
}

/** Whether `err` says that another tab or process changed the stored schema (lib/schema-watch.js). @param {unknown} err */
function schemaChanged (err) {
  return /** @type {any} */ (err)?.code === codes.SCHEMA_CHANGED
}

/** @param {SecondaryIndex} index @returns {Declaration} */
export function declarationOf (index) {
  return { unique: index.unique, multi: index.multi, covering: index.covering, version: index.version }
}

/**
 * Whether a stored layout record is for the declared layout.
 * @param {any} stored @param {Record<string, unknown>} declared
 */
export function sameLayout (stored, declared) {
  return Object.keys(declared).every(name => JSON.stringify(stored[name]) === JSON.stringify(declared[name]))
}

/** @param {StoredIndex} stored @param {Declaration} declared */
export function sameDeclaration (stored, declared) {
  return stored.unique === declared.unique && stored.multi === declared.multi && stored.covering === declared.covering && stored.version === declared.version
}

/**
 * @param {string} value @param {Namespace} namespace @param {Uint8Array} key
 * @returns {StoredIndex}
 */
function parseStored (value, namespace, key) {
  const stored = parseJson(value, namespace, key)
  if (stored === null || typeof stored !== 'object' || typeof stored.state !== 'string') {
    throw levelkitError(codes.DECODE_ERROR, `"${namespace.name}" holds ${describe(stored)}, not an index's declaration and state: it was written behind levelkit's back, or is damaged`, { namespace: namespace.name })
  }
  return stored
}

/** @param {Namespace} namespace */
async function isNotEmpty (namespace) {
  return (await namespace.sublevel.keys({ limit: 1 }).all()).length > 0
}

/** How many records a collection holds now (for progress: an estimate by the time it is read). @param {CollectionModel} model */
async function countRecords (model) {
  const it = model.records.sublevel.keys()
  let n = 0
  try {
    for (let keys = await it.nextv(1024); keys.length > 0; keys = await it.nextv(1024)) n += keys.length
  } finally {
    await it.close()
  }
  return n
}

/** @param {unknown} err @returns {StoredError} */
function storedError (err) {
  const { code, message, collection, index, value, ids } = /** @type {any} */ (err)
  const stored = { code, message: message ?? errorMessage(err), collection, index, value, ids }
  try {
    JSON.stringify(stored)
    return stored
  } catch {
    // A value JSON cannot hold (bytes): the message names it.
    return { code, message: stored.message, collection, index }
  }
}

/**
 * @typedef {{ key: Uint8Array, id: unknown, entries: import('./indexes.js').IndexEntry[], error: unknown }} Row
 *   a record of a page read ahead, with its entries (or the error computing them gave,
 *   thrown only if the record is indexed as read)
 * @typedef {{ rows: Row[], last: boolean }} Page
 */

/**
 * A record's entries in `index`, or the error its key function (or its
 * decoding) gives.
 * @param {SecondaryIndex} index @param {Namespace} records @param {Uint8Array} key @param {string} json
 * @returns {Row}
 */
function computeRow (index, records, key, json) {
  try {
    const id = decodeKey(key, records)
    // Key functions see a frozen record, as on every write.
    const record = parseFrozenRecord(json, records, key)
    return { key, id, entries: index.entries(record, id, key, json), error: null }
  } catch (err) {
    return { key, id: undefined, entries: [], error: err }
  }
}

// How many keys of records written a build keeps before it first drops
// those its pages have passed.
const PRUNE_AT = 1024

/**
 * The pages of a build that reads ahead: one iterator over the records
 * after the marker, and the keys of records written since it was created
 * (a write listener, added before it), so that a page's critical section
 * knows which records it holds as they were read, not as they are.
 */
class PageReader {
  #records
  #writer
  #index
  #iterator
  /** @type {Set<string>} keys (binary strings, which compare like the bytes) of records written since the iterator was created, past the pages indexed */
  #written = new Set()
  /** the key of the last record indexed, as a binary string: writes up to it need no looking at */
  #passed = ''
  /** the size of #written at which passed() next drops what the pages indexed have passed */
  #pruneAt = PRUNE_AT
  #stop
  #ended = false

  /** @param {CollectionModel} model @param {SecondaryIndex} index @param {Uint8Array | null} after */
  constructor (model, index, after) {
    const records = model.records
    this.#records = records
    this.#writer = model.writer
    this.#index = index
    // Listening first: a write the iterator may not see is heard of, or
    // still pending when a page's critical section looks.
    this.#stop = onWrittenTo(model.writer, [records], ops => {
      for (const op of ops) {
        if (op.namespace !== records) continue
        const name = bytesToBinaryString(op.key)
        if (name > this.#passed) this.#written.add(name)
      }
    })
    /** @type {any} */
    const range = {}
    if (after !== null) range.gt = after
    this.#iterator = records.sublevel.iterator(range)
  }

  /**
   * The next `size` records (fewer: the last page), with their entries.
   * @param {number} size @returns {Promise<Page>}
   */
  async read (size) {
    /** @type {Array<[Uint8Array, string]>} */
    let got = []
    while (!this.#ended && got.length < size) {
      const more = await this.#iterator.nextv(size - got.length)
      if (more.length === 0) this.#ended = true
      got = got.length === 0 ? more : got.concat(more)
    }
    const index = this.#index
    const records = this.#records
    /** @type {Row[]} */
    const rows = new Array(got.length)
    for (let i = 0; i < got.length; i++) {
      const pair = got[i]
      rows[i] = computeRow(index, records, pair[0], pair[1])
    }
    return { rows, last: got.length < size }
  }

  /**
   * Whether the record of `key` may have changed since its page was read:
   * written since, or (`pending`: something is pending in the page's range)
   * decided and not yet written. Both are looked at in one go, with no
   * await between: a batch written meanwhile moves its ops from one to the
   * other at once (Writer#flush()).
   * @param {Uint8Array} key @param {boolean} pending
   */
  changed (key, pending) {
    if (this.#written.size > 0 && this.#written.has(bytesToBinaryString(key))) return true
    return pending && this.#writer.lookup(this.#records.keyId(key)) !== undefined
  }

  /** Records up to `key` are indexed: writes to them need no more looking at. @param {Uint8Array} key */
  passed (key) {
    this.#passed = bytesToBinaryString(key)
    // Now and then, not per page: under many writes the set can be large.
    if (this.#written.size < this.#pruneAt) return
    for (const name of this.#written) if (name <= this.#passed) this.#written.delete(name)
    this.#pruneAt = Math.max(PRUNE_AT, 2 * this.#written.size)
  }

  async close () {
    this.#stop()
    await this.#iterator.close().catch(noop)
  }
}

/**
 * Whether writes other than a batch's own were decided between `before`
 * (when the batch before was decided, or the build began) and `at` (when
 * the batch was decided).
 * @param {number} at @param {number} before
 */
function others (at, before) {
  return at - before > 1
}
