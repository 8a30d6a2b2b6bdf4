// Messages over real HTTP: POST and GET /api/chats/:id/messages, pages
// (from, to, n), members only, and whispers that reach only their sender
// and recipients.
import test from 'tape'
import { startServer, signUp } from './util.js'

/** @param {any} answer */
const code = answer => [answer.status, answer.body?.error?.code]
/** @param {any[]} messages */
const ids = messages => messages.map(m => m.id)

test('POST /api/chats/:id/messages: 201 with the message, ids 1, 2, 3...; GET pages them', async t => {
  const server = await startServer()
  const { api } = server
  try {
    const ann = await signUp(api, 'ann')
    const bob = await signUp(api, 'bob')
    const chat = (await api('POST', '/api/chats', { token: ann.token, body: { name: 'x', members: ['bob'] } })).body
    const before = Date.now()
    const first = await api('POST', `/api/chats/${chat.id}/messages`, { token: ann.token, body: { text: 'hello 👋' } })
    t.is(first.status, 201)
    t.same(Object.keys(first.body).sort(), ['chatId', 'id', 'senderId', 'text', 'timestamp'])
    t.same([first.body.id, first.body.chatId, first.body.senderId, first.body.text], [1, chat.id, ann.id, 'hello 👋'])
    t.ok(first.body.timestamp >= before && first.body.timestamp <= Date.now())
    for (let i = 2; i <= 12; i++) {
      const sent = await api('POST', `/api/chats/${chat.id}/messages`, { token: i % 2 ? ann.token : bob.token, body: { text: `m${i}` } })
      t.is(sent.body.id, i, `message ${i}`)
    }
    const stored = await server.store.getChatMessages(chat.id, { n: 1 })
    t.same(stored?.[0].text, 'm12', 'stored')

    const page = await api('GET', `/api/chats/${chat.id}/messages`, { token: bob.token })
    t.is(page.status, 200)
    t.same(page.body[0], first.body, 'as sent')
    t.same(ids(page.body), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], 'all, ascending (n defaults to 50)')
    t.same(ids((await api('GET', `/api/chats/${chat.id}/messages?n=5`, { token: bob.token })).body), [8, 9, 10, 11, 12], 'n: the newest n')
    t.same(ids((await api('GET', `/api/chats/${chat.id}/messages?to=8&n=3`, { token: bob.token })).body), [5, 6, 7], 'to: just below it')
    t.same(ids((await api('GET', `/api/chats/${chat.id}/messages?from=3&n=2`, { token: bob.token })).body), [3, 4], 'from: up from it')
    t.same(ids((await api('GET', `/api/chats/${chat.id}/messages?from=11&to=12`, { token: bob.token })).body), [11], 'from and to')
    t.same((await api('GET', `/api/chats/${chat.id}/messages?from=13`, { token: bob.token })).body, [], 'past the end: []')
    t.same(ids((await api('GET', `/api/chats/${chat.id}/messages?n=100`, { cookie: ann.token })).body).length, 12, 'n up to 100, by cookie')

    const chats = (await api('GET', '/api/chats', { token: ann.token })).body
    t.is(chats[0].lastActivity, stored?.[0].timestamp, 'the chat\'s lastActivity is its last message\'s')
  } finally {
    await server.close()
  }
})

test('messages: members only (403), 404 for no chat, 400 for bad input; nothing written', async t => {
  const server = await startServer()
  const { api } = server
  try {
    const ann = await signUp(api, 'ann')
    const eve = await signUp(api, 'eve')
    const chat = (await api('POST', '/api/chats', { token: ann.token, body: { name: 'x', members: [] } })).body
    await api('POST', `/api/chats/${chat.id}/messages`, { token: ann.token, body: { text: 'mine' } })

    t.same(code(await api('POST', `/api/chats/${chat.id}/messages`, { token: eve.token, body: { text: 'hi' } })), [403, 'LEVELKIT_FORBIDDEN'], 'a non-member cannot send')
    t.same(code(await api('GET', `/api/chats/${chat.id}/messages`, { token: eve.token })), [403, 'FORBIDDEN'], 'nor read')
    t.same(code(await api('POST', '/api/chats/9/messages', { token: ann.token, body: { text: 'hi' } })), [404, 'LEVELKIT_NOT_FOUND'], 'no chat: 404')
    t.same(code(await api('GET', '/api/chats/9/messages', { token: ann.token })), [404, 'NOT_FOUND'])
    t.same(code(await api('POST', `/api/chats/${chat.id}/messages`, { token: ann.token, body: { text: 'x'.repeat(201) } })), [400, 'LEVELKIT_INVALID'], '201 characters: 400')
    t.is((await api('POST', `/api/chats/${chat.id}/messages`, { token: ann.token, body: { text: '😀'.repeat(200) } })).status, 201, '200 emoji: 201')
    const bad = [{}, { text: '' }, { text: 5 }, { text: ['hi'] }, { text: 'x'.repeat(2001) }, { text: 'hi', to: [] }, { text: 'hi', to: [0] },
      { text: 'hi', to: ['2'] }, { text: 'hi', to: [1.5] }, { text: 'hi', to: 2 }, { text: 'hi', senderId: 2 }, { text: 'hi', timestamp: 1 }]
    for (const body of bad) {
      const answer = await api('POST', `/api/chats/${chat.id}/messages`, { token: ann.token, body })
      t.is(answer.status, 400, `${JSON.stringify(body).slice(0, 60)}: 400 ${answer.body?.error?.message}`)
    }
    for (const query of ['n=0', 'n=101', 'n=abc', 'n=5&n=6', 'from=0', 'to=-1', 'from=1.5', 'after=1', 'viewerId=2']) {
      t.is((await api('GET', `/api/chats/${chat.id}/messages?${query}`, { token: ann.token })).status, 400, `?${query}: 400`)
    }
    t.same(ids(await server.store.getChatMessages(chat.id, { viewerId: ann.id }) ?? []), [1, 2], 'only the two good messages')
  } finally {
    await server.close()
  }
})

test('whispers over HTTP reach only their sender and recipients', async t => {
  const server = await startServer()
  const { api } = server
  try {
    const ann = await signUp(api, 'ann')
    const bob = await signUp(api, 'bob')
    const carol = await signUp(api, 'carol')
    const eve = await signUp(api, 'eve')
    const chat = (await api('POST', '/api/chats', { token: ann.token, body: { name: 'x', members: ['bob', 'carol'] } })).body
    await api('POST', `/api/chats/${chat.id}/messages`, { token: ann.token, body: { text: 'to all' } })
    const whisper = await api('POST', `/api/chats/${chat.id}/messages`, { token: ann.token, body: { text: 'psst bob', to: [bob.id, bob.id] } })
    t.is(whisper.status, 201)
    t.same(whisper.body.recipients, [bob.id], 'a whisper names its recipients, once each')
    const toTwo = await api('POST', `/api/chats/${chat.id}/messages`, { token: carol.token, body: { text: 'psst both', to: [bob.id, ann.id] } })
    t.same(toTwo.body.recipients, [ann.id, bob.id], 'sorted')
    await api('POST', `/api/chats/${chat.id}/messages`, { token: bob.token, body: { text: 'to all again' } })

    /** @param {string} token @param {string} [query] */
    const seen = async (token, query = '') => (await api('GET', `/api/chats/${chat.id}/messages${query}`, { token })).body.map((/** @type {any} */ m) => m.text)
    t.same(await seen(ann.token), ['to all', 'psst bob', 'psst both', 'to all again'], 'the sender and a recipient see theirs')
    t.same(await seen(bob.token), ['to all', 'psst bob', 'psst both', 'to all again'], 'the recipient sees both')
    t.same(await seen(carol.token), ['to all', 'psst both', 'to all again'], 'carol sees only her own whisper')
    t.same(await seen(carol.token, '?n=2'), ['psst both', 'to all again'], 'pages count only what the reader sees')
    t.same(await seen(carol.token, '?to=4&n=2'), ['to all', 'psst both'], 'going back past a hidden whisper')
    t.is((await api('GET', `/api/chats/${chat.id}/messages`, { token: eve.token })).status, 403, 'a non-member sees nothing')

    t.same(code(await api('POST', `/api/chats/${chat.id}/messages`, { token: ann.token, body: { text: 'psst eve', to: [eve.id] } })), [403, 'LEVELKIT_FORBIDDEN'], 'a whisper to a non-member: 403')
    t.same(code(await api('POST', `/api/chats/${chat.id}/messages`, { token: ann.token, body: { text: 'psst', to: [99] } })), [403, 'LEVELKIT_FORBIDDEN'], 'to an unknown user: 403')
    t.is((await server.store.getChatMessages(chat.id, { viewerId: ann.id }))?.length, 4, 'nothing written for them')
  } finally {
    await server.close()
  }
})

test('a chatbot command over HTTP: answered to the sender alone with 200, not stored; members only', async t => {
  const server = await startServer()
  const { api } = server
  try {
    const ann = await signUp(api, 'ann')
    const bob = await signUp(api, 'bob')
    const cat = await signUp(api, 'cat')
    const chat = (await api('POST', '/api/chats', { token: ann.token, body: { name: 'x', members: ['bob'] } })).body
    const put = await api('POST', `/api/chats/${chat.id}/messages`, { token: ann.token, body: { text: '/put colour blue green' } })
    t.is(put.status, 200, 'a command is answered with 200, not 201')
    t.same(put.body.result, { command: 'put', key: 'colour', value: 'blue green' })
    t.same([put.body.bot.bot, put.body.bot.senderId, put.body.bot.recipients], [true, 0, [ann.id]], 'from the bot, to the sender alone')
    const got = await api('POST', `/api/chats/${chat.id}/messages`, { token: bob.token, body: { text: '/get colour' } })
    t.same(got.body.result, { command: 'get', key: 'colour', value: 'blue green' }, 'another member reads the chat\'s key')
    t.same((await api('GET', `/api/chats/${chat.id}/messages`, { token: ann.token })).body, [], 'no command and no answer is stored')
    const stranger = await api('POST', `/api/chats/${chat.id}/messages`, { token: cat.token, body: { text: '/get colour' } })
    t.same([stranger.status, stranger.body.error.code], [403, 'LEVELKIT_FORBIDDEN'], 'not a member: 403')
    t.is((await api('POST', `/api/chats/${chat.id}/messages`, { token: ann.token, body: { text: 'put is no command' } })).status, 201, 'plain text is a message')
  } finally {
    await server.close()
  }
})
