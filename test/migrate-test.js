// db.migrate(): migrations run in version order, once per database; a
// modify() step rewrites a collection in batches with its index entries and
// resumes after the last record done when the migration is run again (after
// an error here; after SIGKILL in test/migrate-crash-test.js); a migration
// that throws leaves the schema version where it was; bad migration lists
// are refused before anything is written. On memory and LevelDB.
import test from 'tape'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { open } from '../index.js'
import { ChatStore } from '../chat.js'

/** @param {Promise<unknown>} promise @returns {Promise<any>} the rejection, or null */
async function rejection (promise) {
  try {
    await promise
    return null
  } catch (err) {
    return err
  }
}

const backends = [
  { name: 'memory', open: async () => open({ backend: 'memory' }) },
  {
    name: 'leveldb',
    open: async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'levelkit-migrate-'))
      const db = await open({ backend: 'leveldb', location: path.join(dir, 'db') })
      const close = db.close.bind(db)
      db.close = async () => {
        await close()
        fs.rmSync(dir, { recursive: true, force: true })
      }
      return db
    }
  }
]

/** @param {any} db @param {number} n */
async function usersDb (db, n) {
  const users = db.collection('users', { indexes: { email: { unique: true, key: (/** @type {any} */ u) => u.email } } })
  await users.insertMany(Array.from({ length: n }, (_, i) => ({ email: `u${i}@x`, n: 0 })))
  return users
}

/** Everything the database stores, as text: what a refused call must leave as it was. @param {any} db */
async function everything (db) {
  const entries = await db.level.iterator({ keyEncoding: 'binary', valueEncoding: 'binary' }).all()
  return entries.map((/** @type {Buffer[]} */ [k, v]) => `${k.toString('hex')}=${v.toString('hex')}`)
}

for (const backend of backends) {
  test(`${backend.name}: migrations run in version order, once; the version is stored`, async t => {
    const db = await backend.open()
    const users = await usersDb(db, 50)
    /** @type {number[]} */
    const log = []
    const step = (/** @type {number} */ version) => ({
      version,
      async up (/** @type {any} */ m) {
        log.push(m.version)
        await m.collection(users).modify((/** @type {any} */ u) => ({ ...u, n: u.n * 10 + version }), { batchSize: 7 })
      }
    })
    t.is(await db.schemaVersion(), 0, 'version 0 before any migration')
    t.same(await db.migrate([step(1), step(2), step(5)]), { from: 0, to: 5, ran: [1, 2, 5] }, 'ran 1, 2, 5')
    t.same(log, [1, 2, 5], 'in version order')
    t.is(await db.schemaVersion(), 5, 'version 5 stored')
    t.same(await db.migrate([step(1), step(2), step(5)]), { from: 5, to: 5, ran: [] }, 'run again: nothing to do')
    t.same(await db.migrate([step(1), step(2), step(5), step(7)]), { from: 5, to: 7, ran: [7] }, 'a new migration: only it runs')
    t.same(log, [1, 2, 5, 7], 'each ran once')
    const all = await users.query().all()
    t.ok(all.length === 50 && all.every((/** @type {any} */ u) => u.n === 1257), 'every record went through each migration once')
    t.same((await db.check()).problems, [], 'check() is clean')
    const err = await rejection(db.migrate([step(1)]))
    t.is(err?.code, 'LEVELKIT_INVALID', 'a list that ends before the stored version is refused')
    t.is(await db.schemaVersion(), 7, 'the version stays')
    await db.close()
  })

  test(`${backend.name}: modify() keeps the indexes, deletes with m.remove, counts`, async t => {
    const db = await backend.open()
    const users = await usersDb(db, 100)
    /** @type {any} */
    let counts
    await db.migrate([{
      version: 1,
      async up (/** @type {any} */ m) {
        counts = await m.collection(users).modify((/** @type {any} */ u) => {
          if (u.id % 10 === 0) return m.remove
          if (u.id % 3 === 0) return undefined
          u.email = u.email.toUpperCase()
          return u
        }, { batchSize: 16 })
      }
    }])
    t.same(counts, { done: 100, changed: 60, removed: 10 }, 'records visited, changed, removed')
    t.is(await users.count(), 90, 'removed ones are gone')
    t.is((await users.getBy('email', 'U1@X'))?.id, 2, 'the index finds the new value')
    t.is(await users.getBy('email', 'u1@x'), undefined, 'and not the old one')
    t.is((await users.getBy('email', 'u2@x'))?.id, 3, 'a record kept as it was')
    t.is(await users.getBy('email', 'u9@x'), undefined, 'a removed record is gone from the index')
    t.same((await db.check()).problems, [], 'check() is clean')
    await db.close()
  })

  test(`${backend.name}: a migration that throws leaves the version; run again, it resumes without redoing a record`, async t => {
    const db = await backend.open()
    const users = await usersDb(db, 100)
    const runs = db.counter('runs')
    let failAt = 57
    const boom = new Error('boom')
    let calls = 0
    const migrations = [{
      version: 1,
      async up (/** @type {any} */ m) {
        await m.write(async (/** @type {any} */ w) => { await runs.in(w).add('write', 1) })
        await m.collection(users).modify((/** @type {any} */ u) => {
          calls++
          if (u.id === failAt) throw boom
          return { ...u, n: u.n + 1 }
        }, { batchSize: 10 })
      }
    }]
    const err = await rejection(db.migrate(migrations))
    t.is(err, boom, 'rejects with the error the migration threw')
    t.is(await db.schemaVersion(), 0, 'the version stays')
    const ns = (await users.query().all()).map((/** @type {any} */ u) => u.n)
    t.same(ns, Array.from({ length: 100 }, (_, i) => i < 50 ? 1 : 0), 'the batches before the failing one are written, the failing one is not')
    failAt = -1
    calls = 0
    t.same(await db.migrate(migrations), { from: 0, to: 1, ran: [1] }, 'run again, it completes')
    t.is(calls, 50, 'it resumed after the last batch written: 50 records left')
    t.ok((await users.query().all()).every((/** @type {any} */ u) => u.n === 1), 'every record rewritten exactly once')
    t.is(await runs.get('write'), 1, 'the m.write() step done before the error is not run again')
    t.same((await db.check()).problems, [], 'check() is clean')
    await db.close()
  })

  test(`${backend.name}: an m.write() step is written with its mark: up() throwing after it, run again, it is not run again`, async t => {
    const db = await backend.open()
    const runs = db.counter('runs')
    let fail = true
    const migrations = [{
      version: 1,
      async up (/** @type {any} */ m) {
        const first = await m.write(async (/** @type {any} */ w) => { await runs.in(w).add('a', 1); return 'a done' })
        if (fail) throw new Error('after a')
        t.is(first, undefined, 'resumed: the step done before resolves with undefined')
        await m.write(async (/** @type {any} */ w) => { await runs.in(w).add('b', 1) })
      }
    }]
    t.is((await rejection(db.migrate(migrations)))?.message, 'after a', 'rejects with the error')
    t.is(await runs.get('a'), 1, 'the step before the error is written')
    fail = false
    t.same((await db.migrate(migrations)).ran, [1], 'run again, it completes')
    t.same([await runs.get('a'), await runs.get('b')], [1, 1], 'each step ran once')
    await db.close()
  })

  test(`${backend.name}: a modify() that breaks a unique index, or returns what is not a record, rejects; the version stays`, async t => {
    const db = await backend.open()
    const users = await usersDb(db, 20)
    const unique = await rejection(db.migrate([{ version: 1, up: (/** @type {any} */ m) => m.collection(users).modify((/** @type {any} */ u) => ({ ...u, email: 'same' })) }]))
    t.is(unique?.code, 'LEVELKIT_UNIQUE', 'a shared unique value: LEVELKIT_UNIQUE')
    for (const bad of [null, 42, [1], Promise.resolve({})]) {
      const err = await rejection(db.migrate([{ version: 1, up: (/** @type {any} */ m) => m.collection(users).modify(() => bad) }]))
      t.is(err?.code, 'LEVELKIT_INVALID', `returning ${bad instanceof Promise ? 'a promise' : JSON.stringify(bad)}: LEVELKIT_INVALID`)
    }
    const idChange = await rejection(db.migrate([{ version: 1, up: (/** @type {any} */ m) => m.collection(users).modify((/** @type {any} */ u) => ({ ...u, id: u.id + 1000 })) }]))
    t.is(idChange?.code, 'LEVELKIT_INVALID', 'changing the id: LEVELKIT_INVALID')
    t.is(await db.schemaVersion(), 0, 'the version stays')
    t.ok((await users.query().all()).every((/** @type {any} */ u) => u.email !== 'same'), 'no record of a refused batch is written')
    t.same((await db.check()).problems, [], 'check() is clean')
    const forgot = await db.migrate([{ version: 1, up (/** @type {any} */ m) { m.collection(users).modify((/** @type {any} */ u) => ({ ...u, n: 1 }), { batchSize: 3 }) } }])
    t.same(forgot.ran, [1], 'a step up() did not await is waited for')
    t.ok((await users.query().all()).every((/** @type {any} */ u) => u.n === 1), 'before the version is stored')
    await db.close()
  })

  test(`${backend.name}: resumed, a migration must take the same steps`, async t => {
    const db = await backend.open()
    const users = await usersDb(db, 30)
    const other = await db.collection('other')
    await other.insert({ a: 1 })
    const first = await rejection(db.migrate([{
      version: 1,
      async up (/** @type {any} */ m) {
        await m.collection(users).modify((/** @type {any} */ u) => { if (u.id === 25) throw new Error('stop'); return u }, { batchSize: 5 })
      }
    }]))
    t.is(first?.message, 'stop', 'interrupted')
    const err = await rejection(db.migrate([{ version: 1, up: (/** @type {any} */ m) => m.collection(other).modify((/** @type {any} */ r) => r) }]))
    t.is(err?.code, 'LEVELKIT_INVALID', 'a different first step: LEVELKIT_INVALID')
    t.ok(/step 1/.test(err?.message), 'naming the step')
    await db.close()
  })

  test(`${backend.name}: bad migration lists are refused with LEVELKIT_INVALID, nothing written`, async t => {
    const db = await backend.open()
    const users = await usersDb(db, 3)
    const before = await everything(db)
    let ran = false
    const up = () => { ran = true }
    const bad = [
      undefined, null, 'v1', {}, [null], [1], [{ up }], [{ version: 0, up }], [{ version: 1.5, up }], [{ version: -1, up }],
      [{ version: '1', up }], [{ version: 1 }], [{ version: 1, up: 'x' }], [{ version: 2, up }, { version: 1, up }],
      [{ version: 1, up }, { version: 1, up }], [{ up, get version () { throw new Error('getter') } }]
    ]
    for (const list of bad) {
      const err = await rejection(db.migrate(/** @type {any} */ (list)))
      t.is(err?.code, 'LEVELKIT_INVALID', `refused: ${describe(list)}`)
    }
    t.is((await rejection(db.migrate([{ version: 1, up }], /** @type {any} */ ({ onProgres: () => {} }))))?.code, 'LEVELKIT_INVALID', 'an unknown option')
    t.is((await rejection(db.migrate([{ version: 1, up }], /** @type {any} */ ({ onProgress: 1 }))))?.code, 'LEVELKIT_INVALID', 'onProgress not a function')
    t.is((await rejection(db.migrate([{ version: 1, up: (/** @type {any} */ m) => m.collection(users).modify((/** @type {any} */ u) => u, { batchSize: 0 }) }])))?.code, 'LEVELKIT_INVALID', 'a bad batchSize')
    t.is((await rejection(db.migrate([{ version: 1, up: (/** @type {any} */ m) => m.collection({}).modify((/** @type {any} */ u) => u) }])))?.code, 'LEVELKIT_INVALID', 'm.collection() of something else')
    t.notOk(ran, 'no up() ran')
    t.same(await everything(db), before, 'nothing written')
    await db.close()
  })

  test(`${backend.name}: a second migrate() waits for the first, then finds nothing to run; writes go on meanwhile`, async t => {
    const db = await backend.open()
    const users = await usersDb(db, 300)
    /** @type {() => void} */
    let go = () => {}
    const gate = new Promise(resolve => { go = () => resolve(undefined) })
    let runs = 0
    const migrations = [{
      version: 1,
      async up (/** @type {any} */ m) {
        runs++
        await gate
        await m.collection(users).modify((/** @type {any} */ u) => ({ ...u, n: u.n + 1 }), { batchSize: 20 })
      }
    }]
    const first = db.migrate(migrations)
    const second = db.migrate(migrations)
    // Writes during the migration: updates that keep n, new records (after
    // the marker: the migration rewrites them too).
    const writes = []
    for (let i = 0; i < 50; i++) {
      writes.push(users.update(1 + (i * 7) % 300, (/** @type {any} */ u) => ({ ...u, touched: true })))
      writes.push(users.insert({ email: `new${i}@x`, n: 0 }))
    }
    go()
    await Promise.all(writes)
    t.same(await first, { from: 0, to: 1, ran: [1] }, 'the first runs it')
    t.same(await second, { from: 1, to: 1, ran: [] }, 'the second waited, and found it done')
    t.is(runs, 1, 'up() ran once')
    const all = await users.query().all()
    t.is(all.length, 350, 'every record is there')
    t.ok(all.every((/** @type {any} */ u) => u.n === 1), 'every record, the ones written during the migration too, rewritten once')
    t.same((await db.check()).problems, [], 'check() is clean')
    await db.close()
  })

  test(`${backend.name}: ChatStore refuses another program's users or chats with LEVELKIT_INVALID (not a TypeError later), and migrates its own once`, async t => {
    const OPTIONS = { passwordCost: { scryptN: 1024, pbkdf2Iterations: 1000 }, adopt: true }
    const cases = [
      ['users without a username and password hash', (/** @type {any} */ db) => db.collection('users').insert({ name: 'x', email: 'a@b' })],
      ['chats without members', (/** @type {any} */ db) => db.collection('chats').insert({ title: 'foreign' })]
    ]
    for (const [what, write] of /** @type {Array<[string, (db: any) => Promise<unknown>]>} */ (cases)) {
      const db = await backend.open()
      const other = await open({ db: db.level })
      await write(other)
      const before = await everything(db)
      const err = await rejection(ChatStore.open(db, OPTIONS))
      t.is(err?.code, 'LEVELKIT_INVALID', `${what}: LEVELKIT_INVALID`)
      t.match(String(err?.message), /not a (user|chat)/, 'saying what it is not')
      t.is(await db.schemaVersion(), 0, 'the version stays')
      t.same((await everything(db)).filter(entry => !before.includes(entry)).length <= 1, true, 'nothing written but the progress of the migration')
      await db.close()
    }
    const db = await backend.open()
    const store = await ChatStore.open(db, OPTIONS)
    t.is(await db.schemaVersion(), 1, "a new store's database is at ChatStore's schema version 1")
    const user = await store.createUser({ username: 'ann', password: 'pw-ann' })
    t.is((await store.getUserById(user))?.username, 'ann', 'and it works')
    await db.close()
  })
}

/** @param {unknown} value */
function describe (value) {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}
