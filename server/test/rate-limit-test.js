// Rate limits: login and registration attempts per IP and per username
// (429 RATE_LIMITED with Retry-After), other API calls unlimited unless
// configured, and the limits' windows.
import test from 'tape'
import http from 'node:http'
import { startServer, signUp } from './util.js'

/**
 * POST JSON from a given local address (127.0.0.x: another client IP).
 * @param {string} base @param {string} path @param {any} body @param {string} localAddress
 * @returns {Promise<{ status: number, body: any }>}
 */
function postFrom (base, path, body, localAddress) {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body)
    const request = http.request(base + path, { method: 'POST', localAddress, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } }, response => {
      let text = ''
      response.setEncoding('utf8').on('data', chunk => { text += chunk }).on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }))
    })
    request.on('error', reject)
    request.end(data)
  })
}

test('logins are limited per username, and per IP across usernames', async t => {
  const server = await startServer({ rateLimit: { auth: { max: 5, maxPerUsername: 2, timeWindow: 60000 } } })
  const { api, base } = server
  try {
    /** @param {string} username */
    const login = username => api('POST', '/api/sessions', { body: { username, password: 'wrong' } })
    t.same([(await login('ann')).status, (await login('ann')).status], [401, 401], 'two attempts for ann: answered')
    const third = await login('ann')
    t.same([third.status, third.body.error.code], [429, 'RATE_LIMITED'], 'the third: 429')
    t.match(third.body.error.message, /Too many attempts for this username: try again in \d+ s/)
    t.ok(Number(third.headers.get('retry-after')) > 0, `with Retry-After: ${third.headers.get('retry-after')}`)
    const fromElsewhere = await postFrom(base, '/api/sessions', { username: 'ann', password: 'wrong' }, '127.0.0.2')
    t.same([fromElsewhere.status, fromElsewhere.body.error.code], [429, 'RATE_LIMITED'], 'for ann from another address too')
    t.is((await login('bob')).status, 401, 'bob is another username')
    t.is((await login('carol')).status, 401, 'the fifth attempt from this address: answered')
    t.is((await login('dan')).status, 429, 'the sixth: 429 (over 5)')
    t.is((await postFrom(base, '/api/sessions', { username: 'dan', password: 'wrong' }, '127.0.0.3')).status, 401, 'another address is not limited by this one')
    t.is((await api('POST', '/api/users', { body: { username: 'zed', password: 'pw' } })).status, 429, 'registration counts with logins')
    t.is(await server.store.getUser('zed'), null, 'and a refused registration writes nothing')
  } finally {
    await server.close()
  }
})

test('registrations are limited per IP, counted even when malformed; the window passes', async t => {
  const server = await startServer({ rateLimit: { auth: { max: 3, timeWindow: 400 } } })
  const { api } = server
  try {
    t.is((await api('POST', '/api/users', { raw: '{bad json' })).status, 400)
    t.is((await api('POST', '/api/users', { body: { username: 'a', password: 'pw' } })).status, 201)
    t.is((await api('POST', '/api/users', { body: { username: 'b', password: 'pw' } })).status, 201)
    const limited = await api('POST', '/api/users', { body: { username: 'c', password: 'pw' } })
    t.same([limited.status, limited.body.error.code], [429, 'RATE_LIMITED'], 'the fourth request from this address in the window: 429')
    t.is(await server.store.getUser('c'), null)
    await new Promise(resolve => setTimeout(resolve, 450))
    t.is((await api('POST', '/api/users', { body: { username: 'c', password: 'pw' } })).status, 201, 'after the window: 201')
  } finally {
    await server.close()
  }
})

test('by default: 20 attempts a minute per IP, 10 per username; other API calls unlimited', async t => {
  const server = await startServer({ rateLimit: undefined })
  const { api } = server
  try {
    const statuses = []
    for (let i = 0; i < 11; i++) statuses.push((await api('POST', '/api/sessions', { body: { username: 'ann', password: 'x' } })).status)
    t.same(statuses, [...Array(10).fill(401), 429], '10 logins for one username, then 429')
    const more = []
    for (let i = 0; i < 10; i++) more.push((await api('POST', '/api/sessions', { body: { username: `user${i}`, password: 'x' } })).status)
    t.same(more, [...Array(9).fill(401), 429], 'and 20 from one address')
    const token = await server.store.setUserSession({ userId: await server.store.createUser({ username: 'ann', password: 'x' }), expiry: Date.now() + 60000 })
    const calls = await Promise.all(Array.from({ length: 100 }, () => api('GET', '/api/me', { token })))
    t.ok(calls.every(answer => answer.status === 200), '100 other calls: all answered')
  } finally {
    await server.close()
  }
})

test('rateLimit.api limits the other API calls per IP', async t => {
  const server = await startServer({ rateLimit: { auth: false, api: { max: 3, timeWindow: 60000 } } })
  const { api } = server
  try {
    const ann = await signUp(api, 'ann')
    const statuses = []
    for (let i = 0; i < 4; i++) statuses.push((await api('GET', '/api/me', { token: ann.token })).status)
    t.same(statuses, [200, 200, 200, 429])
    t.is((await api('GET', '/api/chats', { token: ann.token })).status, 429, 'on every route')
    t.is((await api('POST', '/api/sessions', { body: { username: 'ann', password: ann.password } })).status, 201, 'logins are apart (auth: false)')
    t.is((await api('GET', '/nothing')).status, 404, 'non-API paths are not limited')
  } finally {
    await server.close()
  }
})

test('rate limits refuse a max or timeWindow that is not a positive integer', async t => {
  for (const auth of [{ max: 0, timeWindow: 1000 }, { max: 5, timeWindow: -1 }, { max: 5, timeWindow: 1000, maxPerUsername: 1.5 }]) {
    try {
      const server = await startServer({ rateLimit: { auth } })
      await server.close()
      t.fail(`${JSON.stringify(auth)} accepted`)
    } catch (err) {
      t.match(/** @type {Error} */ (err).message, /must be a positive integer/, `${JSON.stringify(auth)}: refused`)
    }
  }
})
