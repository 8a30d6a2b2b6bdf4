// Two tabs of one origin open one IndexedDB database: both would run its
// pending migrations and build its new indexes. The write path's cross-tab
// lock (lib/cross-tab.js) makes each batch atomic across tabs, not a whole
// migration: so schema work (a migration, an index build) holds a second Web
// Lock, named after the database, for as long as it runs. Another tab's
// schema work waits for it, then finds it done (the stored schema says so).

/**
 * @typedef {object} SchemaLock
 * @property {<T>(fn: () => Promise<T>) => Promise<T>} hold run `fn` while this tab holds the lock
 */

/** @type {SchemaLock} */
const NO_LOCK = Object.freeze({ hold: fn => fn() })

/** @type {WeakMap<object, SchemaLock>} one per database object: its schema work shares the holding */
const locks = new WeakMap()

/**
 * The schema lock of the browser-level database `level`; where there is no
 * other tab (any other backend) or no Web Locks, one that holds nothing.
 * @param {any} level
 * @returns {SchemaLock}
 */
export function schemaLockFor (level) {
  let lock = locks.get(level)
  if (lock === undefined) {
    const webLocks = globalThis.navigator?.locks
    lock = level.type === 'browser-level' && webLocks
      // The name IndexedDB knows the database by (browser-level adds a
      // prefix), apart from the write path's lock of the same database.
      ? sharedLock(webLocks, `levelkit-schema:${level.namePrefix}${level.location}`)
      : NO_LOCK
    locks.set(level, lock)
  }
  return lock
}

/**
 * A Web Lock that the schema work of this tab holds together: the first to
 * start requests it, the last to finish releases it. Within a tab a
 * migration's writes may start index builds, and a read of the migration
 * may wait for one: were each to take the lock for itself, they would wait
 * for each other.
 * @param {LockManager} webLocks @param {string} name
 * @returns {SchemaLock}
 */
export function sharedLock (webLocks, name) {
  let holders = 0
  /** @type {Promise<void> | null} resolves once this tab holds the lock */
  let held = null
  /** @type {() => void} */
  let release = () => {}
  return {
    async hold (fn) {
      if (holders++ === 0) {
        held = new Promise((resolve, reject) => {
          webLocks.request(name, { mode: 'exclusive' }, () => {
            resolve()
            // Held until the last holder of this tab is done.
            return new Promise(resolve => { release = () => resolve(undefined) })
          }).catch(reject)
        })
      }
      try {
        await held
        return await fn()
      } finally {
        if (--holders === 0) {
          held = null
          release()
        }
      }
    }
  }
}
