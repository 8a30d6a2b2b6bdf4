// Which browser-level databases keep native collections (lib/idb-records.js):
// a module of its own, so that the layers that ask (lib/idb-direct.js, the
// model) do not load the layout's code, which is loaded where the option is
// given (a bundler that splits dynamic imports leaves it out of other pages).

/** @type {WeakMap<object, import('./idb-records.js').NativeLayout>} */
const layouts = new WeakMap()

/** The layout of a browser-level database opened with native collections, or null. @param {any} level @returns {import('./idb-records.js').NativeLayout | null} */
export function nativeLayoutOf (level) {
  return (level !== null && typeof level === 'object' && layouts.get(level)) || null
}

/** @param {object} level @param {import('./idb-records.js').NativeLayout} layout */
export function registerNativeLayout (level, layout) {
  layouts.set(level, layout)
}

/** The object stores of native collections are named `<location>` + this + `<collection>`. */
export const RECORDS_STORES = '/levelkit-records/'
