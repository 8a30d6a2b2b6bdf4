import { Transaction, conflict } from './transaction.js'
import { levelkitError, codes } from './errors.js'
import { BACKEND_LIMIT } from './query.js'
import { readyCount } from './index-state.js'
import { noop } from './common.js'

/**
 * One attempt of a `db.transaction(fn, { readOnly: true })` callback.
 *
 * Where the backend has explicit snapshots (classic-level, memory-level,
 * postgres: a REPEATABLE READ READ ONLY transaction), every read of the
 * attempt comes from one snapshot of the database, taken after the call
 * and after the writes this process decided before it are written: it sees
 * every write acknowledged before the call, here or in another process,
 * and nothing written after its snapshot. Such reads need no validation:
 * nothing they read can be changed under them, so the attempt neither
 * conflicts with writers nor waits for their locks, and cannot starve.
 * Reads bypass the read caches and the section cache (they are of the
 * latest values) and the write path's unwritten ops (written before the
 * snapshot is taken).
 *
 * One thing a snapshot can get wrong: an index (or a relation's or children
 * set's layout) that became ready after the snapshot was taken is not
 * complete in it. Such a read, or any read after any index became ready,
 * fails the attempt with LEVELKIT_CONFLICT, and the next attempt takes a
 * new snapshot (an index becomes ready once per build: it cannot repeat).
 *
 * Without explicit snapshots (browser-level), the attempt is an ordinary
 * transaction whose reads are validated (lib/transaction.js), so it may
 * conflict and run again. Either way, every write is refused with
 * LEVELKIT_READ_ONLY before it decides anything.
 */
export class ReadOnlyTransaction extends Transaction {
  /** @type {any} the backend's snapshot, once taken (null: none yet, or reads are validated) */
  #snapshot = null
  /** @type {Promise<void> | null} settles once the snapshot is taken */
  #taking = null
  /** readyCount() when the snapshot was taken */
  #ready = 0

  /**
   * @param {import('./writer.js').Writer} writer
   * @param {import('./transaction.js').TransactionLimits} limits
   * @param {any} root the database's level, whose snapshot the reads use
   */
  constructor (writer, limits, root) {
    super(writer, limits)
    if (root.supports?.explicitSnapshots !== true) return
    this.readsSnapshot = true
    // Its reads are never checked against the decisions of the write path:
    // it need not keep them.
    writer.end(this)
    // What this process decided before the call, written first: a snapshot
    // taken now would not see it, and its caller may have been answered.
    const decided = writer.decidedWritten()
    if (decided === null) this.#take(root)
    else this.#taking = decided.then(() => { if (this.open) this.#take(root) })
  }

  /** @param {any} root */
  #take (root) {
    this.#ready = readyCount()
    // Writes made after the call need not wait for the snapshot to be
    // taken (postgres): it may see them, as long as it sees what came before.
    this.#snapshot = root.snapshot({ mayIncludeLaterWrites: true })
    this.#taking = null
  }

  /**
   * The snapshot, or a promise of it; throws LEVELKIT_CONFLICT if an index
   * or layout became ready since it was taken (see the class comment).
   * @returns {any}
   */
  #reading () {
    this.assertOpen()
    if (this.#taking !== null) return this.#taking.then(() => this.#reading())
    if (readyCount() !== this.#ready) throw conflict('an index or layout it may read became ready after its snapshot was taken')
    return this.#snapshot
  }

  /**
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key
   * @returns {any}
   */
  get (namespace, key) {
    if (!this.readsSnapshot) return super.get(namespace, key)
    const snapshot = this.#reading()
    if (snapshot instanceof Promise) return snapshot.then(() => this.get(namespace, key))
    return namespace.read(key, this.writer.syncReads, { snapshot, keyEncoding: 'view', valueEncoding: namespace.valueEncoding })
  }

  /**
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key
   * @returns {any}
   */
  peek (namespace, key) {
    return this.readsSnapshot ? this.get(namespace, key) : super.peek(namespace, key)
  }

  /**
   * @param {import('./namespace.js').Namespace} namespace
   * @param {import('./write-scope.js').Bounds} bounds
   * @param {{ values?: boolean, reverse?: boolean, limit?: number, tries?: number }} [options]
   * @returns {Promise<Array<[Uint8Array, any]>>}
   */
  async entries (namespace, bounds, options = {}) {
    if (!this.readsSnapshot) return super.entries(namespace, bounds, options)
    const snapshot = await this.#reading()
    const limit = options.limit ?? Infinity
    const entries = await namespace.sublevel.iterator({
      ...bounds,
      values: options.values !== false,
      reverse: options.reverse === true,
      limit: limit > BACKEND_LIMIT ? -1 : limit,
      snapshot
    }).all()
    this.assertOpen()
    return entries
  }

  /**
   * Reads from a snapshot need no locks: nothing they read changes.
   * @param {import('./namespace.js').Namespace} namespace
   * @param {import('./write-scope.js').Bounds} bounds
   * @param {import('./transaction.js').LockMode | 'write'} mode
   * @returns {Promise<void> | null}
   */
  lock (namespace, bounds, mode) {
    if (!this.readsSnapshot) return super.lock(namespace, bounds, mode)
    this.assertOpen()
    return null
  }

  /**
   * Every write of a model (insert, update, add, ...) comes here first:
   * refused before it reads or reserves anything.
   * @template T
   * @param {(scope: import('./write-scope.js').WriteScope) => Promise<T> | T} fn
   * @returns {Promise<T>}
   */
  atomic (fn) {
    return Promise.reject(readOnly())
  }

  /** @param {import('./write-scope.js').Op} op */
  push (op) {
    throw readOnly()
  }

  /** @param {boolean} sync */
  async commit (sync) {
    if (!this.readsSnapshot) return super.commit(sync)
    let idle
    while ((idle = this.idle()) !== null) await idle
    this.assertOpen()
    this.close()
  }

  /** @param {unknown} [reason] */
  finish (reason) {
    super.finish(reason)
    const snapshot = this.#snapshot
    this.#snapshot = null
    if (snapshot !== null) snapshot.close().catch(noop)
  }
}

function readOnly () {
  return levelkitError(codes.READ_ONLY, 'This transaction is read-only (db.transaction(fn, { readOnly: true })): it cannot write, and wrote nothing')
}
