// Instrumented backends for behaviour and fault checks. Sublevels forward to
// their root's private methods (_iterator, _batch, ...), so counting on the
// root sees every read and write made through any sublevel.
import { MemoryLevel } from 'memory-level'

/** @returns {Counts} */
function zeroCounts () {
  return { entriesRead: 0, iterators: 0, gets: 0, puts: 0, dels: 0, batches: 0, writeEvents: 0 }
}

/**
 * @typedef {object} Counts
 * @property {number} entriesRead entries (or keys, or values) yielded by iterators
 * @property {number} iterators iterators created
 * @property {number} gets point reads (_get, and one per key of _getMany)
 * @property {number} puts physical single puts
 * @property {number} dels physical single deletes
 * @property {number} batches physical batches (a chained batch counts once)
 * @property {number} writeEvents 'write' events on the root (one per atomic write)
 */

/**
 * The iterator methods an implementation provides (abstract-level's
 * implementer interface): the public next()/nextv()/all() and async
 * iteration all end up in these. Not part of abstract-level's types.
 * @typedef {{
 *   _next (...args: any[]): Promise<any>,
 *   _nextv (...args: any[]): Promise<any[]>,
 *   _all (...args: any[]): Promise<any[]>
 * }} PrivateIterator
 */

/**
 * The private methods of memory-level that InstrumentedLevel overrides and
 * calls through `super` (abstract-level's implementer interface).
 * @typedef {{
 *   _get (key: any, options: any): Promise<any>,
 *   _getSync (key: any, options: any): any,
 *   _getMany (keys: any[], options: any): Promise<any[]>,
 *   _put (key: any, value: any, options: any): Promise<void>,
 *   _del (key: any, options: any): Promise<void>,
 *   _batch (operations: any[], options: any): Promise<void>,
 *   _iterator (options: any): PrivateIterator,
 *   _keys (options: any): PrivateIterator,
 *   _values (options: any): PrivateIterator
 * }} PrivateMethods
 */

/**
 * MemoryLevel itself, typed with its private methods: memory-level's types
 * declare only the public API, so this is the one place they are reached
 * through `any`. At runtime this is exactly MemoryLevel.
 * @type {new (options?: any) => MemoryLevel<string, string> & PrivateMethods}
 */
const MemoryLevelWithPrivates = /** @type {any} */ (MemoryLevel)

/**
 * A memory-level that counts what it is asked to do. Memory-level does not
 * prefetch, so "entries read" is exactly what the learner's range pulled.
 */
export class InstrumentedLevel extends MemoryLevelWithPrivates {
  /** @param {any} [options] */
  constructor (options) {
    super(options)
    this.counts = zeroCounts()
    /** @type {null | (() => number)} milliseconds to delay each _get by, to expose races */
    this.getLatency = null
    /** @type {null | ((op: any) => boolean)} a physical batch holding a matching op throws */
    this.failBatch = null
    this.on('write', () => { this.counts.writeEvents++ })
  }

  resetCounts () {
    this.counts = zeroCounts()
  }

  /**
   * Run fn and return what it changed in the counters.
   * @param {() => any} fn
   */
  async measure (fn) {
    const before = { ...this.counts }
    const outcome = await attempt(fn)
    const counts = /** @type {Counts} */ ({})
    for (const key of /** @type {Array<keyof Counts>} */ (Object.keys(before))) counts[key] = this.counts[key] - before[key]
    return { ...outcome, counts }
  }

  async #delay () {
    const ms = this.getLatency ? this.getLatency() : 0
    if (ms > 0) await new Promise(resolve => setTimeout(resolve, ms))
  }

  /** @param {any} key @param {any} options */
  async _get (key, options) {
    this.counts.gets++
    // Read first, answer late: like a slow disk, the value is the one at the
    // time of the request, so two overlapping read-then-write calls both
    // see the same old value.
    const value = await super._get(key, options)
    await this.#delay()
    return value
  }

  /** @param {any} key @param {any} options */
  _getSync (key, options) {
    this.counts.gets++
    return super._getSync(key, options)
  }

  /** @param {any[]} keys @param {any} options */
  async _getMany (keys, options) {
    this.counts.gets += keys.length
    const values = await super._getMany(keys, options)
    await this.#delay()
    return values
  }

  /** @param {any} key @param {any} value @param {any} options */
  async _put (key, value, options) {
    this.counts.puts++
    return super._put(key, value, options)
  }

  /** @param {any} key @param {any} options */
  async _del (key, options) {
    this.counts.dels++
    return super._del(key, options)
  }

  /** @param {any[]} operations @param {any} options */
  async _batch (operations, options) {
    this.counts.batches++
    if (this.failBatch && operations.some(this.failBatch)) {
      throw new Error('Injected batch failure')
    }
    return super._batch(operations, options)
  }

  /** @param {any} options */
  _iterator (options) {
    return this.#count(super._iterator(options))
  }

  /** @param {any} options */
  _keys (options) {
    return this.#count(super._keys(options))
  }

  /** @param {any} options */
  _values (options) {
    return this.#count(super._values(options))
  }

  /**
   * Wrap the private read methods of one iterator instance: the public
   * next()/nextv()/all() and async iteration all end up in these.
   * @param {PrivateIterator} iterator
   * @returns {PrivateIterator}
   */
  #count (iterator) {
    const counts = () => this.counts
    counts().iterators++
    const next = iterator._next
    const nextv = iterator._nextv
    const all = iterator._all
    iterator._next = async function (...args) {
      const item = await next.apply(this, args)
      if (item !== undefined) counts().entriesRead++
      return item
    }
    iterator._nextv = async function (...args) {
      const items = await nextv.apply(this, args)
      counts().entriesRead += items.length
      return items
    }
    iterator._all = async function (...args) {
      const items = await all.apply(this, args)
      counts().entriesRead += items.length
      return items
    }
    return iterator
  }
}

/**
 * The full key of a write op as a string, whether it came as a sublevel op
 * of a root batch (key plus op.sublevel) or already prefixed (sublevel.put).
 * @param {any} op
 */
export function opKeyString (op) {
  const text = (/** @type {string | Uint8Array} */ k) => typeof k === 'string' ? k : Buffer.from(k).toString('latin1')
  // A root batch op routed with `sublevel` still carries the key the learner
  // gave (say a tuple array): encode it the way that sublevel will.
  const raw = op.sublevel && typeof op.key !== 'string' && !ArrayBuffer.isView(op.key)
    ? op.sublevel.keyEncoding().encode(op.key)
    : op.key
  const key = text(raw)
  return op.sublevel ? op.sublevel.prefix + key : key
}

/**
 * Make every write to a matching key fail, through a root prewrite hook: the
 * whole put/del/batch is refused before anything of it is written, the way a
 * full disk or a crash would refuse it.
 * @param {import('abstract-level').AbstractLevel<any, any, any>} db the root
 * @param {string | RegExp} match a full key (with sublevel prefix) or a pattern
 * @returns {() => void} removes the fault
 */
export function failWritesTo (db, match) {
  const hook = (/** @type {any} */ op) => {
    const key = opKeyString(op)
    if (typeof match === 'string' ? key === match : match.test(key)) {
      throw new Error(`Injected write failure on ${key}`)
    }
  }
  db.hooks.prewrite.add(hook)
  return () => db.hooks.prewrite.delete(hook)
}

/**
 * Every entry of a database as [key, value] strings in key order: the
 * "state" a state check compares. Keys and values are read raw (utf8 where
 * they are text, hex otherwise) so prefixes and encodings are visible.
 * @param {any} db
 */
export async function dump (db) {
  const entries = []
  for await (const [key, value] of db.iterator({ keyEncoding: 'view', valueEncoding: 'view' })) {
    entries.push([show(key), show(value)])
  }
  return entries
}

const decoder = new TextDecoder('utf-8', { fatal: true })

/** @param {Uint8Array} bytes */
function show (bytes) {
  try {
    const text = decoder.decode(bytes)
    // Control characters make a diff unreadable; those keys are binary.
    // eslint-disable-next-line no-control-regex
    if (!/[\u0000-\u0008\u000e-\u001f]/.test(text)) return text
  } catch {}
  return 'hex:' + Buffer.from(bytes).toString('hex')
}

/**
 * Run fn and capture its outcome as data that survives IPC: a thrown error
 * becomes { threw: { name, code, message } }.
 * @param {() => any} fn
 */
export async function attempt (fn) {
  try {
    return { value: await fn() }
  } catch (err) {
    return { threw: describeError(err) }
  }
}

/**
 * Run fn like attempt(), and also list the status, at the moment fn's
 * promise settled, of every database of class `Level` it opened: 'closed'
 * after an awaited close(), 'closing' if close() was called but not awaited
 * (its native half still runs on the thread pool), 'open' without close().
 * Seen only if the learner's module imports the same copy of the package as
 * the verifier (it does unless their folder has its own node_modules).
 * @param {{ prototype: any }} Level e.g. ClassicLevel
 * @param {() => any} fn
 * @returns {Promise<{ value?: any, threw?: any, statuses: string[] }>}
 */
export async function attemptTrackingOpens (Level, fn) {
  const proto = Level.prototype
  const open = proto._open
  /** @type {Set<any>} */
  const opened = new Set()
  proto._open = function (/** @type {any[]} */ ...args) {
    opened.add(this)
    return open.apply(this, args)
  }
  try {
    const outcome = await attempt(fn)
    // No await between fn settling and here: a close() not awaited is
    // still 'closing', since its end needs a turn of the event loop.
    return { ...outcome, statuses: [...opened].map(db => db.status) }
  } finally {
    proto._open = open
  }
}

/** @param {any} err */
export function describeError (err) {
  if (err && typeof err === 'object') {
    return { name: err.name, code: err.code, message: err.message }
  }
  return { name: 'Error', code: undefined, message: String(err) }
}
