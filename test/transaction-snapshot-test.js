// db.transaction(fn, { readOnly: true }): where the backend has explicit
// snapshots (memory-level, classic-level, postgres), every read of the
// callback comes from one snapshot taken after the call, so a read-only
// audit never conflicts with the writes around it and cannot give up.
//
// - memory and LevelDB: audits with maxRetries: 0 under concurrent
//   transfers never give up and always see the invariant total; writes made
//   while the callback runs are not seen (get, query, getBy, relation,
//   children, counter) and it runs once; writes inside are refused with
//   LEVELKIT_READ_ONLY and nothing is written (no id taken); a write of
//   this process decided and not yet written when it is called is seen; an
//   index built after the snapshot was taken is not read from it.
// - without snapshots (browser-level): the option falls back to validated
//   reads, writes still refused.
// - postgres, shared, in each locking mode: audits of 3 databases on one
//   table (standing for 3 processes) under their transfers (maxRetries: 0)
//   never give up, always the total; a write acknowledged by another
//   database on the table before the call is seen.
//
// LEVELKIT_TEST_SNAPSHOT=off runs the audits without the option (the
// control: they give up).
import test from 'tape'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MemoryLevel } from 'memory-level'
import { open } from '../index.js'
import { NoSnapshotMemoryLevel } from './util/no-snapshots.js'
import { postgresForTests } from './util/postgres.js'
import { range } from './util/common.js'
import { ACCOUNTS, INITIAL, declareBank, openShared } from './fixtures/postgres-shared-worker.js'

const readOnly = process.env.LEVELKIT_TEST_SNAPSHOT !== 'off'
const root = mkdtempSync(join(tmpdir(), 'levelkit-tx-snapshot-'))
let n = 0
test.onFinish(() => rmSync(root, { recursive: true, force: true }))

const backends = [
  { name: 'memory', options: () => ({ backend: 'memory' }) },
  { name: 'LevelDB', options: () => ({ backend: 'leveldb', location: join(root, String(n++)) }) }
]

/** A bank of ACCOUNTS accounts of INITIAL each. @param {any} db */
async function bank (db) {
  const { accounts } = declareBank(db)
  await db.write(async (/** @type {any} */ w) => {
    for (let id = 1; id <= ACCOUNTS; id++) await accounts.in(w).insert({ balance: INITIAL })
  })
  return accounts
}

/**
 * Transfers in `lanes` lanes until `until(moved)` says stop; resolves with how many were made.
 * @param {any} db @param {any} accounts @param {(moved: number) => boolean} until @param {number} lanes
 */
async function transfers (db, accounts, until, lanes) {
  let moved = 0
  let seed = 1
  await Promise.all(range(1, lanes).map(async () => {
    while (!until(moved)) {
      seed = (seed * 1103515245 + 12345) >>> 0
      const from = 1 + seed % ACCOUNTS
      const to = 1 + (from + seed % (ACCOUNTS - 1)) % ACCOUNTS
      await db.transaction(async (/** @type {any} */ tx) => {
        const payer = await accounts.in(tx).get(from)
        const payee = await accounts.in(tx).get(to)
        await accounts.in(tx).update(from, { balance: payer.balance - 1 })
        await accounts.in(tx).update(to, { balance: payee.balance + 1 })
      }, { maxRetries: 1000 })
      moved++
    }
  }))
  return moved
}

/** An audit: every account's balance, one by one, then a query of them all. @param {any} tx @param {any} accounts */
async function audit (tx, accounts) {
  let total = 0
  for (let id = 1; id <= ACCOUNTS; id++) total += (await accounts.in(tx).get(id)).balance
  let queried = 0
  for (const record of await accounts.in(tx).query().all()) queried += record.balance
  return [total, queried]
}

for (const backend of backends) {
  test(`${backend.name}: read-only audits under concurrent transfers never give up (maxRetries: 0) and always see the total`, async t => {
    const db = await open(backend.options())
    try {
      const accounts = await bank(db)
      let audits = 0
      let gaveUp = 0
      const bad = []
      const AUDITS = 60
      const state = { auditing: true }
      const moving = transfers(db, accounts, () => !state.auditing, 4)
      let moved = 0
      try {
        await Promise.all(range(1, 2).map(async () => {
          while (audits + gaveUp < AUDITS) {
            try {
              const [total, queried] = await db.transaction(tx => audit(tx, accounts), { readOnly, maxRetries: 0 })
              audits++
              if (total !== ACCOUNTS * INITIAL || queried !== ACCOUNTS * INITIAL) bad.push([total, queried])
            } catch (err) {
              if (/** @type {any} */ (err).code !== 'LEVELKIT_CONFLICT') throw err
              gaveUp++
            }
          }
        }))
      } finally {
        state.auditing = false
        moved = await moving
      }
      t.comment(`${audits} audits, ${gaveUp} gave up, ${moved} transfers`)
      t.ok(moved > 0, 'transfers ran beside the audits')
      t.is(gaveUp, 0, 'no read-only audit gave up (each had one attempt)')
      t.same(bad, [], 'every audit saw the total, by get() and by query()')
    } finally {
      await db.close()
    }
  })

  test(`${backend.name}: a read-only transaction reads one snapshot: writes made while it runs are not seen, and it runs once`, async t => {
    const db = await open(backend.options())
    try {
      const { people, follows, notes, likes } = declarePeople(db)
      const ann = await people.insert({ name: 'ann', age: 30 })
      const bob = await people.insert({ name: 'bob', age: 40 })
      await follows.add(ann, bob)
      await notes.append(ann, 'first')
      await likes.add('ann')
      /** @param {any} tx */
      const look = async tx => ({
        ann: await people.in(tx).get(ann),
        byName: await people.in(tx).getBy('name', 'ann'),
        all: await people.in(tx).query().all(),
        follows: await follows.in(tx).to(ann).all(),
        notes: await notes.in(tx).range(ann).all(),
        likes: await likes.in(tx).get('ann')
      })
      const seen = await db.transaction(async (/** @type {any} */ tx, /** @type {number} */ attempt) => {
        const before = await look(tx)
        if (attempt === 1) {
          await people.update(ann, { name: 'anne', age: 31 })
          await people.insert({ name: 'cy', age: 50 })
          await follows.add(bob, ann)
          await follows.add(ann, 3)
          await notes.append(ann, 'second')
          await likes.add('ann')
        }
        return { attempt, before, after: await look(tx) }
      }, { readOnly })
      t.is(seen.attempt, 1, 'it ran once')
      t.same(seen.after, seen.before, 'what it read after the writes is what it read before them')
      t.is(seen.before.ann.age, 30, 'as of before the writes')
      t.is(seen.before.all.length, 2, 'the query: the records before the insert')
      t.is((await people.get(ann)).age, 31, 'the writes are there after it')
      t.same((await db.check()).problems, [], 'check() is clean')
    } finally {
      await db.close()
    }
  })

  test(`${backend.name}: a write inside a read-only transaction is refused with LEVELKIT_READ_ONLY, and nothing is written`, async t => {
    const db = await open(backend.options())
    try {
      const { people, follows, notes, likes } = declarePeople(db)
      const ann = await people.insert({ name: 'ann' })
      /** @type {Array<[string, (tx: any) => Promise<unknown>]>} */
      const writes = [
        ['insert', tx => people.in(tx).insert({ name: 'bob' })],
        ['update', tx => people.in(tx).update(ann, { name: 'anne' })],
        ['put', tx => people.in(tx).put(ann, { name: 'anne' })],
        ['del', tx => people.in(tx).del(ann)],
        ['relation add', tx => follows.in(tx).add(ann, ann)],
        ['children append', tx => notes.in(tx).append(ann, 'x')],
        ['counter add', tx => likes.in(tx).add('ann')]
      ]
      for (const [what, write] of writes) {
        const err = await db.transaction(write, { readOnly: true }).then(() => null, e => e)
        t.is(err?.code, 'LEVELKIT_READ_ONLY', `${what}: LEVELKIT_READ_ONLY`)
      }
      const caught = await db.transaction(async (/** @type {any} */ tx) => {
        const err = await people.in(tx).insert({ name: 'cy' }).then(() => null, (/** @type {any} */ e) => e.code)
        return [err, (await people.in(tx).get(ann)).name]
      }, { readOnly: true })
      t.same(caught, ['LEVELKIT_READ_ONLY', 'ann'], 'a refused write caught by the callback: the transaction resolves, it reads on')
      t.same(await people.query().all(), [{ id: ann, name: 'ann' }], 'nothing was written')
      t.same(await follows.to(ann).all(), [], 'no edge')
      t.same(await notes.range(ann).all(), [], 'no child')
      t.is(await likes.get('ann'), 0, 'the counter is unchanged')
      t.is(await people.insert({ name: 'dee' }), 2, 'the next insert takes id 2: the refused inserts took none')
      const refused = await db.transaction(async () => {}, { readOnly: /** @type {any} */ ('yes') }).then(() => null, e => e)
      t.is(refused?.code, 'LEVELKIT_INVALID', 'readOnly must be a boolean')
      t.same((await db.check()).problems, [], 'check() is clean')
    } finally {
      await db.close()
    }
  })

  test(`${backend.name}: a read-only transaction sees a write of this process decided and not yet written when it is called`, async t => {
    const db = await open(backend.options())
    try {
      const accounts = await bank(db)
      let decided = 0
      for (let i = 1; i <= 20; i++) {
        const writing = accounts.update(1, { balance: i })
        // Until the update is decided (in the write path's ops, not yet written).
        for (let k = 0; k < 1000 && !db.writer.pending; k++) await Promise.resolve()
        if (db.writer.pending) decided++
        const seen = await db.transaction(async (/** @type {any} */ tx) => (await accounts.in(tx).get(1)).balance, { readOnly })
        await writing
        t.is(seen, i, `write ${i}: seen`)
      }
      t.ok(decided > 0, `${decided} of 20 calls were made while the write was decided and not yet written`)
    } finally {
      await db.close()
    }
  })
}

test('memory: an index built after the snapshot was taken is not read from it: the attempt runs again on a new one', async t => {
  const level = new MemoryLevel()
  const first = await open({ db: level })
  const plain = first.collection('people')
  await first.write(async (/** @type {any} */ w) => {
    for (let i = 0; i < 3000; i++) await plain.in(w).insert({ name: `p${i}` })
  })
  await first.close()
  const db = await open({ db: level })
  try {
    const people = db.collection('people', { indexes: { name: { key: (/** @type {any} */ r) => r.name, unique: true } } })
    t.notOk((await db.schemaStatus()).people.name.state === 'ready', 'the index is not ready when the transaction is called')
    const found = await db.transaction(async (/** @type {any} */ tx, /** @type {number} */ attempt) => {
      return { attempt, record: await people.in(tx).getBy('name', 'p2999'), count: (await people.in(tx).query({ index: 'name' }).all()).length }
    }, { readOnly: true })
    t.same(found.record, { id: 3000, name: 'p2999' }, 'getBy() finds the record')
    t.is(found.count, 3000, 'the index query lists every record')
    t.ok(found.attempt >= 2, `attempt ${found.attempt}: the first one's snapshot predated the index`)
  } finally {
    await db.close()
  }
})

test('without snapshots (browser-level): readOnly falls back to validated reads, and still refuses writes', async t => {
  const db = await open({ db: new NoSnapshotMemoryLevel() })
  try {
    const accounts = await bank(db)
    const [total] = await db.transaction(tx => audit(tx, accounts), { readOnly: true })
    t.is(total, ACCOUNTS * INITIAL, 'an audit reads the total')
    const seen = await db.transaction(async (/** @type {any} */ tx, /** @type {number} */ attempt) => {
      const before = (await accounts.in(tx).get(1)).balance
      if (attempt === 1) await accounts.update(1, { balance: 1 })
      return { attempt, before, after: (await accounts.in(tx).get(1)).balance }
    }, { readOnly: true })
    t.same(seen, { attempt: 2, before: 1, after: 1 }, 'a key changed under it: it conflicts and runs again (validated, not a snapshot)')
    const err = await db.transaction((/** @type {any} */ tx) => accounts.in(tx).update(2, { balance: 0 }), { readOnly: true }).then(() => null, e => e)
    t.is(err?.code, 'LEVELKIT_READ_ONLY', 'a write is refused')
    t.is((await accounts.get(2)).balance, INITIAL, 'and not written')
  } finally {
    await db.close()
  }
})

const server = await postgresForTests(test)

for (const locking of /** @type {const} */ (['table', 'keys', 'serializable'])) {
  test(`postgres shared (${locking}): read-only audits of 3 databases on one table under their transfers (maxRetries: 0) never give up and always see the total`, async t => {
    const table = server.table()
    // Each database has its own write path, lock connections and caches:
    // they stand for three processes (test/postgres-shared-test.js runs the
    // same bank in child processes).
    const dbs = await Promise.all(range(1, 3).map(() => openShared(server.connectionString, table, locking)))
    try {
      const banks = [await bank(dbs[0]), ...dbs.slice(1).map(db => declareBank(db).accounts)]
      const results = await Promise.all(dbs.map(async (db, d) => {
        const accounts = banks[d]
        const result = { audits: 0, gaveUp: 0, bad: /** @type {number[][]} */ ([]), moved: 0 }
        const state = { moving: true }
        const transferring = transfers(db, accounts, moved => moved >= 12, 3).finally(() => { state.moving = false })
        await Promise.all(range(1, 2).map(async () => {
          while (state.moving) {
            try {
              const [total, queried] = await db.transaction(tx => audit(tx, accounts), { readOnly, maxRetries: 0 })
              result.audits++
              if (total !== ACCOUNTS * INITIAL || queried !== ACCOUNTS * INITIAL) result.bad.push([total, queried])
            } catch (err) {
              if (/** @type {any} */ (err).code !== 'LEVELKIT_CONFLICT') throw err
              result.gaveUp++
            }
          }
        }))
        result.moved = await transferring
        return result
      }))
      t.comment(JSON.stringify(results.map(({ audits, gaveUp, moved }) => ({ audits, gaveUp, moved }))))
      t.ok(results.every(r => r.audits + r.gaveUp > 0), 'every database audited while it transferred')
      t.is(results.reduce((sum, r) => sum + r.gaveUp, 0), 0, 'no audit gave up (each had one attempt)')
      t.deepEqual(results.flatMap(r => r.bad), [], 'every audit saw the total, by get() and by query()')
      t.same((await dbs[0].check()).problems, [], 'check() is clean')
    } finally {
      await Promise.all(dbs.map(db => db.close()))
    }
  })

  test(`postgres shared (${locking}): a read-only transaction sees what another database on the table acknowledged before the call`, async t => {
    const table = server.table()
    const a = await openShared(server.connectionString, table, locking)
    const b = await openShared(server.connectionString, table, locking)
    try {
      const accountsA = await bank(a)
      const accountsB = declareBank(b).accounts
      // b's caches know account 1 before a changes it.
      t.is((await accountsB.get(1)).balance, INITIAL, 'b read account 1')
      for (let i = 1; i <= 10; i++) {
        await accountsA.update(1, { balance: i })
        await accountsA.insert({ balance: 0 })
        const seen = await b.transaction(async (/** @type {any} */ tx) => [(await accountsB.in(tx).get(1)).balance, (await accountsB.in(tx).query().all()).length], { readOnly: true })
        t.same(seen, [i, ACCOUNTS + i], `write ${i}: seen by get() and query()`)
      }
    } finally {
      await a.close()
      await b.close()
    }
  })
}

/**
 * People with a unique name, who follow each other, keep notes and get likes.
 * @param {any} db
 */
function declarePeople (db) {
  const people = db.collection('people', { indexes: { name: { key: (/** @type {any} */ r) => r.name, unique: true } } })
  return { people, follows: db.relation('follows', { from: people, to: people }), notes: db.children('notes', { parent: people }), likes: db.counter('likes') }
}
