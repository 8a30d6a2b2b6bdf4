// The table's turn of postgres `locking: 'serializable'`
// (lib/backends/postgres-serializable.js), its rule on a fake writer
// connection (no server): the second transaction in a row to fail puts it
// in contention mode, a failure told twice for one transaction counts once,
// only a committed batch ends the row (a COMMIT of a transaction a failure
// aborted, which PostgreSQL answers with a ROLLBACK, does not), any failure
// in the turn keeps it and a wait for it does not, it comes before the
// keys' locks, and tableTurn or contentionMs 0 turn it off. What it does
// among processes is in postgres-serializable-test.js.
import test from 'tape'
import { PostgresSerializable } from '../lib/backends/postgres-serializable.js'

/** @param {number} ms */
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

/**
 * A section lock on a fake writer connection, which answers every query
 * (one result per statement) but fails one holding FAIL with 40001, and
 * keeps the texts it was sent.
 */
function fakeLock () {
  /** @type {string[]} */
  const sent = []
  const client = {
    /** @param {any} statement */
    async query (statement) {
      const text = String(statement?.text ?? statement)
      sent.push(text)
      if (text.includes('FAIL')) throw Object.assign(new Error('could not serialize access due to read/write dependencies among transactions'), { code: '40001', severity: 'ERROR' })
      const n = text.split(';').length
      return n > 1 ? Array.from({ length: n }, () => ({ rows: [], command: 'SELECT' })) : { rows: [], command: 'SELECT' }
    },
    on () {},
    async end () {}
  }
  const host = { connect: async () => client, route () {}, notify: async () => {}, lockKey: 1 }
  const lock = /** @type {any} */ (new PostgresSerializable(/** @type {any} */ (host), 'turn_test'))
  return {
    lock,
    /**
     * A transaction whose first statement fails, rolled back as the write
     * path does (`rollback` false: left open).
     */
    async fail (rollback = true) {
      const err = await lock.query('SELECT FAIL').then(() => null, (/** @type {any} */ e) => e)
      if (err?.code !== '40001') throw new Error(`the statement did not fail as asked: ${err}`)
      if (rollback) await lock.rollback()
    },
    /** Whether the next transaction's opening takes the table's turn: sent, then rolled back. */
    async inTurn () {
      await lock.query('SELECT 1')
      const opening = sent[sent.length - 1]
      await lock.rollback()
      return opening.includes(lock.tableLock)
    },
    sent
  }
}

test('postgres table\'s turn: the second transaction in a row to fail puts it in contention mode, not the first', async t => {
  const { fail, inTurn } = fakeLock()
  await fail()
  t.notOk(await inTurn(), 'one failed transaction: no turn')
  // (inTurn() ran a transaction that only read: no batch, so the row goes on.)
  await fail()
  t.ok(await inTurn(), 'a second one, no batch committed between: the turn')
  t.end()
})

test('postgres table\'s turn: two failed transactions in a row take it; a failure told twice for one transaction counts once', async t => {
  const once = fakeLock()
  await once.fail(false)
  // The statements queued behind a failed one fail too (25P02): the same transaction.
  once.lock.failedTransaction(once.lock.stats.transactions)
  await once.lock.rollback()
  t.notOk(await once.inTurn(), 'one transaction told twice: no turn')
  const twice = fakeLock()
  await twice.fail()
  await twice.fail()
  t.ok(await twice.inTurn(), 'two transactions in a row: the next opening takes the table\'s lock')
  t.is(twice.lock.stats.tableContended, 1, 'counted once, as the transaction begins')
  t.end()
})

test('postgres table\'s turn: a committed batch ends the row; a COMMIT of a transaction a failure aborted does not', async t => {
  const batch = fakeLock()
  await batch.fail()
  await batch.lock.writeAndCommit({ text: 'SELECT 2', values: [] })
  await batch.fail()
  t.notOk(await batch.inTurn(), 'failed, a batch committed, failed: no turn')
  const idle = fakeLock()
  await idle.fail(false)
  // The write path ends a transaction whose read failed with idle()'s COMMIT (PostgreSQL answers ROLLBACK).
  await idle.lock.idle()
  await idle.fail()
  t.ok(await idle.inTurn(), 'failed, COMMIT of the aborted transaction, failed: in the turn')
  t.end()
})

test('postgres table\'s turn: any failure in the turn keeps it, a wait for it does not', async t => {
  const { lock, fail, inTurn } = fakeLock()
  lock.contentionMs = 300
  await fail()
  await fail()
  t.ok(await inTurn(), 'in the turn')
  await sleep(200)
  // Waited for (another process held it): told, and kept no longer.
  lock.opened([{ rows: [{ waited: [lock.tableLock] }] }])
  t.is(lock.stats.contentionWaits, 1, 'the wait is counted')
  await sleep(150)
  t.notOk(await inTurn(), 'left contentionMs after the last failure, though waited for since')
  // (Margins wide enough for a loaded machine's late timers: a late one makes the check later still.)
  const kept = fakeLock()
  kept.lock.contentionMs = 1000
  await kept.fail()
  await kept.fail()
  const entered = Date.now()
  await sleep(600)
  // One failure in the turn, after a committed batch (not in a row): kept all the same.
  await kept.lock.writeAndCommit({ text: 'SELECT 2', values: [] })
  await kept.fail()
  const failed = Date.now()
  await sleep(600)
  if (Date.now() - failed < 1000) t.ok(await kept.inTurn(), `a failure in the turn kept it past contentionMs from its entry (${Date.now() - entered} ms after it)`)
  else t.comment('the timers came too late to tell (a loaded machine): not asserted')
  t.end()
})

test('postgres table\'s turn: taken before the keys\' contention locks, in one order; tableTurn false or contentionMs 0: never', async t => {
  const { lock, fail, sent } = fakeLock()
  // A key in contention mode (a wait for its lock puts it there).
  lock.opened([{ rows: [{ waited: ['123'] }] }])
  await fail()
  await fail()
  await lock.query('SELECT 1')
  t.ok(sent[sent.length - 1].includes(`{${lock.tableLock},123}`), 'the table\'s lock, then the key\'s')
  await lock.rollback()
  for (const off of [{ tableTurn: false }, { contentionMs: 0 }]) {
    const other = fakeLock()
    Object.assign(other.lock, off)
    for (let i = 0; i < 3; i++) await other.fail()
    t.notOk(await other.inTurn(), `${JSON.stringify(off)}: three failures in a row, no turn`)
  }
  t.end()
})
