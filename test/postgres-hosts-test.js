// The postgres backend's failover options, and how a batch whose connection
// fails comes out, on the tests' server behind a TCP proxy that cuts the
// connection of a batch before it reaches the server (it did not commit: it
// is written again) or after the server committed it, before its answer (it
// did commit: not written again). The real failover, with Patroni, is
// test/failover/postgres-failover-test.js (npm run test:failover).
import test from 'tape'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PostgresLevel } from '../lib/backends/postgres-level.js'
import { failoverOf, withCommitId, isConnectionError } from '../lib/backends/postgres-hosts.js'
import { postgresForTests } from './util/postgres.js'
import { cutter } from './util/pg-proxy.js'

const server = await postgresForTests(test)

test('postgres hosts: which options ask for failover', t => {
  const config = { max: 3 }
  t.equal(failoverOf({ connectionString: 'postgresql://u@h:5432/db', config }), null, 'one host, no target_session_attrs: none')
  t.equal(failoverOf({ config }), null, 'no connection string: none')
  const two = /** @type {any} */ (failoverOf({ connectionString: 'postgresql://u:p@a:5001,b:5002/db?target_session_attrs=read-write&sslmode=disable', config }))
  t.deepEqual(two.hosts, [{ host: 'a', port: 5001 }, { host: 'b', port: 5002 }], 'the hosts of the URL')
  t.deepEqual(two.configFor(two.hosts[1]), { max: 3, connectionString: 'postgresql://u:p@b:5002/db?sslmode=disable' }, 'each host in a URL of its own, without target_session_attrs')
  // A socket directory (parsed only, never opened).
  const socket = join(tmpdir(), 'sock')
  const one = /** @type {any} */ (failoverOf({ connectionString: `postgresql://u@${encodeURIComponent(socket)}:5433/db?target_session_attrs=primary`, config }))
  t.deepEqual(one.hosts, [{ host: socket, port: 5433 }], 'one host with target_session_attrs: failover, a socket directory as host')
  t.equal(one.configFor(one.hosts[0]).connectionString, `postgresql://u@${encodeURIComponent(socket)}:5433/db`, 'the socket directory encoded again')
  const listed = /** @type {any} */ (failoverOf({ hosts: ['a:1', { host: 'b', port: 2 }, '[::1]:3', 'c'], failoverTimeout: 500, config }))
  t.deepEqual(listed.hosts, [{ host: 'a', port: 1 }, { host: 'b', port: 2 }, { host: '::1', port: 3 }, { host: 'c', port: 5432 }], 'the hosts option')
  t.deepEqual(listed.configFor(listed.hosts[0]), { max: 3, host: 'a', port: 1 }, 'without a connection string: host and port settings')
  t.equal(listed.timeout, 500, 'failoverTimeout')
  for (const [options, what] of /** @type {Array<[any, string]>} */ ([
    [{ hosts: [] }, 'an empty hosts list'],
    [{ hosts: 'a,b' }, 'hosts as a string'],
    [{ hosts: ['a:0'] }, 'port 0'],
    [{ hosts: [{ host: '' }] }, 'an empty host'],
    [{ hosts: ['a'], failoverTimeout: -1 }, 'a negative failoverTimeout'],
    [{ failoverTimeout: 1000 }, 'failoverTimeout without hosts'],
    [{ connectionString: 'postgresql://a,b/db', hosts: ['c'] }, 'hosts in both'],
    [{ connectionString: 'host=a dbname=db', hosts: ['c'] }, 'hosts with a key=value connection string'],
    [{ connectionString: 'postgresql://a/db?target_session_attrs=read-only' }, 'target_session_attrs=read-only']
  ])) {
    t.throws(() => new PostgresLevel(options), /LEVELKIT_INVALID|must|not supported|needs|either/, `${what} is refused`)
    try {
      // eslint-disable-next-line no-new
      new PostgresLevel(options)
    } catch (err) {
      t.equal(/** @type {any} */ (err).code, 'LEVELKIT_INVALID', `${what}: LEVELKIT_INVALID`)
    }
  }
  t.throws(() => new PostgresLevel({ pool: server.pool, hosts: ['a'] }), /either/, 'hosts with a pool of the application\'s is refused')
  t.end()
})

test('postgres hosts: the commit id goes into the batch statement', t => {
  t.equal(withCommitId('INSERT INTO "t" (key, value) SELECT 1', 2),
    'WITH lk_commit AS (INSERT INTO levelkit_commits (session, seq) VALUES ($3, $4)), lk_pruned AS (DELETE FROM levelkit_commits WHERE session = $3 AND seq < $5) INSERT INTO "t" (key, value) SELECT 1')
  t.equal(withCommitId('WITH removed AS (DELETE FROM "t") INSERT INTO "t" SELECT 1', 3),
    'WITH lk_commit AS (INSERT INTO levelkit_commits (session, seq) VALUES ($4, $5)), lk_pruned AS (DELETE FROM levelkit_commits WHERE session = $4 AND seq < $6), removed AS (DELETE FROM "t") INSERT INTO "t" SELECT 1')
  t.ok(isConnectionError(Object.assign(new Error('x'), { code: 'ECONNRESET' })), 'ECONNRESET is a connection error')
  t.ok(isConnectionError(new Error('Connection terminated unexpectedly')), 'pg\'s Connection terminated is')
  t.ok(isConnectionError(Object.assign(new Error('x'), { code: '57P01' })), 'admin_shutdown is')
  t.notOk(isConnectionError(Object.assign(new Error('x'), { code: '23505' })), 'a unique violation is not')
  t.end()
})

for (const cut of /** @type {const} */ (['before', 'after'])) {
  test(`postgres hosts: a batch whose connection is cut ${cut} it commits is written once`, async t => {
    const proxy = await cutter(server.connectionString)
    const table = server.table()
    const db = new PostgresLevel({ connectionString: `${proxy.connectionString}?target_session_attrs=read-write`, table, failoverTimeout: 10000 })
    /** @type {any[]} */
    const settled = []
    db.on('commit-settled', (/** @type {any} */ event) => settled.push(event))
    try {
      await db.open()
      await db.batch([{ type: 'put', key: 'a', value: '1' }])
      proxy.cut(cut)
      await db.batch([{ type: 'put', key: 'b', value: '2' }, { type: 'del', key: 'a' }])
      t.equal(proxy.cuts, 1, 'the connection was cut')
      t.deepEqual(settled.map(s => s.committed), [cut === 'after'], cut === 'after' ? 'settled: it had committed' : 'settled: it had not, and was written again')
      t.deepEqual(await db.keys().all(), ['b'], 'the batch is there, whole')
      await db.batch([{ type: 'put', key: 'c', value: '3' }])
      t.deepEqual(await db.keys().all(), ['b', 'c'], 'and the next batch is written')
    } finally {
      await db.close().catch(() => {})
      await proxy.close()
    }
  })
}

for (const cut of /** @type {const} */ (['before', 'after'])) {
  test(`postgres without hosts: a batch whose connection is cut ${cut} the server commits it is reported LEVELKIT_COMMIT_UNKNOWN, not as unwritten`, async t => {
    // No commit id to settle it by: the client cannot tell the two cuts apart.
    // The marker is in the text of a statement the connection has not
    // prepared yet (a prepared one is sent by name).
    const proxy = await cutter(server.connectionString, { marker: 'WITH removed AS' })
    const table = server.table()
    const db = new PostgresLevel({ connectionString: proxy.connectionString, table })
    try {
      await db.open()
      await db.batch([{ type: 'put', key: 'a', value: '1' }])
      proxy.cut(cut)
      const err = await db.batch([{ type: 'put', key: 'b', value: '2' }, { type: 'del', key: 'a' }]).then(() => null, err => err)
      t.equal(proxy.cuts, 1, 'the connection was cut')
      t.equal(err?.code, 'LEVELKIT_COMMIT_UNKNOWN', 'rejected with LEVELKIT_COMMIT_UNKNOWN')
      await db.close()
      const direct = new PostgresLevel({ connectionString: server.connectionString, table })
      await direct.open()
      t.deepEqual(await direct.keys().all(), cut === 'after' ? ['b'] : ['a'], cut === 'after' ? 'it had committed' : 'it had not')
      await direct.close()
    } finally {
      await db.close().catch(() => {})
      await proxy.close()
    }
  })
}

test('postgres hosts: a batch is reported LEVELKIT_COMMIT_UNKNOWN when no primary answers in time', async t => {
  const proxy = await cutter(server.connectionString)
  const db = new PostgresLevel({ connectionString: `${proxy.connectionString}?target_session_attrs=read-write`, table: server.table(), failoverTimeout: 500 })
  try {
    await db.open()
    proxy.cut('after', { refuse: true })
    try {
      await db.batch([{ type: 'put', key: 'x', value: '1' }])
      t.fail('the batch should have been rejected')
    } catch (err) {
      t.equal(/** @type {any} */ (err).code, 'LEVELKIT_COMMIT_UNKNOWN', 'rejected with LEVELKIT_COMMIT_UNKNOWN')
      t.match(String(/** @type {any} */ (err).commitId), /^[0-9a-f]+:\d+$/, 'naming its commit id')
    }
  } finally {
    proxy.refuse = false
    await db.close().catch(() => {})
    await proxy.close()
  }
})

test('postgres hosts: a snapshot after a failover is taken on the new primary, not on a connection kept from the old one', async t => {
  const first = await cutter(server.connectionString)
  const second = await cutter(server.connectionString)
  const db = new PostgresLevel({ connectionString: `${first.connectionString.replace(first.address, `${first.address},${second.address}`)}`, table: server.table(), failoverTimeout: 10000 })
  try {
    await db.open()
    await db.put('a', '1')
    // A snapshot closed keeps its connection for the next one.
    const before = db.snapshot()
    t.is(await db.get('a', { snapshot: before }), '1', 'a snapshot on the first host')
    await before.close()
    first.cut('before', { all: true, refuse: true })
    await db.batch([{ type: 'put', key: 'b', value: '2' }])
    t.is(first.cuts, 1, 'the first host cut every connection, at a batch')
    const after = db.snapshot()
    t.deepEqual(await db.keys({ snapshot: after }).all(), ['a', 'b'], 'a snapshot taken after it reads on the second')
    await after.close()
  } finally {
    await db.close().catch(() => {})
    await first.close()
    await second.close()
  }
})
