// The PostgreSQL server a test file runs on (see levelkit-testkit/postgres:
// LEVELKIT_PG_URL, or a throwaway cluster shared by the files of one tape
// process), one pool of connections the file's databases share (a
// connection costs a server process), and a fresh table name for each
// database a test opens.
import pg from 'pg'
import { postgres } from 'levelkit-testkit/postgres'

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
    // A database whose close failed (abstract-level's suite makes one) keeps
    // its connection checked out, and pool.end() waits for it: not forever.
    const ended = Promise.all(pools.map(pool => pool.end().catch(() => {})))
    await Promise.race([ended, new Promise(resolve => setTimeout(resolve, 2000).unref())])
    await server.stop()
  }
}
