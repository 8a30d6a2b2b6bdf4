// A sorted bulk load on a database other processes write (PostgreSQL,
// shared): a record another process puts between two batches of the load,
// into the span of the next, is found (the load reads the store for every
// batch: what it found free may not stay free; see Gap in lib/read-keys.js).
import test from 'tape'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { open } from '../index.js'
import { postgresForTests } from './util/postgres.js'

const server = await postgresForTests(test)

const padded = (/** @type {number} */ i) => String(i).padStart(5, '0')
/** @param {number} from @param {number} to */
const keyed = (from, to) => Array.from({ length: to - from }, (_, i) => ({ key: padded(from + i) }))

test('insertMany in increasing order, shared: a record another writer puts between two batches is not overwritten', async t => {
  const table = server.table()
  const a = await open({ backend: 'postgres', pool: server.pool, table, shared: true })
  try {
    const entries = a.collection('entries', { id: e => e.key })
    // The other process: opens the table, puts one record, closes.
    const other = `
      const { open } = await import(${JSON.stringify(new URL('../index.js', import.meta.url).href)})
      const db = await open({ backend: 'postgres', connectionString: process.argv[1], table: process.argv[2], shared: true })
      await db.collection('entries', { id: e => e.key }).put(${JSON.stringify(padded(150))}, { key: ${JSON.stringify(padded(150))}, theirs: true })
      await db.close()`
    async function * source () {
      yield * keyed(0, 100)
      await promisify(execFile)(process.execPath, ['--input-type=module', '-e', other, server.connectionString, table])
      yield * keyed(100, 300)
    }
    let err = null
    try {
      await entries.insertMany(source(), { batchSize: 100 })
    } catch (e) {
      err = e
    }
    t.is(err && err.code, 'LEVELKIT_EXISTS')
    t.is(err && err.id, padded(150))
    t.is(err && err.written, 100)
    t.same(await entries.get(padded(150)), { key: padded(150), theirs: true }, 'not overwritten')
    t.ok((await a.check()).ok)
  } finally {
    await a.close()
  }
})
