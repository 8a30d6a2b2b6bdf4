// The model property test (test/model-property-test.js, test/util/model-*.js)
// on the postgres backend: one database on a table of its own, then a table
// opened with `shared: true` in each locking mode, where the scenario's
// 'other' commands run through a second database on the same table (another
// process, as far as levelkit can tell: its own writer lock or key
// transactions, its own caches, told of the first's batches by NOTIFY), so
// the lock goes back and forth and each side must drop what it cached of
// the keys the other wrote. Each run ends with the state compared through
// both databases and through the first reopened.
//
// LEVELKIT_MODEL_RUNS=<n> runs n scenarios per mode (default 2);
// LEVELKIT_MODEL_ONLY=<postgres|shared-table|shared-keys|shared-serializable>
// runs one mode; a failure prints its replay command.

import test from 'tape'
import { open } from '../index.js'
import { postgresForTests } from './util/postgres.js'
import { modelProperty, MODEL_RUNS, skipped } from './util/model-node.js'
import { localOther } from './util/model-run.js'

const RUNS = MODEL_RUNS ?? 2
const FILE = 'test/model-property-postgres-test.js'

const modes = [
  { name: 'postgres', shared: false },
  { name: 'shared-table', shared: true, locking: 'table' },
  { name: 'shared-keys', shared: true, locking: 'keys' },
  { name: 'shared-serializable', shared: true, locking: 'serializable' }
]

const server = modes.every(mode => skipped(mode.name)) ? null : await postgresForTests(test)

for (const [i, mode] of modes.entries()) {
  const { name, shared, locking } = mode
  modelProperty(test, {
    name,
    title: `model: levelkit on postgres (${shared ? `shared, locking: '${locking}'` : 'one database'}) behaves like the reference model`,
    file: FILE,
    numRuns: RUNS,
    seedOffset: 10 + i,
    timeout: 60000,
    async makeTarget () {
      const pg = /** @type {NonNullable<typeof server>} */ (server)
      const table = pg.table()
      const options = { backend: 'postgres', pool: pg.pool, table, ...(shared ? { shared, locking } : {}) }
      return {
        open: extra => open({ ...options, ...extra }),
        durable: true,
        // A pool of its own: levelkit refuses a second database of one pool on a table.
        other: shared ? localOther(extra => open({ ...options, pool: undefined, connectionString: pg.connectionString, poolSize: 4, ...extra })) : null,
        destroy: async () => { await pg.pool.query(`DROP TABLE IF EXISTS "${table}"`) }
      }
    }
  })
}
