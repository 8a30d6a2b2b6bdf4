// Browsers have no AsyncLocalStorage: a model call inside db.write() that
// forgot `.in(w)` cannot be detected there (see docs/api.md, db.write()).

/**
 * @template T
 * @param {object} scope
 * @param {() => T} fn
 * @returns {T}
 */
export function runInScope (scope, fn) {
  return fn()
}

/** Whether currentScope() can tell: not here. */
export const tracksScopes = false

/** @returns {any} */
export function currentScope () {
  return undefined
}
