// Failover in shared mode (npm run test:failover; not in npm test): two
// processes write one table through both hosts of a Patroni pair while the
// primary node is killed (-9, Patroni and PostgreSQL) mid-workload and the
// synchronous standby is promoted. Their writer lock, listening and pool
// connections follow the new primary; a batch whose answer was lost is
// settled by its commit id. The checks are test/util/shared-failover.js's:
// nothing acknowledged lost, nothing doubled, ids without a gap, usernames
// with one owner, watchers in both processes see every message in order,
// check() clean. test/postgres-shared-hosts-test.js runs the same workload
// in npm test, with a TCP proxy cut for the failover.
// LEVELKIT_FAILOVER_LOCKING=keys,serializable (a list) runs it with those
// lock modes instead of 'table', one cluster each.
import test from 'tape'
import { startFailoverCluster } from '../../testkit/patroni.js'
import { openShared } from '../fixtures/postgres-shared-worker.js'
import { sharedFailover } from '../util/shared-failover.js'

const modes = /** @type {Array<'table' | 'keys' | 'serializable'>} */ ((process.env.LEVELKIT_FAILOVER_LOCKING || 'table').split(','))

for (const locking of modes) {
  test(`postgres failover, shared${locking === 'table' ? '' : `, locking: '${locking}'`}: 2 processes writing while the primary node is killed lose nothing and double nothing`, { timeout: 10 * 60 * 1000 }, async t => {
    const started = Date.now()
    const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`
    const cluster = await startFailoverCluster({ log: line => t.comment(`${elapsed()}: ${line}`), synchronous: true })
    /** @type {any} */
    let db = null
    try {
      const options = { failoverTimeout: 60000 }
      db = await openShared(cluster.connectionString, 'chat', locking, options)
      await sharedFailover(t, db, {
        connectionString: cluster.connectionString,
        table: 'chat',
        // (The promotion takes up to a minute: the workers wait for it.)
        after: 50,
        deadline: 7 * 60 * 1000,
        options,
        locking,
        lifetime: 8 * 60 * 1000,
        async fail () {
          const primary = await cluster.waitForPrimary()
          await cluster.killNode(primary)
          t.comment(`${elapsed()}: killed ${primary.name} (Patroni and PostgreSQL)`)
          const next = await cluster.waitForPrimary(60000)
          t.notEqual(next.name, primary.name, `the standby was promoted (${next.name}, ${elapsed()})`)
        }
      })
    } finally {
      if (db) await db.close().catch((/** @type {any} */ err) => t.comment(`close: ${err.message}`))
      await cluster.stop()
      t.comment(`done in ${elapsed()}`)
    }
  })
}
