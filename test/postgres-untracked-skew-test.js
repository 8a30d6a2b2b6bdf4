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
import { writeUntracked } from '../lib/database.js'
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
const doctorsOf = db => db.collection('doctors', { indexes: { shift: { key: (/** @type {any} */ d) => d.shift } } })

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
