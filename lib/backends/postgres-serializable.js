// Several processes writing one table with open({ backend: 'postgres',
// shared: true, locking: 'serializable' }): as with locking: 'keys'
// (postgres-keylocks.js), a process's critical sections run in a
// transaction of its own connection, whose batch commits it; but the
// transaction is SERIALIZABLE and locks nothing. PostgreSQL's serializable
// snapshot isolation watches what it read (predicate locks on the index
// pages and tuples the reads scanned, ranges included) and fails a
// statement or the COMMIT with 40001 (serialization_failure), or 40P01
// (deadlock), when committing it could make the processes' transactions
// disagree with every serial order. Then the write path rolls it back and
// runs the group's critical sections again (lib/writer.js): their callbacks
// have not answered yet, since a group answers once its COMMIT succeeds.
//
// For PostgreSQL to see the reads, the critical sections' reads must be made
// in the transaction: the write path runs each section in within(), and the
// backend sends a read made there (reading()) on the transaction's
// connection (postgres-level.js). Reads made elsewhere go to the pool.
import { AsyncLocalStorage } from 'node:async_hooks'
import { PostgresSectionLock, noop } from './postgres-section-lock.js'
import { inlineValues } from './postgres-literal.js'

const BEGIN = 'BEGIN ISOLATION LEVEL SERIALIZABLE'

// serialization_failure, deadlock_detected, and in_failed_sql_transaction
// (a statement sent after one of the first two aborted the transaction).
const RETRY_STATES = new Set(['40001', '40P01', '25P02'])

/**
 * The serializable transaction of a postgres database shared with
 * locking: 'serializable' (the section transaction, postgres-section-lock.js,
 * SERIALIZABLE). It offers the write path (lib/writer.js) what the key
 * locks do, so that the same path runs it: lock() and lockRanges() lock
 * nothing, busy() tells a serialization failure, and rerunsGroups asks it
 * to run a failed group's sections again.
 */
export class PostgresSerializable extends PostgresSectionLock {
  /** A group whose transaction failed runs its sections again (not only the running one). */
  rerunsGroups = true
  #sections = new AsyncLocalStorage()
  /** How many transactions took their snapshot (sent a statement after BEGIN). */
  #snapshots = 0

  /** Whether `err` (or what caused it) is a failure that a rerun in a new transaction can get past. @param {unknown} err */
  busy (err) {
    for (let e = /** @type {any} */ (err), depth = 0; e != null && depth < 5; e = e.cause, depth++) {
      // The transaction lost with its connection (nothing of it committed): as a serialization failure.
      if (e.transactionLost === true) return true
      const state = typeof e.sqlState === 'string' ? e.sqlState : e.code
      if (typeof state === 'string' && RETRY_STATES.has(state)) return true
      // Another error that a failure caused (a transaction's LEVELKIT_CONFLICT) is its own answer.
      if (typeof e.code === 'string' && e.code.startsWith('LEVELKIT_') && e.code !== 'LEVELKIT_BACKEND_UNAVAILABLE') return false
    }
    return false
  }

  /** A section is about to read keys: nothing to lock, PostgreSQL watches the read. @returns {null} */
  lock () {
    this.requests++
    return null
  }

  /** A section is about to read a range: the same. @returns {null} */
  lockRanges () {
    this.requests++
    return null
  }

  /**
   * Run a critical section: the reads it makes go to the transaction.
   * @template T @param {() => Promise<T> | T} fn @returns {Promise<T>}
   */
  within (fn) {
    return this.#sections.run(this, async () => fn())
  }

  /** Whether the current async context is a critical section's (its reads go to the transaction). */
  reading () {
    return this.#sections.getStore() === this
  }

  get opening () {
    return BEGIN
  }

  begin () {
    super.begin()
    // The transaction's snapshot is taken by its first statement, sent with
    // its BEGIN or right behind it (counted as it is made, before it is
    // sent: a section called meanwhile is taken as called after it).
    this.#snapshots++
  }

  /**
   * Send `statement` in the transaction; if none is open, BEGIN first, in
   * the same query (its values written into it as literals: one round trip).
   * @param {string | import('pg').QueryConfig} statement @param {unknown[]} [values]
   * @returns {Promise<import('pg').QueryResult<any>>}
   */
  query (statement, values) {
    if (this.holding) return super.query(statement, values)
    this.begin()
    const config = typeof statement === 'string' ? { text: statement, values } : values === undefined ? statement : null
    const text = config === null ? null : inlineValues(config.text, config.values)
    if (config === null || text === null) {
      // Its failure fails the statement sent behind it (no transaction: 25P02 is not what it gets, but the statement's own error is told).
      super.query(BEGIN).catch(noop)
      return super.query(statement, values)
    }
    const rowMode = /** @type {any} */ (config).rowMode
    // Two results, BEGIN's and the statement's.
    return super.query(rowMode === undefined ? `${BEGIN}; ${text}` : /** @type {import('pg').QueryConfig} */ ({ text: `${BEGIN}; ${text}`, rowMode })).then(results => /** @type {any} */ (results)[1])
  }

  /** Taken when a critical section is called, for snapshotTakenBefore(). @returns {number} */
  snapshotMark () {
    return this.#snapshots
  }

  /**
   * Whether the open transaction's snapshot may have been taken before
   * the section that took `mark` was called: it could miss what other
   * processes committed before the call (it is serializable, but not in
   * real-time order), so the section runs in a new transaction.
   * @param {number} mark
   */
  snapshotTakenBefore (mark) {
    return this.holding && mark === this.#snapshots
  }

  /** Nothing decided waits to be written: end the transaction. */
  idle () {
    const committed = this.commit()
    // A read-only transaction's COMMIT failing leaves nothing to redo: its sections answered.
    return committed === null ? Promise.resolve() : committed.catch(noop)
  }
}
