// With locking: 'serializable', PostgreSQL catches a write skew only if both
// transactions' reads were made in them: a read sent to the pool instead
// leaves no trace for serializable snapshot isolation, and both commit. Here
// two databases open on one table (standing for two processes) each take a
// doctor off call if, by a query of the doctors, at least two are on call:
// serially only one can. The sections run untracked (lib/database.js
// writeUntracked, as ChatStore's do: no async context tells the backend
// which reads are theirs) and as a user's db.write() callback, reading with
// a query over the records and over a non-unique index (which, outside a
// serializable section, reads the records from a snapshot of its own).
import test from 'tape'
import { open } from '../index.js'
import { ChatStore } from '../chat.js'
import { writeUntracked } from '../lib/database.js'
import { WriteScope } from '../lib/write-scope.js'
import { sectionFrame } from '../lib/context-node.js'
import { postgresForTests, twoDatabases } from './util/postgres.js'

const server = await postgresForTests(test)

function gate () {
  /** @type {() => void} */
  let open = () => {}
  /** @type {Promise<void>} */
  const opened = new Promise(resolve => { open = () => resolve(undefined) })
  return { open, opened }
}

/** @param {any} db */
const doctorsOf = db => db.collection('doctors', {
  indexes: {
    shift: { key: (/** @type {any} */ d) => d.shift },
    duty: { key: (/** @type {any} */ d) => d.onCall ? 'on' : 'off' }
  }
})

/**
 * @param {string} name
 * @param {(db: any, fn: (w: any) => Promise<boolean>) => Promise<boolean>} write how a section is run
 * @param {(doctors: any) => Promise<any[]>} read the doctors, through a handle bound to the section's scope
 */
function skew (name, write, read) {
  test(`postgres untracked skew: ${name}: one of two concurrent sections fails (40001) and runs again, one doctor stays on call`, async t => {
    await twoDatabases(server, { locking: 'serializable', poolSize: 2 }, async (a, b) => {
      const doctors = [doctorsOf(a), doctorsOf(b)]
      await doctors[0].insert({ name: 'alice', shift: 'night', onCall: true })
      await doctors[0].insert({ name: 'bob', shift: 'night', onCall: true })
      const bothRead = [gate(), gate()]
      const runs = [0, 0]
      /** @param {number} i */
      const offCall = i => write(i === 0 ? a : b, async w => {
        runs[i]++
        const on = (await read(doctors[i].in(w))).filter(d => d.onCall)
        bothRead[i].open()
        await Promise.all(bothRead.map(g => g.opened))
        if (on.length < 2) return false
        await doctors[i].in(w).update(i + 1, { onCall: false })
        return true
      })
      const done = await Promise.all([offCall(0), offCall(1)])
      t.is(done.filter(Boolean).length, 1, 'exactly one doctor went off call')
      t.same([...runs].sort(), [1, 2], 'the other section ran twice: its first transaction failed')
      const onCall = (await doctors[0].query().all()).filter((/** @type {any} */ d) => d.onCall)
      t.is(onCall.length, 1, 'one doctor is still on call')
      t.same((await a.check()).problems, [], 'check() is clean')
    })
  })
}

/** @param {any} db @param {(w: any) => Promise<boolean>} fn */
const untracked = (db, fn) => db[writeUntracked](fn)
/** @param {any} db @param {(w: any) => Promise<boolean>} fn */
const tracked = (db, fn) => db.write(fn)

skew('untracked, a query of the records', untracked, doctors => doctors.query().all())
skew('untracked, a query of a non-unique index', untracked, doctors => doctors.query({ index: 'shift', eq: 'night' }).all())
skew('db.write(), a query of a non-unique index', tracked, doctors => doctors.query({ index: 'shift', eq: 'night' }).all())
skew('untracked, a count of a non-unique index', untracked, async doctors => Array.from({ length: await doctors.query({ index: 'duty', eq: 'on' }).count() }, () => ({ onCall: true })))

test('postgres untracked skew: ChatStore\'s sections run with no section frame (no AsyncLocalStorage enabled for them); a db.write() callback\'s still has one', async t => {
  const db = await open({ backend: 'postgres', connectionString: server.connectionString, table: server.table(), shared: true, locking: 'serializable', poolSize: 2 })
  t.teardown(() => db.close())
  const store = await ChatStore.open(db, { passwordCost: { scryptN: 1024, pbkdf2Iterations: 1000 } })
  const atomic = WriteScope.prototype.atomic
  /** @type {unknown[]} what sectionFrame() answered at each model operation made through a scope */
  const seen = []
  WriteScope.prototype.atomic = function (fn) {
    seen.push(sectionFrame())
    return atomic.call(this, fn)
  }
  t.teardown(() => { WriteScope.prototype.atomic = atomic })
  const a = await store.createUser({ username: 'ann', password: 'a-password' })
  const b = await store.createUser({ username: 'bob', password: 'b-password' })
  const chat = await store.createChat({ name: 'room', adminId: a, userIds: [b] })
  await store.addChatMessage({ chatId: chat, senderId: b, text: 'hi' })
  t.ok(seen.length >= 4, `model operations inside ChatStore's sections were watched (${seen.length})`)
  t.same(seen.filter(frame => frame !== undefined).length, 0, 'none of them ran in a section frame')
  seen.length = 0
  const notes = db.collection('notes')
  await db.write(async w => { await notes.in(w).insert({ text: 'x' }) })
  t.ok(seen.length > 0 && seen.every(frame => frame === db.level.sharedWriterLock()), 'a db.write() callback\'s model operations run in its section\'s frame')
})
