// GET /api/ws with real ws clients against a real server on a random port:
// a minimal fastify app with the live plugin, a test `authenticate` that
// reads ?token=, and a real ChatStore on memory-level.
import test from 'tape'
import fastify from 'fastify'
import WebSocket from 'ws'
import { open, codes } from 'levelkit'
import { ChatStore } from 'levelkit/chat'
import { live } from '../lib/live.js'
import { levelkitKv } from '../lib/kv.js'
import { startServer, signUp } from './util.js'

// Hashing at the lowest cost: these tests are not about passwords.
const FAST = { passwordCost: { scryptN: 2, pbkdf2Iterations: 1 } }

/**
 * A server on a random port, and what the tests need of it.
 * @param {Record<string, number>} [options] the live plugin's
 * @param {Record<string, (store: ChatStore) => Function>} [overrides] store methods to serve in place of the store's
 */
async function start (options = {}, overrides = {}) {
  const db = await open()
  const store = await ChatStore.open(db, FAST)
  const kv = levelkitKv(db)
  /** @type {Map<string, number>} */
  const tokens = new Map()
  const app = fastify()
  app.decorate('store', new Proxy(store, {
    get (target, key) {
      if (typeof key === 'string' && Object.hasOwn(overrides, key)) return overrides[key](target)
      const value = /** @type {any} */ (target)[key]
      return typeof value === 'function' ? value.bind(target) : value
    }
  }))
  app.decorate('kv', kv)
  app.decorate('authenticate', async (/** @type {any} */ request) => {
    const token = request.query.token
    const userId = typeof token === 'string' ? tokens.get(token) : undefined
    return userId === undefined ? null : { userId, token }
  })
  await app.register(live, options)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = /** @type {import('node:net').AddressInfo} */ (app.server.address())
  const base = `127.0.0.1:${port}`
  return {
    app,
    db,
    store,
    kv,
    tokens,
    base,
    /** A user with a session token. @param {string} username */
    async user (username) {
      const id = await store.createUser({ username, password: 'x' })
      tokens.set(`token-${username}`, id)
      return { id, token: `token-${username}` }
    },
    /** @param {string} token */
    connect (token) {
      return Client.open(`ws://${base}/api/ws?token=${encodeURIComponent(token)}`)
    },
    /** The store's watchers, as listeners of its write path. */
    watchers () {
      return /** @type {any} */ (db).writer.listenerCounts.written
    },
    async close () {
      await app.close()
      await db.close()
    }
  }
}

/** A ws client that queues the frames it gets, to take them in order. */
class Client {
  /** @param {string} url @returns {Promise<Client>} */
  static open (url) {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url)
      ws.once('open', () => resolve(new Client(ws)))
      ws.once('unexpected-response', (request, response) => {
        reject(Object.assign(new Error(`Unexpected response ${response.statusCode}`), { statusCode: response.statusCode }))
        request.destroy()
      })
      ws.once('error', reject)
    })
  }

  /** @param {WebSocket} ws */
  constructor (ws) {
    this.ws = ws
    /** @type {any[]} */
    this.frames = []
    /** @type {Set<() => void>} */
    this.waiting = new Set()
    ws.on('message', data => {
      this.frames.push(JSON.parse(data.toString()))
      for (const wake of this.waiting) wake()
    })
    /** @type {Promise<{ code: number, reason: string }>} */
    this.closed = new Promise(resolve => ws.once('close', (code, reason) => {
      resolve({ code, reason: reason.toString() })
      for (const wake of this.waiting) wake()
    }))
  }

  /** @param {unknown} frame an object, or raw text */
  send (frame) {
    this.ws.send(typeof frame === 'string' || frame instanceof Buffer ? frame : JSON.stringify(frame))
  }

  /**
   * The first frame matching `filter`, taken out of the queue: one already
   * there, or the next to come.
   * @param {(frame: any) => boolean} [filter] @param {number} [timeout]
   * @returns {Promise<any>}
   */
  async next (filter = () => true, timeout = 5000) {
    const deadline = Date.now() + timeout
    while (true) {
      const index = this.frames.findIndex(filter)
      if (index !== -1) return this.frames.splice(index, 1)[0]
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`No frame matching ${filter} within ${timeout} ms; got ${JSON.stringify(this.frames)}`)
      if (this.ws.readyState === WebSocket.CLOSED) throw new Error(`The socket closed; frames left: ${JSON.stringify(this.frames)}`)
      await new Promise(resolve => {
        const timer = setTimeout(done, left)
        this.waiting.add(done)
        function done () {
          clearTimeout(timer)
          resolve(undefined)
        }
      }).finally(() => this.waiting.clear())
    }
  }

  /** The next frame of a type. @param {string} type @param {number} [timeout] */
  nextOf (type, timeout) {
    return this.next(frame => frame.type === type, timeout)
  }

  /** Send a request and take its answer: every request gets one, in order. @param {any} frame */
  async request (frame) {
    this.send(frame)
    // An `unsubscribed` with a code is the server ending a subscription, not an answer.
    return this.next(frame => frame.type === 'error' || (['subscribed', 'unsubscribed', 'sent', 'bot', 'active'].includes(frame.type) && frame.code === undefined))
  }

  /** Frames of a type got so far, taken out of the queue. @param {string} type */
  take (type) {
    const taken = this.frames.filter(frame => frame.type === type)
    this.frames = this.frames.filter(frame => frame.type !== type)
    return taken
  }

  close () {
    this.ws.close()
    return this.closed
  }
}

/** @param {number} ms */
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

/**
 * A chat of these users, the first its admin.
 * @param {ChatStore} store @param {Array<{ id: number }>} users
 */
function chatOf (store, users) {
  return store.createChat({ name: 'room', adminId: users[0].id, userIds: users.slice(1).map(user => user.id) })
}

test('no session, no socket: 401 before the upgrade; a plain GET is told to upgrade', async t => {
  const server = await start()
  const ann = await server.user('ann')
  for (const url of [`ws://${server.base}/api/ws`, `ws://${server.base}/api/ws?token=nope`]) {
    try {
      await Client.open(url)
      t.fail(`${url} opened`)
    } catch (err) {
      t.is(/** @type {any} */ (err).statusCode, 401, `${url}: 401`)
    }
  }
  const refused = await fetch(`http://${server.base}/api/ws`)
  t.is(refused.status, 401, 'a plain GET without a session: 401')
  t.is((await refused.json()).error.code, 'UNAUTHORIZED')
  const plain = await fetch(`http://${server.base}/api/ws?token=${ann.token}`)
  t.is(plain.status, 426, 'with a session, a plain GET: 426 Upgrade Required')
  t.is((await plain.json()).error.code, 'UPGRADE_REQUIRED')
  const client = await server.connect(ann.token)
  t.pass('with a session, the socket opens')
  await client.close()
  await server.close()
})

test('subscribe: the history after `after` (whispers as the subscriber sees them), then live messages', async t => {
  const server = await start()
  const { store } = server
  const [ann, bob, cat] = [await server.user('ann'), await server.user('bob'), await server.user('cat')]
  const chatId = await chatOf(store, [ann, bob, cat])
  await store.addChatMessage({ chatId, senderId: ann.id, text: 'one' })
  await store.addChatMessage({ chatId, senderId: ann.id, text: 'to cat', recipients: [cat.id] })
  await store.addChatMessage({ chatId, senderId: cat.id, text: 'three' })

  const client = await server.connect(bob.token)
  t.same(await client.request({ type: 'subscribe', chatId, after: 0 }), { type: 'subscribed', chatId }, 'subscribed')
  t.same(await client.nextOf('joined'), { type: 'joined', chatId, userId: bob.id }, 'bob joined, told to bob too')
  const history = [await client.nextOf('message'), await client.nextOf('message')]
  t.same(history.map(frame => [frame.chatId, frame.message.id, frame.message.text]), [[chatId, 1, 'one'], [chatId, 3, 'three']], 'the history, without the whisper bob may not see')
  t.same(Object.keys(history[0].message).sort(), ['chatId', 'id', 'senderId', 'text', 'timestamp'], 'messages as the store has them')
  await store.addChatMessage({ chatId, senderId: ann.id, text: 'four' })
  t.is((await client.nextOf('message')).message.text, 'four', 'then each new message')

  const later = await server.connect(cat.token)
  await later.request({ type: 'subscribe', chatId })
  await store.addChatMessage({ chatId, senderId: ann.id, text: 'five' })
  t.same((await later.nextOf('message')).message.id, 5, 'without after: from the last message when subscribing')
  t.is((await client.nextOf('message')).message.id, 5)

  const tail = await server.connect(cat.token)
  await tail.request({ type: 'subscribe', chatId, after: 3 })
  t.same([(await tail.nextOf('message')).message.id, (await tail.nextOf('message')).message.id], [4, 5], 'after: 3 gives 4 and 5')
  t.same(tail.take('message'), [], 'and no more')
  await Promise.all([client.close(), later.close(), tail.close()])
  await server.close()
})

test('live delivery: in id order, no gap and no duplicate across a reconnect with `after`, under concurrent senders', async t => {
  const server = await start()
  const { store } = server
  const users = [await server.user('ann'), await server.user('bob'), await server.user('cat'), await server.user('dan')]
  const chatId = await chatOf(store, users)
  const TOTAL = 400
  let sent = 0
  // Four senders at once, while the reader reads, disconnects and comes back.
  const senders = Promise.all(users.map(async (user, n) => {
    for (let i = 0; i < TOTAL / users.length; i++) {
      await store.addChatMessage({ chatId, senderId: user.id, text: `${n}:${i}` })
      sent++
      if (i % 10 === 0) await sleep(1)
    }
  }))
  /** @type {number[]} */
  const seen = []
  let reconnects = 0
  while (seen.length < TOTAL) {
    const client = await server.connect(users[0].token)
    await client.request({ type: 'subscribe', chatId, after: seen.length === 0 ? 0 : seen[seen.length - 1] })
    // Read a few, then drop the socket without unsubscribing.
    for (let i = 0; i < 60 && seen.length < TOTAL; i++) seen.push((await client.nextOf('message')).message.id)
    client.ws.terminate()
    reconnects++
  }
  await senders
  t.is(sent, TOTAL)
  t.ok(reconnects >= 5, `${reconnects} connections`)
  t.same(seen, Array.from({ length: TOTAL }, (_, i) => i + 1), `ids 1 to ${TOTAL}, each once, in order`)
  await server.close()
})

test('send: stored and delivered; whispers reach only their sender and recipients', async t => {
  const server = await start()
  const { store } = server
  const [ann, bob, cat] = [await server.user('ann'), await server.user('bob'), await server.user('cat')]
  const chatId = await chatOf(store, [ann, bob, cat])
  const clients = await Promise.all([ann, bob, cat].map(user => server.connect(user.token)))
  const [a, b, c] = clients
  for (const client of clients) await client.request({ type: 'subscribe', chatId })

  t.same(await a.request({ type: 'send', chatId, text: 'psst bob', to: [bob.id] }), { type: 'sent', chatId, id: 1 }, 'sent: the id')
  t.same(await c.request({ type: 'send', chatId, text: 'hello all' }), { type: 'sent', chatId, id: 2 })
  t.same(await b.request({ type: 'send', chatId, text: 'psst ann and cat', to: [ann.id, cat.id] }), { type: 'sent', chatId, id: 3 })
  const got = async (/** @type {Client} */ client, /** @type {number} */ n) => {
    const ids = []
    for (let i = 0; i < n; i++) ids.push((await client.nextOf('message')).message.id)
    return ids
  }
  t.same(await got(a, 3), [1, 2, 3], 'ann: her whisper to bob, the message, and the whisper to her')
  t.same(await got(b, 3), [1, 2, 3], 'bob: the whisper to him, the message, and his own whisper')
  t.same(await got(c, 2), [2, 3], 'cat: the message and the whisper to him, not the whisper to bob')
  await store.addChatMessage({ chatId, senderId: ann.id, text: 'last' })
  t.same(await got(c, 1), [4], 'cat: the next message after that')
  const whisper = (await store.getChatMessages(chatId, { viewerId: bob.id }))?.find(m => m.id === 1)
  t.same(whisper?.recipients, [bob.id], 'stored as a whisper')

  const refused = await a.request({ type: 'send', chatId, text: 'to a stranger', to: [99] })
  t.same([refused.type, refused.code, refused.request, refused.chatId], ['error', codes.FORBIDDEN, 'send', chatId], 'a whisper to a non-member is refused')
  const empty = await a.request({ type: 'send', chatId, text: '' })
  t.same([empty.code, empty.request], [codes.INVALID, 'send'], 'what the store refuses comes back with its code')
  const long = await a.request({ type: 'send', chatId, text: 'x'.repeat(201) })
  t.is(long.code, codes.INVALID, 'more than 200 characters')
  t.is(await store.getChatMessages(chatId).then(messages => messages?.length), 2, 'nothing more stored (the whispers are not shown without a viewer)')
  await Promise.all(clients.map(client => client.close()))
  await server.close()
})

test('non-members are refused, and a member removed (or a chat deleted) stops getting messages', async t => {
  const server = await start()
  const { store } = server
  const [ann, bob, eve] = [await server.user('ann'), await server.user('bob'), await server.user('eve')]
  const chatId = await chatOf(store, [ann, bob])
  await store.addChatMessage({ chatId, senderId: ann.id, text: 'secret' })
  const idle = server.watchers()
  const e = await server.connect(eve.token)
  for (const frame of [{ type: 'subscribe', chatId, after: 0 }, { type: 'send', chatId, text: 'let me in' }, { type: 'send', chatId, text: '/get color' }, { type: 'active', chatId }, { type: 'subscribe', chatId: 999 }]) {
    const answer = await e.request(frame)
    t.same([answer.type, answer.code, answer.request, answer.chatId], ['error', codes.FORBIDDEN, frame.type, frame.chatId], `${JSON.stringify(frame)}: refused`)
  }
  await sleep(50)
  t.same(e.take('message'), [], 'eve got no message')
  t.same(await store.getChatMessages(chatId).then(messages => messages?.map(m => m.text)), ['secret'], 'nothing stored')
  const own = await chatOf(store, [eve])
  t.same(await e.request({ type: 'subscribe', chatId: own }), { type: 'subscribed', chatId: own }, 'the socket stays open for what eve may do')

  const a = await server.connect(ann.token)
  const b = await server.connect(bob.token)
  await a.request({ type: 'subscribe', chatId })
  await b.request({ type: 'subscribe', chatId })
  t.same(await a.next(frame => frame.type === 'joined' && frame.userId === bob.id), { type: 'joined', chatId, userId: bob.id })
  await store.removeChatMember(chatId, bob.id)
  t.same(await a.request({ type: 'active', chatId }), { type: 'active', chatId, userIds: [ann.id] }, 'active lists members only, even before bob hears he is out')
  await store.addChatMessage({ chatId, senderId: ann.id, text: 'bob is gone' })
  t.is((await a.nextOf('message')).message.text, 'bob is gone')
  const ended = await b.nextOf('unsubscribed')
  t.same([ended.chatId, ended.code], [chatId, codes.FORBIDDEN], 'bob is told his subscription ended, and why')
  t.same(b.take('message'), [], 'without the message')
  t.same(await a.nextOf('left'), { type: 'left', chatId, userId: bob.id }, 'ann sees bob leave')

  await store.deleteChat(chatId)
  const gone = await a.nextOf('unsubscribed')
  t.same([gone.chatId, gone.code], [chatId, codes.NOT_FOUND], 'a deleted chat ends its subscriptions')
  await sleep(20)
  t.is(server.watchers(), idle + 1, "no watcher left but eve's")
  await Promise.all([a.close(), b.close(), e.close()])
  await server.close()
})

test('joined, left and active: a user joins with their first socket and leaves with their last', async t => {
  const server = await start()
  const { store } = server
  const [ann, bob, cat] = [await server.user('ann'), await server.user('bob'), await server.user('cat')]
  const chatId = await chatOf(store, [ann, bob, cat])
  const a = await server.connect(ann.token)
  await a.request({ type: 'subscribe', chatId })
  t.same(await a.nextOf('joined'), { type: 'joined', chatId, userId: ann.id })
  t.same(await a.request({ type: 'active', chatId }), { type: 'active', chatId, userIds: [ann.id] })

  const b1 = await server.connect(bob.token)
  const b2 = await server.connect(bob.token)
  t.same(await b1.request({ type: 'active', chatId }), { type: 'active', chatId, userIds: [ann.id] }, 'a member who is not subscribed may ask')
  await b1.request({ type: 'subscribe', chatId })
  t.same(await a.nextOf('joined'), { type: 'joined', chatId, userId: bob.id }, "bob's first socket: joined")
  t.same(await b1.nextOf('joined'), { type: 'joined', chatId, userId: bob.id })
  await b2.request({ type: 'subscribe', chatId })
  t.same(await a.request({ type: 'active', chatId }), { type: 'active', chatId, userIds: [ann.id, bob.id] }, 'active: the members subscribed')
  t.same(a.take('joined'), [], "bob's second socket: no joined")
  t.same(b2.take('joined'), [], 'not even to bob')

  t.same(await b2.request({ type: 'unsubscribe', chatId }), { type: 'unsubscribed', chatId }, 'unsubscribed')
  t.same(await b2.request({ type: 'unsubscribe', chatId }), { type: 'unsubscribed', chatId }, 'again: nothing to do, same answer')
  t.same(await a.request({ type: 'active', chatId }), { type: 'active', chatId, userIds: [ann.id, bob.id] }, 'bob still has a socket')
  t.same(a.take('left'), [], 'so no left')
  await b1.close()
  t.same(await a.nextOf('left'), { type: 'left', chatId, userId: bob.id }, "bob's last socket closed: left")
  t.same(await a.request({ type: 'active', chatId }), { type: 'active', chatId, userIds: [ann.id] })

  const c = await server.connect(cat.token)
  await c.request({ type: 'subscribe', chatId })
  t.same(await a.nextOf('joined'), { type: 'joined', chatId, userId: cat.id })
  await c.request({ type: 'unsubscribe', chatId })
  t.same(await a.nextOf('left'), { type: 'left', chatId, userId: cat.id }, 'unsubscribing from the last socket: left')
  t.same(c.take('left'), [], 'not told to cat, who is no longer there')
  await sleep(20)
  t.same([a.take('joined'), a.take('left')], [[], []], 'nothing else')
  await Promise.all([a.close(), b2.close(), c.close()])
  await server.close()
})

test('bad frames get an error and the socket stays open; a frame over the size limit closes it with 1009', async t => {
  const server = await start({ maxPayload: 4096 })
  const { store } = server
  const ann = await server.user('ann')
  const chatId = await chatOf(store, [ann])
  const client = await server.connect(ann.token)
  const bad = [
    'not json', '[]', 'null', '"subscribe"', '42', '{}',
    { type: 'nope', chatId },
    { type: 'subscribe' },
    { type: 'subscribe', chatId: String(chatId) },
    { type: 'subscribe', chatId: 0 },
    { type: 'subscribe', chatId: 1.5 },
    { type: 'subscribe', chatId: 2 ** 53 },
    { type: 'subscribe', chatId, after: -1 },
    { type: 'subscribe', chatId, after: 'latest' },
    { type: 'subscribe', chatId, extra: true },
    { type: 'unsubscribe' },
    { type: 'send', chatId },
    { type: 'send', chatId, text: 5 },
    { type: 'send', chatId, text: 'x', to: [] },
    { type: 'send', chatId, text: 'x', to: [0] },
    { type: 'send', chatId, text: 'x', to: ann.id },
    { type: 'active', chatId: null },
    '{"type":"active","chatId":1,"__proto__":{}}',
    Buffer.from(JSON.stringify({ type: 'active', chatId }))
  ]
  for (const frame of bad) {
    const answer = await client.request(frame)
    t.same([answer.type, answer.code, typeof answer.message], ['error', 'BAD_REQUEST', 'string'], `${frame instanceof Buffer ? 'a binary frame' : JSON.stringify(frame)}: ${answer.message}`)
  }
  const withRequest = await client.request({ type: 'subscribe', chatId, extra: 1 })
  t.same([withRequest.request, withRequest.chatId], ['subscribe', chatId], 'the error names the request and chat when it can')
  await client.request({ type: 'subscribe', chatId })
  const twice = await client.request({ type: 'subscribe', chatId })
  t.same([twice.code, twice.chatId], ['BAD_REQUEST', chatId], 'subscribing twice on one socket')
  t.same(await client.request({ type: 'active', chatId }), { type: 'active', chatId, userIds: [ann.id] }, 'the socket still works')
  t.same(await store.getChatMessages(chatId), [], 'nothing was written')

  client.send(JSON.stringify({ type: 'send', chatId, text: 'x'.repeat(5000) }))
  t.is((await client.closed).code, 1009, 'a frame over maxPayload: closed with 1009 (message too big)')
  t.same(await store.getChatMessages(chatId), [], 'and not read')
  await server.close()
})

test('an unexpected error of the store is answered as INTERNAL, without its message, and logged', async t => {
  const broken = () => async () => { throw new Error('the disk is on fire') }
  const server = await start({}, { getChat: broken })
  /** @type {any[]} */
  const logged = []
  server.app.log.error = (/** @type {any} */ ...args) => { logged.push(args) }
  const ann = await server.user('ann')
  const chatId = await chatOf(server.store, [ann])
  const client = await server.connect(ann.token)
  t.same(await client.request({ type: 'active', chatId }), { type: 'error', code: 'INTERNAL', message: 'Internal error', request: 'active', chatId })
  t.is(logged[0]?.[0]?.err?.message, 'the disk is on fire', 'the error is logged')
  t.same(await client.request({ type: 'subscribe', chatId }), { type: 'subscribed', chatId }, 'the socket stays open')
  await client.close()
  await server.close()
})

test('a database out of reach keeps its code, with a message that names no host, and is logged', async t => {
  const unreachable = () => async () => { throw Object.assign(new Error('PostgreSQL could not read: connect ECONNREFUSED 10.1.2.3:5432'), { code: codes.BACKEND_UNAVAILABLE }) }
  const server = await start({}, { getChat: unreachable })
  /** @type {any[]} */
  const logged = []
  server.app.log.error = (/** @type {any} */ ...args) => { logged.push(args) }
  const ann = await server.user('ann')
  const chatId = await chatOf(server.store, [ann])
  const client = await server.connect(ann.token)
  t.same(await client.request({ type: 'active', chatId }), { type: 'error', code: codes.BACKEND_UNAVAILABLE, message: 'The database is unavailable: try again', request: 'active', chatId })
  t.match(logged[0]?.[0]?.err?.message ?? '', /ECONNREFUSED 10\.1\.2\.3/, 'the error is logged')
  await client.close()
  await server.close()
})

test('frames are answered one at a time, in order; a client with too many waiting is not read meanwhile', async t => {
  // Each send waits for a timer first, as on a slow disk.
  const slowly = (/** @type {ChatStore} */ store) => (/** @type {any} */ message) => sleep(1).then(() => store.addChatMessage(message))
  const server = await start({ maxQueuedFrames: 4 }, { addChatMessage: slowly })
  const { store } = server
  const ann = await server.user('ann')
  const chatId = await chatOf(store, [ann])
  const client = await server.connect(ann.token)
  const [socket] = server.app.websocketServer.clients
  // Looked at as each answer comes.
  let paused = false
  const look = () => { paused = paused || socket.isPaused }
  client.ws.on('message', look)
  client.send({ type: 'subscribe', chatId, after: 0 })
  for (let i = 1; i <= 100; i++) client.send({ type: 'send', chatId, text: `m${i}` })
  client.send({ type: 'active', chatId })
  client.send({ type: 'unsubscribe', chatId })
  client.send({ type: 'active', chatId })
  const answers = []
  for (let i = 0; i < 104; i++) answers.push(await client.next(frame => !['joined', 'message'].includes(frame.type)))
  client.ws.off('message', look)
  t.same(answers.map(frame => frame.type), ['subscribed', ...Array(100).fill('sent'), 'active', 'unsubscribed', 'active'], 'one answer per frame, in the order sent')
  t.same(answers.slice(1, 101).map(frame => frame.id), Array.from({ length: 100 }, (_, i) => i + 1), '100 sends, stored in the order sent')
  t.same([answers[101].userIds, answers[103].userIds], [[ann.id], []], 'active while subscribed, then not')
  t.same((await store.getChatMessages(chatId, { n: 100 }))?.map(m => m.text), Array.from({ length: 100 }, (_, i) => `m${i + 1}`))
  t.ok(paused, 'the socket was not read while 4 frames waited')
  t.notOk(socket.isPaused, 'and read again once they were answered')
  await client.close()
  await server.close()
})

test('the chatbot: /put, /get and /del on the chat\'s own keys, answered to the sender alone, never stored', async t => {
  const server = await start()
  const { store } = server
  const [ann, bob] = [await server.user('ann'), await server.user('bob')]
  const chatId = await chatOf(store, [ann, bob])
  const other = await chatOf(store, [ann])
  const a = await server.connect(ann.token)
  const b = await server.connect(bob.token)
  await a.request({ type: 'subscribe', chatId })
  await b.request({ type: 'subscribe', chatId })

  const put = await a.request({ type: 'send', chatId, text: '/put color blue' })
  t.same([put.type, put.chatId, put.result], ['bot', chatId, { command: 'put', key: 'color', value: 'blue' }], 'the bot answers')
  t.same({ ...put.message, timestamp: 0 }, { chatId, senderId: 0, bot: true, text: 'Saved color = blue', timestamp: 0, recipients: [ann.id] }, 'as a whisper from the bot (sender 0) to ann')
  const get = await b.request({ type: 'send', chatId, text: '/get color' })
  t.same([get.message.text, get.message.recipients, get.result], ['color = blue', [bob.id], { command: 'get', key: 'color', value: 'blue' }], "bob reads the chat's key")
  const elsewhere = await a.request({ type: 'send', chatId: other, text: '/get color' })
  t.same(elsewhere.result, { command: 'get', key: 'color', value: null }, 'another chat has its own keys')
  const usage = await a.request({ type: 'send', chatId, text: '/del' })
  t.same([usage.message.text, usage.result.error.code], ['Usage: /del <key>', 'BAD_REQUEST'], 'wrong arguments: the usage')
  const del = await b.request({ type: 'send', chatId, text: '/del color' })
  t.same(del.result, { command: 'del', key: 'color', deleted: true })
  t.same((await a.request({ type: 'send', chatId, text: '/get color' })).message.text, 'color is not set')

  await a.request({ type: 'send', chatId, text: 'hello' })
  t.same([(await b.nextOf('message')).message.id, (await a.nextOf('message')).message.id], [1, 1], 'the next message is the first: no command was stored')
  t.same([a.take('bot'), b.take('bot')], [[], []], "no one got another's answer")
  t.same((await store.getChatMessages(chatId))?.map(m => m.text), ['hello'], 'the history has no command and no answer')
  await Promise.all([a.close(), b.close()])
  await server.close()
})

test('app.endSession: the sockets opened with a session are closed with 1008', async t => {
  const server = await start()
  const ann = await server.user('ann')
  server.tokens.set('second', ann.id)
  const chatId = await chatOf(server.store, [ann])
  const [one, two, other] = [await server.connect(ann.token), await server.connect(ann.token), await server.connect('second')]
  for (const client of [one, two, other]) await client.request({ type: 'subscribe', chatId })
  const watching = server.watchers()
  const app = /** @type {any} */ (server.app)
  app.live.endSession(ann.token)
  t.same([(await one.closed).code, (await two.closed).code], [1008, 1008], 'both sockets of that session')
  t.same(await other.request({ type: 'active', chatId }), { type: 'active', chatId, userIds: [ann.id] }, 'the other session stays')
  t.is(server.watchers(), watching, "the chat's one watcher stays, for the other session")
  t.same(await other.request({ type: 'unsubscribe', chatId }), { type: 'unsubscribed', chatId })
  t.is(server.watchers(), watching - 1, 'and stops with its last subscription')
  await other.close()
  await server.close()
})

test('a client reading a long history keeps up; one that does not read is closed with 1008 rather than buffered for', async t => {
  const server = await start({ maxBufferedBytes: 64 * 1024, drainTimeout: 1000, closeTimeout: 200 })
  const { store } = server
  const [ann, bob] = [await server.user('ann'), await server.user('bob')]
  const chatId = await chatOf(store, [ann, bob])
  // A history of 6 MiB, past what the kernel buffers of a socket on
  // loopback hold (about 4 MiB here), written a thousand at a time (as the
  // store writes them, one by one, it would take seconds).
  const COUNT = 7500
  const text = '😀'.repeat(200)
  for (let from = 1; from <= COUNT; from += 1000) {
    await store.db.write(async (w) => {
      for (let id = from; id < from + 1000 && id <= COUNT; id++) await store.messages.in(w).append(chatId, { id, chatId, senderId: bob.id, text, timestamp: Date.now() })
    })
  }
  const idle = server.watchers()
  const stalled = await server.connect(ann.token)
  const raw = /** @type {any} */ (stalled.ws)._socket
  stalled.send({ type: 'subscribe', chatId, after: 0 })
  raw.pause()
  const reader = await server.connect(bob.token)
  await reader.request({ type: 'subscribe', chatId, after: 0 })
  let got = 0
  while (got < COUNT && (await reader.nextOf('message', 10000)).message.id === got + 1) got++
  t.is(got, COUNT, `the reading client got all ${COUNT} messages, in order`)
  for (let i = 0; i < 100 && server.app.websocketServer.clients.size > 1; i++) await sleep(50)
  t.is(server.app.websocketServer.clients.size, 1, 'the one that does not read is cut off')
  t.is(server.watchers(), idle + 1, 'and its watcher stopped')
  raw.resume()
  t.ok([1006, 1008].includes((await stalled.closed).code), 'its client sees the socket end')
  await reader.close()
  await server.close()
})

test('answers past maxBufferedBytes to a client that does not read close it with 1008', async t => {
  const server = await start({ maxBufferedBytes: 64 * 1024, closeTimeout: 200 })
  const { store } = server
  const ann = await server.user('ann')
  const chatId = await chatOf(store, [ann])
  await server.kv.put(chatId, 'big', '😀'.repeat(1000))
  const stalled = await server.connect(ann.token)
  t.is((await stalled.request({ type: 'send', chatId, text: '/get big' })).result.value.length, 2000, 'an answer of 8 KiB')
  const raw = /** @type {any} */ (stalled.ws)._socket
  raw.pause()
  // Asking is not reading: the answers pile up on the server.
  for (let i = 0; i < 2000; i++) stalled.send({ type: 'send', chatId, text: '/get big' })
  for (let i = 0; i < 200 && server.app.websocketServer.clients.size > 0; i++) await sleep(50)
  t.is(server.app.websocketServer.clients.size, 0, 'cut off')
  raw.resume()
  t.ok([1006, 1008].includes((await stalled.closed).code), 'its client sees the socket end')
  await server.close()
})

test('fan-out costs per message, not per socket: one watcher and the same store reads per message for 2 or 12 subscribers', async t => {
  /** @type {Record<string, number>} */
  const calls = {}
  /** @param {string} name */
  const counted = name => (/** @type {any} */ store) => (/** @type {any[]} */ ...args) => {
    calls[name] = (calls[name] || 0) + 1
    return store[name](...args)
  }
  const methods = ['getChat', 'checkChatMember', 'getChatMessages', 'watch']
  const server = await start({}, Object.fromEntries(methods.map(name => [name, counted(name)])))
  const { store } = server
  /** @type {Array<{ id: number, token: string }>} */
  const users = []
  for (let i = 0; i < 12; i++) users.push(await server.user(`u${i}`))
  const chatId = await chatOf(store, users)
  // A message in another chat first: until a model's first write carries its
  // stored layout, levelkit listens for that write (one listener more).
  const other = await chatOf(store, users)
  await store.addChatMessage({ chatId: other, senderId: users[0].id, text: 'first' })
  const idle = server.watchers()
  const clients = await Promise.all(users.map(user => server.connect(user.token)))
  const MESSAGES = 10
  /** @param {Client[]} subscribed */
  const readsPerMessage = async subscribed => {
    for (const client of subscribed) await client.request({ type: 'subscribe', chatId })
    t.is(server.watchers(), idle + 1, `${subscribed.length} subscribers: one watcher`)
    for (const key of methods) calls[key] = 0
    const ids = []
    for (let i = 0; i < MESSAGES; i++) ids.push(await store.addChatMessage({ chatId, senderId: users[i % users.length].id, text: `m${i}` }))
    for (const client of subscribed) {
      const got = []
      for (let i = 0; i < MESSAGES; i++) got.push((await client.nextOf('message')).message.id)
      t.same(got, ids, 'every subscriber gets every message, in order')
    }
    const counts = { ...calls }
    for (const client of subscribed) await client.request({ type: 'unsubscribe', chatId })
    return counts
  }
  const few = await readsPerMessage(clients.slice(0, 2))
  const many = await readsPerMessage(clients)
  t.same(many, few, `store calls for ${MESSAGES} messages: the same for 12 subscribers as for 2 (${JSON.stringify(many)})`)
  t.ok(many.getChat <= MESSAGES && many.checkChatMember === 0 && many.getChatMessages === 0 && many.watch === 0, 'at most one member read per message, and no read per socket')
  t.is(server.watchers(), idle, 'no watcher once no one is subscribed')
  await Promise.all(clients.map(client => client.close()))
  await server.close()
})

test('a frame is serialized once per message, and whispers go to their sender and recipients only', async t => {
  const server = await start()
  const { store } = server
  const users = [await server.user('ann'), await server.user('bob'), await server.user('cat'), await server.user('dan')]
  const chatId = await chatOf(store, users)
  const clients = await Promise.all(users.map(user => server.connect(user.token)))
  // Two sockets for bob: both get his whispers.
  const bob2 = await server.connect(users[1].token)
  for (const client of [...clients, bob2]) await client.request({ type: 'subscribe', chatId })
  /** @type {any[]} */
  const sent = []
  for (const socket of server.app.websocketServer.clients) {
    const original = socket.send.bind(socket)
    socket.send = (/** @type {any} */ data, /** @type {any} */ ...rest) => {
      sent.push(data)
      return original(data, ...rest)
    }
  }
  await store.addChatMessage({ chatId, senderId: users[0].id, text: 'to bob', recipients: [users[1].id] })
  await store.addChatMessage({ chatId, senderId: users[2].id, text: 'all' })
  const [a, b, c, d] = clients
  const ids = async (/** @type {Client} */ client, /** @type {number} */ n) => {
    const got = []
    for (let i = 0; i < n; i++) got.push((await client.nextOf('message')).message.id)
    return got
  }
  t.same([await ids(a, 2), await ids(b, 2), await ids(bob2, 2), await ids(c, 1), await ids(d, 1)], [[1, 2], [1, 2], [1, 2], [2], [2]], 'the whisper to ann, bob (both sockets); the message to all')
  await sleep(20)
  t.same([c.take('message'), d.take('message')], [[], []], 'cat and dan never see the whisper')
  const frames = sent.filter(data => Buffer.isBuffer(data))
  t.is(frames.length, 8, 'eight deliveries')
  t.is(new Set(frames).size, 2, 'of two frames, each serialized once')
  await Promise.all([...clients, bob2].map(client => client.close()))
  await server.close()
})

test('a live subscriber that falls behind catches up from the store, without a gap or a duplicate, then is live again', async t => {
  /** @type {number[]} */
  const reads = []
  const spy = (/** @type {ChatStore} */ store) => (/** @type {number} */ chatId, /** @type {any} */ options) => {
    if (options?.viewerId !== undefined) reads.push(options.viewerId)
    return store.getChatMessages(chatId, options)
  }
  const server = await start({ maxBufferedBytes: 64 * 1024, drainTimeout: 20000 }, { getChatMessages: spy })
  const { store } = server
  const [ann, bob] = [await server.user('ann'), await server.user('bob')]
  const chatId = await chatOf(store, [ann, bob])
  const slow = await server.connect(bob.token)
  await slow.request({ type: 'subscribe', chatId })
  const fast = await server.connect(ann.token)
  await fast.request({ type: 'subscribe', chatId })
  const raw = /** @type {any} */ (slow.ws)._socket
  raw.pause()
  // 6 MiB while bob does not read: past what the kernel holds for his socket.
  const COUNT = 7500
  const text = '😀'.repeat(200)
  for (let from = 1; from <= COUNT; from += 500) {
    await store.db.write(async (w) => {
      for (let id = from; id < from + 500 && id <= COUNT; id++) await store.messages.in(w).append(chatId, { id, chatId, senderId: ann.id, text, timestamp: Date.now() })
    })
  }
  let got = 0
  while (got < COUNT && (await fast.nextOf('message', 10000)).message.id === got + 1) got++
  t.is(got, COUNT, 'the reading client got every message')
  await sleep(100)
  raw.resume()
  /** @type {number[]} */
  const seen = []
  while (seen.length < COUNT) seen.push((await slow.nextOf('message', 10000)).message.id)
  t.same(seen, Array.from({ length: COUNT }, (_, i) => i + 1), 'the slow one too: each once, in order')
  t.ok(reads.includes(bob.id), 'it read from the store while behind')
  const readsBefore = reads.length
  await store.addChatMessage({ chatId, senderId: ann.id, text: 'and now' })
  t.is((await slow.nextOf('message')).message.id, COUNT + 1, 'then it is live again')
  t.is(reads.length, readsBefore, 'without another read of its own')
  await Promise.all([slow.close(), fast.close()])
  await server.close()
})

test('joining with history while messages pour in: what the hub kept meanwhile overflows, and the subscription reads again, without a gap', async t => {
  let delayed = 0
  // The subscription's first read returns late, with what was there when
  // it began: meanwhile 300 messages come, more than the hub keeps for it.
  const late = (/** @type {ChatStore} */ store) => async (/** @type {number} */ chatId, /** @type {any} */ options) => {
    const page = await store.getChatMessages(chatId, options)
    if (options?.viewerId !== undefined && delayed++ === 0) await sleep(300)
    return page
  }
  const server = await start({}, { getChatMessages: late })
  const { store } = server
  const [ann, bob] = [await server.user('ann'), await server.user('bob')]
  const chatId = await chatOf(store, [ann, bob])
  for (let i = 1; i <= 50; i++) await store.addChatMessage({ chatId, senderId: ann.id, text: `old ${i}` })
  const live = await server.connect(ann.token)
  await live.request({ type: 'subscribe', chatId })
  const joining = await server.connect(bob.token)
  await joining.request({ type: 'subscribe', chatId, after: 0 })
  for (let i = 1; i <= 300; i++) await store.addChatMessage({ chatId, senderId: ann.id, text: `new ${i}` })
  /** @type {number[]} */
  const seen = []
  while (seen.length < 350) seen.push((await joining.nextOf('message')).message.id)
  t.same(seen, Array.from({ length: 350 }, (_, i) => i + 1), 'history and new messages, each once, in order')
  t.ok(delayed >= 2, 'it read again')
  await sleep(50)
  t.same(joining.take('message'), [], 'and nothing more')
  await Promise.all([live.close(), joining.close()])
  await server.close()
})

test('heartbeat: a socket that does not answer pings is terminated; one that does stays', async t => {
  const server = await start({ pingInterval: 50 })
  const { store } = server
  const [ann, bob] = [await server.user('ann'), await server.user('bob')]
  const chatId = await chatOf(store, [ann, bob])
  const answering = await server.connect(ann.token)
  await answering.request({ type: 'subscribe', chatId })
  const idle = server.watchers()
  // Answers pings by hand until subscribed, then no more: a peer that is
  // gone without closing.
  let pings = 0
  let answer = true
  const silent = new Client(await new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://${server.base}/api/ws?token=${bob.token}`, { autoPong: false })
    ws.on('ping', () => {
      if (answer) ws.pong()
      else pings++
    })
    ws.once('open', () => resolve(ws))
    ws.once('error', reject)
  }))
  await silent.request({ type: 'subscribe', chatId })
  t.same(await answering.next(frame => frame.type === 'joined' && frame.userId === bob.id), { type: 'joined', chatId, userId: bob.id })
  answer = false
  t.is((await silent.closed).code, 1006, 'terminated without a close frame')
  t.ok(pings >= 1, `after ${pings} ping(s) unanswered`)
  t.same(await answering.nextOf('left'), { type: 'left', chatId, userId: bob.id }, 'and its user left')
  t.is(server.watchers(), idle, 'its subscription ended')
  await sleep(200)
  t.same(await answering.request({ type: 'active', chatId }), { type: 'active', chatId, userIds: [ann.id] }, 'the answering socket stays open through several pings')
  await answering.close()
  await server.close()
  try {
    await start({ pingInterval: -1 })
    t.fail('a negative pingInterval was taken')
  } catch (err) {
    t.match(String(err), /pingInterval/, 'a negative pingInterval is refused')
  }
  const app = await startServer({ live: { pingInterval: 50 } })
  const { token } = await signUp(app.api, 'eve')
  const ws = new WebSocket(`${app.base.replace('http', 'ws')}/api/ws?token=${token}`, { autoPong: false })
  const code = await new Promise(resolve => ws.once('close', resolve))
  t.is(code, 1006, "buildApp's live option reaches the plugin: a silent socket of the full app is terminated")
  await app.close()
})

test('app.close() closes every socket with 1001 and stops every watcher', async t => {
  const server = await start()
  const { store } = server
  const [ann, bob] = [await server.user('ann'), await server.user('bob')]
  const chatId = await chatOf(store, [ann, bob])
  const idle = server.watchers()
  const clients = [await server.connect(ann.token), await server.connect(bob.token), await server.connect(bob.token)]
  for (const client of clients) await client.request({ type: 'subscribe', chatId })
  const quiet = await server.connect(ann.token)
  t.is(server.watchers(), idle + 1, 'one watcher for the chat, whoever is subscribed')
  const closing = server.app.close()
  const codes = await Promise.all([...clients, quiet].map(client => client.closed))
  t.same(codes.map(closed => closed.code), [1001, 1001, 1001, 1001], 'every socket closed with 1001 (going away)')
  await closing
  t.is(server.watchers(), idle, 'no watcher left')
  t.same(clients.flatMap(client => client.take('left')), [], 'no presence frames while shutting down')
  try {
    await server.connect(ann.token)
    t.fail('connected after close')
  } catch {
    t.pass('no new sockets after close')
  }
  await server.db.close()
})
