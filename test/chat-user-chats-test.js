// ChatStore's userChats option: a user's chats as a list (one value per
// user, the default) or as edges (one key per membership: a createChat
// writes new keys only, where a list is a row every createChat with that
// member rewrites). A database written in one layout is moved into the
// other when opened so.
import test from 'tape'
import pg from 'pg'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open } from '../index.js'
import { ChatStore } from '../lib/chat/chat-store.js'
import { postgresForTests } from './util/postgres.js'

const server = await postgresForTests(test)
const root = mkdtempSync(join(tmpdir(), 'levelkit-user-chats-'))
let n = 0
const cleanup = () => rmSync(root, { recursive: true, force: true })
test.onFinish(cleanup)
process.on('exit', cleanup)

const passwordCost = { scryptN: 2 }

/** Keys per namespace of a database, as '<namespace>' -> count. @param {any} db */
async function namespaces (db) {
  /** @type {Record<string, number>} */
  const counts = {}
  for await (const key of db.level.keys({ keyEncoding: 'utf8' })) {
    const name = /^!([^!]*)!/.exec(key)?.[1] ?? '?'
    counts[name] = (counts[name] ?? 0) + 1
  }
  return counts
}

/** Users a, b, c, d; chats 1 (a, b, c) and 2 (b, d). @param {ChatStore} store */
async function fill (store) {
  const ids = []
  for (const username of ['a', 'b', 'c', 'd']) ids.push(await store.createUser({ username, password: 'pw' }))
  const [a, b, c, d] = ids
  await store.createChat({ name: 'one', adminId: a, userIds: [b, c] })
  await store.createChat({ name: 'two', adminId: b, userIds: [d] })
  return ids
}

/** What a store answers about its members, whatever the layout. @param {ChatStore} store @param {number[]} ids */
async function answers (store, ids) {
  return {
    chats: await Promise.all(ids.map(async id => (await store.getChats(id)).map(chat => chat.id).sort())),
    member: await Promise.all(ids.map(id => store.checkChatMember(1, id)))
  }
}

const EXPECTED = { chats: [[1], [1, 2], [1], [2]], member: [true, true, true, false] }

test('chat userChats: the option takes list (the default) or edges', async t => {
  /** @param {any} [options] */
  const storeOn = async options => {
    const db = await open({ backend: 'memory' })
    try {
      return new ChatStore(db, options).userChats
    } finally {
      await db.close()
    }
  }
  for (const bad of ['auto', 'lists', 'edge', true, null]) {
    await storeOn({ userChats: bad }).then(() => t.fail(`userChats: ${String(bad)} is taken`), err => t.match(err.message, /userChats option must be one of 'list', 'edges'/, `userChats: ${String(bad)} is refused`))
  }
  t.is(await storeOn(), 'list', 'the default: a list')
  t.is(await storeOn({ userChats: 'edges' }), 'edges')
})

test('chat userChats: edges write one key per membership and answer as a list does; check() is clean', async t => {
  const db = await open({ backend: 'memory' })
  try {
    const store = await ChatStore.open(db, { passwordCost, userChats: 'edges' })
    const ids = await fill(store)
    t.same(await answers(store, ids), EXPECTED)
    const counts = await namespaces(db)
    t.is(counts['members.rev'], 5, 'an edge per membership')
    t.is(counts['members.list.from'], undefined, 'no user\'s list of chats')
    await store.removeChatMember(1, ids[2])
    await store.deleteChat(2)
    t.same((await answers(store, ids)).chats, [[1], [1], [], []], 'member removal and chat deletion remove the edges')
    t.same((await db.check()).problems, [], 'check() is clean')
  } finally {
    await db.close()
  }
})

test('chat userChats: a database written with lists is moved to edges when opened so, and back', async t => {
  const location = join(root, String(n++))
  let db = await open({ backend: 'leveldb', location })
  const ids = await fill(await ChatStore.open(db, { passwordCost, userChats: 'list' }))
  t.is((await namespaces(db))['members.list.from'], 4, 'written as lists')
  await db.close()
  /** @type {Array<['list' | 'edges', string, string]>} */
  const moves = [['edges', 'members.rev', 'members.list.from'], ['list', 'members.list.from', 'members.rev']]
  for (const [userChats, present, gone] of moves) {
    db = await open({ backend: 'leveldb', location })
    try {
      const store = await ChatStore.open(db, { passwordCost, userChats })
      t.same(await answers(store, ids), EXPECTED, `${userChats}: the same answers`)
      const three = await store.createChat({ name: 'three', adminId: ids[3], userIds: [ids[0]] })
      t.same((await store.getChats(ids[3])).map(chat => chat.id).sort(), [2, three], `${userChats}: a chat created after the move is listed`)
      await db.buildIndexes()
      const counts = await namespaces(db)
      t.ok(counts[present] > 0, `${userChats}: ${present} holds them`)
      t.is(counts[gone], undefined, `${userChats}: ${gone} is empty`)
      t.same((await db.check()).problems, [], `${userChats}: check() is clean`)
      await store.deleteChat(three)
    } finally {
      await db.close()
    }
  }
})

test('chat userChats: on PostgreSQL, a table written with lists is moved to edges when opened so', async t => {
  const table = server.table()
  let db = await open({ backend: 'postgres', pool: server.pool, table })
  const ids = await fill(await ChatStore.open(db, { passwordCost, userChats: 'list' }))
  await db.close()
  db = await open({ backend: 'postgres', pool: server.pool, table })
  try {
    const store = await ChatStore.open(db, { passwordCost, userChats: 'edges' })
    t.same(await answers(store, ids), EXPECTED, 'the same answers')
    await db.buildIndexes()
    const counts = await namespaces(db)
    t.is(counts['members.rev'], 5, 'moved: an edge per membership')
    t.is(counts['members.list.from'], undefined, 'no list left')
    t.same((await db.check()).problems, [], 'check() is clean')
  } finally {
    await db.close()
  }
})

test('chat userChats: with edges on PostgreSQL, createChat reads its members\' records as one statement', async t => {
  // readCache 0: no section cache either, so nothing is known before.
  const db = await open({ backend: 'postgres', pool: server.pool, table: server.table(), readCache: 0 })
  const Client = /** @type {any} */ (pg.Client).prototype
  const query = Client.query
  try {
    const store = await ChatStore.open(db, { passwordCost, userChats: 'edges' })
    const users = []
    for (let i = 0; i < 8; i++) users.push(await store.createUser({ username: `u${i}`, password: 'pw' }))
    let reads = 0
    Client.query = function (/** @type {any[]} */ ...args) {
      if (/SELECT (key, )?value FROM .* WHERE key (= |= ANY\()/.test(String(typeof args[0] === 'string' ? args[0] : args[0]?.text))) reads++
      return query.apply(this, args)
    }
    await store.createChat({ name: 'c', adminId: users[0], userIds: users.slice(1) })
    Client.query = query
    // The sequence, the chat's list, then the 8 records (one by one: 8).
    t.ok(reads <= 4, `${reads} read statements (at most 4, not one per member)`)
    t.same((await store.getChats(users[7])).map(chat => chat.id), [1])
    t.same((await db.check()).problems, [], 'check() is clean')
  } finally {
    Client.query = query
    await db.close()
  }
})
