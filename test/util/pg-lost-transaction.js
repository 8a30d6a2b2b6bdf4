// With locking: 'keys' or 'serializable' (test/postgres-keylocks-test.js,
// test/postgres-serializable-test.js): the section transaction's connection
// dies between two critical sections of one group, the first decided (its
// batch waiting for the second), the second not yet read. The first one's
// key locks, or its serializable snapshot, went with the connection, and
// another process writes the account it read. Its batch must not be written
// in another transaction on what it read: with 'keys' the group is refused
// (LEVELKIT_BACKEND_UNAVAILABLE, committed: false), with 'serializable' its
// sections run again, on the other process's value.
import { open } from '../../index.js'

/**
 * @param {any} t @param {any} server test/util/postgres.js's
 * @param {'keys' | 'serializable'} locking
 */
export async function lostBetweenSections (t, server, locking) {
  const table = server.table()
  const options = { backend: 'postgres', connectionString: server.connectionString, table, shared: true, locking, poolSize: 2 }
  // A's connections named apart: B's section transaction may be idle in
  // a transaction too when A's is ended, and must not be ended with it.
  const a = await open({ ...options, pg: { application_name: 'levelkit lost-transaction a' } })
  const b = await open(options)
  try {
    const accountsA = a.collection('accounts')
    const accountsB = b.collection('accounts')
    await accountsA.insert({ balance: 10 })
    await accountsA.insert({ balance: 20 })
    /** @type {() => void} */
    let letGo = () => {}
    const gate = new Promise(resolve => { letGo = () => resolve(undefined) })
    /** @type {() => void} */
    let reached = () => {}
    const waiting = new Promise(resolve => { reached = () => resolve(undefined) })
    let runs = 0
    const first = a.write(async (/** @type {any} */ w) => {
      runs++
      const { balance } = await accountsA.in(w).get(1)
      await accountsA.in(w).update(1, { balance: balance + 1 })
      return balance
    })
    // Queued behind the first: one group, one transaction.
    const second = a.write(async (/** @type {any} */ w) => {
      reached()
      await gate
      const { balance } = await accountsA.in(w).get(2)
      await accountsA.in(w).update(2, { balance: balance + 1 })
      return balance
    })
    await waiting
    const { rows } = await server.pool.query("SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE application_name = 'levelkit lost-transaction a' AND state LIKE 'idle in transaction%'")
    t.deepEqual(rows.map((/** @type {any} */ row) => row.ended), [true], 'the section transaction\'s connection is ended between the two sections')
    // Its locks went with it: another process writes the account the first section read.
    await accountsB.update(1, { balance: 100 })
    letGo()
    const outcomes = await Promise.all([first, second].map(p => p.then(value => ({ value }), (/** @type {any} */ err) => ({ code: err.code, committed: err.committed }))))
    if (locking === 'keys') {
      t.deepEqual(outcomes, [{ code: 'LEVELKIT_BACKEND_UNAVAILABLE', committed: false }, { code: 'LEVELKIT_BACKEND_UNAVAILABLE', committed: false }], 'the group decided in the lost transaction is refused: not written (committed: false)')
      t.is((await accountsA.get(1)).balance, 100, 'the other process\'s write stands (not overwritten by a decision made under the lost locks)')
      t.is((await accountsA.get(2)).balance, 20, 'nothing of the refused batch is written')
    } else {
      t.deepEqual(outcomes, [{ value: 100 }, { value: 20 }], 'the group\'s sections ran again in a new transaction: the first read the other process\'s write')
      t.is(runs, 2, 'the first section ran twice')
      t.is((await accountsA.get(1)).balance, 101, 'its write is on the other process\'s value')
      t.is((await accountsA.get(2)).balance, 21, 'the second section\'s write is there')
    }
    t.is(await a.write(async (/** @type {any} */ w) => (await accountsA.in(w).get(1)).balance), locking === 'keys' ? 100 : 101, 'the next write goes on, in a new transaction')
    t.same((await a.check()).problems, [], 'check() is clean')
  } finally {
    await a.close()
    await b.close()
  }
}
