// With locking: 'serializable', ChatStore's critical sections run untracked
// (lib/database.js writeUntracked): no async context frame tells the backend
// that their reads are theirs, so each read must be started by the section's
// write scope (WriteScope#startRead()) to go to the serializable transaction,
// where PostgreSQL watches it. A read that is not goes to the pool, unwatched:
// serializability lost without an error. Here the chat suite runs with the
// verification mode on (PostgresSerializable#verifyReads): untracked sections
// get a frame all the same, and a read the frame would send to the
// transaction that the scope did not start so fails, and is kept.
import test from 'tape'
import { open } from '../index.js'
import { chatSuite } from './chat/suite.js'
import { postgresForTests } from './util/postgres.js'

const server = await postgresForTests(test)

/** @type {any[]} the serializable transactions of every database opened */
const locks = []

chatSuite(test, {
  backend: 'postgres serializable, untracked reads verified',
  open: async () => {
    const db = await open({ backend: 'postgres', pool: server.pool, table: server.table(), shared: true, locking: 'serializable' })
    const lock = /** @type {any} */ (db).level.sharedWriterLock()
    lock.verifyReads = true
    locks.push(lock)
    return db
  }
})

test('postgres untracked reads: no read of an untracked section left its transaction', t => {
  t.ok(locks.length > 10, `${locks.length} databases verified`)
  const escaped = locks.flatMap(lock => lock.untrackedReads)
  t.same(escaped, [], 'every read of every untracked section was started as the section\'s')
  t.end()
})
