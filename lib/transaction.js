import { compareBytes } from './tuple.js'
import { invalid } from './errors.js'

/**
 * @typedef {{ type: 'put' | 'del', id: string, key: Uint8Array, value?: any, sublevel: any, space: import('./space.js').Space }} Op
 * @typedef {{ gt?: Uint8Array, gte?: Uint8Array, lt?: Uint8Array, lte?: Uint8Array }} Bounds
 */

/**
 * The state one critical section reads and writes: its own ops first, then
 * ops decided by earlier critical sections but not yet written, then the
 * database. Instances are what `db.write()` hands to its callback (as `w`).
 */
export class Transaction {
  /** @param {import('./writer.js').Writer} writer */
  constructor (writer) {
    this.writer = writer
    this.epoch = writer.epoch
    /** @type {Op[]} */
    this.ops = []
    /** @type {Map<string, Op>} */
    this.local = new Map()
    this.open = true
    /** @type {Promise<unknown>} */
    this.tail = Promise.resolve()
  }

  /**
   * Run one model operation inside this scope: after the previous one, and
   * all-or-nothing (if it throws, the ops it added are taken back).
   * @template T
   * @param {(tx: Transaction) => Promise<T> | T} fn
   * @returns {Promise<T>}
   */
  atomic (fn) {
    const run = async () => {
      this.assertOpen()
      const mark = this.ops.length
      try {
        return await fn(this)
      } catch (err) {
        this.#rollback(mark)
        throw err
      }
    }
    const result = this.tail.then(run, run)
    this.tail = result.catch(noop)
    return result
  }

  /** @param {number} mark */
  #rollback (mark) {
    if (this.ops.length === mark) return
    this.ops.length = mark
    this.local.clear()
    for (const op of this.ops) this.local.set(op.id, op)
  }

  close () {
    this.open = false
  }

  assertOpen () {
    if (!this.open) throw invalid('This write scope has ended: use it only inside its db.write() callback, before that callback returns')
  }

  /**
   * The current raw value of `key`, or undefined. Returns a value directly
   * when it can be read synchronously, else a promise.
   * @param {import('./space.js').Space} space
   * @param {Uint8Array} key
   * @returns {any}
   */
  get (space, key) {
    // Nothing decided and unwritten: skip building the lookup key.
    if (this.local.size === 0 && this.writer.overlay.size === 0) return space.read(key, this.writer.syncReads)
    const id = space.id(key)
    const op = this.local.get(id) || this.writer.overlay.get(id)
    if (op !== undefined) return op.type === 'put' ? op.value : undefined
    return space.read(key, this.writer.syncReads)
  }

  /** @param {import('./space.js').Space} space @param {Uint8Array} key @param {any} value */
  put (space, key, value) {
    this.#push({ type: 'put', id: space.id(key), key, value, sublevel: space.sublevel, space })
  }

  /** @param {import('./space.js').Space} space @param {Uint8Array} key */
  del (space, key) {
    this.#push({ type: 'del', id: space.id(key), key, sublevel: space.sublevel, space })
  }

  /** @param {Op} op */
  #push (op) {
    this.assertOpen()
    this.local.set(op.id, op)
    this.ops.push(op)
  }

  /**
   * All current entries of `space` within `bounds`, in key order, as
   * [key, value] pairs. Waits for decided ops to be written first: range reads
   * cannot be served by the overlay, and while this critical section runs no
   * new ops can be decided.
   *
   * @param {import('./space.js').Space} space
   * @param {Bounds} bounds
   * @param {{ values?: boolean }} [options]
   * @returns {Promise<Array<[Uint8Array, any]>>}
   */
  async entries (space, bounds, options) {
    await this.writer.drain()
    const values = options?.values !== false
    const stored = await space.sublevel.iterator({ ...bounds, values }).all()
    /** @type {Map<string, [Uint8Array, any]>} */
    const merged = new Map()
    for (const [key, value] of stored) merged.set(space.id(key), [key, value])
    let changed = false
    for (const op of this.local.values()) {
      if (op.space !== space || !within(op.key, bounds)) continue
      changed = true
      if (op.type === 'put') merged.set(op.id, [op.key, op.value])
      else merged.delete(op.id)
    }
    const result = Array.from(merged.values())
    if (changed) result.sort((a, b) => compareBytes(a[0], b[0]))
    return result
  }
}

function noop () {}

/** @param {Uint8Array} key @param {Bounds} bounds */
function within (key, bounds) {
  if (bounds.gte && compareBytes(key, bounds.gte) < 0) return false
  if (bounds.gt && compareBytes(key, bounds.gt) <= 0) return false
  if (bounds.lte && compareBytes(key, bounds.lte) > 0) return false
  if (bounds.lt && compareBytes(key, bounds.lt) >= 0) return false
  return true
}
