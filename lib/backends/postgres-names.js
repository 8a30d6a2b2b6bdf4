// The names of the tables a postgres database uses: its own, and the lock
// tables a table opened with locking: 'serializable' has (see
// postgres-serializable.js). Apart, with nothing of pg, so that levelkit's
// entry point exports postgresTables() without loading pg.
import { createHash } from 'node:crypto'
import { invalid } from '../errors.js'
import { describe } from '../common.js'

/**
 * How many lock tables a table has (postgres-serializable.js): more make two keys that
 * are not contended rarer to share one (a needless wait), and cost a
 * catalog row each.
 */
export const LOCK_TABLES = 64

/**
 * The name of lock table `i` of `table` (a lowercase identifier of at most
 * 63 characters): `<table>_lock_<i>`, or, where that would pass PostgreSQL's
 * 63 characters, a shortened table name and a hash of the whole.
 * @param {string} table @param {number} i
 */
export function lockTableName (table, i) {
  const suffix = `_lock_${i}`
  if (table.length + suffix.length <= 63) return table + suffix
  const hash = createHash('sha1').update(table).digest('hex').slice(0, 8)
  return `${table.slice(0, 63 - suffix.length - 9)}_${hash}${suffix}`
}

/**
 * Every table a postgres database on `table` may use: `table` itself, then
 * its lock tables (made at its first open with shared: true and locking:
 * 'serializable'; absent otherwise). To drop a database: DROP TABLE IF EXISTS
 * each of them.
 * @param {string} table
 * @returns {string[]}
 */
export function postgresTables (table) {
  if (typeof table !== 'string' || !/^[a-z_][a-z0-9_]{0,62}$/.test(table)) {
    throw invalid(`The table must be a lowercase SQL identifier (a-z, 0-9 and _, not starting with a digit, at most 63 characters), got ${describe(table)}`)
  }
  return [table, ...Array.from({ length: LOCK_TABLES }, (_, i) => lockTableName(table, i))]
}
