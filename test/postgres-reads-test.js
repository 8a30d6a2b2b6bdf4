// Round trips on the postgres backend, counted on the pool: point reads
// asked for together go as one statement, the write path's prefetch() reads
// a relation's lists at once, and a critical section finds what an earlier
// one read or wrote in the section cache (lib/section-cache.js) instead of
// reading it again; readCache: 0 turns that off. What another process
// writes is forgotten: test/postgres-shared-test.js.
import test from 'tape'
import pg from 'pg'
import { open } from '../index.js'
import { ChatStore } from '../chat.js'
import { postgresForTests } from './util/postgres.js'

const server = await postgresForTests(test)

/**
 * A pool of its own whose point reads are counted.
 * @param {import('tape').Test} t
 */
function countingPool (t) {
  const pool = new pg.Pool({ connectionString: server.connectionString, max: 4 })
  pool.on('error', () => {})
  t.teardown(() => pool.end())
  const counted = { reads: 0, keys: 0 }
  /** @type {any} */
  const query = pool.query.bind(pool)
  /** @param {any} config @param {any[]} rest */
  const counting = (config, ...rest) => {
    const text = typeof config === 'string' ? config : config.text
    if (/^SELECT (key, )?value FROM .* WHERE key (= \$1|= ANY)/.test(text)) {
      counted.reads++
      counted.keys += Array.isArray(config.values[0]) ? config.values[0].length : 1
    }
    return query(config, ...rest)
  }
  pool.query = /** @type {any} */ (counting)
  return { pool, counted, reset () { counted.reads = 0; counted.keys = 0 } }
}

test('postgres: point reads asked for together are one statement', async t => {
  const { pool, counted, reset } = countingPool(t)
  const db = await open({ backend: 'postgres', pool, table: server.table() })
  try {
    const things = db.collection('things')
    const ids = []
    for (let n = 0; n < 5; n++) ids.push(await things.insert({ n }))
    reset()
    const got = await Promise.all([...ids, 99].map(id => things.get(id)))
    t.deepEqual(got.map(thing => thing?.n), [0, 1, 2, 3, 4, undefined], 'six get()s at once answer as one at a time would')
    t.is(counted.reads, 1, 'in one statement')
    reset()
    const [one, many, has] = await Promise.all([db.level.get('x'), db.level.getMany(['x', 'y', 'x']), db.level.has('y')])
    t.deepEqual([one, many, has], [undefined, [undefined, undefined, undefined], false], 'get, getMany and has of the root at once')
    t.deepEqual([counted.reads, counted.keys], [1, 2], 'in one statement, each key once')
    reset()
    t.is((await things.get(ids[2])).n, 2, 'a get() alone')
    t.deepEqual([counted.reads, counted.keys], [1, 1], 'one statement of one key')
  } finally {
    await db.close()
  }
})

test('postgres: a critical section reads a key once; later sections find it in the section cache', async t => {
  const { pool, counted, reset } = countingPool(t)
  const db = await open({ backend: 'postgres', pool, table: server.table() })
  try {
    const store = await ChatStore.open(db, { passwordCost: { scryptN: 2 } })
    const users = []
    for (let i = 0; i < 8; i++) users.push(await store.createUser({ username: `u${i}`, password: 'pw' }))
    // Users 6 and 7 in no chat: their records are read (no list says they exist).
    await store.createChat({ name: 'first', adminId: users[0], userIds: users.slice(1, 6) })
    reset()
    const chatId = await store.createChat({ name: 'c', adminId: users[1], userIds: [...users.slice(2, 6), ...users.slice(6)] })
    t.ok(counted.reads <= 2, `createChat of 7 members whose lists were written here: ${counted.reads} statements`)
    reset()
    const fresh = await open({ backend: 'postgres', pool, table: server.table(), readCache: 0 })
    try {
      const store2 = await ChatStore.open(fresh, { passwordCost: { scryptN: 2 } })
      const users2 = []
      for (let i = 0; i < 8; i++) users2.push(await store2.createUser({ username: `v${i}`, password: 'pw' }))
      // A user in no chat has no list: its record is read then, one by one.
      await store2.createChat({ name: 'first', adminId: users2[0], userIds: users2.slice(1, 7) })
      reset()
      await store2.createChat({ name: 'c', adminId: users2[0], userIds: users2.slice(1, 7) })
      t.deepEqual([counted.reads, counted.keys], [1, 7], 'without the section cache, createChat of 7 members reads their 7 lists in one statement (prefetch()), not the new chat\'s own list')
      reset()
      const id = await store2.addChatMessage({ chatId: 1, senderId: users2[1], text: 'a' })
      t.is(id, 1, 'a message')
      const before = counted.reads
      await store2.addChatMessage({ chatId: 1, senderId: users2[1], text: 'b' })
      t.ok(counted.reads - before >= 2, `without the section cache, each addChatMessage reads its chat (and more) again: ${counted.reads - before} statements`)
    } finally {
      await fresh.close()
    }
    await store.addChatMessage({ chatId, senderId: users[2], text: 'warm' })
    reset()
    for (let i = 0; i < 5; i++) await store.addChatMessage({ chatId, senderId: users[2 + (i % 3)], text: `m${i}` })
    // (A message that starts a new block reads that block's key: absent.)
    t.ok(counted.reads <= 1, `five addChatMessage() after a first: ${counted.reads} point reads (the chat, the block and the purge marker from the section cache)`)
    t.deepEqual((await store.getChatMessages(chatId)).map(m => m.text), ['warm', 'm0', 'm1', 'm2', 'm3', 'm4'], 'the messages are there, in order')
    await db.write(async w => {
      const chat = await store.chats.in(w).get(chatId)
      await store.chats.in(w).update(chatId, { name: `${chat.name}!` })
    })
    await db.write(async w => {
      t.is((await store.chats.in(w).get(chatId)).name, 'c!', 'a section reads what the one before decided')
    })
    t.deepEqual((await store.check()).problems, [], 'check() is clean')
  } finally {
    await db.close()
  }
})
