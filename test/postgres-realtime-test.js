// Real-time order across processes sharing a postgres table (shared: true,
// each locking mode, with and without the section cache): once an
// operation is acknowledged in one process, an operation called after it
// in another sees it (test/util/realtime.js tells what that means for each
// operation, and checks every pair of a random history). Two databases
// open on one table in this process stand for two processes, as in
// test/postgres-shared-test.js: the driver sees both, on one clock.
// LEVELKIT_REALTIME_OPS (default 400) operations a history;
// LEVELKIT_REALTIME_SEED replays one.
import test from 'tape'
import { open } from '../index.js'
import { postgresForTests } from './util/postgres.js'
import { prng } from './util/prng.js'
import { declare, seed, run } from './util/realtime-ops.js'
import { runHistory, checkHistory, crossHandlePairs } from './util/realtime.js'

const server = await postgresForTests(test)
const COUNT = Number(process.env.LEVELKIT_REALTIME_OPS ?? 400)
const SEED = Number(process.env.LEVELKIT_REALTIME_SEED ?? Date.now() % 1e9)
const REGISTERS = 3

/** @param {number} ms */
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

/**
 * @param {string} table @param {string} locking @param {boolean} cache
 */
const options = (table, locking, cache) => ({ backend: 'postgres', connectionString: server.connectionString, table, shared: true, locking, poolSize: 4, ...(cache ? {} : { readCache: 0 }) })

/**
 * A random history over two databases on one table, checked.
 * @param {any} t @param {string} locking @param {boolean} cache @param {number} seedValue
 */
async function history (t, locking, cache, seedValue) {
  const table = server.table()
  const dbs = [await open(options(table, locking, cache)), await open(options(table, locking, cache))]
  try {
    const models = dbs.map(db => declare(db, { lists: seedValue % 2 === 0, blockSize: seedValue % 3 === 0 ? 4 : 0 }))
    await seed(models[0], REGISTERS)
    for (const m of models) await run(m, 'watch', {})
    const random = prng(seedValue)
    const events = await runHistory({ handles: models.map(m => ({ run: (op, args) => run(m, op, args) })), random, count: COUNT, clients: 8, registers: REGISTERS })
    const problems = checkHistory(events)
    for (const problem of problems.slice(0, 10)) t.comment(problem)
    t.same(problems.slice(0, 10), [], `seed ${seedValue}: ${events.length} operations, ${crossHandlePairs(events)} close pairs across the processes, no violation of real-time order (${problems.length} found)`)
    // Every append, delivered to each process's watcher in order, once.
    const appended = events.filter(e => e.op === 'append' && e.result !== undefined).length
    for (const [i, m] of models.entries()) {
      let watched = await run(m, 'watched', {})
      for (let waited = 0; watched.seqs.length < appended && waited < 5000; waited += 20) {
        await sleep(20)
        watched = await run(m, 'watched', {})
      }
      await run(m, 'watched', { stop: true })
      t.same(watched.seqs, Array.from({ length: appended }, (_, k) => k + 1), `process ${i}'s watcher delivered the ${appended} children in order, none missed or repeated${watched.error ? ` (it failed: ${watched.error})` : ''}`)
    }
    t.same((await dbs[1].check()).problems, [], 'check() is clean')
  } finally {
    for (const db of dbs) await db.close()
  }
}

let configs = 0
for (const locking of ['table', 'keys', 'serializable']) {
  for (const cache of [true, false]) {
    test(`postgres realtime (${locking}${cache ? '' : ', readCache: 0'}): an operation called after another process's was acknowledged sees it`, async t => {
      await history(t, locking, cache, SEED + configs++)
    })
  }
}
