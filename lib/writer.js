import { levelkitError, codes } from './errors.js'
import { WriteScope } from './write-scope.js'
import { Namespace, namespaceByPrefix, namespacesOf } from './namespace.js'
import { layout } from './names.js'
import { noop } from './common.js'
import { within } from './bounds.js'
import { compareBytes, bytesToBinaryString } from './bytes.js'
import { LockManager } from './lock-manager.js'
import { idbDirectFor } from './idb-direct.js'
import { WANT_REPEAT_MS } from './cross-tab.js'
import { placeholderAt, isPlaceholder, holdsPlaceholder, substitute } from './deferred-ids.js'
import { SharedReads } from './shared-reads.js'

/**
 * Critical sections (the functions given to run()) that run untracked: with
 * locking: 'serializable', no async context frame (lib/context-node.js) of
 * the section, so no AsyncLocalStorage enabled for it. Each reads only
 * through its write scope, which starts its reads as the section's
 * (WriteScope#startRead()): lib/database.js writeUntracked, for levelkit's
 * own db.write() callbacks, which call every model through it.
 * @type {WeakSet<Function>}
 */
export const untrackedSections = new WeakSet()

/**
 * What a critical section will read, told when it is called (a read hint:
 * `() => ReadHint[]`, by section function; lib/database.js writeUntracked).
 * With locking: 'serializable' on PostgreSQL, the statement that opens a
 * transaction reads the hinted keys of every section called by then, so
 * that the group's sections, which run one after another in it, find their
 * values in the section cache instead of each waiting a round trip
 * (Writer#hintedReads()). A hint only saves reads: a key hinted and not
 * read costs a key in that statement, a key read and not hinted its
 * round trip.
 * @type {WeakMap<Function, () => ReadHint[]>}
 */
export const readHints = new WeakMap()

// How long one tab (or process) may keep the shared writer lock while it
// has more to write, before it lets a waiting one in.
const CROSS_TAB_SLICE_MS = 50
// The key of the generation in its namespace (layout.writes()).
const GENERATION_KEY = new TextEncoder().encode('generation')
// The key of the last batch written under the shared lock on PostgreSQL:
// its generation and number ("7 3"), beside every batch.
const BATCH_KEY = new TextEncoder().encode('batch')
// How many round trips on the listening connection a read-only transaction
// makes for the notifications of the last batch written, before it counts
// them as unknown (PostgreSQL signals them a moment after the commit is seen).
const SETTLE_TRIES = 3
// How long a tab that took the lock waits for the last holders' messages
// still on their way (a BroadcastChannel message may arrive after the Web
// Lock is granted) before it forgets every cached value instead.
const HAND_OVER_WAIT_MS = 100
// How many times a section runs again because a unique claim of its group
// was refused (each time a claim of another value, made for the first time,
// failed): past that its write rejects with the refusal.
const MAX_CLAIM_RERUNS = 32

// A refused claim's error (IndexedDB's ConstraintError) carries this.
const CLAIM_REFUSED = Symbol('levelkit.claimRefused')

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
 *
 * On IndexedDB other tabs, and on PostgreSQL with the shared option other
 * processes, write the same database: a writer holds the shared writer lock
 * (lib/cross-tab.js) from its first critical section until it is idle
 * (nothing queued, nothing unwritten), in slices; a leased lock (Web Locks,
 * PostgreSQL's writer lock while it can hear other processes) it keeps while
 * idle too, until another writer says it wants it, so that
 * writes awaited one at a time take it once. The first batch of each
 * holding also writes the database's generation, one more than the last,
 * and every batch tells the others its generation and its number within
 * the holding; a holding that ends normally tells them how many batches it
 * wrote. A writer that takes the lock again and finds the generation it
 * left kept its cached values (sequences) right; else it forgets the keys
 * the others' batches wrote, as they told it, or everything, when it did
 * not hear of them all (a holder that crashed never tells how many).
 */
export class Writer {
  /** @type {import('abstract-level').AbstractLevel<any, any, any>} */
  #root
  /** Whether the root takes batches of whole keys and encoded values (PostgreSQL: #batch()). */
  #tableBatch = false
  #locked = false
  /** @type {Array<() => void>} critical sections waiting for the lock, in order */
  #waiting = []
  /** @type {Array<() => void>} sections running again after a refused claim, served before #waiting (called before them) */
  #rerunning = []
  /** Sections called so far: a section's number tells which were called before it. */
  #calls = 0
  /** @type {Set<() => ReadHint[]>} the read hints of sections called and not yet answered (see readHints) */
  #hinted = new Set()
  /** @type {Set<number>} the numbers of the sections that may run again (run() with rerunnable), until they settle */
  #mayRerun = new Set()
  /** @type {Set<number>} those of them that are to run again after a refused claim, until they take the lock */
  #due = new Set()
  /** @type {(() => void) | null} wakes the section waiting in #afterClaims() */
  #wake = null
  /** @type {Group | null} */
  #group = null
  /** @type {Promise<void> | null} */
  #flushing = null
  #epoch = 0
  #failures = 0
  /** @type {Group | null} the group created last: written after every earlier one */
  #newest = null
  /** @type {Group | null} the group being written */
  #writing = null
  /** @type {WriteScope | null} the scope of the critical section holding the lock, once it runs */
  #holder = null
  closed = false
  /** @type {unknown} the error of the last failed batch */
  lastError = undefined
  /** Whether every batch is flushed to disk before its writes resolve (open({ durability: 'sync' })). */
  durable = false
  /** @type {(<T>(write: () => T) => T) | null} how a durable batch is made, where `sync` is not enough (lib/durability.js) */
  strict = null
  /** The locks transactions take (lib/transaction.js). */
  locks = new LockManager()

  /**
   * How many critical sections have decided ops: the serial order of
   * commits. A transaction reads as of the count when it began.
   */
  #decisions = 0
  /** @type {Map<object, number>} the transactions running, with the count they began at */
  #transactions = new Map()
  /**
   * While transactions run: the count at which each key was last decided,
   * by op id, and the decided ops in order, for ranges. Nothing is kept
   * while none runs, so writes outside transactions pay nothing.
   * @type {Map<string, number>}
   */
  #changedAt = new Map()
  /** @type {Array<{ at: number, op: import('./write-scope.js').Op }>} */
  #changes = []

  /**
   * Ops decided but not yet written, by id. Built lazily from #unindexed:
   * writes awaited one at a time never need it.
   * @type {Map<string, import('./write-scope.js').Op>}
   */
  #overlay = new Map()
  /** @type {import('./write-scope.js').Op[]} ops decided but not yet in #overlay, in order */
  #unindexed = []
  /** @type {Set<import('./namespace.js').Namespace>} */
  #cachedNamespaces = new Set()
  /** @type {Set<(ops: import('./write-scope.js').Op[]) => void>} */
  #listeners = new Set()
  /** @type {Set<() => void>} */
  #closeListeners = new Set()
  /** @type {Set<(message: import('./cross-tab.js').RemoteMessage | null) => void>} */
  #remoteListeners = new Set()
  /**
   * While set: awaited at the start of every critical section, once it
   * holds the cross-tab lock (lib/schema-watch.js sets it only when it has
   * something to look at: nothing is paid per write otherwise).
   * @type {(() => Promise<void>) | null}
   */
  sectionHook = null
  /**
   * While set: called with a critical section's ops before they are
   * decided; what it throws refuses them all (lib/schema-watch.js).
   * @type {((ops: import('./write-scope.js').Op[]) => void) | null}
   */
  commitGuard = null
  /** @type {import('./cross-tab.js').CrossTab | null} */
  #crossTab
  /** @type {(() => void) | null} releases the cross-tab lock while this tab holds it */
  #crossTabRelease = null
  #crossTabSince = 0
  /** When another writer said it wants the lock: first since it was taken while holding, else last (leased locks only). */
  #crossTabWantedAt = -Infinity
  /** Whether the lock must be taken again before the next critical section: a batch failed, the generation is unknown. */
  #crossTabStale = false
  /** Whether the holding of the lock caught up (#catchUp()): until then others' batches may still be unheard. */
  #crossTabCaughtUp = false
  /** @type {Namespace | null} where the generation is stored, beside every batch, when other writers share the database */
  #generationSpace = null
  /**
   * The stored generation as this writer last knew it for sure, with every
   * batch of it and before heard of or forgotten: what the first batch of
   * its holding wrote, or what it read when it took the lock (or opened,
   * see #generationOpen). null: unknown (a batch failed, or it never held
   * the lock).
   * @type {number | null}
   */
  #generation = null
  /**
   * Whether the holding of #generation may still be writing (read by
   * ready() while another writer held the lock): its batches heard from
   * then on are news, and only catching up tells that none was missed.
   */
  #generationOpen = false
  /** How many batches this writer stamped since it took the lock: the number of its next batch's is one more. */
  #sequence = 0
  /** @type {Map<number, Heard>} other writers' holdings heard of since, by generation */
  #heardGenerations = new Map()
  /**
   * The decision count given to the last commit of another writer whose
   * keys are unknown: every transaction that began before it conflicts.
   */
  #unknownAt = 0
  /**
   * The last batch (generation and number) settleRemote() read as written
   * but not heard of, and so counted as unknown (#unknownAt): a
   * transaction that began after that need not wait for its notifications.
   * @type {[number, number]}
   */
  #settled = [-1, 0]
  /**
   * PostgreSQL shared with locking: 'keys' (lib/backends/postgres-keylocks.js):
   * no table lock; critical sections lock the keys they read in a
   * transaction their group's batch commits, so a group is written once no
   * section runs, and sections wait for it.
   * @type {KeyLocks | null}
   */
  #keyLocks = null
  /** With key locks: KeyLocks#requests when the running section began, and whether its locks went with a group drain() wrote. */
  #sectionRequests = 0
  /** cacheHits when the running section started */
  #sectionHits = 0
  #sectionLost = false
  /** How many times the key transaction ended (read hints' values are kept only for the one they were read in). */
  #sectionEnds = 0
  /**
   * How many reads of critical sections the section cache, a cached
   * namespace or an earlier section's unwritten decision answered
   * (WriteScope): with key locks, a section that used a value known right
   * only while the key transaction lasts runs again when drain() ends that
   * transaction under it, as one that made a request does.
   */
  cacheHits = 0
  /** How many placeholder ids were taken (takePlaceholder()). */
  #placeholders = 0

  /**
   * @param {import('abstract-level').AbstractLevel<any, any, any>} root
   * @param {boolean} syncReads
   * @param {import('./cross-tab.js').CrossTab | null} [crossTab]
   */
  constructor (root, syncReads, crossTab = null) {
    this.#root = root
    this.#tableBatch = typeof (/** @type {any} */ (root).levelkitWriteBatch) === 'function'
    this.syncReads = syncReads
    this.#crossTab = crossTab
    /** On IndexedDB: reads and batches of the write path, many per transaction (lib/idb-direct.js). */
    this.idb = idbDirectFor(root)
    /**
     * Whether a collection's sequence, as stored, may lag the ids its records
     * have: on IndexedDB, where a batch going there directly leaves out the
     * sequence that the record it writes makes up for (Collection#settleSequence()).
     * Whatever writes an IndexedDB database then follows the rules that keep
     * it safe (a reader takes the highest id too, a delete past the stored
     * sequence writes it), whichever way its batches go.
     */
    this.lazySequences = /** @type {any} */ (root).type === 'browser-level'
    /**
     * What critical sections read and decided, where each read is a round
     * trip and the backend says that every write to it goes through levelkit
     * (`createSectionCache()`: postgres, where other processes' writes are
     * heard of): lib/section-cache.js. Not elsewhere: a value written behind
     * levelkit's back would go unseen. open({ readCache: 0 }) turns it off
     * (lib/database.js).
     * @type {import('./section-cache.js').SectionCache | null}
     */
    this.sectionCache = !syncReads && this.idb === null ? (/** @type {any} */ (root).db ?? root).createSectionCache?.() ?? null : null
    /**
     * With key locks taken shared: the values read under shared locks, for
     * the key transaction's life (lib/shared-reads.js; getShared() only).
     * @type {SharedReads | null}
     */
    this.sharedReads = null
    if (crossTab) {
      this.#generationSpace = new Namespace(root, layout.writes(), 'utf8')
      crossTab.listen(message => this.#heard(message))
      crossTab.wanted?.(() => this.#wanted())
      const keyLocks = /** @type {any} */ (crossTab).locksKeys === true ? /** @type {KeyLocks} */ (/** @type {unknown} */ (crossTab)) : null
      if (keyLocks !== null) {
        this.#keyLocks = keyLocks
        // What a section read is known right only while its key is locked.
        if (keyLocks.locksShared === true) this.sharedReads = new SharedReads()
        // (A transaction's opening read takes the group's hinted keys: see readHints.)
        if (keyLocks.rerunsGroups === true) {
          keyLocks.hintedReads = limit => this.hintedReads(limit)
        }
        keyLocks.onEnd(() => {
          this.#sectionEnds++
          this.sectionCache?.clear()
          this.sharedReads?.clear()
          for (const namespace of this.#cachedNamespaces) namespace.cache?.clear()
        })
      }
    }
  }

  /**
   * A critical section used a value kept for the key transaction (see
   * cacheHits). One used while the group is being written (a drain() made
   * elsewhere, a transaction's range read or check(), while the section
   * ran), whose COMMIT lets the key's lock go, makes the section run again.
   */
  kept () {
    this.cacheHits++
    if (this.#flushing !== null && this.#locked && this.#keyLocks !== null) this.#sectionLost = true
  }

  /**
   * Whether a deferred insert (Collection#insertDeferred()) may take a
   * placeholder id: the backend writes a batch holding placeholders with
   * the ids its statement takes from the sequences (lib/deferred-ids.js).
   * PostgreSQL with locking: 'keys', without hosts (a batch settled after a
   * failover would not tell its ids); not while a transaction runs (it
   * tracks the keys sections write, which hold placeholders until written).
   */
  get defersIds () {
    return this.#keyLocks !== null && this.#keyLocks.defersSequences === true && this.#transactions.size === 0 && !this.closed
  }

  /**
   * A placeholder id for a new record of the collection whose sequence is
   * `sequence`, taken by `scope`: the statement writing its group's batch
   * replaces it by the next value of that sequence (in the order the
   * group's sections took them).
   * @param {WriteScope} scope @param {Namespace} sequence
   */
  takePlaceholder (scope, sequence) {
    const id = placeholderAt(this.#placeholders++)
    ;(scope.placeholders ??= []).push({ id, sequence })
    return id
  }

  /**
   * With key locks (see #keyLocks): lock `keys` of `namespace` before a
   * critical section reads them; null when there is nothing to wait for.
   * Shared (see sharesLocks): the section only checks that they exist.
   * Whether they are sequence keys (a cached namespace's) is told too:
   * with locking: 'serializable' a transaction that begins by reading one
   * takes its lock first (lib/backends/postgres-serializable.js).
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array[]} keys @param {boolean} [shared]
   * @returns {Promise<void> | null}
   */
  lockKeys (namespace, keys, shared = false) {
    return this.#keyLocks === null ? null : this.#keyLocks.lock(namespace.prefix, keys, shared, namespace.cache !== null)
  }

  /**
   * Whether key locks can be taken shared (locking: 'keys'): a key read
   * only to check that it exists is then locked so, and its value kept
   * out of the caches get() reads (lib/write-scope.js getShared()), in
   * sharedReads for the key transaction's life.
   */
  get sharesLocks () {
    return this.#keyLocks !== null && this.#keyLocks.locksShared === true
  }

  /** With key locks: before a critical section reads a range. @returns {Promise<void> | null} */
  lockRanges () {
    return this.#keyLocks === null ? null : this.#keyLocks.lockRanges()
  }

  get epoch () {
    return this.#epoch
  }

  /**
   * How many groups failed otherwise than by a refused claim (see #fail()):
   * a refused claim's sections all run again, so a bulk load whose batches
   * may run again goes on after one (lib/bulk.js).
   */
  get failures () {
    return this.#failures
  }

  /**
   * On IndexedDB with a leased cross-tab lock: keep up to `bytes` of values
   * read and written while this tab holds the lock (lib/idb-direct.js).
   * @param {number} bytes
   */
  leaseCache (bytes) {
    if (this.idb !== null && this.#crossTab?.leased === true) this.idb.useCache(bytes)
  }

  /**
   * Resolves once this writer hears of every batch the other writers
   * commit, and knows the generation from which it does (where the lock
   * can tell: PostgreSQL): a transaction that begins after it need not
   * conflict for what was written before.
   */
  async ready () {
    const lock = this.#crossTab
    if (lock === null || !lock.listening) return
    await lock.listening()
    if (this.#generation !== null || this.#crossTabRelease !== null) return
    const value = await /** @type {Namespace} */ (this.#generationSpace).read(GENERATION_KEY, false)
    if (this.#generation !== null || this.#crossTabRelease !== null) return
    this.#generation = value === undefined ? 0 : Number(value)
    // Its holder, if any, may write more batches of it.
    this.#generationOpen = true
    // Read before it may have seen less.
    if (this.#transactions.size > 0) this.#unknownAt = ++this.#decisions
  }

  /** How many critical sections have decided ops so far. */
  get decisions () {
    return this.#decisions
  }

  /**
   * Start keeping the changes a transaction that reads as of now must check.
   * @param {object} transaction
   * @returns {number} the count of decisions it reads as of
   */
  begin (transaction) {
    const at = this.#decisions
    this.#transactions.set(transaction, at)
    return at
  }

  /**
   * A transaction reads as of now from here on (see Transaction#extend()).
   * @param {object} transaction
   * @returns {number} the count of decisions it now reads as of
   */
  extend (transaction) {
    const at = this.#decisions
    this.#transactions.set(transaction, at)
    return at
  }

  /**
   * A transaction ended: forget the changes no running transaction needs.
   * @param {object} transaction
   */
  end (transaction) {
    if (!this.#transactions.delete(transaction)) return
    if (this.#transactions.size === 0) {
      this.#changedAt.clear()
      this.#changes.length = 0
      return
    }
    let oldest = Infinity
    for (const at of this.#transactions.values()) if (at < oldest) oldest = at
    const changes = this.#changes
    let k = 0
    while (k < changes.length && changes[k].at <= oldest) {
      const { at, op } = changes[k++]
      if (this.#changedAt.get(/** @type {string} */ (op.id)) === at) this.#changedAt.delete(/** @type {string} */ (op.id))
    }
    if (k > 0) changes.splice(0, k)
  }

  /**
   * Whether the key `id` was decided after decision `at`. Only for a
   * running transaction that began at or before `at`.
   * @param {string} id @param {number} at
   */
  changedSince (id, at) {
    if (this.#unknownAt > at) return true
    const changed = this.#changedAt.get(id)
    return changed !== undefined && changed > at
  }

  /**
   * Whether some key of `namespace` within `bounds` was decided after
   * decision `at` (same condition as changedSince()).
   * @param {import('./namespace.js').Namespace} namespace
   * @param {import('./write-scope.js').Bounds} bounds
   * @param {number} at
   */
  rangeChangedSince (namespace, bounds, at) {
    if (this.#unknownAt > at) return true
    const changes = this.#changes
    for (let i = changes.length - 1; i >= 0 && changes[i].at > at; i--) {
      const { op } = changes[i]
      if (op.namespace === namespace && within(op.key, bounds)) return true
    }
    return false
  }

  /** Whether other tabs or processes write the same database (IndexedDB with Web Locks, PostgreSQL shared). */
  get acrossTabs () {
    return this.#crossTab !== null
  }

  /**
   * Whether a transaction checks again, at commit, the values it read:
   * where reads may come from the cache of another tab's transaction
   * (IndexedDB). On PostgreSQL every read is of what is committed, and the
   * others' commits count as decisions here (see #heard()).
   */
  get validatesByValue () {
    return this.#crossTab !== null && this.#crossTab.validatesByValue !== false
  }

  /** True while a db.write() callback holds the write path. */
  get inWriteCallback () {
    const holder = this.#holder
    return holder !== null && holder.hostsReads && holder.open
  }

  /**
   * Whether a critical section may claim unique values now (see
   * WriteScope#mayClaim()): its ops go with the queued group, which holds
   * none of a section that cannot run again, and groups go to IndexedDB
   * directly (elsewhere a claim is refused at once: see #flush()).
   */
  get claimable () {
    return (this.#group === null || !this.#group.plain) && this.#direct()
  }

  /** Whether a group holding claims is not yet written: it may fail, and the sections decided on it run again. */
  get #claimsPending () {
    return this.#group?.claims === true || this.#writing?.claims === true
  }

  /** Whether the group not yet written holds placeholder ids (takePlaceholder()). */
  get placeholdersPending () {
    return this.#group !== null && this.#group.placeholders.length > 0
  }

  /** True while some decided op is not yet written. */
  get pending () {
    return this.#unindexed.length > 0 || this.#overlay.size > 0
  }

  /**
   * Settles once every op decided so far is written, or its batch failed
   * (then `epoch` moved); null when none waits. Batches are written in
   * order: the newest group is written last.
   * @returns {Promise<void> | null}
   */
  decidedWritten () {
    const newest = this.#newest
    return newest === null || newest.settled ? null : newest.promise.catch(noop)
  }

  /**
   * The latest decided-but-unwritten op for `id`, if any.
   * @param {string} id
   */
  lookup (id) {
    const unindexed = this.#unindexed
    if (unindexed.length > 0) {
      for (const op of unindexed) {
        if (op.id === undefined) op.id = op.namespace.keyId(op.key)
        this.#overlay.set(op.id, op)
      }
      unindexed.length = 0
    }
    return this.#overlay.get(id)
  }

  /**
   * Whether some op decided and not yet written is in `namespace`, with a
   * key from `low` to `high`: when none is, reads of those keys need not
   * look them up one by one (a bulk load's batch, whose keys follow those
   * of the batch before it).
   * @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} low @param {Uint8Array} high
   */
  pendingWithin (namespace, low, high) {
    const inside = (/** @type {import('./write-scope.js').Op} */ op) => op.namespace === namespace && compareBytes(op.key, low) >= 0 && compareBytes(op.key, high) <= 0
    for (const op of this.#unindexed) if (inside(op)) return true
    for (const op of this.#overlay.values()) if (inside(op)) return true
    return false
  }

  /**
   * Run `fn` as one critical section and resolve with its result once its ops
   * are written. If `fn` throws, nothing it decided is written.
   *
   * With `sync`, the batch holding its ops is flushed to disk before it
   * resolves (with the rest of its group).
   * `decided`, if given, is called once its ops are decided (in the
   * overlay, where the next critical section reads them), before they are
   * written.
   *
   * With `rerunnable` (on IndexedDB), `fn` may run again (it has no side
   * effect but its writes): its unique values are claimed by the batch
   * (IndexedDB add()) instead of read first, and when a claim of its group
   * is refused (nothing of the group is written) it runs again, reading
   * them, as does every section of the group. Sections that may not run
   * again wait for groups holding claims to be written before they start,
   * and claims are made only while the queued group holds none of theirs.
   * @template T
   * @param {(scope: WriteScope) => Promise<T> | T} fn
   * @param {boolean} [sync]
   * @param {(() => void) | null} [decided]
   * @param {boolean} [rerunnable]
   * @returns {Promise<T>}
   */
  async run (fn, sync = false, decided = null, rerunnable = false) {
    const keyLocks = this.#keyLocks
    if (rerunnable && this.idb !== null && keyLocks === null) {
      const call = ++this.#calls
      this.#mayRerun.add(call)
      let claims = true
      try {
        for (let made = 0; ; made++) {
          try {
            return await this.#runOnce(fn, sync, decided, undefined, claims ? CLAIMS : RERUNS, call)
          } catch (err) {
            if (!claimRefused(err) || made >= MAX_CLAIM_RERUNS) throw err
            // Its own claim may be the one refused: read this time.
            claims = false
          }
        }
      } finally {
        this.#mayRerun.delete(call)
        if (this.#due.delete(call)) this.#wake?.()
      }
    }
    if (keyLocks === null || keyLocks.rerunsGroups !== true) return this.#runOnce(fn, sync, decided)
    // With locking: 'serializable', the transaction a section ran in may
    // fail after it returned, at its group's batch or COMMIT (or a section
    // decided on top of a group that failed so): it runs again, in a new
    // transaction, as long as its caller has no answer (at most
    // keyLocks.maxReruns times, counting the reruns #runOnce() makes).
    const reruns = { made: 0 }
    const hint = this.sectionCache === null ? undefined : readHints.get(fn)
    if (hint !== undefined) this.#hinted.add(hint)
    try {
      for (;;) {
        try {
          return await this.#runOnce(fn, sync, decided, reruns)
        } catch (err) {
          const cause = /** @type {any} */ (err)?.code === codes.ABORTED ? /** @type {any} */ (err).cause : err
          if (this.closed || !keyLocks.busy(cause)) throw err
          rerun(keyLocks, reruns, cause)
          keyLocks.stats.retries++
        }
      }
    } finally {
      if (hint !== undefined) this.#hinted.delete(hint)
    }
  }

  /**
   * The keys the sections called and not yet answered said they will read
   * (readHints), that neither the section cache nor the ops decided and
   * not yet written answer, as whole keys of the backend's table; and what
   * to do with their values once read: keep them in the section cache (a
   * cached namespace's, a sequence's, in its own cache, which the section
   * transaction's end empties too), each unless a section decided it
   * meanwhile. Asked by the backend
   * (lib/backends/postgres-level.js) when a section's read opens a
   * serializable transaction: the values are its snapshot's, which every
   * read of the transaction answers (SectionCache#fill(): other processes'
   * writes heard meanwhile do not make them stale for it), and the sections
   * called by then run in it, or in a later one (the section cache is
   * emptied when it ends). At most `limit` keys; null when there is
   * nothing to read.
   * @param {number} limit
   * @returns {{ keys: Buffer[], found: (values: Map<string, Buffer>) => void } | null}
   */
  hintedReads (limit) {
    const sections = this.sectionCache
    if (sections === null || this.#hinted.size === 0) return null
    /** @type {HintedKey[]} */
    const taken = []
    const seen = new Set()
    for (const hint of this.#hinted) {
      if (taken.length >= limit) break
      try {
        this.#takeHinted(hint(), limit, sections, seen, taken)
      } catch {
        // A hint is a guess (one that throws, or is not as it should be): its section reads what it reads all the same.
      }
    }
    if (taken.length === 0) return null
    const ends = this.#sectionEnds
    return {
      keys: taken.map(hinted => hinted.whole),
      found: values => {
        // The transaction they were read in ended before they came (a
        // section that did not wait for its read): its values are not the
        // next one's.
        if (this.#sectionEnds !== ends) return
        for (const { id, namespace, key, whole } of taken) {
          if (this.lookup(id) !== undefined) continue
          const stored = values.get(whole.toString('latin1'))
          const value = stored === undefined || namespace.valueEncoding !== 'utf8' ? stored : stored.toString('utf8')
          const cache = namespace.cache
          if (cache === null) sections.fill(id, value)
          else if (!cache.has(bytesToBinaryString(key))) namespace.remember(key, value)
        }
      }
    }
  }

  /**
   * hintedReads()'s keys of one hint, added to `taken` (at most `limit` in all).
   * @param {ReadHint[]} reads @param {number} limit
   * @param {import('./section-cache.js').SectionCache} sections @param {Set<string>} seen @param {HintedKey[]} taken
   */
  #takeHinted (reads, limit, sections, seen, taken) {
    for (const { namespace, keys } of reads) {
      // Only the backend's own reads are kept so; a cached namespace (a
      // sequence) keeps its values in its own cache, where get() looks.
      // (One the transaction's end would not empty is left alone.)
      const cache = namespace.cache
      if (namespace.pg === null || namespace.settle !== null || (cache !== null && !this.#cachedNamespaces.has(namespace))) continue
      for (const key of keys) {
        const id = namespace.keyId(key)
        if (seen.has(id) || this.lookup(id) !== undefined || (cache === null ? sections.has(id) : cache.has(bytesToBinaryString(key)))) continue
        if (taken.length >= limit) return
        const whole = namespace.sublevel.prefixKey(key, 'buffer', false)
        // A sequence key read first takes its lock (postgres-serializable.js), as its section's read would.
        if (cache !== null) this.lockKeys(namespace, [key])
        seen.add(id)
        taken.push({ id, namespace, key, whole })
      }
    }
  }

  /**
   * @template T
   * @param {(scope: WriteScope) => Promise<T> | T} fn
   * @param {boolean} sync
   * @param {(() => void) | null} decided
   * @param {{ made: number }} [reruns] how many times the critical section ran again so far
   * @param {number} [mode] PLAIN (may not run again), RERUNS, or CLAIMS (may run again, and claims unique values)
   * @param {number} [call] its number (run() with rerunnable)
   * @returns {Promise<T>}
   */
  async #runOnce (fn, sync, decided, reruns = { made: 0 }, mode = PLAIN, call = ++this.#calls) {
    if (this.closed) throw levelkitError(codes.NOT_OPEN, 'The database is closed')
    // With locking: 'serializable', the transaction whose snapshot this
    // section may see as of now (see below).
    const calledAt = this.#keyLocks?.snapshotMark?.() ?? 0
    if (this.#locked) await (mode === RERUNS ? new Promise(resolve => { this.#rerunning.push(() => resolve(undefined)); this.#wake?.() }) : this.#wait())
    else this.#locked = true
    this.#due.delete(call)
    // Not on a group that may fail for a refused claim (see run()).
    if (mode === PLAIN && (this.#claimsPending || this.#due.size > 0)) {
      try {
        await this.#afterClaims(call)
      } catch (err) {
        this.#release()
        throw err
      }
    }
    let written = null
    /** @type {any} */
    let result
    let failed = false
    let failure
    const pending = this.#newest
    let scope = new WriteScope(this)
    const untracked = untrackedSections.has(fn)
    if (sync || this.durable) scope.durable = true
    if (mode !== PLAIN) scope.rerunnable = true
    if (mode === CLAIMS) scope.claims = true
    try {
      // With key locks, not while a group is written (it ends the key transaction).
      if (this.#keyLocks !== null) {
        while (this.#flushing) await this.#flushing
        // A serializable transaction sees what was committed when its
        // snapshot was taken (its first read): a section called after that,
        // queued behind the running ones, would not see a write another
        // process committed before it was called. It runs in a new one.
        if (this.#keyLocks.snapshotTakenBefore?.(calledAt)) {
          if (this.#group !== null && !this.#flushing) this.#flushing = this.#flush()
          await this.drain()
          await this.#keyLocks.idle()
        }
      } else if (this.#crossTab) await this.#holdCrossTab()
      if (this.sectionHook !== null) await this.sectionHook()
      this.#holder = scope
      for (;;) {
        const failed = this.#keyLocks?.failed
        if (this.#keyLocks !== null) {
          this.#sectionRequests = this.#keyLocks.requests
          this.#sectionHits = this.cacheHits
          // (Counted where the backend counts them: its groups' sizes, for the benchmarks.)
          if (this.#keyLocks.stats.sections !== undefined) this.#keyLocks.stats.sections++
          this.#sectionLost = false
        }
        try {
          const running = scope
          // With locking: 'serializable', its reads go to the transaction:
          // those its scope starts whatever the async context, the others
          // by its frame (an untracked section has none).
          if (this.#keyLocks?.within) {
            running.readsAs = this.#keyLocks
            result = await this.#keyLocks.within(() => fn(running), untracked)
          } else result = await fn(running)
          // A lock of its own found busy (or its transaction lost) whose
          // error fn caught (a db.write() callback): it runs again all the
          // same, as if fn had let the error through.
          if (this.#keyLocks !== null && this.#keyLocks.failed !== failed) throw this.#keyLocks.lastFailure
          // Unless the locks it took went with a group drain() wrote: then
          // it runs again (a section that drains first, as an index
          // build's batch does, takes none before).
          if (this.#keyLocks === null || !this.#sectionLost) break
          this.#keyLocks.stats.retries++
        } catch (thrown) {
          // After such a caught error, whatever fn threw runs it again too.
          const err = this.#keyLocks !== null && this.#keyLocks.failed !== failed ? this.#keyLocks.lastFailure : thrown
          if (this.#keyLocks === null || !this.#keyLocks.busy(err)) throw thrown
          rerun(this.#keyLocks, reruns, err)
          // (Key locks count theirs as they find a key busy.)
          if (this.#keyLocks.rerunsGroups === true) this.#keyLocks.stats.retries++
        }
        // A key another process holds, while this one holds some: write
        // what was decided, let every lock go, and run the section again
        // (lib/backends/postgres-keylocks.js).
        const guests = scope.closeToGuests()
        if (guests !== null) await guests
        scope.close()
        if (this.#group !== null && !this.#flushing) this.#flushing = this.#flush()
        await this.drain()
        await this.#keyLocks.idle()
        scope = new WriteScope(this)
        if (sync || this.durable) scope.durable = true
        this.#holder = scope
      }
      // Reads let in beside the scope (read()) see none of its batch land.
      const guests = scope.closeToGuests()
      if (guests !== null) await guests
      if (this.commitGuard !== null) this.commitGuard(scope.ops)
      written = this.#commit(scope, sync)
      if (written !== null && decided !== null) decided()
    } catch (err) {
      failed = true
      failure = err
      const guests = scope.closeToGuests()
      if (guests !== null) await guests
    } finally {
      scope.close()
      this.#holder = null
      this.#release()
    }
    if (written) {
      const ids = /** @type {unknown} */ (await written)
      // A deferred insert's id, answered as the section's result: the real one.
      return ids instanceof Map && isPlaceholder(result) ? ids.get(result) ?? result : result
    }
    // Nothing written (a refusal, or nothing to do): the answer may rest on
    // writes decided earlier and not yet on disk. Answer once they are, and
    // not at all if they failed.
    if (pending && !pending.settled) {
      await pending.promise.catch(noop)
      if (this.#epoch !== scope.epoch) {
        throw levelkitError(codes.ABORTED, 'Aborted because an earlier write it depended on failed', { cause: this.lastError })
      }
    }
    if (failed) throw failure
    return result
  }

  /**
   * Run `fn`, a read that must see no batch land while it reads (check()
   * without a snapshot; getBy() when racing writes keep pairing an index
   * entry with a record that moved on), once every op decided before it is
   * written: as a critical section, or, while a db.write() callback holds
   * the lock, beside that callback, whose batch then waits until `fn` is
   * done. Queued behind the callback, `fn` would wait for it, and the
   * callback may be what is waiting for `fn`: where there is no
   * AsyncLocalStorage (browsers), nothing tells whether it is. Either way no
   * other tab writes meanwhile: the cross-tab lock is held.
   * @template T
   * @param {() => Promise<T>} fn
   * @returns {Promise<T>}
   */
  read (fn) {
    const host = this.#holder
    const read = async () => {
      await this.drain()
      return fn()
    }
    if (host !== null && host.hostsReads && host.open) return host.admit(read)
    return this.run(read)
  }

  /**
   * `read()`, a read made outside any critical section, answering as of its
   * call: every write called after it is left out (children.watch()'s
   * default starting point: a child appended after the call is delivered).
   * Where reads are synchronous (LevelDB, memory) it answers before any
   * later write can run. Where they answer later (PostgreSQL's pool, memory
   * with syncReads: false), a write called after it runs its critical
   * section on other connections, or on the pool ahead of a read still
   * waiting for a connection, and may commit before the read is run: so
   * there it runs as a critical section (read() above), which the write's
   * waits for. IndexedDB keeps the plain read (its transactions run in the
   * order they are made; not examined further).
   * @template T
   * @param {() => Promise<T>} read
   * @returns {Promise<T>}
   */
  readAsOfCall (read) {
    if (this.syncReads || this.idb !== null) return read()
    return this.read(read)
  }

  /**
   * Resolves when every op decided so far is written. With key locks, a
   * group waiting for the sections to stop is written now: a section
   * running meanwhile then runs again (its locks went with the transaction).
   */
  async drain () {
    const keyLocks = this.#keyLocks
    if (keyLocks !== null && this.#group !== null && !this.#flushing) {
      if (this.#locked && (keyLocks.requests !== this.#sectionRequests || this.cacheHits !== this.#sectionHits)) this.#sectionLost = true
      this.#flushing = this.#flush()
    }
    while (this.#flushing) await this.#flushing
  }

  /** Refuse new writes, then wait for every queued critical section and batch. */
  async close () {
    this.closed = true
    for (const listener of this.#closeListeners) listener()
    this.#closeListeners.clear()
    await this.idle()
    this.#releaseCrossTab()
    this.#crossTab?.close()
  }

  /** Wait for every queued critical section and batch. */
  async idle () {
    if (this.#locked) await this.#wait()
    else this.#locked = true
    this.#release()
    await this.drain()
  }

  /**
   * Called with the lock held by a section that may not run again, `call`:
   * wait until the groups holding claims are written, and the sections
   * called before it whose claim was refused have run again, handing them
   * the lock meanwhile (so they decide before it, in call order).
   * @param {number} call
   */
  async #afterClaims (call) {
    for (;;) {
      if (this.#rerunning.length > 0) {
        // Back to this section once they let the lock go, before any other.
        const turn = new Promise(resolve => this.#waiting.unshift(() => resolve(undefined)))
        this.#release()
        await turn
      } else if (this.#claimsPending) {
        await this.drain()
      } else if ([...this.#due].some(due => due < call)) {
        await new Promise(resolve => { this.#wake = () => resolve(undefined) })
        this.#wake = null
      } else {
        return
      }
    }
  }

  /** @returns {Promise<void>} resolves when the lock is handed to the caller */
  #wait () {
    return new Promise(resolve => this.#waiting.push(/** @type {() => void} */ (resolve)))
  }

  /** Hand the lock to the next waiting critical section, if any. */
  #release () {
    const next = this.#rerunning.shift() ?? this.#waiting.shift()
    if (next) next()
    else {
      this.#locked = false
      // With key locks, a group is written once no section runs.
      if (this.#keyLocks !== null && this.#group !== null && !this.#flushing) this.#flushing = this.#flush()
      if (!this.#flushing) this.#idleCrossTab()
    }
  }

  /**
   * Called with the local lock held: make sure this tab holds the cross-tab
   * lock too, and has not held it for too long while other tabs may wait.
   */
  async #holdCrossTab () {
    const lock = /** @type {import('./cross-tab.js').CrossTab} */ (this.#crossTab)
    if (this.#crossTabRelease) {
      // A leased lock held while idle is kept until another writer wants
      // it: nobody else can have written, so there is nothing to catch up on.
      // Once wanted (or unleased), the slice runs from then.
      const wanted = !lock.leased || this.#wantedLately()
      const since = lock.leased ? Math.max(this.#crossTabSince, this.#crossTabWantedAt) : this.#crossTabSince
      // A lock lost with its connection is taken again at once.
      if (!this.#crossTabStale && lock.held?.() !== false && (!wanted || Date.now() - since < CROSS_TAB_SLICE_MS)) return
      // Finish what was decided under this holding, then queue up again
      // (Web Locks are granted in request order, PostgreSQL's in about so).
      await this.drain()
      this.#releaseCrossTab()
    }
    this.#crossTabRelease = await lock.acquire()
    this.#crossTabCaughtUp = false
    this.#crossTabSince = Date.now()
    this.#crossTabStale = false
    this.#sequence = 0
    try {
      await this.#catchUp(lock)
      this.#crossTabCaughtUp = this.#crossTabRelease !== null
    } catch (err) {
      this.#releaseCrossTab()
      throw err
    }
    // Nobody else writes until it is let go, and what others wrote before is forgotten.
    this.idb?.lease(true)
  }

  /**
   * Just after taking the lock: another writer may have written since this
   * one last held it. If the generation is the one it left, nobody did;
   * if it heard of every batch of every holding since, key by key, and of
   * each holding's end, it forgot those keys already; else (a holder
   * crashed, or a message was missed or is still on its way) it forgets
   * every cached value, and every running transaction conflicts.
   * @param {import('./cross-tab.js').CrossTab} lock
   */
  async #catchUp (lock) {
    const space = /** @type {Namespace} */ (this.#generationSpace)
    const value = await space.read(GENERATION_KEY, false)
    const stored = value === undefined ? 0 : Number(value)
    const mine = this.#generation
    let known = mine !== null && stored >= mine && !this.#generationOpen && this.#heardAll(mine, stored)
    // Notifications are sent as batches commit, and may still be on their
    // way; those of a holding read open by ready() are all heard only then.
    if (!known && mine !== null && stored >= mine && lock.catchUp) known = await lock.catchUp() && this.#heardAll(mine, stored)
    if (!known && mine !== null && stored > mine && !this.#generationOpen && lock.nextMessage) {
      for (const deadline = Date.now() + HAND_OVER_WAIT_MS; !known && !this.#missed(mine, stored) && Date.now() < deadline;) {
        await lock.nextMessage(deadline - Date.now())
        known = this.#heardAll(mine, stored)
      }
    }
    if (!known) {
      for (const listener of this.#remoteListeners) listener(null)
      this.idb?.clearCache()
      for (const namespace of this.#cachedNamespaces) namespace.cache?.clear()
      for (const namespace of namespacesOf(this.#root)) namespace.clearReadCaches()
      this.sectionCache?.clear()
      this.sharedReads?.clear()
      // (On IndexedDB, transactions compare the values they read instead.)
      if (this.#transactions.size > 0 && !this.validatesByValue) this.#unknownAt = ++this.#decisions
    }
    this.#generation = Number.isSafeInteger(stored) ? stored : null
    this.#generationOpen = false
    for (const generation of this.#heardGenerations.keys()) if (generation <= stored) this.#heardGenerations.delete(generation)
  }

  /**
   * For a transaction that wrote nothing, and so commits without the lock:
   * make sure every batch the other writers committed before now counts as
   * a decision here (its keys, or, where they are unknown or not heard of
   * in time, everything), so that validating the transaction's reads
   * against the decisions since it began takes them in. The stored
   * generation cannot tell: the batches of one holding share it.
   */
  async settleRemote () {
    const lock = this.#crossTab
    // With key locks, transactions compare the values they read instead.
    if (lock === null || this.#keyLocks !== null) return
    // Holding the lock, caught up when it was taken: nobody else wrote
    // since. (Not while taking it: the last holder's batches may still be
    // on their way, read here but not heard of.)
    if (this.#crossTabCaughtUp && this.#crossTabRelease !== null && !this.#crossTabStale && lock.held?.() !== false) return
    if (!lock.catchUp) {
      if (this.#transactions.size > 0) this.#unknownAt = ++this.#decisions
      return
    }
    // PostgreSQL makes a commit visible to the others before it signals
    // their listening sessions, so a round trip on the listening connection
    // may come back before a batch already read is heard of. Every batch
    // stores its number: read after every read of the transaction, the
    // last one tells what must be heard of.
    const last = batchOf(await /** @type {Namespace} */ (this.#generationSpace).read(BATCH_KEY, false))
    for (let tries = 1; ; tries++) {
      const heard = await lock.catchUp()
      if (heard && (last === null || this.#heardUpTo(last))) return
      if (!heard || tries === SETTLE_TRIES) break
      await new Promise(resolve => setTimeout(resolve, tries))
    }
    // Not heard of in time: counted as unknown once, which conflicts every
    // transaction that began before; one that began after read nothing older.
    if (last !== null && compareBatches(last, this.#settled) <= 0) return
    if (last !== null) this.#settled = last
    if (this.#transactions.size > 0) this.#unknownAt = ++this.#decisions
  }

  /**
   * Whether the other writers' batches up to `last` (written before it, in
   * its holding and the holdings before) were all heard of, key by key, or
   * were written before this writer last caught up.
   * @param {[number, number]} last generation and number
   */
  #heardUpTo ([generation, sequence]) {
    const mine = this.#generation
    if (mine === null) return false
    const open = this.#generationOpen
    if (generation < mine || (generation === mine && !open)) return true
    for (let g = open ? mine : mine + 1; g <= generation; g++) {
      const heard = this.#heardGenerations.get(g)
      if (heard === undefined || !heard.whole) return false
      if (g < generation ? heard.end !== heard.batches : heard.batches < sequence) return false
    }
    return true
  }

  /**
   * Whether every holding after generation `from`, up to `to`, was heard
   * of whole: each of its batches key by key, in order, and its end.
   * @param {number} from @param {number} to
   */
  #heardAll (from, to) {
    if (to - from > this.#heardGenerations.size) return false
    for (let generation = from + 1; generation <= to; generation++) {
      const heard = this.#heardGenerations.get(generation)
      if (heard === undefined || !heard.whole || heard.end !== heard.batches) return false
    }
    return true
  }

  /**
   * Whether a message of a holding after generation `from`, up to `to`,
   * was missed: waiting for the others will not make them whole.
   * @param {number} from @param {number} to
   */
  #missed (from, to) {
    for (let generation = from + 1; generation <= to; generation++) {
      if (this.#heardGenerations.get(generation)?.whole === false) return true
    }
    return false
  }

  /**
   * The op that writes the next generation, added to a group about to be
   * written, and what the other writers are told of the group.
   * @param {Group} group
   * @returns {import('./cross-tab.js').RemoteMessage}
   */
  #stamp (group) {
    if (this.#keyLocks !== null) {
      // No generation: it would be one key every batch of every process writes.
      const ops = lastOpPerKey(group.ops)
      /** @type {import('./cross-tab.js').RemoteMessage} */
      const message = { generation: null, ops: ops.flatMap(op => op === null ? [] : [{ prefix: op.namespace.prefix, type: op.type, key: op.key }]), prefixes: null }
      // And its sequences' keys (cached namespaces): every insert writes
      // one, the keys processes fail each other's transactions on.
      this.#keyLocks.stage(message, ops.flatMap(op => op === null || op.namespace.cache === null ? [] : [{ prefix: op.namespace.prefix, key: op.key }]))
      return message
    }
    if (this.#generation === null) throw levelkitError(codes.ABORTED, 'Write aborted: the database\'s generation is unknown since a batch failed')
    // The holding's first batch writes its generation; its other batches
    // are told apart by their number (its end tells how many there were).
    const first = this.#sequence === 0
    const generation = first ? this.#generation + 1 : this.#generation
    const sequence = ++this.#sequence
    /** @type {import('./cross-tab.js').RemoteOp[]} */
    const ops = []
    for (const op of lastOpPerKey(group.ops)) {
      if (op !== null) ops.push({ prefix: op.namespace.prefix, type: op.type, key: op.key })
    }
    const space = /** @type {Namespace} */ (this.#generationSpace)
    if (first) group.ops.push({ type: 'put', key: GENERATION_KEY, value: String(generation), sublevel: space.sublevel, namespace: space })
    // On PostgreSQL, for read-only transactions to tell what they must have heard of (settleRemote()).
    if (!this.validatesByValue) group.ops.push({ type: 'put', key: BATCH_KEY, value: `${generation} ${sequence}`, sublevel: space.sublevel, namespace: space })
    const message = { generation, sequence, ops, prefixes: null }
    this.#crossTab?.stage?.(message)
    return message
  }

  /**
   * Whether another writer said it wants the lock since this one took it,
   * or just before (it says so again while it waits: one that said so
   * longer ago got the lock meanwhile, or says so again soon).
   */
  #wantedLately () {
    return this.#crossTabWantedAt >= this.#crossTabSince - WANT_REPEAT_MS
  }

  /** Another writer waits for the lock: let go at once if idle, else once idle (see #idleCrossTab()). */
  #wanted () {
    // While holding, keep the first 'want' since it was taken: the waiter
    // says it again while it waits, and a busy holder's slice runs from the first.
    if (this.#crossTabRelease === null || !this.#wantedLately()) this.#crossTabWantedAt = Date.now()
    if (!this.#locked && !this.#flushing) this.#releaseCrossTab()
  }

  /** Nothing queued, nothing unwritten: let the lock go, unless it is leased and nobody wants it. */
  #idleCrossTab () {
    if (this.#keyLocks !== null) {
      // Locks of sections that decided nothing: let them go.
      this.#keyLocks.idle().catch(noop)
      return
    }
    if (this.#crossTab?.leased && !this.closed && !this.#crossTabStale && !this.#wantedLately()) return
    this.#releaseCrossTab()
  }

  #releaseCrossTab () {
    const release = this.#crossTabRelease
    if (release) {
      this.idb?.lease(false)
      this.#crossTabRelease = null
      // Letting go answers every 'want' heard so far; a writer still
      // waiting after this says so again (lib/cross-tab.js).
      this.#crossTabWantedAt = -Infinity
      this.#crossTabCaughtUp = false
      // A holding that wrote, every batch of it known written (none failed):
      // the next holder learns how many there were, so that having heard
      // them all it keeps its caches. Told before the lock goes.
      if (this.#sequence > 0 && this.#generation !== null && !this.#crossTabStale) {
        this.#crossTab?.ended?.({ generation: this.#generation, sequence: this.#sequence, ops: null, prefixes: null, end: true })
      }
      this.#sequence = 0
      release()
    }
  }

  /** @param {WriteScope} scope @param {boolean} sync @returns {Promise<void> | null} */
  #commit (scope, sync) {
    if (scope.epoch !== this.#epoch) {
      // An earlier batch failed after this critical section read its ops from
      // the overlay: what it decided rests on writes that never happened.
      throw levelkitError(codes.ABORTED, 'Write aborted because an earlier write failed', { cause: this.lastError })
    }
    if (scope.ops.length === 0) return null
    const at = ++this.#decisions
    if (this.#transactions.size > 0) {
      for (const op of scope.ops) {
        if (op.id === undefined) op.id = op.namespace.keyId(op.key)
        this.#changedAt.set(op.id, at)
        this.#changes.push({ at, op })
      }
    }
    const group = this.#group || (this.#group = this.#newest = new Group())
    if (scope.claimed) group.claims = true
    if (!scope.rerunnable) group.plain = true
    if (sync) group.sync = true
    if (scope.bulk) group.bulk = true
    if (!scope.distinctKeys) group.distinctKeys = false
    if (scope.absentIds !== null) (group.absent ??= []).push(...scope.absentIds)
    if (scope.placeholders !== null) group.placeholders.push(...scope.placeholders)
    // Ops holding a placeholder (a deferred insert's, or one that copied it
    // from the overlay) are cached only once written, with the real ids.
    const deferred = group.placeholders.length > 0
    if (deferred) for (const op of scope.ops) if (op.deferredSequence === true || holdsPlaceholder(op.key) || holdsPlaceholder(op.value)) op.deferred = true
    const sections = this.sectionCache
    // A bulk load's values would only push out the others.
    if (sections !== null && scope.bulk) sections.clear()
    const shared = this.sharedReads
    for (const op of scope.ops) {
      group.ops.push(op)
      this.#unindexed.push(op)
      // Looked up in the ops and the overlay until written; not here after.
      if (shared !== null) shared.delete(op.id ?? (op.id = op.namespace.keyId(op.key)))
      if (op.unstored === true) group.unstored = true
      if (op.deferred === true) {
        if (op.namespace.cache !== null) op.namespace.cache.delete(bytesToBinaryString(op.key))
        else if (sections !== null) sections.delete(op.id ?? (op.id = op.namespace.keyId(op.key)))
      } else if (op.namespace.cache !== null) op.namespace.remember(op.key, op.value)
      else if (sections !== null && !scope.bulk) {
        if (op.id === undefined) op.id = op.namespace.keyId(op.key)
        // A counter a transaction raises holds at least the value, maybe more.
        if (op.raise) sections.delete(op.id)
        else sections.set(op.id, op.type === 'put' ? op.value : undefined)
      }
    }
    if (!this.#flushing && this.#keyLocks === null) this.#flushing = this.#flush()
    return group.promise
  }

  async #flush () {
    try {
      while (this.#group) {
        const group = this.#group
        this.#group = null
        this.#writing = group
        const sync = group.sync || this.durable
        // On IndexedDB a bulk load's batch goes the direct way too: in the
        // transaction its reads were made in, one transaction per batch.
        const direct = this.#direct()
        /** @type {{ sequences: number[][], bases: number[] | null } | null} what the backend's statement needs to take the group's placeholder ids (see takePlaceholder()) */
        const deferred = group.placeholders.length > 0 ? { sequences: placeholdersBySequence(group.placeholders), bases: null } : null
        const chained = !direct && deferred === null && group.bulk && !(sync && this.strict !== null) && this.#plainRoot()
        /** @type {import('./namespace.js').Namespace[] | null} a bulk group's namespaces whose caches wait for it whole (Namespace#writing()) */
        const wholes = chained ? [] : null
        /** @type {ReturnType<import('./idb-direct.js').IdbDirect['writing']>} a batch past the direct layer, told to its lease cache */
        let onItsWay = null
        try {
          const message = this.#crossTab ? this.#stamp(group) : null
          for (const op of group.ops) if (op.namespace.cachesWrites) op.namespace.writing(op, wholes)
          // An array batch, not a chained one: with a `sublevel` on every op,
          // abstract-level's chained batch costs more per op (bench/RESULTS.md,
          // model-overhead, "What changed, and why").
          // One flush serves every write of the group: durable writes under
          // concurrency cost little more than relaxed ones.
          // A claim goes only to IndexedDB's add(): elsewhere nothing
          // would refuse a taken value, so the sections run again, reading
          // (a 'write' listener added since they decided). Rejected, not
          // thrown: the flush must stay asynchronous (#commit() starts it).
          if (group.claims && !direct) await Promise.reject(claimRefusal(levelkitError(codes.ABORTED, 'A unique claim could not be made')))
          // A relation's lists mirrored for its IndexedDB index are written only by the direct layer.
          if (!direct && this.idb !== null && this.idb.mirrorsAny(group.ops)) await Promise.reject(mirrorBypass())
          // Seen by the other tabs once it commits, before it lands here.
          if (!direct && this.idb !== null) onItsWay = this.idb.writing(lastOpPerKey(group.ops))
          if (chained) {
            await this.#writeChained(group.ops, sync, group.distinctKeys)
          } else if (direct) {
            const idb = /** @type {import('./idb-direct.js').IdbDirect} */ (this.idb)
            let ops = lastOpPerKey(group.ops)
            // A sequence's value that the group's records make up for
            // (Collection#settleSequence()): one request fewer. (Loops, not
            // map() and filter(): a bulk load's batch has thousands of ops.)
            if (group.unstored) {
              if (ops === group.ops) ops = ops.slice()
              for (let i = 0; i < ops.length; i++) if (ops[i]?.unstored === true) ops[i] = null
            }
            // A claim that a later op of the group replaced is still made
            // (add() before that op): else a taken value would go unseen.
            /** @type {import('./write-scope.js').Op[] | null} */
            let claims = null
            if (group.claims) {
              claims = []
              for (let i = 0; i < ops.length; i++) if (ops[i] === null && group.ops[i].claim === true) claims.push(group.ops[i])
            }
            // With no critical section waiting, none will read in its transaction.
            await idb.write(ops, sync, this.#waiting.length === 0, claims, group.absent)
            if (group.absent !== null) idb.landedAbsent(group.absent, ops)
          } else if (sync) {
            /** @type {any} classic-level's option; others ignore it */
            const options = deferred === null ? { sync: true } : { sync: true, deferredIds: deferred }
            await (this.strict === null ? this.#batch(group.ops, options) : this.strict(() => this.#batch(group.ops, options)))
          } else {
            await this.#batch(group.ops, deferred === null ? undefined : /** @type {any} */ ({ deferredIds: deferred }))
          }
          const ids = deferred === null ? null : this.#realIds(group, deferred)
          // Written past the direct layer: its lease cache learns of it here.
          if (!direct) {
            this.idb?.written(onItsWay)
            onItsWay = null
            this.idb?.landed(lastOpPerKey(group.ops))
          }
          if (ids !== null) this.#patchPlaceholders(group, ids)
          for (const op of group.ops) if (op.namespace.cachesWrites) op.namespace.written(op)
          if (wholes !== null) for (const namespace of wholes) namespace.wholeWritten()
          if (ids === null) this.#forget(group)
          group.resolve(ids)
          this.#notify(group.ops)
          if (message !== null) {
            this.#generation = message.generation
            this.#crossTab?.post(message)
          }
        } catch (err) {
          this.idb?.written(onItsWay)
          onItsWay = null
          for (const op of group.ops) if (op.namespace.cachesWrites) op.namespace.unwritten(op)
          if (wholes !== null) for (const namespace of wholes) namespace.wholeWritten()
          // IndexedDB refused an add(): a claimed value is taken, and the
          // transaction aborted, so nothing of the group was written.
          this.#fail(group, group.claims && /** @type {any} */ (err)?.name === 'ConstraintError' ? claimRefusal(err) : err)
        }
        this.#writing = null
      }
    } finally {
      this.#writing = null
      this.#flushing = null
      if (!this.#locked) this.#idleCrossTab()
    }
  }

  /**
   * The real id of each placeholder of a group its batch wrote: its
   * sequence's first new value (`deferred.bases`, from the backend) plus
   * its rank among that sequence's placeholders.
   * @param {Group} group @param {{ sequences: number[][], bases: number[] | null }} deferred
   * @returns {Map<number, number>}
   */
  #realIds (group, deferred) {
    const bases = deferred.bases
    if (bases === null || bases.length !== deferred.sequences.length) throw levelkitError(codes.INVALID, 'The backend wrote a batch holding placeholder ids without telling the ids it took')
    /** @type {Map<number, number>} */
    const ids = new Map()
    deferred.sequences.forEach((placeholders, i) => placeholders.forEach((placeholder, rank) => ids.set(placeholder, bases[i] + rank)))
    return ids
  }

  /**
   * The group's ops holding placeholders, as written: with the real ids.
   * Out of the overlay first (it is keyed by their keys as decided), and a
   * key that changes leaves the read cache's in-flight count of the old one.
   * @param {Group} group @param {Map<number, number>} ids
   */
  #patchPlaceholders (group, ids) {
    this.#forget(group)
    for (const op of group.ops) {
      if (op.deferred !== true) continue
      const key = substitute(op.key, ids)
      if (key !== op.key) {
        if (op.namespace.cachesWrites) op.namespace.unwritten(op)
        op.key = key
        op.id = undefined
      }
      op.value = substitute(op.value, ids)
      // Computed with the placeholder: a native store computes them again.
      if (op.entries !== undefined) op.entries = undefined
    }
  }

  /**
   * Whether a batch goes to IndexedDB directly (lib/idb-direct.js): in the
   * transaction the critical section read in, with the durability asked.
   * Not when something listens to the root's writes (see #plainRoot()).
   */
  #direct () {
    return this.idb !== null && this.idb.ready && this.#plainRoot()
  }

  /**
   * Whether a chained batch of the root, with keys prefixed here, writes
   * exactly what an array batch of sublevel ops would, and nobody sees the
   * difference: no prewrite hook or 'write' listener on the root (they
   * would see root keys instead of sublevel ops).
   */
  /**
   * Write a group's ops (each key's last op) as one atomic batch of the
   * root. On PostgreSQL (PostgresLevel#levelkitWriteBatch()), with no
   * prewrite hook or 'write' listener on the root, straight to its table:
   * each key prefixed and each value encoded here, as abstract-level's
   * batch() would (its options, encodings and copy of every op, then the
   * backend's own pass for each key's last op, were about a twentieth of
   * the allocation left per createChat once reads went direct; session 22).
   * @param {import('./write-scope.js').Op[]} ops @param {any} options
   * @returns {Promise<void>}
   */
  #batch (ops, options) {
    const root = /** @type {any} */ (this.#root)
    if (this.#tableBatch && root.status === 'open' && this.#plainRoot()) {
      const batch = tableOps(ops)
      return batch.length === 0 ? Promise.resolve() : root.levelkitWriteBatch(batch, options)
    }
    return root.batch(batchOps(ops), options)
  }

  #plainRoot () {
    const root = /** @type {any} */ (this.#root)
    return root.hooks?.prewrite?.noop !== false && root.listenerCount('write') === 0
  }

  /**
   * Write a group's ops (each key's last op) as one chained batch of the
   * root, every key prefixed with its namespace's prefix once, here. For
   * groups of bulk loads: per op, a chained batch of root keys costs
   * classic-level a direct call where an array batch costs it a property
   * lookup per field, and abstract-level's prefixing of sublevel ops costs
   * more than a copy. Measured on classic-level, 200k puts of a bulk
   * load's keys and values in batches of 1000: 1.1-1.3 s of CPU as chained
   * batches of root keys, 1.5-2.0 s as array batches of sublevel ops, 4.1 s
   * as chained batches of sublevel ops (2026-11-26, a loaded 2-core VM).
   * With `distinct` (every section of the group said its keys are
   * distinct: index build batches), the ops go as they are, without a key
   * id and a set lookup per op for lastOpPerKey() (4.8% of a build's CPU
   * profile). A key may still repeat across the group's sections (each
   * build batch puts its progress marker): a chained batch applies its
   * ops in order, so the last op of a key is what is stored, as with
   * lastOpPerKey(), one op more written.
   * @param {import('./write-scope.js').Op[]} ops @param {boolean} sync @param {boolean} distinct
   */
  async #writeChained (ops, sync, distinct) {
    const batch = /** @type {any} */ (this.#root).batch()
    let chunk = new Uint8Array(0)
    let used = 0
    // Runs of ops share a namespace (a build batch's entries): one prefix lookup per run.
    /** @type {import('./namespace.js').Namespace | null} */
    let namespace = null
    /** @type {Uint8Array} */
    let prefix = chunk
    /** @type {typeof UTF8_VALUE | typeof VIEW_VALUE} */
    let putOptions = VIEW_VALUE
    try {
      for (const op of distinct || increasingKeys(ops) ? ops : lastOpPerKey(ops)) {
        if (op === null) continue
        if (op.namespace !== namespace) {
          namespace = op.namespace
          prefix = this.#prefixBytes(namespace)
          putOptions = namespace.valueEncoding === 'utf8' ? UTF8_VALUE : VIEW_VALUE
        }
        const length = prefix.length + op.key.length
        if (used + length > chunk.length) {
          chunk = new Uint8Array(Math.max(KEY_CHUNK, length))
          used = 0
        }
        const key = chunk.subarray(used, used + length)
        used += length
        key.set(prefix, 0)
        key.set(op.key, prefix.length)
        if (op.type === 'put') batch.put(key, op.value, putOptions)
        else batch.del(key, VIEW_VALUE)
      }
    } catch (err) {
      await batch.close()
      throw err
    }
    await batch.write(sync ? SYNC : undefined)
  }

  /** @type {Map<import('./namespace.js').Namespace, Uint8Array>} */
  #prefixes = new Map()

  /**
   * A namespace's key prefix as bytes, relative to the root (which may
   * itself be a sublevel, with a prefix of its own).
   * @param {import('./namespace.js').Namespace} namespace
   */
  #prefixBytes (namespace) {
    let bytes = this.#prefixes.get(namespace)
    if (bytes === undefined) {
      const own = /** @type {any} */ (this.#root).prefix ?? ''
      bytes = new TextEncoder().encode(namespace.prefix.slice(own.length))
      this.#prefixes.set(namespace, bytes)
    }
    return bytes
  }

  /**
   * Drop a written group's ops from the overlay. Its ops that were never
   * indexed are the first ones of #unindexed: groups are written in order.
   * @param {Group} group
   */
  #forget (group) {
    let k = 0
    for (const op of group.ops) {
      if (this.#unindexed[k] === op) k++
      else if (op.id !== undefined && this.#overlay.get(op.id) === op) this.#overlay.delete(op.id)
    }
    if (k > 0) this.#unindexed.splice(0, k)
  }

  /** @param {Group} group @param {unknown} err */
  #fail (group, err) {
    this.lastError = err
    this.#epoch++
    // A refused claim: nothing of the group was written, for sure (IndexedDB
    // aborted its transaction, or it was never sent).
    const refused = /** @type {any} */ (err)?.[CLAIM_REFUSED] === true
    if (!refused) this.#failures++
    // Sections that may run again and have not settled run again now (their
    // group, or one they waited for, failed): later sections wait for them.
    if (refused) for (const call of this.#mayRerun) this.#due.add(call)
    if (this.#crossTab) {
      if (refused && this.#keyLocks === null) {
        // The holding goes on: its batches are numbered as if this one had
        // not been (the others count them), and the lock is kept.
        this.#sequence--
      } else {
        // The batch may have committed or not: the generation is unknown,
        // and the next critical section takes the lock again to read it.
        this.#generation = null
        this.#crossTabStale = true
      }
    }
    const queued = this.#group
    group.reject(err)
    // Groups queued behind the failed one were decided on top of it.
    if (queued) {
      queued.reject(levelkitError(codes.ABORTED, 'Write aborted because an earlier write failed', { cause: err }))
      this.#group = null
    }
    this.#overlay.clear()
    this.#unindexed.length = 0
    if (refused) {
      // Cached values the failed groups decided: only their keys (the
      // direct layer forgot what reads in the aborted transaction saw).
      for (const failed of queued ? [group, queued] : [group]) {
        for (const op of failed.ops) {
          op.namespace.cache?.delete(bytesToBinaryString(op.key))
          const id = op.id ?? (op.id = op.namespace.keyId(op.key))
          this.sectionCache?.delete(id)
          this.sharedReads?.delete(id)
          this.idb?.forget(id)
        }
      }
      return
    }
    // Cached values may come from the failed groups.
    this.idb?.clearCache()
    for (const namespace of this.#cachedNamespaces) namespace.cache?.clear()
    this.sectionCache?.clear()
    this.sharedReads?.clear()
  }

  /**
   * Call `listener` with the ops of every batch once it is written.
   * @param {(ops: import('./write-scope.js').Op[]) => void} listener
   * @returns {() => void} removes the listener
   */
  onWritten (listener) {
    this.#listeners.add(listener)
    return () => { this.#listeners.delete(listener) }
  }

  /**
   * Call `listener` once, when close() starts.
   * @param {() => void} listener
   * @returns {() => void} removes the listener
   */
  onClose (listener) {
    this.#closeListeners.add(listener)
    return () => { this.#closeListeners.delete(listener) }
  }

  /**
   * Call `listener` with what another tab or process says of each batch it
   * wrote, as it is heard, and with null when this writer takes the
   * cross-tab lock and finds writes it did not hear of (lib/schema-watch.js).
   * @param {(message: import('./cross-tab.js').RemoteMessage | null) => void} listener
   * @returns {() => void} removes the listener
   */
  onRemote (listener) {
    this.#remoteListeners.add(listener)
    return () => { this.#remoteListeners.delete(listener) }
  }

  /**
   * How many write and close listeners are registered (watchers hold one of
   * each while they run): for tests and diagnostics.
   */
  get listenerCounts () {
    return { written: this.#listeners.size, close: this.#closeListeners.size }
  }

  /** @param {import('./write-scope.js').Op[]} ops */
  #notify (ops) {
    for (const listener of this.#listeners) {
      try {
        listener(ops)
      } catch {
        // A listener's failure must not fail the write it observes.
      }
    }
  }

  /**
   * Another tab or process wrote a batch: forget what it changed, count it
   * as a decision for the transactions running, and tell the listeners
   * (watchers). Ops in namespaces not declared here concern none of them.
   * A batch whose keys are unknown (too many to tell, or notifications
   * missed) changed anything in its namespaces (every one, without
   * prefixes): its ops are `any` ops, one per namespace.
   * @param {import('./cross-tab.js').RemoteMessage} message
   */
  #heard (message) {
    // A holding's end carries no ops: nothing for the listeners (lib/schema-watch.js) to look at.
    if (message.end !== true) for (const listener of this.#remoteListeners) listener(message)
    const { generation, ops: remote } = message
    const known = remote !== null
    // Heard of before this writer took the lock: counted then (forgotten, or not heard of in time and everything forgotten).
    const mine = this.#generation
    const counted = generation !== null && mine !== null && (generation < mine || (generation === mine && !this.#generationOpen))
    if (generation !== null && !counted) this.#count(generation, message)
    // A holding's end: how many batches it wrote.
    if (message.end === true) return
    /** @type {import('./write-scope.js').Op[]} */
    const ops = []
    if (known) {
      for (const { prefix, type, key } of remote) {
        // By its id (Namespace#keyId()): a namespace not declared here may still have been read.
        if (!counted) this.idb?.forget(prefix + bytesToBinaryString(key))
        const namespace = namespaceByPrefix(this.#root, prefix)
        if (!namespace) continue
        ops.push({ type, key, namespace, sublevel: namespace.sublevel })
        if (counted) continue
        namespace.cache?.delete(bytesToBinaryString(key))
        if (namespace.readCache !== null || namespace.listCache !== null) namespace.clearReadCaches()
        this.sectionCache?.delete(namespace.keyId(key))
        this.sharedReads?.delete(namespace.keyId(key))
      }
    } else {
      const namespaces = message.prefixes === null ? [...namespacesOf(this.#root)] : message.prefixes.map(prefix => namespaceByPrefix(this.#root, prefix))
      for (const namespace of namespaces) {
        if (!namespace || namespace === this.#generationSpace) continue
        ops.push({ type: 'put', key: new Uint8Array(0), namespace, sublevel: namespace.sublevel, any: true })
        if (counted) continue
        namespace.cache?.clear()
        namespace.clearReadCaches()
        this.sectionCache?.clear()
        this.sharedReads?.clear()
      }
    }
    // With key locks, a transaction checks the values it read again under
    // their locks at commit: a batch heard of late would only fail it for nothing.
    if (!counted && this.#keyLocks === null && this.#transactions.size > 0 && !(known === false && this.validatesByValue)) {
      const at = ++this.#decisions
      if (!known) this.#unknownAt = at
      else {
        for (const op of ops) {
          op.id = op.namespace.keyId(op.key)
          this.#changedAt.set(op.id, at)
          this.#changes.push({ at, op })
        }
      }
    }
    if (ops.length > 0) this.#notify(ops)
  }

  /**
   * Count a message of another writer's holding `generation`. A batch's
   * number comes one after the last heard (one writer's messages arrive in
   * order): else one was missed. Without a number (a gap notice), nothing
   * of the holding is known.
   * @param {number} generation @param {import('./cross-tab.js').RemoteMessage} message
   */
  #count (generation, message) {
    let heard = this.#heardGenerations.get(generation)
    if (heard === undefined) {
      // The holding ready() read as open may have written batches before this writer listened.
      const before = generation === this.#generation && this.#generationOpen && typeof message.sequence === 'number' && message.end !== true ? message.sequence - 1 : 0
      this.#heardGenerations.set(generation, heard = { batches: before, whole: true, end: -1 })
    }
    const sequence = message.sequence
    if (typeof sequence !== 'number') heard.whole = false
    else if (message.end === true) heard.end = sequence
    else if (sequence !== heard.batches + 1 || message.ops === null) {
      heard.whole = false
      heard.batches = sequence
    } else heard.batches = sequence
  }

  /** @param {import('./namespace.js').Namespace} namespace a namespace whose values are cached */
  registerCache (namespace) {
    this.#cachedNamespaces.add(namespace)
  }
}

/**
 * The generation and number of the batch stored under BATCH_KEY, if any.
 * @param {any} value
 * @returns {[number, number] | null}
 */
function batchOf (value) {
  if (value === undefined) return null
  const [generation, sequence] = String(value).split(' ').map(Number)
  return Number.isSafeInteger(generation) && Number.isSafeInteger(sequence) ? [generation, sequence] : null
}

/** Order of two batches by generation, then number. @param {[number, number]} a @param {[number, number]} b */
function compareBatches (a, b) {
  return a[0] - b[0] || a[1] - b[1]
}

/**
 * A group's placeholder ids by sequence, each list in the order taken.
 * @param {Array<{ id: number, sequence: Namespace }>} placeholders
 */
function placeholdersBySequence (placeholders) {
  /** @type {Map<Namespace, number[]>} */
  const by = new Map()
  for (const { id, sequence } of placeholders) {
    const list = by.get(sequence)
    if (list === undefined) by.set(sequence, [id])
    else list.push(id)
  }
  return [...by.values()]
}

/**
 * The batch for a group's ops: each key's last op only, in order. Within
 * one atomic batch an op that a later op of the same key replaces changes
 * nothing, and each op costs the batch time (classic-level converts every
 * one): a relation list rewritten per edge, or a chat record updated by
 * every message of a group, is written once (bench/RESULTS.md,
 * chat-workload, session 3: "One op per key per group commit").
 * @param {import('./write-scope.js').Op[]} ops
 */
function batchOps (ops) {
  /** @type {any[]} abstract-level batch operations */
  const batch = []
  for (const op of lastOpPerKey(ops)) {
    if (op === null) continue
    batch.push(op.type === 'put'
      // A sequence a deferred insert raised: its batch's statement bumps it (Writer#takePlaceholder()).
      ? op.deferredSequence === true ? { type: 'put', key: op.key, value: op.value, sublevel: op.sublevel, deferredSequence: true } : { type: 'put', key: op.key, value: op.value, sublevel: op.sublevel }
      : { type: 'del', key: op.key, sublevel: op.sublevel })
  }
  return batch
}

/**
 * batchOps() for PostgresLevel#levelkitWriteBatch(): whole keys of the table
 * (the namespace's sublevel prefix and the key) and values encoded as
 * abstract-level's batch() encodes them for a backend that stores buffers
 * (level-transcoder's utf8+buffer: a Buffer as it is, another view over
 * the same memory, anything else its UTF-8 bytes).
 * @param {import('./write-scope.js').Op[]} ops
 */
function tableOps (ops) {
  const kept = lastOpPerKey(ops)
  /** @type {Array<{ type: 'put' | 'del', key: Buffer, value?: Buffer, deferredSequence?: boolean }>} */
  const batch = []
  for (let i = 0; i < kept.length; i++) {
    const op = kept[i]
    if (op === null) continue
    const key = op.sublevel.prefixKey(op.key, 'buffer', false)
    if (op.type !== 'put') {
      batch.push({ type: 'del', key })
      continue
    }
    const data = op.value
    const value = Buffer.isBuffer(data) ? data : ArrayBuffer.isView(data) ? Buffer.from(data.buffer, data.byteOffset, data.byteLength) : Buffer.from(String(data), 'utf8')
    batch.push(op.deferredSequence === true ? { type: 'put', key, value, deferredSequence: true } : { type: 'put', key, value })
  }
  return batch
}

/**
 * Whether the keys of `ops` increase within each namespace, so that no key
 * has two ops: a sorted bulk load's group (its records, and index entries
 * of values that increase with them) is then written as it is, without a
 * lookup id per op for lastOpPerKey() (bench/RESULTS.md, sorted-write).
 * @param {import('./write-scope.js').Op[]} ops
 */
export function increasingKeys (ops) {
  /** @type {Map<import('./namespace.js').Namespace, Uint8Array>} the last key of each namespace but the last op's */
  const last = new Map()
  let namespace = null
  /** @type {Uint8Array | undefined} */
  let previous
  for (const op of ops) {
    if (op.namespace !== namespace) {
      if (namespace !== null) last.set(namespace, /** @type {Uint8Array} */ (previous))
      namespace = op.namespace
      previous = last.get(namespace)
    }
    if (previous !== undefined && compareBytes(previous, op.key) >= 0) return false
    previous = op.key
  }
  return true
}

/**
 * `ops` with every op that a later op of the same key replaces as null.
 * @param {import('./write-scope.js').Op[]} ops
 * @returns {Array<import('./write-scope.js').Op | null>}
 */
function lastOpPerKey (ops) {
  if (ops.length <= 1) return ops
  const seen = new Set()
  const kept = new Array(ops.length)
  for (let i = ops.length - 1; i >= 0; i--) {
    const op = ops[i]
    if (op.id === undefined) op.id = op.namespace.keyId(op.key)
    if (seen.has(op.id)) kept[i] = null
    else {
      seen.add(op.id)
      kept[i] = op
    }
  }
  return kept
}

// Root keys of a chained batch are cut from chunks of this many bytes.
const KEY_CHUNK = 16384

// The options of a chained batch's ops: keys are bytes, values as their
// namespace stores them.
const UTF8_VALUE = Object.freeze({ keyEncoding: 'view', valueEncoding: 'utf8' })
const VIEW_VALUE = Object.freeze({ keyEncoding: 'view', valueEncoding: 'view' })
/** @type {any} classic-level's option; others ignore it */
const SYNC = Object.freeze({ sync: true })

/**
 * @typedef {object} HintedKey a key Writer#hintedReads() takes
 * @property {string} id its Namespace#keyId()
 * @property {Namespace} namespace
 * @property {Uint8Array} key in its namespace
 * @property {Buffer} whole with its namespace's prefix: the table's key
 */

/**
 * @typedef {object} ReadHint keys a critical section will read (readHints)
 * @property {Namespace} namespace
 * @property {Uint8Array[]} keys
 */

/**
 * @typedef {object} KeyLocks the key locks of lib/backends/postgres-keylocks.js, as the write path uses them
 * @property {(prefix: string, keys: Uint8Array[], shared?: boolean, sequence?: boolean) => Promise<void> | null} lock `sequence`: the keys are sequence keys (a cached namespace's)
 * @property {boolean} [locksShared] whether lock() takes `shared` locks (locking: 'keys'; otherwise every lock is exclusive)
 * @property {() => Promise<void> | null} lockRanges
 * @property {(err: unknown) => boolean} busy whether `err` asks for the critical section to run again
 * @property {boolean} [rerunsGroups] with locking: 'serializable': a group whose transaction failed at its batch or COMMIT runs its sections again
 * @property {<T>(fn: () => Promise<T> | T, untracked?: boolean) => Promise<T> | T} [within] runs a critical section (its reads go to the transaction; an untracked one's only as its scope starts them)
 * @property {number} [maxReruns] how many times a critical section runs again at most (busy() each time), before it fails with LEVELKIT_CONFLICT
 * @property {() => Promise<void>} idle ends the key transaction, if open
 * @property {() => number} [snapshotMark] with locking: 'serializable': taken as a critical section is called
 * @property {(mark: number) => boolean} [snapshotTakenBefore] whether the open transaction's snapshot may predate the section that took `mark` (it then runs in a new one)
 * @property {(listener: () => void) => void} onEnd
 * @property {(limit: number) => ({ keys: Buffer[], found: (values: Map<string, Buffer>) => void } | null)} [hintedReads] with locking: 'serializable': set by the writer (Writer#hintedReads())
 * @property {boolean} [defersSequences] whether a batch may hold placeholder ids its statement takes (lib/deferred-ids.js)
 * @property {number} requests how many lock requests were made
 * @property {number} [failed] how many lock requests failed with an error busy() accepts
 * @property {unknown} [lastFailure] the last of them
 * @property {{ retries: number, sections?: number }} stats `sections`: critical sections run (each run counted)
 * @property {(message: import('./cross-tab.js').RemoteMessage, counters: Array<{ prefix: string, key: Uint8Array }>) => void} stage `counters`: the batch's sequence keys
 */

/**
 * @typedef {object} Heard what a writer heard of another writer's holding
 * @property {number} batches the number of the last batch heard
 * @property {boolean} whole whether every batch up to it was heard, key by key
 * @property {number} end how many batches the holding wrote, once it ended (else -1)
 */

/**
 * A critical section is about to run again after `failure` (keyLocks.busy()
 * told so): count it, or give up with LEVELKIT_CONFLICT past
 * keyLocks.maxReruns, so that processes failing each other's transactions
 * forever (a livelock) end in an error rather than a hang.
 * @param {KeyLocks} keyLocks @param {{ made: number }} reruns @param {unknown} failure
 */
function rerun (keyLocks, reruns, failure) {
  const max = keyLocks.maxReruns ?? Infinity
  if (reruns.made >= max) {
    const state = /** @type {any} */ (failure)?.cause?.code ?? /** @type {any} */ (failure)?.code
    throw levelkitError(codes.CONFLICT, `A critical section ran ${reruns.made + 1} times, each time failed by another process's transaction${typeof state === 'string' ? ` (${state})` : ''}: gave up after maxReruns (${max}) reruns`, { cause: failure, reruns: reruns.made })
  }
  reruns.made++
}

// How a critical section runs (Writer#runOnce()).
const PLAIN = 0
const RERUNS = 1
const CLAIMS = 2

/**
 * A batch that would write a relation's mirrored lists past the direct
 * layer (a 'write' listener or prewrite hook on the root): its IndexedDB
 * index would go stale, so it is refused.
 */
function mirrorBypass () {
  return levelkitError(codes.FORBIDDEN, 'This batch writes the lists of a relation whose reverse direction is an IndexedDB index (native: [\'from\']), which only levelkit\'s IndexedDB layer keeps in step: remove the \'write\' listener or prewrite hook on the database\'s root (db.level) before writing it')
}

/** @param {unknown} err @returns {any} err, marked as a refused claim */
function claimRefusal (err) {
  /** @type {any} */ (err)[CLAIM_REFUSED] = true
  return err
}

/**
 * Whether `err` is a refused claim of the section's group, or an abort
 * because a group it was decided on failed so.
 * @param {unknown} err
 */
function claimRefused (err) {
  const e = /** @type {any} */ (err)
  return e?.[CLAIM_REFUSED] === true || (e?.code === codes.ABORTED && e.cause?.[CLAIM_REFUSED] === true)
}

class Group {
  constructor () {
    /** whether a section of the group claimed a unique value (see Writer#run()) */
    this.claims = false
    /** whether a section of the group may not run again */
    this.plain = false
    /** whether a bulk load's batch is in the group: then it is written as a chained batch (see #writeChained()) */
    this.bulk = false
    /** whether every section of the group said no two of its ops have one key (see #writeChained()) */
    this.distinctKeys = true
    /** @type {import('./write-scope.js').Op[]} */
    this.ops = []
    /** whether some write of the group asked for its batch to be flushed to disk */
    this.sync = false
    /** @type {string[] | null} ids of keys its sections knew hold nothing (WriteScope#absent()) */
    this.absent = null
    /** @type {Array<{ id: number, sequence: Namespace }>} the placeholder ids its sections took, in order (Writer#takePlaceholder()) */
    this.placeholders = []
    /** whether an op of the group is `unstored` (see Op in lib/write-scope.js) */
    this.unstored = false
    /** @type {(value?: any) => void} */
    this.resolve = noop
    /** @type {(reason?: any) => void} */
    this.reject = noop
    this.settled = false
    /** @type {Promise<void>} */
    this.promise = new Promise((resolve, reject) => {
      this.resolve = (value) => { this.settled = true; resolve(value) }
      this.reject = (reason) => { this.settled = true; reject(reason) }
    })
  }
}
