// Registration, sessions and users over real HTTP: every answer of
// POST /api/users, POST /api/sessions, DELETE /api/sessions/current,
// GET /api/me and GET /api/users/:username.
import test from 'tape'
import { startServer, signUp } from './util.js'

const DAY = 24 * 3600 * 1000

test('POST /api/users registers a user: 201, the username trimmed; 409 when taken', async t => {
  const server = await startServer()
  const { api } = server
  try {
    const ann = await api('POST', '/api/users', { body: { username: 'ann', password: 'secret' } })
    t.is(ann.status, 201)
    t.same(ann.body, { id: 1, username: 'ann' })
    t.match(ann.headers.get('content-type') ?? '', /^application\/json/)
    const bob = await api('POST', '/api/users', { body: { username: '  bob ', password: 'secret' } })
    t.same([bob.status, bob.body], [201, { id: 2, username: 'bob' }], 'trimmed')
    const again = await api('POST', '/api/users', { body: { username: 'ann', password: 'other' } })
    t.is(again.status, 409)
    t.is(again.body.error.code, 'LEVELKIT_UNIQUE')
    t.match(again.body.error.message, /taken/)
    const trimmedAgain = await api('POST', '/api/users', { body: { username: ' bob', password: 'x' } })
    t.is(trimmedAgain.status, 409, 'the trimmed name is the one taken')
    t.same((await server.store.getUser('ann'))?.id, 1, 'stored')
  } finally {
    await server.close()
  }
})

test('POST /api/users refuses bad input with 400 and writes nothing', async t => {
  const server = await startServer()
  const { api } = server
  try {
    const cases = [
      [{ username: 'ann' }, /password/],
      [{ password: 'pw' }, /username/],
      [{ username: 5, password: 'pw' }, /username must be string/],
      [{ username: 'ann', password: 5 }, /password must be string/],
      [{ username: '', password: 'pw' }, /username/],
      [{ username: '   ', password: 'pw' }, /username must be 1 to 64 characters/],
      [{ username: 'a'.repeat(65), password: 'pw' }, /username/],
      [{ username: 'ann', password: '' }, /password/],
      [{ username: 'ann', password: 'p'.repeat(1025) }, /password/],
      [{ username: 'ann', password: 'pw', admin: true }, /unknown field "admin"/],
      [['ann', 'pw'], /body must be object/],
      [null, /body must be object/],
      ['ann', /body must be object/]
    ]
    for (const [body, message] of cases) {
      const answer = await api('POST', '/api/users', { body })
      t.is(answer.status, 400, `${JSON.stringify(body).slice(0, 60)}: 400`)
      t.match(answer.body?.error?.message ?? '', /** @type {RegExp} */ (message), `  ${answer.body?.error?.code}: ${answer.body?.error?.message}`)
    }
    const malformed = await api('POST', '/api/users', { raw: '{"username": "ann", "password": ' })
    t.same([malformed.status, malformed.body.error.code], [400, 'BAD_REQUEST'], 'malformed JSON: 400')
    const empty = await api('POST', '/api/users', { raw: '' })
    t.is(empty.status, 400, 'an empty JSON body: 400')
    const form = await api('POST', '/api/users', { raw: 'username=ann&password=pw', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    t.same([form.status, form.body.error.code], [415, 'UNSUPPORTED_MEDIA_TYPE'], 'not JSON: 415')
    const huge = await api('POST', '/api/users', { body: { username: 'ann', password: 'p'.repeat(20000) } })
    t.same([huge.status, huge.body.error.code], [413, 'PAYLOAD_TOO_LARGE'], 'over 16 KiB: 413')
    const proto = await api('POST', '/api/users', { raw: '{"username":"ann","password":"pw","__proto__":{"x":1}}' })
    t.is(proto.status, 400, '__proto__: 400')
    t.is(await server.store.getUser('ann'), null, 'no user was created')
  } finally {
    await server.close()
  }
})

test('POST /api/sessions logs in: 201 with a 128-bit token and a strict HttpOnly cookie; 401 otherwise', async t => {
  const server = await startServer()
  const { api } = server
  try {
    await api('POST', '/api/users', { body: { username: 'ann', password: 'secret' } })
    const before = Date.now()
    const session = await api('POST', '/api/sessions', { body: { username: 'ann', password: 'secret' } })
    t.is(session.status, 201)
    t.same(Object.keys(session.body).sort(), ['expiry', 'token', 'userId'])
    t.match(session.body.token, /^[0-9a-f]{32}$/, '32 hex digits: 128 bits')
    t.is(session.body.userId, 1)
    t.ok(session.body.expiry >= before + 7 * DAY && session.body.expiry <= Date.now() + 7 * DAY, 'expires in 7 days')
    const cookie = session.headers.get('set-cookie') ?? ''
    t.match(cookie, new RegExp(`^session=${session.body.token};`), 'sets the session cookie')
    t.match(cookie, /HttpOnly/)
    t.match(cookie, /SameSite=Strict/)
    t.match(cookie, /Path=\//)
    t.match(cookie, /Expires=/)
    const other = await api('POST', '/api/sessions', { body: { username: 'ann', password: 'secret' } })
    t.not(other.body.token, session.body.token, 'a new token each time')
    t.is(await server.store.getUserFromSession(session.body.token), 1, 'stored')

    const wrong = await api('POST', '/api/sessions', { body: { username: 'ann', password: 'nope' } })
    t.same([wrong.status, wrong.body.error.code], [401, 'UNAUTHORIZED'], 'wrong password: 401')
    t.is(wrong.headers.get('set-cookie'), null, 'and no cookie')
    const unknown = await api('POST', '/api/sessions', { body: { username: 'nobody', password: 'secret' } })
    t.same([unknown.status, unknown.body.error.message], [401, wrong.body.error.message], 'unknown user: the same 401')
    for (const body of [{ username: 'ann' }, { username: 'ann', password: 1 }, { username: 'ann', password: 'secret', remember: true }, {}]) {
      t.is((await api('POST', '/api/sessions', { body })).status, 400, `${JSON.stringify(body)}: 400`)
    }
  } finally {
    await server.close()
  }
})

test('sessions work by cookie and by bearer token, last sessionDays, and end with DELETE /api/sessions/current', async t => {
  const server = await startServer({ sessionDays: 1 })
  const { api } = server
  try {
    const ann = await signUp(api, 'ann')
    const me = await api('GET', '/api/me', { token: ann.token })
    t.same([me.status, me.body], [200, { id: ann.id, username: 'ann' }], 'GET /api/me by bearer token')
    t.same((await api('GET', '/api/me', { cookie: ann.token })).body, { id: ann.id, username: 'ann' }, 'and by cookie')
    const second = await api('POST', '/api/sessions', { body: { username: 'ann', password: ann.password } })
    t.ok(second.body.expiry <= Date.now() + DAY && second.body.expiry > Date.now() + DAY - 60000, 'sessionDays: 1')

    const out = await api('DELETE', '/api/sessions/current', { cookie: ann.token })
    t.is(out.status, 204)
    t.is(out.text, '')
    t.match(out.headers.get('set-cookie') ?? '', /^session=;.*Expires=Thu, 01 Jan 1970/, 'clears the cookie')
    t.is((await api('GET', '/api/me', { token: ann.token })).status, 401, 'the token is gone')
    t.is(await server.store.getUserFromSession(ann.token), null, 'removed from the store')
    t.is((await api('GET', '/api/me', { token: second.body.token })).status, 200, 'other sessions stay')
    t.is((await api('DELETE', '/api/sessions/current', { token: ann.token })).status, 401, 'logging out again: 401')
    t.is((await api('DELETE', '/api/sessions/current')).status, 401, 'without a session: 401')
    t.is((await api('DELETE', '/api/sessions/current', { token: second.body.token })).status, 204, 'by bearer token')
  } finally {
    await server.close()
  }
})

test('GET /api/users/:username: the user, 404 for an unknown one', async t => {
  const server = await startServer()
  const { api } = server
  try {
    const ann = await signUp(api, 'ann')
    await signUp(api, 'b ob')
    const bob = await api('GET', '/api/users/b%20ob', { token: ann.token })
    t.same([bob.status, bob.body], [200, { id: 2, username: 'b ob' }], 'a URL-encoded name')
    t.same((await api('GET', '/api/users/ann', { token: ann.token })).body, { id: 1, username: 'ann' }, 'no password hash, no createdAt')
    const nobody = await api('GET', '/api/users/nobody', { token: ann.token })
    t.same([nobody.status, nobody.body.error.code], [404, 'NOT_FOUND'])
    t.match(nobody.body.error.message, /No user named "nobody"/)
    t.is((await api('GET', `/api/users/${'x'.repeat(65)}`, { token: ann.token })).status, 400, 'too long: 400')
    t.is((await api('GET', '/api/users/ann?x=1', { token: ann.token })).status, 400, 'an unknown query parameter: 400')
    t.is((await api('GET', '/api/users/%20', { token: ann.token })).status, 400, 'blank: 400')
  } finally {
    await server.close()
  }
})

test('GET /api/users/by-id/:userId: the user, 404 for an unknown id, 400 for one that is not an id, 401 without a session', async t => {
  const server = await startServer()
  const { api } = server
  try {
    const ann = await signUp(api, 'ann')
    await signUp(api, 'bob')
    const bob = await api('GET', '/api/users/by-id/2', { token: ann.token })
    t.same([bob.status, bob.body], [200, { id: 2, username: 'bob' }])
    const nobody = await api('GET', '/api/users/by-id/9', { token: ann.token })
    t.same([nobody.status, nobody.body.error.code], [404, 'NOT_FOUND'])
    for (const bad of ['0', '-1', '1.5', 'x', '01']) {
      t.is((await api('GET', `/api/users/by-id/${bad}`, { token: ann.token })).status, 400, `${bad}: 400`)
    }
    t.is((await api('GET', '/api/users/by-id/1')).status, 401, 'without a session: 401')
  } finally {
    await server.close()
  }
})
