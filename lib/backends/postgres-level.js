// An abstract-level 3 database in one PostgreSQL table of (key bytea primary
// key, value bytea): a B-tree on bytea orders keys bytewise, as LevelDB does,
// so sublevels are key prefixes here too (abstract-level adds them).
import { AbstractLevel, AbstractIterator, AbstractKeyIterator, AbstractValueIterator, AbstractSnapshot } from 'abstract-level'
import ModuleError from 'module-error'
import pg from 'pg'
import { levelkitError, codes, invalid } from '../errors.js'
import { describe } from '../common.js'
import { PostgresWriterLock, InOrder, connectClient, keepAliveConfig, keepSessionAlive } from './postgres-shared.js'
import { PostgresKeyLocks } from './postgres-keylocks.js'
import { PostgresSerializable } from './postgres-serializable.js'
import { createTable, createLockTables } from './postgres-create.js'
import { PostgresSectionLock, lostTransaction, isTransactionLost } from './postgres-section-lock.js'
import { failoverOf, PrimaryPool, CommitLog, isConnectionError } from './postgres-hosts.js'
import { SectionCache } from '../section-cache.js'
import { connectKept, release, wasIdle } from './postgres-idle.js'
import { deferredStatement, basesOf } from './postgres-deferred.js'

const DEFAULT_TABLE = 'levelkit'
const DEFAULT_POOL_SIZE = 10
// With shared: ms of silence on the writer and listening connections
// before TCP keepalive probes (see keepAliveConfig()).
const DEFAULT_KEEP_ALIVE = 10000
// How many times a critical section runs again at most with locking: 'keys'
// or 'serializable' before it fails with LEVELKIT_CONFLICT (maxReruns).
const DEFAULT_MAX_RERUNS = 100
// Idle snapshot connections kept for the next snapshot (each snapshot holds
// its own connection, beyond the pool: see #acquireSnapshotClient()), each
// for as long as the pool keeps an idle connection (its idleTimeoutMillis).
const IDLE_SNAPSHOT_CLIENTS = 4
// pg's pool's idleTimeoutMillis when none is given.
const PG_IDLE_TIMEOUT = 10000
// Snapshot connections held at once before a read-only transaction's
// snapshot waits for one to be released (maxSnapshots).
const DEFAULT_MAX_SNAPSHOTS = 10
// Rows an iterator asks for at first, and at most: it doubles from the first
// to the last, so a short read costs little and a long one holds one chunk.
const FIRST_CHUNK = 16
const MAX_CHUNK = 1000
// Keys one statement of coalesced point reads asks for at most.
const MAX_COALESCED = 1000
// The first key of the advisory locks on tables: 'LKIT'.
const LOCK_SPACE = 0x4c4b4954
// Values the write path's section cache keeps at most (see lib/section-cache.js).
const SECTION_CACHE_ENTRIES = 10000

/** @type {Map<string, string>} SQL text -> prepared statement name, shared by every database (names are per connection, texts name their table) */
const statementNames = new Map()

/**
 * @typedef {object} PostgresLevelOptions
 * @property {string} [connectionString] what `pg` connects with (else the PG* environment variables)
 * @property {string} [table] the table holding this database: a lowercase SQL identifier, 'levelkit' by default
 * @property {number} [poolSize] connections the pool opens at most (10 by default), snapshots not counted
 * @property {number} [maxSnapshots] snapshot connections held at once (10 by default): a read-only
 *   db.transaction() beyond them waits for one to be released; an explicit db.snapshot() never waits
 *   (a write made after it waits for it to be taken, and the held ones may be waiting for that write)
 *   but counts
 * @property {import('pg').PoolConfig} [pg] more settings for pg's Pool (ssl, timeouts, ...)
 * @property {import('pg').Pool} [pool] a pool of the application's to use instead of one of its own
 *   (not ended at close; snapshots open connections of their own with its settings)
 * @property {boolean} [shared] let other processes open the table too, each writing under
 *   a lock they take in turn (levelkit's shared writer lock); false by default: one open
 *   database per table, LEVEL_LOCKED for a second
 * @property {'table' | 'keys' | 'serializable'} [locking] with shared: how processes take turns. 'table' (the
 *   default): one writer lock for the table, held by one process at a time; 'keys': each
 *   process's critical sections lock the keys they read, in a transaction their batch commits
 *   (postgres-keylocks.js), so that writes on different keys go on at once; 'serializable':
 *   the same transaction, SERIALIZABLE and locking nothing, its sections run again when
 *   PostgreSQL fails it (postgres-serializable.js)
 * @property {number} [maxReruns] with locking: 'keys' or 'serializable': how many times a critical
 *   section runs again at most (a serialization failure, a busy key) before its write fails with
 *   LEVELKIT_CONFLICT, the last failure as its cause (100 by default): processes that keep failing
 *   each other's transactions end in an error, not a livelock
 * @property {Array<string | { host: string, port?: number }>} [hosts] the hosts of a primary and its
 *   standbys: the primary is used, found again after a failover (see postgres-hosts.js)
 * @property {number} [failoverTimeout] how long an operation waits for a primary, in ms (30000)
 * @property {number | false} [keepAlive] with shared: ms of silence on the writer lock's and the
 *   listening connections before TCP keepalive probes, on both sides (10000); false: the OS's and
 *   the server's settings (see keepAliveConfig() in postgres-shared.js)
 */

/**
 * @typedef {{ query: (statement: import('pg').QueryConfig) => Promise<import('pg').QueryResult<any>> }} Runner what a statement is sent on
 * @typedef {{ gt?: Buffer, gte?: Buffer, lt?: Buffer, lte?: Buffer, reverse?: boolean, limit?: number, snapshot?: any }} RangeOptions
 * @typedef {{ keys: Buffer[] | null, key: Buffer | null, id: string, utf8: boolean, resolve: (values: any) => void, reject: (err: unknown) => void }} PointRead
 *   a point read waiting for the next statement: several `keys` (answered with an array of their values), or one `key`
 *   (`id` its latin1 string; answered with its value, decoded as UTF-8 when `utf8`)
 */

/** @param {Buffer | undefined} value */
function utf8Value (value) {
  return value === undefined ? undefined : value.toString('utf8')
}

/** @extends {AbstractLevel<Buffer, any, any>} */
export class PostgresLevel extends AbstractLevel {
  /** @type {import('pg').PoolConfig} */
  #config
  /** @type {import('pg').Pool | null} */
  #pool = null
  /** @type {import('pg').Pool | null} the application's pool (the pool option) */
  #sharedPool
  #table
  /** @type {TableTexts} the table's fixed statements (tableTexts()) */
  #texts
  /** @type {{ channel: string, text: string } | null} the last batch statement with notifications made, and its channel (notifyingBatch()) */
  #notifying = null
  /** @type {Array<{ client: import('pg').Client, until: number }>} */
  #idleSnapshotClients = []
  /** @type {ReturnType<typeof setTimeout> | null} ends idle snapshot connections past their time */
  #snapshotSweeper = null
  /** @type {LockHolder | null} the connection holding the table's advisory lock */
  #holder = null
  /** @type {number | null} the lock's second key (from the table's oid) */
  #lockKey = null
  /** @type {Set<Promise<unknown>>} snapshots not yet taken: writes made after db.snapshot() wait for them */
  #pendingSnapshots = new Set()
  #shared
  /** @type {PostgresWriterLock | null} */
  #writerLock = null
  /** @type {import('./postgres-shared.js').InOrder | null} the writer connection, while this process holds the writer lock: writes go through it */
  #writeClient = null
  /** @type {import('./postgres-hosts.js').Failover | null} the hosts, when failover is asked for */
  #failover
  /** @type {CommitLog | null} */
  #commits = null
  /** @type {Promise<void> | null} */
  #relocking = null
  /** @type {'table' | 'keys' | 'serializable'} */
  #locking
  /** @type {number | false} */
  #keepAlive
  #maxReruns
  #maxSnapshots
  /** snapshot connections held or being taken */
  #snapshotsHeld = 0
  /** @type {Array<{ resolve: () => void, reject: (err: Error) => void }>} snapshots waiting for a connection, in call order */
  #snapshotQueue = []

  /** @param {PostgresLevelOptions & Record<string, any>} [options] */
  constructor (options = {}) {
    const { connectionString, table = DEFAULT_TABLE, poolSize = DEFAULT_POOL_SIZE, pg: pgOptions, pool, hosts, failoverTimeout, shared = false, locking = 'table', keepAlive = DEFAULT_KEEP_ALIVE, maxReruns = DEFAULT_MAX_RERUNS, maxSnapshots = DEFAULT_MAX_SNAPSHOTS, ...forward } = options
    if (pool !== undefined) {
      if (pool === null || typeof pool !== 'object' || typeof pool.query !== 'function' || typeof pool.connect !== 'function') {
        throw invalid(`The pool option must be a pg Pool, got ${describe(pool)}`)
      }
      if (connectionString !== undefined || pgOptions !== undefined || options.poolSize !== undefined || hosts !== undefined) {
        throw invalid('Pass either the pool option or connectionString, hosts, poolSize and pg (the settings of a pool of its own), not both')
      }
    }
    if (connectionString !== undefined && (typeof connectionString !== 'string' || connectionString === '')) {
      throw invalid(`The connectionString option must be a non-empty string, got ${describe(connectionString)}`)
    }
    if (typeof table !== 'string' || !/^[a-z_][a-z0-9_]{0,62}$/.test(table)) {
      throw invalid(`The table option must be a lowercase SQL identifier (a-z, 0-9 and _, not starting with a digit, at most 63 characters), got ${describe(table)}`)
    }
    if (!Number.isSafeInteger(poolSize) || poolSize < 1) {
      throw invalid(`The poolSize option must be a positive integer, got ${describe(poolSize)}`)
    }
    if (!Number.isSafeInteger(maxSnapshots) || maxSnapshots < 1) {
      throw invalid(`The maxSnapshots option must be a positive integer, got ${describe(maxSnapshots)}`)
    }
    if (typeof shared !== 'boolean') {
      throw invalid(`The shared option must be a boolean, got ${describe(shared)}`)
    }
    if (locking !== 'table' && locking !== 'keys' && locking !== 'serializable') {
      throw invalid(`The locking option must be 'table', 'keys' or 'serializable', got ${describe(locking)}`)
    }
    if (!(Number.isSafeInteger(maxReruns) && maxReruns >= 0) && maxReruns !== Infinity) {
      throw invalid(`The maxReruns option must be a non-negative integer or Infinity, got ${describe(maxReruns)}`)
    }
    if (keepAlive !== false && (typeof keepAlive !== 'number' || !Number.isSafeInteger(keepAlive) || keepAlive < 1)) {
      throw invalid(`The keepAlive option must be a positive integer (milliseconds) or false, got ${describe(keepAlive)}`)
    }
    if (pgOptions !== undefined && (pgOptions === null || typeof pgOptions !== 'object')) {
      throw invalid(`The pg option must be an object of pg Pool settings, got ${describe(pgOptions)}`)
    }
    super({
      seek: true,
      // Iterators read in chunks, each its own statement: a write between
      // two chunks is seen. Explicit snapshots are consistent.
      implicitSnapshots: false,
      explicitSnapshots: true,
      permanence: true,
      createIfMissing: true,
      errorIfExists: true,
      has: true,
      encodings: { buffer: true }
    }, forward)
    // One more than poolSize: a connection holds the lock while open.
    this.#config = { ...pgOptions, connectionString, max: poolSize + 1 }
    this.#failover = failoverOf({ connectionString, hosts, failoverTimeout, config: this.#config })
    this.#sharedPool = pool === undefined ? null : pool
    this.#table = table
    this.#texts = tableTexts(table)
    this.#shared = shared
    this.#locking = locking
    this.#keepAlive = keepAlive
    this.#maxReruns = maxReruns
    this.#maxSnapshots = maxSnapshots
  }

  /**
   * The cache in which levelkit's write path keeps what its critical
   * sections read (lib/section-cache.js): a read is a round trip here, and
   * every write of the table goes through levelkit (one process owns the
   * table, or every process writes under the shared writer lock and tells
   * the others what it wrote). Made here, so that a browser bundle, which
   * has no backend of this kind, leaves the class out.
   */
  createSectionCache () {
    return new SectionCache(SECTION_CACHE_ENTRIES)
  }

  /** Whether other processes may write the table too (the shared option). */
  get shared () {
    return this.#shared
  }

  /**
   * The lock levelkit's write path takes before it writes, where other
   * processes write the table too (the shared option), else null. One per
   * open database.
   * @returns {PostgresWriterLock | null}
   */
  sharedWriterLock () {
    if (!this.#shared || this.#lockKey === null) return null
    if (this.#writerLock === null || this.#writerLock.closed) {
      const Lock = this.#locking === 'keys' ? PostgresKeyLocks : this.#locking === 'serializable' ? PostgresSerializable : PostgresWriterLock
      this.#writerLock = new Lock({
        lockKey: this.#lockKey,
        connect: purpose => this.#connectOwn(purpose),
        // With hosts, on the primary found next when the connection fails.
        failoverTimeout: this.#failover ? this.#failover.timeout : 0,
        isConnectionError,
        route: client => { this.#writeClient = client },
        notify: async (channel, payload) => {
          if (this.#pool === null) throw new Error('The database is closed')
          return this.#pool.query('SELECT pg_notify($1, $2)', [channel, payload])
        }
      }, this.#table)
      if (this.#writerLock instanceof PostgresSectionLock) this.#writerLock.maxReruns = this.#maxReruns
      // Ids taken in the batch's statement (postgres-deferred.js): not with
      // hosts, where a batch whose connection failed is settled by its
      // commit id, which would not tell the ids it took.
      if (this.#writerLock instanceof PostgresKeyLocks) this.#writerLock.defersSequences = !this.#failover
    }
    return this.#writerLock
  }

  /**
   * A connection of the writer lock's (or the listening one), outside the
   * pool: on the primary, with hosts; with keepalive.
   * @param {'writer' | 'listen'} purpose
   */
  async #connectOwn (purpose) {
    // Named, so that pg_stat_activity tells them apart.
    const settings = { fallback_application_name: `levelkit ${purpose}`, ...keepAliveConfig(this.#keepAlive) }
    const deadline = Date.now() + (this.#failover ? this.#failover.timeout : 0)
    for (;;) {
      let client
      if (this.#failover) {
        const pool = /** @type {PrimaryPool | null} */ (/** @type {any} */ (this.#pool))
        if (pool === null) throw new Error('The database is closed')
        client = await pool.connectClient(settings)
      } else {
        // An idle one of another database of this process, if any (postgres-idle.js).
        client = await connectKept({ ...settings, ...this.#clientConfig() }, connectClient)
      }
      try {
        await keepSessionAlive(client, this.#keepAlive)
      } catch (err) {
        client.end().catch(noop)
        // An idle connection that died meanwhile, or (with hosts) one to a
        // primary going down, lost right after connecting: a new one.
        if (isConnectionError(err) && (wasIdle(client) || Date.now() < deadline)) continue
        // (Its message keeps pg's, which isConnectionError() still tells.)
        throw backendError('set up a connection of its own', err)
      }
      return client
    }
  }

  /** The settings of a connection outside the pool (snapshots, the writer lock's). */
  #clientConfig () {
    return this.#sharedPool ? /** @type {any} */ (this.#sharedPool).options : this.#config
  }

  /** The table this database is stored in. */
  get table () {
    return this.#table
  }

  /** @param {{ createIfMissing: boolean, errorIfExists: boolean }} options */
  async _open (options) {
    const shared = this.#sharedPool
    const pool = shared || (this.#failover ? /** @type {any} */ (new PrimaryPool(this.#failover)) : new pg.Pool(this.#config))
    // An idle connection that fails (a server restart) is dropped by the
    // pool; without a listener the error would end the process.
    if (!shared) pool.on('error', noop)
    try {
      const exists = await tableExists(pool, this.#table)
      if (exists && options.errorIfExists) throw new ModuleError(`Table ${this.#table} already exists`, { code: 'LEVEL_DATABASE_NOT_OPEN' })
      if (!exists) {
        if (!options.createIfMissing) throw new ModuleError(`Table ${this.#table} does not exist (createIfMissing is false)`, { code: 'LEVEL_DATABASE_NOT_OPEN' })
        await createTable(pool, this.#table)
      }
      // Made with the table, or at the first open in this mode of a table made before them.
      if (this.#shared && this.#locking === 'serializable') await createLockTables(pool, this.#table)
      await this.#lock(pool)
      if (this.#failover) {
        // 'commit-settled': how a batch whose connection failed came out (tests and monitoring).
        this.#commits = new CommitLog(/** @type {any} */ (pool), settled => this.emit('commit-settled', settled))
        await this.#commits.open()
      }
    } catch (err) {
      if (!shared) await pool.end().catch(noop)
      throw err
    }
    this.#pool = pool
  }

  /**
   * levelkit serializes its critical sections in the process that owns the
   * database: a second process writing the same table would break unique
   * indexes and sequences. So, as LevelDB's LOCK file does, a session-level
   * advisory lock on the table, held by a connection of the pool while the
   * database is open, refuses a second opener (LEVEL_LOCKED). With the
   * shared option the lock is taken in shared mode: processes that share
   * the table (and serialize their writes with the writer lock) open it
   * side by side, and a process that would own it alone is refused, as it
   * refuses them.
   * @param {import('pg').Pool} pool
   */
  async #lock (pool) {
    const holder = holderOf(pool)
    try {
      await holder.client
      if (holder.tables.has(this.#table)) throw locked(this.#table)
      // The two-key form: a constant for levelkit ('LKIT') and the table's
      // oid, which no other table has. Session locks are re-entrant, so the
      // holder's own set refuses a second database of this process.
      holder.tables.add(this.#table)
      let rows
      try {
        // Through the holder's queue: databases opening and closing together share its connection.
        ({ rows } = await onHolder(holder, `SELECT pg_try_advisory_lock${this.#shared ? '_shared' : ''}(${LOCK_SPACE}, k) AS locked, k FROM (SELECT ((to_regclass($1)::oid::bigint) - 2147483648)::int AS k) AS t`, [quote(this.#table)]))
      } catch (err) {
        holder.tables.delete(this.#table)
        throw err
      }
      if (!rows[0].locked) {
        holder.tables.delete(this.#table)
        throw locked(this.#table)
      }
      this.#lockKey = rows[0].k
      this.#holder = holder
    } catch (err) {
      await letGo(pool, holder)
      throw err
    }
  }

  async _close () {
    this.#writerLock?.close()
    this.#writerLock = null
    this.#writeClient = null
    const pool = this.#pool
    this.#pool = null
    const holder = this.#holder
    this.#holder = null
    if (holder && pool) {
      holder.tables.delete(this.#table)
      if (holder.lost === null) {
        // Ending the holder's session (below, when it holds nothing else) lets go too.
        await onHolder(holder, `SELECT pg_advisory_unlock${this.#shared ? '_shared' : ''}(${LOCK_SPACE}, $1)`, [this.#lockKey]).catch(noop)
      }
      await letGo(pool, holder)
    }
    for (const waiter of this.#snapshotQueue.splice(0)) waiter.reject(new ModuleError('The database was closed while a snapshot waited for a connection', { code: 'LEVEL_DATABASE_NOT_OPEN' }))
    const idle = this.#idleSnapshotClients.splice(0)
    if (this.#snapshotSweeper !== null) clearTimeout(this.#snapshotSweeper)
    this.#snapshotSweeper = null
    // Kept for a moment for the next database (postgres-idle.js), or ended.
    await Promise.all(idle.map(({ client }) => {
      /** @type {any} */ (client).ref?.()
      return release(client)
    }))
    if (this.#commits) await this.#commits.close()
    this.#commits = null
    if (pool && pool !== this.#sharedPool) await pool.end()
  }

  /**
   * Run `text` on `client` (a snapshot's) or the pool, as a named prepared statement.
   * @param {string} what what failed, for the error message
   * @param {string} text @param {unknown[]} values @param {any} [snapshot]
   * @param {boolean} [rowMode] rows as arrays
   * @param {Runner | null} [client] a connection to run it on instead (the writer connection, or the section transaction's)
   * @returns {Promise<any[]>}
   */
  async #query (what, text, values, snapshot, rowMode, client = null) {
    const name = statementName(text)
    try {
      const runner = client ?? (snapshot instanceof PostgresSectionLock ? snapshot : snapshot ? snapshot.statements() : this.#pool)
      if (runner === null) throw new Error('the database is not open')
      /** @type {import('pg').QueryConfig & { rowMode?: 'array' }} */
      const query = { name, text, values }
      if (rowMode) query.rowMode = 'array'
      const result = await runner.query(query)
      return result.rows
    } catch (err) {
      throw backendError(what, err)
    }
  }

  /** Refuse a write once the lock is lost (take it again on the primary, with hosts); wait for the snapshots taken before it. */
  async #beforeWrite () {
    if (this.#failover && (this.#holder === null || this.#holder.lost)) await this.#relock()
    const lost = this.#holder && this.#holder.lost
    if (lost) {
      throw levelkitError(codes.BACKEND_UNAVAILABLE, `PostgreSQL closed the connection that holds ${this.#table}'s lock, so another process may now write it: close and open the database again (${lost.message})`, { cause: lost })
    }
    if (this.#pendingSnapshots.size > 0) await Promise.allSettled([...this.#pendingSnapshots])
  }

  /**
   * After a failover (or a restart) the lock's connection is gone: take the
   * lock again, on the primary now. LEVEL_LOCKED if another database took it.
   */
  #relock () {
    if (this.#relocking) return this.#relocking
    const relocking = this.#relocking = (async () => {
      const pool = this.#pool
      if (pool === null) return
      const holder = this.#holder
      if (holder !== null) {
        this.#holder = null
        holder.tables.delete(this.#table)
        await letGo(pool, holder)
      }
      try {
        await this.#lock(pool)
      } catch (err) {
        throw backendError('lock the table again on the new primary', err)
      }
    })()
    relocking.then(noop, noop).then(() => { this.#relocking = null })
    return relocking
  }

  /**
   * Write a batch statement; with hosts, with its commit id (postgres-hosts.js),
   * so that a batch whose connection failed is neither lost nor written twice.
   * On the writer lock's connection (`client`), a batch found not committed
   * is reported, not written again: the lock it was decided under is gone,
   * and another process may have written since.
   * @param {string} text @param {unknown[]} values @param {Runner | null} [client]
   */
  async #writeBatch (text, values, client = null) {
    if (this.#commits === null) return this.#writeUnsettled(text, values, client)
    try {
      await this.#commits.write(text, values, client === null ? { beforeRetry: () => this.#beforeWrite() } : { run: query => client.query(query) })
    } catch (err) {
      if (/** @type {any} */ (err).code === codes.COMMIT_UNKNOWN) throw err
      throw backendError('write a batch', err)
    }
  }

  /**
   * Write a batch statement without a commit id (no hosts). An error the
   * server answered with (an SQL state) means the statement did not commit;
   * a connection that fails once the statement was sent leaves the outcome
   * unknown: the batch may have committed, so it is reported as
   * LEVELKIT_COMMIT_UNKNOWN, never as not written.
   * @param {string} text @param {unknown[]} values @param {Runner | null} client
   */
  async #writeUnsettled (text, values, client) {
    /** @type {import('pg').PoolClient | null} */
    let borrowed = null
    if (client === null) {
      try {
        if (this.#pool === null) throw new Error('the database is not open')
        borrowed = client = await this.#pool.connect()
        // A checked-out client's socket error is also emitted on it: the query's rejection reports it.
        borrowed.on('error', noop)
      } catch (err) {
        throw backendError('connect to write a batch', err)
      }
    }
    /** @type {unknown} */
    let failure = null
    try {
      await this.#query('write a batch', text, values, undefined, false, client)
    } catch (err) {
      failure = err
      const cause = /** @type {any} */ (err).cause
      // An error the server answered with has a severity (pg's DatabaseError); a socket's (EPIPE, ECONNRESET) has not.
      if (cause && typeof cause.severity === 'string') throw err
      throw levelkitError(codes.COMMIT_UNKNOWN, `The connection to PostgreSQL failed after a batch was sent: it may or may not have committed (${/** @type {Error} */ (cause ?? err).message})`, { cause: cause ?? err })
    } finally {
      if (borrowed !== null) {
        // Kept on a client released with its error: it is ended, and its socket may still say so.
        if (failure === null) borrowed.off('error', noop)
        borrowed.release(failure === null ? undefined : /** @type {Error} */ (failure))
      }
    }
  }

  /** @param {Buffer} key @param {any} options */
  async _get (key, options) {
    const snapshot = options.snapshot
    if (snapshot) {
      const rows = await this.#query('read a key', this.#texts.readValue, [key], snapshot)
      return rows.length === 0 ? undefined : rows[0].value
    }
    // A critical section's read of a key it just asked to lock (locking:
    // 'keys', lib/write-scope.js): in the lock's statement, behind it.
    const locked = options.levelkitLocked
    const keyLocks = this.#writerLock
    if (locked !== undefined) {
      if (keyLocks instanceof PostgresKeyLocks && !keyLocks.closed) return keyLocks.readAfter(locked, key, async () => (await this.#coalesce([key]))[0])
      // (Its lock gone with a closed writer lock: still never read before the lock answered.)
      await locked
    }
    const [value] = await this.#coalesce([key], this.#sectionTransaction())
    return value
  }

  /**
   * What _get() and _getMany() answer without a snapshot, for whole keys of
   * the table (a sublevel's prefix and its key): levelkit's namespaces
   * (lib/namespace.js) read
   * their keys so, past abstract-level's get() and getMany(), twice over
   * (the sublevel's, then this database's: options, encodings, the prefix
   * and two async functions each, about a tenth of what a createChat
   * allocates; session 20, pgcpu). The same statements, coalesced alike,
   * in a serializable section's transaction alike. Only while open.
   * @param {Buffer[]} keys
   * @returns {Promise<Array<Buffer | undefined>>}
   */
  levelkitReadKeys (keys) {
    return this.#coalesce(keys, this.#sectionTransaction())
  }

  /**
   * The rows that the keys of a range name, in one statement (so as of one
   * moment), in the range's order: for each key of the range (whole keys
   * of the table), the row whose key is `prefix` followed by that key's
   * bytes from `start` on, less its last byte; a key naming no row names
   * nothing. What a relation's edges to a collection with sequence ids
   * name (lib/relation.js recordsOf(): edge keys end with the other
   * record's id as its key holds it, then the tuple's end), read without
   * a round trip for the edges and another for the records. Only while
   * open.
   * @param {{ gt?: Buffer, gte?: Buffer, lt?: Buffer, lte?: Buffer }} range
   * @param {boolean} reverse @param {Buffer} prefix @param {number} start
   * @returns {Promise<Array<{ key: Buffer, value: Buffer }>>}
   */
  levelkitReadReferenced (range, reverse, prefix, start) {
    /** @type {unknown[]} */
    const values = [prefix, start + 1]
    const where = []
    for (const [bound, operator] of /** @type {const} */ ([['gt', '>'], ['gte', '>='], ['lt', '<'], ['lte', '<=']])) {
      const key = range[bound]
      if (key === undefined) continue
      values.push(key)
      where.push(`e.key ${operator} $${values.length}`)
    }
    const table = quote(this.#table)
    // (A key too short to name anything names nothing.)
    where.push('length(e.key) > $2::int')
    const text = `SELECT r.key, r.value FROM ${table} AS e JOIN ${table} AS r ON r.key = $1::bytea || substring(e.key FROM $2::int FOR length(e.key) - $2::int) WHERE ${where.join(' AND ')} ORDER BY e.key ${reverse ? 'DESC' : 'ASC'}`
    // In a serializable section, in its transaction, as its other reads.
    return this.#query('read the records of a range', text, values, this.#sectionTransaction())
  }

  /**
   * One whole key of levelkitReadKeys(), its value decoded as UTF-8 when
   * `utf8` (as a sublevel with valueEncoding 'utf8' decodes it): a promise
   * of the value itself, without the arrays of keys and values, and the
   * promises that turn them into one decoded value, around each of the
   * point reads of a createChat (20 or so, coalesced into one statement).
   * `locked`: _get()'s levelkitLocked option (a critical section's read of
   * a key it just asked to lock, locking: 'keys'), read as _get() reads it.
   * @param {Buffer} key @param {boolean} utf8 @param {Promise<void>} [locked]
   * @returns {Promise<Buffer | string | undefined>}
   */
  levelkitReadKey (key, utf8, locked) {
    if (locked !== undefined) {
      const keyLocks = this.#writerLock
      const raw = () => /** @type {Promise<Buffer | undefined>} */ (this.levelkitReadKey(key, false))
      const read = keyLocks instanceof PostgresKeyLocks && !keyLocks.closed ? keyLocks.readAfter(locked, key, raw) : locked.then(raw)
      return utf8 ? read.then(utf8Value) : read
    }
    return new Promise((resolve, reject) => {
      const section = this.#sectionTransaction()
      const reads = section === null ? this.#reads : this.#sectionReads
      if (reads.length === 0) process.nextTick(() => this.#readCoalesced(section))
      reads.push({ keys: null, key, id: key.toString('latin1'), utf8, resolve, reject })
    })
  }

  /** @param {Buffer[]} keys @param {any} options */
  async _getMany (keys, options) {
    const snapshot = options.snapshot
    if (!snapshot) return this.#coalesce(keys, this.#sectionTransaction())
    const rows = await this.#query('read keys', this.#texts.readValues, [keys], snapshot)
    const found = new Map(rows.map(row => [row.key.toString('latin1'), row.value]))
    return keys.map(key => found.get(key.toString('latin1')))
  }

  /** @param {Buffer} key @param {any} options */
  async _has (key, options) {
    const snapshot = options.snapshot
    if (snapshot) {
      const rows = await this.#query('read a key', this.#texts.hasKey, [key], snapshot)
      return rows.length > 0
    }
    const [value] = await this.#coalesce([key], this.#sectionTransaction())
    return value !== undefined
  }

  /** @param {Buffer[]} keys @param {any} options */
  async _hasMany (keys, options) {
    const snapshot = options.snapshot
    if (!snapshot) return (await this.#coalesce(keys, this.#sectionTransaction())).map(value => value !== undefined)
    const rows = await this.#query('read keys', this.#texts.hasKeys, [keys], snapshot)
    const found = new Set(rows.map(row => row.key.toString('latin1')))
    return keys.map(key => found.has(key.toString('latin1')))
  }

  /** @type {PointRead[]} point reads waiting for the next statement */
  #reads = []
  /** @type {PointRead[]} critical sections' point reads waiting for the next statement in the serializable transaction */
  #sectionReads = []

  /**
   * The values of `keys`, read with every other point read (get, getMany,
   * has, hasMany without a snapshot) asked for in the same turn of the
   * event loop, up to MAX_COALESCED keys per statement: one round trip
   * where reads issued together (Promise.all(), the write path's
   * prefetch(), concurrent callers) would each make one. The reads are
   * sent once the microtasks running now are done (process.nextTick()
   * from a microtask runs after the microtask queue drains), so no read
   * waits for a timer. One statement reads every key as of one moment.
   * The reads of critical sections with locking: 'serializable' are
   * coalesced apart, into statements of the serializable transaction
   * (`section`): PostgreSQL watches what they read as it would each alone.
   * @param {Buffer[]} keys @param {PostgresSerializable | null} [section]
   * @returns {Promise<Array<Buffer | undefined>>}
   */
  #coalesce (keys, section = null) {
    return new Promise((resolve, reject) => {
      const reads = section === null ? this.#reads : this.#sectionReads
      if (reads.length === 0) process.nextTick(() => this.#readCoalesced(section))
      reads.push({ keys, key: null, id: '', utf8: false, resolve, reject })
    })
  }

  /** @param {PostgresSerializable | null} section */
  #readCoalesced (section) {
    const reads = section === null ? this.#reads : this.#sectionReads
    if (section === null) this.#reads = []
    else this.#sectionReads = []
    /** @type {Map<string, Buffer>} */
    const unique = new Map()
    for (const read of reads) {
      if (read.keys === null) unique.set(read.id, /** @type {Buffer} */ (read.key))
      else for (const key of read.keys) unique.set(key.toString('latin1'), key)
    }
    // A read that opens the serializable transaction takes the keys the
    // sections called by now will read (lib/writer.js readHints), in its
    // statement: they run in this transaction and find them in the section
    // cache, each without a round trip. (Not past one statement's keys.)
    const hinted = section !== null && !section.holding && unique.size < MAX_COALESCED ? section.hintedReads?.(MAX_COALESCED - unique.size) ?? null : null
    if (hinted !== null) for (const key of hinted.keys) unique.set(key.toString('latin1'), key)
    const keys = [...unique.values()]
    /** @type {Array<Promise<Map<string, Buffer>>>} */
    const chunks = []
    for (let i = 0; i < keys.length; i += MAX_COALESCED) {
      const chunk = keys.slice(i, i + MAX_COALESCED)
      /** @type {Promise<Map<string, Buffer>>} */
      const found = chunk.length === 1
        ? this.#query('read a key', this.#texts.readValue, chunk, section).then(rows => new Map(rows.length === 0 ? [] : [[chunk[0].toString('latin1'), rows[0].value]]))
        : this.#query('read keys', this.#texts.readValues, [chunk], section).then(rows => new Map(rows.map(row => [row.key.toString('latin1'), row.value])))
      chunks.push(found)
    }
    Promise.all(chunks).then(maps => {
      const found = maps.length === 1 ? maps[0] : new Map(maps.flatMap(map => [...map]))
      // Kept before any read is answered: before a section decides anything on them.
      if (hinted !== null) hinted.found(found)
      for (const read of reads) {
        if (read.keys !== null) {
          read.resolve(read.keys.map(key => found.get(key.toString('latin1'))))
          continue
        }
        const value = found.get(read.id)
        read.resolve(value === undefined || !read.utf8 ? value : value.toString('utf8'))
      }
    }, err => {
      for (const read of reads) read.reject(err)
    })
  }

  /** @param {Buffer} key @param {Buffer} value */
  async _put (key, value) {
    await this.#beforeWrite()
    await this.#query('write a key', this.#texts.put, [key, value], undefined, false, this.#writeClient)
  }

  /** @param {Buffer} key */
  async _del (key) {
    await this.#beforeWrite()
    await this.#query('delete a key', this.#texts.del, [key], undefined, false, this.#writeClient)
  }

  /**
   * One statement, so one transaction: all or nothing. The last operation
   * on a key wins, as on LevelDB (and ON CONFLICT may touch a row once).
   * With `deferredIds` (lib/writer.js, a group whose sections took
   * placeholder ids): the statement takes the ids (postgres-deferred.js) and
   * they are told in deferredIds.bases.
   * @param {Array<{ type: 'put' | 'del', key: Buffer, value?: Buffer }>} operations
   * @param {{ deferredIds?: import('./postgres-deferred.js').Deferred }} [options]
   */
  _batch (operations, options) {
    /** @type {Map<string, { type: 'put' | 'del', key: Buffer, value?: Buffer }>} */
    const last = new Map()
    for (const op of operations) {
      const id = op.key.toString('latin1')
      last.delete(id)
      last.set(id, op)
    }
    return this.#batchOfDistinct([...last.values()], options)
  }

  /**
   * What _batch() does, for operations on whole keys of the table (a
   * sublevel's prefix and its key) with values encoded, no two of one key:
   * levelkit's writer (lib/writer.js) writes its groups so, past
   * abstract-level's batch() (options, encodings and a copy of every
   * operation, then _batch()'s own pass to keep each key's last operation,
   * which the writer made already). Only while open, and only where
   * abstract-level's batch() would run no prewrite hook and emit no 'write'
   * event (Writer#plainRoot()).
   * @param {Array<{ type: 'put' | 'del', key: Buffer, value?: Buffer, deferredSequence?: boolean }>} operations
   * @param {{ deferredIds?: import('./postgres-deferred.js').Deferred }} [options]
   * @returns {Promise<void>}
   */
  levelkitWriteBatch (operations, options) {
    return this.#batchOfDistinct(operations, options)
  }

  /**
   * @param {Array<{ type: 'put' | 'del', key: Buffer, value?: Buffer }>} operations no two of one key
   * @param {{ deferredIds?: import('./postgres-deferred.js').Deferred }} [options]
   */
  async #batchOfDistinct (operations, options) {
    await this.#beforeWrite()
    const deferred = options?.deferredIds
    if (deferred != null) return this.#deferredBatch(operations, deferred)
    const putKeys = []
    const putValues = []
    const delKeys = []
    for (let i = 0; i < operations.length; i++) {
      const op = operations[i]
      if (op.type === 'put') {
        putKeys.push(op.key)
        putValues.push(op.value)
      } else {
        delKeys.push(op.key)
      }
    }
    const { upsert, remove } = this.#texts
    const keyLocks = this.#writerLock instanceof PostgresSectionLock && !this.#writerLock.closed ? this.#writerLock : null
    if (keyLocks !== null) return this.#batchInKeyTransaction(keyLocks, [putKeys, putValues, delKeys])
    const client = this.#writeClient
    const notices = client === null ? null : /** @type {PostgresWriterLock} */ (this.#writerLock).takeStaged()
    if (client !== null && notices !== null) {
      // Under the shared writer lock: on its connection, with the
      // notifications in the same statement (so in the same transaction:
      // heard exactly when it commits, and never if it does not).
      const channel = /** @type {PostgresWriterLock} */ (this.#writerLock).channel
      await this.#writeBatch(this.#notifyingBatch(channel), [putKeys, putValues, delKeys, notices], client)
      return
    }
    if (delKeys.length === 0 && putKeys.length === 0) return
    if (delKeys.length === 0) {
      await this.#writeBatch(upsert, [putKeys, putValues], client)
    } else if (putKeys.length === 0) {
      await this.#writeBatch(remove, [delKeys], client)
    } else {
      await this.#writeBatch(this.#texts.removeAndUpsert, [putKeys, putValues, delKeys], client)
    }
  }

  /**
   * The statement writing a batch (deletes $3, puts $1 with values $2) and
   * sending its notifications ($4) on `channel`, in one statement (so in one
   * transaction: heard exactly when it commits, and never if it does not).
   * Made once per channel (a database's is its writer lock's, for good).
   * @param {string} channel
   */
  #notifyingBatch (channel) {
    if (this.#notifying?.channel !== channel) {
      const table = quote(this.#table)
      this.#notifying = { channel, text: `WITH removed AS (DELETE FROM ${table} WHERE key = ANY($3::bytea[])), written AS (${this.#texts.upsert}) SELECT count(pg_notify('${channel}', payload)) FROM unnest($4::text[]) WITH ORDINALITY AS n(payload, i)` }
    }
    return this.#notifying.text
  }

  /**
   * With locking: 'keys', a batch is written in the key transaction its
   * critical sections locked their keys in, and commits it: the
   * notifications go in the same statement, heard exactly when it commits.
   * (With locking: 'serializable', in the serializable transaction.)
   * With hosts, the statement carries a commit id (postgres-hosts.js): when
   * the connection fails once it is sent, the batch is settled on the
   * primary found next. Committed: it resolves. Not committed: nothing
   * decided in the lost transaction is written (its locks, or its
   * serializable snapshot, went with it): it rejects with committed: false
   * (with 'serializable', its sections run again, lib/writer.js).
   * @param {PostgresSectionLock} keyLocks @param {unknown[]} values
   */
  async #batchInKeyTransaction (keyLocks, values) {
    const notices = keyLocks.takeStaged() ?? []
    if (keyLocks.takeLost()) {
      // Decided in a transaction lost since (sections after it may have begun another: it goes too).
      await keyLocks.rollback()
      throw lostTransaction(new Error('the connection was lost before the batch was sent'))
    }
    const text = this.#notifyingBatch(keyLocks.channel)
    const commits = this.#commits
    const id = commits === null ? null : commits.take(text, [...values, notices])
    try {
      // With its COMMIT, in one round trip (with hosts, with its commit id).
      await keyLocks.writeAndCommit(id === null ? { name: statementName(text), text, values: [...values, notices] } : id.query)
    } catch (err) {
      const unknown = /** @type {any} */ (err).code === codes.COMMIT_UNKNOWN
      // The connection failed once the batch was sent: settled by its commit id.
      if (id !== null && (unknown || isTransactionLost(err) || isConnectionError(err))) return await this.#settleBatch(id, unknown ? /** @type {any} */ (err).cause ?? err : err)
      if (unknown) throw err
      throw backendError('write and commit a batch', err)
    } finally {
      if (id !== null) /** @type {CommitLog} */ (commits).done(id.seq)
    }
  }

  /**
   * A batch holding placeholder ids, written in the key transaction and
   * committing it (as #batchInKeyTransaction()), by a statement that takes
   * the ids from the sequences (postgres-deferred.js); the first id of each
   * sequence goes to `deferred.bases`. Only where the writer lock says it
   * can (defersSequences: locking: 'keys', no hosts).
   * @param {Array<{ type: 'put' | 'del', key: Buffer, value?: Buffer }>} ops @param {import('./postgres-deferred.js').Deferred} deferred
   */
  async #deferredBatch (ops, deferred) {
    const keyLocks = this.#writerLock
    if (!(keyLocks instanceof PostgresKeyLocks) || keyLocks.closed || !keyLocks.defersSequences) {
      throw levelkitError(codes.INVALID, 'A batch holding placeholder ids goes only to a table shared with locking: \'keys\'')
    }
    const notices = keyLocks.takeStaged() ?? []
    if (keyLocks.takeLost()) {
      await keyLocks.rollback()
      throw lostTransaction(new Error('the connection was lost before the batch was sent'))
    }
    const { text, values } = deferredStatement(quote(this.#table), keyLocks.channel, ops, deferred, notices)
    let results
    try {
      // Unnamed: its text varies with the ops holding placeholders.
      results = await keyLocks.writeAndCommit({ text, values })
    } catch (err) {
      if (/** @type {any} */ (err).code === codes.COMMIT_UNKNOWN) throw err
      throw backendError('write and commit a batch', err)
    }
    deferred.bases = basesOf(results)
  }

  /**
   * A batch of the section transaction whose answer never came: committed
   * (it resolves), or not (lostTransaction()); LEVELKIT_COMMIT_UNKNOWN when
   * no primary answers within the failover timeout.
   * @param {{ seq: number, commitId: string }} id @param {unknown} failure
   */
  async #settleBatch (id, failure) {
    const cause = isTransactionLost(failure) ? /** @type {any} */ (failure).cause : failure
    const committed = await /** @type {CommitLog} */ (this.#commits).settle(id.seq, cause)
    if (committed) return
    throw Object.assign(lostTransaction(cause), { commitId: id.commitId })
  }

  /** @param {RangeOptions} options */
  async _clear (options) {
    await this.#beforeWrite()
    const table = quote(this.#table)
    const limit = limitOf(options)
    if (options.snapshot) {
      // The keys the snapshot has in range (a read-only transaction cannot
      // delete), deleted now.
      const where = rangeWhere(options, [])
      const keys = await this.#query('clear a range', `SELECT key FROM ${table}${where.sql} ORDER BY key ${options.reverse ? 'DESC' : 'ASC'} LIMIT ${limit === null ? 'ALL' : '$' + (where.values.length + 1)}`, limit === null ? where.values : [...where.values, limit], options.snapshot, true)
      if (keys.length > 0) await this.#query('clear a range', `DELETE FROM ${table} WHERE key = ANY($1::bytea[])`, [keys.map(row => row[0])], undefined, false, this.#writeClient)
      return
    }
    const where = rangeWhere(options, [])
    if (limit === null) {
      await this.#query('clear a range', `DELETE FROM ${table}${where.sql}`, where.values, undefined, false, this.#writeClient)
      return
    }
    await this.#query('clear a range', `DELETE FROM ${table} WHERE key IN (SELECT key FROM ${table}${where.sql} ORDER BY key ${options.reverse ? 'DESC' : 'ASC'} LIMIT $${where.values.length + 1})`, [...where.values, limit], undefined, false, this.#writeClient)
  }

  /** @param {any} options */
  _iterator (options) {
    return new PostgresIterator(this, options, this.#reader(options, 'entries'))
  }

  /** @param {any} options */
  _keys (options) {
    return new PostgresKeyIterator(this, options, this.#reader(options, 'keys'))
  }

  /** @param {any} options */
  _values (options) {
    return new PostgresValueIterator(this, options, this.#reader(options, 'values'))
  }

  /**
   * @param {RangeOptions} options @param {'entries' | 'keys' | 'values'} mode
   * @returns {ChunkReader}
   */
  #reader (options, mode) {
    const snapshot = options.snapshot ?? this.#sectionTransaction()
    return new ChunkReader(options, mode, this.#table, (text, values) => this.#query('iterate', text, values, snapshot, true))
  }

  /**
   * With locking: 'serializable', a read made by a critical section goes to
   * the serializable transaction (as if it were a snapshot), so that
   * PostgreSQL watches it; else null.
   * @returns {PostgresSerializable | null}
   */
  #sectionTransaction () {
    const lock = this.#writerLock
    return lock instanceof PostgresSerializable && !lock.closed && lock.reading() ? lock : null
  }

  /**
   * A REPEATABLE READ transaction on a connection of its own, held until the
   * snapshot is closed. It is taken asynchronously; until it is, writes
   * made after db.snapshot() wait, so the snapshot does not see them,
   * unless the caller said it may (`mayIncludeLaterWrites`: a read-only
   * db.transaction() needs a snapshot that holds every write made before
   * the call, and one taken a little later is as consistent).
   * @param {any} options
   */
  _snapshot (options) {
    const mayWait = options?.mayIncludeLaterWrites === true
    const taking = this.#takeSnapshot(mayWait)
    if (!mayWait) {
      const pending = taking.then(noop, noop)
      this.#pendingSnapshots.add(pending)
      pending.then(() => this.#pendingSnapshots.delete(pending))
    }
    return new PostgresSnapshot(options, taking, client => this.#releaseSnapshotClient(client))
  }

  /**
   * Each snapshot holds a connection of its own until closed: without a cap,
   * many concurrent read-only transactions would open as many connections
   * as PostgreSQL allows (max_connections), then every other connection
   * fails. Only snapshots that `mayWait` queue: an explicit db.snapshot()
   * holds back the writes made after it until it is taken, and a held
   * snapshot's owner may be waiting for one of those writes.
   * @param {boolean} mayWait @returns {Promise<import('pg').Client>}
   */
  async #takeSnapshot (mayWait) {
    if (mayWait && this.#snapshotsHeld >= this.#maxSnapshots) {
      await new Promise((resolve, reject) => this.#snapshotQueue.push({ resolve: () => resolve(undefined), reject }))
    } else {
      this.#snapshotsHeld++
    }
    try {
      return await this.#connectSnapshot()
    } catch (err) {
      this.#snapshotReleased()
      throw err
    }
  }

  /** A held snapshot connection is released: the next waiting snapshot takes its place. */
  #snapshotReleased () {
    const next = this.#snapshotQueue.shift()
    if (next !== undefined && this.#snapshotsHeld <= this.#maxSnapshots) next.resolve()
    else {
      if (next !== undefined) this.#snapshotQueue.unshift(next)
      this.#snapshotsHeld--
    }
  }

  /** @returns {Promise<import('pg').Client>} */
  async #connectSnapshot () {
    for (;;) {
      const kept = this.#idleSnapshotClients.length > 0
      const client = await this.#acquireSnapshotClient()
      const wasKept = kept || wasIdle(client)
      try {
        // The snapshot is taken by the transaction's first statement, not by BEGIN.
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SELECT 1')
        return client
      } catch (err) {
        await client.end().catch(noop)
        // A kept connection may have died since (a failover, a restart): the next one.
        if (wasKept && isConnectionError(err)) continue
        throw backendError('take a snapshot', err)
      }
    }
  }

  /**
   * Not from the pool: snapshots held open while their owner writes would
   * take the connections the writes wait for (and a write made after
   * db.snapshot() waits for the snapshot). A connection of its own, kept
   * for the next snapshot.
   * @returns {Promise<import('pg').Client>}
   */
  async #acquireSnapshotClient () {
    const idle = this.#idleSnapshotClients.pop()
    if (idle) {
      /** @type {any} */ (idle.client).ref?.()
      return idle.client
    }
    if (this.#failover) {
      try {
        return await /** @type {PrimaryPool} */ (/** @type {any} */ (this.#pool)).connectClient({ fallback_application_name: 'levelkit snapshot' })
      } catch (err) {
        throw backendError('take a snapshot', err)
      }
    }
    // Named, as the writer and listening connections are, so that
    // pg_stat_activity tells them from the pool's. An idle one of another
    // database of this process, if any (postgres-idle.js).
    try {
      return await connectKept({ fallback_application_name: 'levelkit snapshot', ...this.#clientConfig() }, connectClient)
    } catch (err) {
      throw backendError('take a snapshot', err)
    }
  }

  /** @param {import('pg').Client} client */
  async #releaseSnapshotClient (client) {
    try {
      await client.query('ROLLBACK')
    } catch {
      await client.end().catch(noop)
      this.#snapshotReleased()
      return
    }
    const { idleMs, exitOnIdle } = this.#idlePolicy()
    if (this.#pool !== null && this.#idleSnapshotClients.length < IDLE_SNAPSHOT_CLIENTS && idleMs !== null) {
      // As the pool's idle connections: ended after idleTimeoutMillis (0:
      // never), not holding the process with allowExitOnIdle.
      this.#idleSnapshotClients.push({ client, until: idleMs === 0 ? Infinity : Date.now() + idleMs })
      if (exitOnIdle) /** @type {any} */ (client).unref?.()
      this.#sweepSnapshots()
    } else {
      await release(client)
    }
    this.#snapshotReleased()
  }

  /**
   * How the pool treats idle connections, for the connections of this
   * database outside it: how long one stays idle (null: not kept at all,
   * idleTimeoutMillis 0: until closed) and whether idle ones let the
   * process exit (allowExitOnIdle). pg's defaults: 10 s, no.
   */
  #idlePolicy () {
    const options = /** @type {any} */ (this.#pool)?.options ?? this.#clientConfig()
    const ms = options?.idleTimeoutMillis
    return { idleMs: ms === undefined ? PG_IDLE_TIMEOUT : typeof ms === 'number' && ms >= 0 ? ms : null, exitOnIdle: options?.allowExitOnIdle === true }
  }

  /** End the idle snapshot connections past their time, on an unref'd timer while any are kept. */
  #sweepSnapshots () {
    if (this.#snapshotSweeper !== null) return
    const next = Math.min(...this.#idleSnapshotClients.map(entry => entry.until))
    if (next === Infinity) return
    this.#snapshotSweeper = setTimeout(() => {
      this.#snapshotSweeper = null
      const now = Date.now()
      const idle = this.#idleSnapshotClients
      for (let i = idle.length - 1; i >= 0; i--) {
        if (idle[i].until > now) continue
        idle[i].client.end().catch(noop)
        idle.splice(i, 1)
      }
      if (idle.length > 0) this.#sweepSnapshots()
    }, Math.max(0, next - Date.now()) + 10)
    this.#snapshotSweeper.unref()
  }
}

class PostgresSnapshot extends AbstractSnapshot {
  #taking
  #release
  #statements

  /**
   * @param {any} options @param {Promise<import('pg').Client>} taking
   * @param {(client: import('pg').Client) => Promise<void>} release
   */
  constructor (options, taking, release) {
    // @ts-expect-error abstract-level's types leave out the options (which name the owner)
    super(options)
    this.#taking = taking
    this.#release = release
    // Reads made together on the snapshot (a get beside an iterator's
    // chunk) share its connection: one statement at a time.
    this.#statements = new InOrder(taking)
    // Reported by the reads that use it (and swallowed at close).
    taking.catch(noop)
  }

  /** The statements of the transaction that is the snapshot, sent in order on its connection. */
  statements () {
    return this.#statements
  }

  async _close () {
    /** @type {import('pg').Client | null} */
    let client = null
    try {
      client = await this.#taking
    } catch {}
    if (client) await this.#release(client)
  }
}

/**
 * Reads a range in chunks by keyset pagination: each chunk starts after the
 * last key of the one before (or at a seek() target), never at an OFFSET.
 */
class ChunkReader {
  #options
  #mode
  #table
  #run
  #limit
  /** @type {Buffer | null} */
  #cursor = null
  #cursorInclusive = false
  /** @type {any[][]} rows as arrays: [key] or [key, value] */
  #rows = []
  #index = 0
  #done = false
  #chunk = FIRST_CHUNK

  /**
   * @param {RangeOptions} options @param {'entries' | 'keys' | 'values'} mode @param {string} table
   * @param {(text: string, values: unknown[]) => Promise<any[][]>} run
   */
  constructor (options, mode, table, run) {
    this.#options = options
    this.#mode = mode
    this.#table = table
    this.#run = run
    this.#limit = limitOf(options)
  }

  /**
   * Up to `size` rows (fewer only at the end), as the iterator's items.
   * @param {number} size @param {number} count items the iterator has returned
   */
  async next (size, count) {
    while (this.#rows.length - this.#index < size && !this.#done) {
      await this.#fetch(size - (this.#rows.length - this.#index), count)
    }
    const rows = this.#rows.slice(this.#index, this.#index + size)
    this.#index += rows.length
    if (this.#index === this.#rows.length) {
      this.#rows = []
      this.#index = 0
    }
    return rows.map(this.#item)
  }

  /** Everything left: one statement. @param {number} count */
  async all (count) {
    if (!this.#done) await this.#fetch(Infinity, count)
    return this.next(Infinity, count)
  }

  /** @param {Buffer} target */
  seek (target) {
    this.#cursor = target
    this.#cursorInclusive = true
    this.#rows = []
    this.#index = 0
    this.#done = false
  }

  /** @param {any[]} row */
  #item = (row) => this.#mode === 'entries' ? [row[0], row[1]] : this.#mode === 'keys' ? row[0] : row[1]

  /** @param {number} want @param {number} count */
  async #fetch (want, count) {
    const buffered = this.#rows.length - this.#index
    const left = this.#limit === null ? Infinity : this.#limit - count - buffered
    const size = Math.min(left, Math.max(want, this.#chunk))
    if (size <= 0) {
      this.#done = true
      return
    }
    this.#chunk = Math.min(this.#chunk * 2, MAX_CHUNK)
    const options = this.#options
    const reverse = !!options.reverse
    const where = rangeWhere(options, [])
    let sql = where.sql
    if (this.#cursor !== null) {
      where.values.push(this.#cursor)
      const op = reverse ? (this.#cursorInclusive ? '<=' : '<') : (this.#cursorInclusive ? '>=' : '>')
      sql += `${sql === '' ? ' WHERE' : ' AND'} key ${op} $${where.values.length}`
    }
    let limit = 'ALL'
    if (size !== Infinity) {
      where.values.push(size)
      limit = `$${where.values.length}`
    }
    const columns = this.#mode === 'keys' ? 'key' : 'key, value'
    const rows = await this.#run(`SELECT ${columns} FROM ${quote(this.#table)}${sql} ORDER BY key ${reverse ? 'DESC' : 'ASC'} LIMIT ${limit}`, where.values)
    if (rows.length < size) this.#done = true
    if (rows.length > 0) {
      this.#cursor = rows[rows.length - 1][0]
      this.#cursorInclusive = false
      if (buffered === 0) {
        this.#rows = rows
        this.#index = 0
      } else {
        this.#rows = this.#rows.slice(this.#index).concat(rows)
        this.#index = 0
      }
    }
  }
}

/**
 * abstract-level's three iterator kinds differ here only in their base
 * class: each reads through a ChunkReader.
 * @template {new (...args: any[]) => any} Base
 * @param {Base} Base
 * @returns {new (db: PostgresLevel, options: any, reader: ChunkReader) => InstanceType<Base>}
 */
function chunkedIterator (Base) {
  // (The cast: TypeScript gives a mixin the base's constructor signature.)
  return /** @type {any} */ (class extends Base {
    /** @type {ChunkReader} */
    #reader

    /** @param {any[]} args db, options, and the ChunkReader */
    constructor (...args) {
      super(args[0], args[1])
      this.#reader = args[2]
    }

    async _next () {
      const [item] = await this.#reader.next(1, this.count)
      return item
    }

    /** @param {number} size */
    async _nextv (size) {
      return this.#reader.next(size, this.count)
    }

    async _all () {
      return this.#reader.all(this.count)
    }

    /** @param {Buffer} target */
    _seek (target) {
      this.#reader.seek(target)
    }
  })
}

const PostgresIterator = chunkedIterator(AbstractIterator)
const PostgresKeyIterator = chunkedIterator(AbstractKeyIterator)
const PostgresValueIterator = chunkedIterator(AbstractValueIterator)

/**
 * @typedef {object} LockHolder
 * @property {Promise<import('pg').PoolClient>} client the connection whose session holds the locks
 * @property {InOrder} statements its statements, one at a time (the databases of the pool send them at once)
 * @property {Set<string>} tables the tables locked through it
 * @property {number} users databases using it (open, or opening)
 * @property {Error | null} lost why its connection failed
 * @property {(err: Error) => void} onError what sets `lost`
 * @property {boolean} exitOnIdle whether its connection lets the process exit while no statement runs on it (the pool's allowExitOnIdle)
 * @property {number} running statements running on it
 */

/**
 * One connection per pool holds the table locks of all the databases open
 * on that pool: a pool shared by many databases (an application's, with
 * the pool option) gives up one connection, not one per database.
 * @type {WeakMap<import('pg').Pool, LockHolder>}
 */
const lockHolders = new WeakMap()

/** @param {import('pg').Pool} pool @returns {LockHolder} */
function holderOf (pool) {
  let holder = lockHolders.get(pool)
  if (!holder) {
    const client = pool.connect()
    /** @type {LockHolder} */
    const created = { client, statements: new InOrder(client), tables: new Set(), users: 0, lost: null, onError: (/** @type {Error} */ err) => { created.lost = err }, exitOnIdle: /** @type {any} */ (pool).options?.allowExitOnIdle === true, running: 0 }
    created.client.then(client => client.on('error', created.onError), noop)
    lockHolders.set(pool, created)
    holder = created
  }
  holder.users++
  return holder
}

/**
 * Run a statement on the holder's connection. Between statements it only
 * holds locks: with the pool's allowExitOnIdle it then lets the process
 * exit (its session, and the locks, end with it), as the pool's idle
 * connections do; while one runs, it holds the process, so that an
 * open() or close() awaited with nothing else pending comes back.
 * @param {LockHolder} holder @param {string} text @param {unknown[]} [values]
 */
async function onHolder (holder, text, values) {
  holder.running++
  const client = /** @type {any} */ (await holder.client.catch(() => null))
  client?.ref?.()
  try {
    return await holder.statements.query(text, values)
  } finally {
    if (--holder.running === 0 && holder.exitOnIdle) client?.unref?.()
  }
}

/**
 * A database is done with its pool's holder: the last one gives its
 * connection back (ended if it failed, which also ends its locks).
 * @param {import('pg').Pool} pool @param {LockHolder} holder
 */
async function letGo (pool, holder) {
  if (--holder.users > 0) return
  if (lockHolders.get(pool) === holder) lockHolders.delete(pool)
  let client
  try {
    client = await holder.client
  } catch {
    return
  }
  client.removeListener('error', holder.onError)
  if (holder.lost !== null) return client.release(holder.lost)
  try {
    await onHolder(holder, 'SELECT pg_advisory_unlock_all()')
    client.release()
  } catch (err) {
    client.release(/** @type {Error} */ (err))
  }
}

/** @param {string} table */
function locked (table) {
  return new ModuleError(`Table ${table} is in use by another open database (in this process or another)`, { code: 'LEVEL_LOCKED' })
}

/**
 * The WHERE clause of a range (gte and lte win over gt and lt, as on
 * LevelDB), its parameters appended to `values`.
 * @param {RangeOptions} options @param {unknown[]} values
 */
function rangeWhere (options, values) {
  const terms = []
  const lower = 'gte' in options ? ['>=', options.gte] : 'gt' in options ? ['>', options.gt] : null
  const upper = 'lte' in options ? ['<=', options.lte] : 'lt' in options ? ['<', options.lt] : null
  for (const bound of [lower, upper]) {
    if (bound === null) continue
    values.push(bound[1])
    terms.push(`key ${bound[0]} $${values.length}`)
  }
  return { sql: terms.length === 0 ? '' : ` WHERE ${terms.join(' AND ')}`, values }
}

/** @param {{ limit?: number }} options @returns {number | null} */
function limitOf (options) {
  const limit = options.limit
  return typeof limit === 'number' && Number.isSafeInteger(limit) && limit >= 0 ? limit : null
}

/** @param {string} identifier a validated lowercase identifier */
function quote (identifier) {
  return `"${identifier}"`
}

/**
 * Whether the table is there, refusing one of that name that is not one of
 * ours (a key or value not bytea) or that this user cannot read, with the
 * error a read of it gets. One statement that answers rather than fails: a
 * statement that fails through pool.query() makes pg's pool end its
 * connection, and every database opened on a new table would then cost the
 * server a new one (most of a test run's connections did).
 * @param {{ query: (text: string, values?: unknown[]) => Promise<import('pg').QueryResult<any>> }} pool
 * @param {string} table
 * @returns {Promise<boolean>}
 */
async function tableExists (pool, table) {
  const { rows } = await pool.query('SELECT t.oid IS NOT NULL AS there, t.oid IS NOT NULL AND has_table_privilege(t.oid, \'SELECT\') AND (SELECT count(*) FROM pg_attribute WHERE attrelid = t.oid AND attname IN (\'key\', \'value\') AND atttypid = \'bytea\'::regtype AND NOT attisdropped) = 2 AS ours FROM (SELECT to_regclass($1) AS oid) AS t', [quote(table)])
  if (!rows[0].there) return false
  // Not plainly ours: a read says why (or finds it readable after all, a domain over bytea, say).
  if (!rows[0].ours) await pool.query(`SELECT 1 FROM ${quote(table)} WHERE key = ''::bytea AND value = ''::bytea LIMIT 0`)
  return true
}

/**
 * A failure of the server or of the connection to it, as levelkit reports
 * a backend it cannot use.
 * @param {string} what @param {unknown} err
 */
function backendError (what, err) {
  if (err instanceof ModuleError && /** @type {any} */ (err).code === codes.BACKEND_UNAVAILABLE) return err
  const sqlState = /** @type {any} */ (err).code
  return levelkitError(codes.BACKEND_UNAVAILABLE, `PostgreSQL could not ${what}: ${/** @type {Error} */ (err).message}`, { cause: err, sqlState: typeof sqlState === 'string' ? sqlState : undefined })
}

/**
 * @typedef {ReturnType<typeof tableTexts>} TableTexts
 */

/**
 * The statements of table `table` whose text does not change, each made
 * once: a text made again for each statement (a template string) is a new
 * string, which statementName()'s lookup hashes whole and compares whole
 * each time (1.4% of a serializable createChat's CPU samples, session 23),
 * and so does pg (a named statement's text against the one it prepared);
 * the same string's hash is kept in it, and compares by identity.
 * @param {string} table
 */
function tableTexts (table) {
  const t = quote(table)
  const upsert = `INSERT INTO ${t} (key, value) SELECT * FROM unnest($1::bytea[], $2::bytea[]) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`
  return {
    readValue: `SELECT value FROM ${t} WHERE key = $1`,
    readValues: `SELECT key, value FROM ${t} WHERE key = ANY($1::bytea[])`,
    hasKey: `SELECT 1 FROM ${t} WHERE key = $1`,
    hasKeys: `SELECT key FROM ${t} WHERE key = ANY($1::bytea[])`,
    put: `INSERT INTO ${t} (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
    del: `DELETE FROM ${t} WHERE key = $1`,
    upsert,
    remove: `DELETE FROM ${t} WHERE key = ANY($1::bytea[])`,
    removeAndUpsert: `WITH removed AS (DELETE FROM ${t} WHERE key = ANY($3::bytea[])) ${upsert}`
  }
}

/** The name `text` is prepared under, on every connection. @param {string} text */
function statementName (text) {
  let name = statementNames.get(text)
  if (name === undefined) {
    name = `levelkit_${statementNames.size}`
    statementNames.set(text, name)
  }
  return name
}

function noop () {}
