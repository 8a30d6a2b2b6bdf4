import { levelkitError, codes } from './errors.js'
import { scopeOf, scopedPrepare } from './model-handle.js'

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
