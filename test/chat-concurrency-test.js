// Concurrency of the chat reference model (lib/chat/chat-store.js): many
// ChatStore calls in flight at once, on LevelDB (classic-level), on LevelDB
// with syncReads: false (asynchronous reads inside the write path, as on
// browser-level) and on memory-level.
//
// - 200 racing createUser() of one username: exactly one wins.
// - 200 racing addChatMessage() to one chat: ids exactly 1..200.
// - Waves of random membership churn (add/remove members, create/delete
//   chats, messages) with maxMembers: 3; afterwards getChats(),
//   checkChatMember() and existsChat() agree with every chat's member list,
//   and store.check() is ok.
// - watch() while 100 messages are sent: every id after `after`, in order,
//   each once.
//
// Besides the public API, the messages are also read raw from their
// namespaces (lib/names.js layout), keys decoded with bytewise, not levelkit's
// own codec. Random choices come from a seeded PRNG: LEVELKIT_SEED=<n>
// reproduces a run's choices (not the interleaving).

import test from 'tape'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { open } from '../index.js'
import { ChatStore } from '../chat.js'
import { layout } from '../lib/names.js'
import { prng } from './util/prng.js'
import { hash, range, numeric, outcomes, rawEntries, rawChildren } from './util/common.js'
import { membershipProblems } from './util/chat-agreement.js'

const SEED = process.env.LEVELKIT_SEED ? Number(process.env.LEVELKIT_SEED) : Date.now() % 0x7fffffff
const VARIANTS = [{ backend: 'leveldb' }, { backend: 'leveldb', syncReads: false }, { backend: 'memory' }]
const FAST = { scryptN: 1024 }

// ---------------------------------------------------------------------------
// Helpers

/** Run `fn` once per variant with a fresh database and ChatStore. */
function each (name, fn, storeOptions = {}) {
  for (const options of VARIANTS) {
    const label = options.syncReads === false ? `${options.backend}, syncReads: false` : options.backend
    test(`chat: ${name} (${label})`, async t => {
      t.comment(`seed ${SEED} (reproduce with LEVELKIT_SEED=${SEED})`)
      const dir = options.backend === 'leveldb' ? fs.mkdtempSync(path.join(os.tmpdir(), 'levelkit-chat-concurrency-')) : undefined
      const db = await open(dir ? { ...options, location: dir } : options)
      try {
        const store = new ChatStore(db, { passwordCost: FAST, ...storeOptions })
        await fn(t, store, prng(SEED ^ hash(name)))
        await store.messages.settled()
      } finally {
        await db.close()
        if (dir) fs.rmSync(dir, { recursive: true, force: true })
      }
    })
  }
}

function shuffle (rand, list) {
  const out = [...list]
  for (let i = out.length - 1; i > 0; i--) {
    const j = rand.int(i + 1)
    ;[out[i], out[j]] = [out[j], out[i]]
  }
  return out
}

const sorted = list => [...list].sort(numeric)
const show = value => JSON.stringify(value)

async function assertCheckOk (t, store, what) {
  const result = await store.check()
  t.deepEqual(result.problems, [], `${what}: store.check() reports no problems`)
  t.is(result.ok, true, `${what}: store.check() is ok`)
}

async function makeUsers (store, n, prefix = 'user') {
  const ids = []
  for (let i = 0; i < n; i++) ids.push(await store.createUser({ username: `${prefix}${i}`, password: `pw${i}` }))
  return ids
}

/**
 * The messages of `chatId`: through getChatMessages(), ids must be exactly
 * 1..n, each message's id its position; returns them.
 */
async function messagesOf (t, store, chatId, what) {
  const messages = await store.getChatMessages(chatId, { from: 1, n: 100000 })
  const ids = messages.map(m => m.id)
  t.deepEqual(ids, range(1, messages.length), `${what}: message ids are 1..${messages.length} in order, no gap, no duplicate`)
  t.ok(messages.every(m => m.chatId === chatId), `${what}: every message names its chat`)
  return messages
}

// ---------------------------------------------------------------------------
// Users

each('200 concurrent createUser() with one username: exactly one wins', async (t, store) => {
  const results = await outcomes(range(0, 199).map(i => store.createUser({ username: 'alice', password: `secret-${i}` })))
  const won = results.map((r, i) => ({ ...r, i })).filter(r => r.ok)
  const lost = results.filter(r => !r.ok)
  t.is(won.length, 1, 'exactly one createUser() fulfils')
  t.is(lost.length, 199, '199 reject')
  t.deepEqual(lost.filter(r => r.code !== 'LEVELKIT_UNIQUE').map(r => `${r.code}: ${r.message}`), [], 'every rejection is LEVELKIT_UNIQUE')
  if (won.length !== 1) return

  const [{ value: id, i: winner }] = won
  t.is(id, 1, 'the winner got id 1')
  const user = await store.getUser('alice')
  t.is(user && user.id, id, 'getUser() returns the winner')
  t.is(user && user.username, 'alice', 'with its username')
  t.notOk(user && 'passwordHash' in user, 'without the password hash')
  t.deepEqual(await store.getUserById(id), user, 'getUserById() agrees')
  t.deepEqual(await store.verifyPassword('alice', `secret-${winner}`), user, "the stored password is the winner's")
  t.is(await store.verifyPassword('alice', `secret-${(winner + 1) % 200}`), null, "a loser's password does not verify")
  t.is(await store.users.count(), 1, 'one user stored')
  // The username index is covering: its entry holds the winner's record.
  t.deepEqual((await rawEntries(store.db, layout.index('users', 'username'))).map(([key, value]) => [key, JSON.parse(Buffer.from(value).toString('utf8')).id]),
    [[['alice'], id]], 'the raw username index has exactly one entry, holding the winner')
  t.is(await store.createUser({ username: 'bob', password: 'x' }), 2, 'the losers consumed no ids: the next user gets 2')
  await assertCheckOk(t, store, 'after 200 racing createUser()')
})

// ---------------------------------------------------------------------------
// Messages

each('200 concurrent addChatMessage() to one chat: ids exactly 1..200', async (t, store, rand) => {
  const members = await makeUsers(store, 5)
  const [outsider] = await makeUsers(store, 1, 'outsider')
  const chatId = await store.createChat({ name: 'busy', adminId: members[0], userIds: members.slice(1) })
  const created = (await store.getChat(chatId)).createdAt
  const n = 200
  // Timestamps after the chat's creation, in random order: lastActivity must
  // end at the largest, whichever message carries it and commits last.
  const timestamps = shuffle(rand, range(1, n).map(i => created + 1000 + i * 7))
  const sends = range(0, n - 1).map(i => ({ chatId, senderId: members[i % members.length], text: `message ${i}`, timestamp: timestamps[i] }))
  // Sends from a non-member, interleaved: each must be refused and consume no id.
  const calls = []
  for (const [i, message] of sends.entries()) {
    calls.push({ message, member: true })
    if (i % 10 === 5) calls.push({ message: { chatId, senderId: outsider, text: `intruder ${i}`, timestamp: created + 999999 }, member: false })
  }
  const results = await outcomes(calls.map(({ message }) => store.addChatMessage(message)))
  const memberResults = results.filter((r, i) => calls[i].member)
  const intruderResults = results.filter((r, i) => !calls[i].member)
  t.deepEqual(memberResults.filter(r => !r.ok).map(r => `${r.code}: ${r.message}`), [], 'every member send fulfils')
  t.ok(intruderResults.every(r => !r.ok && r.code === 'LEVELKIT_FORBIDDEN'), `every send of a non-member rejects with LEVELKIT_FORBIDDEN (${intruderResults.length})`)
  const ids = memberResults.map(r => r.value)
  t.deepEqual(sorted(ids), range(1, n), 'the resolved ids are exactly 1..200')

  const messages = await messagesOf(t, store, chatId, '200 racing sends')
  t.is(messages.length, n, '200 messages stored')
  const byId = new Map(messages.map(m => [m.id, m]))
  const wrong = sends.filter((message, i) => {
    const stored = byId.get(ids[i])
    return !stored || stored.text !== message.text || stored.senderId !== message.senderId || stored.timestamp !== message.timestamp
  })
  t.deepEqual(wrong, [], 'each send resolved with the id its own message is stored under')
  t.ok(messages.every(m => !m.text.startsWith('intruder')), 'no message of the non-member is stored')

  const raw = await rawChildren(store.db, layout.records('messages'))
  t.deepEqual(raw.map(([key]) => key), range(1, n).map(i => [chatId, i]), 'the raw messages are keyed [chat, 1..200]')
  t.ok(raw.every(([[, seq], value]) => JSON.parse(Buffer.from(value).toString('utf8')).id === seq), "each raw message's id equals its key's sequence number")

  const newest = await store.getChatMessages(chatId, { n: 500 })
  t.deepEqual(newest.map(m => m.id), range(1, n), 'getChatMessages(chat, { n: 500 }) gives all 200 in id order')
  t.deepEqual(newest.map((m, i) => m.id - i), Array(n).fill(1), "each message's id equals its position")
  const page = await store.getChatMessages(chatId, { to: 101, n: 30 })
  t.deepEqual(page.map(m => m.id), range(71, 100), 'a page below 101 is 71..100')

  const chat = await store.getChat(chatId)
  t.is(chat.lastActivity, Math.max(...timestamps), 'lastActivity is the largest timestamp sent')
  t.is(await store.messages.lastSeq(chatId), n, 'the sequence is at 200')
  t.is(await store.addChatMessage({ chatId, senderId: members[0], text: 'after' }), n + 1, 'the next send gets 201')
  await assertCheckOk(t, store, 'after 200 racing sends')
})

// ---------------------------------------------------------------------------
// Membership churn

const CHURN_ALLOWED = {
  add: ['LEVELKIT_LIMIT'],
  remove: [],
  create: ['LEVELKIT_LIMIT'],
  delete: [],
  message: ['LEVELKIT_FORBIDDEN', 'LEVELKIT_NOT_FOUND'],
  read: []
}

each('waves of concurrent membership churn keep every membership view consistent', async (t, store, rand) => {
  const USERS = 7
  const WAVES = 4
  const OPS = 160
  const users = await makeUsers(store, USERS)
  // Start with chats of 1, 2 and 3 members (maxMembers is 3).
  const initial = [[1], [1, 2], [2, 3], [3, 4, 5], [5, 6], [1, 6, 7]]
  /** @type {Set<number>} ids of every chat created so far */
  const created = new Set()
  for (const [i, [admin, ...rest]] of initial.entries()) {
    created.add(await store.createChat({ name: `initial ${i}`, adminId: users[admin - 1], userIds: rest.map(u => users[u - 1]) }))
  }
  let maxChatId = initial.length
  const deleted = new Set()
  /** @type {Map<number, Set<number>>} ids handed out by successful sends, per chat */
  const sent = new Map()
  const counts = { ok: 0, rejected: {}, true: 0, false: 0 }

  for (let wave = 0; wave < WAVES; wave++) {
    const chatIdsNow = maxChatId
    const ops = []
    for (let i = 0; i < OPS; i++) {
      // Also ids of chats that are created during this wave, or never.
      const c = 1 + rand.int(chatIdsNow + 4)
      const u = rand.pick(users)
      const r = rand() * 100
      if (r < 28) ops.push({ kind: 'add', run: () => store.addChatMember(c, u) })
      else if (r < 50) ops.push({ kind: 'remove', run: () => store.removeChatMember(c, u) })
      else if (r < 60) {
        const others = shuffle(rand, users).slice(0, rand.int(4))
        ops.push({ kind: 'create', run: () => store.createChat({ name: `w${wave}.${i}`, adminId: u, userIds: others }) })
        maxChatId++
      } else if (r < 66) ops.push({ kind: 'delete', run: () => store.deleteChat(c) })
      else if (r < 94) ops.push({ kind: 'message', c, run: () => store.addChatMessage({ chatId: c, senderId: u, text: `w${wave}.${i}` }) })
      else {
        const v = rand.pick(users)
        ops.push({ kind: 'read', run: () => Promise.all([store.existsChat(u, v), store.getChats(u), store.checkChatMember(c, u), store.getChatMessages(c)]) })
      }
    }
    const results = await outcomes(ops.map(op => op.run()))
    const bad = []
    for (const [i, result] of results.entries()) {
      const op = ops[i]
      if (!result.ok) {
        if (!CHURN_ALLOWED[op.kind].includes(result.code)) bad.push(`${op.kind}: ${result.code} ${result.message}`)
        counts.rejected[result.code] = (counts.rejected[result.code] || 0) + 1
        continue
      }
      counts.ok++
      if (typeof result.value === 'boolean') counts[result.value]++
      if (op.kind === 'message') {
        if (!sent.has(op.c)) sent.set(op.c, new Set())
        const ids = sent.get(op.c)
        if (ids.has(result.value)) bad.push(`message id ${result.value} of chat ${op.c} handed out twice`)
        ids.add(result.value)
      }
    }
    t.deepEqual(bad, [], `wave ${wave}: only expected rejections (${show(counts.rejected)} so far), no id handed out twice`)
    const createdIds = results.filter((r, i) => r.ok && ops[i].kind === 'create').map(r => r.value)
    t.ok(createdIds.every(id => id <= maxChatId && !created.has(id)) && new Set(createdIds).size === createdIds.length, `wave ${wave}: created chats got distinct new ids`)
    for (const id of createdIds) created.add(id)

    t.deepEqual(await membershipProblems(store, await store.chats.query().all(), users, maxChatId + 3), [], `wave ${wave}: getChats, checkChatMember, existsChat, members.to/from agree with every chat's members`)
    await assertCheckOk(t, store, `wave ${wave}`)

    const live = new Set((await store.chats.query().all()).map(c => c.id))
    for (const c of created) if (!live.has(c)) deleted.add(c)
    t.ok([...live].every(c => created.has(c)), `wave ${wave}: every chat stored was created by a createChat() that fulfilled`)
    for (const c of live) {
      const messages = await store.getChatMessages(c, { from: 1, n: 100000 })
      const ids = messages.map(m => m.id)
      const want = sorted(sent.get(c) || [])
      if (show(ids) !== show(range(1, ids.length)) || show(ids) !== show(want)) {
        t.fail(`wave ${wave}: chat ${c} has message ids ${show(ids)}, the sends resolved with ${show(want)}`)
      }
      const chat = await store.getChat(c)
      const newest = Math.max(chat.createdAt, ...messages.map(m => m.timestamp))
      if (chat.lastActivity !== newest) t.fail(`wave ${wave}: chat ${c} has lastActivity ${chat.lastActivity}, expected ${newest}`)
    }
    for (const c of deleted) {
      if (await store.getChat(c) !== null) t.fail(`chat ${c} is gone from the chats but getChat() finds it`)
      if (await store.getChatMessages(c) !== null) t.fail(`deleted chat ${c}: getChatMessages() is not null`)
      sent.delete(c)
    }
    t.pass(`wave ${wave}: message ids of live chats are exactly the ids the sends resolved with, lastActivity is the newest message`)
  }

  await store.messages.settled()
  const left = (await rawChildren(store.db, layout.records('messages'))).filter(([[c]]) => deleted.has(c))
  t.deepEqual(left, [], `after settled(), no raw message of the ${deleted.size} deleted chats remains`)
  t.deepEqual(await rawEntries(store.db, layout.purge('messages')), [], 'after settled(), nothing is left to purge')
  t.ok(counts.true > 0 && counts.false > 0, `membership calls both changed and did not change something (${counts.true} / ${counts.false})`)
  t.ok(counts.rejected.LEVELKIT_LIMIT > 0, `full rooms refused members (${counts.rejected.LEVELKIT_LIMIT || 0} LEVELKIT_LIMIT)`)
  t.ok(counts.rejected.LEVELKIT_FORBIDDEN > 0 && counts.rejected.LEVELKIT_NOT_FOUND > 0, 'non-members and missing chats were refused sends')
  t.ok(deleted.size > 0, `chats were deleted (${deleted.size})`)
  t.comment(`${counts.ok} calls fulfilled (${counts.true} true, ${counts.false} false), rejected: ${show(counts.rejected)}`)
  await assertCheckOk(t, store, 'after the churn')
}, { maxMembers: 3 })

// ---------------------------------------------------------------------------
// watch()

each('watch() during 100 concurrent sends delivers every id after `after`, in order, once', async (t, store) => {
  const [a, b, c] = await makeUsers(store, 3)
  const chatId = await store.createChat({ name: 'watched', adminId: a, userIds: [b, c] })
  for (let i = 0; i < 10; i++) await store.addChatMessage({ chatId, senderId: a, text: `before ${i}` })
  const before = await store.getChatMessages(chatId)
  const lastIdReadBefore = before[before.length - 1].id
  t.is(lastIdReadBefore, 10, '10 messages before the watch')
  const total = lastIdReadBefore + 100

  const controller = new AbortController()
  const own = new AbortController()
  // Should a watch miss a message, end it instead of hanging: its list is then short.
  const timeout = setTimeout(() => { controller.abort(); own.abort() }, 15000)
  /** Collect a watch until it has `want` messages (then abort it) or it ends. */
  const collect = async (iterator, want, stop) => {
    const got = []
    for await (const message of iterator) {
      got.push(message)
      if (got.length === want && stop) stop()
    }
    return got
  }
  const fromLast = collect(store.watch(chatId, { after: lastIdReadBefore, signal: controller.signal }), 100, null)
  const backlog = collect(store.watch(chatId, { after: 4, signal: own.signal }), total - 4, () => own.abort())
  // Ends by itself when the chat is deleted.
  const untilDeleted = collect(store.watch(chatId, { after: 0, signal: controller.signal }), -1, null)

  const senders = [a, b, c]
  const results = await outcomes(range(0, 99).map(i => store.addChatMessage({ chatId, senderId: senders[i % 3], text: `during ${i}` })))
  t.ok(results.every(r => r.ok), '100 sends fulfil')
  t.deepEqual(sorted(results.map(r => r.value)), range(lastIdReadBefore + 1, total), 'they got ids 11..110')

  const backlogGot = await backlog
  t.deepEqual(backlogGot.map(m => m.id), range(5, total), 'a watch with after: 4 delivers 5..110 in order, each once')
  t.ok(backlogGot.every(m => m.chatId === chatId && typeof m.text === 'string'), 'as whole messages')

  // Let the first watch run a while past the last message: nothing more may come.
  await new Promise(resolve => setTimeout(resolve, 50))
  const deletedOk = await store.deleteChat(chatId)
  t.is(deletedOk, true, 'the chat is deleted')
  const allGot = await untilDeleted
  t.deepEqual(allGot.map(m => m.id), range(1, total), 'a watch with after: 0 delivers 1..110 and ends when the chat is deleted')
  controller.abort()
  const lastGot = await fromLast
  clearTimeout(timeout)
  t.deepEqual(lastGot.map(m => m.id), range(lastIdReadBefore + 1, total), 'a watch with after: lastIdReadBefore delivers exactly 11..110 in order, each once')
  const texts = new Map(results.map((r, i) => [r.value, `during ${i}`]))
  t.ok(lastGot.every(m => texts.get(m.id) === m.text), 'each delivered message is the one its send resolved with')
  await assertCheckOk(t, store, 'after the watched sends')
})
