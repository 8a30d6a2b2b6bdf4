// A fuzz of malformed requests over real HTTP: random methods, paths, ids,
// query strings, headers, credentials and bodies (malformed JSON, wrong
// types, unknown fields, oversized, hostile strings), and malformed HTTP
// on raw sockets. The server never answers 5xx and never crashes; every
// error it answers is { error: { code, message } }; and a request it refuses
// writes nothing (the whole database is compared before and after).
// FUZZ_SEED=<n> replays a run.
import test from 'tape'
import http from 'node:http'
import net from 'node:net'
import { prng } from 'levelkit-testkit/prng'
import { startServer, signUp } from './util.js'

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Date.now() % 0x7fffffff
const REQUESTS = 1500
const RAW_REQUESTS = 150

const HOSTILE = [
  '', ' ', '0', '-1', '1.5', '1e3', '0x10', '01', '9'.repeat(20), '9007199254740993', 'NaN', 'Infinity', 'null', 'true', '[]', '{}',
  '__proto__', 'constructor', 'prototype', 'toString', '%00', '%ff', '%', '%2e%2e', '..', '../..', '\u0000', '\uffff', '\ud800',
  '１', '٣', '𝟙', '😀', 'ann', ' ann ', 'a'.repeat(65), 'x'.repeat(5000), "' OR 1=1 --", '<script>alert(1)</script>', '$' + '{7*7}',
  '\r\nSet-Cookie: x=1', 'a/b', 'a?b', 'a#b', 'a b', '~!@$^&*()'
]
const FIELDS = ['username', 'password', 'name', 'members', 'private', 'text', 'to', 'chatId', 'senderId', 'adminId', 'id', 'timestamp', 'recipients', '__proto__', 'constructor', 'extra']
const ROUTES = [
  ['POST', '/api/users'], ['POST', '/api/sessions'], ['DELETE', '/api/sessions/current'], ['GET', '/api/me'],
  ['GET', '/api/users/:username'], ['GET', '/api/chats'], ['POST', '/api/chats'], ['GET', '/api/chats/:id'],
  ['DELETE', '/api/chats/:id'], ['POST', '/api/chats/:id/members'], ['DELETE', '/api/chats/:id/members/:userId'],
  ['GET', '/api/chats/:id/messages'], ['POST', '/api/chats/:id/messages'], ['GET', '/api/direct-chats/:userId'],
  ['GET', '/'], ['GET', '/api/ws'], ['GET', '/api'], ['GET', '/api/'], ['POST', '/api/chats/:id/messages/:userId']
]
const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'FOO', 'PROPFIND']

test('fuzz: malformed requests never get a 5xx, never crash the server, and refused ones write nothing', async t => {
  t.comment(`seed ${SEED} (replay with FUZZ_SEED=${SEED})`)
  const rand = prng(SEED)
  const server = await startServer()
  const { api, base, db, store } = server
  try {
    const ann = await signUp(api, 'ann')
    const bob = await signUp(api, 'bob')
    const eve = await signUp(api, 'eve')
    let chat = (await api('POST', '/api/chats', { token: ann.token, body: { name: 'fuzzed', members: ['bob'] } })).body
    for (let i = 0; i < 5; i++) await api('POST', `/api/chats/${chat.id}/messages`, { token: bob.token, body: { text: `m${i}` } })
    const users = [ann, bob, eve]
    const tokens = users.map(user => user.token)
    // After a success: sessions logged out are renewed, and a deleted chat
    // made again, so that the fuzz keeps reaching past authorization.
    const renew = async () => {
      for (const [i, user] of users.entries()) {
        if (await store.getUserFromSession(tokens[i]) === null) tokens[i] = await store.setUserSession({ userId: user.id, expiry: Date.now() + 3600_000 })
      }
      if (await store.getChat(chat.id) === null) {
        chat = await store.getChat(await store.createChat({ name: 'fuzzed', adminId: ann.id, userIds: [bob.id] }))
        await store.addChatMessage({ chatId: chat.id, senderId: bob.id, text: 'again' })
      }
    }

    const pick = rand.pick
    const chance = (/** @type {number} */ p) => rand() < p
    /** A hostile or a plausible string. */
    const string = () => chance(0.6) ? pick(HOSTILE) : pick(['ann', 'bob', 'eve', 'pw-ann', 'fuzzed', 'hello', String(rand.int(10))])
    /** @param {number} depth @returns {any} */
    const value = depth => {
      switch (rand.int(depth > 2 ? 6 : 9)) {
        case 0: return string()
        case 1: return pick([0, -1, 1, 2, 3, 1.5, -0, 1e308, -1e308, 2 ** 53, Number.MAX_SAFE_INTEGER, chat.id, ann.id, bob.id])
        case 2: return pick([true, false])
        case 3: return null
        case 4: return string().repeat(1 + rand.int(3))
        case 5: return rand.int(2) ? [] : {}
        case 6: return Array.from({ length: rand.int(5) }, () => value(depth + 1))
        case 7: return object(depth + 1)
        default: return Array.from({ length: rand.int(40) }, () => pick(['ann', 'bob', 'eve', 1, 2]))
      }
    }
    /** @param {number} depth */
    const object = depth => {
      /** @type {Record<string, any>} */
      const result = {}
      for (let i = rand.int(5); i > 0; i--) result[chance(0.9) ? pick(FIELDS) : string()] = value(depth)
      return result
    }
    /** A body with the route's own fields, each valid or not, now and then one more. @param {string} template */
    const plausible = template => {
      const maybe = (/** @type {() => any} */ good) => chance(0.75) ? good() : value(1)
      /** @type {Record<string, any>} */
      let result = {}
      if (template === '/api/users' || template === '/api/sessions') result = { username: maybe(() => pick(['ann', 'bob', `new${rand.int(50)}`])), password: maybe(() => pick(['pw-ann', 'pw-bob', 'secret'])) }
      else if (template === '/api/chats') result = { name: maybe(() => pick(['room', ' spaced '])), members: maybe(() => [pick(['bob', 'eve', 'ann'])]), ...(chance(0.3) ? { password: maybe(() => 'pw') } : {}) }
      else if (template.endsWith('/members')) result = { username: maybe(() => pick(['bob', 'eve'])), ...(chance(0.3) ? { password: maybe(() => 'pw') } : {}) }
      else result = { text: maybe(() => pick(['hi', 'x'.repeat(201), '😀'])), ...(chance(0.3) ? { to: maybe(() => [pick([ann.id, bob.id, eve.id])]) } : {}) }
      if (chance(0.1)) result[pick(FIELDS)] = value(1)
      return JSON.stringify(result)
    }
    /** @param {string} template */
    const body = template => {
      if (chance(0.4)) return plausible(template)
      switch (rand.int(12)) {
        case 0: return undefined
        case 1: return ''
        case 2: return JSON.stringify(object(0)).slice(0, 1 + rand.int(30)) // truncated
        case 3: return Buffer.from(Array.from({ length: rand.int(200) }, () => rand.int(256)))
        case 4: return JSON.stringify({ ...object(0), __proto__: { polluted: true } }).replace('"polluted"', '"__proto__":{"x":1},"polluted"')
        case 5: return '{"text":"' + 'x'.repeat(17000) + '"}' // over the body limit
        case 6: return '['.repeat(5000) + ']'.repeat(5000)
        case 7: return '\ufeff' + JSON.stringify(object(0))
        case 8: return JSON.stringify(value(0))
        default: return JSON.stringify(object(0))
      }
    }
    /** @param {string} template */
    const path = template => {
      let result = template.replace(/:(\w+)/g, (_, name) => {
        if (chance(0.5)) return name === 'username' ? pick(['ann', 'bob', 'nobody']) : String(pick([chat.id, ann.id, bob.id, eve.id, 99]))
        return encode(string()).replace(/%25/g, chance(0.5) ? '%' : '%25')
      })
      if (chance(0.1)) result = result.replace(/\/$/, '') + '/' + encode(string())
      if (chance(0.35)) {
        const keys = ['n', 'from', 'to', 'token', 'after', '__proto__', 'n[]', 'constructor[prototype][x]', string()]
        result += '?' + Array.from({ length: 1 + rand.int(3) }, () => `${encode(pick(keys))}=${encode(chance(0.5) ? String(pick([0, 1, 5, 50, 100, 101, -1])) : string())}`).join('&')
      }
      return result
    }
    const headers = () => {
      /** @type {Record<string, string>} */
      const result = {}
      const type = chance(0.7) ? 'application/json' : pick(['application/json; charset=utf-8', 'application/json; charset=utf-16', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx', '', 'garbage/;;;', null])
      if (type !== null) result['content-type'] = type
      switch (rand.int(10)) {
        case 0: case 5: case 6: case 7: result.authorization = `Bearer ${pick(tokens)}`; break
        case 1: result.cookie = `session=${pick(tokens)}`; break
        case 2: result.authorization = pick(['Bearer', 'Bearer  ', `Bearer ${'a'.repeat(300)}`, `bearer ${pick(tokens)}`, `Basic ${pick(tokens)}`, `Bearer ${pick(tokens)} extra`, `Bearer ${encode(string())}`]); break
        case 3: result.cookie = pick(['session=', 'session', 'session=;session=x', `session="${pick(tokens)}"`, 'session=%ZZ', `a=b; session=${pick(tokens)}; session=x`, '=;=;', `session=${encode(string())}`]); break
        case 4: result.authorization = `Bearer ${pick(tokens)}`; result.cookie = `session=${encode(string())}`; break
        default: break
      }
      if (chance(0.05)) result['x-forwarded-for'] = '10.0.0.1'
      if (chance(0.05)) result.upgrade = 'websocket'
      return result
    }

    /** The whole database, as text. */
    const dump = async () => {
      const entries = []
      for await (const [key, value] of db.level.iterator({ keyEncoding: 'utf8', valueEncoding: 'utf8' })) entries.push(`${key}=${value}`)
      return entries.join('\n')
    }

    const statuses = new Map()
    const problems = []
    for (let i = 0; i < REQUESTS && problems.length < 10; i++) {
      const [routeMethod, template] = pick(ROUTES)
      const method = chance(0.85) ? routeMethod : pick(METHODS)
      const request = { method, path: path(template), headers: headers(), body: method === 'GET' || method === 'HEAD' ? (chance(0.05) ? body(template) : undefined) : body(template) }
      const before = await dump()
      let answer
      try {
        answer = await send(base, request)
      } catch (err) {
        problems.push(`${describe(request)}: ${/** @type {Error} */ (err).message}`)
        continue
      }
      statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
      if (answer.status >= 500) problems.push(`${describe(request)}: ${answer.status} ${answer.text}`)
      if (answer.status >= 400 && method !== 'HEAD') {
        let error
        try {
          error = JSON.parse(answer.text).error
        } catch {}
        if (!error || typeof error.code !== 'string' || typeof error.message !== 'string') problems.push(`${describe(request)}: ${answer.status} without { error: { code, message } }: ${answer.text.slice(0, 200)}`)
      }
      if (answer.status < 300) {
        // A deleted chat's messages are purged in the background: let that end.
        await store.messages.settled()
        await renew()
      } else if (await dump() !== before) {
        problems.push(`${describe(request)}: answered ${answer.status} but changed the database`)
      }
    }
    t.same(problems, [], `${REQUESTS} random requests: no 5xx, errors as JSON, nothing written when refused`)
    t.comment(`statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`)
    t.ok([200, 400, 401, 404, 413, 415].every(status => statuses.has(status)) && (statuses.get(201) ?? 0) + (statuses.get(204) ?? 0) > 0, 'writes that succeed and refusals of each kind among them')

    const rawProblems = []
    for (let i = 0; i < RAW_REQUESTS; i++) {
      const bytes = rawRequest(rand, pick(tokens))
      const before = await dump()
      const reply = await sendRaw(base, bytes)
      const status = /^HTTP\/1\.1 (\d{3})/.exec(reply)?.[1]
      if (status !== undefined && Number(status) >= 500) rawProblems.push(`${JSON.stringify(bytes.toString('latin1').slice(0, 120))}: ${reply.slice(0, 200)}`)
      if ((status === undefined || Number(status) >= 300) && await dump() !== before) rawProblems.push(`${JSON.stringify(bytes.toString('latin1').slice(0, 120))}: refused but changed the database`)
    }
    t.same(rawProblems, [], `${RAW_REQUESTS} malformed HTTP requests on raw sockets: no 5xx, nothing written`)

    // (The fuzz may have logged ann out: a new session.)
    const session = await api('POST', '/api/sessions', { body: { username: 'ann', password: ann.password } })
    const me = await api('GET', '/api/me', { token: session.body.token })
    t.same([me.status, me.body], [200, { id: ann.id, username: 'ann' }], 'the server still answers')
    t.same((await store.check()).problems, [], 'and its database passes check()')
  } finally {
    await server.close()
  }
})

/** encodeURIComponent(), and a lone surrogate as its (invalid) UTF-8 bytes. @param {string} text */
function encode (text) {
  try {
    return encodeURIComponent(text)
  } catch {
    return '%ED%A0%80'
  }
}

/** @param {{ method: string, path: string, headers: Record<string, string>, body?: string | Buffer }} request */
function describe ({ method, path, headers, body }) {
  return `${method} ${path.slice(0, 120)} ${JSON.stringify(headers)} ${body === undefined ? '' : JSON.stringify(String(body).slice(0, 120))}`
}

/**
 * Send one request with node:http (any method, any header).
 * @param {string} base @param {{ method: string, path: string, headers: Record<string, string>, body?: string | Buffer }} request
 * @returns {Promise<{ status: number, text: string }>}
 */
function send (base, { method, path, headers, body }) {
  return new Promise((resolve, reject) => {
    const sent = { ...headers }
    if (body !== undefined) sent['content-length'] = String(Buffer.byteLength(body))
    const request = http.request(base + path, { method, headers: sent }, response => {
      let text = ''
      response.setEncoding('utf8').on('data', chunk => { text += chunk }).on('end', () => resolve({ status: response.statusCode ?? 0, text }))
    })
    request.on('error', reject)
    request.end(body)
  })
}

/**
 * A malformed HTTP request, as bytes.
 * @param {ReturnType<typeof prng>} rand @param {string} token
 */
function rawRequest (rand, token) {
  const json = '{"text":"raw"}'
  const auth = `Authorization: Bearer ${token}\r\n`
  const target = rand.pick(['/api/chats/1/messages', '/api/users', '/api/me', '*', 'http://elsewhere/api/me', '/api/chats/1/messages?n=1', '//api/me', '/%zz'])
  const cases = [
    () => Buffer.from(Array.from({ length: 1 + rand.int(300) }, () => rand.int(256))),
    () => `GET ${target}\r\n\r\n`,
    () => `POST ${target} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: abc\r\n\r\n${json}`,
    () => `POST ${target} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 3\r\nContent-Length: ${json.length}\r\n\r\n${json}`,
    () => `POST ${target} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: ${json.length}\r\nTransfer-Encoding: chunked\r\n\r\n${json}`,
    () => `POST ${target} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n${json}\r\n0\r\n\r\n`,
    () => `POST ${target} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n${json}`,
    () => `GET ${target} HTTP/1.1\r\nHost: x\r\n${auth}X-Big: ${'a'.repeat(20000)}\r\n\r\n`,
    () => `GET ${target} HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n`,
    () => `GET ${target} HTTP/1.1\r\nHost: x\r\nX: a\u0000b\r\n\r\n`,
    () => `GET ${target} HTTP/9.9\r\nHost: x\r\n\r\n`,
    () => `G\u00e9T ${target} HTTP/1.1\r\nHost: x\r\n\r\n`,
    () => `GET ${target} HTTP/1.1\nHost: x\n${auth.replace('\r\n', '\n')}\n`,
    () => `POST ${target} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: ${json.length}\r\nExpect: 100-continue\r\n\r\n${json.slice(0, 5)}`,
    () => `POST ${target} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: ${json.length}\r\n\r\n${json}`
  ]
  return Buffer.from(/** @type {any} */ (rand.pick(cases)()), 'latin1')
}

/**
 * Write bytes on a new connection; what comes back before the server closes
 * it or 300 ms pass.
 * @param {string} base @param {Buffer} bytes
 * @returns {Promise<string>}
 */
function sendRaw (base, bytes) {
  const { hostname, port } = new URL(base)
  return new Promise(resolve => {
    let reply = ''
    const socket = net.connect(Number(port), hostname, () => socket.end(bytes))
    const done = () => {
      clearTimeout(timer)
      socket.destroy()
      resolve(reply)
    }
    const timer = setTimeout(done, 300)
    socket.setEncoding('latin1').on('data', chunk => { reply += chunk }).on('close', done).on('error', done)
  })
}
