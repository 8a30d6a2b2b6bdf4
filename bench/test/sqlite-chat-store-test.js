// bench/lib/sqlite-chat-store.js answers like ChatStore: the same random
// sequences of operations (valid and invalid input, whispers, private chats,
// full chats, deleted chats, sessions) run on both stores, one operation at a
// time, and every answer must be equal, value for value or error code for
// error code. The clock is frozen during each operation, so timestamps agree
// too. Then watch(): the same messages, in the same order, for the same
// viewers, and the same endings.
//
// test/chat/suite.js cannot run on this store: it is parameterised by a
// levelkit database, not by a store, and reads ChatStore's internals.

import test from 'tape'
import { open } from 'levelkit'
import { ChatStore } from 'levelkit/chat'
import { prng } from 'levelkit-testkit/prng'
import { frozenClock, answer, agreeOnRandomOperations, agreeOnEdgeCases } from './util/chat-store-agreement.js'
import { SqliteChatStore, sqliteKv } from '../lib/sqlite-chat-store.js'
import { levelkitKv } from '../../server/lib/kv.js'

// Cheap hashing: the test compares answers, not costs.
const OPTIONS = { passwordCost: { scryptN: 16, pbkdf2Iterations: 1000 } }
const SEEDS = [1, 2, 3, 4]
const STEPS = 700

// Date.now() as both stores see it: frozen while an operation runs on both.
const clock = frozenClock(test)

async function stores () {
  const db = await open({ backend: 'memory' })
  const levelkit = await ChatStore.open(db, OPTIONS)
  const sqlite = new SqliteChatStore(':memory:', OPTIONS)
  return { levelkit, sqlite, close: async () => { await db.close(); await sqlite.close() } }
}

for (const seed of SEEDS) {
  test(`SqliteChatStore answers like ChatStore: ${STEPS} random operations, seed ${seed}`, async t => {
    const { levelkit, sqlite, close } = await stores()
    await agreeOnRandomOperations(t, { levelkit, other: sqlite, seed, steps: STEPS, clock })
    await close()
  })
}

test('SqliteChatStore: private chats, full chats and whispers answer like ChatStore', async t => {
  const { levelkit, sqlite, close } = await stores()
  await agreeOnEdgeCases(t, { levelkit, other: sqlite, clock })
  const sessionId = await sqlite.setUserSession({ userId: 1, expiry: clock.now + 10 })
  t.match(sessionId, /^[0-9a-f]{32}$/, 'a session id of 128 random bits when none is given, like ChatStore\'s')
  t.is(await sqlite.getUserFromSession(sessionId), 1)
  await close()
})

async function settle () {
  for (let i = 0; i < 20; i++) await new Promise(resolve => setImmediate(resolve))
}

/**
 * Everything a watch yields until it ends or `count` messages came.
 * @param {AsyncGenerator<any>} watch @param {number} count
 */
async function collect (watch, count) {
  const got = []
  try {
    for await (const message of watch) {
      got.push(message.id + (message.recipients ? `>${message.recipients}` : ''))
      if (got.length === count) break
    }
    return { got, ended: got.length < count ? 'ended' : 'count' }
  } catch (err) {
    return { got, error: /** @type {any} */ (err).code }
  }
}

test('SqliteChatStore.watch() delivers what ChatStore.watch() does: same messages per viewer, same starts, same ends', async t => {
  const { levelkit, sqlite, close } = await stores()
  const random = prng(7)
  const both = async (/** @type {(s: any) => Promise<any>} */ fn) => {
    const [a, b] = [await answer(() => fn(levelkit)), await answer(() => fn(sqlite))]
    t.same(b, a, 'same answer')
    return a.value
  }
  for (let i = 1; i <= 4; i++) await both(s => s.createUser({ username: `w${i}`, password: 'pw' }))
  await both(s => s.createChat({ name: 'live', adminId: 1, userIds: [2, 3] }))
  await both(s => s.addChatMessage({ chatId: 1, senderId: 1, text: 'before' }))

  const controllers = { levelkit: new AbortController(), sqlite: new AbortController() }
  const watches = /** @type {Record<string, Record<string, Promise<any>>>} */ ({})
  const TOTAL = 60
  for (const side of /** @type {const} */ (['levelkit', 'sqlite'])) {
    const store = side === 'levelkit' ? levelkit : sqlite
    watches[side] = {
      'no viewer, from now': collect(store.watch(1), 1000),
      'viewer 2, after 0': collect(store.watch(1, { after: 0, viewerId: 2 }), 1000),
      'viewer 3, after 1': collect(store.watch(1, { after: 1, viewerId: 3 }), 1000),
      'all whispers, after 0': collect(store.watch(1, { after: 0, allWhispers: true }), 1000),
      'all whispers and a viewer': collect(store.watch(1, { allWhispers: true, viewerId: 1 }), 1000),
      'viewer 4 (not a member)': collect(store.watch(1, { viewerId: 4 }), 1000),
      'the first 5': collect(store.watch(1, { viewerId: 1 }), 5),
      aborted: collect(store.watch(1, { signal: controllers[side].signal, viewerId: 1 }), 1000),
      'a missing chat': collect(store.watch(9), 1000),
      'an unknown option': collect(store.watch(1, /** @type {any} */ ({ afer: 3 })), 1000),
      'a bad after': collect(store.watch(1, { after: -1 }), 1000),
      'a bad chat id': collect(store.watch(0), 1000)
    }
  }
  for (let i = 0; i < TOTAL; i++) {
    const sender = 1 + random.int(3)
    const recipients = random() < 0.3 ? [1 + random.int(3)] : undefined
    await both(s => s.addChatMessage({ chatId: 1, senderId: sender, text: `m${i}`, recipients }))
    if (i === 30) {
      // Abort once both have caught up: what a watch delivers between a
      // commit and an abort is a race on either store.
      await settle()
      controllers.levelkit.abort()
      controllers.sqlite.abort()
    }
    // Let the watchers run between some writes, not between others.
    if (random() < 0.5) await new Promise(resolve => setImmediate(resolve))
  }
  await both(s => s.deleteChat(1))
  for (const what of Object.keys(watches.levelkit)) {
    const [expected, actual] = [await watches.levelkit[what], await watches.sqlite[what]]
    t.same(actual, expected, `${what}: ${JSON.stringify(expected).slice(0, 100)}`)
  }
  t.is((await watches.levelkit['viewer 2, after 0']).got.length > 40, true, 'the watches delivered messages (not just ended)')

  // Closing ends the watches of both.
  await both(s => s.createChat({ name: 'again', adminId: 1, userIds: [2] }))
  const pending = [collect(levelkit.watch(2), 1000), collect(sqlite.watch(2), 1000)]
  await close()
  t.same(await pending[1], await pending[0], 'close() ends a watch on both')
  t.same(await answer(() => sqlite.getChats(1)), { code: 'LEVELKIT_NOT_OPEN' }, 'a closed SqliteChatStore rejects with LEVELKIT_NOT_OPEN')
})

test('sqliteKv() answers like levelkitKv(): the same random puts, gets and deletes, valid and not', async t => {
  const db = await open({ backend: 'memory' })
  const levelkit = levelkitKv(db)
  const sqlite = new SqliteChatStore(':memory:', OPTIONS)
  const kv = sqliteKv(sqlite)
  const random = prng(11)
  const keys = ['k', 'key two', '👍', 'x'.repeat(64), 'y'.repeat(65), '', '\ud800', 5, null]
  const values = ['v', '', 'z'.repeat(1000), 'z'.repeat(1001), '👍'.repeat(1000), '\udfff', 7]
  const chats = [1, 2, 3, 0, -1, 1.5, '1']
  let mismatch = null
  for (let step = 0; step < 600 && mismatch === null; step++) {
    const [chatId, key, value] = [random.pick(chats), random.pick(keys), random.pick(values)]
    const method = random.pick(['put', 'put', 'get', 'get', 'del'])
    const call = (/** @type {any} */ store) => method === 'put' ? store.put(chatId, key, value) : store[method](chatId, key)
    const [expected, actual] = [await answer(() => call(levelkit)), await answer(() => call(kv))]
    if (JSON.stringify(expected) !== JSON.stringify(actual)) mismatch = { step, method, chatId, key, value, expected, actual }
  }
  t.is(mismatch, null, mismatch ? JSON.stringify(mismatch).slice(0, 300) : 'all 600 answers equal')
  await sqlite.createUser({ username: 'a', password: 'pw' })
  await sqlite.createChat({ name: 'c', adminId: 1 })
  await kv.put(1, 'k', 'kept')
  await sqlite.deleteChat(1)
  t.is(await kv.get(1, 'k'), 'kept', 'a key outlives its chat, as with levelkitKv() (chat ids are never reused)')
  await db.close()
  await sqlite.close()
})
