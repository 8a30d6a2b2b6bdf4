// What locking: 'keys' (postgres-keylocks.js) and locking: 'serializable'
// (postgres-serializable.js) share: a process's critical sections run in one
// transaction, the section transaction, on a connection of its own (the
// writer connection); their group's batch is written in it and commits it.
// This module owns that connection and the transaction's end (COMMIT,
// ROLLBACK, the connection lost); the modes differ in how the transaction
// begins, what a section does before it reads, and which failures run a
// section again (busy()).
import { createHash } from 'node:crypto'
import { PostgresWriterLock, InOrder } from './postgres-shared.js'
import { inlineValues } from './postgres-literal.js'
import { levelkitError, codes } from '../errors.js'
import { isConnectionError } from './postgres-hosts.js'
import { release } from './postgres-idle.js'
import { tracing, trace } from './postgres-trace.js'

/**
 * The section transaction of a postgres database shared with locking:
 * 'keys' or 'serializable'. Notifications, listening and catching up are
 * the writer lock's.
 */
export class PostgresSectionLock extends PostgresWriterLock {
  /** Read values are checked again at commit, in the section transaction (lib/transaction.js). */
  validatesByValue = true
  /** Tells the write path (lib/writer.js) to run sections in the transaction rather than take this as a table lock. */
  locksKeys = true
  #host
  /** @type {InOrder | null} the writer connection (maybe still connecting): its statements go one at a time, in order */
  #connection = null
  /** Whether a transaction is open (BEGIN sent). */
  #open = false
  /** Whether a statement of the open transaction (its BEGIN aside) was answered: sections may have decided on it. */
  #answered = false
  /** Whether a transaction on which sections may have decided was lost with its connection: the next batch is refused (see takeLost()). */
  #lost = false
  /** @type {Array<() => void>} */
  #endListeners = []
  /** stats.sections when the last transaction ended (tracing: sections per transaction) */
  #sectionsBefore = 0
  /** How many times a critical section runs again at most (lib/writer.js), the maxReruns option. */
  maxReruns = Infinity
  /** How many lock (or read) requests sections made (lib/writer.js tells whether a section made any). */
  requests = 0
  /**
   * Counters, for tests and the benchmark: failures counts COMMITs refused
   * by a failure busy() tells, failedOn the failures by where and kind;
   * with locking: 'keys', busyOn the busy keys found by namespace prefix;
   * firstStatementMs the time first statements took (they wait for locks;
   * with 'serializable', the opening's locks, BEGIN and first statement);
   * with locking: 'serializable', contended the transactions that began in
   * contention mode (postgres-serializable.js), sequenceLocked those that
   * locked the lock table of a sequence key their first statement reads,
   * contentionWaits those whose contention mode locks were held by another
   * process (they waited, which keeps a key in the mode but not the table's
   * turn; a wait for a lock table is not told),
   * contentionEntered and contentionLeft how many times a
   * sequence key (or the table's turn) entered and left the mode,
   * tableContended the transactions that began holding the table's turn
   * (after two failures in a row, postgres-serializable.js); sections the critical sections
   * run (lib/writer.js counts them: each run, reruns too).
   */
  stats = { sections: 0, statements: 0, retries: 0, transactions: 0, failures: 0, failedOn: /** @type {Record<string, number>} */ ({}), busyOn: /** @type {Record<string, number>} */ ({}), firstStatementMs: 0, contended: 0, sequenceLocked: 0, contentionWaits: 0, contentionEntered: 0, contentionLeft: 0, tableContended: 0 }

  /**
   * @param {import('./postgres-shared.js').SharedWriterHost} host
   * @param {string} table
   */
  constructor (host, table) {
    super(host, table)
    this.#host = host
  }

  /** Never kept while idle: there is no table lock to keep. */
  get leased () {
    return false
  }

  /** The table lock is never taken in these modes. */
  async acquire () {
    return () => {}
  }

  /**
   * The statement that begins a transaction of this mode, sent in one query
   * with the transaction's first statement; null when a statement alone
   * needs none (it commits by itself, as a batch of locking: 'keys' does
   * when its sections locked nothing).
   * @returns {string | null}
   */
  get opening () {
    return null
  }

  /** Whether `failure` asks for the critical section to run again (each mode tells its own). @param {unknown} failure @returns {boolean} */
  busy (failure) {
    return false
  }

  /**
   * Told the answers of a query that began a transaction with opening:
   * the mode's own statements come first (postgres-serializable.js reads
   * which locks it waited for).
   * @param {import('pg').QueryResult<any>[]} results
   */
  opened (results) {}

  /**
   * A statement to send right behind the end (COMMIT or ROLLBACK) of the
   * transaction that just ended, in the same query, once; null for none
   * (postgres-serializable.js lets the contention mode's locks go so).
   * @returns {string | null}
   */
  closing () {
    return null
  }

  /** @param {() => void} listener called each time the section transaction ends */
  onEnd (listener) {
    this.#endListeners.push(listener)
  }

  /** Whether a transaction is open. */
  get holding () {
    return this.#open
  }

  /** A transaction begins: its BEGIN is the next statement sent on the connection. */
  begin () {
    this.#open = true
    this.#answered = false
    this.stats.transactions++
  }

  /**
   * Whether the transaction the next batch was decided in was lost with
   * its connection (its locks, or its serializable snapshot, went with it),
   * once: that batch is refused (lostTransaction()), never written in
   * another transaction on a guess.
   */
  takeLost () {
    const lost = this.#lost
    this.#lost = false
    return lost
  }

  /**
   * Send `statement` on the connection the section transaction runs on
   * (and batches are written on), once the statements made before it are
   * answered: they reach it in the order they are made, one at a time.
   * @param {string | import('pg').QueryConfig} statement @param {unknown[]} [values]
   * @returns {Promise<import('pg').QueryResult<any>>}
   */
  query (statement, values) {
    this.stats.statements++
    const connection = this.#connect()
    const transaction = this.#open ? this.stats.transactions : 0
    if (tracing) trace('sent', transaction)
    const sent = connection.query(statement, values)
    return sent.then(result => {
      if (tracing) trace('answered', transaction)
      if (transaction === this.stats.transactions && !(typeof statement === 'string' && /^BEGIN\b[^;]*$/.test(statement))) this.#answered = true
      return result
    }, err => {
      if (tracing) trace('failed', transaction)
      if (this.busy(err)) this.#failed(err, 'statement', transaction)
      // A connection that failed, or never connected (then the error is its own).
      if (!isConnectionError(err) || !connection.connected) throw err
      if (this.#connection === connection) {
        this.#connection = null
        Promise.resolve(connection.client).then(client => client.end()).catch(noop)
      }
      // Outside a transaction: its caller tells what the failure means (a batch alone may have committed).
      if (transaction === 0) throw err
      // Of a transaction lost with this connection, failing after another
      // began on a new one (a statement queued behind the one that failed
      // is refused a moment later): lost too, and the new one is not touched.
      if (transaction !== this.stats.transactions) throw lostTransaction(err)
      if (this.#answered) this.#lost = true
      this.#ended()
      throw lostTransaction(err)
    })
  }

  /** @returns {InOrder & { connected?: boolean }} */
  #connect () {
    if (this.#connection !== null) return this.#connection
    /** @type {InOrder & { connected?: boolean }} */
    const connection = new InOrder(this.#host.connect('writer').then(client => {
      connection.connected = true
      client.on('error', () => {
        if (this.#connection === connection) {
          this.#connection = null
          if (this.#open && this.#answered) this.#lost = true
          this.#ended()
        }
      })
      // Closed meanwhile.
      if (this.#connection !== connection) client.end().catch(noop)
      return client
    }, err => {
      if (this.#connection === connection) this.#connection = null
      throw err
    }))
    this.#connection = connection
    return connection
  }

  /**
   * After a batch was written in the transaction: commit it (null if none
   * is open). It may be refused (40001 with locking: 'serializable').
   * @returns {Promise<void> | null}
   */
  commit () {
    if (!this.#open) return null
    const connection = this.#connection
    this.#ended()
    if (connection === null) return Promise.reject(new Error('The section transaction\'s connection was lost'))
    const closing = this.closing()
    const transaction = this.stats.transactions
    if (tracing) trace('commit', transaction)
    // (A COMMIT that fails skips what follows it in the query: then alone.)
    return connection.query(closing === null ? 'COMMIT' : `COMMIT; ${closing}`, undefined, closing ?? undefined).then(() => {
      if (tracing) trace('ended', transaction)
    }, err => {
      if (tracing) trace('failed', transaction)
      if (this.busy(err)) this.#failed(err, 'commit', transaction)
      throw err
    })
  }

  /**
   * A failure busy() tells ended transaction number `transaction`
   * (stats.transactions when its statement was sent; 0: a statement sent
   * outside one): told once per statement that failed so, for a
   * subclass's bookkeeping (postgres-serializable.js).
   * @param {number} transaction
   */
  failedTransaction (transaction) {}

  /**
   * Count a failure busy() tells, by where (a statement, or the batch and
   * COMMIT: those are the `failures`) and by what PostgreSQL says of it: a
   * row another transaction updated since the snapshot ("concurrent
   * update"), a read another one's write made stale ("read/write
   * dependencies"), a deadlock; for the benchmark.
   * @param {any} err @param {'statement' | 'commit'} where @param {number} transaction
   */
  #failed (err, where, transaction) {
    this.failedTransaction(transaction)
    if (where === 'commit') this.stats.failures++
    const message = String(err?.message ?? '')
    const kind = /concurrent update/.test(message) ? 'update' : /read\/write dependencies/.test(message) ? 'readWrite' : err?.code === '40P01' ? 'deadlock' : 'other'
    const name = `${where}:${kind}`
    this.stats.failedOn[name] = (this.stats.failedOn[name] ?? 0) + 1
  }

  /**
   * Write `statement` (a group's batch) in the transaction and commit it,
   * in one query: one round trip where the batch and its COMMIT took two.
   * With no transaction open, in one of its own (its BEGIN in the same
   * query), or alone where the mode needs none. The transaction has ended
   * once this returns: a failure that left it open (the batch's, which
   * skips the COMMIT behind it) is rolled back before the next statement.
   * Rejects with the server's error (nothing committed), or with
   * LEVELKIT_COMMIT_UNKNOWN when the connection failed once the query was
   * sent: the COMMIT may have been run.
   * Resolves with the statement's result (or, sent with others in one
   * query, the results of all of them).
   * @param {import('pg').QueryConfig} statement
   * @returns {Promise<any>}
   */
  writeAndCommit (statement) {
    const opening = this.#open ? null : this.opening
    const text = this.#open || opening !== null ? inlineValues(statement.text, statement.values) : null
    if (text === null) {
      // A batch alone, or one whose values cannot be written as literals: then its COMMIT.
      const connection = this.#connect()
      const sent = this.query(statement)
      // (With locking: 'serializable' the statement begins one when none is open.)
      const open = this.#open
      return sent.then(result => {
        const committed = this.commit()
        // The transaction ended before its COMMIT could be sent: lost with its connection.
        if (committed === null) {
          if (open) throw lostTransaction(new Error('the connection failed before COMMIT'))
          return result
        }
        return committed.then(() => result, err => {
          if (typeof err?.severity === 'string' || !isConnectionError(err)) throw err
          throw levelkitError(codes.COMMIT_UNKNOWN, `The connection to PostgreSQL failed after a batch's COMMIT was sent: it may or may not have committed (${err?.message})`, { cause: err })
        })
      }, async err => {
        await this.rollback()
        // Alone, it commits as it runs: once sent, a connection that failed before its answer leaves that unknown.
        if (!open && connection.connected && typeof err?.severity !== 'string' && isConnectionError(err)) {
          throw levelkitError(codes.COMMIT_UNKNOWN, `The connection to PostgreSQL failed after a batch was sent: it may or may not have committed (${err?.message})`, { cause: err })
        }
        throw err
      })
    }
    if (opening !== null) this.begin()
    const connection = this.#connect()
    let connected = false
    Promise.resolve(connection.client).then(() => { connected = true }, noop)
    this.stats.statements++
    this.#ended()
    const closing = this.closing()
    const tail = closing === null ? '' : `; ${closing}`
    const transaction = this.stats.transactions
    if (tracing) trace(opening === null ? 'batch' : 'open', transaction)
    // A failed statement skips the rest of the query: ROLLBACK (and what closes the transaction) next.
    return connection.query(`${opening === null ? '' : opening + '; '}${text}; COMMIT${tail}`, undefined, `ROLLBACK${tail}`).then(results => {
      if (tracing) trace('ended', transaction)
      if (opening !== null) this.opened(/** @type {any} */ (results))
      return results
    }, err => {
      if (tracing) trace('failed', transaction)
      if (this.busy(err)) this.#failed(err, 'commit', transaction)
      // An error the server answered with has a severity (pg's DatabaseError): nothing was committed.
      if (!connected || typeof err?.severity === 'string') throw err
      throw levelkitError(codes.COMMIT_UNKNOWN, `The connection to PostgreSQL failed after a batch and its COMMIT were sent: it may or may not have committed (${err?.message})`, { cause: err })
    })
  }

  /**
   * Send `statement` on the writer connection behind every statement made
   * so far, outside the transaction's bookkeeping (not counted, its failure
   * ignored): what follows a transaction's end. Nothing when the connection
   * is gone (a session's locks went with it).
   * @param {string} statement
   */
  after (statement) {
    this.#connection?.query(statement).catch(noop)
  }

  /** A statement of the transaction failed: roll it back (it is aborted anyway). */
  rollback () {
    if (!this.#open) return Promise.resolve()
    const connection = this.#connection
    this.#ended()
    if (connection === null) return Promise.resolve()
    const closing = this.closing()
    const transaction = this.stats.transactions
    if (tracing) trace('rollback', transaction)
    return connection.query(closing === null ? 'ROLLBACK' : `ROLLBACK; ${closing}`).then(() => {
      if (tracing) trace('ended', transaction)
    }, noop)
  }

  /** Nothing decided waits to be written: end the transaction. */
  idle () {
    // (No batch waits: none was decided in a transaction lost meanwhile.)
    this.#lost = false
    const committed = this.commit()
    // Its COMMIT failing (the connection lost) loses nothing: the
    // transaction holds locks and reads only, which go with it, and a
    // section running again (lib/writer.js, after a busy key) begins
    // another, on a new connection.
    return committed === null ? Promise.resolve() : committed.catch(noop)
  }

  close () {
    super.close()
    const connection = this.#connection
    this.#connection = null
    this.#ended()
    // Kept for a moment for the next database of this process
    // (postgres-idle.js: its transaction rolled back first), or ended.
    if (connection) Promise.resolve(connection.client).then(client => release(client, connection)).catch(noop)
  }

  #ended () {
    if (!this.#open) return
    this.#open = false
    if (tracing) {
      trace('sections', this.stats.transactions, this.stats.sections - this.#sectionsBefore)
      this.#sectionsBefore = this.stats.sections
    }
    for (const listener of this.#endListeners) listener()
  }
}

/**
 * The section transaction was lost with its connection (a failover, a
 * restart): nothing of it was committed (its COMMIT was not sent). Its
 * sections run again (busy()), in a new transaction.
 * @param {unknown} cause
 */
export function lostTransaction (cause) {
  return levelkitError(codes.BACKEND_UNAVAILABLE, `The connection of the section transaction failed before it committed, so nothing of it was written: ${/** @type {Error} */ (cause).message}`, { cause, committed: false, transactionLost: true })
}

/** Whether `err` is (or was caused by) the loss of a section transaction. @param {unknown} err */
export function isTransactionLost (err) {
  for (let e = /** @type {any} */ (err), depth = 0; e != null && depth < 5; e = e.cause, depth++) {
    if (e.transactionLost === true) return true
  }
  return false
}

/**
 * The advisory lock key (a decimal bigint) of `key` of the namespace with
 * `prefix` in table `table`.
 * @param {string} table @param {string} prefix @param {Uint8Array} key
 */
export function keyLockOf (table, prefix, key) {
  const hash = createHash('sha1')
  hash.update(table)
  hash.update('\0')
  hash.update(prefix)
  hash.update('\0')
  hash.update(key)
  return hash.digest().readBigInt64BE(0).toString()
}

export function noop () {}
