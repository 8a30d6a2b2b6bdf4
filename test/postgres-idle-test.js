// The connections a database opens outside its pool (writer lock,
// listening, snapshots) kept for a moment for the next database of the
// process (lib/backends/postgres-idle.js): reused, with nothing of the last
// owner's session left (DISCARD ALL, a transaction rolled back first), never
// when broken or terminated, never with failover, ended after IDLE_MS, and
// never holding a process open.
import test from 'tape'
import pg from 'pg'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { PostgresLevel } from '../lib/backends/postgres-level.js'
import { WRITER_LOCK_SPACE, PostgresWriterLock, InOrder } from '../lib/backends/postgres-shared.js'
import * as levelkit from '../index.js'
import { connectKept, release, connectionKey, endIdleConnections, idleCount, idleStats, IDLE_MS } from '../lib/backends/postgres-idle.js'
import { postgresForTests } from './util/postgres.js'
import { rejects } from './conformance/index.js'

const server = await postgresForTests(test)
const { pool } = server
const APP = 'levelkit idle test'
const config = { connectionString: server.connectionString, fallback_application_name: APP }
/** @param {Record<string, any>} config */
const connect = async (config) => {
  const client = new pg.Client(config)
  client.on('error', () => {})
  await client.connect()
  return client
}

/** Poll `check` every 10 ms until it is true, for at most `ms`. @param {() => boolean | Promise<boolean>} check */
async function until (check, ms = 15000) {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await new Promise(resolve => setTimeout(resolve, 10))) {
    if (await check()) return true
  }
  return false
}

/** The server processes of sessions named `name`, sorted. @param {string} name @returns {Promise<number[]>} */
async function pids (name) {
  const { rows } = await pool.query('SELECT pid FROM pg_stat_activity WHERE application_name = $1 ORDER BY pid', [name])
  return rows.map(row => row.pid)
}

/** @param {any} client @returns {Promise<number>} */
async function pidOf (client) {
  return (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid
}

/**
 * No kept connection, and no session of an earlier test still ending (a
 * session leaves pg_stat_activity a little after its connection ends).
 */
async function fresh () {
  await endIdleConnections()
  const left = async () => (await pool.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = ANY($1)', [['levelkit writer', 'levelkit listen', 'levelkit snapshot', APP]])).rows[0].n
  if (!await until(async () => await left() === 0)) throw new Error('sessions of an earlier test did not end')
}

/** @param {Record<string, any>} [options] */
async function openShared (options = {}) {
  const db = new PostgresLevel({ connectionString: server.connectionString, table: server.table(), shared: true, ...options })
  await db.open()
  return db
}

/** A shared database holding its writer lock once and listening. @param {Record<string, any>} [options] */
async function sharedWithConnections (options = {}) {
  return withConnections(await openShared(options))
}

/** `db`'s writer lock taken once, and its listening connection up. @param {PostgresLevel} db */
async function withConnections (db) {
  const lock = /** @type {any} */ (db.sharedWriterLock())
  lock.listen(() => {})
  await lock.listening()
  const letGo = await lock.acquire()
  return { db, lock, letGo }
}

test('postgres idle: a closed database\'s writer and listening connections serve the next database', async t => {
  await fresh()
  const first = await sharedWithConnections()
  const before = [...await pids('levelkit writer'), ...await pids('levelkit listen')].sort()
  t.is(before.length, 2, 'a writer and a listening connection')
  // Opened first: the connections are kept for a second only, and an open
  // on a loaded machine can take that long.
  const next = await openShared()
  first.letGo()
  await first.db.close()
  t.ok(await until(() => idleCount() === 2), 'both kept once reset')
  const second = await withConnections(next)
  try {
    const after = [...await pids('levelkit writer'), ...await pids('levelkit listen')].sort()
    t.same(after, before, 'the same two sessions, not new ones')
    t.is(idleCount(), 0, 'taken from the idle set')
    const [writer] = await pids('levelkit writer')
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM pg_locks WHERE locktype = \'advisory\' AND granted AND pid = $1 AND classid = $2', [writer, WRITER_LOCK_SPACE])
    t.is(rows[0].n, 1, 'the next database\'s writer lock is held on it')
    t.ok(second.lock.held(), 'and held as far as the lock knows')
  } finally {
    second.letGo()
    await second.db.close()
    await endIdleConnections()
  }
})

test('postgres idle: nothing of the last owner\'s session is left (settings, LISTEN, advisory locks, prepared statements, temporary tables)', async t => {
  await fresh()
  const client = await connectKept(config, connect)
  const pid = await pidOf(client)
  await client.query('SET statement_timeout = 4321')
  await client.query('LISTEN levelkit_idle_test')
  await client.query('SELECT pg_advisory_lock(7, 8)')
  await client.query('CREATE TEMP TABLE idle_temp (x int)')
  const named = { name: 'levelkit_idle_q', text: 'SELECT 1 AS one' }
  t.is((await client.query(named)).rows[0].one, 1, 'a named statement prepared')
  await release(client)
  t.is(idleCount(), 1, 'kept')
  const again = await connectKept(config, connect)
  try {
    t.is(again, client, 'the same connection')
    t.is(await pidOf(again), pid, 'the same session')
    t.is((await again.query('SHOW statement_timeout')).rows[0].statement_timeout, '0', 'SET values reset')
    t.is((await again.query('SELECT count(*)::int AS n FROM pg_listening_channels()')).rows[0].n, 0, 'listening to nothing')
    const locks = await pool.query('SELECT count(*)::int AS n FROM pg_locks WHERE locktype = \'advisory\' AND pid = $1', [pid])
    t.is(locks.rows[0].n, 0, 'no advisory lock held')
    t.is((await again.query('SELECT to_regclass(\'pg_temp.idle_temp\') AS t')).rows[0].t, null, 'no temporary table')
    t.is((await again.query(named)).rows[0].one, 1, 'a named statement of the last owner prepared again (pg told it was deallocated)')
  } finally {
    await again.end()
  }
})

test('postgres idle: a connection given back in a transaction (or a failed one) is rolled back first', async t => {
  await fresh()
  const table = server.table()
  await pool.query(`CREATE TABLE ${table} (id int PRIMARY KEY, n int)`)
  await pool.query(`INSERT INTO ${table} VALUES (1, 0)`)
  const client = await connectKept(config, connect)
  await client.query('BEGIN')
  await client.query(`INSERT INTO ${table} VALUES (2, 0)`)
  await client.query(`SELECT * FROM ${table} WHERE id = 1 FOR UPDATE`)
  await release(client)
  t.is(idleCount(), 1, 'kept')
  const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${table}`)
  t.is(rows[0].n, 1, 'its insert rolled back')
  const other = await pool.connect()
  try {
    await other.query('SET lock_timeout = 5000')
    await other.query(`UPDATE ${table} SET n = 1 WHERE id = 1`)
    t.pass('its row lock let go')
  } finally {
    other.release()
  }
  const again = await connectKept(config, connect)
  t.is(again, client, 'the same connection')
  await again.query('BEGIN')
  await again.query('SELECT 1 / 0').catch(() => {})
  await release(again)
  t.is(idleCount(), 1, 'a failed transaction\'s kept too')
  const third = await connectKept(config, connect)
  try {
    t.is(third, client, 'the same connection')
    t.is((await third.query('SELECT 2 AS two')).rows[0].two, 2, 'out of the failed transaction')
  } finally {
    await third.end()
    await pool.query(`DROP TABLE ${table}`)
  }
})

test('postgres idle: a terminated connection is never reused', async t => {
  await fresh()
  // Terminated while idle.
  const client = await connectKept(config, connect)
  const pid = await pidOf(client)
  await release(client)
  t.is(idleCount(), 1, 'kept')
  const ended = new Promise(resolve => client.once('end', resolve))
  await pool.query('SELECT pg_terminate_backend($1)', [pid])
  await ended
  // (At once: not by the expiry a second later.)
  t.is(idleCount(), 0, 'dropped from the idle set when its connection ends')
  const renewed = await connectKept(config, connect)
  t.isNot(renewed, client, 'a new connection')
  t.isNot(await pidOf(renewed), pid, 'a new session')
  // Terminated while in use: given back, it is ended, not kept.
  const renewedPid = await pidOf(renewed)
  const failed = new Promise(resolve => renewed.once('error', resolve))
  await pool.query('SELECT pg_terminate_backend($1)', [renewedPid])
  await failed
  await release(renewed)
  t.is(idleCount(), 0, 'not kept')
  const third = await connectKept(config, connect)
  try {
    t.isNot(await pidOf(third), renewedPid, 'a new session again')
  } finally {
    await third.end()
  }
})

test('postgres idle: settings that differ, or are not plain data, do not share connections', t => {
  const base = { connectionString: 'postgresql://u@h:5432/db', fallback_application_name: 'levelkit writer', keepAlive: true, keepAliveInitialDelayMillis: 10000 }
  const key = connectionKey(base)
  t.is(typeof key, 'string', 'plain settings have a key')
  t.is(connectionKey({ ...base, max: 11, idleTimeoutMillis: 5 }), key, 'pool-only settings do not count')
  t.is(connectionKey({ keepAliveInitialDelayMillis: 10000, keepAlive: true, fallback_application_name: 'levelkit writer', connectionString: 'postgresql://u@h:5432/db' }), key, 'nor their order')
  for (const [change, what] of /** @type {Array<[object, string]>} */ ([
    [{ connectionString: 'postgresql://u@h2:5432/db' }, 'another host'],
    [{ connectionString: 'postgresql://u@h:5433/db' }, 'another port'],
    [{ fallback_application_name: 'levelkit listen' }, 'another purpose'],
    [{ keepAliveInitialDelayMillis: 5000 }, 'another keepalive'],
    [{ ssl: { rejectUnauthorized: false } }, 'TLS settings']
  ])) t.isNot(connectionKey({ ...base, ...change }), key, what)
  t.is(connectionKey({ ...base, password: () => 'secret' }), null, 'a password function: never kept')
  t.is(connectionKey({ ...base, ssl: { ca: Buffer.from('x') } }), null, 'a buffer: never kept')
  t.end()
})

test('postgres idle: connections to a primary found among hosts are never kept', async t => {
  await fresh()
  const { db, letGo } = await sharedWithConnections({ connectionString: `${server.connectionString}?target_session_attrs=primary` })
  const before = [...await pids('levelkit writer'), ...await pids('levelkit listen')]
  t.is(before.length, 2, 'a writer and a listening connection')
  const kept = idleStats.kept
  letGo()
  await db.close()
  t.ok(await until(async () => [...await pids('levelkit writer'), ...await pids('levelkit listen')].length === 0), 'both sessions end')
  t.is(idleStats.kept, kept, 'none was kept, even for a while')
})

test('postgres idle: kept connections end after a short while', async t => {
  await fresh()
  const client = await connectKept(config, connect)
  const pid = await pidOf(client)
  await release(client)
  t.same(await pids(APP), [pid], 'kept: its session stays')
  const started = Date.now()
  t.ok(await until(async () => (await pids(APP)).length === 0), 'its session ends')
  t.ok(Date.now() - started < IDLE_MS + 10000, `within about ${IDLE_MS} ms`)
  t.is(idleCount(), 0, 'and it left the idle set')
})

test('postgres idle: kept connections do not hold a process open', async t => {
  // A child keeps one and has nothing else to do: it exits at once, with the
  // connection still kept (not after the timer ended it).
  const module = fileURLToPath(new URL('../lib/backends/postgres-idle.js', import.meta.url))
  const pgPath = fileURLToPath(import.meta.resolve('pg'))
  const script = `
    const { default: pg } = await import(${JSON.stringify(pgPath)})
    const { connectKept, release, idleCount } = await import(${JSON.stringify(module)})
    const connect = async config => { const client = new pg.Client(config); client.on('error', () => {}); await client.connect(); return client }
    const client = await connectKept(${JSON.stringify(config)}, connect)
    await client.query('SELECT 1')
    await release(client)
    process.on('exit', () => console.log('kept at exit: ' + idleCount()))
  `
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  let output = ''
  child.stdout.on('data', chunk => { output += chunk })
  const code = await new Promise(resolve => child.on('close', resolve))
  t.is(code, 0, 'the child exits cleanly')
  t.is(output.trim(), 'kept at exit: 1', 'with its connection still kept: the idle socket and timer were unref\'d')
})

test('postgres idle: endIdleConnections() resolves in a process with nothing else to do (then the server can be stopped)', async t => {
  // A kept socket is unref'd: a test file's last cleanup awaited its end and
  // the process exited inside that await, before stopping its throwaway
  // cluster (left running after test/transaction-snapshot-test.js).
  const module = fileURLToPath(new URL('../lib/backends/postgres-idle.js', import.meta.url))
  const pgPath = fileURLToPath(import.meta.resolve('pg'))
  const script = `
    const { default: pg } = await import(${JSON.stringify(pgPath)})
    const { connectKept, release, endIdleConnections, idleCount } = await import(${JSON.stringify(module)})
    const connect = async config => { const client = new pg.Client(config); client.on('error', () => {}); await client.connect(); return client }
    const client = await connectKept(${JSON.stringify(config)}, connect)
    await release(client)
    const kept = idleCount()
    await endIdleConnections()
    console.log('ended ' + kept)
  `
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'ignore'] })
  let output = ''
  child.stdout.on('data', chunk => { output += chunk })
  const code = await new Promise(resolve => child.on('close', resolve))
  t.is(output.trim(), 'ended 1', 'the await came back, the kept connection ended')
  t.is(code, 0, 'the child exits cleanly (not 13: a top-level await left unsettled)')
})

test('postgres idle: endIdleConnections() from levelkit ends a closed database\'s sessions at once: DROP DATABASE right after', async t => {
  t.is(typeof levelkit.endIdleConnections, 'function', 'levelkit exports endIdleConnections()')
  await fresh()
  // A database of its own, so that DROP DATABASE shows what is left of it.
  const name = `lk_idle_drop_${process.pid}`
  await pool.query(`DROP DATABASE IF EXISTS ${name}`)
  await pool.query(`CREATE DATABASE ${name}`)
  const url = new URL(server.connectionString)
  url.pathname = `/${name}`
  const db = await levelkit.open({ backend: 'postgres', connectionString: url.href, shared: true })
  const items = db.collection('items')
  await items.insert({ n: 1 })
  await db.transaction(async (/** @type {any} */ tx) => items.in(tx).get(1), { readOnly: true })
  const sessions = async () => (await pool.query('SELECT application_name AS name FROM pg_stat_activity WHERE datname = $1 ORDER BY 1', [name])).rows.map(row => row.name)
  const names = await sessions()
  t.ok(['levelkit writer', 'levelkit listen', 'levelkit snapshot'].every(purpose => names.includes(purpose)), `a writer, a listening and a snapshot connection (${names})`)
  await db.close()
  await levelkit.endIdleConnections()
  t.is(idleCount(), 0, 'nothing kept')
  // A backend leaves pg_stat_activity a moment after its connection ends: far less than the second a kept one stays.
  t.ok(await until(async () => (await sessions()).length === 0, IDLE_MS / 4), 'no session of the database left')
  await pool.query(`DROP DATABASE ${name}`)
  t.pass('DROP DATABASE right after')
})

test('postgres idle: endIdleConnections() also ends a connection given back while a statement was still running on it', async t => {
  await fresh()
  const client = await connectKept(config, connect)
  const pid = await pidOf(client)
  const queue = new InOrder(client)
  const running = queue.query('SELECT pg_sleep(0.3)')
  // Its reset waits behind the statement (as a writer's behind its last batch).
  const given = release(client, queue)
  await endIdleConnections()
  await running.catch(() => {})
  await given
  t.is(idleCount(), 0, 'not kept once the statement ended')
  t.ok(await until(async () => !(await pids(APP)).includes(pid), IDLE_MS / 4), 'its session ends')
})

test('postgres idle: a writer lock closed while its LISTEN is in flight gives the listening connection back', async t => {
  await fresh()
  /** @type {any} */
  let listening = null
  /** @type {() => void} */
  let answer = () => {}
  const held = new Promise(resolve => { answer = () => resolve(undefined) })
  /** @type {(value?: unknown) => void} */
  let sent = () => {}
  const listenSent = new Promise(resolve => { sent = resolve })
  const lock = new PostgresWriterLock({
    lockKey: 4242,
    connect: async () => {
      const client = await connect({ ...config, fallback_application_name: APP })
      listening = client
      const query = client.query.bind(client)
      // The LISTEN's answer held back until the lock is closed.
      /** @param {any} statement @param {any} values */
      async function holding (statement, values) {
        if (typeof statement === 'string' && statement.startsWith('LISTEN')) {
          sent()
          const result = await query(statement, values)
          await held
          return result
        }
        return query(statement, values)
      }
      client.query = /** @type {any} */ (holding)
      return client
    },
    route: () => {},
    notify: async () => {}
  }, 'idle_listen_test')
  lock.listen(() => {})
  await listenSent
  lock.close()
  answer()
  const ended = await until(() => listening._ending === true || listening._connected === false, 5000)
  t.ok(ended, 'the listening connection is ended (or kept reset) once its LISTEN answers')
  t.ok(await until(async () => (await pids(APP)).length === 0, 5000), 'its session is gone')
  t.is(lock.leased, false, 'the closed lock is not listening')
})

test('postgres idle: a new connection lost during its keepalive settings rejects with LEVELKIT_BACKEND_UNAVAILABLE', async t => {
  await fresh()
  // With key locks, a section's first statement connects: the failure reaches the caller (with
  // 'table' and 'serializable' the write takes the lock again on a new connection, and lands).
  const db = await levelkit.open({ backend: 'postgres', connectionString: server.connectionString, table: server.table(), shared: true, locking: 'keys' })
  const items = db.collection('items')
  const query = pg.Client.prototype.query
  let cut = 0
  // The writer's socket destroyed as its keepalive SET is sent, right after connecting.
  /** @this {any} @param {any} statement @param {any[]} rest */
  function cutting (statement, ...rest) {
    if (typeof statement === 'string' && statement.startsWith('SET tcp_keepalives_idle') && this.connectionParameters.fallback_application_name === 'levelkit writer' && cut++ === 0) {
      this.connection.stream.destroy()
    }
    return query.call(this, statement, ...rest)
  }
  pg.Client.prototype.query = /** @type {any} */ (cutting)
  try {
    const err = await rejects(t, items.insert({ n: 1 }), 'LEVELKIT_BACKEND_UNAVAILABLE', 'the write whose section connected')
    t.match(String(/** @type {any} */ (err)?.message), /Connection terminated/, 'saying the connection was lost')
  } finally {
    pg.Client.prototype.query = query
  }
  t.is(cut, 1, 'one connection was cut')
  const id = await items.insert({ n: 2 })
  t.same(await items.get(id), { id, n: 2 }, 'the next write connects again and lands')
  await db.close()
})
