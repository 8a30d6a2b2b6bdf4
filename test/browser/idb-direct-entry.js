/* global IDBDatabase, IDBObjectStore */
// The IndexedDB layer under the write path (lib/idb-direct.js), in a browser
// page: test/browser-idb-direct-test.js bundles this file, opens it in
// Chromium and calls window.levelkitTests.run().

import { test, run } from './harness.js'
import { open } from '../../browser.js'
import { ChatStore } from '../../chat.js'
import { BrowserLevel } from 'browser-level'
import { Namespace } from '../../lib/namespace.js'
import { idbDirectFor } from '../../lib/idb-direct.js'
import { encode } from '../../lib/tuple.js'

const run_ = Math.random().toString(36).slice(2)
let opened = 0
const fresh = () => `levelkit-idb-direct-${run_}-${++opened}`

/**
 * Count the IndexedDB transactions (by mode) that `fn` opens.
 * @param {() => Promise<unknown>} fn
 */
async function countTransactions (fn) {
  const counts = { readonly: 0, readwrite: 0 }
  const original = IDBDatabase.prototype.transaction
  IDBDatabase.prototype.transaction = function (/** @type {any} */ stores, /** @type {any} */ mode, /** @type {any} */ options) {
    counts[mode === 'readwrite' ? 'readwrite' : 'readonly']++
    return original.call(this, stores, mode, options)
  }
  try {
    await fn()
  } finally {
    IDBDatabase.prototype.transaction = original
  }
  return counts
}

/**
 * A ChatStore with 20 users, and the IndexedDB transactions one createChat
 * of them all and one addChatMessage open.
 * @param {any} db
 */
async function chatTransactions (db) {
  const store = await ChatStore.open(db, { passwordCost: { scryptN: 1024, pbkdf2Iterations: 1 } })
  const ids = []
  for (let i = 0; i < 20; i++) ids.push(await store.createUser({ username: `user${i}`, password: 'secret-password' }))
  // A first chat and message: the sequences are read once, then cached.
  const first = await store.createChat({ name: 'warm', adminId: ids[0], userIds: ids.slice(1) })
  await store.addChatMessage({ chatId: first, senderId: ids[0], text: 'hello' })
  let chatId = 0
  const createChat = await countTransactions(async () => {
    chatId = await store.createChat({ name: 'all', adminId: ids[0], userIds: ids.slice(1) })
  })
  const addChatMessage = await countTransactions(() => store.addChatMessage({ chatId, senderId: ids[3], text: 'hi' }))
  const report = await store.check()
  return { createChat, addChatMessage, problems: report.problems.length, members: (await store.getChat(chatId))?.members.length }
}

test('idb-direct: createChat with 20 members reads and writes in one IndexedDB transaction', async (/** @type {any} */ t) => {
  const db = await open({ location: fresh() })
  const { createChat, addChatMessage, problems, members } = await chatTransactions(db)
  t.same(createChat, { readonly: 0, readwrite: 1 }, `createChat: one readwrite transaction (${JSON.stringify(createChat)})`)
  t.same(addChatMessage, { readonly: 0, readwrite: 1 }, `addChatMessage: one readwrite transaction (${JSON.stringify(addChatMessage)})`)
  t.is(members, 20, 'the chat has its members')
  t.is(problems, 0, 'check() is clean')
  await db.close()
})

test('idb-direct: control: over a sublevel of a browser-level database (no direct path) createChat takes many transactions', async (/** @type {any} */ t) => {
  const level = new BrowserLevel(fresh(), { prefix: '' })
  await level.open()
  const db = await open({ db: level.sublevel('app', { keyEncoding: 'view', valueEncoding: 'view' }) })
  const { createChat, problems } = await chatTransactions(db)
  t.ok(createChat.readonly + createChat.readwrite > 10, `createChat: ${JSON.stringify(createChat)}`)
  t.is(problems, 0, 'check() is clean')
  await db.close()
  await level.close()
})

test('idb-direct: a user\'s own browser-level database gets the direct path', async (/** @type {any} */ t) => {
  const level = new BrowserLevel(fresh(), { prefix: '' })
  await level.open()
  const db = await open({ db: level })
  const { createChat, problems } = await chatTransactions(db)
  t.same(createChat, { readonly: 0, readwrite: 1 }, `createChat: ${JSON.stringify(createChat)}`)
  t.is(problems, 0, 'check() is clean')
  await db.close()
  t.is(level.status, 'open', 'the user\'s database stays open')
  // What the direct path wrote is what browser-level reads.
  const again = await open({ db: level })
  const users = again.collection('users', { indexes: { username: { unique: true, key: (/** @type {any} */ u) => u.username } } })
  t.ok(await users.getBy('username', 'user7'), 'browser-level reads a record the direct path wrote')
  await again.close()
  await level.close()
})

test('idb-direct: concurrent chains of reads each keep to a transaction', async (/** @type {any} */ t) => {
  const db = await open({ location: fresh() })
  const users = db.collection('users')
  await users.insertMany(Array.from({ length: 16 }, (_, i) => ({ name: `u${i}` })))
  let found = 0
  const counts = await countTransactions(() => Promise.all(Array.from({ length: 16 }, async (_, i) => {
    for (let k = 0; k < 8; k++) if (await users.get(((i + k) % 16) + 1)) found++
  })))
  t.is(found, 128, 'every read answers')
  // Reads share transactions (browser-level opens one per read: 128); a
  // transaction is joined for JOIN_MS only, so under load each chain opens
  // a few.
  t.ok(counts.readonly < 64, `${counts.readonly} readonly transactions for 16 chains of 8 reads`)
  t.is(counts.readwrite, 0, 'no readwrite one')
  await db.close()
})

/**
 * Make the `n`th IDBObjectStore.put() from now fail, synchronously
 * (`throws`) or by aborting its transaction after the request is made.
 * @param {number} n @param {'throws' | 'aborts'} how
 * @returns {() => void} restores put()
 */
function failPut (n, how) {
  const original = IDBObjectStore.prototype.put
  let calls = 0
  IDBObjectStore.prototype.put = function (/** @type {any} */ value, /** @type {any} */ key) {
    if (++calls === n) {
      if (how === 'throws') throw new DOMException('injected', 'DataError')
      const request = original.call(this, value, key)
      this.transaction.abort()
      return request
    }
    return original.call(this, value, key)
  }
  return () => { IDBObjectStore.prototype.put = original }
}

for (const how of /** @type {const} */ (['throws', 'aborts'])) {
  test(`idb-direct: a batch whose put ${how} writes nothing, and the next one is written`, async (/** @type {any} */ t) => {
    const db = await open({ location: fresh() })
    const users = db.collection('users', { indexes: { username: { unique: true, key: (/** @type {any} */ u) => u.username } } })
    const tags = db.collection('tags')
    await users.insert({ username: 'first' })
    const restore = failPut(3, how)
    let error = null
    try {
      await db.write(async (/** @type {any} */ w) => {
        await users.in(w).insert({ username: 'second' })
        await tags.in(w).insert({ name: 'a' })
        await tags.in(w).insert({ name: 'b' })
      })
    } catch (err) {
      error = err
    } finally {
      restore()
    }
    t.ok(error !== null, `the write rejects (${/** @type {any} */ (error)?.name})`)
    t.is(await users.getBy('username', 'second'), undefined, 'no index entry of the failed batch')
    t.is((await users.query().all()).length, 1, 'one user')
    t.is((await tags.query().all()).length, 0, 'no tag')
    t.is((await db.check()).problems.length, 0, 'check() is clean')
    const id = await users.insert({ username: 'third' })
    t.ok((await users.get(id))?.username === 'third', 'a later write is written')
    t.is((await db.check()).problems.length, 0, 'check() is still clean')
    await db.close()
  })
}

test('idb-direct: range reads with a count and a direction answer as browser-level\'s iterator', async (/** @type {any} */ t) => {
  const level = new BrowserLevel(fresh(), { prefix: '' })
  await level.open()
  const namespace = new Namespace(level, 'things', 'utf8')
  const other = new Namespace(level, 'thingt', 'utf8')
  const batch = []
  for (let a = 0; a < 4; a++) {
    for (let b = 0; b < 30; b++) batch.push({ type: 'put', key: encode([a, b]), value: JSON.stringify({ a, b }), sublevel: namespace.sublevel })
  }
  batch.push({ type: 'put', key: encode([0, 0]), value: '"other"', sublevel: other.sublevel })
  await level.batch(/** @type {any} */ (batch))
  const idb = /** @type {import('../../lib/idb-direct.js').IdbDirect} */ (idbDirectFor(level))
  t.ok(idb !== null && idb.ready, 'a browser-level database has the direct layer')
  const boundsList = [
    {},
    { gte: encode([1]), lt: encode([2]) },
    { gt: encode([1, 5]), lte: encode([3, 2]) },
    { gte: encode([2, 29]) },
    { lt: encode([0, 3]) },
    { gte: encode([3]), lt: encode([1]) }
  ]
  const getAllRecords = /** @type {any} */ (IDBObjectStore.prototype).getAllRecords
  for (const cursor of [false, true]) {
    // Without getAllRecords() (browsers before it), backward reads use a cursor.
    if (cursor) delete (/** @type {any} */ (IDBObjectStore.prototype)).getAllRecords
    try {
      for (const bounds of boundsList) {
        for (const reverse of [false, true]) {
          for (const limit of [undefined, 1, 7, 1000]) {
            for (const values of [true, false]) {
              const expected = await namespace.sublevel.iterator({ ...bounds, reverse, limit: limit ?? -1, values }).all()
              const actual = await idb.entries(namespace, bounds, { reverse, limit, values }, false)
              const want = expected.map((/** @type {any} */ [key, value]) => [Array.from(key), values ? value : undefined])
              const got = actual.map(([key, value]) => [Array.from(key), value])
              t.same(got, want, `${JSON.stringify(Object.keys(bounds))} reverse ${reverse} limit ${limit} values ${values}${cursor ? ' (cursor)' : ''}: ${got.length} entries`)
            }
          }
        }
      }
    } finally {
      if (cursor && getAllRecords !== undefined) (/** @type {any} */ (IDBObjectStore.prototype)).getAllRecords = getAllRecords
    }
  }
  t.ok(typeof getAllRecords === 'function', 'this Chromium has getAllRecords()')
  const keys = [encode([0, 1]), encode([9, 9]), encode([3, 29])]
  t.same(await idb.getMany(namespace, keys, false), await namespace.sublevel.getMany(keys), 'getMany() answers as browser-level\'s')
  t.same(await countTransactions(() => idb.getMany(namespace, keys, false)), { readonly: 1, readwrite: 0 }, 'getMany() in one transaction')
  await level.close()
})

// @ts-ignore
window.levelkitTests = { run }
