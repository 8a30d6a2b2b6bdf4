import { openIn, loadBackend, requireLocation } from './lib/open.js'
import { levelkitError, codes } from './lib/errors.js'

/** @type {import('./lib/open.js').Environment} */
const browser = {
  defaultBackend: ({ location }) => location === undefined ? 'memory' : 'indexeddb',
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
      return new BrowserLevel(requireLocation('indexeddb', location), options)
    }
  }
}

/**
 * Open a levelkit database. In a browser it defaults to IndexedDB when a
 * location (database name) is given, and to memory otherwise.
 * @param {any} [options]
 */
export function open (options) {
  return openIn(browser, options)
}

export * from './lib/exports.js'
