// Many clients at once over HTTP: 200 concurrent registrations of one
// username get exactly one 201 and 199 409s; concurrent senders to one chat
// get gap-free ids.
import test from 'tape'
import { startServer, signUp } from './util.js'

test('200 concurrent registrations of one username: one 201, 199 409', async t => {
  const server = await startServer()
  const { api } = server
  try {
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => api('POST', '/api/users', { body: { username: 'popular', password: `pw${i}` } })))
    const statuses = answers.map(answer => answer.status)
    t.is(statuses.filter(status => status === 201).length, 1, 'one 201')
    t.is(statuses.filter(status => status === 409).length, 199, '199 409')
    t.ok(answers.filter(answer => answer.status === 409).every(answer => answer.body.error.code === 'LEVELKIT_UNIQUE'), 'each LEVELKIT_UNIQUE')
    const winner = answers.findIndex(answer => answer.status === 201)
    const user = await server.store.verifyPassword('popular', `pw${winner}`)
    t.is(user?.id, answers[winner].body.id, 'the user is the winner\'s, with the winner\'s password')
    const next = await api('POST', '/api/users', { body: { username: 'next', password: 'pw' } })
    t.is(next.body.id, answers[winner].body.id + 1, 'one user was created')
    t.same((await server.store.check()).problems, [], 'check() finds nothing wrong')
  } finally {
    await server.close()
  }
})

test('100 concurrent messages to one chat from 4 members: ids 1 to 100, each acknowledged once', async t => {
  const server = await startServer()
  const { api } = server
  try {
    const users = [await signUp(api, 'ann'), await signUp(api, 'bob'), await signUp(api, 'carol'), await signUp(api, 'dan')]
    const chat = (await api('POST', '/api/chats', { token: users[0].token, body: { name: 'busy', members: ['bob', 'carol', 'dan'] } })).body
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => api('POST', `/api/chats/${chat.id}/messages`, { token: users[i % 4].token, body: { text: `m${i}` } })))
    t.ok(answers.every(answer => answer.status === 201), 'all 201')
    t.same(answers.map(answer => answer.body.id).sort((a, b) => a - b), Array.from({ length: 100 }, (_, i) => i + 1), 'ids 1..100')
    const page = (await api('GET', `/api/chats/${chat.id}/messages?n=100`, { token: users[1].token })).body
    t.same(page.map((/** @type {any} */ m) => [m.id, m.text]), answers.map(answer => [answer.body.id, answer.body.text]).sort((a, b) => a[0] - b[0]), 'stored as acknowledged')
  } finally {
    await server.close()
  }
})
