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

/**
 * Run `fn` as a critical section of `section`: nothing in browsers needs
 * to tell (only PostgreSQL's serializable transactions do, in Node).
 * @template T
 * @param {object} section
 * @param {() => Promise<T> | T} fn
 * @returns {Promise<T>}
 */
export async function runInSection (section, fn) {
  return fn()
}

/** @returns {any} */
export function currentSection () {
  return undefined
}

/**
 * @template T @param {object} section @param {() => T} fn @returns {T}
 */
export function readingAs (section, fn) {
  return fn()
}

/** @returns {any} */
export function sectionFrame () {
  return undefined
}

/** @returns {any} */
export function readingNow () {
  return null
}

/** @param {object} section @returns {object | null} */
export function beginReading (section) {
  return null
}

/** @param {object | null} before */
export function endReading (before) {}
