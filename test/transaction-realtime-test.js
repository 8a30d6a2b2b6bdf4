// A read-only db.transaction() that read a write decided and not yet written
// (the write path's overlay) answers once that write is: a read called after
// its answer sees the write (real-time order); and if the write fails, the
// transaction runs again rather than answer what was never stored. The
// batch is held by the test, on memory-level; test/postgres-realtime-test.js
// does the same across processes on a shared postgres table.
import test from 'tape'
import { open } from '../index.js'

/**
 * A database with record 1 ({ n: 0 }) whose next batch waits for
 * `letGo(fail)`, and fails if `fail`.
 * @param {(db: any, items: any, letGo: (fail?: boolean) => void) => Promise<void>} fn
 */
async function withHeldBatch (fn) {
  const db = await open({ backend: 'memory' })
  try {
    const items = db.collection('items')
    await items.insert({ n: 0 })
    const level = /** @type {any} */ (db.level)
    const own = Object.getOwnPropertyDescriptor(level, '_batch')
    const batch = level._batch
    /** @type {(fail: boolean) => void} */
    let letGo = () => {}
    /** @type {Promise<boolean>} */
    const held = new Promise(resolve => { letGo = resolve })
    level._batch = async (/** @type {any[]} */ ...args) => {
      if (await held) throw new Error('the held batch failed')
      return batch.apply(level, args)
    }
    try {
      await fn(db, items, fail => letGo(fail === true))
    } finally {
      if (own) Object.defineProperty(level, '_batch', own)
      else delete level._batch
      letGo(false)
    }
  } finally {
    await db.close()
  }
}

test('a read-only transaction that read a write not yet written answers once it is', async t => {
  await withHeldBatch(async (db, items, letGo) => {
    let written = false
    const update = items.update(1, { n: 1 }).then(() => { written = true })
    await new Promise(resolve => setTimeout(resolve, 20))
    t.is(written, false, 'the update is decided, its batch held')
    setTimeout(letGo, 100)
    const seen = await db.transaction(async (/** @type {any} */ tx) => (await items.in(tx).get(1)).n)
    const after = await items.get(1)
    t.is(seen, 1, 'the transaction read the update')
    t.is(written, true, 'it answered once the update was written')
    t.is(after.n, 1, 'a read called after it answered sees the update')
    await update
  })
})

test('a read-only transaction that read a write that then fails runs again', async t => {
  await withHeldBatch(async (db, items, letGo) => {
    const update = items.update(1, { n: 1 }).then(() => 'written', err => err.message)
    await new Promise(resolve => setTimeout(resolve, 20))
    setTimeout(() => letGo(true), 100)
    /** @type {number[]} */
    const attempts = []
    const seen = await db.transaction(async (/** @type {any} */ tx, /** @type {number} */ attempt) => {
      attempts.push(attempt)
      return (await items.in(tx).get(1)).n
    })
    t.is(await update, 'the held batch failed', 'the update failed')
    t.is(seen, 0, 'the transaction answers what is stored, not the failed update')
    t.same(attempts, [1, 2], 'it ran again after the update failed')
  })
})
