// One statement at a time on each connection of levelkit's own (not the
// pool's, which lends a connection to one statement): pg 8 queues a
// statement sent while another of its connection runs, with a
// DeprecationWarning, and pg 9 refuses it. Each test makes statements
// concurrent on one such connection and watches pg.Client's query().
import test from 'tape'
import { PostgresLevel } from '../lib/backends/postgres-level.js'
import { postgresForTests } from './util/postgres.js'
import { watchBusyClients, describeBusy } from './util/pg-busy.js'

const server = await postgresForTests(test)

/** @param {any} [options] */
const level = (options) => new PostgresLevel({ pool: server.pool, table: server.table(), ...options })

/** @param {any} t @param {ReturnType<typeof watchBusyClients>} watch @param {string} what */
function noBusy (t, watch, what) {
  const busy = watch.stop()
  t.is(busy.length, 0, `${what}: no statement sent on a busy connection`)
  if (busy.length > 0) t.comment(describeBusy(busy))
}

test('postgres busy: databases opened and closed together on one pool lock and unlock their tables one statement at a time', async t => {
  const dbs = Array.from({ length: 6 }, () => level())
  const watch = watchBusyClients()
  await Promise.all(dbs.map(db => db.open()))
  t.ok(dbs.every(db => db.status === 'open'), 'all open')
  // A table of one of them, refused to a second database while it is open.
  const second = new PostgresLevel({ pool: server.pool, table: dbs[0].table })
  await second.open().then(() => t.fail('opened twice'), (/** @type {any} */ err) => t.is(err.cause?.code ?? err.code, 'LEVEL_LOCKED', 'a second database of an open table is refused'))
  // Half close while the others' tables stay locked, then all of them.
  await Promise.all(dbs.slice(0, 3).map(db => db.close()))
  const again = dbs.slice(0, 3).map(db => new PostgresLevel({ pool: server.pool, table: db.table }))
  await Promise.all([...again.map(db => db.open()), ...dbs.slice(3).map(db => db.close())])
  t.ok(again.every(db => db.status === 'open'), 'a closed database\'s table opens again')
  await Promise.all(again.map(db => db.close()))
  noBusy(t, watch, 'opens and closes')
})

test('postgres busy: reads made together on one snapshot go one at a time on its connection', async t => {
  const db = level()
  await db.open()
  await db.batch(Array.from({ length: 300 }, (_, i) => ({ type: 'put', key: `k${String(i).padStart(3, '0')}`, value: `v${i}` })))
  const snapshot = db.snapshot()
  await db.put('k000', 'after')
  const watch = watchBusyClients()
  const [one, many, has, keys, entries] = await Promise.all([
    db.get('k000', { snapshot }),
    db.getMany(['k001', 'k002', 'missing'], { snapshot }),
    db.has('k003', { snapshot }),
    db.keys({ snapshot, gte: 'k100' }).all(),
    db.iterator({ snapshot, lt: 'k010', reverse: true }).all()
  ])
  noBusy(t, watch, 'five reads on one snapshot')
  t.is(one, 'v0', 'the snapshot\'s value, not the later write')
  t.same(many, ['v1', 'v2', undefined], 'getMany')
  t.is(has, true, 'has')
  t.is(keys.length, 200, 'a range of 200 keys (more than one chunk)')
  t.same(entries.map((/** @type {any} */ e) => e[0]), Array.from({ length: 10 }, (_, i) => `k00${9 - i}`), 'a reverse range')
  t.same(entries[9], ['k000', 'v0'], 'the range sees the snapshot too')
  await snapshot.close()
  t.is(await db.get('k000'), 'after', 'outside the snapshot: the later write')
  await db.close()
})
