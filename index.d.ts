import type { AbstractLevel } from 'abstract-level'

/**
 * Stable error codes carried by every levelkit error as `err.code`.
 */
export declare const codes: Readonly<{
  /** Bad input: wrong types, unsupported key values, invalid names, values JSON cannot store faithfully, failed validation, input that throws when read (a getter, a Proxy trap: it is the `cause`). */
  INVALID: 'LEVELKIT_INVALID'
  /** A unique index already holds the value. The error has `collection`, `index` and `value`. */
  UNIQUE: 'LEVELKIT_UNIQUE'
  /** insert() into a collection with function ids found a record under that id. */
  EXISTS: 'LEVELKIT_EXISTS'
  /** The record (or parent, or relation endpoint) does not exist. */
  NOT_FOUND: 'LEVELKIT_NOT_FOUND'
  /** A delete was refused because of an `onDelete: 'restrict'` relation or children set. */
  RESTRICT: 'LEVELKIT_RESTRICT'
  /** A rule refused the operation (e.g. a non-member sending to a chat, a wrong chat password). */
  FORBIDDEN: 'LEVELKIT_FORBIDDEN'
  /** A limit would be exceeded (e.g. a full chat). */
  LIMIT: 'LEVELKIT_LIMIT'
  /** The database is closed. */
  NOT_OPEN: 'LEVELKIT_NOT_OPEN'
  /** The LevelDB location is held by another process (or another open database). */
  LOCKED: 'LEVELKIT_LOCKED'
  /** The backend cannot run in this environment (the message names what is missing), or cannot open the database at the location (its error is the `cause`). */
  BACKEND_UNAVAILABLE: 'LEVELKIT_BACKEND_UNAVAILABLE'
  /** PostgreSQL failed while a batch was committing and no primary said whether it was (`err.commitId`): it may or may not be written. */
  COMMIT_UNKNOWN: 'LEVELKIT_COMMIT_UNKNOWN'
  /** A write through the `tx` of `db.transaction(fn, { readOnly: true })`: nothing is written. */
  READ_ONLY: 'LEVELKIT_READ_ONLY'
  /** IndexedDB only: the `native` option of open() does not match how the database keeps its collections (a collection switching layout, or a native collection's indexes changed), or a native collection cannot do what was asked. Nothing is written. */
  NATIVE_LAYOUT: 'LEVELKIT_NATIVE_LAYOUT'
  /** PostgreSQL serializable, verification mode only (LEVELKIT_VERIFY_SECTION_READS=1): a read in a section run without an async-context frame was not started by its write scope. */
  UNTRACKED_READ: 'LEVELKIT_UNTRACKED_READ'
  /** The operation was decided on top of an earlier write that failed: not written, or its refusal not given. */
  ABORTED: 'LEVELKIT_ABORTED'
  /** Stored data does not parse as what levelkit writes there (written behind its back, or damaged). Not bad input. */
  DECODE_ERROR: 'LEVELKIT_DECODE_ERROR'
  /** The database holds data of models with a store's names but is not that store's (no marker, or another kind's): refused, nothing written. The error has `found` (namespaces holding data) and `marker`. */
  FOREIGN_DATA: 'LEVELKIT_FOREIGN_DATA'
  /** A transaction read something that a commit changed after it began, more often than `maxRetries` allowed; or a write made with `ifVersion` found the record at another version (the error has collection, id, expected and actual). Nothing written. */
  CONFLICT: 'LEVELKIT_CONFLICT'
  /** A transaction (or a write outside one) waited longer than `lockTimeout` for a lock another transaction holds. */
  LOCK_TIMEOUT: 'LEVELKIT_LOCK_TIMEOUT'
  /** Waiting for a lock would have closed a cycle of waits: the youngest transaction in it is failed, and retried like a conflict. */
  DEADLOCK: 'LEVELKIT_DEADLOCK'
  /** A transaction ran longer than its `timeout`: nothing written, its locks released. */
  TX_EXPIRED: 'LEVELKIT_TX_EXPIRED'
  /** A transaction wrote more keys or bytes than `maxOps` or `maxBytes`. */
  TX_TOO_LARGE: 'LEVELKIT_TX_TOO_LARGE'
  /** A read needs an index that is being built, and was made with `{ wait: false }` (or inside a db.write() callback, which cannot wait for it). */
  INDEX_BUILDING: 'LEVELKIT_INDEX_BUILDING'
  /** Another tab or process changed the stored schema of a model (moved a relation's lists or a children set's blocks; added, redeclared or stopped keeping an index) after this database declared it: writes to it, and reads that would answer wrong, are refused until the database is reopened with the new declarations. The error has `model` (and `relation`, `children` or `collection`, and `index`, as they apply). */
  SCHEMA_CHANGED: 'LEVELKIT_SCHEMA_CHANGED'
}>

/** A value the tuple key encoding can store: ordered like bytewise. */
export type TupleValue = null | boolean | number | string | Uint8Array | TupleValue[]

/** An id: any tuple value. Sequence collections use positive integers. */
export type Id = TupleValue

/**
 * The id type of a collection: `number` for a sequence collection (the
 * default), `K` for one declared with `id: (record) => K`.
 */
export type IdOf<C> = C extends Collection<any, infer K, any> ? K : never

/** A record of a sequence collection as stored and read back: with its `id`. */
export type Stored<T, K extends TupleValue = number> = T & { id: K }

export interface OpenOptions {
  /**
   * 'leveldb' (classic-level, Node), 'memory' (memory-level), 'indexeddb' (browser-level, browsers) or 'postgres' (a PostgreSQL table through pg, Node).
   * In Node: 'leveldb' when `location` is given, else 'memory'. In browsers: 'indexeddb' (database 'levelkit' when no `location` is given).
   */
  backend?: 'leveldb' | 'memory' | 'indexeddb' | 'postgres'
  /** postgres: what pg connects with (else the PG* environment variables). */
  connectionString?: string
  /** postgres: the table holding the database (default 'levelkit'; [a-z_][a-z0-9_]{0,62}). */
  table?: string
  /**
   * postgres: the hosts of a primary and its standbys ('host:port' or { host, port }). levelkit uses the one
   * where pg_is_in_recovery() is false and finds it again after a failover; with connectionString (a
   * postgres:// URL), each replaces its host. Not with `pool`. A connectionString naming several hosts,
   * or with target_session_attrs=read-write, does the same.
   */
  hosts?: Array<string | { host: string, port?: number }>
  /** postgres, with hosts: how long an operation waits for a primary, in ms (default 30000). */
  failoverTimeout?: number
  /** postgres: let other processes open the table too, all writing under one lock they take in turn (default false: one open database per table; LEVELKIT_LOCKED for a second). */
  /**
   * postgres, with shared: ms of silence on the writer lock's and the listening connections before TCP
   * keepalive probes, on both sides: the session's tcp_keepalives_idle/interval/count and tcp_user_timeout
   * (the server ends a silent session, and the writer lock with it, about keepAlive + 3 probes later) and
   * pg's keepAlive. Default 10000; false leaves the OS's and the server's settings. Else LEVELKIT_INVALID.
   */
  keepAlive?: number | false
  shared?: boolean
  /**
   * postgres, with shared: how processes take turns writing. 'table' (default):
   * one writer lock for the table, held by one process at a time (leased while
   * idle). 'keys': each process's critical sections lock the keys they read
   * (advisory transaction locks) in a transaction their batch commits, so writes
   * of different keys go on at once. 'serializable': the same transaction,
   * SERIALIZABLE and locking nothing; critical sections run again when
   * PostgreSQL fails it (40001, 40P01). With 'keys' and 'serializable' a
   * critical section (a db.write() callback included) may run more than once.
   * 'serializable' also makes the table's 64 empty lock tables,
   * `<table>_lock_0` to `<table>_lock_63`, that inserts lock (docs/api.md).
   * Both measured slower than 'table' today (bench/RESULTS.md, scale-out).
   * Any other value rejects with LEVELKIT_INVALID.
   */
  locking?: 'table' | 'keys' | 'serializable'
  /**
   * postgres, with shared and locking 'keys' or 'serializable': how many times a
   * critical section runs again at most (a serialization failure or deadlock,
   * 40001/40P01, or a busy key) before its write rejects with LEVELKIT_CONFLICT,
   * the last failure as its cause. Default 100; Infinity: no cap. A non-negative
   * integer or Infinity, else LEVELKIT_INVALID.
   */
  maxReruns?: number
  /**
   * postgres: snapshot connections held at once (default 10). A read-only
   * db.transaction() beyond them waits for one to be released, in call
   * order; an explicit db.snapshot() never waits but counts. A positive
   * integer, else LEVELKIT_INVALID. Up to 4 released ones are kept for the
   * next snapshots for the pool's idleTimeoutMillis (pg's 10 s by default),
   * and with its allowExitOnIdle do not keep the process running.
   */
  maxSnapshots?: number
  /** postgres: connections the pool opens at most (default 10); the table lock and snapshots take connections of their own. */
  poolSize?: number
  /**
   * postgres: a pg `Pool` to use instead of one of its own (not ended at
   * close). Typed by shape, so projects without `@types/pg` compile.
   */
  pool?: { query (...args: any[]): Promise<any>, connect (): Promise<any>, end (): Promise<void> }
  /**
   * Directory (leveldb) or database name (indexeddb: exactly this name;
   * databases made by levelkit 0.1 are named `level-js-<location>`: pass
   * `prefix: 'level-js-'` to open one).
   */
  location?: string
  /** An abstract-level 3 database you opened yourself. levelkit does not close it. */
  db?: AbstractLevel<any, any, any>
  /** Read with getSync() where the backend supports it (default true). */
  syncReads?: boolean
  /**
   * Values kept in memory per namespace for point reads (records, unique
   * index entries, relation edges, counters), and lists of a relation's
   * edges, kept exact by the write path as its batches are written
   * (default 10000; 0 turns it off): a number of entries, or
   * `{ policy, size }` (policy default 'tinylfu'). With synchronous reads.
   * On IndexedDB, where other tabs write too, the tab that holds the
   * cross-tab lock keeps the values it reads and writes instead (the lease
   * cache, docs/browser.md#several-tabs), bounded by `readCacheBytes`; 0
   * turns it off there too.
   */
  readCache?: number | { policy?: ReadCachePolicy, size?: number }
  /**
   * Bytes (estimated: keys and values) that all the read caches of the
   * database hold together, relation lists and child blocks included
   * (default 64 MiB; 0 turns the caches off, the IndexedDB lease cache
   * included). A value or list larger than a
   * sixteenth of it is read but not kept.
   */
  readCacheBytes?: number
  /**
   * IndexedDB, a database open() opens itself: whether a new relation with lists: ['from', 'to']
   * over sequence ids keeps from() in an IndexedDB index over its `to` lists instead of lists of
   * its own (default true). Such a new relation keeps its `to` lists in the index's entries only
   * (stored layout native: ['from', 'to'], one put per list written). A database's stored layout
   * decides for an existing relation, unless 'entries' or 'lists' names the other one: 'entries'
   * moves a relation whose lists are in browser-level's store into the entries (deleting them
   * there, in batches), 'lists' keeps new relations' lists in browser-level's store too (native:
   * ['from']) and moves an entries-only relation back (writing them there, in batches). false:
   * new relations keep reverse lists; a stored index layout is kept.
   */
  relationIndexes?: boolean | 'entries' | 'lists'
  /**
   * IndexedDB, a new database open() opens itself: collections kept native, each with the names of
   * all its indexes, as `{ users: ['username'] }`. A native collection's records are in an object
   * store of their own (`<location>/levelkit-records/<name>`) with one unique multiEntry IndexedDB
   * index per index, so a new record and its unique values are one put(). Its indexes are fixed when
   * its store is made; a collection never switches layout: a mismatch with the database (records in
   * one store, a native collection left out, other indexes) rejects with LEVELKIT_NATIVE_LAYOUT.
   * Other backends and `{ db }` refuse it (LEVELKIT_INVALID).
   */
  native?: Record<string, string[]>
  /**
   * 'relaxed' (default): a write resolves once the backend has its batch.
   * 'sync': once the batch is flushed to disk (LevelDB `sync`; on IndexedDB
   * the durability hint 'strict'); one flush serves every write of a group commit. Per write: `db.write(fn, { sync })`
   * and `db.transaction(fn, { sync })`.
   */
  durability?: 'relaxed' | 'sync'
  /**
   * Other options pass through to the backend levelkit opens (classic-level:
   * cacheSize, writeBufferSize, compression, ...). With `db` there is none:
   * they are refused (LEVELKIT_INVALID).
   */
  [backendOption: string]: unknown
}

/** Open a levelkit database and wait until it is open. */
export declare function open (options?: OpenOptions): Promise<Database>

/**
 * The postgres backend (Node.js only: the browser entry does not export it):
 * end now the PostgreSQL connections closed databases left kept for the next
 * database of this process (for up to 1 s after `db.close()`: their writer,
 * listening and snapshot connections), and those still being reset to be
 * kept. Once it resolves, no session of a database closed before the call is
 * left in `pg_stat_activity` (a statement still running on one, say a lock
 * wait, ends first), so a `DROP DATABASE` or a count of sessions may follow.
 * Resolves at once when none is kept.
 */
export declare function endIdleConnections (): Promise<void>

/**
 * The postgres backend (Node.js only): every table a database on `table` may
 * use, `table` first, then the 64 lock tables its first open with `shared:
 * true, locking: 'serializable'` makes (absent otherwise). Drop each (`DROP
 * TABLE IF EXISTS`) to drop the database. A name that is not a lowercase SQL
 * identifier throws LEVELKIT_INVALID.
 */
export declare function postgresTables (table: string): string[]

/** An opaque write scope, handed to the db.write() callback. Bind models to it with `model.in(w)`. */
export interface WriteScope {
  readonly open: boolean
}

/** One attempt of a db.transaction() callback: a write scope whose reads are checked. Bind models to it with `model.in(tx)`. */
export type Transaction = WriteScope

/**
 * How a read in a transaction locks what it reads, until the transaction ends:
 * 'shared' (a read lock: others may lock it shared too, no one may write it),
 * 'soft' (exclusive among lockers and writers; other transactions may still read it),
 * 'hard' (exclusive; other transactions' reads of it wait too).
 */
export type LockMode = 'shared' | 'soft' | 'hard'

/** Options of a read inside a transaction. */
export interface LockOptions {
  /** Lock what is read (in a transaction only: LEVELKIT_INVALID elsewhere). */
  lock?: LockMode
}

export interface TransactionOptions {
  /** How many times the callback runs again after a conflict or a deadlock (default 10); then LEVELKIT_CONFLICT (or LEVELKIT_DEADLOCK). */
  maxRetries?: number
  /** Milliseconds an attempt may run before it expires with LEVELKIT_TX_EXPIRED, releasing its locks (default 5000). */
  timeout?: number
  /** Milliseconds a lock wait may last before LEVELKIT_LOCK_TIMEOUT (default 1000). */
  lockTimeout?: number
  /** Cancels the transaction (LEVELKIT_ABORTED, the signal's reason as `cause`), releasing its locks, unless it is already committing. */
  signal?: AbortSignal
  /** Flush the commit to disk before resolving (see OpenOptions.durability). */
  sync?: boolean
  /** Keys an attempt may write (default 100000); past it, LEVELKIT_TX_TOO_LARGE. */
  maxOps?: number
  /** Bytes (keys and values) an attempt may write (default 10 MiB); past it, LEVELKIT_TX_TOO_LARGE. */
  maxBytes?: number
  /**
   * Only read: every write through `tx` rejects with LEVELKIT_READ_ONLY (nothing is written).
   * Where the backend has explicit snapshots (LevelDB, memory, PostgreSQL), every read comes
   * from one snapshot taken after the call: it sees every write acknowledged before the call,
   * in this process or another, is never validated, takes no locks, and cannot conflict with
   * writers (it runs again only if an index becomes ready after its snapshot). On browser-level
   * the reads are validated as in any transaction.
   */
  readOnly?: boolean
}

export interface IndexOptions<T> {
  /** The indexed value of a record; an array for a compound index. Return undefined to leave the record out. */
  key: (record: T) => TupleValue | TupleValue[] | undefined
  /** Refuse two records with the same value (LEVELKIT_UNIQUE). */
  unique?: boolean
  /** `key` returns an array: one index entry per element. */
  multi?: boolean
  /**
   * A unique index (not multi) whose entry holds a copy of the record, so
   * getBy() and index queries read one value; every change of the record
   * rewrites the copy.
   */
  covering?: boolean
  /**
   * A non-negative integer (default 0): raise it when the key function
   * changes, and the index is rebuilt (its entries cleared, then every
   * record indexed again, in the background).
   */
  version?: number
}

/** Whether a read that needs an index being built waits for it (the default) or rejects with LEVELKIT_INDEX_BUILDING. */
export interface WaitOptions {
  wait?: boolean
}

/** Where an index is: 'ready'; 'clearing' or 'building' (done of about total records); 'failed' (error); stored but no longer declared: 'undeclared' or 'dropping'. */
export interface IndexStatus {
  state: 'ready' | 'clearing' | 'building' | 'failed' | 'undeclared' | 'dropping'
  /** Whether the collection declares it in this process. */
  declared: boolean
  /** Records indexed so far: while it is built (another tab's or process's build as last read), and once ready if this database's build finished it; absent for an index found built. */
  done?: number
  /** About how many records the build has to index. */
  total?: number
  /** Why the build failed: LEVELKIT_UNIQUE (`err.ids` names two records with one value), LEVELKIT_INVALID, ... */
  error?: Error
}

/**
 * A relation's or children set's data being moved into its declared layout
 * ('moving', values done so far) or a move that failed (`error`). Listed
 * only until the move is over.
 */
export interface LayoutStatus {
  state: 'moving' | 'failed'
  declared: true
  done?: number
  error?: Error
}

export interface CollectionOptions<T> {
  /** 'sequence' (default): integer ids from 1, never reused, stored in the record as `id` (on IndexedDB the stored sequence may lag the records: docs/browser.md, Several tabs). */
  id?: 'sequence'
  indexes?: Record<string, IndexOptions<T>>
  /** Throw to refuse a record; the error becomes LEVELKIT_INVALID with your error as `cause`. */
  validate?: (record: T) => void
  /**
   * Keep a version per record (default false): every insert, put, update
   * and del takes the next value of a per-collection counter, so versions
   * only grow and are never reused, even for a record deleted and created
   * again. Read it with `version(id)`; make a write conditional with
   * `ifVersion`. Costs one op per write, and one per batch for the counter.
   */
  versioned?: boolean
}

/** Options of a collection's put(), update() and del(). */
export interface WriteOptions {
  /**
   * Write only if the record is at this version (as `version(id)` gives it;
   * 0 for a record not written since the collection became versioned):
   * checked in the same critical section as the write. Another version, or
   * no record, rejects with LEVELKIT_CONFLICT (the error has `collection`,
   * `id`, `expected` and `actual`, undefined for no record) and writes
   * nothing. Only on a versioned collection; a non-negative integer.
   */
  ifVersion?: number
}

/**
 * Options of the bulk loads: collection.insertMany(), collection.putMany()
 * and children.appendMany().
 */
export interface BulkOptions {
  /**
   * Items per batch (1 to 100,000; default 250). Each batch is one atomic
   * write with everything it implies (index entries, ids, sequence numbers);
   * at most two batches of the input are in memory at a time. Inside a
   * db.write() scope or a transaction the whole input is part of its one
   * batch.
   */
  batchSize?: number
}

/** The input of a bulk load: an array, any iterable, or an async iterable (read as it is written, never held whole). */
export type BulkInput<T> = Iterable<T> | AsyncIterable<T>

export interface KeyedCollectionOptions<T, K extends TupleValue> extends Omit<CollectionOptions<T>, 'id'> {
  /** The record's id, computed from the record: it must always produce the id it is stored under. */
  id: (record: T) => K
}

/** Range options over keys of type K (ids, sequence numbers, index values). */
export interface RangeOptions<K = TupleValue> {
  gt?: K
  gte?: K
  lt?: K
  lte?: K
  /** Exactly this value. */
  eq?: K
  /** Array values whose leading elements are these (compound indexes). */
  prefix?: TupleValue[]
  /**
   * At most this many items: a non-negative integer, or Infinity. Any size
   * works on every backend; one beyond Number.MAX_SAFE_INTEGER means no limit.
   */
  limit?: number
  reverse?: boolean
  /** A cursor from page(): continue after the page it ended. */
  cursor?: string | null
}

/**
 * Options of collection.query() and count(): bounds on ids (of type K), or,
 * with `index`, on that index's values (any tuple value).
 */
export type QueryOptions<K = TupleValue> =
  | (RangeOptions<K> & { index?: undefined })
  | (RangeOptions<TupleValue> & {
    /** Range over this index's values instead of over ids. */
    index: string
  })

export interface Page<T> {
  items: T[]
  /** Pass back as the `cursor` option for the next page; null when nothing follows. */
  cursor: string | null
}

/** A lazy, re-runnable range read of items T under keys K. */
export declare class Query<T, K = TupleValue> implements AsyncIterable<T> {
  [Symbol.asyncIterator] (): AsyncGenerator<T>
  /** [key, item] pairs: [id, record], [seq, value], [id, id]. */
  entries (): AsyncGenerator<[K, T]>
  keys (): AsyncGenerator<K>
  all (): Promise<T[]>
  page (): Promise<Page<T>>
  /** Number of entries in range (up to limit), without reading values. */
  count (): Promise<number>
}

/**
 * A collection of records `T` under ids `K`, read back as `R`.
 *
 * A sequence collection (the default) has `number` ids and stores each
 * record with its `id`: `Collection<T>` is `Collection<T, number, T & { id: number }>`.
 * One declared with `id: (record: T) => K` stores the record as given: `Collection<T, K, T>`.
 */
export declare class Collection<T extends object = Record<string, any>, K extends TupleValue = number, R extends object = Stored<T, K>> {
  readonly name: string
  /** This collection inside a db.write() scope or a transaction. */
  in (w: WriteScope): this
  /** Resolves with the new id. */
  insert (record: T): Promise<K>
  /**
   * Insert many records, in input order, in batches of `batchSize`: each
   * batch atomic with its index entries and ids, as insert()s one by one
   * would write them, unique values checked against stored records and
   * within the input. Resolves with how many were inserted. A refusal
   * (LEVELKIT_UNIQUE, LEVELKIT_EXISTS, LEVELKIT_INVALID, ...) or an error
   * of the input rejects with that error, its batch and everything after
   * it unwritten, and `err.written`: how many records the batches before
   * it wrote. Other writes may come between two batches.
   */
  insertMany (records: BulkInput<T>, options?: BulkOptions): Promise<number>
  /**
   * Create or replace many records, given as [id, record] pairs (an array
   * of pairs, a Map, any iterable or async iterable of them), in batches,
   * like insertMany(). Resolves with how many were written.
   */
  putMany (entries: BulkInput<[K, T]>, options?: BulkOptions): Promise<number>
  /** Create or replace; resolves true if created. */
  put (id: K, record: T, options?: WriteOptions): Promise<boolean>
  /** Shallow-merge a patch (undefined removes a property) or apply a synchronous function; resolves with the new record. */
  update (id: K, change: Partial<T> | ((record: R) => T), options?: WriteOptions): Promise<R>
  /** Resolves true if a record was deleted. */
  del (id: K, options?: WriteOptions): Promise<boolean>
  /**
   * The record's version in a versioned collection (LEVELKIT_INVALID on
   * one that is not): 0 for a record not written since the collection
   * became versioned, undefined if there is no record. Through `in(w)`, it
   * sees the scope's own writes.
   */
  version (id: K): Promise<number | undefined>
  /** The record, or undefined; in a transaction, optionally locked. */
  get (id: K, options?: LockOptions): Promise<R | undefined>
  has (id: K): Promise<boolean>
  getMany (ids: K[]): Promise<Array<R | undefined>>
  /** The record holding `value` in a unique index. */
  getBy (index: string, value: TupleValue, options?: LockOptions & WaitOptions): Promise<R | undefined>
  /** Records in id order, or in the order of an index's values; keys are ids. In a transaction, `lock` locks the range (phantoms wait) and the records read. */
  query (options?: QueryOptions<K> & LockOptions & WaitOptions): Query<R, K>
  count (options?: QueryOptions<K> & WaitOptions): Promise<number>
}

export type OnDelete = 'cascade' | 'restrict'

export interface RelationOptions<F extends TupleValue = TupleValue, T extends TupleValue = TupleValue, FR extends object = any, TR extends object = any> {
  from: Collection<any, F, FR>
  to: Collection<any, T, TR>
  /** What deleting an endpoint does to its edges: for both sides, or per side. Default 'cascade'. */
  onDelete?: OnDelete | { from: OnDelete, to: OnDelete }
  /**
   * Directions stored as one list of ids per id instead of one key per edge:
   * 'from' for what `from(id)` returns, 'to' for `to(id)`. Reading a whole
   * list is one point read; each edge change rewrites the list. Default [].
   * Changing it on a relation with edges moves them at its first use, in
   * bounded batches; its reads and writes wait meanwhile.
   */
  /** On IndexedDB, see OpenOptions.relationIndexes. */
  lists?: Array<'from' | 'to'>
}

/**
 * The query of a relation's ids (`to()`, `from()`): a Query of ids `I`, and
 * `records()` for the records `R` they name.
 */
export declare class RelationQuery<I, R> extends Query<I, I> {
  /**
   * The records of the other side that the ids name, in the query's order
   * (its range options, limit, reverse and cursor apply to the ids),
   * leaving out an id whose record is gone by the time it is read. On
   * IndexedDB, `from(id).records()` of a relation kept by IndexedDB's index
   * (without range options, limit or cursor) is one request: the index's
   * entries carry the from-records. Elsewhere the ids, then the records.
   */
  records (): Promise<R[]>
}

/**
 * A many-to-many relation between ids `F` of its `from` collection and ids
 * `T` of its `to` collection, whose records read back as `FR` and `TR`.
 */
export declare class Relation<F extends TupleValue = TupleValue, T extends TupleValue = TupleValue, FR extends object = any, TR extends object = any> {
  readonly name: string
  in (w: WriteScope): this
  /** Resolves true if the edge is new; LEVELKIT_NOT_FOUND if an endpoint is missing. */
  add (fromId: F, toId: T): Promise<boolean>
  /**
   * Add the edges from `fromId` to each of `toIds` (an array, an iterable
   * or an async iterable), in batches of `batchSize` ids: each batch is one
   * atomic write, all of its edges or none if an endpoint is missing
   * (LEVELKIT_NOT_FOUND). Resolves with how many are new; a refusal rejects
   * with `err.written`, like collection.insertMany().
   */
  addMany (fromId: F, toIds: BulkInput<T>, options?: BulkOptions): Promise<number>
  /** Resolves true if the edge existed. */
  remove (fromId: F, toId: T): Promise<boolean>
  has (fromId: F, toId: T): Promise<boolean>
  /** Ids on the `to` side that `fromId` links to. Range options apply to those ids; `records()` reads their records. */
  to (fromId: F, options?: RangeOptions<T>): RelationQuery<T, TR>
  /** Ids on the `from` side that link to `toId`; `records()` reads their records. */
  from (toId: T, options?: RangeOptions<F>): RelationQuery<F, FR>
}

export interface ChildrenOptions<P extends TupleValue = TupleValue> {
  parent: Collection<any, P, any>
  /**
   * What deleting a parent does to its children. Default 'cascade' (deleted in
   * the same batch). 'purge': invisible at once, deleted in bounded background
   * batches (resumed after a restart); needs a parent with sequence ids.
   */
  onDelete?: OnDelete | 'purge'
  /**
   * Store the children in blocks of this many (2–1024) per value, under
   * [parentId, first seq of the block], instead of one key per child: a page
   * of n children is about n / blockSize point reads, and an append rewrites
   * its block. Default: one key per child. When it changes, the stored
   * children are moved at the set's first use, in bounded batches; its
   * reads and writes wait meanwhile.
   */
  blockSize?: number
}

export interface WatchOptions {
  /** Deliver children after this sequence number (default: the last one now). */
  after?: number
  /** Ends the iteration. */
  signal?: AbortSignal
}

/** Ordered children (values `V`) of the records of a parent collection whose ids are `P`. */
export declare class Children<V = any, P extends TupleValue = TupleValue> {
  readonly name: string
  in (w: WriteScope): this
  /** Resolves with the child's sequence number: 1, 2, 3, ... per parent, without gaps. */
  append (parentId: P, value: V): Promise<number>
  /**
   * Append many values to a parent's children, in input order, in batches
   * of `batchSize`: each batch atomic with the parent's sequence, so the
   * sequence numbers stay gap-free (another append may come between two
   * batches). Resolves with how many were appended; a refusal or an error
   * of the input rejects with `err.written`, like collection.insertMany().
   */
  appendMany (parentId: P, values: BulkInput<V>, options?: BulkOptions): Promise<number>
  /** Replace an existing child (LEVELKIT_NOT_FOUND if there is none). */
  put (parentId: P, seq: number, value: V): Promise<void>
  del (parentId: P, seq: number): Promise<boolean>
  get (parentId: P, seq: number): Promise<V | undefined>
  /**
   * Several children by sequence number, in the order asked, undefined where
   * there is none: point reads, e.g. the last page of a gap-free sequence.
   */
  getMany (parentId: P, seqs: number[]): Promise<Array<V | undefined>>
  /** Range options apply to sequence numbers. */
  range (parentId: P, options?: RangeOptions<number>): Query<V, number>
  /** The last sequence number handed out for the parent (0 if none). */
  lastSeq (parentId: P): Promise<number>
  /**
   * Each child appended after `after`, as [seq, value], in order, as its batch
   * is written: no gap, no duplicate. Ends on abort, when the parent is deleted or when the database closes.
   * `after` defaults to the last sequence number when called: every child this
   * process appends after the call is delivered (on PostgreSQL too).
   */
  watch (parentId: P, options?: WatchOptions): AsyncGenerator<[number, V]>
  /** Resolves when no background purge ('purge' onDelete) is running; rejects with the error if one failed after its retries. */
  settled (): Promise<void>
}

export declare class Counter {
  readonly name: string
  in (w: WriteScope): this
  /** Add delta (default 1, a safe integer) and resolve with the new value. */
  add (key: TupleValue, delta?: number): Promise<number>
  /** The value, 0 if never added to. */
  get (key: TupleValue): Promise<number>
  /** Counters in key order (those at 0 are absent); `entries()` gives [key, value]. */
  query (options?: RangeOptions): Query<number, TupleValue>
}

export interface Problem {
  type: 'dangling-index-entry' | 'missing-index-entry' | 'unique-violation' | 'invalid-record' |
  'dangling-edge' | 'one-sided-edge' | 'edge-list-mismatch' | 'mirror-record-mismatch' | 'edge-in-old-layout' | 'child-in-old-layout' | 'child-block-mismatch' | 'invalid-block' | 'orphan-child' | 'orphan-sequence' | 'sequence-behind' | 'purge-of-live-parent' | 'invalid-key' | 'invalid-sequence' | 'placeholder-id' | 'invalid-child' | 'invalid-counter' | 'orphan-version' | 'invalid-version'
  /** The sublevel the problem is in. */
  namespace: string
  /** The decoded key of the offending entry. */
  key: unknown
  message: string
  /** True if check({ repair: true }) fixed it. */
  repaired: boolean
}

export interface CheckReport {
  ok: boolean
  problems: Problem[]
  repaired: number
  /** Indexes left out because they are being built or cleared (only when there are any): run `db.buildIndexes()` first to check them. */
  unchecked?: Array<{ collection: string, index: string, state: 'building' | 'clearing' }>
}

/** How the read caches evict (see `levelkit/cache`). */
export type ReadCachePolicy = 'lru' | '2q' | 'arc' | 'tinylfu'

/** One namespace's read-cache statistics. */
export interface ReadCacheStats {
  /** Reads served from the cache. */
  hits: number
  /** Reads that went to the store. */
  misses: number
  /** Entries evicted, by the policy or the byte budget. */
  evictions: number
  /** Entries held now. */
  size: number
}

export declare class Database {
  /** The underlying abstract-level database. */
  readonly level: AbstractLevel<any, any, any>
  readonly status: string
  /** Entries kept per namespace by the read caches (0: off). */
  readonly readCache: number
  /** How the read caches evict. */
  readonly readCachePolicy: ReadCachePolicy
  /** Per namespace with a read cache (named by its model: `users`, `users.idx.email`, `members.fwd`, ...): its statistics since open(). */
  stats (): Record<string, ReadCacheStats>
  /**
   * Declare a collection whose ids come from `options.id(record)`: ids are
   * `K`, records are stored as given.
   */
  collection<T extends object = Record<string, any>, K extends TupleValue = TupleValue> (name: string, options: KeyedCollectionOptions<T, K>): Collection<T, K, T>
  /** Declare a sequence collection: ids are numbers from 1, stored in each record as `id`. */
  collection<T extends object = Record<string, any>> (name: string, options?: CollectionOptions<T>): Collection<T>
  /** Declare a many-to-many relation; its ids are those of `options.from` and `options.to`. */
  relation<F extends TupleValue, T extends TupleValue, FR extends object = any, TR extends object = any> (name: string, options: RelationOptions<F, T, FR, TR>): Relation<F, T, FR, TR>
  /**
   * Declare ordered children of `options.parent`'s records. The parent id type
   * is inferred, or `number` when only the value type is given: name it too
   * for a parent with an id function, as in `db.children<Note, string>(...)`.
   */
  children<V = any, P extends TupleValue = number> (name: string, options: ChildrenOptions<P>): Children<V, P>
  counter (name: string): Counter
  /**
   * A namespace of your own in this database (an abstract-level sublevel of
   * the root); its name cannot collide with a model's. `'tuple'` names the
   * tuple encoding.
   */
  sublevel (name: string, options?: { keyEncoding?: any, valueEncoding?: any, [option: string]: unknown }): AbstractLevel<any, any, any>
  /**
   * Run several model operations (as `model.in(w).op()`) as one atomic batch.
   * `sync` flushes the batch to disk before resolving. `rerunnable` says `fn`
   * has no effect besides its reads and writes through `w`, so levelkit may
   * run it again: on IndexedDB its unique values are then claimed by its
   * batch instead of read first.
   */
  write<R> (fn: (w: WriteScope) => Promise<R> | R, options?: { sync?: boolean, rerunnable?: boolean }): Promise<R>
  /**
   * Run `fn` as a serializable transaction: reads through `model.in(tx)` see
   * the database as of when the attempt began plus its own writes; the
   * writes are committed as one batch only if nothing read changed
   * meanwhile, else `fn` runs again (`attempt` 2, 3, ...). `fn` may run more
   * than once: keep side effects out of it.
   */
  transaction<R> (fn: (tx: Transaction, attempt: number) => Promise<R> | R, options?: TransactionOptions): Promise<R>
  check (options?: { repair?: boolean }): Promise<CheckReport>
  /** Build every declared index that is not ready (a failed build is tried again) and finish every waiting layout move; rejects with the error of one that fails. */
  buildIndexes (): Promise<void>
  /** Per collection, per index: its state and the progress of its build; per relation or children set whose layout is being moved: `{ layout: LayoutStatus }`. */
  schemaStatus (): Promise<Record<string, Record<string, IndexStatus | LayoutStatus>>>
  /** Delete the entries and stored declaration of every index stored for a declared collection but no longer declared; resolves with what it dropped. */
  dropUndeclared (): Promise<Array<{ collection: string, index: string }>>
  /**
   * Run the migrations the database has not run yet (versions above its
   * schema version), in version order, each once; the version is stored
   * when its last step is done. A migration that throws (or a crash) leaves
   * the version where it was, and the next call resumes it: the steps it
   * completed are not run again. Rejects with LEVELKIT_INVALID, writing
   * nothing, for a list that is not strictly increasing integer versions
   * of at least 1 with an `up` function each, or that ends below the
   * database's version. A second call waits for the first (on IndexedDB,
   * in another tab too).
   */
  migrate (migrations: Migration[], options?: { onProgress?: (progress: MigrationProgress) => void }): Promise<MigrateResult>
  /** The version of the last migration the database ran (0 before any). */
  schemaVersion (): Promise<number>
  close (): Promise<void>
}

/** What a `modify()` function returns to delete the record (`m.remove`; `Symbol.for('levelkit.migration.remove')`). */
declare const migrationRemove: unique symbol

/** A migration: `up(m)` runs once per database, when its schema version is below `version`. */
export interface Migration {
  /** An integer of at least 1; strictly increasing along the list. */
  version: number
  up (m: MigrationContext): unknown
}

/** Progress of a migration's `modify()`, after each batch (the `onProgress` option of `db.migrate()`). */
export interface MigrationProgress {
  version: number
  /** Which step of `up()` (1 for its first). */
  step: number
  collection: string
  /** Records visited so far by this step. */
  done: number
}

/** What `db.migrate()` resolves with. */
export interface MigrateResult {
  /** The schema version before. */
  from: number
  /** The schema version now. */
  to: number
  /** The versions this call ran. */
  ran: number[]
}

/** What a migration's `up(m)` gets. */
export interface MigrationContext {
  /** The version of the migration running. */
  readonly version: number
  /** The database being migrated. Writes made through it are not kept track of: a resumed migration makes them again. */
  readonly db: Database
  /** Returned by a `modify()` function: delete the record. */
  readonly remove: typeof migrationRemove
  /** The steps of a collection declared on the database. */
  collection<T extends object, K extends TupleValue, R extends object> (collection: Collection<T, K, R>): {
    /**
     * Rewrite every record, in key order, in batches of `batchSize` (256),
     * each atomic with its index entries and the step's marker: `fn` gets a
     * copy of each record and returns the new record (same id), `undefined`
     * to keep it, or `m.remove` to delete it, synchronously. Resumed after a
     * crash or an error, it goes on after the last record written. Resolves
     * with the records visited, changed and removed.
     */
    modify (fn: (record: R) => T | R | undefined | typeof migrationRemove, options?: { batchSize?: number }): Promise<{ done: number, changed: number, removed: number }>
  }
  /** Run `fn(w)` as one `db.write()`, atomic with the mark that this step is done: a resumed migration does not run it again (it resolves with `undefined` then). */
  write<Res> (fn: (w: WriteScope) => Promise<Res> | Res): Promise<Res | undefined>
}

/** The tuple key encoding as an abstract-level encoding, for your own sublevels: `{ keyEncoding: tupleEncoding }`. */
export declare const tupleEncoding: {
  readonly name: 'tuple'
  readonly format: 'view'
  encode (value: TupleValue): Uint8Array
  decode (bytes: Uint8Array): TupleValue
}

/** Encode a tuple value: bytewise's byte format and order, on Uint8Array. */
export declare function encodeTuple (value: TupleValue): Uint8Array
export declare function decodeTuple (bytes: Uint8Array): TupleValue
