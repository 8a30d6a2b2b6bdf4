import { openIn, loadBackend } from './lib/open.js'
import { levelkitError, codes } from './lib/errors.js'
import { openOwnedBrowserLevel } from './lib/idb-open.js'

// The IndexedDB database open() uses when given no location.
const DEFAULT_DATABASE = 'levelkit'

/** @type {import('./lib/open.js').Environment} */
const browser = {
  defaultBackend: () => 'indexeddb',
  backends: {
    async leveldb () {
      throw levelkitError(codes.BACKEND_UNAVAILABLE, 'The leveldb backend needs Node.js (classic-level): in a browser use indexeddb or memory', { backend: 'leveldb' })
    },
    async memory (location, options) {
      const { MemoryLevel } = await loadBackend('memory', 'memory-level', () => import('memory-level'))
      return new MemoryLevel(options)
    },
    async indexeddb (location, options) {
      const { BrowserLevel } = await loadBackend('indexeddb', 'browser-level', () => import('browser-level'))
      // The IndexedDB database is named `location` itself: browser-level would
      // prefix it with 'level-js-' (pass that prefix to open a database made
      // by levelkit 0.1 or by browser-level's defaults). Opened here, with
      // levelkit's object stores beside browser-level's (lib/idb-open.js).
      try {
        return await openOwnedBrowserLevel(BrowserLevel, location === undefined ? DEFAULT_DATABASE : location, { prefix: '', ...options })
      } catch (err) {
        // A native layout refused (lib/idb-records.js) says so itself.
        if (/** @type {any} */ (err)?.code === codes.NATIVE_LAYOUT) throw err
        throw levelkitError(codes.BACKEND_UNAVAILABLE, `The indexeddb backend could not open the database: ${/** @type {any} */ (err)?.message}`, { cause: err, backend: 'indexeddb', location })
      }
    }
  }
}

/**
 * Open a levelkit database. In a browser it defaults to IndexedDB, in the
 * database named by `location` ('levelkit' if none).
 * @param {any} [options]
 */
export function open (options) {
  return openIn(browser, options)
}

export * from './lib/exports.js'
