/* global indexedDB, IDBDatabase */
import { RECORDS_STORES } from './native-layouts.js'
import { levelkitError, codes } from './errors.js'

// Opening an IndexedDB database that levelkit owns (open() in a browser, not
// a browser-level database a user brings): browser-level creates one object
// store, named as its location, at the version it is given; levelkit keeps
// object stores of its own beside it, with native indexes that IndexedDB
// maintains in the transaction of each batch (one request where a list per
// listed id costs one each). An object store can only be created by a
// version upgrade, so the database is opened first as it is, and once more
// one version higher if a store is missing (creating it; browser-level's
// store and its data are untouched); browser-level then opens at that
// version, which asks for no upgrade.
//
// An upgrade waits until every other connection to the database closed
// (their `versionchange` event). A database levelkit opened closes its
// connection as soon as that event comes (lib/database.js), so a tab whose
// code wants a newer layout is not blocked by a tab on an older one; the
// older tab's database is then closed (LEVELKIT_NOT_OPEN) until it reloads.

/**
 * The object store that holds relations' lists as `{ ids: [...] }` objects,
 * beside browser-level's store named `location`, and the name of its
 * multiEntry index over `ids`.
 * @param {string} location
 */
export function listsStoreOf (location) {
  return { store: `${location}/levelkit-lists`, index: 'ids' }
}

// Relation slots of the lists store (lib/idb-direct.js): a store made by
// this version has, beside the `ids` index (whose keys are [tag, id], so
// that relations share it), one multiEntry index per slot over the
// property of the same name, whose keys are the ids alone: a relation
// that claims a slot keeps its entries as `{ s<k>: [id, ...], v }` under
// [k, key], so its index holds plain numbers, about a fifth of the bytes
// of [tag, id] keys, and is chosen by the index's name. An index can only
// be made by a version upgrade, and relations are declared after open():
// the slots are made with the store, and claimed at a relation's first
// write (LIST_CLAIMS); a relation past the last slot keeps the `ids` index.
export const LIST_SLOTS = 8

/** The name of slot `k`'s index, and of the entries' property it is over. @param {number} k */
export function slotIndexOf (k) {
  return `s${k}`
}

/**
 * The key, in the lists store, of the slots' claims (`{ tags: { [tag]: k } }`,
 * k -1 for a relation that found no slot free): an array no entry's key
 * is (theirs start with a tag or a slot number, never -1).
 */
export const LIST_CLAIMS = [-1]

// An upgrade lost to another tab's (the version moved meanwhile) is tried
// again from the start, this many times at most.
const ATTEMPTS = 5

/**
 * The version at which the IndexedDB database `name` has browser-level's
 * store `location` and levelkit's stores, upgrading it if needed. With a
 * native layout (lib/idb-records.js), its collections' stores too: made
 * only for collections whose records browser-level's store does not hold
 * (a collection does not switch layout), and refused (LEVELKIT_NATIVE_LAYOUT)
 * where the database keeps a collection native that the layout does not,
 * or with other indexes.
 * @param {string} name the IndexedDB database's name @param {string} location browser-level's store
 * @param {import('./idb-records.js').NativeLayout | null} [layout]
 * @returns {Promise<number>}
 */
export async function prepareStores (name, location, layout = null) {
  let lastError
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    // Without a version: the current one (a new database: version 1, made here).
    const current = await openConnection(indexedDB.open(name), location, null)
    const version = current.version
    let complete
    try {
      complete = hasStores(current, location) && nativeStoresReady(current, null, location, layout)
      if (!complete && layout !== null && current.objectStoreNames.contains(location)) {
        const switching = await layout.switching(current.transaction([location], 'readonly'))
        if (switching !== null) throw switchingError(switching)
      }
    } finally {
      current.close()
    }
    if (complete) return version
    try {
      const upgraded = await openConnection(indexedDB.open(name, version + 1), location, layout)
      upgraded.close()
      return version + 1
    } catch (err) {
      // Another tab upgraded it first: look again.
      if (/** @type {any} */ (err)?.name !== 'VersionError') throw err
      lastError = err
    }
  }
  throw lastError
}

/**
 * Whether the native stores of `layout` are there as it makes them
 * (lib/idb-records.js: made in an `upgrade`, refused if they differ);
 * without a layout, that the database keeps no collection native (refused
 * with LEVELKIT_NATIVE_LAYOUT: its records would be out of sight).
 * @param {IDBDatabase} db @param {IDBTransaction | null} upgrade @param {string} location
 * @param {import('./idb-records.js').NativeLayout | null} layout
 */
function nativeStoresReady (db, upgrade, location, layout) {
  if (layout !== null) return layout.storesReady(db, upgrade)
  const native = Array.from(db.objectStoreNames).find(name => name.startsWith(location + RECORDS_STORES))
  if (native !== undefined) {
    throw levelkitError(codes.NATIVE_LAYOUT, `The IndexedDB database keeps collection "${native.slice((location + RECORDS_STORES).length)}" native (in its own object store): open it with that collection in the native option`, { store: native })
  }
  return true
}

/** @param {string} collection with records in browser-level's store */
function switchingError (collection) {
  return levelkitError(codes.NATIVE_LAYOUT, `Collection "${collection}" has records in browser-level's store of this IndexedDB database: it cannot be made native (only a new collection can)`, { collection })
}

/**
 * Open a BrowserLevel database that levelkit owns, with levelkit's stores:
 * `options` as BrowserLevel takes them (its `prefix` names the IndexedDB
 * database with `location`); an explicit `version` is the user's, and
 * leaves the database as browser-level makes it.
 * @param {any} BrowserLevel the class @param {string} location @param {any} options
 * @returns {Promise<any>} the database, open (or, if opening failed, not: its open() says why)
 */
export async function openOwnedBrowserLevel (BrowserLevel, location, options) {
  const { native, relationEntries, ...rest } = options
  options = rest
  // The native layout's code is loaded only where it is asked for.
  const records = native === undefined ? null : await import('./idb-records.js')
  const layout = records === null ? null : new records.NativeLayout(location, native)
  if (options.version !== undefined) {
    if (layout !== null) throw levelkitError(codes.NATIVE_LAYOUT, 'The native option needs a database levelkit opens itself (no version option)')
    return new BrowserLevel(location, options)
  }
  if (records !== null && layout !== null) BrowserLevel = records.nativeLevelClass(BrowserLevel, layout)
  // Loaded only where it is asked for, as the native layout's code.
  if (relationEntries === true) BrowserLevel = (await import('./idb-lists-level.js')).listsLevelClass(BrowserLevel)
  const name = (options.prefix ?? 'level-js-') + location
  for (let attempt = 0; ; attempt++) {
    const version = await prepareStores(name, location, layout)
    const level = new BrowserLevel(location, { ...options, version })
    try {
      await level.open()
      return level
    } catch (err) {
      // Another tab upgraded it between the two opens: prepare again.
      const cause = /** @type {any} */ (err)?.cause
      if (cause?.name !== 'VersionError' || attempt + 1 >= ATTEMPTS) return new BrowserLevel(location, { ...options, version })
    }
  }
}

/**
 * Whether the open database `db` holds every store levelkit keeps, with
 * its index.
 * @param {IDBDatabase} db @param {string} location
 */
function hasStores (db, location) {
  const { store } = listsStoreOf(location)
  return db.objectStoreNames.contains(location) && db.objectStoreNames.contains(store)
}

/**
 * The connection `request` opens; in an upgrade, the stores made that are
 * missing (with `layout`, its native stores too). While open it gives way
 * to another tab's upgrade.
 * @param {IDBOpenDBRequest} request @param {string} location @param {import('./idb-records.js').NativeLayout | null} layout
 * @returns {Promise<IDBDatabase>}
 */
function openConnection (request, location, layout) {
  return new Promise((resolve, reject) => {
    request.onupgradeneeded = () => {
      const db = request.result
      const upgrade = /** @type {IDBTransaction} */ (request.transaction)
      const existing = db.objectStoreNames.contains(location)
      try {
        nativeStoresReady(db, upgrade, location, layout)
      } catch (err) {
        upgrade.abort()
        reject(err)
        return
      }
      // Checked again in the upgrade, which no other connection can write
      // beside: a tab on the one-store layout may have written the
      // collection since prepareStores() looked.
      if (layout !== null && existing) {
        layout.switching(upgrade).then(switching => {
          if (switching === null) return
          reject(switchingError(switching))
          upgrade.abort()
        }, () => {})
      }
      if (!existing) db.createObjectStore(location)
      const { store, index } = listsStoreOf(location)
      if (!db.objectStoreNames.contains(store)) {
        // Out-of-line keys (the list's key, as the relation's list has it);
        // each listed id is a key of the index.
        const lists = db.createObjectStore(store)
        lists.createIndex(index, index, { multiEntry: true })
        for (let k = 0; k < LIST_SLOTS; k++) lists.createIndex(slotIndexOf(k), slotIndexOf(k), { multiEntry: true })
      }
    }
    request.onsuccess = () => {
      const db = request.result
      db.onversionchange = () => db.close()
      resolve(db)
    }
    request.onerror = () => reject(request.error)
  })
}

/**
 * Call `onChange` once, after closing the connection, when another
 * connection asks to upgrade the IndexedDB database of `level` (an open
 * browser-level database): the upgrade then proceeds instead of waiting
 * for this one. Nothing for other databases.
 * @param {any} level @param {() => void} onChange
 */
export function onVersionChange (level, onChange) {
  if (level?.type !== 'browser-level' || typeof IDBDatabase !== 'function') return
  const db = level.db
  if (!(db instanceof IDBDatabase)) return
  db.addEventListener('versionchange', () => {
    db.close()
    onChange()
  }, { once: true })
}
