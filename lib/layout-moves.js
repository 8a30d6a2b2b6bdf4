import { levelkitError, codes } from './errors.js'
import { scopeOf, scopedPrepare, writeThrough } from './model-handle.js'

/**
 * @typedef {{ phase: string | null, after: Uint8Array | null, done: number }} LayoutProgress
 *   where a layout move is: its phase (the model's), the key its next batch
 *   starts after (null: from the start), what it moved so far
 * @typedef {object} LayoutModel a relation or children set, whose data has a layout (lib/schema.js moves it)
 * @property {string} name
 * @property {'relation' | 'children'} layoutKind
 * @property {import('./index-state.js').IndexState} layoutState
 *   'unknown' until compared with the stored layout, 'building' while its data moves
 * @property {() => Record<string, unknown>} declaredLayout what the stored schema keeps of its declaration
 * @property {(scope: import('./write-scope.js').WriteScope, stored: Record<string, unknown> | undefined) => Promise<boolean>} layoutMatches
 *   whether its data is in the declared layout already, `stored` the layout the stored schema names (if any)
 * @property {(scope: import('./write-scope.js').WriteScope, stored: Record<string, unknown> | undefined) => Promise<void>} [settleLayout]
 *   settle what its declaration depends on in the stored layout, before the comparison (a relation's IndexedDB index kind)
 * @property {() => string | null} [firstLayoutPhase]
 *   the phase its move starts with, where it depends on the stored layout (else null)
 * @property {() => void} startLayoutMove start the move the comparison found needed, if not yet (lib/schema.js)
 * @property {((scope: import('./write-scope.js').WriteScope) => void) | null} layoutRecord
 *   puts the stored layout record a comparison left for the model's next write (lib/schema.js), until it is written
 * @property {(scope: import('./write-scope.js').WriteScope, progress: LayoutProgress, size: number) => Promise<boolean>} moveLayoutBatch
 *   move about `size` stored values into the declared layout, advancing `progress`; true after the last
 */

/**
 * Wait until the data of `model` is in its declared layout: undefined when
 * it is (or inside a db.write() callback before the comparison, which may
 * be queued behind the callback: its writes then go to the declared layout,
 * as they would after), else a promise that resolves when it is. Inside a
 * db.write() callback, which holds the write path the move needs, a read or
 * write rejects with LEVELKIT_INDEX_BUILDING instead.
 * @param {LayoutModel} model @param {boolean} inScope
 * @returns {Promise<void> | undefined}
 */
export function layoutReady (model, inScope) {
  const state = model.layoutState
  if (state.state === 'ready' || (state.state === 'unknown' && inScope)) return undefined
  if (state.state === 'failed') throw state.error
  // Whatever stopped it, a move that is waited for runs.
  model.startLayoutMove()
  if (inScope) {
    throw levelkitError(codes.INDEX_BUILDING, `The data of ${model.layoutKind} "${model.name}" is being moved into its declared layout (${state.done} moved so far), and inside a db.write() callback a read or write of it cannot wait for that (the move needs the write path): use it outside, or after db.buildIndexes()`, {
      [model.layoutKind]: model.name, done: state.done
    })
  }
  return state.settled()
}

/**
 * @typedef {{ ticket: number, queued: boolean, attempt: () => void, reject: (err: unknown) => void }} Waiter
 *   a write outside a scope that found the layout of its model not ready
 *   in its critical section (or a write of it called earlier waiting), until
 *   it is decided; `queued` while its next attempt is in the write path
 * @typedef {{ next: number, waiters: Waiter[], parked: boolean }} Order
 *   per model: the ticket (call order) of its next write outside a scope
 *   that may have to wait, the waiting writes in ticket order, and whether
 *   they wait for the layout to be ready (else they are queued again)
 */

/** @type {WeakMap<LayoutModel, Order>} */
const orders = new WeakMap()

/**
 * Run `fn`, a write of `model` (a relation or children set), through
 * `handle`. In a db.write() scope, as any write of the scope (refused while
 * its data moves, see layoutReady()). Outside one, queued in the write path
 * at once, in call order, even before the stored layout is compared (a
 * model's first use after open): its critical section comes after the
 * comparison's (queued when the model was declared), which settles the
 * layout state. If a move is needed, it decides nothing, the move starts,
 * and it is queued again once the move is over: then it is decided after
 * every write called before it, and the writes of the same model outside a
 * scope keep their call order, but other writes called after it (of other
 * models, or of this one in a db.write() scope) may be decided before it.
 * @template T
 * @param {import('./model-handle.js').ModelHandle} handle @param {LayoutModel} model
 * @param {(scope: import('./write-scope.js').WriteScope) => Promise<T> | T} fn
 * @returns {Promise<T>}
 */
export function layoutWrite (handle, model, fn) {
  const state = model.layoutState
  if (scopeOf(handle) !== null) {
    layoutReady(model, true)
    return writeThrough(handle, fn)
  }
  let order = orders.get(model)
  // The common case: ready, and no write of it waits.
  if (state.state === 'ready' && (order === undefined || order.waiters.length === 0)) return writeThrough(handle, fn)
  if (state.state === 'failed') return Promise.reject(state.error)
  if (order === undefined) orders.set(model, order = { next: 0, waiters: [], parked: false })
  const own = order
  const ticket = own.next++
  return new Promise((resolve, reject) => {
    /** @type {Waiter} */
    const waiter = { ticket, queued: true, attempt, reject }
    function attempt () {
      let deferred = false
      waiter.queued = true
      writeThrough(handle, scope => {
        // (Itself is not queued again by release(): still marked queued.)
        if (state.state === 'ready' && own.parked) release(own)
        waiter.queued = false
        if (state.state === 'failed') {
          drop(own, waiter)
          throw state.error
        }
        if (state.state === 'ready') {
          const first = own.waiters[0]
          if (first === undefined || first.ticket >= ticket) {
            drop(own, waiter)
            return fn(scope)
          }
          // A write of the model called before it is queued again: after that one.
          enlist(own, waiter)
          attempt()
        } else {
          enlist(own, waiter)
          park(model, own)
        }
        deferred = true
        throw NOT_YET
      }).then(resolve, err => {
        // Decided nothing and goes again: whatever it is told now (an
        // earlier write failed) is not its answer.
        if (deferred) return
        drop(own, waiter)
        reject(err)
      })
    }
    attempt()
  })
}

// Thrown in a critical section that decided nothing: its write goes again later.
const NOT_YET = Symbol('not yet')

/** @param {Order} order @param {Waiter} waiter */
function enlist (order, waiter) {
  if (order.waiters.includes(waiter)) return
  let i = order.waiters.length
  while (i > 0 && order.waiters[i - 1].ticket > waiter.ticket) i--
  order.waiters.splice(i, 0, waiter)
}

/** @param {Order} order @param {Waiter} waiter */
function drop (order, waiter) {
  const i = order.waiters.indexOf(waiter)
  if (i !== -1) order.waiters.splice(i, 1)
}

/**
 * The waiting writes of `model` wait for its layout to be ready (starting
 * the move it needs), then are queued again in call order.
 * @param {LayoutModel} model @param {Order} order
 */
function park (model, order) {
  if (order.parked) return
  order.parked = true
  // Whatever stopped it, a move that is waited for runs.
  model.startLayoutMove()
  model.layoutState.settled().then(() => release(order), err => {
    if (!order.parked) return
    order.parked = false
    for (const waiter of order.waiters.filter(waiter => !waiter.queued)) {
      drop(order, waiter)
      waiter.reject(err)
    }
  })
}

/** Queue again, in call order, the waiting writes not queued yet. @param {Order} order */
function release (order) {
  if (!order.parked) return
  order.parked = false
  // A copy: an attempt may run its critical section at once, and leave the list.
  for (const waiter of [...order.waiters]) if (!waiter.queued) waiter.attempt()
}

/**
 * A query's `prepare`: the scope's (lib/model-handle.js), after waiting for
 * the data of `model` to be in its declared layout if it is not yet. Only
 * then: a query without `prepare` may read a whole list at once.
 * @param {import('./model-handle.js').ModelHandle} handle @param {LayoutModel} model
 * @returns {(() => Promise<boolean>) | undefined}
 */
export function layoutPrepare (handle, model) {
  const scoped = scopedPrepare(handle)
  if (model.layoutState.state === 'ready') return scoped
  const inScope = scopeOf(handle) !== null
  return async () => {
    await layoutReady(model, inScope)
    return scoped === undefined || scoped()
  }
}
