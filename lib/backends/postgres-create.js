// Creating a postgres database's tables when missing, from any number of
// processes at once. Two sessions running CREATE TABLE IF NOT EXISTS of one
// name together do not both skip it: the second waits for the first's
// catalog rows and then fails (23505 on pg_type's unique index, 42P07, or
// 42710: the table's row type already exists).
// Failing through pool.query() makes pg's pool end the connection, so every
// open racing another would cost the server a connection (a reconnect storm
// when many processes start together). Instead the statements run behind a
// transaction advisory lock on the name: the second waits for the first to
// commit and then finds the tables there.
import { escapeLiteral } from './postgres-literal.js'
import { LOCK_TABLES, lockTableName } from './postgres-names.js'

// The first key of the advisory locks taken while creating tables: 'LKCR'
// (apart from the table locks' 'LKIT', the writer lock's and the range locks').
export const CREATE_LOCK_SPACE = 0x4c4b4352

/** @typedef {{ query: (text: string) => Promise<import('pg').QueryResult<any>> }} Queryable */

/**
 * Run `statements` (CREATE ... IF NOT EXISTS) in one implicit transaction
 * that first takes the lock on `name`: one creator at a time. A creator
 * that does not take it (an earlier levelkit) may still race one that does:
 * the duplicate it causes is not an error either (an earlier levelkit failed
 * the open on 42710).
 * @param {Queryable} pool @param {string} name @param {string[]} statements
 */
export async function createOnce (pool, name, statements) {
  try {
    await pool.query(`SELECT pg_advisory_xact_lock(${CREATE_LOCK_SPACE}, hashtext(${escapeLiteral(name)})); ${statements.join('; ')}`)
  } catch (err) {
    const code = /** @type {any} */ (err).code
    if (code !== '23505' && code !== '42P07' && code !== '42710') throw err
  }
}

/**
 * Create a database's table (the caller found it missing).
 * @param {Queryable} pool @param {string} table a validated lowercase identifier
 */
export function createTable (pool, table) {
  return createOnce(pool, table, [`CREATE TABLE IF NOT EXISTS "${table}" (key bytea PRIMARY KEY, value bytea NOT NULL)`])
}

/**
 * Make `table`'s lock tables (postgres-serializable.js) if they are missing
 * (a table made before them, or a new one): one query to look, one to make
 * them all (in one transaction: the last one there means all are).
 * @param {Queryable} pool @param {string} table
 */
export async function createLockTables (pool, table) {
  const last = lockTableName(table, LOCK_TABLES - 1)
  const { rows } = await pool.query(`SELECT to_regclass('"${last}"') IS NOT NULL AS there`)
  if (rows[0].there) return
  const statements = []
  for (let i = 0; i < LOCK_TABLES; i++) statements.push(`CREATE TABLE IF NOT EXISTS "${lockTableName(table, i)}" ()`)
  await createOnce(pool, table, statements)
}
