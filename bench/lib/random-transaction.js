// A port of RocksDB db_bench's `randomtransaction` benchmark
// (RandomTransactionInserter in RocksDB's test_util/transaction_test_util.cc):
// each transaction picks one random key in each of N sets and increments its
// value (a missing key counts as 0), reading it first: with GetForUpdate on
// a TransactionDB (an exclusive lock that plain reads do not wait for:
// levelkit's 'soft' lock), plainly on an OptimisticTransactionDB (checked
// at commit: levelkit's optimistic transactions). Like db_bench it visits
// the sets in a random order, so lock waits can form cycles: levelkit finds
// them at once (LEVELKIT_DEADLOCK, the youngest transaction runs again),
// where a TransactionDB without deadlock detection waits for its lock
// timeout. Afterwards every set must sum to the same value (db_bench's
// RandomTransactionInserter::Verify). db_bench adds a random 1..100 and
// sometimes rolls back; we add 1 and always commit, so that value must also
// be the number of committed transactions. Every read of the pessimistic
// mode locks (db_bench: half of them).

import { performance } from 'node:perf_hooks'
import { prng } from 'levelkit-testkit/prng'
import { quantile } from './stats.js'
import { countGiveUp } from './transactions-drive.js'

/** The modes: optimistic, or pessimistic with soft locks (like GetForUpdate). */
export const RT_MODES = Object.freeze({
  optimistic: 'optimistic',
  soft: 'pessimistic (soft locks)'
})

/**
 * The collection of the sets' keys: records { set, key, value } under the
 * id [set, key].
 * @param {any} db a levelkit database
 */
export function declareSets (db) {
  return db.collection('sets', { id: (/** @type {any} */ r) => [r.set, r.key] })
}

/**
 * Run `clients` loops of such transactions for `seconds`, then verify.
 * @param {{
 *   db: any, rows: any, mode: keyof typeof RT_MODES, sets: number, keys: number, clients: number,
 *   seconds: number, seed: number, lockTimeout: number, maxRetries: number
 * }} options
 */
export async function randomTransaction ({ db, rows, mode, sets, keys, clients, seconds, seed, lockTimeout, maxRetries }) {
  const lock = mode === 'soft' ? { lock: 'soft' } : undefined
  const txOptions = { lockTimeout, maxRetries }
  /** @type {number[]} */
  const latencies = []
  let committed = 0
  let retries = 0
  /** @type {Record<string, number>} */
  const gaveUpBy = {}
  const start = performance.now()
  const deadline = start + seconds * 1000
  const client = async (/** @type {number} */ c) => {
    const rand = prng(seed + c)
    while (performance.now() < deadline) {
      const picks = Array.from({ length: sets }, () => rand.int(keys))
      const order = shuffled(sets, rand)
      const t0 = performance.now()
      try {
        await db.transaction(async (/** @type {any} */ tx, /** @type {number} */ attempt) => {
          if (attempt > 1) retries++
          const scoped = rows.in(tx)
          for (const set of order) {
            const key = picks[set]
            const row = await scoped.get([set, key], lock)
            await scoped.put([set, key], { set, key, value: (row?.value ?? 0) + 1 })
          }
        }, txOptions)
        committed++
        latencies.push(performance.now() - t0)
      } catch (err) {
        countGiveUp(err, gaveUpBy)
      }
    }
  }
  await Promise.all(Array.from({ length: clients }, (_, c) => client(c)))
  const ms = performance.now() - start
  const { ok, sums } = await verifySets(rows, sets, committed)
  return {
    mode,
    clients,
    committed,
    ms,
    txPerSec: committed / (ms / 1000),
    p99Ms: quantile(latencies, 0.99),
    retries,
    gaveUp: Object.values(gaveUpBy).reduce((x, y) => x + y, 0),
    gaveUpBy,
    locks: db.writer.locks.stats(),
    ok,
    sums
  }
}

/**
 * Whether each of sets 0..sets - 1 sums to `committed`.
 * @param {any} rows the collection from declareSets() @param {number} sets @param {number} committed
 */
export async function verifySets (rows, sets, committed) {
  const sums = new Array(sets).fill(0)
  for (const { set, value } of await rows.query().all()) {
    sums[set] = (sums[set] ?? 0) + value
  }
  return { ok: sums.length === sets && sums.every(sum => sum === committed), sums }
}

/** 0..n - 1 in a random order. @param {number} n @param {import('levelkit-testkit/prng').Random} rand */
function shuffled (n, rand) {
  const order = Array.from({ length: n }, (_, i) => i)
  for (let i = n - 1; i > 0; i--) {
    const j = rand.int(i + 1)
    const t = order[i]
    order[i] = order[j]
    order[j] = t
  }
  return order
}
