// open({ backend: 'postgres', shared: true, locking: 'serializable' }): the
// processes' critical sections run in SERIALIZABLE transactions, locking
// nothing (lib/backends/postgres-serializable.js); PostgreSQL fails one that
// cannot be serialized (40001), and its sections run again. Two databases
// open on one table in this process stand for two processes: a write skew
// (each reads two accounts and draws on its own) leaves exactly one draw,
// and a lost update (both read a balance, one writes it meanwhile) is run
// again on the value written. Then the tests of several processes on one
// table (test/postgres-shared-test.js) with serializable transactions; the
// conformance and chat suites too with LEVELKIT_TEST_SUITES=1 (they take
// about as long again as the rest of this file).
import test from 'tape'
import pg from 'pg'
import { open } from '../index.js'
import { ChatStore } from '../chat.js'
import { postgresForTests, twoDatabases } from './util/postgres.js'
import { cutter } from './util/pg-proxy.js'
import { lostBetweenSections } from './util/pg-lost-transaction.js'
import { LOCK_TABLES, lockTableName } from '../lib/backends/postgres-serializable.js'

const server = await postgresForTests(test)

/** @param {number} ms */
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

function gate () {
  /** @type {() => void} */
  let open = () => {}
  /** @type {Promise<void>} */
  const opened = new Promise(resolve => { open = () => resolve(undefined) })
  return { open, opened }
}

/** @param {string} table */
const options = table => ({ backend: 'postgres', connectionString: server.connectionString, table, shared: true, locking: 'serializable', poolSize: 2 })

/** What the two databases of a test here are opened with (twoDatabases()). */
const serializable = { locking: 'serializable', poolSize: 2 }

/**
 * Two databases open on one fresh table, standing for two processes, with
 * `balances` inserted as accounts 1, 2, ...: `fn` gets each database and its
 * accounts collection; both are closed after it.
 * @param {number[]} balances
 * @param {(a: any, accountsA: any, b: any, accountsB: any) => Promise<void>} fn
 */
function twoProcesses (balances, fn) {
  return twoDatabases(server, serializable, async (a, b) => {
    const accountsA = a.collection('accounts')
    for (const balance of balances) await accountsA.insert({ balance })
    await fn(a, accountsA, b, b.collection('accounts'))
  })
}

test('postgres serializable: the locking option takes \'table\', \'keys\' or \'serializable\'', async t => {
  const err = await open({ ...options(server.table()), locking: 'snapshot' }).then(db => db.close(), err => err)
  t.is(err?.code, 'LEVELKIT_INVALID', 'another value is refused with LEVELKIT_INVALID')
  t.match(String(err?.message), /'table', 'keys' or 'serializable'/, 'naming the values it takes')
})

test('postgres serializable: a write skew between two processes fails one transaction (40001), whose section runs again and draws nothing', async t => {
  await twoProcesses([60, 60], async (a, accountsA, b, accountsB) => {
    const bothRead = [gate(), gate()]
    const runs = [0, 0]
    /**
     * Draw 100 from account `mine` if both accounts together hold 100.
     * @param {any} db @param {any} accounts @param {number} i
     */
    const draw = (db, accounts, i) => db.write(async (/** @type {any} */ w) => {
      runs[i]++
      const [one, two] = await Promise.all([accounts.in(w).get(1), accounts.in(w).get(2)])
      bothRead[i].open()
      await Promise.all(bothRead.map(g => g.opened))
      if (one.balance + two.balance < 100) return false
      const mine = i === 0 ? one : two
      await accounts.in(w).update(mine.id, { balance: mine.balance - 100 })
      return true
    })
    const drawn = await Promise.all([draw(a, accountsA, 0), draw(b, accountsB, 1)])
    t.deepEqual(drawn.filter(Boolean).length, 1, 'exactly one of the two draws is made')
    // (Twice, or more when its reruns read before the winner's COMMIT is done: CI once saw 11.)
    t.ok(Math.min(...runs) === 1 && Math.max(...runs) >= 2, `the winner ran once, the other again: its first transaction failed (${runs})`)
    const balances = [(await accountsA.get(1)).balance, (await accountsA.get(2)).balance]
    t.is(balances[0] + balances[1], 20, 'the accounts hold 120 - 100 together')
    t.ok(balances.every(x => x >= -40), 'one account drawn once')
    t.same((await a.check()).problems, [], 'check() is clean')
  })
})

test('postgres serializable: a section whose read another process overwrote before its COMMIT runs again on the new value', async t => {
  await twoProcesses([1], async (a, accountsA, b, accountsB) => {
    const read = gate()
    const letGo = gate()
    let runs = 0
    const holding = a.write(async (/** @type {any} */ w) => {
      runs++
      const { balance } = await accountsA.in(w).get(1)
      read.open()
      await letGo.opened
      await accountsA.in(w).update(1, { balance: balance + 10 })
      return balance
    })
    await read.opened
    const other = await Promise.race([accountsB.update(1, { balance: 100 }).then(() => 'written'), sleep(5000).then(() => 'still waiting after 5 s')])
    t.is(other, 'written', 'the other database writes the account meanwhile: nothing is locked')
    letGo.open()
    t.is(await holding, 100, 'the section answers with what it read in its second run')
    t.is(runs, 2, 'it ran twice')
    t.is((await accountsA.get(1)).balance, 110, 'the account holds both writes')
    const { rows } = await server.pool.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = \'levelkit writer\' AND state LIKE \'idle in transaction%\'')
    t.is(rows[0].n, 0, 'no transaction is left open once both are idle')
    t.same((await a.check()).problems, [], 'check() is clean')
  })
})

/**
 * Count the statements sent on the writer connections (where a critical
 * section's reads go with locking: 'serializable') until the test ends:
 * `reads` the point reads (one key or `key = ANY`, maybe behind a BEGIN in
 * one query), `all` every query, `begins` and `commits` the queries that
 * are a lone BEGIN or COMMIT (a round trip of their own).
 * @param {import('tape').Test} t
 */
function countWriterStatements (t) {
  const Client = /** @type {any} */ (pg.Client).prototype
  const query = Client.query
  const counted = { reads: 0, keys: 0, all: 0, begins: 0, commits: 0 }
  Client.query = function (/** @type {any[]} */ ...args) {
    if (this.connectionParameters.fallback_application_name === 'levelkit writer') {
      const text = String(typeof args[0] === 'string' ? args[0] : args[0]?.text)
      counted.all++
      if (/^BEGIN[A-Z ]*$/.test(text)) counted.begins++
      if (text === 'COMMIT') counted.commits++
      const read = /^(BEGIN[A-Z ]*; )?SELECT (key, )?value FROM .* WHERE key (= |= ANY\()(.*)/.exec(text)
      if (read !== null) {
        counted.reads++
        // The keys: values of a prepared statement, or literals (decode('…', 'hex') for a key, E'{"\\\\x…", …}' for an array).
        const values = args[0]?.values
        counted.keys += values ? (Array.isArray(values[0]) ? values[0].length : 1) : read[4].split('decode(').length - 1 + read[4].split('"\\\\\\\\x').length - 1
      }
    }
    return query.apply(this, args)
  }
  t.teardown(() => { Client.query = query })
  return { counted, reset () { for (const key of Object.keys(counted)) counted[/** @type {keyof typeof counted} */ (key)] = 0 } }
}

test('postgres serializable: a section\'s transaction begins with its first read and commits with its batch, no round trip of their own', async t => {
  // One database: another's statements (its schema's section) would be counted too.
  const a = await open(options(server.table()))
  try {
    const accountsA = a.collection('accounts')
    for (const balance of [1, 2]) await accountsA.insert({ balance })
    const { counted, reset } = countWriterStatements(t)
    reset()
    await a.write(async (/** @type {any} */ w) => {
      const [one, two] = await Promise.all([accountsA.in(w).get(1), accountsA.in(w).get(2)])
      await accountsA.in(w).update(1, { balance: one.balance + two.balance })
    })
    t.is((await accountsA.get(1)).balance, 3, 'the section wrote what it read')
    t.deepEqual([counted.begins, counted.commits], [0, 0], 'no BEGIN or COMMIT went alone')
    t.deepEqual([counted.reads, counted.keys], [1, 2], 'its reads went as one statement, with the BEGIN')
    t.is(counted.all, 2, 'two round trips in all: BEGIN and the reads, the batch and COMMIT')
    reset()
    await accountsA.update(2, { balance: 5 })
    t.is((await accountsA.get(2)).balance, 5, 'an update is written')
    t.deepEqual([counted.begins, counted.commits, counted.all], [0, 0, 2], 'in two round trips, no BEGIN or COMMIT alone')
    t.same((await a.check()).problems, [], 'check() is clean')
    const { rows } = await server.pool.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = \'levelkit writer\' AND state LIKE \'idle in transaction%\'')
    t.is(rows[0].n, 0, 'no transaction is left open')
  } finally {
    await a.close()
  }
})

test('postgres serializable: a critical section\'s point reads asked for together go as one statement of its transaction', async t => {
  await twoProcesses([1, 2, 3, 4, 5], async (a, accountsA) => {
    const { counted, reset } = countWriterStatements(t)
    const read = await a.write(async (/** @type {any} */ w) => {
      const [one, more, missing] = await Promise.all([
        accountsA.in(w).get(1),
        Promise.all([2, 3, 4, 5].map(id => accountsA.in(w).get(id))),
        accountsA.in(w).get(99)
      ])
      return [one, ...more, missing].map(account => account?.balance)
    })
    t.deepEqual(read, [1, 2, 3, 4, 5, undefined], 'six reads at once answer as one at a time would')
    t.deepEqual([counted.reads, counted.keys], [1, 6], 'in one statement of the section\'s transaction, on the writer connection')
    reset()
    const level = /** @type {any} */ (a).level
    const many = await a.write(async () => Promise.all([level.getMany(['x', 'y']), level.get('x'), level.has('z')]))
    t.deepEqual(many, [[undefined, undefined], undefined, false], 'getMany, get and has of the root at once, in a section')
    t.deepEqual([counted.reads, counted.keys], [1, 3], 'in one statement, each key once')
  })
})

for (const cut of /** @type {const} */ (['before', 'after'])) {
  test(`postgres serializable: a batch sent with its COMMIT whose connection is cut ${cut} the server commits it is reported LEVELKIT_COMMIT_UNKNOWN, and not written again`, async t => {
    // The batch and its COMMIT go as one query (its values as literals): the marker is in it.
    const proxy = await cutter(server.connectionString, { marker: '; COMMIT' })
    const db = await open({ ...options(server.table()), connectionString: proxy.connectionString })
    try {
      const accounts = db.collection('accounts')
      await accounts.insert({ balance: 1 })
      proxy.cut(cut)
      const err = await db.write(async (/** @type {any} */ w) => {
        const { balance } = await accounts.in(w).get(1)
        await accounts.in(w).update(1, { balance: balance + 10 })
        return accounts.in(w).insert({ balance: 2 })
      }).then(() => null, (/** @type {any} */ err) => err)
      t.is(proxy.cuts, 1, 'the connection was cut')
      t.is(err?.code, 'LEVELKIT_COMMIT_UNKNOWN', 'rejected with LEVELKIT_COMMIT_UNKNOWN')
      t.is((await accounts.get(1)).balance, cut === 'after' ? 11 : 1, cut === 'after' ? 'it had committed' : 'it had not')
      t.is(await accounts.get(2) === undefined, cut === 'before', 'the insert is there exactly when the update is: written once, whole')
      await accounts.update(1, { balance: 100 })
      t.is((await accounts.get(1)).balance, 100, 'the next write goes on, on a new connection')
      t.same((await db.check()).problems, [], 'check() is clean')
    } finally {
      await db.close().catch(() => {})
      await proxy.close()
    }
  })
}

for (const readCache of [undefined, 0]) {
  // Without the section cache (readCache: 0), the records of the members without a list are read once the lists are (as on IndexedDB).
  const what = readCache === 0 ? ', without the section cache,' : ''
  test(`postgres serializable: createChat of 7 members read by a process that knows none of them${what} makes few round trips`, async t => {
    await twoDatabases(server, { ...serializable, readCache }, async (a, b) => {
      const passwordCost = { scryptN: 2 }
      const storeA = await ChatStore.open(a, { passwordCost })
      const users = []
      for (let i = 0; i < 8; i++) users.push(await storeA.createUser({ username: `u${i}`, password: 'pw' }))
      await storeA.createChat({ name: 'first', adminId: users[0], userIds: users.slice(1, 6) })
      const storeB = await ChatStore.open(b, { passwordCost })
      const { counted, reset } = countWriterStatements(t)
      reset()
      // Members 6 and 7 have no list yet: their records are read.
      await storeB.createChat({ name: 'c', adminId: users[1], userIds: users.slice(2) })
      // One statement per key read (10 point reads, 14 statements) before reads were coalesced;
      // then 4 (the members without a list read one at a time) and 8 in all.
      const reads = readCache === 0 ? 3 : 2
      t.ok(counted.reads <= reads, `its point reads went as ${counted.reads} statements (${counted.keys} keys; at most ${reads}: the sequence, the lists${readCache === 0 ? ', the records of members without one' : ' and the records'})`)
      t.deepEqual([counted.begins, counted.commits], [0, 0], 'no BEGIN or COMMIT went alone')
      t.ok(counted.all <= reads + 2, `${counted.all} statements on the writer connection in all (at most ${reads + 2}: BEGIN with the first read, the reads, the highest chat id, the batch with COMMIT)`)
      t.same((await b.check()).problems, [], 'check() is clean')
    })
  })
}

/**
 * Whether a session waits for a lock of `table`'s lock tables (a row of
 * pg_locks not granted), polled every 5 ms until it does, `done()` turns
 * true, or 30 s.
 * @param {string} table @param {() => boolean} done
 */
async function lockTableWait (table, done) {
  for (const deadline = Date.now() + 30000; !done() && Date.now() < deadline; await sleep(5)) {
    if (await lockTableLocks(table, 'NOT granted') > 0) return true
  }
  return false
}

/**
 * How many locks of `table`'s lock tables are in pg_locks (`where` more).
 * @param {string} table @param {string} [where]
 */
async function lockTableLocks (table, where = 'true') {
  const { rows } = await server.pool.query(`SELECT count(*)::int AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE l.locktype = 'relation' AND starts_with(c.relname, $1) AND ${where}`, [`${table}_lock_`])
  return rows[0].n
}

/**
 * Collect the notices (WARNING, NOTICE ...) the server sends the writer
 * connections until the test ends.
 * @param {import('tape').Test} t
 */
function writerNotices (t) {
  const Client = /** @type {any} */ (pg.Client).prototype
  const query = Client.query
  /** @type {string[]} */
  const notices = []
  const seen = new WeakSet()
  Client.query = function (/** @type {any[]} */ ...args) {
    if (this.connectionParameters.fallback_application_name === 'levelkit writer' && !seen.has(this)) {
      seen.add(this)
      this.on('notice', (/** @type {any} */ notice) => notices.push(`${notice.severity}: ${notice.message}`))
    }
    return query.apply(this, args)
  }
  t.teardown(() => { Client.query = query })
  return notices
}

test('postgres serializable: a transaction whose first statement reads a sequence key locks its lock table first: another process\'s insert waits for it, then sees its commit, rather than failing it', async t => {
  await twoDatabases(server, serializable, async (a, b, table) => {
    const locks = [a, b].map(db => /** @type {any} */ (db).level.sharedWriterLock())
    const [peopleA, peopleB] = [a, b].map(db => db.collection('people'))
    // Each has used the sequence (its first use also reads the highest stored id).
    await peopleA.insert({ name: 'a0' })
    await peopleB.insert({ name: 'b0' })
    const notices = writerNotices(t)
    const before = locks.map(lock => ({ ...lock.stats }))
    const reached = gate()
    const release = gate()
    let runs = 0
    let runsB = 0
    // a's section inserts (its first read: the sequence), then waits, its transaction open.
    const inA = a.write(async (/** @type {any} */ w) => {
      runs++
      const id = await peopleA.in(w).insert({ name: 'a1' })
      reached.open()
      await release.opened
      return id
    })
    await reached.opened
    t.is(await lockTableLocks(table, 'granted'), 1, 'the open transaction holds one lock table')
    let doneB = false
    const inB = b.write(async (/** @type {any} */ w) => {
      runsB++
      return peopleB.in(w).insert({ name: 'b1' })
    }).then(id => { doneB = true; return id })
    const waited = await lockTableWait(table, () => doneB)
    t.ok(waited, 'the other process\'s insert waits for the lock table')
    t.notOk(doneB, 'and has not committed while the first transaction is open')
    release.open()
    const ids = await Promise.all([inA, inB])
    t.same(ids, [3, 4], 'ids in the order the lock was taken')
    // Its snapshot was taken after the wait: it read the sequence a
    // committed meanwhile (one taken before would have read 2, and its
    // update of the sequence row would have failed with 40001).
    t.same([runs, runsB], [1, 1], 'each section ran once: the waiting one read what the first committed while it waited')
    t.same(locks.map((lock, i) => lock.stats.failures - before[i].failures), [0, 0], 'no batch failed')
    t.same(locks.map((lock, i) => lock.stats.sequenceLocked - before[i].sequenceLocked), [1, 1], 'each transaction locked the sequence key\'s lock table in its first statement')
    t.same(locks.map((lock, i) => lock.stats.contentionEntered - before[i].contentionEntered), [0, 0], 'a wait for a lock table enters no key in contention mode (only a failure does)')
    const stored = (await peopleA.query().all()).map((/** @type {any} */ record) => record.id)
    t.same(stored, [1, 2, 3, 4], 'ids 1..4 without gap')
    t.same((await a.check()).problems, [], 'check() is clean')
    t.is(await lockTableLocks(table), 0, 'no lock table is left locked: the locks went with the COMMITs, no unlock sent')
    t.same(notices, [], 'the server sent the writer connections no warning or notice')
  })
})

test('postgres serializable: a lock table held by a transaction lost with its connection is free at once, and the lost group runs again', async t => {
  await twoDatabases(server, serializable, async (a, b, table) => {
    const [peopleA, peopleB] = [a, b].map(db => db.collection('people'))
    await peopleA.insert({ name: 'a0' })
    await peopleB.insert({ name: 'b0' })
    const reached = gate()
    const release = gate()
    let runs = 0
    const inA = a.write(async (/** @type {any} */ w) => {
      runs++
      const id = await peopleA.in(w).insert({ name: 'a1' })
      if (runs === 1) {
        reached.open()
        await release.opened
      }
      return id
    })
    await reached.opened
    try {
      // The session holding the lock table (a's writer connection) ends, as in a failover.
      const { rows } = await server.pool.query('SELECT DISTINCT l.pid FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE l.granted AND starts_with(c.relname, $1)', [`${table}_lock_`])
      t.is(rows.length, 1, 'one session holds the lock table')
      if (rows.length === 1) await server.pool.query('SELECT pg_terminate_backend($1)', [rows[0].pid])
      // b's insert does not wait for a: the lock went with a's session.
      const idB = await Promise.race([peopleB.insert({ name: 'b1' }), sleep(5000).then(() => 'still waiting after 5 s')])
      t.is(idB, 3, 'the other process inserts at once, reading what is committed')
    } finally {
      release.open()
    }
    t.is(await inA, 4, 'the lost group ran again in a new transaction, on the sequence it read there')
    t.is(runs, 2, 'its section ran twice')
    const stored = (await peopleA.query().all()).map((/** @type {any} */ record) => record.id)
    t.same(stored, [1, 2, 3, 4], 'ids 1..4 without gap')
    t.is(await lockTableLocks(table), 0, 'no lock table is left locked')
  })
})

test('postgres serializable: a table\'s lock tables are made when it is opened shared with locking: \'serializable\', also for a table made before them', async t => {
  const table = server.table()
  const plain = await open({ backend: 'postgres', connectionString: server.connectionString, table, poolSize: 1 })
  await plain.collection('people').insert({ name: 'p1' })
  await plain.close()
  const count = async () => (await server.pool.query('SELECT count(*)::int AS n FROM pg_class WHERE starts_with(relname, $1)', [`${table}_lock_`])).rows[0].n
  t.is(await count(), 0, 'a table opened otherwise has none')
  const [a, b] = await Promise.all([open(options(table)), open(options(table))])
  try {
    t.is(await count(), LOCK_TABLES, `two processes opening it at once make ${LOCK_TABLES} between them, and both open`)
    t.same((await a.collection('people').get(1))?.name, 'p1', 'the table is untouched')
  } finally {
    await a.close()
    await b.close()
  }
  const long = 'l'.repeat(63)
  const names = [0, LOCK_TABLES - 1].map(i => lockTableName(long, i))
  t.ok(names.every(name => name.length <= 63 && name.endsWith(`_lock_${names.indexOf(name) === 0 ? 0 : LOCK_TABLES - 1}`)), `a 63-character table's lock tables have names of at most 63 characters (${names[1]})`)
  t.not(lockTableName(long, 0), lockTableName(`${long.slice(0, 62)}m`, 0), 'and two such tables differing past the cut have different ones')
})

test('postgres serializable: two processes creating chats at once fail no batch on the chats\' sequence, from their first transaction on', async t => {
  await twoDatabases(server, serializable, async (a, b) => {
    const locks = [a, b].map(db => /** @type {any} */ (db).level.sharedWriterLock())
    const passwordCost = { scryptN: 2 }
    const stores = [await ChatStore.open(a, { passwordCost }), await ChatStore.open(b, { passwordCost })]
    const users = []
    for (let i = 0; i < 12; i++) users.push(await stores[0].createUser({ username: `u${i}`, password: 'pw' }))
    const before = locks.map(lock => ({ ...lock.stats }))
    let made = 0
    // 4 rounds of 8 createChat at once in each (b's first transactions among them).
    for (let round = 0; round < 4; round++) {
      await Promise.all(stores.map(store => Promise.all(Array.from({ length: 8 }, () => {
        const n = made++
        return store.createChat({ name: `c${n}`, adminId: users[n % 12], userIds: users.slice(0, 6) })
      }))))
    }
    const during = locks.map((lock, i) => ({
      failures: lock.stats.failures - before[i].failures,
      retries: lock.stats.retries - before[i].retries,
      transactions: lock.stats.transactions - before[i].transactions,
      sequenceLocked: lock.stats.sequenceLocked - before[i].sequenceLocked
    }))
    t.same(during.map(d => d.failures), [0, 0], `no batch failed (${during.map(d => d.transactions)} transactions)`)
    t.same(during.map(d => d.retries), [0, 0], 'no section ran again')
    t.same(during.map(d => d.sequenceLocked), during.map(d => d.transactions), 'every transaction took the chats\' sequence lock before it began')
    const chats = /** @type {number[]} */ ([])
    for (let id = 1; id <= made + 1; id++) if (await stores[1].getChat(id) !== null) chats.push(id)
    t.same(chats, Array.from({ length: made }, (_, i) => i + 1), `chat ids 1..${made} without gap`)
    t.same((await a.check()).problems, [], 'check() is clean')
  })
})

test('postgres serializable: createChat in contention mode holds the chats\' sequence for two queries: its lock, BEGIN and every read; its batch, COMMIT and the unlock', async t => {
  await twoDatabases(server, serializable, async (a, b) => {
    const locks = [a, b].map(db => /** @type {any} */ (db).level.sharedWriterLock())
    // Contention mode is what a group that reads the sequence after its
    // first statement falls back on: here every first statement reads it,
    // so without this its lock would be taken first and nothing would fail.
    for (const lock of locks) Object.assign(lock, { contentionMs: 600000, lockFirstSequences: false, tableTurn: false })
    const passwordCost = { scryptN: 2 }
    const stores = [await ChatStore.open(a, { passwordCost }), await ChatStore.open(b, { passwordCost })]
    const users = []
    for (let i = 0; i < 12; i++) users.push(await stores[0].createUser({ username: `u${i}`, password: 'pw' }))
    // createChat from both until one has had a batch fail on the chats'
    // sequence (which one is a race: the other may win every time), so is
    // in contention mode: that one's createChat is counted.
    let made = 0
    for (let rounds = 0; locks.every(lock => lock.stats.failures === 0) && rounds < 50; rounds++) {
      await Promise.all(stores.map(store => Promise.all(Array.from({ length: 6 }, () => store.createChat({ name: `c${made++}`, adminId: users[made % 12], userIds: users.slice(0, 6) })))))
    }
    const failed = locks.findIndex(lock => lock.stats.failures > 0)
    t.ok(failed >= 0, `a process had a batch fail (${locks.map(lock => lock.stats.failures)} failures)`)
    const counted = Math.max(failed, 0)
    const other = 1 - counted
    // The other wrote users' lists the counted one has cached: it reads them again.
    await stores[other].createChat({ name: 'from the other', adminId: users[6], userIds: users.slice(7) })
    await sleep(100)
    const writer = /** @type {string[]} */ ([])
    const Client = /** @type {any} */ (pg.Client).prototype
    const query = Client.query
    Client.query = function (/** @type {any[]} */ ...args) {
      if (this.connectionParameters.fallback_application_name === 'levelkit writer') writer.push(String(typeof args[0] === 'string' ? args[0] : args[0]?.text))
      return query.apply(this, args)
    }
    t.teardown(() => { Client.query = query })
    const contended = locks[counted].stats.contended
    const id = await stores[counted].createChat({ name: 'counted', adminId: users[6], userIds: users.slice(7) })
    await sleep(100)
    Client.query = query
    t.is(locks[counted].stats.contended - contended, 1, 'its transaction began in contention mode')
    t.is(writer.length, 2, `two queries on the writer connection (${writer.map(text => text.slice(0, 60)).join(' | ')})`)
    const hex = (/** @type {string} */ text) => Buffer.from(text).toString('hex')
    t.match(writer[0] ?? '', /pg_try_advisory_lock.*; COMMIT; BEGIN ISOLATION LEVEL SERIALIZABLE; SELECT key, value FROM/, 'the first takes the lock, then begins and reads')
    t.ok((writer[0] ?? '').includes(hex('chats.seq')) && (writer[0] ?? '').includes(hex('members.list')), 'reading the sequence and the members\' lists at once')
    t.match(writer[1] ?? '', /; COMMIT; SELECT (count\()?pg_advisory_unlock\(/, 'the second writes, commits and lets the lock go')
    t.same((await stores[other].getChat(id))?.members, users.slice(6), 'the chat is written')
    const { rows } = await server.pool.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1")
    t.is(rows[0].n, 0, 'no key lock is left held')
    t.same((await a.check()).problems, [], 'check() is clean')
  })
})

test('postgres serializable: a section called after another process committed sees its write, though queued behind a section whose transaction began before', async t => {
  await twoProcesses([10], async (a, accountsA, b, accountsB) => {
    t.is((await accountsB.get(1)).balance, 10, 'the other process reads the account')
    const read = gate()
    const held = gate()
    // A section of b reads (its transaction's snapshot is taken) and waits.
    const first = b.write(async (/** @type {any} */ w) => {
      const account = await accountsB.in(w).get(1)
      read.open()
      await held.opened
      return account.balance
    })
    await read.opened
    const id = await accountsA.insert({ balance: 20 })
    // Called once a's insert committed, queued behind b's running section.
    const second = b.write(async (/** @type {any} */ w) => (await accountsB.in(w).get(id))?.balance)
    const updated = accountsB.update(id, { balance: 21 }).then(() => 'updated', (/** @type {any} */ err) => err.code)
    await sleep(20)
    held.open()
    t.is(await first, 10, 'the first section read what it read')
    t.is(await second, 20, 'a section called after the insert reads the record')
    t.is(await updated, 'updated', 'and an update called after the insert finds it')
    t.is((await accountsA.get(id)).balance, 21, 'the update is written')
    t.same((await b.check()).problems, [], 'check() is clean')
  })
})

test('postgres serializable: a section failed by another process every time gives up after maxReruns reruns with LEVELKIT_CONFLICT', async t => {
  const err = await open({ ...options(server.table()), maxReruns: -1 }).then(db => db.close(), err => err)
  t.is(err?.code, 'LEVELKIT_INVALID', 'maxReruns: -1 is refused with LEVELKIT_INVALID')
  await twoDatabases(server, [{ ...serializable, maxReruns: 3 }, serializable], async (a, b) => {
    const accountsA = a.collection('accounts')
    const accountsB = b.collection('accounts')
    await accountsA.insert({ balance: 0 })
    let runs = 0
    // Each run reads the account, then the other database writes it (for
    // the first 10 runs): the run's write cannot be serialized (40001).
    const failed = await a.write(async (/** @type {any} */ w) => {
      runs++
      const { balance } = await accountsA.in(w).get(1)
      if (runs <= 10) await accountsB.update(1, { balance: 1000 + runs })
      await accountsA.in(w).update(1, { balance: balance + 1 })
    }).then(() => null, err => err)
    t.is(failed?.code, 'LEVELKIT_CONFLICT', 'the write fails with LEVELKIT_CONFLICT')
    t.is(runs, 4, 'after its first run and 3 reruns')
    t.match(String(failed?.message), /maxReruns \(3\)/, 'the message names the option')
    let cause = failed?.cause
    while (cause?.cause && !cause.code?.startsWith?.('40')) cause = cause.cause
    t.match(String(cause?.code), /^40(001|P01)$/, `its cause is the last serialization failure (${cause?.code})`)
    t.is((await accountsB.get(1)).balance, 1004, 'nothing of the section was written')
    t.is(await a.write(async (/** @type {any} */ w) => (await accountsA.in(w).get(1)).balance), 1004, 'the next write goes on')
    t.same((await a.check()).problems, [], 'check() is clean')
  })
})

test('postgres serializable: once two processes failed each other on a sequence key, their inserts take turns on its lock (contention mode) and fail no more', async t => {
  await twoDatabases(server, serializable, async (a, b) => {
    const locks = [a, b].map(db => /** @type {any} */ (db).level.sharedWriterLock())
    // Long enough for the whole test: it is entered once, never left. (And
    // inserts not taking their sequence's lock by their first read: it is
    // contention mode that is tested.)
    for (const lock of locks) Object.assign(lock, { contentionMs: 600000, lockFirstSequences: false, tableTurn: false })
    const people = [a, b].map(db => db.collection('people'))
    /** @param {number} n inserts per database, 8 at a time in each */
    const storm = async n => {
      await Promise.all(people.map(async (collection, i) => {
        for (let made = 0; made < n; made += 8) {
          await Promise.all(Array.from({ length: 8 }, (_, j) => collection.insert({ name: `p${i}-${made + j}` })))
        }
      }))
    }
    // Inserts from both until each has had a batch fail on the sequence (40001).
    let rounds = 0
    while (locks.some(lock => lock.stats.failures === 0) && rounds < 50) {
      await storm(16)
      rounds++
    }
    t.ok(locks.every(lock => lock.stats.failures > 0), `each process had a batch fail (${locks.map(lock => lock.stats.failures)} failures, ${rounds} rounds)`)
    const before = locks.map(lock => ({ failures: lock.stats.failures, contended: lock.stats.contended, transactions: lock.stats.transactions }))
    await storm(96)
    const failures = locks.map((lock, i) => lock.stats.failures - before[i].failures)
    const contended = locks.map((lock, i) => lock.stats.contended - before[i].contended)
    const transactions = locks.map((lock, i) => lock.stats.transactions - before[i].transactions)
    t.same(failures, [0, 0], 'then 2 × 96 inserts at once fail no batch')
    t.same(contended, transactions, `every transaction of theirs began holding the sequence key's lock (${transactions})`)
    const ids = (await people[0].query().all()).map((/** @type {any} */ record) => record.id)
    t.same(ids, Array.from({ length: ids.length }, (_, i) => i + 1), `ids 1..${ids.length} without gap`)
    t.is(ids.length, rounds * 32 + 192, 'one record per insert')
    t.same((await a.check()).problems, [], 'check() is clean')
    // The locks went behind each transaction's end: none is left held
    // (key locks are the one-bigint advisory locks, objsubid 1).
    const client = new pg.Client({ connectionString: server.connectionString })
    await client.connect()
    try {
      // (The last unlocks may still be on their way behind their COMMITs.)
      let held = -1
      for (let tries = 0; tries < 20 && held !== 0; tries++) {
        if (tries > 0) await sleep(50)
        held = (await client.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1")).rows[0].n
      }
      t.is(held, 0, 'no key lock is left held')
    } finally {
      await client.end()
    }
  })
})

/**
 * Time, as `lock` counts them, each wait for a contention lock (which
 * keeps its key in contention mode for contentionMs more) and each leave
 * of the mode; `early(ms)` lists the leaves that came less than `ms` after
 * the last wait before them. (A failure keeps it too, but not each one
 * counted does: left out, a leave may look later than it was, not earlier.)
 * @param {any} lock a postgres-serializable shared writer lock
 */
function timeStats (lock) {
  /** @type {number[]} */
  const kept = []
  /** @type {number[]} */
  const left = []
  lock.stats = new Proxy(lock.stats, {
    set (target, key, value) {
      if (key === 'contentionWaits') kept.push(Date.now())
      if (key === 'contentionLeft') left.push(Date.now())
      target[key] = value
      return true
    }
  })
  return {
    early: (/** @type {number} */ ms) => left.filter(at => {
      const last = Math.max(...kept.filter(k => k <= at))
      return at - last < ms
    })
  }
}

test('postgres serializable: contention mode lasts while its locks are waited for, and is left once a process has had the key to itself for contentionMs', async t => {
  await twoDatabases(server, serializable, async (a, b) => {
    const locks = [a, b].map(db => /** @type {any} */ (db).level.sharedWriterLock())
    const contentionMs = 800
    // (Inserts not taking their sequence's lock by their first read: it is contention mode that is tested.)
    for (const lock of locks) Object.assign(lock, { contentionMs, lockFirstSequences: false, tableTurn: false })
    const times = locks.map(lock => timeStats(lock))
    const people = [a, b].map(db => db.collection('people'))
    let inserted = 0
    /** Inserts from both, 8 at a time in each, until `ms` have passed. @param {number} ms */
    const storm = async ms => {
      const end = Date.now() + ms
      await Promise.all(people.map(async (collection, i) => {
        while (Date.now() < end) {
          await Promise.all(Array.from({ length: 8 }, () => collection.insert({ name: `p${i}-${inserted++}` })))
        }
      }))
    }
    // Until each has had a batch fail on the sequence (40001) and is in
    // contention mode (one held up contentionMs meanwhile has left it).
    let rounds = 0
    while (locks.some(lock => lock.stats.failures === 0 || lock.stats.contentionEntered <= lock.stats.contentionLeft) && rounds < 50) {
      await storm(1)
      rounds++
    }
    t.ok(locks.every(lock => lock.stats.failures > 0), `each process had a batch fail (${locks.map(lock => lock.stats.failures)} failures)`)
    t.same(locks.map(lock => lock.stats.contentionEntered - lock.stats.contentionLeft), [1, 1], `each is in contention mode on the sequence key (entered ${locks.map(lock => lock.stats.contentionEntered)} times)`)
    const before = locks.map(lock => ({ ...lock.stats }))
    // Three times contentionMs of inserts from both: before, each process
    // left the mode contentionMs after its last failure and failed again.
    await storm(3 * contentionMs)
    const during = locks.map((lock, i) => ({
      failures: lock.stats.failures - before[i].failures,
      left: lock.stats.contentionLeft - before[i].contentionLeft,
      waits: lock.stats.contentionWaits - before[i].contentionWaits,
      contended: lock.stats.contended - before[i].contended,
      transactions: lock.stats.transactions - before[i].transactions
    }))
    if (during.every(d => d.left === 0)) {
      t.same(during.map(d => d.failures), [0, 0], `no batch failed while both went on inserting for ${3 * contentionMs} ms (${during.map(d => d.transactions)} transactions)`)
      t.same(during.map(d => d.contended), during.map(d => d.transactions), 'every transaction took the lock first')
    } else {
      // A process held up for contentionMs (a loaded machine: CI at load
      // 30 did) had the key to itself and left, rightly; its next
      // transactions took no lock and could fail the other's.
      t.comment(`a process left contention mode during the storm (${during.map(d => d.left)}), held up ${contentionMs} ms: its failures and locks are not counted`)
    }
    t.ok(during.every(d => d.waits > 0), `each waited for the lock held by the other (${during.map(d => d.waits)} transactions waited)`)
    // b stops; a alone, after a quiet period, takes no lock any more.
    await sleep(contentionMs + 100)
    const quiet = { ...locks[0].stats }
    const inMode = quiet.contentionEntered > quiet.contentionLeft
    for (let i = 0; i < 3; i++) await people[0].insert({ name: `alone-${i}` })
    t.is(locks[0].stats.contentionLeft - quiet.contentionLeft, inMode ? 1 : 0, `a quiet period later, it left contention mode${inMode ? '' : ' (it had left it already)'}`)
    t.is(locks[0].stats.contended - quiet.contended, 0, 'and its transactions take no lock')
    // Each leave came contentionMs or more after the last wait for the
    // key, as the rule says (which a mode left after a fixed time, or not
    // kept by waits, breaks), however loaded the machine.
    t.same(times.map(time => time.early(contentionMs)), [[], []], 'each process left contention mode only once contentionMs had passed since it last waited for the key')
    const ids = (await people[0].query().all()).map((/** @type {any} */ record) => record.id)
    t.same(ids, Array.from({ length: ids.length }, (_, i) => i + 1), `ids 1..${ids.length} without gap`)
    t.is(ids.length, inserted + 3, 'one record per insert')
    t.same((await a.check()).problems, [], 'check() is clean')
  })
})

test('postgres serializable: processes writing disjoint keys, which fail each other\'s transactions all the same, take turns on the table after two failures in a row and fail no more', async t => {
  // PostgreSQL's predicate locks cover the index pages a transaction read:
  // appends to four sets of chats, no chat shared, fail each other's
  // transactions where their keys share a page (with the keys' contention
  // mode alone, about half of them, for as long as they go on).
  const table = server.table()
  const dbs = []
  try {
    for (let i = 0; i < 4; i++) dbs.push(await open(options(table)))
    const locks = dbs.map(db => /** @type {any} */ (db).level.sharedWriterLock())
    // The table's turn off until the control below is done (the four
    // ChatStore.open() may fail each other too); and once taken, held for
    // the rest of the test.
    for (const lock of locks) Object.assign(lock, { tableTurn: false, contentionMs: 600000 })
    /** Failed transactions so far (a statement's failure or the COMMIT's). @param {any} lock */
    const failed = lock => Object.values(lock.stats.failedOn).reduce((sum, n) => sum + Number(n), 0)
    const stores = await Promise.all(dbs.map(db => ChatStore.open(db, { passwordCost: { scryptN: 2, pbkdf2Iterations: 1000 } })))
    const alice = await stores[0].createUser({ username: 'alice', password: 'password1' })
    /** @type {number[][]} each database's own chats */
    const chats = dbs.map(() => [])
    for (let i = 0; i < 40; i++) chats[i % 4].push(await stores[0].createChat({ name: `chat ${i}`, adminId: alice }))
    let sent = 0
    // A round: 8 appends at once from each database, each to its own chats.
    const round = () => Promise.all(stores.map((store, i) => Promise.all(Array.from({ length: 8 }, () => store.addChatMessage({ chatId: chats[i][sent % 10], senderId: alice, text: `message ${sent++}` })))))
    // The control: without the table's turn they fail each other.
    const control = locks.map(failed)
    for (let rounds = 0; rounds < 40 && locks.every((lock, i) => failed(lock) === control[i]); rounds++) await round()
    t.ok(locks.some((lock, i) => failed(lock) > control[i]), `without the table's turn, transactions fail (${locks.map((lock, i) => failed(lock) - control[i])})`)
    for (const lock of locks) lock.tableTurn = true
    let rounds = 0
    while (locks.some(lock => lock.stats.tableContended === 0) && rounds < 200) {
      await round()
      rounds++
    }
    t.ok(locks.every(lock => lock.stats.tableContended > 0), `then each took the table's turn (${locks.map(lock => lock.stats.tableContended)} transactions; ${locks.map(failed)} failed in all, ${rounds} rounds)`)
    const before = locks.map(lock => ({ ...lock.stats, failed: failed(lock) }))
    for (let i = 0; i < 20; i++) await round()
    const failures = locks.map((lock, i) => failed(lock) - before[i].failed)
    const turns = locks.map((lock, i) => lock.stats.tableContended - before[i].tableContended)
    const transactions = locks.map((lock, i) => lock.stats.transactions - before[i].transactions)
    t.same(failures, [0, 0, 0, 0], `then 20 rounds of 4 × 8 appends fail no transaction (${transactions} transactions)`)
    t.same(turns, transactions, 'every transaction of theirs began holding the table\'s turn')
    const counts = await Promise.all(chats.flat().map(async chatId => (await stores[0].getChatMessages(chatId, { n: 1000 }) ?? []).map(message => message.id)))
    t.ok(counts.every(ids => ids.every((id, i) => id === i + 1)), 'every chat\'s message ids are 1..N without gap')
    t.is(counts.reduce((sum, ids) => sum + ids.length, 0), sent, 'one message per append')
    t.same((await dbs[0].check()).problems, [], 'check() is clean')
  } finally {
    for (const db of dbs) await db.close()
  }
})

test('postgres serializable: an opening whose wait for contention mode\'s lock is cancelled (statement_timeout) begins no transaction: its sections run again, none reads or writes outside one', async t => {
  const table = server.table()
  // Every statement of this database is cancelled after 300 ms, its wait for an advisory lock too.
  const db = await open({ ...options(table), pg: { statement_timeout: 300 } })
  const holder = new pg.Client({ connectionString: server.connectionString })
  await holder.connect()
  try {
    const accounts = db.collection('accounts')
    await accounts.insert({ balance: 0 })
    const lock = /** @type {any} */ (db).level.sharedWriterLock()
    // In the table's turn (two failed transactions in a row), whose lock another session holds for a second.
    lock.contentionMs = 600000
    lock.failedTransaction(1000001)
    lock.failedTransaction(1000002)
    await holder.query(`SELECT pg_advisory_lock('${lock.tableLock}'::bigint)`)
    const released = sleep(1000).then(() => holder.query(`SELECT pg_advisory_unlock('${lock.tableLock}'::bigint)`))
    const before = lock.stats.retries
    /** Read the balance, then add `n`, in one critical section. @param {number} n */
    const add = n => db.write(async (/** @type {any} */ w) => {
      const account = await accounts.in(w).get(1)
      await accounts.in(w).update(1, { balance: account.balance + n })
    }).then(() => 'written', (/** @type {any} */ err) => `rejected ${err?.code} ${err?.cause?.code ?? ''}`)
    const results = await Promise.all([add(1), add(10)])
    await released
    t.same(results, ['written', 'written'], 'both writes are made, once the lock is let go')
    t.ok(lock.stats.retries > before, `their sections ran again after each cancelled opening (${lock.stats.retries - before} reruns)`)
    t.is((await accounts.get(1)).balance, 11, 'each on what the other wrote: no update lost')
  } finally {
    await holder.end()
    await db.close()
  }
})

test('postgres serializable: a group decided in a transaction lost with its connection runs again in a new one, on what it reads there', async t => {
  await lostBetweenSections(t, server, 'serializable')
})

await import('./postgres-shared-test.js?locking=serializable')
if (process.env.LEVELKIT_TEST_SUITES === '1') await import('./postgres-shared-suites-test.js?locking=serializable')
