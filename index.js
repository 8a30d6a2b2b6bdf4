import { openIn, loadBackend, requireLocation, requirePath } from './lib/open.js'
import { levelkitError, codes, invalid } from './lib/errors.js'

/** @type {import('./lib/open.js').Environment} */
const node = {
  defaultBackend: ({ location }) => location === undefined ? 'memory' : 'leveldb',
  backends: {
    async leveldb (location, options) {
      const { ClassicLevel } = await loadBackend('leveldb', 'classic-level', () => import('classic-level'))
      return new ClassicLevel(requirePath('leveldb', location), options)
    },
    async memory (location, options) {
      const { MemoryLevel } = await loadBackend('memory', 'memory-level', () => import('memory-level'))
      return new MemoryLevel(options)
    },
    async indexeddb (location, options) {
      if (typeof globalThis.indexedDB === 'undefined') {
        throw levelkitError(codes.BACKEND_UNAVAILABLE, 'The indexeddb backend needs IndexedDB, which this environment (Node.js) does not have: use leveldb or memory', { backend: 'indexeddb' })
      }
      const { BrowserLevel } = await loadBackend('indexeddb', 'browser-level', () => import('browser-level'))
      return new BrowserLevel(requireLocation('indexeddb', location), options)
    },
    async postgres (location, options) {
      if (location !== undefined) {
        throw invalid("The postgres backend takes no location: name the server with the connectionString option and the table with the table option ('levelkit' by default)")
      }
      const { PostgresLevel } = await loadBackend('postgres', 'pg', () => import('./lib/backends/postgres-level.js'))
      return new PostgresLevel(options)
    }
  }
}

/**
 * Open a levelkit database. With a location it defaults to LevelDB on disk
 * (classic-level); without one, to memory (memory-level).
 * @param {any} [options]
 */
export function open (options) {
  return openIn(node, options)
}

export * from './lib/exports.js'
// The PostgreSQL backend's connections kept for a moment after a close(),
// and the tables a database uses (neither module loads pg).
export { endIdleConnections } from './lib/backends/postgres-idle.js'
export { postgresTables } from './lib/backends/postgres-names.js'
