import { levelkitError, codes } from './errors.js'
import { Transaction } from './transaction.js'

/**
 * The one write path of a levelkit database.
 *
 * Every model operation runs as a critical section: it reads what it needs
 * (old record, unique entries, counters), decides, and produces a list of
 * ops. Critical sections run one at a time (FIFO), so two writes can never
 * interleave between "read old value" and "write new value": that is what keeps
 * indexes free of stale entries and sequences free of duplicates.
 *
 * The batch itself is written outside the critical section. Ops of critical
 * sections that finish while a batch is in flight are grouped into the next
 * batch (group commit), and an overlay of not-yet-written ops lets the
 * next critical section read what earlier ones decided. Batches are written one
 * at a time, in order, so LevelDB can never apply two writes to the same key
 * out of order. A critical section that only reads with getSync() never waits
 * for the disk.
 */
export class Writer {
  /** @type {import('abstract-level').AbstractLevel<any, any, any>} */
  #root
  /** @type {Promise<void>} */
  #tail = Promise.resolve()
  /** @type {Group | null} */
  #group = null
  /** @type {Promise<void> | null} */
  #flushing = null
  #epoch = 0
  closed = false
  /** @type {unknown} the error of the last failed batch */
  lastError = undefined

  /**
   * Ops decided but not yet written, by namespace-qualified key.
   * @type {Map<string, import('./transaction.js').Op>}
   */
  overlay = new Map()

  /** @param {import('abstract-level').AbstractLevel<any, any, any>} root @param {boolean} syncReads */
  constructor (root, syncReads) {
    this.#root = root
    this.syncReads = syncReads
  }

  get epoch () {
    return this.#epoch
  }

  /**
   * Run `fn` as one critical section and resolve with its result once its ops
   * are written. If `fn` throws, nothing it decided is written.
   *
   * @template T
   * @param {(tx: Transaction) => Promise<T> | T} fn
   * @returns {Promise<T>}
   */
  async run (fn) {
    if (this.closed) throw levelkitError(codes.NOT_OPEN, 'The database is closed')
    const release = await this.#acquire()
    let written
    let result
    const tx = new Transaction(this)
    try {
      result = await fn(tx)
      written = this.#commit(tx)
    } finally {
      tx.close()
      release()
    }
    if (written) await written
    return result
  }

  /** Resolves when every op decided so far is written. */
  async drain () {
    while (this.#flushing) await this.#flushing
  }

  /** Refuse new writes, then wait for every queued critical section and batch. */
  async close () {
    this.closed = true
    await this.idle()
  }

  /** Wait for every queued critical section and batch. */
  async idle () {
    const release = await this.#acquire()
    release()
    await this.drain()
  }

  /** @returns {Promise<() => void>} */
  #acquire () {
    const previous = this.#tail
    /** @type {() => void} */
    let release = noop
    this.#tail = new Promise(resolve => { release = resolve })
    return previous.then(() => release)
  }

  /** @param {Transaction} tx @returns {Promise<void> | null} */
  #commit (tx) {
    if (tx.epoch !== this.#epoch) {
      // An earlier batch failed after this critical section read its ops from
      // the overlay: what it decided rests on writes that never happened.
      throw levelkitError(codes.ABORTED, 'Write aborted because an earlier write failed', { cause: this.lastError })
    }
    if (tx.ops.length === 0) return null
    const group = this.#group || (this.#group = new Group())
    for (const op of tx.ops) {
      this.overlay.set(op.id, op)
      group.ops.push(op)
    }
    if (!this.#flushing) this.#flushing = this.#flush()
    return group.promise
  }

  async #flush () {
    try {
      while (this.#group) {
        const group = this.#group
        this.#group = null
        try {
          // An array batch, not a chained one: with a `sublevel` on every op,
          // abstract-level's chained batch costs about twice as much per op
          // (bench/RESULTS.md).
          const ops = new Array(group.ops.length)
          for (let i = 0; i < ops.length; i++) {
            const op = group.ops[i]
            ops[i] = op.type === 'put'
              ? { type: 'put', key: op.key, value: op.value, sublevel: op.sublevel }
              : { type: 'del', key: op.key, sublevel: op.sublevel }
          }
          await this.#root.batch(ops)
          for (const op of group.ops) {
            if (this.overlay.get(op.id) === op) this.overlay.delete(op.id)
          }
          group.resolve()
        } catch (err) {
          this.#fail(group, err)
        }
      }
    } finally {
      this.#flushing = null
    }
  }

  /** @param {Group} group @param {unknown} err */
  #fail (group, err) {
    this.lastError = err
    this.#epoch++
    group.reject(err)
    // Groups queued behind the failed one were decided on top of it.
    if (this.#group) {
      this.#group.reject(levelkitError(codes.ABORTED, 'Write aborted because an earlier write failed', { cause: err }))
      this.#group = null
    }
    this.overlay.clear()
  }
}

class Group {
  constructor () {
    /** @type {import('./transaction.js').Op[]} */
    this.ops = []
    /** @type {(value?: any) => void} */
    this.resolve = noop
    /** @type {(reason?: any) => void} */
    this.reject = noop
    /** @type {Promise<void>} */
    this.promise = new Promise((resolve, reject) => {
      this.resolve = resolve
      this.reject = reject
    })
  }
}

function noop () {}
