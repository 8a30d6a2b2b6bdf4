// Changing a layout option on a database that already has data, on real
// LevelDB closed and opened again: a relation's `lists` (the edges the old
// declaration wrote are moved, at the new declaration, into the layout the
// relation uses now, in bounded batches, lib/schema.js; both ways, and with
// ChatStore's own relation), a children set's `blockSize` (likewise; and
// ChatStore's messages rewritten behind levelkit's back, which check()
// reports and a repair moves), and an index's `covering` (a repair rewrites
// every entry in the new form).

import test from 'tape'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open, encodeTuple, decodeTuple } from '../index.js'
import { ChatStore } from '../chat.js'
import { hashPassword } from '#passwords'

/** Declare people and a follows relation with `lists`. @param {any} db @param {string[]} lists */
function schema (db, lists) {
  const people = db.collection('people')
  const follows = db.relation('follows', { from: people, to: people, lists })
  return { people, follows }
}

/** Namespaces that hold anything. @param {any} db @param {string[]} names */
async function filled (db, names) {
  const found = []
  for (const name of names) {
    if ((await db.level.sublevel(name, { keyEncoding: 'view' }).keys({ limit: 1 }).all()).length > 0) found.push(name)
  }
  return found
}

const NAMESPACES = ['follows.fwd', 'follows.rev', 'follows.list.to', 'follows.list.from']

for (const [before, after] of [[[], ['from', 'to']], [['from', 'to'], []], [[], ['from']], [['to'], ['from']]]) {
  test(`lists ${JSON.stringify(before)} -> ${JSON.stringify(after)}: a repair moves the edges`, async t => {
    const dir = mkdtempSync(join(tmpdir(), 'levelkit-layout-'))
    try {
      const first = await open({ location: dir })
      const a = schema(first, before)
      const ids = []
      for (let i = 0; i < 6; i++) ids.push(await a.people.insert({ n: i }))
      const edges = [[1, 2], [1, 3], [2, 1], [3, 3], [4, 1], [4, 6], [6, 4]]
      for (const [x, y] of edges) await a.follows.add(x, y)
      await a.people.del(5)
      await first.close()

      const db = await open({ location: dir })
      const b = schema(db, after)
      // Moved from the first use, or db.buildIndexes() (lib/schema.js): then nothing is left to repair.
      await db.buildIndexes()
      t.same(await db.check(), { ok: true, problems: [], repaired: 0 }, 'clean without a repair')
      const used = [after.includes('to') ? 'follows.list.to' : 'follows.fwd', after.includes('from') ? 'follows.list.from' : 'follows.rev']
      t.same(await filled(db, NAMESPACES), NAMESPACES.filter(name => used.includes(name)), 'only the namespaces in use hold anything')
      for (const id of ids) {
        t.same(await b.follows.to(id).all(), edges.filter(([x]) => x === id).map(([, y]) => y).sort(), `to(${id})`)
        t.same(await b.follows.from(id).all(), edges.filter(([, y]) => y === id).map(([x]) => x).sort(), `from(${id})`)
      }
      t.is(await b.follows.has(4, 6), true)
      t.is(await b.follows.add(6, 1), true, 'and it takes new edges')
      await b.people.del(1)
      t.same(await b.follows.from(3).all(), [3], 'cascades over the moved edges')
      t.ok((await db.check()).ok)
      await db.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
}

test('a ChatStore database written with member edges is moved into member lists when ChatStore opens it', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-layout-chat-'))
  try {
    // What an earlier ChatStore wrote: the same models, members as edges.
    const first = await open({ location: dir })
    const users = first.collection('users', { indexes: { username: { unique: true, key: (/** @type {any} */ u) => u.username } } })
    const chats = first.collection('chats')
    const members = first.relation('members', { from: chats, to: users, onDelete: { from: 'cascade', to: 'restrict' } })
    for (const username of ['ann', 'bob', 'cat']) await users.insert({ username, passwordHash: await hashPassword('pw', { scryptN: 1024 }), createdAt: 1 })
    const chat = await chats.insert({ name: 'old', adminId: 1, members: [1, 2, 3], lastActivity: 1, createdAt: 1, private: false, passwordHash: null })
    for (const user of [1, 2, 3]) await members.add(chat, user)
    await first.close()

    // It has no ownership marker (stores were not marked then): adopted.
    const db = await open({ location: dir })
    const store = await ChatStore.open(db, { adopt: true })
    t.ok((await store.check()).ok, 'ChatStore.open() moved them (its migration): the chat model checks clean (its password hashes counted when adopted)')
    t.is(await db.schemaVersion(), 1, 'the database is at ChatStore\'s schema version')
    t.same((await store.getChats(2)).map(c => c.id), [chat])
    t.is(await store.checkChatMember(chat, 3), true)
    await db.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('children: one key each -> blocks of 4 -> blocks of 3 -> one key each, a repair moving them each time', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-layout-children-'))
  try {
    /** @param {number | undefined} blockSize */
    const declare = async (blockSize) => {
      const db = await open({ location: dir })
      const chats = db.collection('chats')
      const messages = db.children('messages', { parent: chats, blockSize })
      return { db, chats, messages }
    }
    let { db, chats, messages } = await declare(undefined)
    const a = await chats.insert({})
    const b = await chats.insert({})
    /** @type {Map<number, Array<[number, string]>>} */
    const expected = new Map([[a, []], [b, []]])
    for (let i = 1; i <= 11; i++) {
      await messages.append(a, `a${i}`)
      expected.get(a)?.push([i, `a${i}`])
    }
    for (let i = 1; i <= 3; i++) {
      await messages.append(b, `b${i}`)
      expected.get(b)?.push([i, `b${i}`])
    }
    await messages.del(a, 6)
    expected.set(a, /** @type {Array<[number, string]>} */ (expected.get(a)).filter(([seq]) => seq !== 6))
    await db.close()
    for (const blockSize of [4, 3, undefined]) {
      ({ db, chats, messages } = await declare(blockSize))
      // Moved from the first use, or db.buildIndexes() (lib/schema.js): then nothing is left to repair.
      await db.buildIndexes()
      t.same(await db.check(), { ok: true, problems: [], repaired: 0 }, `blockSize ${blockSize}: clean without a repair`)
      t.same(await filled(db, ['messages', 'messages.blocks']), [blockSize === undefined ? 'messages' : 'messages.blocks'], 'only the namespace in use holds children')
      for (const [chat, children] of expected) {
        const entries = []
        for await (const entry of messages.range(chat).entries()) entries.push(entry)
        t.same(entries, children, `chat ${chat}: every child, once, in order`)
      }
      t.same(await messages.getMany(a, [7, 6, 5]), ['a7', undefined, 'a5'])
      await db.close()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a ChatStore database whose messages were rewritten one key each behind levelkit\'s back is repaired into blocks', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-layout-messages-'))
  try {
    const first = await open({ location: dir })
    const old = new ChatStore(first)
    const ann = await old.createUser({ username: 'ann', password: 'pw' })
    const bob = await old.createUser({ username: 'bob', password: 'pw' })
    const chat = await old.createChat({ name: 'old', adminId: ann, userIds: [bob] })
    for (let i = 0; i < 40; i++) await old.addChatMessage({ chatId: chat, senderId: i % 2 ? ann : bob, text: `hello ${i}` })
    const before = await old.getChatMessages(chat, { n: 50 })
    await first.close()

    // Rewrite the messages as an earlier ChatStore kept them: one key each.
    const raw = await open({ location: dir })
    const blocks = raw.level.sublevel('messages.blocks', { keyEncoding: 'view', valueEncoding: 'utf8' })
    const keys = raw.level.sublevel('messages', { keyEncoding: 'view', valueEncoding: 'utf8' })
    for (const [key, value] of await blocks.iterator().all()) {
      const [chatId] = /** @type {[number, number]} */ (decodeTuple(key))
      for (const [seq, message] of JSON.parse(value)) await keys.put(encodeTuple([chatId, seq]), JSON.stringify(message))
      await blocks.del(key)
    }
    await raw.close()

    const db = await open({ location: dir })
    const store = new ChatStore(db)
    t.notOk((await store.check()).ok, 'reported before the repair')
    await db.check({ repair: true })
    t.ok((await store.check()).ok, 'the chat model checks clean after it')
    t.same(await store.getChatMessages(chat, { n: 50 }), before, 'the same 40 messages, in order')
    await db.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('covering on, then off: the index is rebuilt each time, and reads wait for it', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-layout-covering-'))
  try {
    /** @param {boolean} covering */
    const declare = async (covering) => {
      const db = await open({ location: dir })
      const people = db.collection('people', { indexes: { name: { unique: true, covering, key: (/** @type {any} */ p) => p.name } } })
      return { db, people }
    }
    let { db, people } = await declare(false)
    for (const name of ['ann', 'bob', 'cat']) await people.insert({ name })
    await db.close()
    for (const covering of [true, false]) {
      ({ db, people } = await declare(covering))
      t.same(await people.getBy('name', 'bob'), { id: 2, name: 'bob' }, `covering: ${covering}: a read waits for the rebuild and answers`)
      await db.buildIndexes()
      t.same((await db.schemaStatus()).people.name.state, 'ready', 'the index is ready')
      t.ok((await db.check()).ok, 'every entry in the new form')
      await rejects(people.insert({ name: 'cat' }), 'LEVELKIT_UNIQUE', t)
      t.same((await people.query({ index: 'name' }).all()).map(p => p.id), [1, 2, 3])
      await db.close()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

/** @param {Promise<unknown>} promise @param {string} code @param {any} t */
async function rejects (promise, code, t) {
  try {
    await promise
    t.fail(`should reject with ${code}`)
  } catch (err) {
    t.is(/** @type {any} */ (err).code, code, `rejects with ${code}`)
  }
}
