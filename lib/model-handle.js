import { WriteScope } from './write-scope.js'
import { Transaction, nextAge, pointBounds, DEFAULT_LOCK_TIMEOUT } from './transaction.js'
import { invalid, codes } from './errors.js'
import { unreadable } from './common.js'
import { currentScope } from '#context'

/**
 * Runs a model operation: on its own (one critical section, one batch), or
 * as part of a db.write() scope. Within a scope, operations run one after the
 * other and each is all-or-nothing, so a failed operation that the callback
 * catches leaves nothing of itself in the batch.
 *
 * @template T
 * @param {import('./writer.js').Writer} writer
 * @param {WriteScope | null} scope
 * @param {(scope: WriteScope) => Promise<T> | T} fn
 * @param {boolean} [rerunnable] `fn` may run again (see Writer#run())
 * @returns {Promise<T>}
 */
function runWrite (writer, scope, fn, rerunnable = false) {
  if (scope === null) {
    const refused = refuseInsideScope(writer)
    if (refused) return Promise.reject(refused)
    return writer.locks.active ? writeRespectingLocks(writer, fn) : writer.run(fn, false, null, rerunnable)
  }
  // atomic() refuses (with a rejected promise) once the scope has ended.
  return scope.atomic(fn)
}

/**
 * A model operation outside any scope while transactions hold locks: if it
 * decides to write a key another transaction has locked, it decides
 * nothing, waits for a write lock on that key (outside the critical
 * section, where the lock holder's commit must get in), and runs again. Its
 * write locks are released once it is written.
 * @template T
 * @param {import('./writer.js').Writer} writer
 * @param {(scope: WriteScope) => Promise<T> | T} fn
 * @returns {Promise<T>}
 */
async function writeRespectingLocks (writer, fn) {
  const locks = writer.locks
  const owner = { age: nextAge() }
  const options = { timeout: DEFAULT_LOCK_TIMEOUT }
  try {
    for (let deadlocks = 0; ;) {
      /** @type {import('./write-scope.js').Op | undefined} */
      let blocked
      try {
        return await writer.run(async scope => {
          const result = await fn(scope)
          blocked = locks.active ? scope.ops.find(op => locks.isBlocked(owner, op.namespace.prefix, pointBounds(op.key), 'write')) : undefined
          if (blocked !== undefined) throw LOCKED
          return result
        })
      } catch (err) {
        if (err !== LOCKED) throw err
      }
      const op = /** @type {import('./write-scope.js').Op} */ (blocked)
      try {
        await locks.acquire(owner, op.namespace.prefix, pointBounds(op.key), 'write', options)
      } catch (err) {
        // The youngest in a deadlock: let the others through, then again.
        if (/** @type {any} */ (err)?.code !== codes.DEADLOCK || ++deadlocks > MAX_DEADLOCKS) throw err
        locks.release(owner)
      }
    }
  } finally {
    locks.release(owner)
  }
}

// Thrown inside the critical section to take back what it decided.
const LOCKED = Symbol('locked')
const MAX_DEADLOCKS = 10

/**
 * @param {import('./writer.js').Writer} writer
 * @param {unknown} w
 * @returns {WriteScope}
 */
function assertScope (writer, w) {
  // A Proxy's getPrototypeOf trap runs for instanceof: it may throw. (Read
  // inline, not through readInput(): on every in(w), no closure.)
  let isScope
  try {
    isScope = w instanceof WriteScope
  } catch (err) {
    throw unreadable('The argument of in(w)', err)
  }
  if (!isScope || /** @type {WriteScope} */ (w).writer !== writer) {
    throw invalid('in(w) takes the write scope that db.write() or db.transaction() passes to its callback, for the same database')
  }
  const scope = /** @type {WriteScope} */ (w)
  scope.assertOpen()
  return scope
}

const kModel = Symbol('model')
const kScope = Symbol('scope')

/**
 * What the public handles of all models share: the model they front, and the
 * db.write() scope they are bound to (null for the database itself).
 */
export class ModelHandle {
  /**
   * @param {any} model
   * @param {WriteScope | null} [scope]
   */
  constructor (model, scope = null) {
    const self = /** @type {any} */ (this)
    self[kModel] = model
    self[kScope] = scope
  }

  /** @returns {string} */
  get name () {
    return modelOf(this).name
  }

  /**
   * This model, bound to the write scope `w` of a db.write() callback.
   * @param {WriteScope} w
   * @returns {this}
   */
  in (w) {
    const Handle = /** @type {any} */ (this.constructor)
    return new Handle(modelOf(this), assertScope(modelOf(this).writer, w))
  }
}

/**
 * The model a public handle fronts.
 * @param {ModelHandle} handle
 * @returns {any}
 */
export function modelOf (handle) {
  return /** @type {any} */ (handle)[kModel]
}

/**
 * The write scope a public handle is bound to, or null.
 * @param {ModelHandle} handle
 * @returns {WriteScope | null}
 */
export function scopeOf (handle) {
  return /** @type {any} */ (handle)[kScope]
}

/**
 * Run a write of the handle's model: alone, or inside the scope it is bound to.
 * @template T
 * @param {ModelHandle} handle
 * @param {(scope: WriteScope) => Promise<T> | T} fn
 * @param {boolean} [rerunnable] `fn` may run again (see Writer#run())
 * @returns {Promise<T>}
 */
export function writeThrough (handle, fn, rerunnable = false) {
  const scope = scopeOf(handle)
  return scope === null ? runWrite(modelOf(handle).writer, null, fn, rerunnable) : scope.atomic(fn)
}

/**
 * Read one raw value: through the handle's scope (its own writes first), or
 * what is written.
 * @param {ModelHandle} handle
 * @param {import('./namespace.js').Namespace} namespace
 * @param {Uint8Array} key
 * @returns {any} the value, or a promise of it
 */
export function readThrough (handle, namespace, key) {
  // Not async: callers await it, and a synchronous read needs no promise of its own.
  const scope = scopeOf(handle)
  return scope ? scope.get(namespace, key) : namespace.read(key, modelOf(handle).writer.syncReads)
}

/**
 * The promise of what `fn` returns (a value or a promise), or a rejected
 * one if it throws: for handle methods that are not async functions (one
 * promise fewer per call) yet must never throw synchronously.
 * @template T
 * @param {() => T | Promise<T>} fn
 * @returns {Promise<T>}
 */
export function promised (fn) {
  try {
    return Promise.resolve(fn())
  } catch (err) {
    return Promise.reject(err)
  }
}

/**
 * Promise.all() of `f(item)` for each item, where `f` may return a value or a
 * promise, or throw. A synchronous throw (a transaction's read that finds a
 * conflict) rejects the result like any other failure, instead of escaping
 * the map and leaving the promises it already made without a handler: a lock
 * wait among them rejects once the attempt releases its locks, and an
 * unhandled rejection ends the process.
 * @template T, R
 * @param {T[]} items
 * @param {(item: T) => R | Promise<R>} f
 * @returns {Promise<R[]>}
 */
export function allOf (items, f) {
  return Promise.all(items.map(item => promised(() => f(item))))
}

/**
 * `f(x)` for a value `x`, or a promise of `f` of what `x` resolves to: reads
 * that return values synchronously are chained without a promise.
 * @param {any} x
 * @param {(value: any) => any} f
 * @returns {any}
 */
export function after (x, f) {
  return x instanceof Promise ? x.then(f) : f(x)
}

/**
 * The transaction a handle is bound to, for a read with a `lock` option:
 * locks exist only inside transactions.
 * @param {ModelHandle} handle
 * @returns {import('./transaction.js').Transaction}
 */
export function transactionOf (handle) {
  const scope = scopeOf(handle)
  if (scope === null || !(scope instanceof Transaction)) {
    throw invalid('The lock option needs a transaction: call it as model.in(tx).get(id, { lock }) inside db.transaction()')
  }
  return scope
}

/**
 * The transaction a handle is bound to, if it is bound to one: queries made
 * through it read in that transaction.
 * @param {ModelHandle} handle
 * @returns {import('./transaction.js').Transaction | undefined}
 */
export function transactionIn (handle) {
  const scope = scopeOf(handle)
  return scope instanceof Transaction ? scope : undefined
}

/**
 * For a query made through a handle bound to a write scope: before reading,
 * wait until everything decided before the scope is written, so the query
 * sees it (the scope's own writes are not visible to queries).
 * @param {ModelHandle} handle
 * @returns {(() => Promise<boolean>) | undefined}
 */
export function scopedPrepare (handle) {
  const scope = scopeOf(handle)
  if (scope === null) return undefined
  return async () => {
    scope.assertOpen()
    // A snapshot holds what was decided before it: nothing to wait for.
    if (!scope.readsSnapshot) await scope.writer.drain()
    return true
  }
}

/**
 * An error if the caller runs inside a db.write() callback of the same
 * database (where a write of its own would wait for the callback that waits
 * for it), else null. Node only: browsers cannot tell.
 * @param {import('./writer.js').Writer} writer
 */
export function refuseInsideScope (writer) {
  const enclosing = currentScope()
  if (enclosing && enclosing.writer === writer && enclosing.open) {
    return invalid('Inside a db.write() callback, call models through their in(w) form, e.g. users.in(w).insert(...); db.write(), check({ repair: true }) and ChatStore methods cannot be nested in it')
  }
  return null
}
