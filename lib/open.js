import { invalid, levelkitError, codes } from './errors.js'
import { Database } from './database.js'
import { readCacheOption } from './read-cache.js'
import { optionsOf, optionsObject } from './options.js'
import { describe, errorMessage, isLevelkitError, readInput } from './common.js'
import { assertName } from './names.js'

/**
 * @typedef {(location: string | undefined, options: object) => Promise<any>} BackendFactory
 * @typedef {{ defaultBackend: (options: { location?: string }) => string, backends: Record<string, BackendFactory> }} Environment
 */

/**
 * Open a levelkit database on the backend the options name (or the
 * environment's default) and wait until it is open.
 *
 * @param {Environment} environment
 * @param {any} [options]
 * @returns {Promise<Database>}
 */
export async function openIn (environment, options) {
  // Read once (a copy); the backend's own options are passed on from it.
  const given = optionsObject(options, 'open()')
  const { backend: named, location, db, syncReads, readCache, readCacheBytes, durability, relationIndexes, native, ...levelOptions } = given
  if (syncReads !== undefined && typeof syncReads !== 'boolean') throw invalid('The syncReads option must be a boolean')
  if (relationIndexes !== undefined && typeof relationIndexes !== 'boolean' && relationIndexes !== 'entries' && relationIndexes !== 'lists') {
    throw invalid("The relationIndexes option must be a boolean, 'entries' or 'lists'")
  }
  const readCacheOptions = readCacheOption(readCache)
  if (durability !== undefined && durability !== 'sync' && durability !== 'relaxed') {
    throw invalid("The durability option must be 'relaxed' (the default: a write resolves once the backend has it) or 'sync' (once it is flushed to disk)")
  }
  if (readCacheBytes !== undefined && !(Number.isSafeInteger(readCacheBytes) && readCacheBytes >= 0)) {
    throw invalid('The readCacheBytes option must be a non-negative integer (bytes the read caches hold together; 0 turns them off)')
  }

  const nativeSpecs = nativeOption(native)
  if (db !== undefined) {
    if (nativeSpecs !== undefined) throw invalid('The native option needs a database levelkit opens on IndexedDB, not { db }')
    if (named !== undefined || location !== undefined) throw invalid('Pass either { db } or { backend, location }, not both')
    // Other options go to the backend levelkit opens: with { db } there is none.
    optionsOf(given, 'open()', 'open() with { db }')
    assertAbstractLevel3(db)
    try {
      if (db.status === 'opening') await db.open()
      if (db.status !== 'open') await db.open()
    } catch (err) {
      if (isLevelkitError(err)) throw err
      throw invalid(`The database passed as the db option could not be opened: ${errorMessage(err)}`, { cause: err })
    }
    return new Database(db, { syncReads, readCache: readCacheOptions, readCacheBytes, durability, ownsLevel: false, relationIndexes })
  }

  const backend = named === undefined ? environment.defaultBackend({ location }) : named
  const factory = typeof backend === 'string' && Object.prototype.hasOwnProperty.call(environment.backends, backend) ? environment.backends[backend] : undefined
  if (!factory) {
    throw invalid(`Unknown backend ${describe(backend)}: use one of ${Object.keys(environment.backends).map(b => `'${b}'`).join(', ')}, or pass { db }`)
  }
  if (location !== undefined && (typeof location !== 'string' || location === '')) {
    throw invalid(`The location option must be a non-empty string, got ${describe(location)}`)
  }
  if (nativeSpecs !== undefined) {
    if (backend !== 'indexeddb') throw invalid(`The native option is for the indexeddb backend (a collection's records in an object store of their own), not ${describe(backend)}`)
    levelOptions.native = nativeSpecs
  }
  // Reads of relations' forward lists kept in the lists store only, through
  // browser-level's interface too (lib/idb-lists-level.js): the default
  // layout of a new relation, and a stored one is kept whatever the option.
  if (backend === 'indexeddb') levelOptions.relationEntries = true
  let level
  try {
    level = await factory(location, levelOptions)
  } catch (err) {
    if (isLevelkitError(err)) throw err
    throw invalid(`The ${backend} backend refused its options: ${errorMessage(err)}`, { cause: err, backend })
  }
  try {
    await level.open()
  } catch (err) {
    const cause = /** @type {any} */ (err).cause
    if (cause && cause.code === 'LEVEL_LOCKED') {
      // A postgres database has no location: its table is named in the cause.
      const which = location === undefined ? `The ${backend} database` : `The database at ${location}`
      throw levelkitError(codes.LOCKED, `${which} is in use by another process (or another open database in this one)`, { cause: err, location })
    }
    throw levelkitError(codes.BACKEND_UNAVAILABLE, `The ${backend} backend could not open the database${location === undefined ? '' : ` at ${describe(location)}`}: ${errorMessage(cause || err)}`, { cause: err, backend, location })
  }
  const database = new Database(level, { syncReads, readCache: readCacheOptions, readCacheBytes, durability, relationIndexes })
  // Other processes writing it too (postgres, shared): hear of their batches first.
  try {
    await database.writer.ready()
  } catch (err) {
    await database.close().catch(() => {})
    throw levelkitError(codes.BACKEND_UNAVAILABLE, `The ${backend} backend could not open the database: ${errorMessage(err)}`, { cause: err, backend })
  }
  return database
}

/**
 * The native option, `{ collection: [index names] }`: which collections keep
 * their records in an IndexedDB object store of their own, with a native
 * index per index (all of them, named when the database is opened: see
 * lib/idb-records.js). Undefined if not given.
 * @param {unknown} native
 * @returns {import('./idb-records.js').NativeSpec[] | undefined}
 */
function nativeOption (native) {
  if (native === undefined) return undefined
  const shape = 'The native option must be an object naming each native collection and its indexes, as { users: [\'username\'] }'
  return readInput('The native option', () => {
    if (native === null || typeof native !== 'object' || Array.isArray(native)) throw invalid(shape)
    return Object.entries(native).map(([collection, indexes]) => {
      assertName(collection, 'Collection')
      if (!Array.isArray(indexes)) throw invalid(`${shape}: the indexes of "${collection}" are not an array`)
      const names = indexes.map(name => assertName(name, 'Index'))
      if (new Set(names).size !== names.length) throw invalid(`${shape}: an index of "${collection}" is named twice`)
      return { collection, indexes: names }
    })
  })
}

/** @param {string} backend @param {unknown} location */
export function requireLocation (backend, location) {
  if (typeof location !== 'string') throw invalid(`The ${backend} backend needs a location`)
  return location
}

/**
 * A location that is a directory path: no NUL character, and well-formed
 * UTF-16 (a lone surrogate would silently become U+FFFD in the path, so two
 * locations would name one directory).
 * @param {string} backend @param {unknown} location
 */
export function requirePath (backend, location) {
  const path = requireLocation(backend, location)
  if (path.includes('\u0000') || !path.isWellFormed()) {
    throw invalid(`The ${backend} location must be a path without NUL characters or lone surrogates, got ${describe(path)}`)
  }
  return path
}

/**
 * @param {string} backend @param {string} packageName
 * @param {() => Promise<any>} load
 */
export async function loadBackend (backend, packageName, load) {
  try {
    return await load()
  } catch (err) {
    throw levelkitError(codes.BACKEND_UNAVAILABLE, `The ${backend} backend needs the ${packageName} package, which could not be loaded here: ${/** @type {Error} */ (err).message}`, { cause: err, backend })
  }
}

/** @param {any} db */
function assertAbstractLevel3 (db) {
  const ok = db !== null && typeof db === 'object' && readInput('The db option', () =>
    typeof db.sublevel === 'function' && typeof db.batch === 'function' &&
    db.supports !== null && typeof db.supports === 'object' &&
    db.hooks !== undefined && typeof db.snapshot === 'function')
  if (!ok) throw invalid('The db option must be an abstract-level 3 database (level 10, classic-level 3, memory-level 3, browser-level 3, ...)')
}
