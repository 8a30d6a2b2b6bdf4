// bench/lib/map-chat-store.js answers like ChatStore for what
// bench/chat-server.js asks of it: the data set filled in the same order,
// then every user's chats, every chat's last 50 messages for a member
// (whispers included), membership, and the same again after more messages.

import test from 'tape'
import { open } from 'levelkit'
import { ChatStore } from 'levelkit/chat'
import { prng } from 'levelkit-testkit/prng'
import { MapChatStore } from '../lib/map-chat-store.js'
import { makeWorkload } from '../lib/chat-workload-worker.js'

test('the Maps store answers the benchmark\'s calls as ChatStore does', async t => {
  // Date.now() as both stores see it: frozen while they are filled, given
  // back as it was (another test file may have frozen it too).
  const before = Date.now
  const now = before()
  t.teardown(() => { Date.now = before })
  const db = await open({ backend: 'memory' })
  const stores = [await ChatStore.open(db, { passwordCost: { scryptN: 16, pbkdf2Iterations: 1000 } }), new MapChatStore()]
  const work = makeWorkload({ users: 60, chats: 12, members: 8, messages: 400, seed: 3, pairChats: 0, run: 1, n: {} })
  const random = prng(5)
  // Some messages are whispers to one or two members.
  const messages = work.messages.map(m => random() < 0.2 ? { ...m, recipients: [work.members[m.chatId - 1][random.int(8)], work.members[m.chatId - 1][0]] } : m)
  const tokens = work.users.map((_, i) => `token-${String(i + 1).padStart(16, '0')}`)
  for (const store of stores) {
    // Chats created before every message (the workload's timestamps start a
    // minute from now), at one instant on both stores.
    Date.now = () => 1_700_000_000_000
    for (const user of work.users) await store.createUser(user)
    for (const chat of work.chats) await store.createChat(chat)
    for (const message of messages.slice(0, 300)) await store.addChatMessage(message)
    for (const [i, sessionId] of tokens.entries()) await store.setUserSession({ sessionId, userId: i + 1, expiry: now + (i % 7 === 0 ? -1 : 3600e3) })
  }
  const answers = async (/** @type {any} */ store) => {
    const out = []
    for (const token of tokens) out.push(await store.getUserFromSession(token))
    out.push(await store.getUserFromSession('token-none-0000000000'))
    for (let userId = 1; userId <= work.users.length; userId++) out.push(await store.getChats(userId))
    for (let chatId = 1; chatId <= work.chats.length + 1; chatId++) {
      for (const viewerId of [...(work.members[chatId - 1] ?? [1]), 59]) {
        out.push(await store.checkChatMember(chatId, viewerId))
        out.push(await store.getChatMessages(chatId, { n: 50, viewerId }))
      }
    }
    return out
  }
  Date.now = before
  const first = [await answers(stores[1]), await answers(stores[0])]
  const at = first[0].findIndex((answer, i) => JSON.stringify(answer) !== JSON.stringify(first[1][i]))
  t.is(at, -1, at === -1 ? 'the same answers' : `answer ${at} differs: ${JSON.stringify(first[0][at]).slice(0, 400)} vs ${JSON.stringify(first[1][at]).slice(0, 400)}`)
  for (const store of stores) {
    for (const message of messages.slice(300)) await store.addChatMessage({ ...message, timestamp: message.timestamp - 1e6 })
  }
  const [maps, levelkit] = [await answers(stores[1]), await answers(stores[0])]
  t.ok(maps.length > 300, `${maps.length} answers`)
  t.same(maps, levelkit, 'the same answers after more messages, some with older timestamps')
  await db.close()
})
