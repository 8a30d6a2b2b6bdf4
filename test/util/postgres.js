// The PostgreSQL server a test file runs on (see levelkit-testkit/postgres:
// LEVELKIT_PG_URL, or a throwaway cluster shared by the files of one tape
// process), one pool of connections the file's databases share (a
// connection costs a server process), and a fresh table name for each
// database a test opens.
import pg from 'pg'
import { postgres } from 'levelkit-testkit/postgres'
import { open } from '../../index.js'
import { endIdleConnections } from '../../lib/backends/postgres-idle.js'

/** @type {Promise<import('levelkit-testkit/postgres').PostgresServer> | null} */
let started = null
/** @type {import('pg').Pool[]} */
const pools = []
const prefix = `lk_${process.pid.toString(36)}_`
let files = 0

/**
 * @param {typeof import('tape')} test
 * @returns {Promise<{ connectionString: string, pool: import('pg').Pool, table: () => string }>}
 */
export async function postgresForTests (test) {
  if (started === null) {
    const server = started = postgres()
    test.onFinish(() => { server.then(cleanup, () => {}) })
  }
  const server = await started
  const pool = new pg.Pool({ connectionString: server.connectionString, max: 20 })
  pool.on('error', () => {})
  pools.push(pool)
  const file = `${prefix}${(files++).toString(36)}_`
  let n = 0
  return { connectionString: server.connectionString, pool, table: () => `${file}${n++}` }
}

/**
 * The throwaway cluster is removed whole; on a server of the user's
 * (LEVELKIT_PG_URL), the tables this process made are dropped.
 * @param {import('levelkit-testkit/postgres').PostgresServer} server
 */
async function cleanup (server) {
  try {
    if (!server.throwaway) {
      const { rows } = await pools[0].query('SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND starts_with(tablename, $1)', [prefix])
      for (const { tablename } of rows) await pools[0].query(`DROP TABLE IF EXISTS "${tablename}"`)
    }
  } finally {
    // Until the server is stopped the process must not exit, whatever an
    // await below waits for (an unref'd socket's end, say): tape's exit
    // handler removes the cluster's own, which would stop it.
    const hold = setInterval(() => {}, 60000)
    try {
      // A database whose close failed (abstract-level's suite makes one) keeps
      // its connection checked out, and pool.end() waits for it: not forever.
      const ended = Promise.all(pools.map(pool => pool.end().catch(() => {})))
      await Promise.race([ended, new Promise(resolve => setTimeout(resolve, 2000).unref())])
      // Connections kept for the next database (lib/backends/postgres-idle.js) end with the server anyway.
      await endIdleConnections()
      await server.stop()
    } finally {
      clearInterval(hold)
    }
  }
}

/**
 * The ways a postgres database can be opened for writing, named: one writer,
 * and shared with each locking mode. For suites that must hold in every one.
 */
export const POSTGRES_MODES = /** @type {const} */ ([
  ['one writer', {}],
  ['shared, table', { shared: true, locking: 'table' }],
  ['shared, keys', { shared: true, locking: 'keys' }],
  ['shared, serializable', { shared: true, locking: 'serializable' }]
])

/**
 * Two databases open on one fresh table, standing for two processes (each
 * with its own pool, write path and caches), with the shared option: `fn`
 * gets both and the table's name; both are closed after it, whatever it does.
 * @template T
 * @param {{ connectionString: string, table: () => string }} server postgresForTests()'s
 * @param {object | [object, object]} options open()'s for both (or for each), besides backend, connectionString, table and shared
 * @param {(a: any, b: any, table: string) => Promise<T>} fn
 * @returns {Promise<T>}
 */
export async function twoDatabases (server, options, fn) {
  const table = server.table()
  const [optionsA, optionsB] = Array.isArray(options) ? options : [options, options]
  const base = { backend: 'postgres', connectionString: server.connectionString, table, shared: true }
  const a = await open({ ...base, ...optionsA })
  /** @type {any} */
  let b = null
  try {
    b = await open({ ...base, ...optionsB })
    return await fn(a, b, table)
  } finally {
    await a.close()
    await b?.close()
  }
}

/**
 * Whether a session of the server waits for a lock (a row of pg_locks not
 * granted) that `where` picks, within `ms`: polled every 5 ms, so a loaded
 * machine takes longer to get there rather than failing a test that guessed
 * how long with a sleep.
 * @param {import('pg').Pool} pool
 * @param {string} where a condition on pg_locks' columns, with `params`
 * @param {unknown[]} [params]
 */
export async function lockWaited (pool, where, params = [], ms = 30000) {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await new Promise(resolve => setTimeout(resolve, 5))) {
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND (${where})`, params)
    if (rows[0].n > 0) return true
  }
  return false
}

/**
 * Change a stored value behind levelkit's back, as another writer would:
 * the UTF-8 text at `key` (a whole key of `table`) becomes `change(text)`.
 * @param {import('pg').Pool} pool @param {string} table @param {Buffer} key
 * @param {(text: string) => string} change
 */
export async function rewriteStored (pool, table, key, change) {
  const { rows } = await pool.query(`SELECT value FROM "${table}" WHERE key = $1`, [key])
  await pool.query(`UPDATE "${table}" SET value = $2 WHERE key = $1`, [key, Buffer.from(change(rows[0].value.toString('utf8')))])
}
