// A transaction's reads running side by side (Promise.all) where reads are
// asynchronous (postgres, IndexedDB, syncReads: false): one of them finds
// its key changed since the attempt began and moves the attempt's snapshot
// forward (lib/transaction.js #extend()) while another is still on its way
// with a value read before that change. The slower read must not be taken
// as of the moved snapshot: its value would be older than a change the
// commit no longer checks for, and the commit would write over it (a lost
// update: on postgres, 4-7 increments of 36 lost per round beside
// transfers, test/postgres-shared-test.js).
//
// Deterministic: the database's reads are held (they read when called, and
// answer when let go), and writes outside the transaction are made while
// the transaction's reads are held.
import test from 'tape'
import { MemoryLevel } from 'memory-level'
import { open } from '../index.js'

/**
 * A memory database whose next `count` reads (point reads, or range reads
 * of an iterator) read when made and answer only when let go, in order.
 */
function heldReads () {
  const level = new MemoryLevel()
  /** @type {Array<() => void>} */
  const held = []
  let holding = 0
  const park = (/** @type {Promise<any>} */ read) => new Promise(resolve => held.push(() => resolve(read)))
  const hold = (/** @type {Promise<any>} */ read) => {
    if (holding === 0) return read
    holding--
    return park(read)
  }
  const get = level._get
  level._get = function (/** @type {any} */ key, /** @type {any} */ options) {
    return hold(get.call(this, key, options))
  }
  const iterator = level._iterator
  level._iterator = function (/** @type {any} */ options) {
    const it = iterator.call(this, options)
    if (holding > 0) {
      holding--
      // memory-level's iterator reads the tree it was made on: what is held is its first answer.
      let first = true
      for (const name of ['_all', '_nextv']) {
        const read = it[name]
        it[name] = function (/** @type {any[]} */ ...args) {
          const answer = read.apply(this, args)
          if (!first) return answer
          first = false
          return park(answer)
        }
      }
    }
    return it
  }
  return {
    level,
    /** @param {number} count */
    hold (count) { holding = count },
    /** Resolves once `count` reads are held. @param {number} count */
    async waitHeld (count) {
      while (held.length < count) await new Promise(resolve => setImmediate(resolve))
    },
    /** Let the `i`th held read answer. @param {number} i */
    release (i) { held[i]() }
  }
}

const settle = () => new Promise(resolve => setTimeout(resolve, 10))

test('a transaction\'s read answered after another read moved its snapshot forward is made again as of the new snapshot', async t => {
  const reads = heldReads()
  const db = await open({ db: reads.level, syncReads: false })
  try {
    const accounts = db.collection('accounts')
    await accounts.insert({ balance: 0 })
    await accounts.insert({ balance: 0 })
    /** @type {number[][]} */
    const seen = []
    const done = db.transaction(async (/** @type {any} */ tx, /** @type {number} */ attempt) => {
      if (attempt === 1) reads.hold(2)
      const [payer, payee] = await Promise.all([accounts.in(tx).get(1), accounts.in(tx).get(2)])
      seen.push([payer.balance, payee.balance])
      await accounts.in(tx).update(2, { balance: payee.balance + 100 })
    })
    // Both reads were made, of the balances before these writes.
    await reads.waitHeld(2)
    await accounts.update(1, { balance: 1 })
    await accounts.update(2, { balance: 1 })
    // Account 1's read finds it changed: the snapshot moves past both writes.
    reads.release(0)
    await settle()
    // Account 2's read, made before its write, answers now.
    reads.release(1)
    await done
    t.deepEqual(seen, [[1, 1]], 'the transaction saw both writes (account 2 read again), in one attempt')
    t.is((await accounts.get(2)).balance, 101, 'the write outside the transaction is kept: 1 + 100')
    t.deepEqual((await db.check()).problems, [], 'check() reports no problems')
  } finally {
    await db.close()
  }
})

test('a transaction\'s range read answered after another read moved its snapshot forward is made again as of the new snapshot', async t => {
  const reads = heldReads()
  const db = await open({ db: reads.level, syncReads: false })
  try {
    const accounts = db.collection('accounts')
    await accounts.insert({ balance: 0 })
    await accounts.insert({ balance: 0 })
    /** @type {number[][]} */
    const seen = []
    const done = db.transaction(async (/** @type {any} */ tx, /** @type {number} */ attempt) => {
      if (attempt === 1) reads.hold(2)
      const [first, all] = await Promise.all([accounts.in(tx).get(1), accounts.in(tx).query().all()])
      seen.push([first.balance, ...all.map((/** @type {any} */ a) => a.balance)])
      await accounts.in(tx).update(2, { balance: all[1].balance + 100 })
    })
    await reads.waitHeld(2)
    await accounts.update(1, { balance: 1 })
    await accounts.update(2, { balance: 1 })
    reads.release(0)
    await settle()
    reads.release(1)
    await done
    t.deepEqual(seen, [[1, 1, 1]], 'the transaction saw both writes (the range read again), in one attempt')
    t.is((await accounts.get(2)).balance, 101, 'the write outside the transaction is kept: 1 + 100')
    t.deepEqual((await db.check()).problems, [], 'check() reports no problems')
  } finally {
    await db.close()
  }
})
