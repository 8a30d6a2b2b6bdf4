import type { AbstractLevel } from 'abstract-level'

/**
 * Stable error codes carried by every levelkit error as `err.code`.
 */
export declare const codes: Readonly<{
  /** Bad input: wrong types, unsupported key values, invalid names, non-serializable values, failed validation. */
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
  /** The backend cannot run in this environment; the message names what is missing. */
  BACKEND_UNAVAILABLE: 'LEVELKIT_BACKEND_UNAVAILABLE'
  /** The operation was decided on top of an earlier write that failed: not written, or its refusal not given. */
  ABORTED: 'LEVELKIT_ABORTED'
  /** Stored data does not parse as what levelkit writes there (written behind its back, or damaged). Not bad input. */
  DECODE_ERROR: 'LEVELKIT_DECODE_ERROR'
}>

/** A value the tuple key encoding can store: ordered like bytewise. */
export type TupleValue = null | boolean | number | string | Uint8Array | TupleValue[]

/** An id: any tuple value. Sequence collections use positive integers. */
export type Id = TupleValue

export interface OpenOptions {
  /**
   * 'leveldb' (classic-level, Node), 'memory' (memory-level) or 'indexeddb' (browser-level, browsers).
   * In Node: 'leveldb' when `location` is given, else 'memory'. In browsers: 'indexeddb' (database 'levelkit' when no `location` is given).
   */
  backend?: 'leveldb' | 'memory' | 'indexeddb'
  /** Directory (leveldb) or database name (indexeddb). */
  location?: string
  /** An abstract-level 3 database you opened yourself. levelkit does not close it. */
  db?: AbstractLevel<any, any, any>
  /** Read with getSync() where the backend supports it (default true). */
  syncReads?: boolean
  /**
   * Values kept in memory per namespace for point reads (records, unique
   * index entries, relation edges, counters), and lists of a relation's
   * edges, kept exact by the write path as its batches are written
   * (default 10000; 0 turns it off). Only with
   * synchronous reads: never on IndexedDB, where other tabs write too.
   */
  readCache?: number
  /** Other options pass through to the backend (classic-level: cacheSize, writeBufferSize, compression, ...). */
  [backendOption: string]: unknown
}

/** Open a levelkit database and wait until it is open. */
export declare function open (options?: OpenOptions): Promise<Database>

/** An opaque write scope, handed to the db.write() callback. Bind models to it with `model.in(w)`. */
export interface WriteScope {
  readonly open: boolean
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
}

export interface CollectionOptions<T> {
  /** 'sequence' (default): integer ids from 1, stored in the record as `id`; or a function record => id. */
  id?: 'sequence' | ((record: T) => Id)
  indexes?: Record<string, IndexOptions<T>>
  /** Throw to refuse a record; the error becomes LEVELKIT_INVALID with your error as `cause`. */
  validate?: (record: T) => void
}

export interface RangeOptions {
  gt?: TupleValue
  gte?: TupleValue
  lt?: TupleValue
  lte?: TupleValue
  /** Exactly this value. */
  eq?: TupleValue
  /** Array values whose leading elements are these (compound indexes). */
  prefix?: TupleValue[]
  /** At most this many items (a non-negative integer, or Infinity). */
  limit?: number
  reverse?: boolean
  /** A cursor from page(): continue after the page it ended. */
  cursor?: string | null
}

export interface QueryOptions extends RangeOptions {
  /** Range over this index's values instead of over ids. */
  index?: string
}

export interface Page<T> {
  items: T[]
  /** Pass back as the `cursor` option for the next page; null when nothing follows. */
  cursor: string | null
}

/** A lazy, re-runnable range read. */
export declare class Query<T, K = Id> implements AsyncIterable<T> {
  [Symbol.asyncIterator] (): AsyncGenerator<T>
  /** [key, item] pairs: [id, record], [seq, value], [id, id]. */
  entries (): AsyncGenerator<[K, T]>
  keys (): AsyncGenerator<K>
  all (): Promise<T[]>
  page (): Promise<Page<T>>
  /** Number of entries in range (up to limit), without reading values. */
  count (): Promise<number>
}

export type Stored<T> = T & { id?: Id }

export declare class Collection<T extends object = Record<string, any>> {
  readonly name: string
  /** This collection inside a db.write() scope. */
  in (w: WriteScope): Collection<T>
  /** Resolves with the new id. */
  insert (record: T): Promise<Id>
  /** Create or replace; resolves true if created. */
  put (id: Id, record: T): Promise<boolean>
  /** Shallow-merge a patch (undefined removes a property) or apply a synchronous function; resolves with the new record. */
  update (id: Id, change: Partial<T> | ((record: Stored<T>) => T)): Promise<Stored<T>>
  /** Resolves true if a record was deleted. */
  del (id: Id): Promise<boolean>
  get (id: Id): Promise<Stored<T> | undefined>
  has (id: Id): Promise<boolean>
  getMany (ids: Id[]): Promise<Array<Stored<T> | undefined>>
  /** The record holding `value` in a unique index. */
  getBy (index: string, value: TupleValue): Promise<Stored<T> | undefined>
  query (options?: QueryOptions): Query<Stored<T>>
  count (options?: QueryOptions): Promise<number>
}

export type OnDelete = 'cascade' | 'restrict'

export interface RelationOptions {
  from: Collection<any>
  to: Collection<any>
  /** What deleting an endpoint does to its edges: for both sides, or per side. Default 'cascade'. */
  onDelete?: OnDelete | { from: OnDelete, to: OnDelete }
  /**
   * Directions stored as one list of ids per id instead of one key per edge:
   * 'from' for what `from(id)` returns, 'to' for `to(id)`. Reading a whole
   * list is one point read; each edge change rewrites the list. Default [].
   */
  lists?: Array<'from' | 'to'>
}

export declare class Relation {
  readonly name: string
  in (w: WriteScope): Relation
  /** Resolves true if the edge is new; LEVELKIT_NOT_FOUND if an endpoint is missing. */
  add (fromId: Id, toId: Id): Promise<boolean>
  /**
   * Add the edges from `fromId` to each of `toIds` as one operation: all of
   * them, or none if an endpoint is missing (LEVELKIT_NOT_FOUND). Resolves
   * with how many are new.
   */
  addMany (fromId: Id, toIds: Id[]): Promise<number>
  /** Resolves true if the edge existed. */
  remove (fromId: Id, toId: Id): Promise<boolean>
  has (fromId: Id, toId: Id): Promise<boolean>
  /** Ids on the `to` side that `fromId` links to. Range options apply to those ids. */
  to (fromId: Id, options?: RangeOptions): Query<Id>
  /** Ids on the `from` side that link to `toId`. */
  from (toId: Id, options?: RangeOptions): Query<Id>
}

export interface ChildrenOptions {
  parent: Collection<any>
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
   * its block. Default: one key per child. When it changes,
   * `check({ repair: true })` moves the stored children.
   */
  blockSize?: number
}

export interface WatchOptions {
  /** Deliver children after this sequence number (default: the last one now). */
  after?: number
  /** Ends the iteration. */
  signal?: AbortSignal
}

export declare class Children<V = any> {
  readonly name: string
  in (w: WriteScope): Children<V>
  /** Resolves with the child's sequence number: 1, 2, 3, ... per parent, without gaps. */
  append (parentId: Id, value: V): Promise<number>
  /** Replace an existing child (LEVELKIT_NOT_FOUND if there is none). */
  put (parentId: Id, seq: number, value: V): Promise<void>
  del (parentId: Id, seq: number): Promise<boolean>
  get (parentId: Id, seq: number): Promise<V | undefined>
  /**
   * Several children by sequence number, in the order asked, undefined where
   * there is none: point reads, e.g. the last page of a gap-free sequence.
   */
  getMany (parentId: Id, seqs: number[]): Promise<Array<V | undefined>>
  /** Range options apply to sequence numbers. */
  range (parentId: Id, options?: RangeOptions): Query<V, number>
  /** The last sequence number handed out for the parent (0 if none). */
  lastSeq (parentId: Id): Promise<number>
  /**
   * Each child appended after `after`, as [seq, value], in order, as its batch
   * is written: no gap, no duplicate. Ends on abort, when the parent is deleted or when the database closes.
   */
  watch (parentId: Id, options?: WatchOptions): AsyncGenerator<[number, V]>
  /** Resolves when no background purge ('purge' onDelete) is running; rejects with the error if one failed after its retries. */
  settled (): Promise<void>
}

export declare class Counter {
  readonly name: string
  in (w: WriteScope): Counter
  /** Add delta (default 1, a safe integer) and resolve with the new value. */
  add (key: TupleValue, delta?: number): Promise<number>
  /** The value, 0 if never added to. */
  get (key: TupleValue): Promise<number>
  /** Counters in key order (those at 0 are absent); `entries()` gives [key, value]. */
  query (options?: RangeOptions): Query<number, TupleValue>
}

export interface Problem {
  type: 'dangling-index-entry' | 'missing-index-entry' | 'unique-violation' | 'invalid-record' |
  'dangling-edge' | 'one-sided-edge' | 'edge-list-mismatch' | 'edge-in-old-layout' | 'child-in-old-layout' | 'child-block-mismatch' | 'invalid-block' | 'orphan-child' | 'orphan-sequence' | 'sequence-behind' | 'purge-of-live-parent' | 'invalid-key'
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
}

export declare class Database {
  /** The underlying abstract-level database. */
  readonly level: AbstractLevel<any, any, any>
  readonly status: string
  collection<T extends object = Record<string, any>> (name: string, options?: CollectionOptions<T>): Collection<T>
  relation (name: string, options: RelationOptions): Relation
  children<V = any> (name: string, options: ChildrenOptions): Children<V>
  counter (name: string): Counter
  /**
   * A namespace of your own in this database (an abstract-level sublevel of
   * the root); its name cannot collide with a model's. `'tuple'` names the
   * tuple encoding.
   */
  sublevel (name: string, options?: { keyEncoding?: any, valueEncoding?: any, [option: string]: unknown }): AbstractLevel<any, any, any>
  /** Run several model operations (as `model.in(w).op()`) as one atomic batch. */
  write<R> (fn: (w: WriteScope) => Promise<R> | R): Promise<R>
  check (options?: { repair?: boolean }): Promise<CheckReport>
  close (): Promise<void>
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
