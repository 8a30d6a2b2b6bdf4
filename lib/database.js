import { invalid, levelkitError, codes } from './errors.js'
import { errorMessage, isLevelkitError } from './common.js'
import { Writer } from './writer.js'
import { CollectionModel, Collection } from './collection.js'
import { RelationModel, Relation } from './relation.js'
import { ChildrenModel, Children } from './children.js'
import { CounterModel, Counter } from './counter.js'
import { checkDatabase } from './check.js'
import { runInScope, tracksScopes } from '#context'
import { refuseInsideScope } from './model-handle.js'
import { tupleEncoding } from './tuple.js'
import { assertName } from './names.js'
import { crossTabFor } from './cross-tab.js'
import { setReadCacheBudget } from './namespace.js'
import { optionsOf, optionsObject } from './options.js'

// Values kept per cached namespace by default.
const DEFAULT_READ_CACHE = 10000
// Bytes the read caches of a database hold together by default (estimated).
const DEFAULT_READ_CACHE_BYTES = 64 * 1024 * 1024

/**
 * A levelkit database: one abstract-level database whose namespaces
 * (sublevels) hold the records, indexes, relations, children and counters
 * declared on it, all written through one write path.
 */
export class Database {
  /** @type {Map<string, { kind: string, model: any, handle: any }>} */
  #models = new Map()
  /** @type {WeakMap<object, CollectionModel>} */
  #collections = new WeakMap()
  #ownsLevel
  #closing = /** @type {Promise<void> | null} */ (null)

  /**
   * @param {any} level an open abstract-level 3 database
   * @param {{ syncReads?: boolean, readCache?: number, readCacheBytes?: number, ownsLevel?: boolean }} [options]
   */
  constructor (level, options = {}) {
    this.level = level
    this.#ownsLevel = options.ownsLevel !== false
    const syncReads = options.syncReads !== false && !!level.supports.getSync
    this.writer = new Writer(level, syncReads, crossTabFor(level))
    // Values read with getSync() are kept per namespace (the write path keeps
    // them exact); without getSync (IndexedDB, where other tabs write too)
    // nothing is cached.
    const readCacheBytes = options.readCacheBytes ?? DEFAULT_READ_CACHE_BYTES
    /** @type {number} */
    this.readCache = syncReads && readCacheBytes > 0 ? (options.readCache ?? DEFAULT_READ_CACHE) : 0
    // Bounded in bytes too: values and lists can be large (a relation's
    // list, a block of children).
    if (this.readCache > 0) setReadCacheBudget(level, readCacheBytes)
    // Lets the root refer to the tuple encoding by name ('tuple').
    level.keyEncoding(tupleEncoding)
  }

  /**
   * A namespace of your own in this database: an abstract-level sublevel of
   * the root, whose name cannot collide with a model's. `'tuple'` names the
   * tuple encoding for its keys or values.
   * @param {string} name
   * @param {{ keyEncoding?: any, valueEncoding?: any, [option: string]: unknown }} [options]
   */
  sublevel (name, options = {}) {
    this.#assertNew(name)
    assertName(name, 'Sublevel')
    // Every option is abstract-level's: passed through.
    const given = optionsObject(options, 'db.sublevel()')
    const resolve = (/** @type {any} */ encoding) => encoding === 'tuple' ? tupleEncoding : encoding
    let sublevel
    try {
      sublevel = this.level.sublevel(name, { ...given, keyEncoding: resolve(given.keyEncoding), valueEncoding: resolve(given.valueEncoding) })
    } catch (err) {
      // One abstract-level refuses (an unknown encoding).
      if (isLevelkitError(err)) throw err
      throw invalid(`Sublevel "${name}" cannot be made with these options: ${errorMessage(err)}`, { cause: err })
    }
    this.#models.set(name, { kind: 'sublevel', model: sublevel, handle: sublevel })
    return sublevel
  }

  /**
   * Declare a collection.
   * @param {string} name
   * @param {any} [options] { id, indexes, validate }
   * @returns {Collection}
   */
  collection (name, options) {
    this.#assertNew(name)
    const model = new CollectionModel(this, name, options)
    const handle = new Collection(model)
    this.#collections.set(handle, model)
    this.#models.set(name, { kind: 'collection', model, handle })
    return handle
  }

  /**
   * Declare a many-to-many relation between two collections.
   * @param {string} name
   * @param {{ from: Collection, to: Collection, onDelete?: any, lists?: Array<'from' | 'to'> }} options
   * @returns {Relation}
   */
  relation (name, options) {
    this.#assertNew(name)
    const model = new RelationModel(this, name, options, c => this.#modelOf(c, `Relation "${name}"`))
    const handle = new Relation(model)
    this.#models.set(name, { kind: 'relation', model, handle })
    return handle
  }

  /**
   * Declare ordered children of a collection's records.
   * @param {string} name
   * @param {{ parent: Collection, onDelete?: 'cascade' | 'restrict' | 'purge', blockSize?: number }} options
   * @returns {Children}
   */
  children (name, options) {
    this.#assertNew(name)
    const model = new ChildrenModel(this, name, options, c => this.#modelOf(c, `Children "${name}"`))
    const handle = new Children(model)
    this.#models.set(name, { kind: 'children', model, handle })
    return handle
  }

  /**
   * Declare a set of named integer counters.
   * @param {string} name
   * @returns {Counter}
   */
  counter (name) {
    this.#assertNew(name)
    const model = new CounterModel(this, name)
    const handle = new Counter(model)
    this.#models.set(name, { kind: 'counter', model, handle })
    return handle
  }

  /**
   * Run several model operations as one atomic batch: each operation called
   * as `model.in(w).operation(...)`. Other writes wait until `fn` settles; if
   * it throws, nothing of it is written.
   *
   * @template T
   * @param {(w: import('./write-scope.js').WriteScope) => Promise<T> | T} fn
   * @returns {Promise<T>}
   */
  async write (fn) {
    if (typeof fn !== 'function') throw invalid('write() takes a function (w) => { ... }')
    this.#assertOpen()
    const refused = refuseInsideScope(this.writer)
    if (refused) throw refused
    return this.writer.run(scope => runInScope(scope, async () => {
      // check() called while the callback runs reads beside it rather than
      // wait for it: the callback may be its caller.
      scope.hostsReads = true
      const result = await fn(scope)
      // Wait until no operation of the scope is pending, then close it in the
      // same continuation: an operation started later (a forgotten await)
      // is refused instead of being acknowledged without being committed.
      let idle
      while ((idle = scope.idle()) !== null) await idle
      scope.close()
      return result
    }))
  }

  /**
   * Walk every namespace and report inconsistencies; with `repair: true`,
   * fix them in one batch.
   * @param {{ repair?: boolean }} [options]
   */
  async check (options) {
    const given = optionsOf(options, 'db.check()')
    this.#assertOpen()
    if (given.repair) {
      const refused = refuseInsideScope(this.writer)
      if (refused) throw refused
      // Where the caller cannot be told apart (browsers), a repair started
      // while a db.write() callback runs may be that callback's: it would
      // wait for the callback that waits for it. Refuse rather than risk it.
      if (!tracksScopes && this.writer.inWriteCallback) {
        throw invalid('check({ repair: true }) cannot start while a db.write() callback runs (here it cannot tell whether it was called from that callback, where it would wait forever): call it after the write settles')
      }
    }
    return checkDatabase(this, given)
  }

  /** The declared models, by kind. For the consistency checker and tools. */
  models () {
    return Array.from(this.#models.values(), ({ kind, model }) => ({ kind, model }))
  }

  /** Wait for pending writes, then close the underlying database (if levelkit opened it). */
  close () {
    if (!this.#closing) {
      this.#closing = (async () => {
        await this.writer.close()
        if (this.#ownsLevel) await this.level.close()
      })()
    }
    return this.#closing
  }

  get status () {
    return this.#closing ? 'closed' : this.level.status
  }

  #assertOpen () {
    if (this.#closing || this.level.status !== 'open') {
      throw levelkitError(codes.NOT_OPEN, 'The database is not open')
    }
  }

  /** @param {string} name */
  #assertNew (name) {
    if (typeof name === 'string' && this.#models.has(name)) {
      throw invalid(`A model named "${name}" is already declared on this database`)
    }
  }

  /** @param {unknown} handle @param {string} what */
  #modelOf (handle, what) {
    const model = handle && typeof handle === 'object' ? this.#collections.get(handle) : undefined
    if (!model) throw invalid(`${what} must reference collections declared on the same database`)
    return model
  }
}
