// Several processes writing one table with open({ backend: 'postgres',
// shared: true, locking: 'keys' }): instead of one writer lock for the
// whole table (postgres-shared.js), a process's critical sections run in a
// transaction of its own connection, the key transaction, which takes a
// transaction-level advisory lock on every key they read before they read
// it; their batch is written in that transaction and commits it, which
// lets the locks go. Processes that decide on different keys write at the
// same time; two that decide on one key take turns.
//
// Deadlocks: a key transaction waits for a lock only while it holds none
// (its first statement), taking the keys of that statement in one order
// (sorted). Once it holds some, it only tries (pg_try_advisory_xact_lock);
// a lock another transaction holds throws KeyLockBusy, and the write path
// commits what it decided so far, ends the transaction and runs the
// critical section again, in a new transaction whose first statement waits
// for the busy keys. A transaction that holds locks never waits for one, so
// no two wait for each other.
//
// Shared locks: a key a critical section only reads to check that it
// exists (a relation's endpoint record, lib/relation.js exists()) is locked
// in shared mode (pg_advisory_xact_lock_shared): other transactions
// checking it do not wait for each other, and one that deletes or rewrites
// it (its sections read it first, in exclusive mode) waits for them all. A
// key held shared that a section then reads to decide on is locked
// exclusively in the same transaction, with a try like any other (busy while
// another transaction holds it shared too). Values read under a shared lock
// are kept out of the caches that get() reads (lib/write-scope.js
// getShared()), so that a later exclusive read of the key asks for its
// lock; getShared() alone finds them again, for the key transaction's life
// (lib/shared-reads.js, cleared by onEnd()).
//
// Reads behind the locks: a section reads a key once its lock is held, and
// the sections of a key transaction run one at a time, so a lock statement
// and then a read were two round trips per section. A read asked for with a
// lock of this turn (readAfter(), from postgres-level.js _get()) goes in the
// lock statement's query, as a statement of its own behind it: in read
// committed it takes its snapshot once the locks are held, and sees what
// their last holders committed.
//
// Range reads (a child list, the edges of a relation) cannot lock the keys
// they would see: every key transaction holds the table's range lock in
// shared mode, and a critical section that reads a range runs in a
// transaction holding it exclusively (KeyLockBusy again when it held it
// shared).
//
// Cached values (lib/section-cache.js, cached namespaces) are trusted only
// while the key transaction that read them holds their keys' locks: the
// write path forgets them when it ends (onEnd()).
import { performance } from 'node:perf_hooks'
import { PostgresSectionLock, isTransactionLost, keyLockOf, noop } from './postgres-section-lock.js'
import { inlineValues } from './postgres-literal.js'

// The first key of the range lock: 'LKRG'.
export const RANGE_LOCK_SPACE = 0x4c4b5247

/** Thrown by a lock that another transaction holds while this one holds locks: run the critical section again. */
export class KeyLockBusy extends Error {
  /** @param {boolean} exclusive whether it was the range lock */
  constructor (exclusive) {
    super('A key lock is held by another process: the critical section runs again')
    this.exclusive = exclusive
  }
}

/**
 * The rows of a lock statement: `list`'s lock keys as k, and, when some are
 * shared, whether each is exclusive as e.
 * @param {string[]} list @param {Map<string, boolean>} modes
 */
function lockList (list, modes) {
  if (list.every(lock => modes.get(lock))) return `unnest('{${list.join(',')}}'::bigint[]) AS k`
  return `unnest('{${list.join(',')}}'::bigint[], '{${list.map(lock => modes.get(lock) ? 't' : 'f').join(',')}}'::boolean[]) AS u (k, e)`
}

/**
 * The call that takes a row's lock, exclusive or shared as e says (the
 * statements of exclusive locks alone stay as they were).
 * @param {string} fn the exclusive lock's function @param {string[]} list @param {Map<string, boolean>} modes
 */
function lockCall (fn, list, modes) {
  return list.every(lock => modes.get(lock)) ? `${fn}(k)` : `CASE WHEN e THEN ${fn}(k) ELSE ${fn}_shared(k) END`
}

/**
 * The key transaction of a postgres database shared with locking: 'keys'
 * (the section transaction, postgres-section-lock.js, taking advisory locks).
 */
export class PostgresKeyLocks extends PostgresSectionLock {
  /** Whether a batch may hold placeholder ids that its statement takes from the sequences (lib/deferred-ids.js; postgres-level.js sets it). */
  defersSequences = false
  #keyHost
  /** @type {Map<string, Promise<void> | null>} the lock keys (decimal bigints) the open transaction holds (null) or asked for (the statement's promise), in the mode #exclusive tells */
  #held = new Map()
  /** @type {Set<string>} of #held, the lock keys held or asked for exclusively (the others shared) */
  #exclusive = new Set()
  /** Key locks may be taken in shared mode (lock()'s `shared`): lib/writer.js tells sections so. */
  locksShared = true
  /** @type {'none' | 'shared' | 'exclusive'} the range lock the open transaction holds */
  #range = 'none'
  /** @type {Map<string, boolean>} keys found busy, exclusive or not: the next transaction waits for them in its first statement */
  #busy = new Map()
  #busyRange = false
  /** @type {Array<{ locks: Array<[string, boolean]>, resolve: () => void, reject: (err: unknown) => void }>} lock requests (lock key, exclusive) waiting for the next statement */
  #requests = []
  /** @type {Set<Promise<void>>} the promises lock() answered with for the requests of this turn (not sent yet): a read after one of them goes in its statement (readAfter()) */
  #turn = new Set()
  /** @type {Array<{ key: Buffer, resolve: (value: Buffer | undefined) => void, reject: (err: unknown) => void, fallback: () => Promise<Buffer | undefined> }>} reads to make in this turn's statement, behind its locks */
  #reads = []
  /** @type {string} the table, quoted */
  #quoted
  /** @type {Map<string, string>} the namespace prefix of each lock key asked for in the open transaction (for stats.busyOn) */
  #prefixes = new Map()
  /** How many lock requests failed with an error busy() accepts, and the last: a section whose caller caught one runs again all the same (lib/writer.js). */
  failed = 0
  /** @type {unknown} */
  lastFailure = null

  /**
   * @param {import('./postgres-shared.js').SharedWriterHost} host
   * @param {string} table
   */
  constructor (host, table) {
    super(host, table)
    this.#keyHost = host
    this.#quoted = '"' + table.replace(/"/g, '""') + '"'
    // First, before the write path's listeners: the locks go with the transaction.
    this.onEnd(() => {
      this.#held.clear()
      this.#exclusive.clear()
      this.#prefixes.clear()
      this.#range = 'none'
    })
  }

  /** Whether `err` asks for the critical section to run again. @param {unknown} err */
  busy (err) {
    // A key transaction lost with its connection: the section runs again in a new one.
    return err instanceof KeyLockBusy || isTransactionLost(err)
  }

  /**
   * Lock the keys of `prefix` (a namespace's) for the key transaction:
   * null when it holds them all already, else a promise (rejected with
   * KeyLockBusy when another transaction holds one of them). Shared: only
   * to check that they exist (a lock held shared is taken exclusively when
   * asked for so later).
   * @param {string} prefix @param {Uint8Array[]} keys @param {boolean} [shared]
   * @returns {Promise<void> | null}
   */
  lock (prefix, keys, shared = false) {
    this.requests++
    /** @type {Array<[string, boolean]>} */
    const wanted = []
    /** @type {Array<Promise<void>>} */
    const asked = []
    // Indexed loops here and in #send(): this code runs mostly unoptimized
    // (interpreter, baseline), where for...of allocates a result per step
    // (8 KB of allocation per createChat with key locks, session 21).
    for (let i = 0; i < keys.length; i++) {
      const lock = this.#lockKey(prefix, keys[i])
      const held = this.#held.get(lock)
      if (held === undefined || (!shared && !this.#exclusive.has(lock))) {
        wanted.push([lock, !shared])
        this.#prefixes.set(lock, prefix)
      } else if (held !== null) asked.push(held)
    }
    if (wanted.length === 0 && this.holding) return asked.length === 0 ? null : Promise.all(asked).then(noop)
    /** @type {Promise<void>} */
    const requested = new Promise((resolve, reject) => {
      if (this.#requests.length === 0) process.nextTick(() => this.#send())
      this.#requests.push({ locks: wanted, resolve, reject })
    })
    if (asked.length > 0) return Promise.all([requested, ...asked]).then(noop)
    this.#turn.add(requested)
    return requested
  }

  /**
   * The value of `key` (a key of the table), read once `locked` (what
   * lock() answered) resolves: where `locked` is a request of this turn,
   * in the same query as its lock statement, right behind it (one round
   * trip for the lock and the read where they took two: the key
   * transaction's sections lock and then read, one after another); else
   * by `fallback` once it resolves.
   * @param {Promise<void>} locked @param {Buffer} key @param {() => Promise<Buffer | undefined>} fallback
   * @returns {Promise<Buffer | undefined>}
   */
  readAfter (locked, key, fallback) {
    if (!this.#turn.has(locked)) return locked.then(fallback)
    return new Promise((resolve, reject) => { this.#reads.push({ key, resolve, reject, fallback }) })
  }

  /**
   * The range lock, exclusively: null when held, else a promise; a
   * transaction that already holds it shared must end first (KeyLockBusy).
   * @returns {Promise<void> | null}
   */
  lockRanges () {
    if (this.#range === 'exclusive') return null
    if (this.holding) {
      this.#busyRange = true
      this.stats.retries++
      return Promise.reject(this.#failed(new KeyLockBusy(true)))
    }
    this.#busyRange = true
    return this.lock('', [])
  }

  /** @param {string} prefix @param {Uint8Array} key */
  #lockKey (prefix, key) {
    return keyLockOf(this.name, prefix, key)
  }

  /** @param {unknown} err */
  #failed (err) {
    this.failed++
    this.lastFailure = err
    return err
  }

  /** Send the lock requests of this turn as one statement. */
  async #send () {
    const requests = this.#requests
    this.#requests = []
    const reads = this.#reads
    this.#reads = []
    this.#turn.clear()
    /** @type {Map<string, boolean>} each lock key to take, exclusively or not (exclusive wins) */
    const locks = new Map()
    for (let i = 0; i < requests.length; i++) {
      const wanted = requests[i].locks
      for (let j = 0; j < wanted.length; j++) {
        const lock = wanted[j][0]
        const exclusive = wanted[j][1]
        if (this.#held.get(lock) === null && (!exclusive || this.#exclusive.has(lock))) continue
        locks.set(lock, exclusive || locks.get(lock) === true)
      }
    }
    const fresh = !this.holding
    let text
    if (fresh) {
      // Holding nothing: wait, in one order, for every key (and the ones
      // found busy before), with the range lock first.
      this.#busy.forEach((exclusive, lock) => locks.set(lock, exclusive || locks.get(lock) === true))
      this.#busy.clear()
      const exclusive = this.#busyRange
      this.#busyRange = false
      const sorted = [...locks.keys()].sort()
      text = `BEGIN; SELECT pg_advisory_xact_lock${exclusive ? '' : '_shared'}(${RANGE_LOCK_SPACE}, ${this.#keyHost.lockKey})` +
        // In the one order whatever the mode: no two first statements wait for each other.
        (sorted.length > 0 ? `; SELECT count(${lockCall('pg_advisory_xact_lock', sorted, locks)}) FROM ${lockList(sorted, locks)}` : '')
      this.begin()
      this.#range = exclusive ? 'exclusive' : 'shared'
    } else if (locks.size > 0) {
      const list = [...locks.keys()]
      text = `SELECT k::text AS k, ${lockCall('pg_try_advisory_xact_lock', list, locks)} AS locked FROM ${lockList(list, locks)}`
    } else {
      for (const request of requests) request.resolve()
      // Every key held already: the reads go as any other.
      for (const read of reads) read.fallback().then(read.resolve, read.reject)
      return
    }
    // The reads behind the locks: in read committed, a statement of its own
    // (its own snapshot), taken once the locks are.
    if (reads.length > 0) text += `; SELECT key, value FROM ${this.#quoted} WHERE key = ANY(${inlineValues('$1::bytea[]', [reads.map(read => read.key)])})`
    // Asked for, not yet held: a lock() of the same keys meanwhile waits for it too.
    /** @type {Promise<void>} */
    const statement = new Promise((resolve, reject) => { requests.push({ locks: [], resolve: () => resolve(undefined), reject }) })
    statement.catch(noop)
    locks.forEach((exclusive, lock) => {
      this.#held.set(lock, statement)
      if (exclusive) this.#exclusive.add(lock)
    })
    const sent = performance.now()
    const transaction = this.stats.transactions
    try {
      const result = await this.query(text)
      // A first statement waits for its locks: how long, with its round trip.
      if (fresh) this.stats.firstStatementMs += performance.now() - sent
      if (!fresh) {
        const rows = /** @type {any} */ (reads.length > 0 ? /** @type {any} */ (result)[0] : result).rows
        const busy = rows.filter((/** @type {any} */ row) => row.locked !== true)
        if (busy.length > 0) {
          for (const row of busy) {
            const prefix = this.#prefixes.get(row.k) ?? '?'
            this.stats.busyOn[prefix] = (this.stats.busyOn[prefix] ?? 0) + 1
          }
          // All are waited for next time, as they were before the busy ones were told.
          for (const [lock, exclusive] of locks) this.#busy.set(lock, exclusive || this.#busy.get(lock) === true)
          this.stats.retries++
          throw new KeyLockBusy(false)
        }
      }
      locks.forEach((_, lock) => { if (this.#held.get(lock) === statement) this.#held.set(lock, null) })
      for (let i = 0; i < requests.length; i++) requests[i].resolve()
      if (reads.length > 0) {
        const rows = /** @type {any} */ (Array.isArray(result) ? result[result.length - 1] : result).rows
        /** @type {Map<string, Buffer>} */
        const found = new Map()
        for (let i = 0; i < rows.length; i++) found.set(rows[i].key.toString('latin1'), rows[i].value)
        for (let i = 0; i < reads.length; i++) reads[i].resolve(found.get(reads[i].key.toString('latin1')))
      }
    } catch (err) {
      for (const read of reads) read.reject(err)
      // The transaction is lost (its connection, or an error aborted it):
      // rolled back, unless the statement failed after the next began (it
      // was queued behind the failure) and the transaction is already gone.
      if (!(err instanceof KeyLockBusy) && transaction === this.stats.transactions) {
        this.rollback().catch(noop)
      }
      if (this.busy(err)) this.#failed(err)
      for (const request of requests) request.reject(err)
    }
  }
}
