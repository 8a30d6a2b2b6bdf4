import { AsyncLocalStorage } from 'node:async_hooks'

// Which db.write() callback (if any) the current async context runs in, so a
// model call that forgot `.in(w)` fails fast instead of waiting for the very
// callback that waits for it.
const storage = new AsyncLocalStorage()

/**
 * @template T
 * @param {object} scope
 * @param {() => T} fn
 * @returns {T}
 */
export function runInScope (scope, fn) {
  return storage.run(scope, fn)
}

/** Whether currentScope() can tell. */
export const tracksScopes = true

/** @returns {any} the write scope of the current async context, if any */
export function currentScope () {
  return storage.getStore()
}
