// Several Node processes on one PostgreSQL table, each opened with
// open({ backend: 'postgres', shared: true }) (child processes:
// test/fixtures/postgres-shared-worker.js), keep the guarantees of one:
//
// - 4 processes x 50 concurrent createUser() of one username: one winner.
// - 4 processes sending to one chat: ids 1..N, no gap, no duplicate; two
//   more processes watching the chat get every message, in order.
// - Bank transfers as db.transaction()s in 4 processes: the total never
//   changes, and no audit transaction ever sees another.
// - Transfers and increments (db.write()) of two databases on one table:
//   no increment lost.
// - A process killed with SIGKILL while it holds the writer lock: the
//   others go on.
// - Fencing: a process whose writer connection dies while it holds the lock
//   (and another process writes meanwhile) has its batch refused, not
//   committed over the other's.
// - The writer lock is leased: one process writing one write at a time
//   takes it once; a holder keeping it idle lets it go when another process
//   wants it, and at once when its listening connection (which hears the
//   'want') is lost and cannot come back.
// db.check() is clean after each.
import test from 'tape'
import { open } from '../index.js'
import { ChatStore } from '../chat.js'
import { postgresForTests } from './util/postgres.js'
import { startWorker } from './util/shared-workers.js'
import { range } from './util/common.js'
import { FAST, ACCOUNTS, INITIAL, declareBank, openShared as openWorkerShared, increment } from './fixtures/postgres-shared-worker.js'
import { WRITER_LOCK_SPACE } from '../lib/backends/postgres-shared.js'
import { endIdleConnections } from '../lib/backends/postgres-idle.js'
import { watchBusyClients } from './util/pg-busy.js'
import pg from 'pg'

const server = await postgresForTests(test)
// How the processes take turns: the writer lock ('table', the default), or
// key locks ('keys': test/postgres-keylocks-test.js imports this file with ?locking=keys), or
// serializable transactions (test/postgres-serializable-test.js, ?locking=serializable).
const asked = new URL(import.meta.url).searchParams.get('locking')
const locking = asked === 'keys' || asked === 'serializable' ? asked : 'table'
const mode = locking === 'keys' ? 'postgres shared (key locks)' : locking === 'serializable' ? 'postgres shared (serializable)' : 'postgres shared'
/** @param {string} connectionString @param {string} table */
const openShared = (connectionString, table) => openWorkerShared(connectionString, table, locking)
// The writer lock's own tests.
const writerLockTest = locking === 'table' ? test : test.skip

/**
 * A worker process in `role` on `table`, once it is open and ready.
 * @param {string} table @param {string} role @param {object} args
 */
const start = (table, role, args) => startWorker(server.connectionString, table, role, args, locking)

/** @param {any} t @param {any} db @param {string} what */
async function checkClean (t, db, what) {
  const result = await db.check()
  t.deepEqual(result.problems, [], `${what}: check() reports no problems`)
}

test(`${mode}: a shared table refuses an unshared opener, and the other way round`, async t => {
  const table = server.table()
  const db = await open({ backend: 'postgres', connectionString: server.connectionString, table, shared: true })
  try {
    await open({ backend: 'postgres', connectionString: server.connectionString, table }).then(other => other.close(), err => {
      t.is(err.code, 'LEVELKIT_LOCKED', 'an unshared open of a shared table: LEVELKIT_LOCKED')
      return null
    })
  } finally {
    await db.close()
  }
  const alone = await open({ backend: 'postgres', connectionString: server.connectionString, table })
  try {
    const refused = await open({ backend: 'postgres', connectionString: server.connectionString, table, shared: true }).then(other => other.close(), err => err)
    t.is(refused?.code, 'LEVELKIT_LOCKED', 'a shared open of a table open unshared: LEVELKIT_LOCKED')
  } finally {
    await alone.close()
  }
  const invalid = await open({ backend: 'postgres', connectionString: server.connectionString, table, shared: 'yes' }).then(other => other.close(), err => err)
  t.match(String(invalid?.message), /shared option must be a boolean/, 'shared must be a boolean')
})

test(`${mode}: 4 processes x 50 concurrent createUser() of one username: exactly one wins`, async t => {
  const table = server.table()
  const workers = await Promise.all(range(0, 3).map(worker => start(table, 'users', { n: 50, username: 'alice', worker })))
  for (const w of workers) w.go()
  const results = (await Promise.all(workers.map(w => w.result()))).flat()
  const won = results.filter(r => r.ok)
  t.is(won.length, 1, 'exactly one of 200 createUser() fulfils')
  t.deepEqual(results.filter(r => !r.ok && r.code !== 'LEVELKIT_UNIQUE').map(r => `${r.code}: ${r.message}`), [], 'every other one rejects with LEVELKIT_UNIQUE')
  const db = await openShared(server.connectionString, table)
  try {
    const store = new ChatStore(db, { passwordCost: FAST })
    t.is(await store.users.count(), 1, 'one user stored')
    t.is((await store.getUser('alice'))?.id, won[0]?.id, "getUser() returns the winner's id")
    t.is(await store.createUser({ username: 'bob', password: 'x' }), 2, 'the next user gets id 2: the losers took none')
    await checkClean(t, db, 'after 200 racing createUser()')
  } finally {
    await db.close()
  }
})

test(`${mode}: 4 processes sending to one chat get ids 1..N; watchers in 2 more processes see every message in order`, async t => {
  const table = server.table()
  const db = await openShared(server.connectionString, table)
  try {
    const store = new ChatStore(db, { passwordCost: FAST })
    const senders = []
    for (let i = 0; i < 4; i++) senders.push(await store.createUser({ username: `sender${i}`, password: 'x' }))
    const chatId = await store.createChat({ name: 'busy', adminId: senders[0], userIds: senders.slice(1) })
    const n = 50
    const total = 4 * n
    // Two watchers; one from the start, one from message 0 (after: 0) as well, in its own process.
    const watchers = await Promise.all([0, 1].map(() => start(table, 'watch', { chatId, after: 0, until: total })))
    for (const w of watchers) w.go()
    const workers = await Promise.all(senders.map((senderId, worker) => start(table, 'chat', { n, inFlight: 8, chatId, senderId, worker })))
    const began = Date.now()
    for (const w of workers) w.go()
    const ids = (await Promise.all(workers.map(w => w.result()))).flat()
    t.comment(`${total} sends from 4 processes in ${Date.now() - began} ms`)
    t.deepEqual([...ids].sort((a, b) => a - b), range(1, total), `the ${total} sends resolved with ids exactly 1..${total}`)
    const messages = await store.getChatMessages(chatId, { from: 1, n: 100000 })
    t.deepEqual(messages.map(m => m.id), range(1, total), `stored: ids 1..${total} in order, no gap, no duplicate`)
    const perSender = new Map()
    for (const m of messages) perSender.set(m.senderId, (perSender.get(m.senderId) ?? 0) + 1)
    t.deepEqual([...perSender.values()], [n, n, n, n], 'every process sent its share')
    t.is(await store.messages.lastSeq(chatId), total, 'the sequence is at N')
    t.is(await store.addChatMessage({ chatId, senderId: senders[0], text: 'after' }), total + 1, 'the next send here gets N + 1')
    const watched = await Promise.all(watchers.map(w => w.result()))
    for (const [i, got] of watched.entries()) t.deepEqual(got, range(1, total), `watcher ${i + 1} (another process) got every message, in order, once`)
    await checkClean(t, db, 'after 4 processes sent to one chat')
  } finally {
    await db.close()
  }
})

test(`${mode}: bank transfers as transactions in 4 processes keep the total`, async t => {
  const table = server.table()
  const db = await openShared(server.connectionString, table)
  try {
    const { accounts } = declareBank(db)
    for (let i = 0; i < ACCOUNTS; i++) await accounts.insert({ balance: INITIAL })
    // 30 transactions a process (a third of them audits), not 90: with
    // commits that skip their check of the keys they read (lib/transaction.js,
    // by version in table mode, by value in the others) 30 fail the total and
    // the audits in each locking mode, 3 runs of 3 each; 90 cost twice the CPU.
    const workers = await Promise.all(range(0, 3).map(worker => start(table, 'bank', { n: 30, seed: 7 + worker })))
    for (const w of workers) w.go()
    const results = await Promise.all(workers.map(w => w.result()))
    t.comment(JSON.stringify(results.map(r => ({ moved: r.moved, audits: r.audits, gaveUp: r.gaveUp, auditsGaveUp: r.auditsGaveUp }))))
    t.deepEqual(results.flatMap(r => r.badAudits), [], 'no audit transaction saw a total other than the initial one')
    t.ok(results.every(r => r.audits > r.auditsGaveUp), 'most audits of every process committed')
    t.ok(results.reduce((sum, r) => sum + r.moved, 0) > 0, 'transfers moved money')
    const all = await accounts.query().all()
    t.is(all.length, ACCOUNTS, 'every account is there')
    t.is(all.reduce((sum, a) => sum + a.balance, 0), ACCOUNTS * INITIAL, 'the total is what it was')
    t.ok(all.every(a => a.balance >= 0), 'no balance went negative')
    await checkClean(t, db, 'after transfers in 4 processes')
  } finally {
    await db.close()
  }
})

test(`${mode}: a critical section reads what another process wrote, not what this one read or wrote before (section cache)`, async t => {
  const table = server.table()
  const db = await openShared(server.connectionString, table)
  try {
    const { accounts } = declareBank(db)
    await accounts.insert({ balance: INITIAL })
    t.is(await increment(db, accounts), INITIAL + 1, 'an increment here (the record read and written in a critical section)')
    t.is(await increment(db, accounts), INITIAL + 2, 'another, which reads what the first wrote')
    const other = await start(table, 'set', { balance: 777 })
    other.go()
    t.is(await other.result(), 777, 'another process set the balance to 777')
    t.is(await increment(db, accounts), 778, 'the next increment here reads 777')
    const more = await start(table, 'set', { balance: 5 })
    more.go()
    await more.result()
    // Several at once: the first takes the lock again, the others read what it decided.
    const results = await Promise.all(range(1, 5).map(() => increment(db, accounts)))
    t.deepEqual(results, [6, 7, 8, 9, 10], 'five concurrent increments after another process wrote 5: 6..10')
    await checkClean(t, db, 'after increments here and writes there')
  } finally {
    await db.close()
  }
})

test(`${mode}: concurrent sections, transactions and reads of two databases on one table never send a statement on a connection busy with another`, async t => {
  // pg queues such a statement, warns once per process ("client.query()
  // when the client is already executing a query") and will refuse it in
  // pg 9: every client's statements are watched (test/util/pg-busy.js), and
  // the warning listened for.
  const watch = watchBusyClients()
  /** @type {string[]} */
  const warnings = []
  const onWarning = (/** @type {Error} */ warning) => { if (/already executing a query/.test(warning.message)) warnings.push(warning.message) }
  process.on('warning', onWarning)
  const table = server.table()
  const dbs = [await openShared(server.connectionString, table), await openShared(server.connectionString, table)]
  try {
    const banks = dbs.map(db => declareBank(db).accounts)
    for (let id = 1; id <= ACCOUNTS; id++) await banks[0].insert({ balance: INITIAL })
    let increments = 0
    await Promise.all(dbs.flatMap((db, d) => range(0, 29).map(async i => {
      const accounts = banks[d]
      const id = 1 + (i % ACCOUNTS)
      if (i % 5 === 0) {
        const to = 1 + ((id + d) % ACCOUNTS)
        return db.transaction(async (/** @type {any} */ tx) => {
          const [payer, payee] = await Promise.all([accounts.in(tx).get(id), accounts.in(tx).get(to)])
          await accounts.in(tx).update(id, { balance: payer.balance - 1 })
          await accounts.in(tx).update(to, { balance: payee.balance + 1 })
        }, { maxRetries: 100, timeout: 60000 })
      }
      if (i % 5 === 1) return Promise.all([accounts.get(id), accounts.get(1 + ((id + 1) % ACCOUNTS))])
      return db.write(async (/** @type {any} */ w) => {
        const [mine, next] = await Promise.all([accounts.in(w).get(id), accounts.in(w).get(1 + (id % ACCOUNTS))])
        await accounts.in(w).update(id, { balance: mine.balance + 1 })
        return next.balance
      }).then(() => { increments++ })
    })))
    await new Promise(resolve => setTimeout(resolve, 50))
    const busy = watch.stop()
    t.deepEqual(busy.map(b => `${b.client}: ${b.text.slice(0, 60)}`), [], 'no statement was sent on a connection running another')
    t.deepEqual(warnings, [], 'pg did not warn of one')
    // Read by a third database (neither may have heard the other's last batch yet).
    const fresh = await openShared(server.connectionString, table)
    let total = 0
    try {
      const accounts = declareBank(fresh).accounts
      for (let id = 1; id <= ACCOUNTS; id++) total += (await accounts.get(id)).balance
    } finally {
      await fresh.close()
    }
    t.is(total, ACCOUNTS * INITIAL + increments, 'every increment was kept (transfers move, increments add 1 each)')
    await checkClean(t, dbs[0], 'after the concurrent workload')
  } finally {
    watch.stop()
    process.off('warning', onWarning)
    for (const db of dbs) await db.close()
  }
})

test(`${mode}: transfers (db.transaction()) and increments (db.write()) of two databases on one table, the increments decided while the transfers read: none lost`, async t => {
  // A transfer reads its two accounts side by side; increments of both are
  // decided (from the section cache, no round trip) while those reads are
  // on their way. The payer's read finds its account changed since the
  // transaction began and moves the transaction's snapshot forward; the
  // payee's read, made before the increments, must then be made again,
  // not taken as of the moved snapshot: else the transfer writes over the
  // increments (with the writer lock the commit checks decisions, not
  // values: nothing else catches it; test/transaction-inflight-test.js).
  const table = server.table()
  const dbs = [await openShared(server.connectionString, table), await openShared(server.connectionString, table)]
  let increments = 0
  try {
    const banks = dbs.map(db => declareBank(db).accounts)
    for (let id = 1; id <= ACCOUNTS; id++) await banks[0].insert({ balance: INITIAL })
    /** @param {number} d @param {number} id */
    const add = (d, id) => dbs[d].write(async (/** @type {any} */ w) => {
      const { balance } = await banks[d].in(w).get(id)
      await banks[d].in(w).update(id, { balance: balance + 1 })
    }).then(() => { increments++ })
    // Each database in turn, both accounts of each transfer incremented
    // twice while it reads them.
    for (const [d, from, to] of [[0, 1, 2], [0, 3, 4], [1, 5, 6], [1, 7, 8], [1, 2, 3], [0, 6, 7]]) {
      const accounts = banks[d]
      // So that the increments are decided at once: the database holds the
      // writer lock, and its section cache holds both accounts.
      await add(d, from)
      await add(d, to)
      /** @type {() => void} */
      let issued = () => {}
      const reading = new Promise(resolve => { issued = () => resolve(undefined) })
      const transfer = dbs[d].transaction(async (/** @type {any} */ tx) => {
        const reads = Promise.all([accounts.in(tx).get(from), accounts.in(tx).get(to)])
        issued()
        const [payer, payee] = await reads
        await accounts.in(tx).update(from, { balance: payer.balance - 1 })
        await accounts.in(tx).update(to, { balance: payee.balance + 1 })
      }, { maxRetries: 100, timeout: 60000 })
      await reading
      await Promise.all([transfer, add(d, from), add(d, to), add(d, from), add(d, to)])
    }
  } finally {
    for (const db of dbs) await db.close()
  }
  const fresh = await openShared(server.connectionString, table)
  try {
    const accounts = declareBank(fresh).accounts
    let total = 0
    for (let id = 1; id <= ACCOUNTS; id++) total += (await accounts.get(id)).balance
    t.is(total, ACCOUNTS * INITIAL + increments, `6 transfers and ${increments} increments: the total is ${ACCOUNTS * INITIAL} + ${increments}`)
    await checkClean(t, fresh, 'after the transfers and increments')
  } finally {
    await fresh.close()
  }
})

writerLockTest(`${mode}: a read-only transaction committing while its database takes the writer lock, not yet caught up, still hears the last holder's batch`, async t => {
  // The audit read account 1 before the other database's transfer and
  // account 2 after it, before hearing of it; then its database took the
  // writer lock and, while it caught up (its SELECT 1 held here), the audit
  // committed: it must not count the lock as caught up (its sum would be
  // 210), but catch up and run again.
  const table = server.table()
  const [p, q] = [await openShared(server.connectionString, table), await openShared(server.connectionString, table)]
  /** @type {(() => void) | null} */
  let heldSelect = null
  let holdSelect = false
  const notes = holdNotifications(send => {
    if (!holdSelect) return send()
    holdSelect = false
    return new Promise(resolve => { heldSelect = () => resolve(send()) })
  })
  const release = () => {
    notes.release()
    const select = heldSelect
    heldSelect = null
    select?.()
  }
  try {
    const accountsP = declareBank(p).accounts
    const accountsQ = declareBank(q).accounts
    for (let id = 1; id <= 3; id++) await accountsQ.insert({ balance: 100 })
    notes.holding = true
    const { audit, go } = await auditAcrossTransfer(p, accountsP, q, accountsQ)
    holdSelect = true
    const write = accountsP.update(3, { balance: 101 })
    const catching = () => heldSelect !== null
    for (let waited = 0; !catching() && waited < 2000; waited++) await new Promise(resolve => setTimeout(resolve, 5))
    t.ok(catching(), 'the audit\'s database took the writer lock and catches up')
    go()
    await new Promise(resolve => setTimeout(resolve, 100))
    release()
    t.is(await audit, 200, 'the audit saw both accounts before the transfer, or both after')
    await write
    await checkClean(t, p, 'after the audit')
  } finally {
    release()
    notes.restore()
    await p.close()
    await q.close()
  }
})

writerLockTest(`${mode}: a read-only transaction that read another process's batch before hearing of it conflicts, though the listening connection answered (its notification still on its way)`, async t => {
  // PostgreSQL makes a commit visible before it signals the listening
  // sessions: the audit may read a transfer's new value and commit before
  // the notification arrives, even after a round trip on the listening
  // connection. Held here: the listening connections hear nothing of the
  // batches until the test lets them, or (second run) until after the
  // audit's first round trip to catch up.
  for (const when of ['never', 'after the first catch-up']) {
    const table = server.table()
    const [p, q] = [await openShared(server.connectionString, table), await openShared(server.connectionString, table)]
    let catchUps = 0
    const notes = holdNotifications(send => {
      if (!notes.holding) return send()
      catchUps++
      // Released once the answer is in: heard after the round trip, as a late signal would be.
      return when === 'never' ? send() : send().then((/** @type {any} */ result) => { notes.release(); return result })
    })
    try {
      const accountsP = declareBank(p).accounts
      const accountsQ = declareBank(q).accounts
      for (let id = 1; id <= 2; id++) await accountsQ.insert({ balance: 100 })
      // p's first critical section (its declaration's schema comparison)
      // takes the writer lock: done here, while p hears q's batches. Taken
      // during the audit, with every notification held, its catch-up could
      // not tell that p heard them all, and every transaction running then
      // conflicts (lib/writer.js #catchUp()): a third attempt, found in CI.
      await p.write(() => {})
      const lock = /** @type {any} */ (p).level.sharedWriterLock()
      const acquired = lock.stats.acquired
      notes.holding = true
      const { audit, go, attempts } = await auditAcrossTransfer(p, accountsP, q, accountsQ)
      go()
      t.is(await audit, 200, `notifications held ${when}: the audit saw both accounts before the transfer, or both after`)
      t.ok(catchUps >= 1, `notifications held ${when}: the audit caught up on the listening connection before it committed`)
      t.is(lock.stats.acquired, acquired, `notifications held ${when}: p took no writer lock during the audit (that would conflict it once more)`)
      t.is(attempts(), 2, `notifications held ${when}: it ran again once, for the transfer it read before hearing of it`)
      notes.release()
      await checkClean(t, p, `notifications held ${when}: after the audit`)
    } finally {
      notes.restore()
      await p.close()
      await q.close()
    }
  }
})

test(`${mode}: 4 processes x 50 increments of one record, each read and written in a critical section: none lost`, async t => {
  const table = server.table()
  const db = await openShared(server.connectionString, table)
  try {
    const { accounts } = declareBank(db)
    await accounts.insert({ balance: 0 })
    const workers = await Promise.all(range(0, 3).map(() => start(table, 'increment', { n: 50, inFlight: 4 })))
    for (const w of workers) w.go()
    await Promise.all(workers.map(w => w.result()))
    t.is((await accounts.get(1)).balance, 200, 'the balance is 200')
    await checkClean(t, db, 'after increments in 4 processes')
  } finally {
    await db.close()
  }
})

test(`${mode}: a process killed with SIGKILL while it holds the writer lock: the others go on`, async t => {
  const table = server.table()
  const db = await openShared(server.connectionString, table)
  try {
    const { accounts } = declareBank(db)
    for (let i = 0; i < ACCOUNTS; i++) await accounts.insert({ balance: INITIAL })
    const holder = await start(table, 'hold', {})
    holder.go()
    await holder.next(m => typeof m === 'object' && m !== null && m.holding)
    const workers = await Promise.all([0, 1].map(worker => start(table, 'bank', { n: 40, seed: 99 + worker })))
    for (const w of workers) w.go()
    // The others wait for the lock meanwhile; then the holder dies.
    await new Promise(resolve => setTimeout(resolve, 300))
    holder.child.kill('SIGKILL')
    t.is((await holder.exited).signal, 'SIGKILL', 'the holder was killed')
    const results = await Promise.all(workers.map(w => w.result()))
    t.ok(results.every(r => r.moved > 0), 'both other processes went on transferring')
    t.deepEqual(results.flatMap(r => r.badAudits), [], 'no audit saw another total')
    await accounts.insert({ balance: 0 })
    const all = await accounts.query().all()
    t.is(all.reduce((sum, a) => sum + a.balance, 0), ACCOUNTS * INITIAL, 'the total is what it was')
    t.is(all.length, ACCOUNTS + 1, 'and this process writes too')
    await checkClean(t, db, 'after a holder was killed')
  } finally {
    await db.close()
  }
})

writerLockTest(`${mode}: a batch decided under a lock lost with its connection is refused (fencing)`, async t => {
  const table = server.table()
  const db = await openShared(server.connectionString, table)
  try {
    const { accounts } = declareBank(db)
    await accounts.insert({ balance: INITIAL })
    /** @type {() => void} */
    let letGo = () => {}
    const gate = new Promise(resolve => { letGo = () => resolve(undefined) })
    /** @type {() => void} */
    let holding = () => {}
    const held = new Promise(resolve => { holding = () => resolve(undefined) })
    const write = db.write(async w => {
      await accounts.in(w).update(1, { balance: 1 })
      holding()
      await gate
    })
    await held
    // The connection that holds the writer lock (the two-key form: classid, objid).
    const { rows } = await server.pool.query("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = $1::oid AND objsubid = 2", [WRITER_LOCK_SPACE])
    t.is(rows.length, 1, 'one connection holds the writer lock')
    await server.pool.query('SELECT pg_terminate_backend($1)', [rows[0].pid])
    // Another process takes the lock and writes meanwhile.
    const other = await start(table, 'set', { balance: 777 })
    other.go()
    t.is(await other.result(), 777, 'another process took the lock and wrote')
    letGo()
    const refused = await write.then(() => null, err => err)
    t.ok(refused, `the batch decided under the lost lock is refused (${refused?.code})`)
    t.is((await accounts.get(1)).balance, 777, "the other process's write stands")
    await accounts.update(1, { balance: 778 })
    t.is((await accounts.get(1)).balance, 778, 'this process writes again, under the lock taken anew')
    await checkClean(t, db, 'after a lost lock')
  } finally {
    await db.close()
  }
})

/** The connections that hold the writer lock. */
async function writerLockHolders () {
  const { rows } = await server.pool.query("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = $1::oid AND objsubid = 2", [WRITER_LOCK_SPACE])
  return rows.length
}

/** @param {number} ms */
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

writerLockTest(`${mode}: one process writing one write at a time keeps the writer lock it took for its first write (the lease)`, async t => {
  const table = server.table()
  const db = await openShared(server.connectionString, table)
  try {
    await declareBank(db).accounts.insert({ balance: INITIAL })
  } finally {
    await db.close()
  }
  const writer = await start(table, 'serial', { n: 20 })
  writer.go()
  const { locks, balance } = await writer.result()
  t.is(balance, 19, 'the 20 writes are stored')
  t.is(locks, 0, '20 more writes awaited one by one after a first: no pg_advisory_lock (kept from the first)')
})

writerLockTest(`${mode}: a holder hands the lock over in one query: its holding's end, committed, then the unlock`, async t => {
  const table = server.table()
  const a = await openShared(server.connectionString, table)
  const b = await openShared(server.connectionString, table)
  try {
    const accountsA = declareBank(a).accounts
    const accountsB = declareBank(b).accounts
    await Promise.all([a, b].map(db => /** @type {any} */ (db).level.sharedWriterLock().listening()))
    const sent = /** @type {string[]} */ ([])
    const Client = /** @type {any} */ (pg.Client).prototype
    const query = Client.query
    Client.query = function (/** @type {any[]} */ ...args) {
      if (this.connectionParameters.fallback_application_name === 'levelkit writer') sent.push(String(typeof args[0] === 'string' ? args[0] : args[0]?.text))
      return query.apply(this, args)
    }
    t.teardown(() => { Client.query = query })
    await accountsA.insert({ balance: INITIAL })
    await accountsA.update(1, { balance: 1 })
    // b wants the lock a keeps idle (the lease), or took again: a lets it go.
    await accountsB.update(1, { balance: 2 })
    await sleep(100)
    Client.query = query
    const unlocks = sent.filter(text => text.includes(`pg_advisory_unlock(${WRITER_LOCK_SPACE}`))
    t.ok(unlocks.length >= 1, `the lock changed hands (${unlocks.length} unlocks)`)
    t.ok(unlocks.some(text => /^SELECT pg_notify\('levelkit_\d+', '\{"f":"[^"]+","g":\d+,"s":[1-9]\d*,"e":1\}'\); COMMIT; SELECT pg_advisory_unlock\(/.test(text)), 'a holding that wrote lets go in one query: its end (its batches counted), committed, then the unlock')
    t.is(sent.filter(text => /^SELECT pg_notify\([^;]*$/.test(text)).length, 0, 'no end sent on its own')
    t.is((await accountsA.get(1)).balance, 2, 'b wrote')
    await accountsA.update(1, { balance: 3 })
    t.is((await accountsB.get(1)).balance, 3, 'a took the lock back and wrote')
    await checkClean(t, a, 'after the hand-overs')
  } finally {
    await a.close()
    await b.close()
  }
})

/**
 * A bank table and a process that wrote to it once and keeps the leased
 * writer lock while idle.
 * @param {any} t
 */
async function idleHolder (t) {
  const table = server.table()
  const db = await openShared(server.connectionString, table)
  try {
    await declareBank(db).accounts.insert({ balance: INITIAL })
  } finally {
    await db.close()
  }
  const holder = await start(table, 'idle', { balance: 1 })
  holder.go()
  await holder.next(m => m?.done === 1)
  await sleep(300)
  t.is(await writerLockHolders(), 1, 'idle after its write, the holder keeps the writer lock')
  return { table, holder }
}

writerLockTest(`${mode}: a process keeping the lease idle lets it go when another wants it`, async t => {
  const { table, holder } = await idleHolder(t)
  const other = await start(table, 'set', { balance: 2 })
  const began = Date.now()
  other.go()
  const done = await Promise.race([other.next(m => m?.done !== undefined || m?.failed !== undefined), sleep(5000).then(() => null)])
  const took = Date.now() - began
  t.ok(done !== null && took < 2000, `another process wrote ${took} ms after it started to (< 2000)`)
  if (done === null) {
    other.child.kill()
    holder.child.kill()
    return
  }
  t.is(await other.result(), 2, 'its write stands')
  holder.child.send({ set: 3 })
  await holder.next(m => m?.set === 3)
  t.pass('the first process takes the lock back and writes again')
  holder.child.send({ close: true })
  await holder.exited
  const check = await openShared(server.connectionString, table)
  try {
    t.is((await declareBank(check).accounts.get(1)).balance, 3, 'the last write stands')
    await checkClean(t, check, 'after the lease changed hands')
  } finally {
    await check.close()
  }
})

writerLockTest(`${mode}: a holder whose listening connection is lost (and cannot come back) lets the lease go`, async t => {
  const { table, holder } = await idleHolder(t)
  holder.child.send({ block: true })
  await holder.next(m => m?.blocked === true)
  // The holder is the only process with the table open; this process's databases closed
  // in the last second may still keep their listening connections for reuse.
  await endIdleConnections()
  const { rows } = await server.pool.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'levelkit listen'")
  t.is(rows.length, 1, "the holder's listening connection is terminated")
  const other = await start(table, 'set', { balance: 2 })
  const began = Date.now()
  other.go()
  const done = await Promise.race([other.next(m => m?.done !== undefined || m?.failed !== undefined), sleep(5000).then(() => null)])
  const took = Date.now() - began
  t.ok(done !== null && took < 2000, `another process wrote ${took} ms after it started to (< 2000)`)
  if (done === null) other.child.kill()
  else t.is(await other.result(), 2, 'its write stands')
  // Still deaf: its next write lets the lock go once written, as before the lease.
  holder.child.send({ set: 3 })
  await holder.next(m => m?.set === 3 || m?.failed !== undefined)
  await sleep(300)
  t.is(await writerLockHolders(), 0, 'a write of the deaf holder: the lock is let go after it')
  holder.child.send({ close: true })
  await holder.exited
})

/**
 * Hold the notifications of batches and holdings' ends (not the 'want's,
 * which let another database give the lock up) that the pg clients of this
 * process receive while `holding` is set, as if PostgreSQL signalled the
 * listening sessions late; `onSelect` is called with the send of each
 * catch-up's round trip (`SELECT 1`) and returns what it answers.
 * @param {(send: () => Promise<any>) => any} onSelect
 */
function holdNotifications (onSelect) {
  const Client = /** @type {any} */ (pg.Client).prototype
  const ownEmit = Object.prototype.hasOwnProperty.call(Client, 'emit')
  const emit = Client.emit
  const query = Client.query
  /** @type {Array<() => void>} */
  const held = []
  const control = {
    holding: false,
    release () {
      control.holding = false
      for (const note of held.splice(0)) note()
    },
    restore () {
      control.release()
      if (ownEmit) Client.emit = emit
      else delete Client.emit
      Client.query = query
    }
  }
  Client.emit = function (/** @type {string} */ event, /** @type {any[]} */ ...args) {
    if (event === 'notification' && control.holding && !String(args[0]?.payload).includes('"w":1')) {
      held.push(() => emit.call(this, event, ...args))
      return true
    }
    return emit.call(this, event, ...args)
  }
  Client.query = function (/** @type {any[]} */ ...args) {
    return args[0] === 'SELECT 1' ? onSelect(() => query.apply(this, args)) : query.apply(this, args)
  }
  return control
}

/**
 * An audit transaction of `p` summing accounts 1 and 2 (`accountsP`):
 * its first attempt reads account 1, then waits for `go()` before it reads
 * account 2; meanwhile `q` moves 10 from account 1 to account 2 (both at 100).
 * Resolves once that transfer is written.
 * @param {any} p @param {any} accountsP @param {any} q @param {any} accountsQ
 */
async function auditAcrossTransfer (p, accountsP, q, accountsQ) {
  let attempts = 0
  /** @type {() => void} */
  let readFirst = () => {}
  const first = new Promise(resolve => { readFirst = () => resolve(undefined) })
  /** @type {() => void} */
  let go = () => {}
  const going = new Promise(resolve => { go = () => resolve(undefined) })
  const audit = p.transaction(async (/** @type {any} */ tx, /** @type {number} */ attempt) => {
    attempts = attempt
    const a = (await accountsP.in(tx).get(1)).balance
    if (attempt === 1) {
      readFirst()
      await going
    }
    return a + (await accountsP.in(tx).get(2)).balance
  })
  await first
  await q.write(async (/** @type {any} */ w) => {
    await accountsQ.in(w).update(1, { balance: 90 })
    await accountsQ.in(w).update(2, { balance: 110 })
  })
  return { audit, go, attempts: () => attempts }
}
