/* global LockManager */
// Sequences on IndexedDB (Collection#settleSequence(), Writer#lazySequences),
// in a browser page: an insert writes its record and not the sequence, and
// still no id is handed out twice, nor skipped: after the database is
// opened again, by a second database on the same IndexedDB (as a second
// tab), after the record with the highest id is deleted, in transactions.
// test/browser-idb-sequence-test.js bundles this file, opens it in
// Chromium and calls window.levelkitTests.run(). Also: a refused unique
// claim keeps the cross-tab lock and what the caches hold of other keys.

import { test, run } from './harness.js'
import { open } from '../../browser.js'
import { countRequests } from './count-requests.js'

const run_ = Math.random().toString(36).slice(2)
let opened = 0
const fresh = () => `levelkit-idb-sequence-${run_}-${++opened}`

/** @type {WeakMap<any, Map<string, any>>} each database's collections, declared once */
const declared = new WeakMap()
/** @param {any} db @param {string} name @param {any} [options] */
const collectionOf = (db, name, options) => {
  const models = declared.get(db) ?? new Map()
  declared.set(db, models)
  if (!models.has(name)) models.set(name, db.collection(name, options))
  return models.get(name)
}
/** @param {any} db */
const usersOf = db => collectionOf(db, 'users', { indexes: { name: { unique: true, key: (/** @type {any} */ u) => u.name } } })
/** @param {any} db */
const notesOf = db => collectionOf(db, 'notes')

/** @param {any} db @returns {Promise<string[]>} */
const problems = async db => (await db.check()).problems.map((/** @type {any} */ p) => `${p.type}: ${p.message}`)

/** @param {any} collection @returns {Promise<number[]>} */
const idsOf = async collection => (await collection.query().all()).map((/** @type {any} */ r) => r.id)

test('idb-sequence: an insert writes its record, not the sequence: one put', async (/** @type {any} */ t) => {
  const location = fresh()
  const db = await open({ location })
  const notes = notesOf(db)
  await notes.insert({ text: 'warm' })
  const { made, answer } = await countRequests(() => notes.insert({ text: 'second' }))
  t.is(made.put, 1, `one put: the record (${JSON.stringify(made)})`)
  t.is(answer, 2, 'the next id')
  const many = await countRequests(() => notes.insertMany([{ text: 'a' }, { text: 'b' }, { text: 'c' }]))
  t.is(many.made.put, 3, `insertMany(): a put per record, none for the sequence (${JSON.stringify(many.made)})`)
  const below = await countRequests(() => notes.del(1))
  t.ok(below.made.put === 0 && below.made.delete === 1, `a delete below the highest record does not write the sequence (${JSON.stringify(below.made)})`)
  await db.close()
  const again = await open({ location })
  t.is(await notesOf(again).insert({ text: 'after reopening' }), 6, 'opened again: the next id after the highest record')
  t.same(await problems(again), [], 'check() finds nothing: a stored sequence behind the records is how IndexedDB keeps it')
  await again.close()
})

test('idb-sequence: two databases on one IndexedDB (two tabs) inserting in turn: ids 1..n, none twice', async (/** @type {any} */ t) => {
  const location = fresh()
  const one = await open({ location })
  const two = await open({ location })
  const handles = [notesOf(one), notesOf(two)]
  const ids = []
  // In turn, each insert after the other database's: each finds its cached sequence dropped (the other told it).
  for (let i = 0; i < 12; i++) ids.push(await handles[i % 2].insert({ text: `n${i}`, by: i % 2 }))
  t.same(ids, Array.from({ length: 12 }, (_, i) => i + 1), `ids 1..12 in order (${ids})`)
  // At once, both.
  const both = await Promise.all(Array.from({ length: 24 }, (_, i) => handles[i % 2].insert({ text: `m${i}`, by: i % 2 })))
  t.same([...both].sort((a, b) => a - b), Array.from({ length: 24 }, (_, i) => i + 13), 'at once: 13..36, none twice, none skipped')
  t.same(await idsOf(handles[0]), Array.from({ length: 36 }, (_, i) => i + 1), 'every record is there: none written over')
  t.same(await problems(one), [], 'check() is clean')
  await one.close()
  await two.close()
})

test('idb-sequence: the record with the highest id deleted: its id is not handed out again', async (/** @type {any} */ t) => {
  const location = fresh()
  let db = await open({ location })
  let notes = notesOf(db)
  for (let i = 0; i < 3; i++) await notes.insert({ text: `n${i}` })
  const deleted = await countRequests(() => notes.del(3))
  t.ok(deleted.made.put === 1 && deleted.made.delete === 1, `the delete writes the sequence with it (${JSON.stringify(deleted.made)})`)
  await db.close()
  db = await open({ location })
  notes = notesOf(db)
  t.is(await notes.insert({ text: 'after' }), 4, 'opened again: 4, not 3')
  // Through another database (a second tab), without reopening.
  const other = await open({ location })
  await notesOf(other).del(4)
  t.is(await notes.insert({ text: 'after the other deleted 4' }), 5, 'the other deleted 4: 5 next')
  // In one db.write(): an insert and its delete.
  const inserted = await db.write(async (/** @type {any} */ w) => {
    const id = await notes.in(w).insert({ text: 'gone' })
    await notes.in(w).del(id)
    return id
  })
  t.is(inserted, 6, 'db.write(): inserted 6 and deleted it')
  // A delete below the highest, then the highest, in a transaction.
  await db.transaction(async (/** @type {any} */ tx) => {
    await notes.in(tx).del(2)
    await notes.in(tx).del(5)
  })
  await db.close()
  await other.close()
  db = await open({ location })
  notes = notesOf(db)
  t.is(await notes.insert({ text: 'last' }), 7, 'opened again: 7 (3..6 deleted, none reused)')
  t.same(await idsOf(notes), [1, 7], 'records 1 and 7')
  t.same(await problems(db), [], 'check() is clean')
  await db.close()
})

test('idb-sequence: transactions take the next id after what another database inserted', async (/** @type {any} */ t) => {
  const location = fresh()
  const one = await open({ location })
  const two = await open({ location })
  const users = usersOf(one)
  await users.insert({ name: 'a' })
  for (let i = 0; i < 20; i++) await usersOf(two).insert({ name: `b${i}` })
  const { made, answer } = await countRequests(() => one.transaction(async (/** @type {any} */ tx) => users.in(tx).insert({ name: 'c' })))
  t.is(answer, 22, 'the transaction took 22')
  t.ok(made.put <= 3, `and wrote the record and its entry, not the sequence (${JSON.stringify(made)})`)
  // Not by trying ids 2, 3, ... one read each (the stored sequence lags).
  t.ok(made.get < 10, `in a few reads (${JSON.stringify(made)})`)
  t.is(await usersOf(two).insert({ name: 'd' }), 23, 'the other database then takes 23')
  t.same(await idsOf(users), Array.from({ length: 23 }, (_, i) => i + 1), 'ids 1..23')
  t.same(await problems(one), [], 'check() is clean')
  await one.close()
  await two.close()
})

test('idb-sequence: put() of an id past the sequence, then inserts', async (/** @type {any} */ t) => {
  const location = fresh()
  let db = await open({ location })
  await notesOf(db).insert({ text: 'one' })
  await notesOf(db).put(50, { text: 'fifty' })
  await db.close()
  db = await open({ location })
  t.is(await notesOf(db).insert({ text: 'next' }), 51, 'after put(50): 51')
  await notesOf(db).del(51)
  await notesOf(db).del(50)
  await db.close()
  db = await open({ location })
  t.is(await notesOf(db).insert({ text: 'next' }), 52, '50 and 51 deleted: 52')
  t.same(await problems(db), [], 'check() is clean')
  await db.close()
})

test('idb-sequence: a refused unique claim keeps the cross-tab lock and the cached values of keys its batch did not write', async (/** @type {any} */ t) => {
  const location = fresh()
  const db = await open({ location })
  const other = await open({ location })
  const users = usersOf(db)
  const a = await users.insert({ name: 'a' })
  // Another database (tab) writes the name: this one hears of it and drops what it cached of that key only.
  await usersOf(other).insert({ name: 'taken' })
  // This one takes the lock back with a write elsewhere. Whether it heard
  // all the other wrote before it got the lock is a race (if not, it forgets
  // every cached value), so its record is read again under this holding.
  await notesOf(db).insert({ text: 'back' })
  t.is((await users.get(a))?.name, 'a', 'its record, read under the lease')
  const refused = await countRequests(() => users.insert({ name: 'taken' }).then(() => 'written', (/** @type {any} */ err) => err.code))
  t.is(refused.answer, 'LEVELKIT_UNIQUE', 'the taken name is refused')
  t.ok(refused.made.add >= 1, `by a claim (${JSON.stringify(refused.made)})`)
  const deleted = await countRequests(() => users.del(a))
  t.is(deleted.made.locks, 0, `the lock is kept after the refusal (${JSON.stringify(deleted.made)})`)
  t.is(deleted.made.get, 0, `the record and its entry are still known: no read (${JSON.stringify(deleted.made)})`)
  t.is(await users.insert({ name: 'b' }), 3, 'the next insert takes the next id: the refused one took none')
  t.is(await usersOf(other).insert({ name: 'c' }), 4, 'and the other database the one after')
  t.same(await idsOf(users), [2, 3, 4], 'records 2..4')
  t.same(await problems(db), [], 'check() is clean')
  await db.close()
  await other.close()
})

test('idb-sequence: a \'want\' heard while no request for the lock is pending keeps the lease', async (/** @type {any} */ t) => {
  const location = fresh()
  const db = await open({ location })
  const notes = notesOf(db)
  await notes.insert({ text: 'leased' })
  // What a tab that waited for the lock and got it meanwhile may still
  // send, late: 'want' on the lock's channel, with no request queued.
  const name = `levelkit:${location}`
  t.ok((await navigator.locks.query()).held?.some(lock => lock.name === name), 'this database holds the lock, leased')
  const late = new BroadcastChannel(name)
  const heard = new BroadcastChannel(name)
  const arrived = new Promise(resolve => { heard.onmessage = resolve })
  late.postMessage({ want: true })
  await arrived
  // The holder looks for a pending request (one round trip to the lock
  // manager) before it lets go: give it two.
  await navigator.locks.query()
  await navigator.locks.query()
  const next = await countRequests(() => notes.insert({ text: 'next' }))
  t.is(next.made.locks, 0, `the next write takes no lock: the lease was kept (${JSON.stringify(next.made)})`)
  // A real waiter still gets it.
  const other = await open({ location })
  t.is(await notesOf(other).insert({ text: 'other' }), 3, 'another database waiting for the lock gets it')
  // Taken back at once: the 'want' that made this one let go was answered then.
  const back = await countRequests(() => notes.insert({ text: 'back' }))
  t.is(back.made.locks, 1, 'taken back from it')
  const kept = await countRequests(() => notes.insert({ text: 'kept' }))
  t.is(kept.made.locks, 0, `then kept (${JSON.stringify(kept.made)})`)
  t.same(await idsOf(notes), [1, 2, 3, 4, 5], 'records 1..5')
  late.close()
  heard.close()
  await db.close()
  await other.close()
})

test('idb-sequence: a database that takes the lock before the last holder\'s messages arrive waits for them and keeps its cached values', async (/** @type {any} */ t) => {
  // A BroadcastChannel message may arrive after the Web Lock is granted.
  // Held here: every message to the first database (but 'want') from
  // the other's first write until 10 ms after the first database gets the
  // lock back. The same steps run once more with nothing held: the counts
  // must agree.
  /** @type {Record<string, any>} */
  const counts = {}
  for (const hold of [false, true]) {
    const location = fresh()
    const Original = BroadcastChannel
    /** @type {BroadcastChannel[]} */
    const created = []
    /** @type {Array<() => void>} */
    const held = []
    let holding = false
    const deliver = () => {
      holding = false
      for (const note of held.splice(0)) note()
    }
    class Holding extends Original {
      /** @param {string} name */
      constructor (name) {
        super(name)
        created.push(this)
      }

      /** @param {any} fn */
      set onmessage (fn) {
        super.onmessage = fn === null
          ? null
          : (/** @type {MessageEvent} */ event) => {
              if (holding && event.data?.want !== true) held.push(() => fn(event))
              else fn(event)
            }
      }

      get onmessage () {
        return super.onmessage
      }
    }
    // @ts-ignore
    globalThis.BroadcastChannel = Holding
    /** @type {any} */
    let a
    try {
      a = await open({ location })
    } finally {
      globalThis.BroadcastChannel = Original
    }
    t.is(created.length, 1, 'the first database listens on one channel')
    const users = usersOf(a)
    const id = await users.insert({ name: 'x' })
    t.same(await users.get(id), { id, name: 'x' }, 'read while it holds the lock')
    const b = await open({ location })
    holding = hold
    t.is(await notesOf(b).insert({ text: 'from b' }), 1, 'the other database takes the lock and writes')
    const request = LockManager.prototype.request
    LockManager.prototype.request = function (/** @type {any[]} */ ...args) {
      const callback = args[args.length - 1]
      args[args.length - 1] = (/** @type {any} */ lock) => {
        if (holding) setTimeout(deliver, 10)
        return callback(lock)
      }
      return /** @type {any} */ (request).apply(this, args)
    }
    let update
    try {
      update = await countRequests(() => users.update(id, { name: 'y' }))
    } finally {
      LockManager.prototype.request = request
      deliver()
    }
    counts[hold ? 'held' : 'plain'] = update.made
    t.is(update.made.locks, 1, `${hold ? 'messages held' : 'nothing held'}: the update took the lock back`)
    t.is(await notesOf(a).insert({ text: 'from a' }), 2, `${hold ? 'messages held' : 'nothing held'}: what the other database wrote was heard (the next note is 2)`)
    t.same(await problems(a), [], `${hold ? 'messages held' : 'nothing held'}: check() is clean`)
    await a.close()
    await b.close()
  }
  t.same(counts.held, counts.plain, `the update's requests with messages held until the lock was taken are those with none held (${JSON.stringify(counts)})`)
})

// @ts-ignore
window.levelkitTests = { run }
