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
  t.is(server.watchers(), watching - 2, 'their watchers stopped')
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

test('app.close() closes every socket with 1001 and stops every watcher', async t => {
  const server = await start()
  const { store } = server
  const [ann, bob] = [await server.user('ann'), await server.user('bob')]
  const chatId = await chatOf(store, [ann, bob])
  const idle = server.watchers()
  const clients = [await server.connect(ann.token), await server.connect(bob.token), await server.connect(bob.token)]
  for (const client of clients) await client.request({ type: 'subscribe', chatId })
  const quiet = await server.connect(ann.token)
  t.is(server.watchers(), idle + 3, 'a watcher per subscription')
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
