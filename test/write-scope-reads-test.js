// Where reads are asynchronous (IndexedDB: no getSync()), every read of a
// critical section is a round trip (one IndexedDB transaction through
// browser-level), so a key the section has read is not read again: a
// relation's list is read once to check the endpoint and once to change it,
// a chat record once to check the sender and again to update it. Run here on
// memory-level with syncReads off, counting the backend's reads.

import test from 'tape'
import { MemoryLevel } from 'memory-level'
import { open } from '../index.js'
import { ChatStore } from '../chat.js'

/** A memory database that counts the keys its get() and getMany() read. */
function counting () {
  const level = new MemoryLevel()
  const reads = { keys: 0, distinct: new Set() }
  const get = level._get.bind(level)
  const getMany = level._getMany.bind(level)
  /** @param {any} key */
  const seen = key => {
    reads.keys++
    reads.distinct.add(Buffer.from(key).toString('latin1'))
  }
  level._get = async (/** @type {any} */ key, /** @type {any} */ options) => { seen(key); return get(key, options) }
  level._getMany = async (/** @type {any[]} */ keys, /** @type {any} */ options) => { keys.forEach(seen); return getMany(keys, options) }
  return { level, reads, reset () { reads.keys = 0; reads.distinct.clear() } }
}

test('a critical section reads each key from the backend once (asynchronous reads)', async t => {
  const { level, reads, reset } = counting()
  const db = await open({ db: level, syncReads: false })
  const store = await ChatStore.open(db, { passwordCost: { scryptN: 2 } })
  const users = []
  for (let i = 0; i < 6; i++) users.push(await store.createUser({ username: `u${i}`, password: 'pw' }))

  reset()
  const chatId = await store.createChat({ name: 'c', adminId: users[0], userIds: users.slice(1) })
  t.is(reads.keys, reads.distinct.size, `createChat with 6 members: ${reads.keys} reads of ${reads.distinct.size} keys`)

  reset()
  await store.addChatMessage({ chatId, senderId: users[2], text: 'hi' })
  t.is(reads.keys, reads.distinct.size, `addChatMessage: ${reads.keys} reads of ${reads.distinct.size} keys`)

  reset()
  await db.write(async w => {
    const a = await store.users.in(w).get(users[0])
    await store.users.in(w).update(users[0], { createdAt: 1 })
    const b = await store.users.in(w).get(users[0])
    t.is(a.createdAt !== 1 && b.createdAt, 1, 'a read after the section\'s own write sees the write')
  })
  t.is(reads.keys, reads.distinct.size, `get, update, get of one user: ${reads.keys} reads of ${reads.distinct.size} keys`)

  t.same(await store.getChatMessages(chatId), [{ id: 1, chatId, senderId: users[2], text: 'hi', timestamp: (await store.getChatMessages(chatId))[0].timestamp }])
  t.ok((await store.check()).ok, 'check() is clean')
  await db.close()
})

test('what one section read is not kept for the next: a section reads what is stored now', async t => {
  const { level } = counting()
  const db = await open({ db: level, syncReads: false })
  const things = db.collection('things')
  const id = await things.insert({ n: 1 })
  await db.write(async w => {
    t.is((await things.in(w).get(id)).n, 1, 'read in one section')
  })
  // Written behind levelkit's back, as another program (or a repair) would.
  const [key, value] = (await level.iterator({ keyEncoding: 'view', valueEncoding: 'utf8' }).all()).find(([, v]) => v.includes('"n":1'))
  await level.put(key, value.replace('"n":1', '"n":2'), { keyEncoding: 'view', valueEncoding: 'utf8' })
  await db.write(async w => {
    t.is((await things.in(w).get(id)).n, 2, 'the next section reads the stored value')
    await things.in(w).update(id, { n: 3 })
    t.is((await things.in(w).get(id)).n, 3, 'and then its own write')
  })
  t.is((await things.get(id)).n, 3)
  await db.close()
})

test('appending a child that starts a new block reads no block', async t => {
  const { level, reads, reset } = counting()
  const db = await open({ db: level, syncReads: false })
  const chats = db.collection('chats')
  const messages = db.children('messages', { parent: chats, blockSize: 4 })
  const chatId = await chats.insert({ name: 'c' })
  const blockReads = () => [...reads.distinct].filter(key => key.includes('messages.blocks!')).length

  reset()
  t.is(await messages.append(chatId, { n: 1 }), 1)
  t.is(blockReads(), 0, 'the first child: its block is new')
  for (let n = 2; n <= 4; n++) await messages.append(chatId, { n })
  reset()
  t.is(await messages.append(chatId, { n: 5 }), 5)
  t.is(blockReads(), 0, 'the fifth child of blocks of 4: a new block, not read')
  reset()
  t.is(await messages.append(chatId, { n: 6 }), 6)
  t.is(blockReads(), 1, 'the sixth goes into the fifth\'s block, which is read')

  const other = await chats.insert({ name: 'd' })
  reset()
  await db.write(w => messages.in(w).appendMany(other, Array.from({ length: 9 }, (_, i) => ({ n: i + 1 }))))
  t.is(blockReads(), 0, 'nine children appended to an empty parent in one write: three new blocks, none read')

  t.same((await messages.range(chatId).all()).map(c => c.n), [1, 2, 3, 4, 5, 6], 'the children, in order')
  t.same((await messages.range(other).all()).map(c => c.n), [1, 2, 3, 4, 5, 6, 7, 8, 9])
  t.ok((await db.check()).ok, 'check() is clean')
  await db.close()
})
