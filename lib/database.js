import { invalid, levelkitError, codes } from './errors.js'
import { errorMessage, isLevelkitError, describe } from './common.js'
import { Writer, untrackedSections, readHints } from './writer.js'
import { CollectionModel, Collection } from './collection.js'
import { RelationModel, Relation } from './relation.js'
import { ChildrenModel, Children } from './children.js'
import { CounterModel, Counter } from './counter.js'
import { runInScope, tracksScopes } from '#context'
import { refuseInsideScope } from './model-handle.js'
import { tupleEncoding } from './tuple.js'
import { assertName } from './names.js'
import { crossTabFor } from './cross-tab.js'
import { strictWrites } from './durability.js'
import { setReadCacheBudget, readCacheStats } from './namespace.js'
import { onVersionChange } from './idb-open.js'
import { readCacheDefaults } from './read-cache.js'
import { optionsOf, optionsObject } from './options.js'
import { Transaction, DEFAULT_LOCK_TIMEOUT } from './transaction.js'
import { ReadOnlyTransaction } from './snapshot-transaction.js'
import { Schema } from './schema.js'
import { Migrations } from './migrate.js'
import { loadCheck } from '#check'

// Bytes the read caches of a database hold together by default (estimated).
const DEFAULT_READ_CACHE_BYTES = 64 * 1024 * 1024

/** lib/check.js, once check() has loaded it. @type {typeof import('./check.js') | null} */
let checkModule = null

/**
 * A levelkit database: one abstract-level database whose namespaces
 * (sublevels) hold the records, indexes, relations, children and counters
 * declared on it, all written through one write path.
 */
/** The key of Database's db.write() for levelkit's own callbacks (see there). */
export const writeUntracked = Symbol('levelkit.writeUntracked')

/**
 * Run a db.write() callback in its scope: it settles once the callback and
 * every operation it started have, and the scope is closed then.
 * @template T
 * @param {import('./write-scope.js').WriteScope} scope @param {(w: import('./write-scope.js').WriteScope) => Promise<T> | T} fn
 * @returns {Promise<T>}
 */
async function runCallback (scope, fn) {
  // check() called while the callback runs reads beside it rather than
  // wait for it: the callback may be its caller.
  scope.hostsReads = true
  let result
  try {
    result = await fn(scope)
  } catch (err) {
    // Operations the callback started and did not wait for settle
    // before the critical section ends (closed first: they go no
    // further than their next step). Else one still running asks for
    // its key's lock (locking: 'keys') once the section has let its
    // transaction go, and begins one that nothing ends.
    scope.close()
    let idle
    while ((idle = scope.idle()) !== null) await idle
    throw err
  }
  // Wait until no operation of the scope is pending, then close it in the
  // same continuation: an operation started later (a forgotten await)
  // is refused instead of being acknowledged without being committed.
  let idle
  while ((idle = scope.idle()) !== null) await idle
  scope.close()
  return result
}

export class Database {
  /** @type {Map<string, { kind: string, model: any, handle: any }>} */
  #models = new Map()
  /** @type {WeakMap<object, CollectionModel>} */
  #collections = new WeakMap()
  #ownsLevel
  #closing = /** @type {Promise<void> | null} */ (null)
  /** Why it closed, when not by close(). */
  #closedBy = ''

  /**
   * @param {any} level an open abstract-level 3 database
   * @param {{ syncReads?: boolean, readCache?: number | { size?: number, policy?: import('./read-cache.js').CachePolicy }, readCacheBytes?: number, durability?: 'sync' | 'relaxed', ownsLevel?: boolean, relationIndexes?: boolean | 'entries' | 'lists' }} [options]
   */
  constructor (level, options = {}) {
    this.level = level
    this.#ownsLevel = options.ownsLevel !== false
    /** Whether a new relation with both lists may keep its reverse direction in an IndexedDB index (lib/relation.js). */
    this.relationIndexes = options.relationIndexes !== false
    /**
     * Where such a relation keeps its forward lists: 'entries' (the index's
     * entries only, lib/idb-direct.js) or 'lists' (browser-level's store
     * too), moving a stored relation there; undefined: entries for a new
     * relation, the stored layout for an existing one.
     * @type {'entries' | 'lists' | undefined}
     */
    this.relationEntries = options.relationIndexes === 'entries' || options.relationIndexes === 'lists' ? options.relationIndexes : undefined
    // Another tab opens the IndexedDB database at a newer version (a newer
    // layout): its connection is closed at once so that tab is not blocked
    // (lib/idb-open.js), and this database with it, until the page reloads.
    if (this.#ownsLevel) {
      onVersionChange(level, () => {
        this.#closedBy = ': another tab opened it at a newer version (reload the page)'
        this.close().catch(() => {})
      })
    }
    const syncReads = options.syncReads !== false && !!level.supports.getSync
    this.writer = new Writer(level, syncReads, crossTabFor(level))
    this.writer.durable = options.durability === 'sync'
    this.writer.strict = strictWrites(level)
    // Values read with getSync() are kept per namespace (the write path keeps
    // them exact); without getSync (IndexedDB, where other tabs write too)
    // nothing is cached.
    const readCacheBytes = options.readCacheBytes ?? DEFAULT_READ_CACHE_BYTES
    const readCache = typeof options.readCache === 'number' ? { size: options.readCache } : options.readCache ?? {}
    /** @type {number} entries per namespace */
    this.readCache = syncReads && readCacheBytes > 0 ? (readCache.size ?? readCacheDefaults.size) : 0
    /** How the read caches evict. */
    this.readCachePolicy = readCache.policy ?? readCacheDefaults.policy
    // Bounded in bytes too: values and lists can be large (a relation's
    // list, a block of children).
    if (this.readCache > 0) setReadCacheBudget(level, readCacheBytes, this.readCachePolicy)
    // On IndexedDB, values are kept while this tab holds the leased cross-tab
    // lock instead (lib/idb-direct.js): off where the caches are off.
    if (!syncReads && readCacheBytes > 0 && readCache.size !== 0) this.writer.leaseCache(readCacheBytes)
    // Without getSync (postgres), the write path's section cache instead (lib/section-cache.js), off with the others.
    if (readCacheBytes === 0 || readCache.size === 0) this.writer.sectionCache = null
    // Lets the root refer to the tuple encoding by name ('tuple').
    level.keyEncoding(tupleEncoding)
    /** What each index was declared with and how far it is built (lib/schema.js). */
    this.schema = new Schema(this)
    /** The versioned migrations run on it (lib/migrate.js). */
    this.migrations = new Migrations(this)
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
    this.schema.declare(model)
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
   * @param {{ sync?: boolean, rerunnable?: boolean }} [options]
   * @returns {Promise<T>}
   */
  async write (fn, options) {
    if (typeof fn !== 'function') throw invalid('write() takes a function (w) => { ... }')
    const { sync, rerunnable } = optionsOf(options, 'db.write()')
    if (sync !== undefined && typeof sync !== 'boolean') throw invalid('The sync option of db.write() must be a boolean')
    if (rerunnable !== undefined && typeof rerunnable !== 'boolean') throw invalid('The rerunnable option of db.write() must be a boolean')
    this.#assertOpen()
    const refused = refuseInsideScope(this.writer)
    if (refused) throw refused
    return this.writer.run(scope => runInScope(scope, () => runCallback(scope, fn)), sync === true, null, rerunnable === true)
  }

  /**
   * db.write() for levelkit's own callbacks (ChatStore's), which call every
   * model through `w`: their async context is not tracked (no frame of
   * lib/context-node.js), so they enable no AsyncLocalStorage, whose hook
   * every promise of the process pays while one is enabled. A model call
   * such a callback made without in(w) would wait for it instead of being
   * refused: only for callbacks that make none. Calls made inside a
   * db.write() callback are refused as db.write() refuses them.
   * `hint`: what the callback will read (lib/writer.js readHints).
   * @template T
   * @param {(w: import('./write-scope.js').WriteScope) => Promise<T>} fn
   * @param {boolean} [rerunnable] as db.write()'s option
   * @param {() => import('./writer.js').ReadHint[]} [hint]
   * @returns {Promise<T>}
   */
  [writeUntracked] (fn, rerunnable = false, hint) {
    this.#assertOpen()
    const refused = refuseInsideScope(this.writer)
    if (refused) return Promise.reject(refused)
    /** @param {import('./write-scope.js').WriteScope} scope */
    const section = scope => runCallback(scope, fn)
    untrackedSections.add(section)
    if (hint !== undefined) readHints.set(section, hint)
    return this.writer.run(section, false, null, rerunnable)
  }

  /**
   * Run `fn(tx, attempt)` as a serializable transaction: its reads (through
   * `model.in(tx)`) see the database as of when the attempt began, plus its
   * own writes; its writes are committed as one batch only if nothing it
   * read changed meanwhile, else `fn` runs again (attempt 2, 3, ...), up to
   * `maxRetries` more times. `fn` may therefore run more than once: keep
   * side effects out of it.
   *
   * With `readOnly: true`, every write in `fn` is refused with
   * LEVELKIT_READ_ONLY, and where the backend has explicit snapshots its
   * reads come from one snapshot taken after the call (lib/snapshot-transaction.js):
   * they are never validated, so it does not conflict with writers.
   *
   * @template T
   * @param {(tx: Transaction, attempt: number) => Promise<T> | T} fn
   * @param {TransactionOptions} [options]
   * @returns {Promise<T>}
   */
  async transaction (fn, options) {
    if (typeof fn !== 'function') throw invalid('transaction() takes a function (tx, attempt) => { ... }')
    const settings = transactionSettings(optionsOf(options, 'db.transaction()'))
    this.#assertOpen()
    const refused = refuseInsideScope(this.writer)
    if (refused) throw refused
    for (let attempt = 1; ; attempt++) {
      if (settings.signal?.aborted) throw abortedError(settings.signal)
      const tx = settings.readOnly ? new ReadOnlyTransaction(this.writer, settings, this.level) : new Transaction(this.writer, settings)
      try {
        return await attemptOnce(tx, fn, attempt, settings)
      } catch (err) {
        const code = /** @type {any} */ (err)?.code
        if (code !== codes.CONFLICT && code !== codes.DEADLOCK) throw err
        if (attempt > settings.maxRetries) {
          throw levelkitError(code, `Transaction gave up after ${attempt} attempts (maxRetries: ${settings.maxRetries}): ${errorMessage(err)}`, { cause: err, attempts: attempt })
        }
      } finally {
        tx.finish()
      }
      this.#assertOpen()
      await backoff(attempt)
    }
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
    // Which indexes are built is known once their declarations are compared
    // (not inside a db.write() callback, which a comparison may be queued behind).
    if (!this.writer.inWriteCallback) await this.schema.compared()
    // Loaded on first use (lib/check-lazy.js); once loaded, called at once,
    // as before.
    const { checkDatabase } = checkModule ?? (checkModule = await loadCheck())
    return checkDatabase(this, given)
  }

  /**
   * Build every declared index that is not ready yet (one whose build
   * failed is tried again): resolves once all are ready, rejects with the
   * error of a build that failed.
   * @returns {Promise<void>}
   */
  async buildIndexes () {
    this.#assertOpen()
    const refused = refuseInsideScope(this.writer)
    if (refused) throw refused
    return this.schema.buildIndexes()
  }

  /**
   * Per collection and index: its state ('ready', 'building', 'clearing',
   * 'failed'; for one stored but no longer declared, 'undeclared' or
   * 'dropping'), and while it is built, the records done and (about) how many in all.
   */
  async schemaStatus () {
    this.#assertOpen()
    return this.schema.status()
  }

  /**
   * Run the migrations of `migrations` ([{ version, up (m) { ... } }, ...],
   * versions strictly increasing) that the database has not run yet, in
   * version order; each stores the database's schema version once it is
   * done. An interrupted migration (a crash, an error) resumes where it
   * stopped: its completed steps are not run again. A second call waits
   * for the first (on IndexedDB, a call in another tab too).
   * @param {Array<{ version: number, up: (m: import('./migrate.js').MigrationContext) => unknown }>} migrations
   * @param {{ onProgress?: (progress: import('./migrate.js').Progress) => void }} [options]
   * @returns {Promise<import('./migrate.js').MigrateResult>}
   */
  async migrate (migrations, options) {
    this.#assertOpen()
    const refused = refuseInsideScope(this.writer)
    if (refused) throw refused
    return this.migrations.migrate(migrations, options)
  }

  /**
   * The database's schema version: that of the last migration it ran (0
   * before any).
   * @returns {Promise<number>}
   */
  async schemaVersion () {
    this.#assertOpen()
    return this.migrations.version()
  }

  /**
   * Delete the entries and the stored declaration of every index that is
   * stored for a declared collection but no longer declared, in bounded
   * batches. Resolves with what was dropped.
   */
  async dropUndeclared () {
    this.#assertOpen()
    const refused = refuseInsideScope(this.writer)
    if (refused) throw refused
    return this.schema.dropUndeclared()
  }

  /**
   * The read caches' hits, misses, evictions and entries held, per
   * namespace that has one (by its name: a collection's records under the
   * collection's name, its indexes as `<name>.idx.<index>`, ...): whether
   * the cache helps. Empty when the caches are off.
   * @returns {Record<string, { hits: number, misses: number, evictions: number, size: number }>}
   */
  stats () {
    return readCacheStats(this.level)
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
      throw levelkitError(codes.NOT_OPEN, `The database is not open${this.#closedBy}`)
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

/**
 * @typedef {{ maxRetries?: number, timeout?: number, lockTimeout?: number, signal?: AbortSignal, sync?: boolean, maxOps?: number, maxBytes?: number, readOnly?: boolean }} TransactionOptions
 * @typedef {{ maxRetries: number, timeout: number, lockTimeout: number, signal: AbortSignal | undefined, sync: boolean, maxOps: number, maxBytes: number, readOnly: boolean }} TransactionSettings
 */

// Defaults of db.transaction(): FoundationDB's limits (5 s, 10 MB) and
// RocksDB's lock wait (1000 ms).
const TRANSACTION_DEFAULTS = Object.freeze({ maxRetries: 10, timeout: 5000, lockTimeout: DEFAULT_LOCK_TIMEOUT, maxOps: 100000, maxBytes: 10 * 1024 * 1024 })

/** @param {any} given @returns {TransactionSettings} */
function transactionSettings (given) {
  /** @type {any} */
  const settings = { ...TRANSACTION_DEFAULTS, signal: undefined, sync: false, readOnly: false }
  for (const name of /** @type {Array<keyof typeof TRANSACTION_DEFAULTS>} */ (Object.keys(TRANSACTION_DEFAULTS))) {
    const value = given[name]
    if (value === undefined) continue
    const least = name === 'maxRetries' ? 0 : 1
    if (!Number.isSafeInteger(value) || value < least) {
      throw invalid(`The ${name} option of db.transaction() must be an integer of at least ${least}, got ${describe(value)}`)
    }
    settings[name] = value
  }
  if (given.sync !== undefined) {
    if (typeof given.sync !== 'boolean') throw invalid('The sync option of db.transaction() must be a boolean')
    settings.sync = given.sync
  }
  if (given.readOnly !== undefined) {
    if (typeof given.readOnly !== 'boolean') throw invalid('The readOnly option of db.transaction() must be a boolean')
    settings.readOnly = given.readOnly
  }
  if (given.signal !== undefined) {
    if (!(given.signal instanceof AbortSignal)) throw invalid('The signal option of db.transaction() must be an AbortSignal')
    settings.signal = given.signal
  }
  return settings
}

/**
 * One attempt: the callback, then the commit, unless the attempt expires or
 * is aborted first. Once its ops are handed to the write path, neither can
 * stop it: a commit is never reported as failed.
 * @template T
 * @param {Transaction} tx
 * @param {(tx: Transaction, attempt: number) => Promise<T> | T} fn
 * @param {number} attempt
 * @param {TransactionSettings} settings
 * @returns {Promise<T>}
 */
function attemptOnce (tx, fn, attempt, settings) {
  const { signal, timeout } = settings
  return new Promise((resolve, reject) => {
    let settled = false
    /** @param {unknown} err */
    const stop = err => {
      if (settled || tx.committing) return
      settled = true
      cleanup()
      tx.finish(err)
      reject(err)
    }
    const timer = setTimeout(() => stop(levelkitError(codes.TX_EXPIRED, `Transaction expired after ${timeout} ms (option timeout); its locks are released`, { timeout })), timeout)
    const onAbort = () => stop(abortedError(/** @type {AbortSignal} */ (signal)))
    signal?.addEventListener('abort', onAbort, { once: true })
    const cleanup = () => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
    }
    Promise.resolve()
      .then(() => fn(tx, attempt))
      .then(async result => {
        await tx.commit(settings.sync)
        return result
      })
      .then(result => {
        if (settled) return
        settled = true
        cleanup()
        resolve(result)
      }, err => {
        if (settled) return
        settled = true
        cleanup()
        reject(err)
      })
  })
}

/** @param {AbortSignal} signal */
function abortedError (signal) {
  return levelkitError(codes.ABORTED, 'Transaction aborted by its signal', { cause: signal.reason })
}

/**
 * Wait a random time that grows with the attempts before trying again, so
 * transactions that conflicted do not meet again at once.
 * @param {number} attempt
 */
function backoff (attempt) {
  const ms = Math.random() * Math.min(2 ** (attempt - 1), 64)
  return new Promise(resolve => setTimeout(resolve, ms))
}
