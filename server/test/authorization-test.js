// Authorization on every route that needs a session: without one, with a
// wrong, malformed, removed or expired token, and with one given by cookie
// or by bearer token; and members-only or admin-only answers (403) by route.
import test from 'tape'
import { startServer, signUp } from './util.js'

test('every route but registration and login answers 401 without a valid session, by cookie or bearer token', async t => {
  const server = await startServer()
  const { api, store } = server
  try {
    const ann = await signUp(api, 'ann')
    const bob = await signUp(api, 'bob')
    const chat = (await api('POST', '/api/chats', { token: ann.token, body: { name: 'x', members: ['bob'] } })).body
    await api('POST', `/api/chats/${chat.id}/messages`, { token: ann.token, body: { text: 'hi' } })
    const expired = await store.setUserSession({ userId: ann.id, expiry: Date.now() - 1 })
    const removed = await store.setUserSession({ userId: ann.id, expiry: Date.now() + 60000 })
    await store.removeSession(removed)

    /** Each route with a request that succeeds with ann's session (the deletes last). */
    const routes = [
      ['GET', '/api/me', undefined, 200],
      ['GET', '/api/users/bob', undefined, 200],
      ['GET', '/api/chats', undefined, 200],
      ['POST', '/api/chats', { name: 'y', members: [] }, 201],
      ['GET', `/api/chats/${chat.id}`, undefined, 200],
      ['POST', `/api/chats/${chat.id}/members`, { username: 'bob' }, 204],
      ['GET', `/api/chats/${chat.id}/messages`, undefined, 200],
      ['POST', `/api/chats/${chat.id}/messages`, { text: 'hello' }, 201],
      ['GET', `/api/direct-chats/${bob.id}`, undefined, 200],
      ['DELETE', `/api/chats/${chat.id}/members/${bob.id}`, undefined, 204],
      ['DELETE', `/api/chats/${chat.id}`, undefined, 204],
      ['DELETE', '/api/sessions/current', undefined, 204]
    ]
    const wrong = [
      ['no credentials', {}],
      ['an unknown token', { token: 'f'.repeat(32) }],
      ['an unknown cookie', { cookie: 'f'.repeat(32) }],
      ['a malformed token', { token: 'not a token!' }],
      ['a token too short', { token: 'abc' }],
      ['an empty bearer', { headers: { authorization: 'Bearer ' } }],
      ['basic auth', { headers: { authorization: `Basic ${Buffer.from('ann:pw-ann').toString('base64')}` } }],
      ['an expired session', { token: expired }],
      ['a removed session', { token: removed }],
      ['an expired session by cookie', { cookie: expired }],
      ['a token in the query string', { query: `?token=${ann.token}` }],
      ['a wrong bearer beside a good cookie', { token: 'f'.repeat(32), cookie: ann.token }]
    ]
    const messagesBefore = (await store.getChatMessages(chat.id, { viewerId: ann.id }))?.length
    for (const [method, path, body] of routes) {
      for (const [what, options] of wrong) {
        const { query = '', ...rest } = /** @type {any} */ (options)
        const answer = await api(/** @type {string} */ (method), path + query, { body, ...rest })
        t.same([answer.status, answer.body?.error?.code], [401, 'UNAUTHORIZED'], `${method} ${path}, ${what}: 401`)
      }
    }
    t.is((await store.getChatMessages(chat.id, { viewerId: ann.id }))?.length, messagesBefore, 'nothing written by refused requests')
    t.is((await store.getChats(ann.id)).length, 1, 'no chat created')

    const byCookie = await api('POST', '/api/sessions', { body: { username: 'ann', password: ann.password } })
    for (const [index, [method, path, body, success]] of routes.entries()) {
      // Half the routes by cookie, half by bearer token.
      const credentials = index % 2 ? { cookie: byCookie.body.token } : { token: ann.token }
      const answer = await api(/** @type {string} */ (method), /** @type {string} */ (path), { body, ...credentials })
      t.is(answer.status, success, `${method} ${path} with a session (${'cookie' in credentials ? 'cookie' : 'bearer'}): ${success}`)
    }
  } finally {
    await server.close()
  }
})

test('members-only and admin-only routes answer 403 to the others', async t => {
  const server = await startServer()
  const { api, store } = server
  try {
    const ann = await signUp(api, 'ann')
    const bob = await signUp(api, 'bob')
    const eve = await signUp(api, 'eve')
    const chat = (await api('POST', '/api/chats', { token: ann.token, body: { name: 'x', members: ['bob'] } })).body
    const refused = [
      [eve, 'GET', `/api/chats/${chat.id}`, undefined],
      [eve, 'GET', `/api/chats/${chat.id}/messages`, undefined],
      [eve, 'POST', `/api/chats/${chat.id}/messages`, { text: 'let me in' }],
      [eve, 'POST', `/api/chats/${chat.id}/members`, { username: 'bob' }],
      [eve, 'DELETE', `/api/chats/${chat.id}`, undefined],
      [eve, 'DELETE', `/api/chats/${chat.id}/members/${bob.id}`, undefined],
      [bob, 'DELETE', `/api/chats/${chat.id}`, undefined],
      [bob, 'DELETE', `/api/chats/${chat.id}/members/${ann.id}`, undefined]
    ]
    for (const [user, method, path, body] of refused) {
      const answer = await api(/** @type {string} */ (method), /** @type {string} */ (path), { token: /** @type {any} */ (user).token, body })
      t.is(answer.status, 403, `${/** @type {any} */ (user).username}: ${method} ${path}: 403 ${answer.body?.error?.code}`)
    }
    const after = await store.getChat(chat.id)
    t.same(after?.members, [ann.id, bob.id], 'members unchanged')
    t.same(await store.getChatMessages(chat.id, { viewerId: ann.id }), [], 'no message')
  } finally {
    await server.close()
  }
})

test('app.authenticate(request): bearer token, else cookie, else ?token= on a WebSocket upgrade only', async t => {
  const server = await startServer()
  const { app, api } = server
  try {
    const ann = await signUp(api, 'ann')
    const session = { userId: ann.id, token: ann.token }
    /** @param {any} request */
    const authenticate = request => app.authenticate(/** @type {any} */ ({ headers: {}, cookies: {}, query: {}, ws: false, ...request }))
    t.same(await authenticate({ headers: { authorization: `Bearer ${ann.token}` } }), session, 'bearer')
    t.same(await authenticate({ cookies: { session: ann.token } }), session, 'cookie')
    t.same(await authenticate({ ws: true, query: { token: ann.token } }), session, '?token= on a WebSocket upgrade')
    t.is(await authenticate({ query: { token: ann.token } }), null, 'not on other requests')
    t.is(await authenticate({ ws: true, query: { token: [ann.token, ann.token] } }), null, 'a repeated ?token=: none')
    t.is(await authenticate({}), null, 'none')
    t.is(await authenticate({ headers: { authorization: 'Bearer nope' }, cookies: { session: ann.token } }), null, 'a bad bearer token is not passed over for the cookie')
  } finally {
    await server.close()
  }
})

test('expired sessions are purged now and then (purgeEvery)', async t => {
  const server = await startServer({ purgeEvery: 50 })
  const { store } = server
  try {
    const userId = await store.createUser({ username: 'ann', password: 'pw' })
    const expired = await store.setUserSession({ userId, expiry: Date.now() - 1 })
    const current = await store.setUserSession({ userId, expiry: Date.now() + 60000 })
    await new Promise(resolve => setTimeout(resolve, 200))
    t.is(await store.sessions.get(expired), undefined, 'the expired session is deleted')
    t.ok(await store.sessions.get(current), 'the current one stays')
  } finally {
    await server.close()
  }
})
