import fp from 'fastify-plugin'
import websocket from '@fastify/websocket'
import { codes } from 'levelkit'
import { runChatbot } from './chatbot.js'
import { UNAVAILABLE } from './errors.js'

const DEFAULTS = Object.freeze({
  // Bytes in one frame from a client: a larger one closes its socket with
  // 1009 before it is buffered whole. A send frame of 200 characters is
  // under 2 KiB.
  maxPayload: 16 * 1024,
  // Bytes waiting to go out to a client: past this, it is closed with 1008
  // rather than buffered for without bound.
  maxBufferedBytes: 1024 * 1024,
  // Milliseconds a subscription waits for a client to read what is buffered
  // (past half of maxBufferedBytes) before the client is closed with 1008.
  drainTimeout: 10000,
  // Subscriptions per socket.
  maxSubscriptions: 100,
  // Frames read from a socket and not yet answered: past this, the socket is
  // not read until they are (TCP holds back the client).
  maxQueuedFrames: 32,
  // Milliseconds a closed socket has to answer the close frame, on app
  // close and otherwise, before it is cut.
  closeTimeout: 1000,
  // Milliseconds between pings: a socket that has not answered one by the
  // next is terminated (its peer is gone without closing). 0: no pings.
  pingInterval: 30000
})

/**
 * The plugin's options (buildApp's `live`), each defaulting to DEFAULTS'.
 * @typedef {{ [K in keyof typeof DEFAULTS]?: number }} LiveOptions
 */

const DRAIN_POLL = 20
const OPEN = 1
// Messages a subscription reads from the store at a time while it catches
// up (its history, or what it fell behind on).
const PAGE = 100
// Messages a hub keeps for a subscription while it catches up; past this
// they are dropped and the subscription reads them from the store.
const MAX_PENDING = 256
const TEXT = Object.freeze({ binary: false })

/**
 * What the plugin needs of the app, decorated before it is registered.
 * @typedef {object} LiveApp
 * @property {Store} store the ChatStore, or a store with its methods
 * @property {import('./kv.js').Kv} kv the chatbot's key-value store
 * @property {(request: import('fastify').FastifyRequest) => Promise<{ userId: number, token: string } | null>} authenticate
 * @property {(token: string) => Promise<number | null>} [sessionUser] the user of a session token, or null once it has ended: if decorated, each heartbeat checks the open sockets' sessions with it
 *
 * @typedef {Pick<import('levelkit/chat').ChatStore, 'checkChatMember' | 'getChat' | 'getChatMessages' | 'addChatMessage' | 'watch'>} Store
 * @typedef {import('levelkit/chat').Message} Message
 *
 * A client's socket: its user, the session it came with, and its
 * subscriptions by chat.
 * @typedef {object} Connection
 * @property {import('ws').WebSocket} socket
 * @property {number} userId
 * @property {string} token
 * @property {Map<number, Subscription>} subscriptions
 * @property {Promise<void>} queue the frames read, answered one at a time in order
 * @property {number} queued
 * @property {boolean} closing
 * @property {boolean} alive it answered the last ping
 * @property {Promise<void>} closed
 *
 * The one reader of a chat's new messages for every socket subscribed to
 * it: a store watch of its own (whispers included), and one read of the
 * chat's members per message.
 * @typedef {object} Hub
 * @property {number} chatId
 * @property {Set<Subscription>} subscriptions
 * @property {number} position the id of the last message it delivered (or the chat's last when it started)
 * @property {Promise<void>} ready resolves once `position` is known
 * @property {number} waiting subscribers waiting for it to be ready
 * @property {AbortController} controller stops its watch
 * @property {boolean} stopped
 *
 * One socket's subscription to one chat. Live, its hub hands it each new
 * message; otherwise it reads from the store on its own (its history after
 * `after`, or what it fell behind on while its client was slow) and its hub
 * keeps the new messages for it meanwhile, in `pending`.
 * @typedef {object} Subscription
 * @property {Connection} connection
 * @property {Hub} hub
 * @property {number} last the id of the last message it is past: delivered, or not its to see
 * @property {boolean} live
 * @property {Delivery[]} pending
 * @property {boolean} dropped pending overflowed since its last read began
 * @property {boolean} ended
 *
 * A new message and its frame, serialized once for every socket.
 * @typedef {{ message: Message, data: Buffer }} Delivery
 *
 * @typedef {{ type: 'subscribe', chatId: number, after?: number }
 *   | { type: 'unsubscribe', chatId: number }
 *   | { type: 'send', chatId: number, text: string, to?: number[] }
 *   | { type: 'active', chatId: number }} Frame
 */

/**
 * The live side of the chat service, `GET /api/ws`: a WebSocket per client,
 * one JSON object per frame (the protocol is in docs/server.md). A chat's
 * subscribers share one reader of its new messages (a hub): each message is
 * read and serialized once, whoever and however many are subscribed. A
 * subscription first reads its history after `after` on its own, then takes
 * the hub's messages: every message in id order, with no gap and no
 * duplicate, at the client's pace. Decorates `app.live.endSession(token)`,
 * which closes the sockets opened with that session (call it on sign-out).
 * Pings every socket each pingInterval and terminates those that did not
 * answer the last ping. On app close every socket is closed with 1001 and
 * every watcher stopped.
 * @param {import('fastify').FastifyInstance} fastify
 * @param {LiveOptions} [options]
 */
async function livePlugin (fastify, options = {}) {
  const settings = { ...DEFAULTS, ...options }
  if (!(Number.isFinite(settings.pingInterval) && settings.pingInterval >= 0)) throw new TypeError('pingInterval must be a number of milliseconds (0: no pings)')
  const app = /** @type {import('fastify').FastifyInstance & LiveApp} */ (fastify)
  const { store, kv } = app
  /** @type {Set<Connection>} */
  const connections = new Set()
  /**
   * Per chat, the sockets subscribed to it, by user: a user joins with
   * their first socket and leaves with their last.
   * @type {Map<number, Map<number, Set<Connection>>>}
   */
  const rooms = new Map()
  /** @type {Map<number, Hub>} */
  const hubs = new Map()
  /** @type {WeakMap<import('fastify').FastifyRequest, { userId: number, token: string }>} */
  const sessions = new WeakMap()
  let closing = false
  let rechecking = false
  const heartbeat = settings.pingInterval > 0 ? setInterval(ping, settings.pingInterval).unref() : null

  await app.register(websocket, {
    // closeTimeout (ws 8.23) is newer than @types/ws.
    options: /** @type {{ maxPayload: number }} */ ({ maxPayload: settings.maxPayload, closeTimeout: settings.closeTimeout }),
    // In place of the plugin's own, which closes sockets without a code:
    // clients must see 1001 (going away), and their watchers stop now.
    preClose (done) {
      shutDown()
      app.websocketServer.close()
      done()
    }
  })

  app.decorate('live', {
    /** Close the sockets opened with this session (signed out), with 1008. @param {string} token */
    endSession (token) {
      for (const connection of connections) {
        if (connection.token === token) closeConnection(connection, 1008, 'The session has ended')
      }
    }
  })

  // preClose has closed every socket: give clients closeTimeout to answer
  // the close frame, then cut the rest, so that none is open once app.close()
  // resolves (and the process can exit with the 1001 frames sent).
  app.addHook('onClose', async () => {
    if (heartbeat !== null) clearInterval(heartbeat)
    let timer
    await Promise.race([
      Promise.all(Array.from(connections, connection => connection.closed)),
      new Promise(resolve => { timer = setTimeout(resolve, settings.closeTimeout) })
    ])
    clearTimeout(timer)
    for (const connection of connections) connection.socket.terminate()
  })

  app.route({
    method: 'GET',
    url: '/api/ws',
    async preValidation (request, reply) {
      const session = await app.authenticate(request)
      if (session === null) {
        reply.code(401).send({ error: { code: 'UNAUTHORIZED', message: 'Sign in first: a session cookie, an Authorization: Bearer token or ?token=' } })
        return reply
      }
      sessions.set(request, session)
    },
    async handler (request, reply) {
      reply.code(426).header('upgrade', 'websocket')
      return { error: { code: 'UPGRADE_REQUIRED', message: 'GET /api/ws is a WebSocket endpoint: open it with a WebSocket client' } }
    },
    wsHandler (socket, request) {
      accept(socket, /** @type {{ userId: number, token: string }} */ (sessions.get(request)))
    }
  })

  function shutDown () {
    closing = true
    if (heartbeat !== null) clearInterval(heartbeat)
    // All marked first, so that no one is told of the others leaving.
    const open = Array.from(connections).filter(connection => !connection.closing)
    for (const connection of open) connection.closing = true
    for (const connection of open) hangUp(connection, 1001, 'The server is shutting down')
  }

  /**
   * The heartbeat: a socket that has not answered the last ping is cut (a
   * peer that vanished without closing, whose subscriptions would otherwise
   * stay); the others are pinged again.
   */
  function ping () {
    for (const connection of connections) {
      if (connection.closing || connection.socket.readyState !== OPEN) continue
      if (!connection.alive) {
        connection.closing = true
        drop(connection)
        connection.socket.terminate()
        continue
      }
      connection.alive = false
      connection.socket.ping()
    }
    if (typeof app.sessionUser === 'function' && !rechecking) {
      rechecking = true
      recheckSessions(app.sessionUser).finally(() => { rechecking = false })
    }
  }

  /**
   * A session can end elsewhere: signed out through another server on the
   * same database (endSession() reaches this process's sockets only), or
   * expired. Each heartbeat reads the session of the open sockets, once per
   * token, and closes with 1008 those whose session has ended. A read that
   * fails (the database out of reach) closes nothing: the next one decides.
   * @param {(token: string) => Promise<number | null>} sessionUser
   */
  async function recheckSessions (sessionUser) {
    /** @type {Map<string, Connection[]>} */
    const byToken = new Map()
    for (const connection of connections) {
      if (connection.closing) continue
      const same = byToken.get(connection.token)
      if (same === undefined) byToken.set(connection.token, [connection])
      else same.push(connection)
    }
    await Promise.all(Array.from(byToken, async ([token, sockets]) => {
      const userId = await sessionUser(token).catch(() => undefined)
      if (userId === undefined || userId === sockets[0].userId) return
      for (const connection of sockets) closeConnection(connection, 1008, 'The session has ended')
    }))
  }

  /** @param {import('ws').WebSocket} socket @param {{ userId: number, token: string }} session */
  function accept (socket, { userId, token }) {
    if (closing) {
      socket.close(1001, 'The server is shutting down')
      return
    }
    /** @type {Connection} */
    const connection = {
      socket,
      userId,
      token,
      subscriptions: new Map(),
      queue: Promise.resolve(),
      queued: 0,
      closing: false,
      alive: true,
      closed: new Promise(resolve => socket.once('close', () => resolve()))
    }
    connections.add(connection)
    socket.on('close', () => {
      // Closing too: a subscribe that was waiting on the store must not
      // join a hub for a socket that is gone.
      connection.closing = true
      connections.delete(connection)
      drop(connection)
    })
    socket.on('pong', () => { connection.alive = true })
    socket.on('message', (data, isBinary) => receive(connection, /** @type {Buffer} */ (data), isBinary))
  }

  /**
   * Answer a socket's frames one at a time, in the order they came: a
   * client that sends `subscribe` then `send` then `unsubscribe` gets them
   * done in that order, and one answer per frame, in that order.
   * @param {Connection} connection @param {Buffer} data @param {boolean} isBinary
   */
  function receive (connection, data, isBinary) {
    if (connection.closing) return
    connection.queued++
    if (connection.queued >= settings.maxQueuedFrames) connection.socket.pause()
    connection.queue = connection.queue
      .then(() => answer(connection, data, isBinary))
      .finally(() => {
        connection.queued--
        if (connection.socket.isPaused && connection.queued < settings.maxQueuedFrames) connection.socket.resume()
      })
  }

  /** @param {Connection} connection @param {Buffer} data @param {boolean} isBinary */
  async function answer (connection, data, isBinary) {
    const read = readFrame(data, isBinary)
    if ('problem' in read) {
      send(connection, errorFrame('BAD_REQUEST', read.problem, read.frame))
      return
    }
    const { frame } = read
    try {
      if (frame.type === 'subscribe') await subscribe(connection, frame.chatId, frame.after)
      else if (frame.type === 'unsubscribe') unsubscribe(connection, frame.chatId)
      else if (frame.type === 'send') await sendMessage(connection, frame.chatId, frame.text, frame.to)
      else await active(connection, frame.chatId)
    } catch (err) {
      const { code, message } = describeError(err)
      send(connection, errorFrame(code, message, frame))
    }
  }

  /**
   * Join the chat's hub. Without `after`, or with one at or past where the
   * hub is, the subscription is live at once; with an earlier one it reads
   * its history first (catchUp()).
   * @param {Connection} connection @param {number} chatId @param {number | undefined} after
   */
  async function subscribe (connection, chatId, after) {
    if (connection.subscriptions.has(chatId)) {
      throw coded('BAD_REQUEST', `Already subscribed to chat ${chatId} on this socket: unsubscribe first`)
    }
    if (connection.subscriptions.size >= settings.maxSubscriptions) {
      throw coded('TOO_MANY_SUBSCRIPTIONS', `A socket subscribes to at most ${settings.maxSubscriptions} chats`)
    }
    await assertMember(chatId, connection.userId)
    if (connection.closing) return
    const hub = await readyHub(chatId)
    if (connection.closing) {
      if (hub.subscriptions.size === 0 && hub.waiting === 0) stopHub(hub)
      return
    }
    /** @type {Subscription} */
    const subscription = { connection, hub, last: after === undefined ? hub.position : after, live: true, pending: [], dropped: false, ended: false }
    connection.subscriptions.set(chatId, subscription)
    hub.subscriptions.add(subscription)
    send(connection, { type: 'subscribed', chatId })
    enter(connection, chatId)
    if (subscription.last < hub.position) catchUp(subscription)
  }

  /**
   * The chat's hub, started if there is none, once it knows where it is.
   * @param {number} chatId @returns {Promise<Hub>}
   */
  async function readyHub (chatId) {
    while (true) {
      const hub = hubs.get(chatId) ?? startHub(chatId)
      hub.waiting++
      try {
        await hub.ready
      } finally {
        hub.waiting--
      }
      // Ended meanwhile (the chat was deleted, the store failed): a new one
      // finds out why.
      if (!hub.stopped) return hub
    }
  }

  /** @param {number} chatId @returns {Hub} */
  function startHub (chatId) {
    /** @type {Hub} */
    const hub = { chatId, subscriptions: new Set(), position: 0, ready: Promise.resolve(), waiting: 0, controller: new AbortController(), stopped: false }
    hubs.set(chatId, hub)
    hub.ready = (async () => {
      // The chat's last message id, read before any subscription joins:
      // whatever they read of the history afterwards reaches at least here,
      // and the hub delivers everything after it.
      const newest = await store.getChatMessages(chatId, { n: 1, allWhispers: true })
      if (newest === null) throw coded(codes.NOT_FOUND, `Chat ${chatId} was deleted`)
      hub.position = newest.length === 0 ? 0 : newest[0].id
      run(hub)
    })()
    hub.ready.catch(() => stopHub(hub))
    return hub
  }

  /**
   * Read the chat's new messages, once for all its subscriptions, until the
   * hub is stopped or the watch ends (the chat was deleted, the store closed
   * or failed: then every subscription ends, told why).
   * @param {Hub} hub
   */
  async function run (hub) {
    const { chatId, controller: { signal } } = hub
    /** @type {{ code: string, message: string } | null} */
    let reason = null
    try {
      for await (const message of store.watch(chatId, { after: hub.position, signal, allWhispers: true })) {
        // A member removed since subscribing reads no more: the members
        // are read per message (one point read for every subscription),
        // since removal does not reach the watch.
        const chat = await store.getChat(chatId)
        if (signal.aborted) return
        if (chat === null) break
        deliver(hub, message, chat.members)
      }
      if (!signal.aborted) {
        const chat = await store.getChat(chatId).catch((/** @type {Error} */ err) => err)
        reason = chat === null
          ? { code: codes.NOT_FOUND, message: `Chat ${chatId} was deleted` }
          : chat instanceof Error ? describeError(chat) : { code: 'INTERNAL', message: `The subscription to chat ${chatId} ended` }
      }
    } catch (err) {
      reason = describeError(err)
    }
    if (signal.aborted || reason === null) return
    stopHub(hub)
    for (const subscription of Array.from(hub.subscriptions)) endSubscription(subscription, reason)
  }

  /** @param {Hub} hub */
  function stopHub (hub) {
    hub.stopped = true
    hub.controller.abort()
    if (hubs.get(hub.chatId) === hub) hubs.delete(hub.chatId)
  }

  /**
   * A new message to every subscription of its chat that may see it: the
   * frame is serialized once.
   * @param {Hub} hub @param {Message} message @param {number[]} members
   */
  function deliver (hub, message, members) {
    hub.position = message.id
    /** @type {Delivery} */
    const delivery = { message, data: Buffer.from(JSON.stringify({ type: 'message', chatId: hub.chatId, message })) }
    for (const subscription of hub.subscriptions) {
      if (!members.includes(subscription.connection.userId)) {
        endSubscription(subscription, { code: codes.FORBIDDEN, message: `You are no longer a member of chat ${hub.chatId}` })
      } else if (subscription.live) {
        offer(subscription, delivery)
      } else {
        if (subscription.pending.length >= MAX_PENDING) {
          subscription.pending = []
          subscription.dropped = true
        }
        subscription.pending.push(delivery)
      }
    }
  }

  /**
   * Send a live subscription a message it is not past and may see. A client
   * that falls behind (past half of maxBufferedBytes waiting) is not sent
   * more: its subscription catches up from the store at its pace.
   * @param {Subscription} subscription @param {Delivery} delivery
   */
  function offer (subscription, { message, data }) {
    if (message.id <= subscription.last) return
    subscription.last = message.id
    const { connection } = subscription
    if (!visible(message, connection.userId)) return
    send(connection, data)
    if (connection.socket.bufferedAmount > settings.maxBufferedBytes / 2 && !connection.closing && !subscription.ended) catchUp(subscription)
  }

  /** @param {Subscription} subscription */
  function catchUp (subscription) {
    subscription.live = false
    subscription.pending = []
    read(subscription)
  }

  /**
   * A subscription that is not live reads from the store, after the last
   * message it is past, a page at a time as its client reads, until a page
   * reaches the end. That read began after the hub delivered what it kept
   * for it (or after its first read of the store, made before the
   * subscription joined), so the messages it kept follow on without a gap;
   * those the read already gave are skipped by id. Then it is live again.
   * @param {Subscription} subscription
   */
  async function read (subscription) {
    const { connection, hub: { chatId } } = subscription
    try {
      while (true) {
        if (connection.socket.bufferedAmount > settings.maxBufferedBytes / 2) await drain(connection, subscription)
        if (subscription.ended || connection.closing) return
        subscription.dropped = false
        const [page, member] = await Promise.all([
          store.getChatMessages(chatId, { from: subscription.last + 1, n: PAGE, viewerId: connection.userId }),
          store.checkChatMember(chatId, connection.userId)
        ])
        if (subscription.ended) return
        if (page === null) return endSubscription(subscription, { code: codes.NOT_FOUND, message: `Chat ${chatId} was deleted` })
        if (!member) return endSubscription(subscription, { code: codes.FORBIDDEN, message: `You are no longer a member of chat ${chatId}` })
        for (const message of page) {
          send(connection, JSON.stringify({ type: 'message', chatId, message }))
          subscription.last = message.id
          if (connection.socket.bufferedAmount > settings.maxBufferedBytes / 2) await drain(connection, subscription)
          if (subscription.ended || connection.closing) return
        }
        if (page.length === PAGE || subscription.dropped) continue
        const { pending } = subscription
        subscription.pending = []
        subscription.live = true
        for (const delivery of pending) {
          offer(subscription, delivery)
          if (!subscription.live || subscription.ended) return
        }
        return
      }
    } catch (err) {
      endSubscription(subscription, describeError(err))
    }
  }

  /**
   * Wait until the socket has sent all but half of maxBufferedBytes; a
   * client that does not read for drainTimeout is closed with 1008.
   * @param {Connection} connection @param {Subscription} subscription
   */
  async function drain (connection, subscription) {
    const deadline = Date.now() + settings.drainTimeout
    while (connection.socket.bufferedAmount > settings.maxBufferedBytes / 2) {
      if (subscription.ended || connection.closing) return
      if (Date.now() >= deadline) {
        closeConnection(connection, 1008, 'Too slow: messages are not being read')
        return
      }
      await new Promise(resolve => setTimeout(resolve, DRAIN_POLL))
    }
  }

  /**
   * The server ends a subscription, telling its client why.
   * @param {Subscription} subscription @param {{ code: string, message: string }} reason
   */
  function endSubscription (subscription, reason) {
    const { connection, hub: { chatId } } = subscription
    if (subscription.ended || connection.subscriptions.get(chatId) !== subscription) return
    leave(connection, chatId)
    send(connection, { type: 'unsubscribed', chatId, ...reason })
  }

  /** @param {Connection} connection @param {number} chatId */
  function unsubscribe (connection, chatId) {
    if (connection.subscriptions.has(chatId)) leave(connection, chatId)
    send(connection, { type: 'unsubscribed', chatId })
  }

  /**
   * A message, or a chatbot command (answered to this socket, not stored).
   * @param {Connection} connection @param {number} chatId @param {string} text @param {number[] | undefined} to
   */
  async function sendMessage (connection, chatId, text, to) {
    const answer = await runChatbot({ store, kv, chatId, userId: connection.userId, text })
    if (answer !== null) {
      send(connection, { type: 'bot', chatId, ...answer })
      return
    }
    const id = await store.addChatMessage({ chatId, senderId: connection.userId, text, recipients: to })
    send(connection, { type: 'sent', chatId, id })
  }

  /**
   * The chat's members with a live subscription, for a member.
   * @param {Connection} connection @param {number} chatId
   */
  async function active (connection, chatId) {
    const chat = await store.getChat(chatId)
    if (chat === null || !chat.members.includes(connection.userId)) throw notMember(chatId, connection.userId)
    const room = rooms.get(chatId)
    // Members only: one removed since subscribing is not listed.
    const userIds = room === undefined ? [] : Array.from(room.keys()).filter(id => chat.members.includes(id)).sort((a, b) => a - b)
    send(connection, { type: 'active', chatId, userIds })
  }

  /** @param {number} chatId @param {number} userId */
  async function assertMember (chatId, userId) {
    if (!(await store.checkChatMember(chatId, userId))) throw notMember(chatId, userId)
  }

  /** @param {Connection} connection @param {number} chatId */
  function enter (connection, chatId) {
    let room = rooms.get(chatId)
    if (room === undefined) rooms.set(chatId, room = new Map())
    const sockets = room.get(connection.userId)
    if (sockets !== undefined) {
      sockets.add(connection)
      return
    }
    room.set(connection.userId, new Set([connection]))
    broadcast(chatId, { type: 'joined', chatId, userId: connection.userId })
  }

  /**
   * End a subscription: take it out of its hub (the last one out stops the
   * hub's watch), and if it was the user's last socket in the chat, tell
   * the others they left.
   * @param {Connection} connection @param {number} chatId
   */
  function leave (connection, chatId) {
    const subscription = connection.subscriptions.get(chatId)
    if (subscription !== undefined) {
      subscription.ended = true
      connection.subscriptions.delete(chatId)
      const { hub } = subscription
      hub.subscriptions.delete(subscription)
      if (hub.subscriptions.size === 0 && hub.waiting === 0) stopHub(hub)
    }
    const room = rooms.get(chatId)
    const sockets = room?.get(connection.userId)
    if (room === undefined || sockets === undefined || !sockets.delete(connection) || sockets.size > 0) return
    room.delete(connection.userId)
    if (room.size === 0) rooms.delete(chatId)
    broadcast(chatId, { type: 'left', chatId, userId: connection.userId })
  }

  /** @param {Connection} connection */
  function drop (connection) {
    for (const chatId of Array.from(connection.subscriptions.keys())) leave(connection, chatId)
  }

  /** @param {number} chatId @param {object} frame */
  function broadcast (chatId, frame) {
    const room = rooms.get(chatId)
    if (room === undefined) return
    const data = JSON.stringify(frame)
    for (const sockets of room.values()) for (const connection of sockets) send(connection, data)
  }

  /**
   * Send a frame (an object, or one already serialized), unless the socket
   * is closing. A client whose socket has more than maxBufferedBytes
   * waiting is closed with 1008: it is not reading.
   * @param {Connection} connection @param {object | string | Buffer} frame
   */
  function send (connection, frame) {
    if (connection.closing || connection.socket.readyState !== OPEN) return
    if (Buffer.isBuffer(frame)) connection.socket.send(frame, TEXT)
    else connection.socket.send(typeof frame === 'string' ? frame : JSON.stringify(frame))
    if (connection.socket.bufferedAmount > settings.maxBufferedBytes) closeConnection(connection, 1008, 'Too slow: messages are not being read')
  }

  /** @param {Connection} connection @param {number} code @param {string} reason */
  function closeConnection (connection, code, reason) {
    if (connection.closing) return
    connection.closing = true
    hangUp(connection, code, reason)
  }

  /** Stop a closing socket's subscriptions, and close it. @param {Connection} connection @param {number} code @param {string} reason */
  function hangUp (connection, code, reason) {
    drop(connection)
    connection.socket.close(code, reason)
  }

  /**
   * An error as a frame's `code` and `message`: the store's own (its codes
   * are stable, e.g. LEVELKIT_FORBIDDEN), ours, or INTERNAL for anything
   * else (logged, not shown). A database out of reach keeps its code with a
   * message of ours (levelkit's names hosts), and is logged.
   * @param {unknown} err @returns {{ code: string, message: string }}
   */
  function describeError (err) {
    const { code, message } = /** @type {any} */ (err) || {}
    if (typeof code === 'string' && Object.hasOwn(UNAVAILABLE, code)) {
      app.log.error({ err }, 'live: the database is out of reach')
      return { code, message: UNAVAILABLE[/** @type {keyof typeof UNAVAILABLE} */ (code)] }
    }
    if (typeof code === 'string' && typeof message === 'string' && (code.startsWith('LEVELKIT_') || ownCodes.has(code))) return { code, message }
    app.log.error({ err }, 'live: unexpected error')
    return { code: 'INTERNAL', message: 'Internal error' }
  }
}

/**
 * Whether a user sees a message: whispers only their sender and recipients.
 * @param {Message} message @param {number} userId
 */
function visible (message, userId) {
  return message.recipients === undefined || message.senderId === userId || message.recipients.includes(userId)
}

const ownCodes = new Set(['BAD_REQUEST', 'TOO_MANY_SUBSCRIPTIONS'])

/** The fields of each client frame, and what each must be. @type {Record<string, Record<string, (value: unknown) => string | null>>} */
const FRAMES = {
  subscribe: { chatId: positiveId, after: optional(nonNegativeInteger) },
  unsubscribe: { chatId: positiveId },
  send: { chatId: positiveId, text: string, to: optional(idList) },
  active: { chatId: positiveId }
}

/**
 * A client's frame, checked: a JSON object of a known type with exactly its
 * fields; else what is wrong, and what was readable of it.
 * @param {Buffer} data @param {boolean} isBinary
 * @returns {{ frame: Frame } | { problem: string, frame?: any }}
 */
function readFrame (data, isBinary) {
  if (isBinary) return { problem: 'Frames are JSON text, not binary' }
  let frame
  try {
    frame = JSON.parse(data.toString('utf8'))
  } catch {
    return { problem: 'A frame must be JSON' }
  }
  if (frame === null || typeof frame !== 'object' || Array.isArray(frame)) return { problem: 'A frame must be a JSON object' }
  const { type } = frame
  if (typeof type !== 'string' || !Object.hasOwn(FRAMES, type)) {
    return { problem: `Unknown frame type ${JSON.stringify(type)}: one of subscribe, unsubscribe, send, active` }
  }
  const fields = FRAMES[type]
  const unknown = Object.keys(frame).filter(key => key !== 'type' && !Object.hasOwn(fields, key))
  if (unknown.length > 0) return { problem: `${type}: unknown field(s) ${unknown.map(key => JSON.stringify(key)).join(', ')}`, frame }
  for (const [key, check] of Object.entries(fields)) {
    const problem = check(frame[key])
    if (problem !== null) return { problem: `${type}: ${key} ${problem}`, frame }
  }
  return { frame }
}

/** @param {unknown} value */
function positiveId (value) {
  return Number.isSafeInteger(value) && /** @type {number} */ (value) >= 1 ? null : 'must be a positive integer'
}

/** @param {unknown} value */
function nonNegativeInteger (value) {
  return Number.isSafeInteger(value) && /** @type {number} */ (value) >= 0 ? null : 'must be a non-negative integer'
}

/** @param {unknown} value */
function string (value) {
  return typeof value === 'string' ? null : 'must be a string'
}

/** @param {unknown} value */
function idList (value) {
  return Array.isArray(value) && value.length >= 1 && value.length <= 1000 && value.every(id => positiveId(id) === null)
    ? null
    : 'must be a non-empty array of user ids (positive integers)'
}

/** @param {(value: unknown) => string | null} check */
function optional (check) {
  return (/** @type {unknown} */ value) => value === undefined ? null : check(value)
}

/**
 * @param {string} code @param {string} message @param {any} [frame] the request, if it was a JSON object
 */
function errorFrame (code, message, frame) {
  /** @type {{ type: 'error', code: string, message: string, request?: string, chatId?: number }} */
  const error = { type: 'error', code, message }
  if (frame && typeof frame.type === 'string' && Object.hasOwn(FRAMES, frame.type)) error.request = frame.type
  if (frame && positiveId(frame.chatId) === null) error.chatId = frame.chatId
  return error
}

/** @param {number} chatId @param {number} userId */
function notMember (chatId, userId) {
  return coded(codes.FORBIDDEN, `User ${userId} is not a member of chat ${chatId}`)
}

/** @param {string} code @param {string} message */
function coded (code, message) {
  return Object.assign(new Error(message), { code })
}

/**
 * The plugin: register it on an app decorated with `store`, `kv` and
 * `authenticate`. It registers @fastify/websocket itself, with its limits.
 */
export const live = fp(livePlugin, {
  fastify: '5.x',
  name: 'levelkit-live',
  decorators: { fastify: ['store', 'kv', 'authenticate'] }
})
