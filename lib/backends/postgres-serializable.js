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
//
// Contention mode: processes inserting into one collection all write its
// sequence key, so their transactions fail each other (40001) and run again,
// and again. After a batch fails so, each transaction of this process first
// waits for a session advisory lock on each sequence key that batch wrote,
// then begins (one query: `<lock>; COMMIT; BEGIN ISOLATION LEVEL
// SERIALIZABLE; <first statement>`: its snapshot is taken once the lock is
// held), and lets the locks go in the query of its COMMIT (`...; COMMIT;
// <unlock>`, and after a ROLLBACK the same: the hold ends when the
// transaction does, with no round trip of its own). Processes in contention
// mode then take turns on those keys instead of failing each other. The
// mode lasts while it is needed: the lock statement tries each lock before
// it waits for it and tells which ones it waited for (another process held
// them); each such wait, as each failure, keeps the key in the mode for
// contentionMs more, and a key left alone that long leaves it. (Leaving it
// after a fixed time made each process pay a failure to enter it again,
// about once per contentionMs, while the contention went on.) The locks
// only make failures rarer: serializable transactions keep every guarantee
// whether they are taken or not (a process not in contention mode, or a
// lock let go early, costs failures, not correctness).
//
// The table's turn: PostgreSQL's predicate locks cover the index pages a
// transaction read (a B-tree leaf holds the keys of many chats), so
// processes writing disjoint keys fail each other's transactions all the
// same where one inserts into a page the other read (a new key, an update
// that is not HOT). The lock tables kept such processes apart (sixteen
// keys hash to most of the 64), until contention mode replaced them with
// their keys' advisory locks, which no other process takes: four processes
// appending to chats of their own then failed about half of their
// transactions, each failure putting more keys in the mode, and sections
// gave up after maxReruns (session 27, bench/RESULTS.md). So the second
// transaction in a row to fail (no batch committed between), whatever keys it
// wrote, puts the table's turn (tableLock, a lock key no key has) in
// contention mode: the process's transactions take that lock first, then
// their keys' as before, and processes that keep failing each other take
// turns on the whole table. Failures keep it, waits do not (processes in
// the turn fail none of each other's transactions), so a process leaves it
// contentionMs after its last failure, and pays two failures to enter it
// again if the failures go on.
//
// A failure to enter the mode is paid by each process, again after each
// quiet second, and it fails a whole group (a createChat group of 16 runs
// 16 sections again). Most of them need none: a transaction whose first
// statement reads a sequence key (an insert's first read is its sequence's;
// createChat's first statement reads the chats' sequence with its members)
// first locks, in its own first statement, one of the table's lock tables
// (LOCK_TABLES small empty tables made with it, `<table>_lock_<i>`, the key
// hashed to one of them): `BEGIN ISOLATION LEVEL SERIALIZABLE; LOCK TABLE
// <table>_lock_<i> IN SHARE ROW EXCLUSIVE MODE; <first statement>`, one
// query, whether the key is in contention mode or not. LOCK TABLE takes no
// snapshot (PostgreSQL takes it at the first statement that needs one, the
// read behind it), so the snapshot is taken once the lock is held, and two
// processes inserting into one collection take turns from their first
// transaction on. The lock is the transaction's: it goes with its COMMIT or
// ROLLBACK, or with the connection, at no statement of its own; nothing runs
// outside the transaction, so no COMMIT without one (and no WARNING in the
// server's log). SHARE ROW EXCLUSIVE is the weakest mode that conflicts with
// itself (PostgreSQL calls it self-exclusive); it lets plain reads of the
// lock table through, which nothing makes anyway. Keys hashed to the same
// lock table take turns too: a wait, never a failure or a wrong answer.
// Contention mode stays for what this misses: a group that reads the
// sequence only after its first statement (its snapshot is taken by then).
// It keeps the session advisory locks: its lock statement must tell which
// locks it waited for (a wait keeps the key in the mode), and a LOCK TABLE
// cannot try first and then wait in one query (NOWAIT's failure aborts the
// transaction and skips the rest of the query). A wait for a lock table is
// not counted (nothing tells it) and does not enter the mode either: the
// mode locks the key for every transaction of the process, those that
// never touch it too, so only a failure enters it, as before.
import { levelkitError, codes } from '../errors.js'
import { isConnectionError } from './postgres-hosts.js'
import { LOCK_TABLES, lockTableName } from './postgres-names.js'
import { PostgresSectionLock, keyLockOf, noop } from './postgres-section-lock.js'
import { inlineValues } from './postgres-literal.js'
import { runInSection, currentSection, sectionFrame, readingNow } from '#context'
import { tracing, trace } from './postgres-trace.js'

const BEGIN = 'BEGIN ISOLATION LEVEL SERIALIZABLE'

// The lock tables' names (postgres-names.js: also what levelkit exports, postgresTables()).
export { LOCK_TABLES, lockTableName } from './postgres-names.js'

/**
 * Which lock table the lock key `lock` (a decimal bigint, keyLockOf()) is
 * hashed to.
 * @param {string} lock
 */
function lockTableOf (lock) {
  return Number(BigInt.asUintN(64, BigInt(lock)) % BigInt(LOCK_TABLES))
}

// serialization_failure, deadlock_detected, and in_failed_sql_transaction
// (a statement sent after one of the first two aborted the transaction).
const RETRY_STATES = new Set(['40001', '40P01', '25P02'])

/**
 * The statement that takes the session advisory locks `locks` (sorted), in
 * order, and answers with the ones it had to wait for (`waited`: another
 * session held them), or null: each is tried first, and waited for only if
 * busy (CASE evaluates one branch; MATERIALIZED keeps each row's calls to
 * one evaluation).
 * @param {string[]} locks
 */
function lockStatement (locks) {
  // One key (a transaction's one sequence, the usual case): the same, with
  // none of the CTE's planning, which cost ~0.6 ms a transaction (measured
  // against a plain BEGIN/COMMIT: +0.76 ms with it, +0.18 ms without).
  if (locks.length === 1) {
    const k = `'${locks[0]}'::bigint`
    return `SELECT CASE WHEN pg_try_advisory_lock(${k}) THEN NULL ELSE (SELECT ARRAY['${locks[0]}'] FROM pg_advisory_lock(${k})) END AS waited`
  }
  return `WITH l AS MATERIALIZED (SELECT k, CASE WHEN pg_try_advisory_lock(k) THEN false ELSE (SELECT true FROM pg_advisory_lock(k)) END AS waited FROM unnest('{${locks.join(',')}}'::bigint[]) WITH ORDINALITY AS u(k, i) ORDER BY i) SELECT array_agg(k::text) FILTER (WHERE waited) AS waited FROM l`
}

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
  /** How many transactions took their snapshot (sent a statement after BEGIN). */
  #snapshots = 0
  /** How long (ms) after a batch failed on a sequence key, or a transaction waited for its lock, the process keeps taking that key's lock before it begins a transaction. */
  contentionMs = 1000
  /** @type {Map<string, number>} the lock keys (decimal bigints) of contention mode, each with when it ends (Date.now()), unless a failure or a wait extends it */
  #hot = new Map()
  /** @type {string[]} the lock keys of the sequence keys the batch about to be written writes (stage()) */
  #staged = []
  /** @type {string[]} the lock keys the open transaction took before it began (let go behind its end) */
  #held = []
  /** @type {string[]} the advisory lock keys the last opening took (begin() holds them) */
  #opened = []
  /** Whether a transaction whose first statement reads a sequence key locks the key's lock table first (see above); tests of contention mode turn it off. */
  lockFirstSequences = true
  /**
   * The lock key of the table's turn (keyLockOf() of no namespace and no
   * key, which is no key's): contention mode's lock for every transaction
   * of the table, taken after two transactions in a row failed (see above).
   */
  get tableLock () {
    return (this.#tableLock ??= keyLockOf(this.name, '', new Uint8Array(0)))
  }

  /** @type {string | undefined} */
  #tableLock
  /** Whether two failed transactions in a row put the table's turn in contention mode (see above); tests of the keys' contention mode turn it off. */
  tableTurn = true
  /** How many transactions in a row failed (a committed batch resets it), and the number of the last (failedTransaction() is told once per failed statement). */
  #failuresInRow = 0
  #lastFailed = 0
  /** The opening computed and not yet sent (begin() clears it): asked for twice, the same. @type {string | null} */
  #opening = null
  /** @type {Set<string>} the lock keys of the sequence keys sections asked to read while no transaction was open: the next opening takes them */
  #firstReads = new Set()
  /**
   * The keys the sections called by now will read, and what to do with
   * their values (lib/writer.js Writer#hintedReads(), set by the write
   * path): read by the statement that opens a transaction
   * (postgres-level.js).
   * @type {((limit: number) => { keys: Buffer[], found: (values: Map<string, Buffer>) => void } | null) | null}
   */
  hintedReads = null
  /** Whether the last opening was in contention mode (hot keys), and whether it took first reads' locks (begin() counts them). */
  #openedHot = false
  #openedFirst = false

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

  /**
   * A section is about to read keys: nothing to lock, PostgreSQL watches
   * the read; but sequence keys read before the transaction begins (its
   * first statement) are locked by its opening (see above).
   * @param {string} prefix @param {Uint8Array[]} keys @param {boolean} [shared] @param {boolean} [sequence]
   * @returns {null}
   */
  lock (prefix, keys, shared = false, sequence = false) {
    this.requests++
    if (sequence && this.lockFirstSequences && !this.holding) {
      for (const key of keys) this.#firstReads.add(keyLockOf(this.name, prefix, key))
    }
    return null
  }

  /** A section is about to read a range: the same. @returns {null} */
  lockRanges () {
    this.requests++
    return null
  }

  /**
   * Verification (tests, LEVELKIT_VERIFY_SECTION_READS=1): untracked
   * sections get a frame all the same, marked as theirs, and a read their
   * frame would send to the transaction that their write scope did not
   * start as the section's (readingAs()) fails with LEVELKIT_UNTRACKED_READ
   * and is kept in `untrackedReads` (its stack): a read that would have gone
   * to the pool unwatched by PostgreSQL.
   */
  verifyReads = process.env.LEVELKIT_VERIFY_SECTION_READS === '1'
  /** @type {string[]} */
  untrackedReads = []

  /**
   * Run a critical section: the reads it makes go to the transaction. An
   * untracked one (`untracked`: a section whose every read its write scope
   * starts as the section's, lib/write-scope.js readsAs) runs as it is: no
   * frame, so no AsyncLocalStorage enabled for it.
   * @template T @param {() => Promise<T> | T} fn @param {boolean} [untracked]
   * @returns {Promise<T> | T}
   */
  within (fn, untracked = false) {
    if (untracked) return this.verifyReads ? runInSection({ untrackedOf: this }, fn) : fn()
    // The write path's AsyncLocalStorage (lib/context-node.js), not one of
    // its own: each one enabled makes every promise pay its hook again.
    return runInSection(this, fn)
  }

  /** Whether the current async context is a critical section's (its reads go to the transaction), or a read being started as one's (readingAs()). */
  reading () {
    if (this.verifyReads) {
      const frame = sectionFrame()
      if (frame?.untrackedOf === this && readingNow() !== this) {
        const err = levelkitError(codes.UNTRACKED_READ, 'A read of an untracked serializable section was not started as the section\'s: it would go to the pool, unwatched')
        this.untrackedReads.push(String(err.stack))
        throw err
      }
    }
    return currentSection() === this
  }

  /**
   * BEGIN, after the contention mode's advisory locks, then the lock tables
   * of the sequence keys the first statement reads (see above), if any.
   */
  get opening () {
    // (Asked for again before begin(), by a batch whose values cannot be written as literals: the same one.)
    if (this.#opening !== null) return this.#opening
    const hot = this.#contended()
    const first = this.#firstReads
    this.#openedHot = hot.length > 0
    this.#openedFirst = first.size > 0
    this.#opened = hot
    let opening = hot.length === 0 ? BEGIN : `${lockStatement(hot)}; COMMIT; ${BEGIN}`
    if (first.size > 0) {
      this.#firstReads = new Set()
      // (A key whose contention lock this opening takes is held by then.)
      const tables = new Set()
      for (const lock of first) if (!hot.includes(lock)) tables.add(lockTableOf(lock))
      // In one order: no two openings wait for each other.
      const names = [...tables].sort((x, y) => x - y).map(i => `"${lockTableName(this.name, i)}"`)
      if (names.length > 0) opening += `; LOCK TABLE ${names.join(', ')} IN SHARE ROW EXCLUSIVE MODE`
    }
    this.#opening = opening
    return opening
  }

  /**
   * The answers of a transaction's opening query (its first result is the
   * lock statement's, when the opening took contention mode's advisory
   * locks): each key whose lock
   * was waited for stays in contention mode for contentionMs from now.
   * @param {import('pg').QueryResult<any>[]} results
   */
  opened (results) {
    const row = results[0]?.rows?.[0]
    if (row === undefined || !('waited' in row)) return
    const waited = /** @type {string[] | null} */ (row.waited)
    if (waited === null || waited.length === 0) return
    this.stats.contentionWaits++
    // (The table's turn is kept by failures only: a process that waits for it fails nobody.)
    this.#contend(waited.filter(lock => lock !== this.tableLock))
  }

  /**
   * The lock keys of contention mode now: the table's turn first when it
   * is in the mode, then the keys, sorted (one order in every process: no
   * two transactions wait for each other). A process in the table's turn
   * takes its keys' locks too, which a process contending on a key
   * without the turn takes alone.
   */
  #contended () {
    if (this.#hot.size === 0) return []
    const now = Date.now()
    for (const [lock, until] of this.#hot) {
      if (until > now) continue
      this.#hot.delete(lock)
      this.stats.contentionLeft++
    }
    const table = this.tableLock
    const keys = [...this.#hot.keys()].filter(lock => lock !== table).sort()
    return this.#hot.has(table) ? [table, ...keys] : keys
  }

  /**
   * Transaction `transaction` failed (40001, 40P01): the second in a row
   * (no batch committed between: a COMMIT of a transaction that only read,
   * or of one a failure aborted, which PostgreSQL answers with a ROLLBACK,
   * does not count) puts the table's turn in contention mode, and any
   * failure while it is there keeps it (told once per transaction: the
   * statements queued behind a failed one fail too).
   * @param {number} transaction
   */
  failedTransaction (transaction) {
    if (transaction === 0 || transaction === this.#lastFailed) return
    this.#lastFailed = transaction
    this.#failuresInRow++
    if (!this.tableTurn || this.contentionMs <= 0) return
    if (this.#failuresInRow >= 2 || this.#hot.has(this.tableLock)) this.#contend([this.tableLock])
  }

  begin () {
    this.#opening = null
    if (this.#opened[0] === this.tableLock) this.stats.tableContended++
    // What the opening sent with it takes (opening is asked for first).
    this.#held = this.#opened
    this.#opened = []
    if (this.#openedHot) this.stats.contended++
    if (this.#openedFirst) this.stats.sequenceLocked++
    this.#openedHot = this.#openedFirst = false
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
    const opening = this.opening
    this.begin()
    const config = typeof statement === 'string' ? { text: statement, values } : values === undefined ? statement : null
    const text = config === null ? null : inlineValues(config.text, config.values)
    // Whether the opening takes contention mode's locks before its BEGIN (see openingFailed()).
    const locksFirst = this.#held.length > 0
    if (config === null || text === null) {
      // The statement once the opening is answered: sent behind a failed one, it would run outside any transaction.
      return super.query(opening).then(results => {
        this.opened(/** @type {any} */ (results))
        return super.query(statement, values)
      }, err => { throw this.#openingFailed(err, locksFirst) })
    }
    const rowMode = /** @type {any} */ (config).rowMode
    if (tracing) trace('open', this.stats.transactions)
    const sent = performance.now()
    // The results of the opening's statements, then the statement's.
    return super.query(rowMode === undefined ? `${opening}; ${text}` : /** @type {import('pg').QueryConfig} */ ({ text: `${opening}; ${text}`, rowMode })).then(results => {
      // How long the first statement took: its round trip, behind the statements queued before it, and any wait for its locks.
      this.stats.firstStatementMs += performance.now() - sent
      this.opened(/** @type {any} */ (results))
      return /** @type {any} */ (results).at(-1)
    }, err => { throw this.#openingFailed(err, locksFirst) })
  }

  /**
   * What a failed opening rejects with. One that takes contention mode's
   * locks before its BEGIN (`<lock>; COMMIT; BEGIN ...`) and fails there
   * (a statement_timeout or lock_timeout while it waits, a cancel) skips
   * the rest of its query: no transaction began, and a statement sent in
   * it next would run and commit outside any, unchecked. So any failure of
   * such an opening, but a serialization failure or a lost connection
   * (which end the transaction already), ends it as lost: the write path
   * rolls back (which lets the locks taken go) and runs its sections again.
   * @param {unknown} err @param {boolean} locksFirst
   */
  #openingFailed (err, locksFirst) {
    if (!locksFirst || this.busy(err) || isConnectionError(err)) return err
    return levelkitError(codes.BACKEND_UNAVAILABLE, `The statement taking contention mode's locks before the section transaction's BEGIN failed, so no transaction began and nothing of it was written: ${/** @type {Error} */ (err)?.message}`, { cause: err, committed: false, transactionLost: true })
  }

  /**
   * The statement that lets the contention mode's locks of the transaction
   * ending now go, once: sent in the query of its COMMIT or ROLLBACK, after
   * it (postgres-section-lock.js), so that the next transaction to take a
   * lock gets it as this one's end is done, not a round trip later. Null
   * when it took none.
   * @returns {string | null}
   */
  closing () {
    const held = this.#held
    if (held.length === 0 || this.holding) return null
    this.#held = []
    // (Session locks are counted: a transaction begun meanwhile that took
    // one again keeps its own.)
    return held.length === 1 ? `SELECT pg_advisory_unlock('${held[0]}'::bigint)` : `SELECT count(pg_advisory_unlock(k)) FROM unnest('{${held.join(',')}}'::bigint[]) AS k`
  }

  /**
   * What the next batch tells the other processes, and the sequence keys
   * it writes: the keys of contention mode if it fails.
   * @param {import('../cross-tab.js').RemoteMessage} message @param {Array<{ prefix: string, key: Uint8Array }>} [counters]
   */
  stage (message, counters = []) {
    super.stage(message)
    this.#staged = counters.map(({ prefix, key }) => keyLockOf(this.name, prefix, key))
  }

  /** @param {import('pg').QueryConfig} statement @returns {Promise<void>} */
  writeAndCommit (statement) {
    const staged = this.#staged
    this.#staged = []
    const written = super.writeAndCommit(statement)
    // Written with its COMMIT (else commit() lets the locks go).
    if (!this.holding) this.#letGo()
    return written.then(result => {
      this.#failuresInRow = 0
      return result
    }, err => {
      if (this.busy(err)) this.#contend(staged)
      throw err
    })
  }

  commit () {
    const committed = super.commit()
    this.#letGo()
    return committed
  }

  rollback () {
    const rolledBack = super.rollback()
    this.#letGo()
    return rolledBack
  }

  /** A batch writing sequence keys `locks` failed, or a transaction waited for their locks: contention mode on them, for contentionMs from now. @param {string[]} locks */
  #contend (locks) {
    const until = Date.now() + this.contentionMs
    for (const lock of locks) {
      if (!this.#hot.has(lock)) this.stats.contentionEntered++
      this.#hot.set(lock, until)
    }
  }

  /** The transaction ended without closing() sent with its end: let the locks it took go, behind it. */
  #letGo () {
    const closing = this.closing()
    if (closing !== null) this.after(closing)
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
