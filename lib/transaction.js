import { WriteScope } from './write-scope.js'
import { levelkitError, codes, invalid } from './errors.js'
import { concatBytes, compareBytes } from './bytes.js'
import { within } from './bounds.js'
import { BACKEND_LIMIT } from './query.js'
import { parseInteger } from './stored.js'
import { isPlaceholder } from './deferred-ids.js'

/**
 * @typedef {import('./write-scope.js').Bounds} Bounds
 * @typedef {'shared' | 'soft' | 'hard'} LockMode
 * @typedef {{ lockTimeout: number, maxOps: number, maxBytes: number }} TransactionLimits
 */

// How many times one read may move the attempt's snapshot forward before
// it gives up (a key written again and again while it is read).
const EXTENSIONS = 3

export const LOCK_MODES = Object.freeze(['shared', 'soft', 'hard'])

// Transactions (and lock owners) in the order they began: the larger, the
// younger (the deadlock victim).
let began = 0

/** The age of a lock owner that begins now. */
export function nextAge () {
  return ++began
}

/** How long a lock wait lasts by default (RocksDB's default too). */
export const DEFAULT_LOCK_TIMEOUT = 1000

/**
 * One attempt of a db.transaction() callback: a write scope whose reads are
 * checked, and whose ops are committed through the write path only if
 * nothing it read changed since it began.
 *
 * Reads see the database as of the decision count the attempt began at
 * (`at`), plus its own writes. No backend snapshot is needed for that: each
 * read is checked against the keys decided since (Writer.changedSince()).
 * A read whose key changed is made again as of now when nothing read before
 * changed (`at` moves forward), else it fails the attempt at once with
 * LEVELKIT_CONFLICT, so the callback never acts on a mix of old and new
 * values (as in TL2-style software transactional memory, with LSA's
 * snapshot extension). The commit checks every read again, in the critical
 * section that writes its batch: that is what makes committed transactions
 * serializable in commit order.
 *
 * Locks (lib/lock-manager.js) are for hot keys, where such retries would
 * repeat: a locked read makes other transactions wait instead of fail.
 */
export class Transaction extends WriteScope {
  /** @type {Set<string>} ids of the keys read from the database */
  #read = new Set()
  /** @type {Array<{ namespace: import('./namespace.js').Namespace, bounds: Bounds }>} ranges read */
  #ranges = []
  #bytes = 0
  /** @type {unknown} why the attempt ended early (expired, aborted), if it did */
  #ended = null
  /** Set once its ops are handed to the write path: from then on, nothing stops the commit. */
  committing = false
  /**
   * Where other tabs write the same database (IndexedDB), what each read
   * returned, for the commit to compare with what is stored then: the
   * decisions this tab counts do not include theirs.
   * @type {Map<string, { namespace: import('./namespace.js').Namespace, key: Uint8Array, value: any }> | null}
   */
  #seen = null
  /** @type {Array<{ namespace: import('./namespace.js').Namespace, options: any, entries: Array<[Uint8Array, any]> }>} ranges read, with what they held */
  #seenRanges = []
  /**
   * Settles once the writes decided when a read of the attempt was
   * answered from the write path's unwritten ops are written (null: none was).
   * @type {Promise<void> | null}
   */
  #readUnwritten = null

  /**
   * @param {import('./writer.js').Writer} writer
   * @param {TransactionLimits} limits
   */
  constructor (writer, limits) {
    super(writer)
    this.limits = limits
    this.lockOptions = { timeout: limits.lockTimeout }
    if (writer.validatesByValue) this.#seen = new Map()
    this.age = nextAge()
    this.at = writer.begin(this)
  }

  /**
   * End the attempt: no more reads or writes, locks released. `reason`, if
   * given, is what its pending lock waits and later calls reject with.
   * @param {unknown} [reason]
   */
  finish (reason) {
    if (reason !== undefined && this.#ended === null) this.#ended = reason
    this.close()
    this.writer.locks.release(this, reason)
    this.writer.end(this)
  }

  assertOpen () {
    if (!this.open) throw this.#ended ?? invalid('This transaction has ended: use it only inside its db.transaction() callback, before that callback returns')
  }

  /**
   * @param {import('./namespace.js').Namespace} namespace
   * @param {Uint8Array} key
   * @returns {any} the value, or a promise of it
   */
  get (namespace, key) {
    this.assertOpen()
    const id = namespace.keyId(key)
    if (this.ops.length > 0) {
      this.index()
      const own = this.local.get(id)
      if (own !== undefined) return own.type === 'put' ? own.value : undefined
    }
    const locks = this.writer.locks
    if (locks.active) {
      const wait = locks.acquire(this, namespace.prefix, pointBounds(key), 'read', this.lockOptions)
      if (wait !== null) return wait.then(() => this.get(namespace, key))
    }
    return this.#readKey(namespace, key, id, 0)
  }

  /**
   * Read a key as of `at`: if it changed since, move `at` forward (when
   * nothing read before changed) and read it again.
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key @param {string} id @param {number} tries
   * @returns {any}
   */
  #readKey (namespace, key, id, tries) {
    const at = this.at
    const value = this.#current(namespace, key, id)
    if (value instanceof Promise) return value.then(v => this.#settle(namespace, key, id, v, at, tries))
    return this.#settle(namespace, key, id, value, at, tries)
  }

  /**
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key @param {string} id
   * @param {any} value @param {number} at the `at` the read was made as of
   * @param {number} tries
   * @returns {any}
   */
  #settle (namespace, key, id, value, at, tries) {
    this.assertOpen()
    // `at` moved forward while the read was on its way (another read of
    // the attempt, running beside it, moved it: #extend()): the value may
    // be older than a decision now counted as seen, so it is read again
    // as of now. Checking it against the older `at` would not do: the
    // writer forgets the changes before the oldest `at` of its running
    // transactions, and this one's is already the newer one.
    if (at !== this.at) return this.#readKey(namespace, key, id, tries)
    if (!this.writer.changedSince(id, at)) {
      this.#read.add(id)
      if (this.#seen !== null && !this.#seen.has(id)) this.#seen.set(id, { namespace, key, value })
      return value
    }
    if (tries >= EXTENSIONS) throw conflict('a key it read kept changing while it read it')
    this.#extend()
    return this.#readKey(namespace, key, id, tries + 1)
  }

  /**
   * Read as of now instead of as of `at`, if everything read so far is
   * unchanged since `at` (then it holds now too): a read of a key that
   * changed after the attempt began, but before it read the key (a locked
   * read that waited for the previous holder's commit, most of all), need
   * not fail the attempt. Throws LEVELKIT_CONFLICT if something read changed.
   */
  #extend () {
    this.#validate()
    this.at = this.writer.extend(this)
  }

  /**
   * The latest decided value of a key: the write path's unwritten ops
   * (one holding a placeholder id once written), else the sequence cache,
   * else what is stored.
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key @param {string} id
   * @returns {any}
   */
  #current (namespace, key, id) {
    const writer = this.writer
    if (writer.pending) {
      const op = writer.lookup(id)
      if (op !== undefined) {
        // A value holding a deferred insert's placeholder id (lib/deferred-ids.js):
        // its real value is known once its batch is written, so read it then.
        if (op.deferred === true) return (writer.decidedWritten() ?? Promise.resolve()).then(() => /** @type {any} */ (this.#current(namespace, key, id)))
        this.#readUnwritten = writer.decidedWritten() ?? this.#readUnwritten
        return op.type === 'put' ? op.value : undefined
      }
    }
    return namespace.read(key, writer.syncReads)
  }

  /**
   * The current entries of `namespace` within `bounds`, the attempt's own
   * writes included, as of when it began: in key order (or reverse), at
   * most `limit`. What the commit checks is the part of the range the read
   * covered: up to the last entry it returned, when the limit cut it short.
   * @param {import('./namespace.js').Namespace} namespace
   * @param {Bounds} bounds
   * @param {{ values?: boolean, reverse?: boolean, limit?: number, tries?: number }} [options]
   * @returns {Promise<Array<[Uint8Array, any]>>}
   */
  async entries (namespace, bounds, options = {}) {
    this.assertOpen()
    const locks = this.writer.locks
    if (locks.active) {
      const wait = locks.acquire(this, namespace.prefix, bounds, 'read', this.lockOptions)
      if (wait !== null) await wait
    }
    const at = this.at
    // Ranges are read from the backend: what was decided before is written first.
    await this.writer.drain()
    this.assertOpen()
    const values = options.values !== false
    const reverse = options.reverse === true
    const limit = options.limit ?? Infinity
    this.index()
    /** @type {import('./write-scope.js').Op[]} */
    const own = []
    let deletes = 0
    for (const op of this.local.values()) {
      if (op.namespace !== namespace || !within(op.key, bounds)) continue
      own.push(op)
      if (op.type === 'del') deletes++
    }
    // Each own delete may hide one stored entry: read that many more.
    const wanted = limit + deletes
    const readLimit = wanted > BACKEND_LIMIT ? -1 : wanted
    const iteratorOptions = { ...bounds, values, reverse, limit: readLimit }
    /** @type {Array<[Uint8Array, any]>} */
    const stored = await namespace.sublevel.iterator(iteratorOptions).all()
    let covered = bounds
    if (readLimit !== -1 && stored.length === readLimit && stored.length > 0) {
      const last = stored[stored.length - 1][0]
      covered = reverse ? { ...bounds, gt: undefined, gte: last } : { ...bounds, lte: undefined, lt: concatBytes(last, [0]) }
    }
    this.assertOpen()
    // `at` moved forward meanwhile (see #settle()): read it again as of now.
    if (at !== this.at) return this.entries(namespace, bounds, options)
    if (this.writer.rangeChangedSince(namespace, covered, at)) {
      if ((options.tries ?? 0) >= EXTENSIONS) throw conflict('a range it read kept changing while it read it')
      this.#extend()
      return this.entries(namespace, bounds, { ...options, tries: (options.tries ?? 0) + 1 })
    }
    this.#ranges.push({ namespace, bounds: covered })
    if (this.#seen !== null) this.#seenRanges.push({ namespace, options: iteratorOptions, entries: stored })
    if (own.length === 0) return stored
    /** @type {Map<string, [Uint8Array, any]>} */
    const merged = new Map()
    for (const entry of stored) merged.set(namespace.keyId(entry[0]), entry)
    for (const op of own) {
      if (op.type === 'put') merged.set(/** @type {string} */ (op.id), [op.key, values ? op.value : undefined])
      else merged.delete(/** @type {string} */ (op.id))
    }
    const result = Array.from(merged.values()).sort((a, b) => reverse ? compareBytes(b[0], a[0]) : compareBytes(a[0], b[0]))
    return result.length > limit ? result.slice(0, limit) : result
  }

  /**
   * Lock `bounds` of `namespace` in `mode` for the rest of the attempt.
   * @param {import('./namespace.js').Namespace} namespace
   * @param {Bounds} bounds
   * @param {LockMode | 'write'} mode
   * @returns {Promise<void> | null} null when granted at once
   */
  lock (namespace, bounds, mode) {
    this.assertOpen()
    return this.writer.locks.acquire(this, namespace.prefix, bounds, mode, this.lockOptions)
  }

  /**
   * Lock one key (see lock()).
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key @param {LockMode | 'write'} mode
   */
  lockKey (namespace, key, mode) {
    return this.lock(namespace, pointBounds(key), mode)
  }

  /**
   * Counters are not read into the attempt: transactions running side by
   * side that insert into one collection would all conflict on its id
   * sequence. Ids and versions are reserved in memory instead, and the
   * counter is raised when the attempt commits.
   */
  get defersCounters () {
    return true
  }

  /**
   * A key read only to check that it exists (a relation's endpoint): read
   * as get() reads, recorded and checked at commit like any other read (no
   * shared key lock: a transaction runs outside critical sections).
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key
   * @returns {any}
   */
  getShared (namespace, key) {
    return this.get(namespace, key)
  }

  /**
   * The latest value of a counter key, the attempt's own first, without
   * making the attempt depend on it.
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key
   * @returns {any}
   */
  peek (namespace, key) {
    this.assertOpen()
    const id = namespace.keyId(key)
    if (this.ops.length > 0) {
      this.index()
      const own = this.local.get(id)
      if (own !== undefined && own.raise !== true) return own.type === 'put' ? own.value : undefined
      if (own !== undefined) {
        // What the attempt raises a counter to is a floor, not its value: a
        // write outside the attempt may have raised it further since (an
        // insert taking the next id), and the attempt must not take the
        // same number again.
        const current = this.#current(namespace, key, id)
        if (current instanceof Promise) return current.then(value => larger(own.value, value))
        return larger(own.value, current)
      }
    }
    return this.#current(namespace, key, id)
  }

  /**
   * Raise a counter key to at least `n` when the attempt commits.
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key @param {number} n
   * @param {boolean} [unstored] the op's `unstored` (see Op in lib/write-scope.js)
   */
  raise (namespace, key, n, unstored = false) {
    /** @type {import('./write-scope.js').Op} */
    const op = { type: 'put', id: undefined, key, value: String(n), sublevel: namespace.sublevel, namespace, raise: true }
    if (unstored) op.unstored = true
    this.push(op)
  }

  /** @param {import('./write-scope.js').Op} op */
  push (op) {
    super.push(op)
    const { maxOps, maxBytes } = this.limits
    this.#bytes += op.key.length + (op.value === undefined ? 0 : op.value.length)
    if (this.ops.length > maxOps || this.#bytes > maxBytes) {
      throw levelkitError(codes.TX_TOO_LARGE, `A transaction writes at most ${maxOps} keys and ${maxBytes} bytes (options maxOps and maxBytes); this one wrote ${this.ops.length} keys, ${this.#bytes} bytes`, { ops: this.ops.length, bytes: this.#bytes })
    }
  }

  /**
   * Write the attempt's ops as one batch, if nothing it read changed.
   * @param {boolean} sync
   * @returns {Promise<void>}
   */
  async commit (sync) {
    // Idle, so no operation is adding ops while they are committed.
    let idle
    while ((idle = this.idle()) !== null) await idle
    const writer = this.writer
    const acrossTabs = this.#seen !== null && (this.#seen.size > 0 || this.#seenRanges.length > 0)
    if (this.ops.length === 0 && !acrossTabs) {
      // It read a write not yet written: answered now, a read called after
      // the answer (of the stored values, here or in another process) would
      // not see it yet. It answers once that write is, as a critical
      // section does, and runs again if the write failed.
      if (this.#readUnwritten !== null) {
        await this.#readUnwritten
        if (writer.epoch !== this.epoch) throw conflict('a write it read failed', { cause: writer.lastError })
      }
      // Other processes' commits are heard of after they are made: a read
      // may have seen one that is not yet a decision here.
      if (writer.acrossTabs && (this.#read.size > 0 || this.#ranges.length > 0)) {
        await writer.settleRemote()
        this.#validate()
      }
      // Every read was checked when it was made: they all hold as of `at`.
      this.assertOpen()
      this.close()
      return
    }
    for (;;) {
      if (writer.locks.active) await this.#lockWrites()
      const done = await writer.run(async scope => {
        // Run again by the write path: PostgreSQL failed the serializable
        // transaction its batch was in (locking: 'serializable'). The attempt runs again.
        if (this.committing) throw conflict('PostgreSQL could not serialize the transaction its batch was written in')
        this.assertOpen()
        // A lock taken since the writes were locked (or before any lock
        // existed) on a key written here: wait for it outside, then again.
        if (writer.locks.active && this.#blockedWrite()) return false
        // A group holding placeholder ids (a createChat() whose section took
        // one before this transaction began): written first, so that the
        // keys it writes are checked under their real ids.
        if (writer.placeholdersPending) await writer.drain()
        this.#validate()
        // The cross-tab lock is held here: no other tab writes meanwhile.
        if (acrossTabs) await this.#validateAcrossTabs()
        this.assertOpen()
        for (const op of this.ops) {
          if (op.raise === true) op.value = await raised(scope, op)
        }
        this.assertOpen()
        this.committing = true
        this.close()
        for (const op of this.ops) scope.ops.push(op)
        return true
      }, sync, () => {
        // What it wrote is where the next critical section and every
        // transaction read it (the write path's overlay), and batches are
        // written in order: its locks need not wait for the disk.
        writer.locks.release(this)
      })
      if (done) return
    }
  }

  /**
   * Throws LEVELKIT_CONFLICT if a key or range read holds something else
   * now: another tab committed over it.
   */
  async #validateAcrossTabs () {
    const writer = this.writer
    // With key locks (postgres, shared), read them again under their locks.
    const locks = []
    for (const { namespace, key } of /** @type {Map<string, any>} */ (this.#seen).values()) {
      const locked = writer.lockKeys(namespace, [key])
      if (locked !== null) locks.push(locked)
    }
    if (this.#seenRanges.length > 0) {
      const locked = writer.lockRanges()
      if (locked !== null) locks.push(locked)
    }
    if (locks.length > 0) await Promise.all(locks)
    for (const [id, { namespace, key, value }] of /** @type {Map<string, any>} */ (this.#seen)) {
      const op = writer.pending ? writer.lookup(id) : undefined
      const current = op !== undefined ? (op.type === 'put' ? op.value : undefined) : await namespace.read(key, writer.syncReads)
      if (!sameValue(current, value)) throw conflict('another tab changed a key it read')
    }
    if (this.#seenRanges.length === 0) return
    await writer.drain()
    for (const { namespace, options, entries } of this.#seenRanges) {
      const now = await namespace.sublevel.iterator(options).all()
      if (now.length !== entries.length || now.some((/** @type {[Uint8Array, any]} */ [key, value], /** @type {number} */ i) => compareBytes(key, entries[i][0]) !== 0 || !sameValue(value, entries[i][1]))) {
        throw conflict('another tab changed a range it read')
      }
    }
  }

  /** Take a write lock on every key written: waits for the locks other transactions hold on them. */
  async #lockWrites () {
    for (const op of this.ops) {
      // A counter raised at commit takes the larger value whatever order
      // commits come in: locking it would make every inserting commit wait
      // for every other.
      if (op.raise === true) continue
      const wait = this.lockKey(op.namespace, op.key, 'write')
      if (wait !== null) await wait
    }
  }

  #blockedWrite () {
    const locks = this.writer.locks
    return this.ops.some(op => op.raise !== true && locks.isBlocked(this, op.namespace.prefix, pointBounds(op.key), 'write'))
  }

  /** Throws LEVELKIT_CONFLICT if a key or range read was decided since `at`. */
  #validate () {
    const writer = this.writer
    if (writer.epoch !== this.epoch) {
      throw conflict('a write it may have read failed', { cause: writer.lastError })
    }
    for (const id of this.#read) {
      if (writer.changedSince(id, this.at)) throw conflict('a key it read was changed by a commit after it began')
    }
    for (const { namespace, bounds } of this.#ranges) {
      if (writer.rangeChangedSince(namespace, bounds, this.at)) throw conflict('a range it read was changed by a commit after it began')
    }
  }
}

/**
 * The value a counter op of a transaction writes: the larger of what it
 * took and what the counter holds now (another transaction, or a write
 * outside transactions, may have raised it further).
 * @param {WriteScope} scope the commit's critical section
 * @param {import('./write-scope.js').Op} op
 */
async function raised (scope, op) {
  const stored = await scope.get(op.namespace, op.key)
  const current = stored === undefined ? 0 : parseInteger(stored, op.namespace, op.key)
  // (A placeholder id is no value to raise from: the commit drained its group first.)
  if (isPlaceholder(current)) throw conflict('a counter it raises holds a placeholder id not yet written')
  return String(Math.max(current, Number(op.value)))
}

/**
 * The larger of two counter values (strings of integers, or undefined for
 * none): a value that is not an integer is left to the caller's check.
 * @param {string} floor @param {any} stored
 */
function larger (floor, stored) {
  return stored !== undefined && Number(stored) > Number(floor) ? stored : floor
}

/**
 * Whether two stored values (strings, bytes, or undefined for none) are the same.
 * @param {any} a @param {any} b
 */
function sameValue (a, b) {
  if (a instanceof Uint8Array && b instanceof Uint8Array) return a.length === b.length && compareBytes(a, b) === 0
  return a === b
}

/** The bounds of exactly `key`. @param {Uint8Array} key @returns {Bounds} */
export function pointBounds (key) {
  return { gte: key, lt: concatBytes(key, [0]) }
}

/** @param {string} why @param {{ cause?: unknown }} [details] */
export function conflict (why, details) {
  return levelkitError(codes.CONFLICT, `Transaction conflict: ${why}`, details)
}

/**
 * @param {unknown} mode
 * @returns {LockMode | undefined}
 */
export function lockModeOf (mode) {
  if (mode === undefined) return undefined
  if (typeof mode !== 'string' || !LOCK_MODES.includes(mode)) {
    throw invalid(`The lock option must be one of ${LOCK_MODES.map(m => `'${m}'`).join(', ')}`)
  }
  return /** @type {LockMode} */ (mode)
}
