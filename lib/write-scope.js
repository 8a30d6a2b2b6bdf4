import { compareBytes, bytesToBinaryString } from './bytes.js'
import { invalid } from './errors.js'
import { within } from './bounds.js'
import { decodeList } from './stored.js'
import { readingAs, beginReading, endReading } from '#context'

/** What #decided() and #known() answer for a key they cannot: the lookup goes on. */
const UNKNOWN = Symbol('unknown')

const textEncoder = new TextEncoder()
/** @param {string} text */
const encodeText = text => textEncoder.encode(text)

/**
 * @typedef {{ type: 'put' | 'del', id?: string, key: Uint8Array, value?: any, sublevel: any, namespace: import('./namespace.js').Namespace, raise?: boolean, any?: boolean, claim?: boolean, unstored?: boolean, deferredSequence?: boolean, deferred?: boolean, entries?: Array<[import('./indexes.js').SecondaryIndex, import('./indexes.js').IndexEntry[]]> }} Op
 *   `claim`: a put of a key to be refused if it holds a value (a unique claim: IndexedDB add(), see mayClaim())
 *   `any`: another tab or process wrote keys of the namespace that it did not tell (lib/writer.js #heard())
 *   `id` names the key across namespaces; it is computed only when a lookup needs it; `raise`: a
 *   counter a transaction raises to at least `value` when it commits; `unstored`: a sequence's
 *   value that a batch going to IndexedDB directly leaves out, since the record it numbers is
 *   written with it (Collection#settleSequence()): kept in memory and told to other tabs
 *   `entries`: on a native collection's record put (lib/idb-records.js), every index entry of the
 *   record as the model computed it from the record it stored, by index (indexes without any left out)
 * @typedef {{ gt?: Uint8Array, gte?: Uint8Array, lt?: Uint8Array, lte?: Uint8Array }} Bounds
 */

/**
 * The state one critical section reads and writes: its own ops first, then
 * ops decided by earlier critical sections but not yet written, then the
 * database. Instances are what `db.write()` hands to its callback (as `w`).
 */
export class WriteScope {
  /** @param {import('./writer.js').Writer} writer */
  constructor (writer) {
    this.writer = writer
    this.epoch = writer.epoch
    /** @type {Op[]} */
    this.ops = []
    /** @type {Map<string, Op>} ops by id, built lazily from `ops` */
    this.local = new Map()
    this.indexed = 0
    this.open = true
    /** Whether reads may run beside this scope while it is open (Writer.read()): a db.write() callback's scope */
    this.hostsReads = false
    /** Whether this is a batch of a bulk load (lib/bulk.js): the writer writes it as a chained batch */
    this.bulk = false
    /** Whether no two of its ops have one key (an index build's batch): a chained batch then takes them as they are (Writer#writeChained()) */
    this.distinctKeys = false
    /** Whether its batch is to be flushed to disk: on IndexedDB its reads then go in a 'strict' transaction, which the batch joins */
    this.durable = false
    /** Whether its section may run again (Writer#run()) */
    this.rerunnable = false
    /** Whether its section may claim unique values (see mayClaim()) */
    this.claims = false
    /** Whether it claimed one */
    this.claimed = false
    /** @type {Array<{ id: number, sequence: import('./namespace.js').Namespace }> | null} the placeholder ids its deferred inserts took (Writer#takePlaceholder()) */
    this.placeholders = null
    /** Whether its reads come from one snapshot of the database (a read-only transaction's): queries need not wait for the write path */
    this.readsSnapshot = false
    /**
     * With locking: 'serializable', the critical section whose reads this
     * scope starts (startRead()): they go to its transaction whatever the
     * async context, which an untracked section (lib/writer.js
     * untrackedSections) has none of. Null otherwise.
     * @type {object | null}
     */
    this.readsAs = null
  }

  /**
   * Where reads are asynchronous (IndexedDB), what this section has read
   * from the database, by key id: each read is a round trip there (an
   * IndexedDB transaction), and a section often reads a key twice (a
   * relation's list to check an endpoint, then to change it; a record to
   * check, then to update). Kept for this section only: while it runs no
   * other section decides ops and the cross-tab lock is held, so what it
   * read from the database stays what is stored, except for its own ops,
   * which get() looks up first. Null until the first such read.
   * @type {Map<string, Promise<any>> | null}
   */
  #reads = null

  /**
   * Key ids this section knows hold nothing in the database (the lists of
   * a record it created under a new sequence id): get() answers them from
   * the ops, else with undefined, without a read; on IndexedDB the lease
   * cache learns them once the batch is written. Null until the first.
   * @type {Set<string> | null}
   */
  #absent = null

  /**
   * With shared key locks (writer.sharesLocks), the reads of keys this
   * section only checks exist, locked shared (see getShared()), by key id:
   * kept apart from #reads and the caches, whose values a section may
   * decide on (they hold exclusive locks). Null until the first.
   * @type {Map<string, Promise<any>> | null}
   */
  #sharedReads = null

  /** @type {Set<Promise<unknown>>} reads running beside this scope */
  #guests = new Set()

  /** operations of this scope started and not yet settled, queued ones included */
  #pending = 0
  /** @type {Array<() => void>} operations waiting for the running one, in call order */
  #queue = []
  /** @type {Promise<void> | null} */
  #idle = null
  /** @type {(() => void) | null} */
  #idleResolve = null

  /**
   * Run one model operation inside this scope: after the previous one, and
   * all-or-nothing (if it throws, the ops it added are taken back). With no
   * operation of the scope pending it starts at once, else it waits its turn.
   * @template T
   * @param {(scope: WriteScope) => Promise<T> | T} fn
   * @returns {Promise<T>}
   */
  atomic (fn) {
    if (this.#pending++ === 0) return this.#start(fn)
    return new Promise(resolve => { this.#queue.push(() => resolve(this.#start(fn))) })
  }

  /**
   * Start `fn` now; the next queued operation starts only once this one has
   * settled (and rolled back if it failed).
   * @template T
   * @param {(scope: WriteScope) => Promise<T> | T} fn
   * @returns {Promise<T>}
   */
  #start (fn) {
    const mark = this.ops.length
    /** @type {Promise<T>} */
    let result
    if (!this.open) result = Promise.reject(closedError())
    else {
      try {
        const value = fn(this)
        // Settled in a reaction even when `fn` is synchronous: the next
        // queued operation then never starts inside this call.
        result = value instanceof Promise ? value : Promise.resolve(value)
      } catch (err) {
        result = Promise.reject(err)
      }
    }
    return result.then(
      value => { this.#settled(); return value },
      err => { this.#rollback(mark); this.#settled(); throw err }
    )
  }

  #settled () {
    this.#pending--
    const next = this.#queue.shift()
    if (next !== undefined) {
      next()
    } else if (this.#pending === 0 && this.#idleResolve !== null) {
      const resolve = this.#idleResolve
      this.#idle = this.#idleResolve = null
      resolve()
    }
  }

  /**
   * A promise that resolves once no operation of this scope is running or
   * queued, or null if none is now.
   * @returns {Promise<void> | null}
   */
  idle () {
    if (this.#pending === 0) return null
    if (this.#idle === null) this.#idle = new Promise(resolve => { this.#idleResolve = resolve })
    return this.#idle
  }

  /** @param {number} mark */
  #rollback (mark) {
    if (this.ops.length === mark) return
    this.ops.length = mark
    this.local.clear()
    this.indexed = 0
  }

  /** Bring `local` up to date with `ops`. */
  index () {
    for (let i = this.indexed; i < this.ops.length; i++) {
      const op = this.ops[i]
      if (op.id === undefined) op.id = op.namespace.keyId(op.key)
      this.local.set(op.id, op)
    }
    this.indexed = this.ops.length
  }

  close () {
    this.open = false
  }

  /**
   * Run the read `fn` beside this scope: the scope's batch is not written
   * before it is done (see Writer.read()).
   * @template T
   * @param {() => Promise<T>} fn
   * @returns {Promise<T>}
   */
  admit (fn) {
    const guest = fn()
    this.#guests.add(guest)
    const leave = () => { this.#guests.delete(guest) }
    guest.then(leave, leave)
    return guest
  }

  /**
   * Close the scope to new operations and reads, and return a promise that
   * settles once the reads running beside it have, or null if none is.
   * @returns {Promise<unknown> | null}
   */
  closeToGuests () {
    this.open = false
    return this.#guests.size === 0 ? null : Promise.allSettled(this.#guests)
  }

  assertOpen () {
    if (!this.open) throw closedError()
  }

  /**
   * Call `fn`, which starts reads of the database (a get, an iterator's
   * creation), as this section's (readsAs): with locking: 'serializable'
   * they go to its transaction, where PostgreSQL watches them. Model code
   * that reads past get() and entries() inside a section starts its reads
   * so; the backend decides where a read goes as it is started, so `fn`
   * must start them synchronously. Once the scope has ended (a query made
   * in it read later) they are reads like any other: its transaction may
   * be another group's by then.
   * @template T @param {() => T} fn @returns {T}
   */
  startRead (fn) {
    return this.readsAs === null || !this.open ? fn() : readingAs(this.readsAs, fn)
  }

  /**
   * `key` of `namespace` read as `section`'s (startRead() of a point read, with no function made for it).
   * @param {object} section @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key
   * @returns {any}
   */
  #readAs (section, namespace, key) {
    const before = beginReading(section)
    try {
      return namespace.read(key, false)
    } finally {
      endReading(before)
    }
  }

  /**
   * The current raw value of `key`, or undefined. Returns a value directly
   * when it can be read synchronously, else a promise.
   * @param {import('./namespace.js').Namespace} namespace
   * @param {Uint8Array} key
   * @returns {any}
   */
  get (namespace, key) {
    if (!this.open) this.assertOpen()
    /** @type {string | undefined} the lookup key, once built */
    let id
    // Nothing decided and unwritten, nothing known absent: skip building the lookup key.
    if (this.ops.length > 0 || this.writer.pending || this.#absent !== null) {
      id = namespace.keyId(key)
      const decided = this.#decided(id)
      if (decided !== UNKNOWN) return decided
    }
    if (namespace.cache === null) {
      if (this.writer.syncReads) return namespace.read(key, true)
      // The lookup key built once per read (a relation's endpoint checks make many).
      return this.#known(namespace, key, id ?? namespace.keyId(key), true)
    }
    // A cached namespace: what is not in the cache is read once and remembered.
    // Nothing is pending for the key here, so the stored value is current.
    const name = bytesToBinaryString(key)
    if (namespace.cache.has(name)) {
      this.writer.kept()
      return namespace.cache.get(name)
    }
    // With key locks, read once the key is locked (then, cached, until the lock goes).
    const locked = this.writer.lockKeys(namespace, [key])
    if (locked !== null) return locked.then(() => this.get(namespace, key))
    const idb = this.writer.idb
    const value = idb !== null && idb.ready
      ? idb.get(namespace, key, this.#mode())
      : this.readsAs !== null ? this.#readAs(this.readsAs, namespace, key) : namespace.read(key, this.writer.syncReads)
    const settle = namespace.settle
    if (settle !== null) return Promise.resolve(value).then(v => settle(key, v)).then(v => { namespace.remember(key, v); return v })
    if (value instanceof Promise) return value.then(v => { namespace.remember(key, v); return v })
    namespace.remember(key, value)
    return value
  }

  /**
   * The current raw value of `key`, read only to check that it exists (a
   * relation's endpoint): as get(), but with key locks that can be shared
   * (locking: 'keys'), a key not already read is locked shared, so that
   * sections of other processes checking it too do not wait for this one,
   * while one that deletes or rewrites it (it reads it first, exclusively)
   * waits until this transaction ends. Its value is not kept where get()
   * would find it: a get() of the key later asks for the exclusive lock;
   * the key transaction's later getShared()s find it (writer.sharedReads).
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key
   * @returns {any}
   */
  getShared (namespace, key) {
    if (!this.writer.sharesLocks) return this.get(namespace, key)
    if (!this.open) this.assertOpen()
    const id = namespace.keyId(key)
    const decided = this.#decided(id)
    if (decided !== UNKNOWN) return decided
    if (namespace.cache !== null) {
      // Read (and locked) exclusively already: that lock covers this.
      const read = this.#reads?.get(id)
      if (read !== undefined) return read
      const name = bytesToBinaryString(key)
      if (namespace.cache.has(name)) {
        this.writer.kept()
        return namespace.cache.get(name)
      }
    } else {
      // Read (and locked) exclusively already, or kept by the section cache: that lock covers this.
      const known = this.#known(namespace, key, id, false)
      if (known !== UNKNOWN) return known
    }
    // Read under a shared lock earlier in this key transaction, which still holds it.
    const kept = this.writer.sharedReads?.lookup(id)
    if (kept !== undefined) {
      this.writer.kept()
      return kept[0]
    }
    const shared = this.#sharedReads ??= new Map()
    const reading = shared.get(id)
    if (reading !== undefined) return reading
    return this.#readShared(namespace, key, id, shared)
  }

  /**
   * Start reading `key` locked shared, kept in `shared` (a failed read is not kept).
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key @param {string} id
   * @param {Map<string, Promise<any>>} shared
   * @returns {Promise<any>}
   */
  #readShared (namespace, key, id, shared) {
    const kept = this.writer.sharedReads
    // Before the lock is asked for: a transaction that ends meanwhile (its
    // locks gone) leaves the value out of kept.
    const mark = kept !== null ? kept.start(id) : null
    const locked = this.writer.lockKeys(namespace, [key], true)
    const read = locked !== null ? this.#readLocked(namespace, key, locked) : Promise.resolve(this.startRead(() => namespace.read(key, false)))
    // As get() of a cached namespace settles what it reads (#read() of others does not).
    const settle = namespace.cache !== null ? namespace.settle : null
    const settled = settle !== null ? read.then(v => settle(key, v)) : read
    shared.set(id, settled)
    settled.then(value => { if (kept !== null && mark !== null) kept.keep(id, value, mark) }, () => { if (shared.get(id) === settled) shared.delete(id) })
    return settled
  }

  /**
   * What this section already knows of key `id` without reading: the
   * value its own ops or earlier sections' unwritten ops decided
   * (undefined for a deletion), undefined for a key known absent (see
   * #absent), else UNKNOWN. The first step of every lookup (get(),
   * getShared(), getMany()): what is decided and unwritten overrides every
   * read and cache.
   * @param {string} id
   * @returns {any}
   */
  #decided (id) {
    if (this.ops.length > 0 || this.writer.pending) {
      if (this.indexed < this.ops.length) this.index()
      const local = this.local.get(id)
      if (local !== undefined) return local.type === 'put' ? local.value : undefined
      const op = this.writer.lookup(id)
      if (op !== undefined) {
        // What an earlier section decided: valid for the key transaction only, as a cached value (Writer#cacheHits).
        this.writer.kept()
        return op.type === 'put' ? op.value : undefined
      }
    }
    if (this.#absent !== null && this.#absent.has(id)) return undefined
    return UNKNOWN
  }

  /**
   * The next step for a key of a namespace that is not cached, after
   * #decided(): this section's read of it (a promise: a key is read once
   * per section, see #reads), the writer's section cache (lib/section-cache.js),
   * or on IndexedDB the lease cache (values, not promises, so that the
   * checks of many keys, a relation's endpoints, run on without a turn of
   * the event loop each); else, with `read`, a read of it started (#read()),
   * without, UNKNOWN.
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key @param {string} id
   * @param {boolean} read
   * @returns {any}
   */
  #known (namespace, key, id, read) {
    const reads = this.#reads
    const reading = reads !== null ? reads.get(id) : undefined
    if (reading !== undefined) return reading
    const sections = this.writer.sectionCache
    if (sections !== null) {
      const hit = sections.lookup(id)
      if (hit !== undefined) {
        this.writer.kept()
        return hit[0]
      }
    }
    // On IndexedDB, what the lease cache holds (only while this tab holds
    // the cross-tab lock, as every critical section does).
    const idb = this.writer.idb
    if (idb !== null && idb.ready) {
      const hit = idb.cached(namespace, id)
      if (hit !== undefined) return hit[0]
    }
    return read ? this.#read(namespace, key, id, reads ?? (this.#reads = new Map())) : UNKNOWN
  }

  /**
   * Start reading a key for this section, kept in #reads (and in the
   * section cache, if nothing changed meanwhile).
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key @param {string} id
   * @param {Map<string, Promise<any>>} reads
   * @returns {Promise<any>}
   */
  #read (namespace, key, id, reads) {
    const idb = this.writer.idb
    const sections = this.writer.sectionCache
    const version = sections === null ? 0 : sections.version
    // With key locks, once the key is locked.
    const locked = this.writer.lockKeys(namespace, [key])
    // On IndexedDB, in the transaction the section's batch is written in.
    const read = locked !== null
      ? this.#readLocked(namespace, key, locked)
      : Promise.resolve(idb !== null && idb.ready ? idb.get(namespace, key, this.#mode()) : this.readsAs !== null ? this.#readAs(this.readsAs, namespace, key) : namespace.read(key, false))
    reads.set(id, read)
    read.then(value => { if (sections !== null) sections.keep(id, value, version) }, () => { if (reads.get(id) === read) reads.delete(id) })
    return read
  }

  /**
   * `key` read once `locked` (its key lock asked for) resolves: where the
   * backend can (postgres with locking: 'keys'), in the same query as the
   * lock's statement, right behind it, one round trip for both.
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key @param {Promise<void>} locked
   * @returns {Promise<any>}
   */
  #readLocked (namespace, key, locked) {
    // (Caught here: the read rejects alike, and a section that let it go is handled as before.)
    locked.catch(() => {})
    return namespace.readLocked(key, locked)
  }

  /**
   * `key` of `namespace` holds nothing in the database (see #absent): its
   * reads in this section are answered without a request.
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key
   */
  absent (namespace, key) {
    (this.#absent ??= new Set()).add(namespace.keyId(key))
  }

  /** The key ids absent() was told of, or null. */
  get absentIds () {
    return this.#absent
  }

  /** Where this section reads on IndexedDB (see lib/idb-direct.js). @returns {import('./idb-direct.js').Mode} */
  #mode () {
    return this.durable ? 'strict' : true
  }

  /**
   * The current raw values of `keys` of `namespace`, in order, as get() of
   * each (getShared() with `shared`) would answer them: an array where
   * none needs a read, else a promise of one. One pass over the keys (the
   * lookup key built once each, the backend looked at once), and the keys
   * that need a read are read at once, as prefetch() reads them: a
   * relation's endpoint checks of a bulk load make thousands.
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array[]} keys @param {boolean} [shared]
   * @returns {any[] | Promise<any[]>}
   */
  getMany (namespace, keys, shared = false) {
    if (!this.open) this.assertOpen()
    const idb = this.writer.idb
    const direct = idb !== null && idb.ready
    // Where get() does more than this pass (a cached namespace, key locks,
    // synchronous reads, a transaction's own get()), each key as it would.
    if ((shared && this.writer.sharesLocks) || namespace.cache !== null || this.writer.syncReads || this.defersCounters) {
      const each = keys.map(key => shared ? this.getShared(namespace, key) : this.get(namespace, key))
      return each.some(value => value instanceof Promise) ? Promise.all(each) : each
    }
    const reads = this.#reads || (this.#reads = new Map())
    const values = new Array(keys.length)
    let waits = false
    /** @type {Uint8Array[] | null} */
    let missed = null
    /** @type {string[]} */
    const ids = []
    /** @type {number[]} */
    const at = []
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]
      const id = namespace.keyId(key)
      // In get()'s order.
      const decided = this.#decided(id)
      if (decided !== UNKNOWN) {
        values[i] = decided
        continue
      }
      const known = this.#known(namespace, key, id, false)
      if (known !== UNKNOWN) {
        values[i] = known
        if (known instanceof Promise) waits = true
        continue
      }
      // A read of it on its way fills the lease cache: get() waits for that one.
      if (direct && !idb.knows(id)) {
        (missed ??= []).push(key)
        ids.push(id)
        at.push(i)
        continue
      }
      values[i] = this.#read(namespace, key, id, reads)
      waits = true
    }
    if (missed !== null) {
      this.#readMany(namespace, missed, ids, reads)
      for (let k = 0; k < at.length; k++) values[at[k]] = reads.get(ids[k])
      waits = true
    }
    return waits ? Promise.all(values) : values
  }

  /**
   * Start reading `keys` of `namespace` at once where each read is a round
   * trip (IndexedDB, and backends without synchronous reads, such as
   * postgres, which sends reads issued together as one statement): the
   * get()s of them that follow in this section take these reads (see
   * #known()) instead of making requests one after another. Keys decided
   * and not yet written are left to get(), which answers them from the
   * ops; elsewhere this does nothing.
   * Shared: for getShared() (keys only checked to exist, locked shared
   * where key locks can be).
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array[]} keys @param {boolean} [shared]
   * @returns {boolean} whether it read them (else get() reads each key as it would have)
   */
  prefetch (namespace, keys, shared = false) {
    const idb = this.writer.idb
    const direct = idb !== null && idb.ready
    // Not for a transaction (defersCounters): it reads outside the critical
    // section, as of its own start, and not through #reads.
    if ((!direct && this.writer.syncReads) || namespace.cache !== null || !this.open || keys.length < 2 || this.defersCounters) return false
    if (shared && this.writer.sharesLocks) return this.#prefetchShared(namespace, keys)
    const reads = this.#reads || (this.#reads = new Map())
    const sections = this.writer.sectionCache
    /** @type {Uint8Array[]} */
    const missed = []
    /** @type {string[]} */
    const ids = []
    for (const key of keys) {
      const id = namespace.keyId(key)
      if (this.#decided(id) !== UNKNOWN || reads.has(id) || (sections !== null && sections.has(id))) continue
      // What the lease cache knows (or a read of it on its way) costs no request.
      if (idb !== null && direct && idb.knows(id)) continue
      if (direct) {
        missed.push(key)
        ids.push(id)
      } else this.#read(namespace, key, id, reads)
    }
    // On IndexedDB, the others in one go: their requests made together, in
    // the transaction the section's batch is written in.
    if (missed.length > 0) this.#readMany(namespace, missed, ids, reads)
    return true
  }

  /**
   * prefetch() of keys only checked to exist, with shared key locks: each
   * key getShared() would read is started (their locks and reads made in
   * the same turn go as one statement each).
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array[]} keys
   */
  #prefetchShared (namespace, keys) {
    const sections = this.writer.sectionCache
    const shared = this.#sharedReads ??= new Map()
    for (const key of keys) {
      const id = namespace.keyId(key)
      if (this.#decided(id) !== UNKNOWN || shared.has(id) || this.#reads?.has(id) || this.writer.sharedReads?.has(id) || (sections !== null && sections.has(id))) continue
      this.#readShared(namespace, key, id, shared)
    }
    return true
  }

  /**
   * Start reading `keys` (ids `ids`) of `namespace` from IndexedDB in one
   * getMany(), each key's read kept in #reads as #read() keeps one.
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array[]} keys @param {string[]} ids
   * @param {Map<string, Promise<any>>} reads
   */
  #readMany (namespace, keys, ids, reads) {
    const idb = /** @type {import('./idb-direct.js').IdbDirect} */ (this.writer.idb)
    const all = idb.getMany(namespace, keys, this.#mode())
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]
      const read = all.then(values => values[i])
      reads.set(id, read)
      // A failed read is not kept (and not left unhandled).
      read.catch(() => { if (reads.get(id) === read) reads.delete(id) })
    }
  }

  /**
   * Whether counters (a collection's id sequence, its version counter) are
   * raised at commit rather than read and written (see Transaction): then
   * the ids and versions it takes are reserved in memory.
   */
  get defersCounters () {
    return false
  }

  /**
   * The current value of a counter key, read without making the scope
   * depend on it (in a critical section, a plain read).
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key
   * @returns {any}
   */
  peek (namespace, key) {
    return this.get(namespace, key)
  }

  /**
   * The value this section or an earlier section of the group put at `key`
   * and did not yet write, if any (undefined for none, or a deletion),
   * without a read, a lock or a cache: whether a sequence already holds an
   * unwritten id (Collection#insertDeferred()).
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key
   * @returns {any}
   */
  decidedPut (namespace, key) {
    if (this.ops.length === 0 && !this.writer.pending) return undefined
    if (this.indexed < this.ops.length) this.index()
    const id = namespace.keyId(key)
    const op = this.local.get(id) ?? this.writer.lookup(id)
    return op?.type === 'put' ? op.value : undefined
  }

  /**
   * Set a counter key to `n`, which the caller made at least its current value.
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key @param {number} n
   * @param {boolean} [unstored] the op's `unstored` (see Op)
   */
  raise (namespace, key, n, unstored = false) {
    /** @type {Op} */
    const op = { type: 'put', id: undefined, key, value: String(n), sublevel: namespace.sublevel, namespace }
    if (unstored) op.unstored = true
    this.push(op)
  }

  /**
   * Whether `key` of `namespace`, which must hold nothing for this section
   * to go on (a new unique value), may be put by claim() instead of read:
   * where its batch goes to IndexedDB, whose add() then refuses it if the
   * key holds a value (the transaction aborts, nothing of the group is
   * written, and its sections run again, reading: Writer#run()). Not where
   * a read costs no request (decided ops hold the key, this section or the
   * lease cache knows it, a read of it is on its way), nor for a section
   * that may not run again or whose group holds one that may not.
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key
   */
  mayClaim (namespace, key) {
    return this.claimsIn(namespace) && this.mayClaimKey(namespace, key)
  }

  /**
   * What mayClaim() asks of the section and the namespace, for every key
   * of it: a bulk load's batch asks it once (see mayClaimKey()).
   * @param {import('./namespace.js').Namespace} namespace
   */
  claimsIn (namespace) {
    return this.claims && this.open && namespace.cache === null && this.writer.claimable
  }

  /**
   * What mayClaim() asks of the key, for a key of a namespace claimsIn()
   * allowed, while nothing else happens in between.
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key
   * @param {string} [id] namespace.keyId(key), if the caller has it
   */
  mayClaimKey (namespace, key, id = namespace.keyId(key)) {
    const idb = /** @type {import('./idb-direct.js').IdbDirect} */ (this.writer.idb)
    return !(this.#reads?.has(id) || idb.knows(id) || this.#decided(id) !== UNKNOWN)
  }

  /**
   * Put `value` under `key`, which mayClaim() allowed: refused at the batch
   * if the key holds a value.
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key @param {any} value
   */
  claim (namespace, key, value) {
    this.push({ type: 'put', id: undefined, key, value, sublevel: namespace.sublevel, namespace, claim: true })
    this.claimed = true
  }

  /** @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key @param {any} value */
  put (namespace, key, value) {
    this.push({ type: 'put', id: undefined, key, value, sublevel: namespace.sublevel, namespace })
  }

  /** @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key */
  del (namespace, key) {
    this.push({ type: 'del', id: undefined, key, value: undefined, sublevel: namespace.sublevel, namespace })
  }

  /** @param {Op} op */
  push (op) {
    if (!this.open) this.assertOpen()
    this.ops.push(op)
  }

  /**
   * All current entries of `namespace` within `bounds`, in key order, as
   * [key, value] pairs. Waits for decided ops to be written first: range reads
   * cannot be served by the overlay, and while this critical section runs no
   * new ops can be decided.
   *
   * @param {import('./namespace.js').Namespace} namespace
   * @param {Bounds} bounds
   * @param {{ values?: boolean }} [options]
   * @returns {Promise<Array<[Uint8Array, any]>>}
   */
  async entries (namespace, bounds, options) {
    await this.writer.drain()
    // With key locks, the range lock, once what was decided is written (which lets the locks go).
    const locked = this.writer.lockRanges()
    if (locked !== null) await locked
    const values = options?.values !== false
    const idb = this.writer.idb
    const stored = idb !== null && idb.ready
      ? await idb.entries(namespace, bounds, { values }, this.#mode())
      : await this.startRead(() => namespace.sublevel.iterator({ ...bounds, values })).all()
    /** @type {Map<string, [Uint8Array, any]>} */
    const merged = new Map()
    for (const [key, value] of stored) merged.set(namespace.keyId(key), [key, value])
    let changed = false
    this.index()
    for (const [id, op] of this.local) {
      if (op.namespace !== namespace || !within(op.key, bounds)) continue
      changed = true
      if (op.type === 'put') merged.set(id, [op.key, op.value])
      else merged.delete(id)
    }
    const result = Array.from(merged.values())
    if (changed) result.sort((a, b) => compareBytes(a[0], b[0]))
    return result
  }

  /**
   * The keys (in key order) of the lists of `namespace` that hold `id`, as
   * this critical section sees them: the index of levelkit's lists store
   * over what is written (`namespace` mirrored, see IdbDirect.mirror()),
   * once what was decided is written, with the section's own lists of the
   * namespace on top.
   * @param {import('./namespace.js').Namespace} namespace @param {number | string} id
   * @returns {Promise<Uint8Array[]>}
   */
  async listing (namespace, id) {
    await this.writer.drain()
    const locked = this.writer.lockRanges()
    if (locked !== null) await locked
    const idb = /** @type {import('./idb-direct.js').IdbDirect} */ (this.writer.idb)
    /** @type {Map<string, Uint8Array>} */
    const found = new Map()
    for (const key of await idb.listing(namespace, id, this.#mode())) found.set(namespace.keyId(key), key)
    let changed = false
    this.index()
    for (const [keyId, op] of this.local) {
      if (op.namespace !== namespace) continue
      changed = true
      const holds = op.type === 'put' && decodeList(op.value instanceof Uint8Array ? op.value : encodeText(op.value), namespace, op.key).some(item => item === id)
      if (holds) found.set(keyId, op.key)
      else found.delete(keyId)
    }
    const result = Array.from(found.values())
    if (changed) result.sort(compareBytes)
    return result
  }
}

function closedError () {
  return invalid('This write scope has ended: use it only inside its db.write() callback, before that callback returns')
}
