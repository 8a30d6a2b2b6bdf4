// The postgres backend as an abstract-level 3 database: abstract-level's own
// compliance suite (and the same on a sublevel), then what is PostgreSQL's
// own: chunked iteration, snapshots held by a transaction, the table it
// lives in, and errors.
import test from 'tape'
import pg from 'pg'
import { spawn } from 'node:child_process'
import suite from 'abstract-level/test/index.js'
import { AbstractSublevel } from 'abstract-level'
import { PostgresLevel } from '../lib/backends/postgres-level.js'
import { endIdleConnections } from '../lib/backends/postgres-idle.js'
import { open, postgresTables } from '../index.js'
import { postgresForTests } from './util/postgres.js'
import { rejects } from './conformance/index.js'

const server = await postgresForTests(test)
// The compliance suite's pool, named so that its sessions (the pool's and
// the snapshots', which take its settings) can be counted at the end.
const complianceName = `lk_compliance_${process.pid}`
const compliancePool = new pg.Pool({ connectionString: server.connectionString, max: 20, application_name: complianceName })
compliancePool.on('error', () => {})

/** A database on a table of its own, with a pool of its own. @param {any} [options] */
const level = (options) => new PostgresLevel({ connectionString: server.connectionString, table: server.table(), ...options })

/**
 * The compliance suite makes a database per test, thousands: they share the
 * file's pool, and a table whose database is closed is used again, emptied
 * (or dropped, for an open that needs it missing) at its next first open.
 * Creating a table costs far more than emptying a small one.
 */
class TestLevel extends PostgresLevel {
  #reused
  #opened = false
  evicted = false
  // Closed, and its table's lock let go: a database whose close failed
  // (a test makes one) is 'closed' but keeps the lock, as on LevelDB.
  released = false

  // Made for the suite's pass on sublevels, which never closes it.
  forSublevel = false
  // Its sublevels open now.
  sublevels = 0
  /** @type {Set<any>} */
  sublevelSet = new Set()

  /** @param {any} options @param {boolean} reused */
  constructor (options, reused) {
    super(options)
    this.#reused = reused
  }

  /** @param {any} resource */
  attachResource (resource) {
    super.attachResource(resource)
    if (resource instanceof AbstractSublevel) {
      this.sublevels++
      this.sublevelSet.add(resource)
    }
  }

  /** @param {any} resource */
  detachResource (resource) {
    super.detachResource(resource)
    if (resource instanceof AbstractSublevel) this.sublevels--
  }

  /** @param {any} options */
  async _open (options) {
    if (this.evicted) throw new Error(`test bug: ${this.table} was given to another database after this one closed`)
    if (this.#reused && !this.#opened) {
      if (options.createIfMissing && !options.errorIfExists) {
        await server.pool.query(`DELETE FROM "${this.table}"`).catch(err => { if (err.code !== '42P01') throw err })
      } else {
        await server.pool.query(`DROP TABLE IF EXISTS "${this.table}"`)
      }
    }
    this.#opened = true
    this.released = false
    return super._open(options)
  }

  async _close () {
    await super._close()
    this.released = true
  }
}

/** @type {TestLevel[]} databases whose table may be used again once they are closed */
const owners = []

// abstract-level's suite runs a second time on sublevels, each of a
// database of factory()'s (index.js: `factory().sublevel('test', opts)`)
// that it never closes: left open, each would keep its table (never used
// again) and its idle snapshot connections until the process ends, and
// keep the process from ending (with LEVELKIT_PG_URL). Such a database is
// closed once its sublevels are, at the next factory() call (a test is
// done with a sublevel it closed by then) and at the end.
const SUBLEVEL_PASS = /abstract-level[\\/]test[\\/]index\.js/

/** Close the sublevel pass's databases whose sublevels are closed. */
function closeLeftParents () {
  for (const db of owners) {
    if (db.forSublevel && db.status === 'open' && db.sublevels === 0) db.close().catch(() => {})
  }
}

/** @param {any} [options] */
function factory (options) {
  const forSublevel = SUBLEVEL_PASS.test(String(new Error().stack))
  if (forSublevel) closeLeftParents()
  const index = owners.findIndex(db => db.status === 'closed' && db.released)
  /** @type {TestLevel} */
  let db
  if (index === -1) {
    db = new TestLevel({ pool: compliancePool, table: server.table(), ...options }, false)
    owners.push(db)
  } else {
    const previous = owners[index]
    previous.evicted = true
    db = new TestLevel({ pool: compliancePool, table: previous.table, ...options }, true)
    owners[index] = db
  }
  db.forSublevel = forSublevel
  return db
}

suite({ test, factory })

test('postgres: the compliance suite\'s databases, closed, leave no session behind', async t => {
  // Some of its tests leave a database (or a sublevel) open, listeners and
  // all: those of tests that have ended are not told of this close.
  const left = owners.filter(db => db.status === 'open')
  for (const db of left) for (const emitter of [db, ...db.sublevelSet]) emitter.removeAllListeners()
  await Promise.all(left.map(async db => {
    try {
      await db.close()
    } catch {
      // A sublevel whose postopen hook failed, then its close, is locked
      // for good (abstract-level's hooks test makes one): let it go.
      for (const sublevel of db.sublevelSet) await sublevel.close().catch(() => db.detachResource(sublevel))
      await db.close()
    }
  }))
  // One whose postopen hook and a resource's close both failed is 'closed'
  // and locked for good, its table lock still held (abstract-level's
  // postopen test makes one): ended as its close() would have.
  for (const db of owners) if (db.status === 'closed' && !db.released) await db._close()
  t.ok(owners.every(db => db.status === 'closed' && db.released), `every database of the suite closed (${owners.length} tables)`)
  // (pool.end() waits for connections checked out: a lock holder left would show below, not hang here.)
  await Promise.race([compliancePool.end(), new Promise(resolve => setTimeout(resolve, 5000).unref())])
  // Connections kept for the next database (postgres-idle.js), ended now.
  await endIdleConnections()
  // A backend leaves pg_stat_activity a moment after its connection ends.
  /** @type {any[]} */
  let sessions = []
  for (const deadline = Date.now() + 5000; Date.now() < deadline; await new Promise(resolve => setTimeout(resolve, 20))) {
    sessions = (await server.pool.query('SELECT state, query FROM pg_stat_activity WHERE application_name = $1', [complianceName])).rows
    if (sessions.length === 0) break
  }
  t.same(sessions, [], 'no session of the suite\'s is left (pool, lock holder, snapshots)')
})

/** A connection of the test's own, beside the backend's. @param {any} t */
async function sql (t) {
  const client = new pg.Client({ connectionString: server.connectionString })
  await client.connect()
  t.teardown(() => client.end())
  return client
}

const key = (/** @type {number} */ i) => String(i).padStart(5, '0')

/** @param {any} db @param {number} n */
async function fill (db, n) {
  await db.batch(Array.from({ length: n }, (_, i) => ({ type: 'put', key: key(i), value: `v${i}` })))
}

test('postgres: a long range is read in chunks, in both directions, with ranges and limits', async t => {
  const db = level()
  await db.open()
  await fill(db, 2500)
  const all = Array.from({ length: 2500 }, (_, i) => key(i))
  t.same(await db.keys().all(), all, 'every key, in order (more than one chunk)')
  t.same(await db.keys({ reverse: true }).all(), [...all].reverse(), 'reverse')
  t.same(await db.keys({ gt: key(10), lte: key(2400), limit: 1500 }).all(), all.slice(11, 1511), 'gt, lte and limit')
  t.same(await db.keys({ gte: key(10), lt: key(2400), reverse: true, limit: 1200 }).all(), all.slice(10, 2400).reverse().slice(0, 1200), 'gte, lt, limit, reverse')

  const it = db.iterator({ gte: key(100) })
  const got = []
  for (let i = 0; i < 1300; i++) got.push((await it.next())[0])
  t.same(got, all.slice(100, 1400), 'next() one by one, across chunks')
  t.same((await it.nextv(1000)).map((/** @type {any} */ e) => e[0]), all.slice(1400, 2400), 'nextv() across chunks')
  it.seek(key(150))
  t.same((await it.nextv(3)).map((/** @type {any} */ e) => e[1]), ['v150', 'v151', 'v152'], 'seek() back, then nextv() (entries)')
  it.seek(key(50))
  t.same(await it.nextv(1), [[key(100), 'v100']], 'seek() before the range: the range\'s first key')
  await it.close()

  const values = db.values({ lt: key(3), reverse: true })
  t.same(await values.all(), ['v2', 'v1', 'v0'], 'values only')
  await db.close()
})

test('postgres: an iterator without a snapshot sees a write made between two of its chunks', async t => {
  // Chunks are statements of their own (keyset pagination, not one cursor
  // held open): hence supports.implicitSnapshots = false.
  const db = level()
  await db.open()
  t.is(db.supports.implicitSnapshots, false, 'no implicit snapshots')
  await fill(db, 100)
  const it = db.keys()
  const first = await it.nextv(16)
  t.same(first, Array.from({ length: 16 }, (_, i) => key(i)), 'first chunk')
  await db.put(key(99999), 'late')
  const rest = await it.all()
  t.is(rest[rest.length - 1], key(99999), 'the later chunk holds the key written after the iterator began')
  await db.close()
})

test('postgres: a snapshot is a transaction held until it is closed, on a connection of its own', async t => {
  const name = `levelkit_snapshots_${process.pid}`
  const db = level({ pg: { application_name: name } })
  await db.open()
  const client = await sql(t)
  await fill(db, 1500)
  const snapshot = db.snapshot()
  // Made right after snapshot(), before its transaction has begun: not seen.
  await db.put(key(0), 'changed')
  await db.del(key(1))
  await db.batch([{ type: 'put', key: key(5000), value: 'new' }, { type: 'del', key: key(2) }])
  await db.clear({ gte: key(1000), lt: key(2000) })
  t.is(await db.get(key(0), { snapshot }), 'v0', 'get() through the snapshot: the value before the put')
  t.same(await db.getMany([key(1), key(2), key(5000)], { snapshot }), ['v1', 'v2', undefined], 'getMany() through the snapshot')
  t.is((await db.keys({ snapshot }).all()).length, 1500, 'iterating the snapshot (several chunks) sees the state before')
  t.is((await db.keys().all()).length, 1500 - 2 - 500 + 1, 'the database itself sees the writes')
  const sub = db.sublevel('s')
  await sub.put('a', '1')
  const subSnapshot = sub.snapshot()
  await sub.put('a', '2')
  t.is(await sub.get('a', { snapshot: subSnapshot }), '1', 'a sublevel\'s snapshot')
  await subSnapshot.close()

  const held = async () => (await client.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND state LIKE 'idle in transaction%'", [name])).rows[0].n
  t.is(await held(), 1, 'one transaction held open: the snapshot')
  await snapshot.close()
  t.is(await held(), 0, 'closing the snapshot ends its transaction')
  await rejects(t, db.get(key(0), { snapshot }), 'LEVEL_SNAPSHOT_NOT_OPEN', 'a closed snapshot cannot be read')
  db.snapshot()
  await db.close()
  t.is(await held(), 0, 'closing the database ends the transactions of the snapshots left open')
})

test('postgres: snapshots that may wait hold at most maxSnapshots connections; explicit ones never wait', async t => {
  const name = `levelkit_snapshot_cap_${process.pid}`
  t.throws(() => level({ maxSnapshots: 0 }), /maxSnapshots option must be a positive integer/, 'maxSnapshots: 0 is refused')
  const db = level({ pg: { application_name: name }, maxSnapshots: 2 })
  await db.open()
  // On the pool: the transactions below ask at once (one connection would be sent a statement while busy).
  const held = async () => (await server.pool.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND state LIKE 'idle in transaction%'", [name])).rows[0].n
  await db.put('a', '1')
  const snapshots = [1, 2, 3, 4].map(() => db.snapshot({ mayIncludeLaterWrites: true }))
  /** @type {string[]} */
  const answered = []
  const reads = snapshots.map((snapshot, i) => db.get('a', { snapshot }).then(value => { answered.push(`${i}:${value}`) }))
  await Promise.all(reads.slice(0, 2))
  await new Promise(resolve => setTimeout(resolve, 200))
  t.same(answered.sort(), ['0:1', '1:1'], 'two answer; the third and fourth wait for a connection')
  t.is(await held(), 2, 'two transactions held')
  // An explicit snapshot does not wait (a write made after it waits for
  // it): with two held it takes a third connection and sees the state at its call.
  const explicit = db.snapshot()
  await db.put('a', '2')
  t.is(await db.get('a', { snapshot: explicit }), '1', 'an explicit snapshot beyond the cap is taken, before the later put')
  t.is(await held(), 3, 'three held: the cap counts explicit snapshots but does not stop them')
  await explicit.close()
  t.same(answered.length, 2, 'closing it frees no place: the two waiting still wait (three were held, the cap is two)')
  await snapshots[0].close()
  await reads[2]
  t.same(answered.slice(2), ['2:2'], 'closing one of the two lets the first waiting one take its connection, in call order')
  t.is(await held(), 2, 'still two held')
  await snapshots[1].close()
  await reads[3]
  t.same(answered.slice(3), ['3:2'], 'then the next')
  await Promise.all(snapshots.slice(2).map(s => s.close()))
  t.is(await held(), 0, 'none held once closed')

  // Read-only transactions through open(): many at once, two snapshots at a time.
  const kit = await open({ backend: 'postgres', connectionString: server.connectionString, table: server.table(), pg: { application_name: name }, maxSnapshots: 2 })
  const items = kit.collection('items')
  await items.insert({ n: 1 })
  let most = 0
  const results = await Promise.all(Array.from({ length: 8 }, () => kit.transaction(async tx => {
    const value = await items.in(tx).get(1)
    most = Math.max(most, await held())
    return value.n
  }, { readOnly: true })))
  t.same(results, Array(8).fill(1), 'eight read-only transactions at once all answer')
  t.ok(most <= 2, `at most two snapshot transactions held at a time (${most})`)
  await kit.close()
  await db.close()
})

test('postgres: a batch is one statement; the last operation on a key wins', async t => {
  const db = level()
  await db.open()
  await db.batch([
    { type: 'put', key: 'a', value: '1' },
    { type: 'del', key: 'a' },
    { type: 'put', key: 'b', value: '1' },
    { type: 'put', key: 'b', value: '2' },
    { type: 'put', key: 'c', value: '1' }
  ])
  await db.batch([{ type: 'del', key: 'c' }, { type: 'put', key: 'c', value: '3' }, { type: 'put', key: 'd', value: '4' }, { type: 'del', key: 'd' }])
  t.same(await db.iterator().all(), [['b', '2'], ['c', '3']], 'a deleted, b and c as last written, d deleted')
  await db.close()
})

test('postgres: the table, its name and what is in it', async t => {
  const client = await sql(t)
  const table = server.table()
  const db = level({ table })
  t.is(db.table, table, 'db.table')
  await db.open()
  await db.put('k', 'v')
  const { rows } = await client.query(`SELECT encode(key, 'escape') AS key, encode(value, 'escape') AS value FROM "${table}"`)
  t.same(rows, [{ key: 'k', value: 'v' }], 'one row per key, bytes as given')
  await db.close()

  const other = level({ table })
  await other.open()
  t.is(await other.get('k'), 'v', 'a database on the same table reads what was written')
  await other.close()

  for (const bad of ['Upper', '1abc', 'a-b', 'a"b', '', 'x'.repeat(64), 42]) {
    t.throws(() => level({ table: bad }), (/** @type {any} */ err) => err.code === 'LEVELKIT_INVALID', `table ${JSON.stringify(bad)} is refused`)
  }
  t.throws(() => level({ poolSize: 0 }), (/** @type {any} */ err) => err.code === 'LEVELKIT_INVALID', 'poolSize 0 is refused')

  const foreign = server.table()
  await client.query(`CREATE TABLE "${foreign}" (id int)`)
  await rejects(t, level({ table: foreign }).open(), 'LEVEL_DATABASE_NOT_OPEN', 'a table of another shape is refused at open')
})

test('postgres: opening a database on a new table costs its pool no connection', async t => {
  // A statement that fails through pool.query() makes pg's pool end its
  // connection: the open's look for the table must not fail when it is missing.
  const pool = new pg.Pool({ connectionString: server.connectionString, max: 4 })
  pool.on('error', () => {})
  let made = 0
  let ended = 0
  pool.on('connect', () => { made++ })
  pool.on('remove', () => { ended++ })
  try {
    for (let i = 0; i < 3; i++) {
      const db = new PostgresLevel({ pool, table: server.table() })
      await db.open()
      await db.put('k', String(i))
      t.is(await db.get('k'), String(i), `database ${i + 1} on a new table opens, writes and reads`)
      await db.close()
    }
    t.is(ended, 0, 'no connection of the pool ended')
    t.ok(made <= 2, `the pool's connections served every open (${made} made: the lock's and one for statements)`)
    const foreign = server.table()
    await pool.query(`CREATE TABLE "${foreign}" (key text, value text)`)
    await rejects(t, new PostgresLevel({ pool, table: foreign }).open(), 'LEVEL_DATABASE_NOT_OPEN', 'a table of another shape is still refused')
  } finally {
    await pool.end()
  }
})

test('postgres: databases opening a new table at once (other processes) end no connection: one creates, the others wait', async t => {
  // Two sessions creating one table at once: the second fails (23505 or
  // 42P07) once the first commits, and a statement failing through
  // pool.query() makes pg's pool end its connection.
  const pools = Array.from({ length: 6 }, () => new pg.Pool({ connectionString: server.connectionString, max: 2 }))
  let ended = 0
  for (const pool of pools) {
    pool.on('error', () => {})
    pool.on('remove', () => { ended++ })
  }
  try {
    for (let round = 0; round < 3; round++) {
      const table = server.table()
      // Shared, serializable: the table and its 64 lock tables, each made once.
      const dbs = pools.map(pool => new PostgresLevel({ pool, table, shared: true, locking: 'serializable' }))
      const opened = await Promise.allSettled(dbs.map(db => db.open()))
      t.same(opened.map(result => result.status === 'rejected' ? result.reason.code ?? result.reason.message : 'open'), dbs.map(() => 'open'), `round ${round + 1}: all ${dbs.length} open`)
      await Promise.all(dbs.map(db => db.close()))
      await server.pool.query(postgresTables(table).map(name => `DROP TABLE IF EXISTS "${name}"`).join('; '))
    }
    t.is(ended, 0, 'no pool connection ended')
  } finally {
    await Promise.all(pools.map(pool => pool.end()))
  }
})

test('postgres shared (keys): a statement of a transaction lost with its connection, failing after the next began, is LEVELKIT_BACKEND_UNAVAILABLE and leaves the next alone', async t => {
  const db = new PostgresLevel({ connectionString: server.connectionString, table: server.table(), shared: true, locking: 'keys' })
  await db.open()
  try {
    const lock = /** @type {any} */ (db.sharedWriterLock())
    lock.begin()
    const pid = (await lock.query('SELECT pg_backend_pid() AS pid')).rows[0].pid
    const a = lock.query('SELECT pg_sleep(30)')
    // Queued behind a on the writer connection: refused once the connection
    // is gone (heard at once: it may reject before failedA settles).
    const failedB = lock.query('SELECT 1').then(() => null, (/** @type {any} */ err) => err)
    /** @type {Promise<any> | null} */
    let c = null
    // As a section running again would: a new transaction as soon as a fails.
    const failedA = a.then(() => null, err => {
      lock.begin()
      c = lock.query('SELECT 2 AS two')
      return err
    })
    await sleepingIn(pid)
    await server.pool.query('SELECT pg_terminate_backend($1)', [pid])
    const errA = await failedA
    const errB = await failedB
    t.is(errA?.code, 'LEVELKIT_BACKEND_UNAVAILABLE', 'the failing statement of the current transaction: LEVELKIT_BACKEND_UNAVAILABLE')
    t.is(errB?.code, 'LEVELKIT_BACKEND_UNAVAILABLE', `the one queued behind it, failing after the next transaction began: LEVELKIT_BACKEND_UNAVAILABLE (${errB?.code}: ${errB?.message})`)
    t.is(errB?.transactionLost, true, 'its transaction lost: the section runs again')
    t.ok(lock.holding, 'the next transaction is still open')
    t.is((await /** @type {any} */ (c)).rows[0].two, 2, 'and its statement answered, on a new connection')
    await lock.rollback()
  } finally {
    await db.close()
  }
})

test('postgres shared (keys): a lock statement of a transaction lost with its connection, failing after the next began, leaves the next open', async t => {
  const db = new PostgresLevel({ connectionString: server.connectionString, table: server.table(), shared: true, locking: 'keys' })
  await db.open()
  try {
    const lock = /** @type {any} */ (db.sharedWriterLock())
    await lock.lock('!a!', [Buffer.from('one')])
    const pid = (await lock.query('SELECT pg_backend_pid() AS pid')).rows[0].pid
    const a = lock.query('SELECT pg_sleep(30)')
    // A second key of the same transaction: its lock statement is queued
    // behind a, and refused once the connection is gone.
    const failedB = lock.lock('!a!', [Buffer.from('two')]).then(() => null, (/** @type {any} */ err) => err)
    /** @type {Promise<any> | null} */
    let c = null
    const failedA = a.then(() => null, err => {
      lock.begin()
      c = lock.query('SELECT 2 AS two')
      return err
    })
    await sleepingIn(pid)
    await server.pool.query('SELECT pg_terminate_backend($1)', [pid])
    await failedA
    const errB = await failedB
    t.is(errB?.transactionLost, true, `the lock statement's transaction lost: the section runs again (${errB?.code})`)
    t.ok(lock.holding, 'the next transaction is not rolled back by it')
    t.is((await /** @type {any} */ (c)).rows[0].two, 2, 'and its statement answered')
    await lock.rollback()
  } finally {
    await db.close()
  }
})

/** Until the session `pid` runs pg_sleep. @param {number} pid */
async function sleepingIn (pid) {
  for (let i = 0; i < 3000; i++) {
    const { rows } = await server.pool.query('SELECT query FROM pg_stat_activity WHERE pid = $1', [pid])
    if (rows[0]?.query?.includes('pg_sleep')) return
    await new Promise(resolve => setTimeout(resolve, 10))
  }
}

test('postgres: idle snapshot connections end after the pool\'s idleTimeoutMillis, as its own idle connections do', async t => {
  const name = `lk snapshots ${process.pid}`
  const db = await open({ backend: 'postgres', connectionString: server.connectionString, table: server.table(), pg: { idleTimeoutMillis: 300, application_name: name } })
  try {
    const items = db.collection('items')
    await items.insert({ n: 1 })
    const sessions = async () => (await server.pool.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [name])).rows[0].n
    // Three snapshots at once: three connections of their own, kept once done.
    const read = () => db.transaction(async (/** @type {any} */ tx) => { await new Promise(resolve => setTimeout(resolve, 50)); return (await items.in(tx).get(1)).n }, { readOnly: true })
    t.same(await Promise.all([read(), read(), read()]), [1, 1, 1], 'three read-only transactions at once')
    t.ok(await sessions() >= 4, 'their connections kept, beside the lock\'s')
    let left = await sessions()
    for (const deadline = Date.now() + 10000; left > 1 && Date.now() < deadline; left = await sessions()) await new Promise(resolve => setTimeout(resolve, 50))
    t.is(left, 1, 'once idle for 300 ms, only the connection holding the table\'s lock is left')
    t.is(await read(), 1, 'the next read-only transaction connects again')
  } finally {
    await db.close()
  }
})

test('postgres: with the pool\'s allowExitOnIdle, an open database that is not used lets the process exit', async t => {
  const child = spawn(process.execPath, ['--input-type=module', '-e', `
    const { open } = await import(${JSON.stringify(new URL('../index.js', import.meta.url).href)})
    const db = await open({ backend: 'postgres', connectionString: ${JSON.stringify(server.connectionString)}, table: ${JSON.stringify(server.table())}, pg: { allowExitOnIdle: true } })
    const items = db.collection('items')
    await items.insert({ n: 1 })
    const n = await db.transaction(async tx => (await items.in(tx).get(1)).n, { readOnly: true })
    process.on('exit', () => console.log('exited, read ' + n))
  `], { stdio: ['ignore', 'pipe', 'inherit'] })
  let output = ''
  child.stdout.on('data', chunk => { output += chunk })
  const timer = setTimeout(() => child.kill(), 10000)
  const code = await new Promise(resolve => child.on('close', resolve))
  clearTimeout(timer)
  t.is(output.trim(), 'exited, read 1', 'it wrote, read in a snapshot, and exited with the database open')
  t.is(code, 0, 'by itself (not killed after 10 s)')
})

test('postgres: postgresTables() names every table a database uses, its lock tables too', async t => {
  const table = server.table()
  const names = postgresTables(table)
  t.is(names.length, 65, 'the table and 64 lock tables')
  t.is(names[0], table, 'the table first')
  const db = await open({ backend: 'postgres', connectionString: server.connectionString, table, shared: true, locking: 'serializable' })
  await db.collection('items').insert({ n: 1 })
  await db.close()
  const made = async () => (await server.pool.query('SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND starts_with(tablename, $1) ORDER BY 1', [table])).rows.map(row => row.tablename)
  t.same(await made(), [...names].sort(), 'exactly the tables a serializable open made')
  await server.pool.query(names.map(name => `DROP TABLE IF EXISTS "${name}"`).join('; '))
  t.same(await made(), [], 'dropping them leaves none')
  const long = 'x'.repeat(63)
  t.ok(postgresTables(long).every(name => name.length <= 63), 'names of at most 63 characters for a 63-character table')
  for (const bad of ['Upper', '', 42]) t.throws(() => postgresTables(/** @type {any} */ (bad)), (/** @type {any} */ err) => err.code === 'LEVELKIT_INVALID', `${JSON.stringify(bad)} refused`)
})

test('postgres: errors of the server are LEVELKIT_BACKEND_UNAVAILABLE, with the SQL state', async t => {
  const client = await sql(t)
  const db = level()
  await db.open()
  await db.put('k', 'v')
  await client.query(`DROP TABLE "${db.table}"`)
  const err = await rejects(t, db.get('k'), 'LEVELKIT_BACKEND_UNAVAILABLE', 'get() on a table dropped behind its back')
  t.is(/** @type {any} */ (err).sqlState, '42P01', 'sqlState: undefined_table')
  await rejects(t, db.keys().all(), 'LEVELKIT_BACKEND_UNAVAILABLE', 'an iterator too')
  await db.close()
})

test('postgres: open({ backend: \'postgres\' })', async t => {
  const table = server.table()
  const db = await open({ backend: 'postgres', connectionString: server.connectionString, table })
  const users = db.collection('users', { indexes: { name: { unique: true, key: (/** @type {any} */ u) => u.name } } })
  const id = await users.insert({ name: 'ada' })
  t.same(await users.getBy('name', 'ada'), { id, name: 'ada' }, 'a collection over PostgreSQL')
  await db.close()

  await rejects(t, open({ backend: 'postgres', location: 'x', connectionString: server.connectionString }), 'LEVELKIT_INVALID', 'no location')
  await rejects(t, open({ backend: 'postgres', connectionString: server.connectionString, table: 'No' }), 'LEVELKIT_INVALID', 'a bad table name')
  await rejects(t, open({ backend: 'postgres', connectionString: 'postgresql://nobody@127.0.0.1:1/none' }), 'LEVELKIT_BACKEND_UNAVAILABLE', 'no server there')
})

test('postgres: one open database per table, as one process per LevelDB directory', async t => {
  const table = server.table()
  const name = `levelkit_lock_${process.pid}`
  const first = level({ table, pg: { application_name: name } })
  await first.open()
  const second = level({ table })
  const err = await rejects(t, second.open(), 'LEVEL_DATABASE_NOT_OPEN', 'a second database on the table does not open')
  t.is(/** @type {any} */ (err).cause?.code, 'LEVEL_LOCKED', 'because the table is locked')
  await rejects(t, open({ backend: 'postgres', connectionString: server.connectionString, table }), 'LEVELKIT_LOCKED', 'through open(): LEVELKIT_LOCKED')
  await first.close()
  await second.open()
  t.pass('it opens once the first is closed')
  await second.close()

  // The lock lives as long as its connection: once that is gone, another
  // process may have the table, so writes are refused.
  const client = await sql(t)
  const third = level({ table, pg: { application_name: name } })
  await third.open()
  await third.put('a', '1')
  const { rows } = await client.query("SELECT pg_terminate_backend(l.pid) AS done FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' AND a.application_name = $1", [name])
  t.same(rows, [{ done: true }], 'the connection holding the lock is ended by the server')
  let refused = null
  for (let i = 0; i < 100 && refused === null; i++) {
    try {
      await third.put('a', '2')
      await new Promise(resolve => setTimeout(resolve, 20))
    } catch (err) {
      refused = err
    }
  }
  t.is(/** @type {any} */ (refused)?.code, 'LEVELKIT_BACKEND_UNAVAILABLE', 'then writes are refused')
  t.match(String(/** @type {any} */ (refused)?.message), /lock/, 'saying why')
  // A put made before the client saw its connection end may have landed.
  t.ok(['1', '2'].includes(await third.get('a')), 'reads still answer')
  await third.close()
})
