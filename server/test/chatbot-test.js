// The chatbot's command parser, its run against a chat's key-value
// namespace, and that namespace (levelkitKv) on a levelkit database.
import test from 'tape'
import { open, codes } from 'levelkit'
import { ChatStore } from 'levelkit/chat'
import { levelkitKv, MAX_KEY_LENGTH, MAX_VALUE_LENGTH } from '../lib/kv.js'
import { parseCommand, runChatbot, BOT_SENDER_ID } from '../lib/chatbot.js'

// Hashing at the lowest cost: these tests are not about passwords.
const FAST = { passwordCost: { scryptN: 2, pbkdf2Iterations: 1 } }

async function setup () {
  const db = await open()
  const store = await ChatStore.open(db, FAST)
  const kv = levelkitKv(db)
  const ann = await store.createUser({ username: 'ann', password: 'a' })
  const bob = await store.createUser({ username: 'bob', password: 'b' })
  const eve = await store.createUser({ username: 'eve', password: 'e' })
  const chatId = await store.createChat({ name: 'ann & bob', adminId: ann, userIds: [bob] })
  return { db, store, kv, ann, bob, eve, chatId }
}

/**
 * @param {import('tape').Test} t @param {() => Promise<unknown>} fn @param {string} code @param {string} what
 */
async function rejects (t, fn, code, what) {
  try {
    await fn()
    t.fail(`${what}: expected ${code}`)
  } catch (err) {
    t.is(/** @type {any} */ (err).code, code, what)
  }
}

test('parseCommand: /put, /get and /del with their arguments', t => {
  t.same(parseCommand('/put color blue'), { command: 'put', key: 'color', value: 'blue' })
  t.same(parseCommand('/put note  hello  world  '), { command: 'put', key: 'note', value: 'hello  world' }, 'the value is the rest of the text, trimmed')
  t.same(parseCommand('/put k v\nmore'), { command: 'put', key: 'k', value: 'v\nmore' }, 'a value may span lines')
  t.same(parseCommand('/get color'), { command: 'get', key: 'color' })
  t.same(parseCommand('/get\tcolor '), { command: 'get', key: 'color' }, 'any whitespace separates')
  t.same(parseCommand('/del color'), { command: 'del', key: 'color' })
  t.end()
})

test('parseCommand: a command with the wrong arguments gets its usage', t => {
  t.same(parseCommand('/put'), { command: 'put', usage: 'Usage: /put <key> <value>' })
  t.same(parseCommand('/put key'), { command: 'put', usage: 'Usage: /put <key> <value>' })
  t.same(parseCommand('/get'), { command: 'get', usage: 'Usage: /get <key>' })
  t.same(parseCommand('/get a b'), { command: 'get', usage: 'Usage: /get <key>' })
  t.same(parseCommand('/del '), { command: 'del', usage: 'Usage: /del <key>' })
  t.end()
})

test('parseCommand: other text is not a command', t => {
  for (const text of ['hello', '/putter x', '/getx', 'hi /get x', ' /get x', '/GET x', '/me waves', '/', '']) {
    t.is(parseCommand(text), null, JSON.stringify(text))
  }
  t.end()
})

test('levelkitKv: put, get and del in a namespace per chat', async t => {
  const { db, kv } = await setup()
  t.is(await kv.get(1, 'color'), undefined, 'nothing there')
  t.is(await kv.put(1, 'color', 'blue'), undefined)
  t.is(await kv.get(1, 'color'), 'blue')
  await kv.put(1, 'color', 'green')
  t.is(await kv.get(1, 'color'), 'green', 'put replaces')
  await kv.put(2, 'color', 'red')
  t.is(await kv.get(1, 'color'), 'green', "each chat has its own keys: chat 2's color is not chat 1's")
  t.is(await kv.get(2, 'color'), 'red')
  t.is(await kv.del(1, 'color'), true, 'del of a key there')
  t.is(await kv.del(1, 'color'), false, 'del of a key not there')
  t.is(await kv.get(1, 'color'), undefined)
  t.is(await kv.get(2, 'color'), 'red', "chat 2's key stays")
  await db.close()
})

test('levelkitKv: its namespace is one of its own on the same database, beside a ChatStore', async t => {
  const db = await open()
  const kv = levelkitKv(db)
  await kv.put(1, 'k', 'v')
  const keys = await db.level.keys({ gte: '!chatbotKv!', lt: '!chatbotKv"', keyEncoding: 'utf8' }).all()
  t.is(keys.length, 1, 'one key, in the chatbotKv namespace')
  const store = await ChatStore.open(db, FAST)
  t.pass('a ChatStore opens on the database: the entries are not in its namespaces')
  await store.createUser({ username: 'ann', password: 'a' })
  t.is((await store.check()).ok, true, 'and it checks')
  t.is((await db.check()).ok, true, 'so does the database')
  t.is(await kv.get(1, 'k'), 'v')
  await db.close()
})

test('levelkitKv: bad input is refused with LEVELKIT_INVALID and writes nothing', async t => {
  const { db, kv } = await setup()
  for (const chatId of [0, -1, 1.5, '1', null, undefined, NaN]) {
    await rejects(t, () => kv.put(/** @type {any} */ (chatId), 'k', 'v'), codes.INVALID, `chatId ${String(chatId)}`)
    await rejects(t, () => kv.get(/** @type {any} */ (chatId), 'k'), codes.INVALID, `get, chatId ${String(chatId)}`)
    await rejects(t, () => kv.del(/** @type {any} */ (chatId), 'k'), codes.INVALID, `del, chatId ${String(chatId)}`)
  }
  for (const key of ['', 'k'.repeat(MAX_KEY_LENGTH + 1), 5, null, undefined, ['k'], '\ud800']) {
    await rejects(t, () => kv.put(1, /** @type {any} */ (key), 'v'), codes.INVALID, `key ${JSON.stringify(key)}`)
    await rejects(t, () => kv.get(1, /** @type {any} */ (key)), codes.INVALID, `get, key ${JSON.stringify(key)}`)
    await rejects(t, () => kv.del(1, /** @type {any} */ (key)), codes.INVALID, `del, key ${JSON.stringify(key)}`)
  }
  for (const value of ['v'.repeat(MAX_VALUE_LENGTH + 1), 5, null, undefined, { a: 1 }, 'x\udc00']) {
    await rejects(t, () => kv.put(1, 'k', /** @type {any} */ (value)), codes.INVALID, `value ${JSON.stringify(value)}`)
  }
  t.is(await kv.get(1, 'k'), undefined, 'nothing was written')
  const emoji = '😀'.repeat(MAX_KEY_LENGTH)
  await kv.put(1, emoji, '😀'.repeat(MAX_VALUE_LENGTH))
  t.is(await kv.get(1, emoji), '😀'.repeat(MAX_VALUE_LENGTH), 'lengths are in characters: an emoji is one')
  await db.close()
})

test('runChatbot: runs a member\'s command on the chat\'s namespace and answers them alone', async t => {
  const { db, store, kv, ann, chatId } = await setup()
  const put = await runChatbot({ store, kv, chatId, userId: ann, text: '/put color blue', now: 1000 })
  t.same(put, {
    message: { chatId, senderId: BOT_SENDER_ID, bot: true, text: 'Saved color = blue', timestamp: 1000, recipients: [ann] },
    result: { command: 'put', key: 'color', value: 'blue' }
  }, 'a whisper from the bot to the sender, not stored, with the result')
  t.is(await kv.get(chatId, 'color'), 'blue', 'in the chat\'s namespace')
  t.same((await runChatbot({ store, kv, chatId, userId: ann, text: '/get color' }))?.result, { command: 'get', key: 'color', value: 'blue' })
  t.is((await runChatbot({ store, kv, chatId, userId: ann, text: '/get color' }))?.message.text, 'color = blue')
  t.same((await runChatbot({ store, kv, chatId, userId: ann, text: '/del color' }))?.result, { command: 'del', key: 'color', deleted: true })
  const del = await runChatbot({ store, kv, chatId, userId: ann, text: '/del color' })
  t.same([del?.message.text, del?.result], ['color is not set', { command: 'del', key: 'color', deleted: false }])
  const get = await runChatbot({ store, kv, chatId, userId: ann, text: '/get color' })
  t.same([get?.message.text, get?.result], ['color is not set', { command: 'get', key: 'color', value: null }])
  const usage = await runChatbot({ store, kv, chatId, userId: ann, text: '/put color' })
  t.same([usage?.message.text, usage?.result], ['Usage: /put <key> <value>', { command: 'put', error: { code: 'BAD_REQUEST', message: 'Usage: /put <key> <value>' } }])
  const long = /** @type {any} */ (await runChatbot({ store, kv, chatId, userId: ann, text: `/get ${'k'.repeat(MAX_KEY_LENGTH + 1)}` }))
  t.is(long.result.error.code, codes.INVALID, 'what the store refuses is answered by the bot')
  t.is(long.message.text, long.result.error.message)
  t.same(await store.getChatMessages(chatId), [], 'no command was stored as chat text')
  t.is(await runChatbot({ store, kv, chatId, userId: ann, text: 'hello' }), null, 'not a command')
  await db.close()
})

test('runChatbot: only members run commands', async t => {
  const { db, store, kv, eve, chatId } = await setup()
  await rejects(t, () => runChatbot({ store, kv, chatId, userId: eve, text: '/put color red' }), codes.FORBIDDEN, 'a non-member')
  await rejects(t, () => runChatbot({ store, kv, chatId: 99, userId: eve, text: '/get color' }), codes.FORBIDDEN, 'a chat that does not exist')
  t.is(await kv.get(chatId, 'color'), undefined, 'nothing written')
  await db.close()
})
