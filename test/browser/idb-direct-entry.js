/* global IDBObjectStore */
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
import { countRequests as countMade } from './count-requests.js'

const run_ = Math.random().toString(36).slice(2)
let opened = 0
const fresh = () => `levelkit-idb-direct-${run_}-${++opened}`

/**
 * The IndexedDB transactions (by mode) that `fn` opens.
 * @param {() => Promise<unknown>} fn
 */
async function countTransactions (fn) {
  const { made } = await countMade(fn)
  return { readonly: made.transactions - made.readwrite, readwrite: made.readwrite }
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

const REQUESTS = ['get', 'getKey', 'getAll', 'getAllKeys', 'getAllRecords', 'count', 'openCursor', 'openKeyCursor']

/**
 * Count the IndexedDB transactions and read requests (of object stores)
 * that `fn` makes.
 * @param {() => Promise<unknown>} fn
 */
async function countReads (fn) {
  const made = { transactions: 0, requests: 0 }
  const proto = /** @type {any} */ (IDBObjectStore.prototype)
  const originals = REQUESTS.filter(name => typeof proto[name] === 'function').map(name => [name, proto[name]])
  for (const [name, original] of originals) {
    proto[name] = function (/** @type {any[]} */ ...args) {
      made.requests++
      return original.apply(this, args)
    }
  }
  let answer
  try {
    const transactions = await countTransactions(async () => { answer = await fn() })
    made.transactions = transactions.readonly + transactions.readwrite
  } finally {
    for (const [name, original] of originals) proto[name] = original
  }
  return { ...made, answer }
}

/**
 * The same database twice: on levelkit's own IndexedDB path (open({
 * location })), and as a sublevel of a browser-level database, where
 * levelkit reads through browser-level's iterators and gets.
 */
async function directAndControl () {
  const direct = await open({ location: fresh() })
  const level = new BrowserLevel(fresh(), { prefix: '' })
  await level.open()
  const control = await open({ db: level.sublevel('app', { keyEncoding: 'view', valueEncoding: 'view' }) })
  return {
    sides: [direct, control],
    async close () {
      await direct.close()
      await control.close()
      await level.close()
    }
  }
}

test('idb-direct: children ranges answer as the iterator path (reverse, limits, bounds, partly filled blocks, purged and cascaded parents)', async (/** @type {any} */ t) => {
  const { sides, close } = await directAndControl()
  const models = sides.map(db => {
    const parents = db.collection('parents')
    return {
      db,
      parents,
      blocks: db.children('blocks', { parent: parents, onDelete: 'purge', blockSize: 4 }),
      flat: db.children('flat', { parent: parents, onDelete: 'purge' }),
      cascaded: db.children('cascaded', { parent: parents, blockSize: 3 })
    }
  })
  for (const { parents, blocks, flat, cascaded } of models) {
    for (let p = 1; p <= 5; p++) await parents.insert({ p })
    for (const children of [blocks, flat, cascaded]) {
      await children.appendMany(1, Array.from({ length: 23 }, (_, i) => ({ n: i + 1 })))
      await children.appendMany(2, Array.from({ length: 5 }, (_, i) => ({ n: i + 1 })))
      await children.appendMany(4, Array.from({ length: 9 }, (_, i) => ({ n: i + 1 })))
      // Partly filled blocks, and a block emptied (2..4 of 1..4).
      for (const seq of [2, 3, 4, 10, 17, 23]) await children.del(1, seq)
      // Blocks of one child each: a limited read needs more blocks than
      // full ones would.
      await children.appendMany(5, Array.from({ length: 30 }, (_, i) => ({ n: i + 1 })))
      for (let seq = 1; seq <= 30; seq++) if (seq % 4 !== 1) await children.del(5, seq)
    }
    await parents.del(2)
    // Deleted while its children are there: purged ones are invisible,
    // cascaded ones gone.
    await parents.del(4)
  }
  const optionsList = [{}, { reverse: true }]
  for (const limit of [1, 3, 4, 5, 7, 13, 50]) optionsList.push({ limit }, { reverse: true, limit })
  for (const bounds of [{ gt: 5 }, { gte: 5 }, { lt: 18 }, { lte: 18 }, { gte: 6, lt: 15 }, { gt: 9, lte: 11 }, { gt: 30 }, { lt: 1 }]) {
    optionsList.push(bounds, { ...bounds, reverse: true }, { ...bounds, limit: 4 }, { ...bounds, reverse: true, limit: 4 })
  }
  let compared = 0
  for (const name of /** @type {const} */ (['blocks', 'flat', 'cascaded'])) {
    for (const parent of [1, 2, 3, 4, 5, 99]) {
      for (const options of optionsList) {
        const [got, want] = await Promise.all(models.map(async m => {
          const range = m[name].range(parent, options)
          const entries = []
          for await (const entry of m[name].range(parent, options).entries()) entries.push(entry)
          return { all: await range.all(), entries, count: await range.count(), page: await range.page() }
        }))
        if (JSON.stringify(got) !== JSON.stringify(want)) t.same(got, want, `${name} of ${parent}, ${JSON.stringify(options)}`)
        else compared++
      }
    }
  }
  t.is(compared, 3 * 6 * optionsList.length, `${compared} ranges answer the same on both paths`)
  const [direct] = models
  t.same((await direct.blocks.range(1, { reverse: true, limit: 3 }).all()).map((/** @type {any} */ c) => c.n), [22, 21, 20], 'the newest children, newest first')
  const counted = await countReads(() => direct.blocks.range(1, { reverse: true, limit: 5 }).all())
  t.ok(counted.requests <= 2 && counted.transactions <= 1, `the newest 5 in blocks of 4: the blocks and the parent in one request each (${JSON.stringify({ ...counted, answer: undefined })})`)
  const flat = await countReads(() => direct.flat.range(1, { reverse: true, limit: 5 }).all())
  t.ok(flat.requests <= 2 && flat.transactions <= 1, `the newest 5 kept a key each: the same (${JSON.stringify({ ...flat, answer: undefined })})`)
  const cascaded = await countReads(() => direct.cascaded.range(1, { limit: 5 }).all())
  t.ok(cascaded.requests <= 1 && cascaded.transactions <= 1, `children without purge: the blocks only (${JSON.stringify({ ...cascaded, answer: undefined })})`)
  for (const m of models) t.is((await m.db.check()).problems.length, 0, 'check() is clean')
  await close()
})

test('idb-direct: the last 50 messages and a user\'s chats take few requests, and answer as the point-read path', async (/** @type {any} */ t) => {
  const { sides, close } = await directAndControl()
  const stores = await Promise.all(sides.map(db => ChatStore.open(db, { passwordCost: { scryptN: 1024, pbkdf2Iterations: 1 } })))
  for (const store of stores) {
    const ids = []
    for (let i = 0; i < 6; i++) ids.push(await store.createUser({ username: `user${i}`, password: 'secret-password' }))
    const big = await store.createChat({ name: 'big', adminId: ids[0], userIds: ids.slice(1) })
    const small = await store.createChat({ name: 'small', adminId: ids[1], userIds: [ids[2]] })
    const gone = await store.createChat({ name: 'gone', adminId: ids[0], userIds: [ids[3]] })
    await store.createChat({ name: 'empty', adminId: ids[4], userIds: [ids[5]] })
    const plain = await store.createChat({ name: 'plain', adminId: ids[2], userIds: [ids[3], ids[4]] })
    for (let i = 1; i <= 40; i++) await store.addChatMessage({ chatId: plain, senderId: ids[2 + i % 3], text: `p${i}`, timestamp: 4000 + i, ...(i % 5 === 0 ? { recipients: [ids[3]] } : {}) })
    for (let i = 1; i <= 75; i++) {
      // Whispers now and then: hidden from most readers.
      const whisper = i % 7 === 0 ? { recipients: [ids[2]] } : {}
      await store.addChatMessage({ chatId: big, senderId: ids[i % 6], text: `m${i}`, timestamp: 1000 + i, ...whisper })
    }
    for (let i = 1; i <= 3; i++) await store.addChatMessage({ chatId: small, senderId: ids[1], text: `s${i}`, timestamp: 2000 + i })
    for (let i = 1; i <= 20; i++) await store.addChatMessage({ chatId: gone, senderId: ids[3], text: `g${i}`, timestamp: 3000 + i })
    // Partly filled blocks (messages deleted one by one, behind ChatStore).
    for (const seq of [3, 40, 41, 42, 66, 75]) await store.messages.del(big, seq)
    await store.deleteChat(gone)
  }
  const questions = [{}, { n: 1 }, { n: 5 }, { n: 50 }, { n: 200 }, { to: 30 }, { to: 30, n: 7 }, { to: 43, n: 4 }, { from: 10, n: 7 }, { from: 10, to: 15 }, { from: 38, n: 6 }, { from: 90 }, { to: 1 },
    { viewerId: 1 }, { viewerId: 3 }, { viewerId: 3, n: 9 }, { n: 9, to: 60 }, { allWhispers: true }, { allWhispers: true, n: 12 }, { from: 5, n: 10, viewerId: 2 }]
  const [direct, control] = stores
  let compared = 0
  for (const chatId of [1, 2, 3, 4, 5, 99]) {
    // What the page must be: from the children range of the point-read
    // side (its iterator), whose messages stay where ChatStore never
    // deleted one.
    const exists = await control.chats.has(chatId)
    const all = /** @type {any[]} */ (await control.messages.range(chatId).all())
    for (const options of questions) {
      const { from, to, n = 50, viewerId, allWhispers } = /** @type {any} */ (options)
      const seen = all.filter(m => allWhispers || !m.recipients || m.senderId === viewerId || m.recipients.includes(viewerId))
        .filter(m => (from === undefined || m.id >= from) && (to === undefined || m.id < to))
      const expected = !exists ? null : from !== undefined ? seen.slice(0, n) : seen.slice(Math.max(0, seen.length - n))
      const got = await direct.getChatMessages(chatId, options)
      // On chats without messages deleted one by one, both ways of reading.
      const want = chatId === 1 ? expected : await control.getChatMessages(chatId, options)
      if (JSON.stringify(got) !== JSON.stringify(expected) || JSON.stringify(want) !== JSON.stringify(expected)) t.same({ got, want }, { got: expected, want: expected }, `getChatMessages(${chatId}, ${JSON.stringify(options)})`)
      else compared++
    }
  }
  t.is(compared, 6 * questions.length, `${compared} pages answer as expected on both paths`)
  for (const userId of [1, 2, 3, 4, 5, 6, 99]) {
    // Without times, which are each side's Date.now().
    const [got, want] = await Promise.all(stores.map(async store => (await store.getChats(userId)).map(({ lastActivity, createdAt, ...chat }) => chat)))
    t.same(got, want, `getChats(${userId}) answers the same`)
  }
  const page = await countReads(() => direct.getChatMessages(1, { n: 50, allWhispers: true }))
  t.same(/** @type {any} */ (page.answer)?.map((/** @type {any} */ m) => m.id).slice(-3), [72, 73, 74], 'the newest messages, oldest first')
  t.ok(page.requests <= 2 && page.transactions <= 1, `the last 50 messages: at most 2 requests in 1 transaction (${JSON.stringify({ ...page, answer: undefined })})`)
  const chats = await countReads(() => direct.getChats(2))
  t.is(/** @type {any} */ (chats.answer)?.length, 2, 'user 2 is in 2 chats')
  t.ok(chats.requests <= 3 && chats.transactions <= 1, `a user's chats: the list and the 2 chats, in 1 transaction (${JSON.stringify({ ...chats, answer: undefined })})`)
  for (const s of stores) t.is((await s.check()).problems.length, 0, 'check() is clean')
  await close()
})

test('idb-direct: createChat reads none of the new chat\'s lists', async (/** @type {any} */ t) => {
  const db = await open({ location: fresh() })
  const store = await ChatStore.open(db, { passwordCost: { scryptN: 1024, pbkdf2Iterations: 1 } })
  const ids = []
  for (let i = 0; i < 6; i++) ids.push(await store.createUser({ username: `user${i}`, password: 'secret-password' }))
  // The users' lists and the sequence are read once, then known.
  await store.createChat({ name: 'warm', adminId: ids[0], userIds: ids.slice(1, 5) })
  const again = await countReads(() => store.createChat({ name: 'again', adminId: ids[0], userIds: ids.slice(1, 5) }))
  t.is(again.requests, 0, `a new chat of known users: no read request (${JSON.stringify({ ...again, answer: undefined })})`)
  t.same(await store.members.to(/** @type {number} */ (again.answer)).all(), ids.slice(0, 5), 'its members')
  // Users created since: their lists are known empty.
  const more = [await store.createUser({ username: 'late1', password: 'secret-password' }), await store.createUser({ username: 'late2', password: 'secret-password' })]
  const late = await countReads(() => store.createChat({ name: 'late', adminId: ids[0], userIds: [...more, ids[5]] }))
  t.is(late.requests, 0, `a new chat of users created by this tab, one never in a chat: no read request (${JSON.stringify({ ...late, answer: undefined })})`)
  t.same(await store.members.to(/** @type {number} */ (late.answer)).all(), [ids[0], ids[5], ...more], 'its members')
  for (const id of [ids[0], ids[5], ...more]) t.same(await store.members.from(id).all(), id === ids[0] ? [1, 2, /** @type {number} */ (late.answer)] : [late.answer], `user ${id}'s chats`)
  t.is((await store.check()).problems.length, 0, 'check() is clean')
  await db.close()
})

test('idb-direct: edges of a record created in the same write read no list of it; of a record created before, its list', async (/** @type {any} */ t) => {
  const db = await open({ location: fresh() })
  const groups = db.collection('groups')
  const people = db.collection('people')
  const members = db.relation('members', { from: groups, to: people, lists: ['from', 'to'] })
  const p = []
  for (let i = 0; i < 4; i++) p.push(await people.insert({ i }))
  const old = await groups.insert({ name: 'old' })
  await members.addMany(old, [p[0], p[1]])
  // Not created in this write: its list is read, and keeps what it held.
  const made = await db.write(async (/** @type {any} */ w) => {
    await members.in(w).addMany(old, [p[2]])
    const id = await groups.in(w).insert({ name: 'new' })
    await members.in(w).addMany(id, [p[1], p[3]])
    return id
  })
  t.same(await members.to(old).all(), [p[0], p[1], p[2]], 'the older group\'s list kept its members and got the new one')
  t.same(await members.to(made).all(), [p[1], p[3]], 'the new group\'s list')
  t.same(await members.from(p[1]).all(), [old, made], 'a member\'s list kept its group and got the new one')
  // Created in bulk, and in a write of their own: known to have no lists.
  await people.insertMany([{ i: 10 }, { i: 11 }, { i: 12 }])
  const bulk = [p[3] + 1, p[3] + 2, p[3] + 3]
  const group = await countReads(() => db.write(async (/** @type {any} */ w) => {
    const id = await groups.in(w).insert({ name: 'bulk' })
    await members.in(w).addMany(id, bulk)
    return id
  }))
  t.is(group.requests, 0, `a new group of people created in bulk before: no read request (${JSON.stringify({ ...group, answer: undefined })})`)
  t.same(await members.to(/** @type {number} */ (group.answer)).all(), bulk, 'the bulk group\'s list')
  for (const id of bulk) t.same(await members.from(id).all(), [group.answer], `person ${id}'s groups`)
  // A record written before under an id the sequence had not handed out.
  const high = /** @type {number} */ (group.answer) + 1
  await groups.put(high, { name: 'put' })
  await members.addMany(high, [p[0]])
  const after = await groups.insert({ name: 'after' })
  await members.addMany(after, [p[3]])
  t.ok(after > high, `an insert after a put() of a higher id gets a new id (${after})`)
  t.same(await members.from(p[0]).all(), [old, high], 'the put() record\'s edges are kept')
  t.is((await db.check()).problems.length, 0, 'check() is clean')
  await db.close()
})

test('idb-direct: a read that joins one made ahead reads again when that one could not be kept', async (/** @type {any} */ t) => {
  const level = new BrowserLevel(fresh(), { prefix: '' })
  await level.open()
  const namespace = new Namespace(level, 'names', 'utf8')
  const idb = /** @type {import('../../lib/idb-direct.js').IdbDirect} */ (idbDirectFor(level))
  idb.useCache(1 << 20)
  idb.lease(true)
  t.ok(idb.keeps, 'reads are kept while the lock is held')
  const key = encode('ann')
  const ahead = idb.get(namespace, key, false)
  // The key is written after that read began (a transaction after the
  // read's), and the lease cache is told (as lib/writer.js #heard() tells
  // it of another tab's writes).
  const db = /** @type {IDBDatabase} */ (/** @type {any} */ (level).db)
  const tx = db.transaction([level.location], 'readwrite')
  const stored = new TextEncoder().encode(namespace.prefix)
  const full = new Uint8Array(stored.length + key.length)
  full.set(stored, 0)
  full.set(key, stored.length)
  tx.objectStore(tx.objectStoreNames[0]).put(new TextEncoder().encode('"written"'), full)
  idb.forget(namespace.keyId(key))
  // A critical section's read (in the write path's transaction).
  const joined = idb.get(namespace, key, true)
  t.is(await ahead, undefined, 'the read made ahead saw the key before the write')
  t.is(await joined, '"written"', 'the section\'s read that joined it reads what is stored now')
  t.is(await idb.get(namespace, key, true), '"written"', 'and so does the next one')
  await level.close()
})

// @ts-ignore
window.levelkitTests = { run }
