// Read-only audits on PostgreSQL (shared) under concurrent transfers:
// db.transaction(fn) (validated reads) against db.transaction(fn,
// { readOnly: true }) (one snapshot, no validation).
//
//   node bench/transaction-snapshot.js [--runs 3] [--seconds 4] [--locking table,keys,serializable]
//
// Per locking mode and run, on a fresh table of 8 accounts: 3 databases
// open on it (each with its own write path and connections, standing for
// 3 processes), two of them transferring (3 transfers in flight each), the
// third auditing (2 audits in flight: 8 get()s then a query of every
// account, maxRetries 50) for --seconds; then the same with the other kind
// of audit. The two kinds take turns (which goes first alternates by run).
// Reported per mode and kind: committed audits per second, audit latency
// p50 and p99 (ms, committed audits), attempts per committed audit, audits
// that gave up, transfers per second meanwhile; medians over the runs, and
// readOnly ÷ validated of the medians.
import { postgres } from 'levelkit-testkit/postgres'
import { open } from 'levelkit'
import { median, quantile } from './lib/stats.js'

const ACCOUNTS = 8
const INITIAL = 1000

const args = process.argv.slice(2)
/** @param {string} name @param {string} fallback */
const arg = (name, fallback) => {
  const i = args.indexOf(`--${name}`)
  return i === -1 ? fallback : args[i + 1]
}
const runs = Number(arg('runs', '3'))
const seconds = Number(arg('seconds', '4'))
const modes = arg('locking', 'table,keys,serializable').split(',')

/**
 * One cell: audits of one kind for `seconds` while two databases transfer.
 * @param {string} connectionString @param {string} table @param {string} locking @param {boolean} readOnly
 */
async function cell (connectionString, table, locking, readOnly) {
  const dbs = await Promise.all([0, 1, 2].map(() => open({ backend: 'postgres', connectionString, table, shared: true, poolSize: 4, locking })))
  try {
    const banks = dbs.map(db => db.collection('accounts'))
    if ((await banks[0].count()) === 0) {
      await dbs[0].write(async (/** @type {any} */ w) => {
        for (let id = 1; id <= ACCOUNTS; id++) await banks[0].in(w).insert({ balance: INITIAL })
      })
    }
    const state = { stop: false }
    let transfers = 0
    let seed = 1
    const transferring = [0, 1].flatMap(d => [0, 1, 2].map(async () => {
      while (!state.stop) {
        seed = (seed * 1103515245 + 12345) >>> 0
        const from = 1 + seed % ACCOUNTS
        const to = 1 + (from + seed % (ACCOUNTS - 1)) % ACCOUNTS
        await dbs[d].transaction(async (/** @type {any} */ tx) => {
          const payer = await banks[d].in(tx).get(from)
          const payee = await banks[d].in(tx).get(to)
          await banks[d].in(tx).update(from, { balance: payer.balance - 1 })
          await banks[d].in(tx).update(to, { balance: payee.balance + 1 })
        }, { maxRetries: 1000, timeout: 60000 })
        transfers++
      }
    }))
    /** @type {number[]} */
    const latencies = []
    let attempts = 0
    let gaveUp = 0
    let bad = 0
    const began = performance.now()
    const until = began + seconds * 1000
    await Promise.all([0, 1].map(async () => {
      while (performance.now() < until) {
        const start = performance.now()
        try {
          const total = await dbs[2].transaction(async (/** @type {any} */ tx, /** @type {number} */ attempt) => {
            attempts++
            let sum = 0
            for (let id = 1; id <= ACCOUNTS; id++) sum += (await banks[2].in(tx).get(id)).balance
            for (const record of await banks[2].in(tx).query().all()) sum += record.balance
            return sum
          }, { readOnly, maxRetries: 50, timeout: 60000 })
          latencies.push(performance.now() - start)
          if (total !== 2 * ACCOUNTS * INITIAL) bad++
        } catch (err) {
          if (/** @type {any} */ (err).code !== 'LEVELKIT_CONFLICT') throw err
          gaveUp++
        }
      }
    }))
    const elapsed = (performance.now() - began) / 1000
    const moved = transfers
    state.stop = true
    await Promise.all(transferring)
    return {
      auditsPerSecond: latencies.length / elapsed,
      p50: quantile(latencies, 0.5),
      p99: quantile(latencies, 0.99),
      attempts: attempts / Math.max(1, latencies.length),
      gaveUp,
      bad,
      transfersPerSecond: moved / elapsed
    }
  } finally {
    await Promise.all(dbs.map(db => db.close()))
  }
}

const server = await postgres()
try {
  let n = 0
  for (const locking of modes) {
    /** @type {Record<string, any[]>} */
    const results = { validated: [], readOnly: [] }
    for (let run = 0; run < runs; run++) {
      const order = run % 2 === 0 ? [false, true] : [true, false]
      for (const readOnly of order) {
        const result = await cell(server.connectionString, `lk_bench_snapshot_${n++}`, locking, readOnly)
        results[readOnly ? 'readOnly' : 'validated'].push(result)
      }
    }
    /** @param {any[]} list @param {string} key */
    const med = (list, key) => median(list.map(r => r[key]))
    console.log(`\n${locking}: medians of ${runs} runs of ${seconds} s`)
    console.log('kind        audits/s   p50 ms   p99 ms  attempts  gave up  bad  transfers/s')
    for (const kind of ['validated', 'readOnly']) {
      const list = results[kind]
      console.log(`${kind.padEnd(10)} ${med(list, 'auditsPerSecond').toFixed(1).padStart(9)} ${med(list, 'p50').toFixed(1).padStart(8)} ${med(list, 'p99').toFixed(1).padStart(8)} ${med(list, 'attempts').toFixed(2).padStart(9)} ${String(list.reduce((s, r) => s + r.gaveUp, 0)).padStart(8)} ${String(list.reduce((s, r) => s + r.bad, 0)).padStart(4)} ${med(list, 'transfersPerSecond').toFixed(1).padStart(12)}`)
    }
    const ratio = (/** @type {string} */ key) => (med(results.readOnly, key) / med(results.validated, key)).toFixed(2)
    console.log(`readOnly ÷ validated: audits/s ${ratio('auditsPerSecond')}×, p50 ${ratio('p50')}×, p99 ${ratio('p99')}×, transfers/s ${ratio('transfersPerSecond')}×`)
  }
} finally {
  await server.stop()
}
