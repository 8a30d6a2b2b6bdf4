// bench/lib/pg-chat-store.js answers like ChatStore: the same random
// sequences of operations (valid and invalid input, whispers, private chats,
// full chats, deleted chats, sessions) run on both stores, one operation at a
// time, and every answer must be equal, value for value or error code for
// error code (as bench/test/sqlite-chat-store-test.js does for SQLite). The
// clock is frozen during each operation, so timestamps agree too. Then what
// one process cannot show: several stores on their own pools (their own
// connections, as several processes have) on the same tables, at once.
//
// On a throwaway PostgreSQL cluster (levelkit-testkit/postgres), or the
// server LEVELKIT_PG_URL names; each test's tables are in a schema of their
// own, dropped at the end.

import test from 'tape'
import pg from 'pg'
import { open } from 'levelkit'
import { ChatStore } from 'levelkit/chat'
import { frozenClock, answer, agreeOnRandomOperations, agreeOnEdgeCases } from './util/chat-store-agreement.js'
import { PgChatStore } from '../lib/pg-chat-store.js'
import { postgresForTests } from '../../test/util/postgres.js'

// Cheap hashing: the test compares answers, not costs.
const OPTIONS = { passwordCost: { scryptN: 16, pbkdf2Iterations: 1000 } }
const SEEDS = [1, 2, 3, 4]
const STEPS = 700

const server = await postgresForTests(test)
const schemaPrefix = `lkchat_${process.pid.toString(36)}_`
let schemas = 0

// Date.now() as both stores see it: frozen while an operation runs on both.
const clock = frozenClock(test)

/** A fresh schema's name, dropped when the test ends. @param {import('tape').Test} t */
function freshSchema (t) {
  const schema = `${schemaPrefix}${schemas++}`
  t.teardown(() => server.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).then(() => {}))
  return schema
}

/** @param {import('tape').Test} t */
/** @param {import('tape').Test} t @param {'serial' | 'gapfree'} [ids] */
async function stores (t, ids) {
  const db = await open({ backend: 'memory' })
  const levelkit = await ChatStore.open(db, OPTIONS)
  const postgres = await PgChatStore.open(server.pool, { ...OPTIONS, schema: freshSchema(t), ...(ids ? { ids } : {}) })
  return { levelkit, postgres, close: async () => { await db.close(); await postgres.close() } }
}

for (const seed of SEEDS) {
  test(`PgChatStore answers like ChatStore: ${STEPS} random operations, seed ${seed}`, async t => {
    const { levelkit, postgres, close } = await stores(t)
    await agreeOnRandomOperations(t, { levelkit, other: postgres, seed, steps: STEPS, clock })
    await close()
  })
}

// The variant with ChatStore's guarantee (ids: 'gapfree'): the same answers.
test(`PgChatStore with gap-free ids answers like ChatStore: ${STEPS} random operations, seed 1`, async t => {
  const { levelkit, postgres, close } = await stores(t, 'gapfree')
  await agreeOnRandomOperations(t, { levelkit, other: postgres, seed: 1, steps: STEPS, clock })
  await close()
})

test('PgChatStore: private chats, full chats and whispers answer like ChatStore', async t => {
  const { levelkit, postgres, close } = await stores(t)
  await agreeOnEdgeCases(t, { levelkit, other: postgres, clock })
  const sessionId = await postgres.setUserSession({ userId: 1, expiry: clock.now + 10 })
  t.match(sessionId, /^[0-9a-f]{32}$/, 'a session id of 128 random bits when none is given, like ChatStore\'s')
  t.is(await postgres.getUserFromSession(sessionId), 1)
  await close()
})

/**
 * Four stores on pools of their own (as four processes), on one fresh
 * schema, opened at once (the tables are created once), in real time
 * (pools time out); the clock that was there comes back after the test
 * (another file's frozen clock, in the same tape process).
 * @param {any} t @param {object} options PgChatStore options beside OPTIONS
 */
async function racingStores (t, options) {
  const found = Date.now
  Date.now = clock.before
  t.teardown(() => { Date.now = found })
  const schema = freshSchema(t)
  const pools = Array.from({ length: 4 }, () => new pg.Pool({ connectionString: server.connectionString, max: 8 }))
  // pool.end() resolves once it has asked its clients to end, not once they
  // have: a client still ending when the cluster stops gets 57P01, which an
  // idle client's pool emits ('error' with no listener ended the process in CI).
  for (const pool of pools) pool.on('error', () => {})
  t.teardown(() => Promise.all(pools.map(pool => pool.end())).then(() => {}))
  return Promise.all(pools.map(pool => PgChatStore.open(pool, { ...OPTIONS, schema, ...options })))
}

// Several processes, as PostgreSQL sees them: stores on pools of their own
// (their own connections), on the same tables, racing.
test('PgChatStore from several pools at once: one winner per username, gap-free message ids, no 31st member', async t => {
  const stores = await racingStores(t, {})

  const claims = await Promise.all(stores.flatMap(store => Array.from({ length: 50 }, () => answer(() => store.createUser({ username: 'taken', password: 'pw' })))))
  t.is(claims.filter(a => typeof a.value === 'number').length, 1, '4 stores x 50 createUser of one name: exactly one winner')
  t.is(claims.filter(a => a.code === 'LEVELKIT_UNIQUE').length, 199, 'the 199 others fail with LEVELKIT_UNIQUE')

  const users = []
  for (let i = 0; i < 31; i++) users.push(await stores[i % 4].createUser({ username: `m${i}`, password: 'pw' }))
  const chatId = await stores[0].createChat({ name: 'busy', adminId: users[0], userIds: users.slice(1, 8) })
  const sent = await Promise.all(stores.map((store, s) => {
    const ids = []
    let k = 0
    const lane = async () => {
      while (k < 100) {
        const i = k++
        ids.push(await store.addChatMessage({ chatId, senderId: users[(s + i) % 8], text: `s${s} m${i}` }))
      }
    }
    return Promise.all(Array.from({ length: 8 }, lane)).then(() => ids)
  }))
  const all = sent.flat().sort((a, b) => a - b)
  t.same(all, Array.from({ length: 400 }, (_, i) => i + 1), '4 stores x 100 messages to one chat, 8 in flight each: ids 1..400, no gap, no duplicate')
  const messages = await stores[3].getChatMessages(chatId, { n: 1000 })
  t.same(messages?.map(m => m.id), all, 'and they read back in id order')
  t.is(new Set(messages?.map(m => m.text)).size, 400, 'each message once')

  for (let i = 8; i < 29; i++) await stores[0].addChatMember(chatId, users[i])
  const joins = await Promise.all(stores.map((store, s) => answer(() => store.addChatMember(chatId, users[29 + (s % 2)]))))
  t.same(joins.map(a => a.value === true ? 'added' : a.value === false ? 'false' : a.code).sort(), ['LEVELKIT_LIMIT', 'LEVELKIT_LIMIT', 'added', 'false'],
    'two users race (twice each) for the 30th place: one is added, then it is a member (false) and the chat is full for the other')
  t.is((await stores[1].getChat(chatId))?.members.length, 30, 'the chat has 30 members')
  t.comment(`operations retried after a deadlock or serialization failure, per store: ${stores.map(store => store.retries).join(', ')}`)
})

// ids: 'gapfree' holds where an identity column does not: a createUser that
// loses the race for a username (the unique constraint refuses it after
// nextval) spends no id, so user and chat ids stay 1..N.
test('PgChatStore with gap-free ids from several pools at once: user and chat ids 1..N', async t => {
  const stores = await racingStores(t, { ids: 'gapfree' })

  // 20 names, each claimed by every store at once, 8 in flight per store.
  const claims = await Promise.all(stores.map(async store => {
    const out = []
    let k = 0
    const lane = async () => { while (k < 20) { const i = k++; out.push(await answer(() => store.createUser({ username: `u${i}`, password: 'pw' }))) } }
    await Promise.all(Array.from({ length: 8 }, lane))
    return out
  }))
  const won = claims.flat().filter(a => typeof a.value === 'number').map(a => a.value).sort((a, b) => a - b)
  t.is(claims.flat().filter(a => a.code === 'LEVELKIT_UNIQUE').length, 60, '4 stores x 20 names: 60 LEVELKIT_UNIQUE')
  t.same(won, Array.from({ length: 20 }, (_, i) => i + 1), 'the 20 winners have ids 1..20')
  t.is(await stores[0].createUser({ username: 'after', password: 'pw' }), 21, 'the next user is 21: the losers spent no id')

  const chats = await Promise.all(stores.flatMap((store, s) => Array.from({ length: 10 }, (_, i) => store.createChat({ name: `c${s}.${i}`, adminId: 1 + ((s + i) % 20), userIds: [21] }))))
  t.same(chats.sort((a, b) => a - b), Array.from({ length: 40 }, (_, i) => i + 1), '4 stores x 10 createChat at once: chat ids 1..40')
  const missing = await answer(() => stores[1].createChat({ name: 'x', adminId: 1, userIds: [999] }))
  t.is(missing.code, 'LEVELKIT_NOT_FOUND', 'a chat with an unknown member is refused')
  t.is(await stores[2].createChat({ name: 'y', adminId: 1 }), 41, 'and spends no id')
  t.comment(`operations retried, per store: ${stores.map(store => store.retries).join(', ')}`)
})
