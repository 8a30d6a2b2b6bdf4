import fp from 'fastify-plugin'
import websocket from '@fastify/websocket'
import { codes } from 'levelkit'
import { runChatbot } from './chatbot.js'

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
  // Subscriptions per socket: each is a watcher of the store.
  maxSubscriptions: 100,
  // Frames read from a socket and not yet answered: past this, the socket is
  // not read until they are (TCP holds back the client).
  maxQueuedFrames: 32,
  // Milliseconds a closed socket has to answer the close frame, on app
  // close and otherwise, before it is cut.
  closeTimeout: 1000
})

const DRAIN_POLL = 20
const OPEN = 1

/**
 * What the plugin needs of the app, decorated before it is registered.
 * @typedef {object} LiveApp
 * @property {Store} store the ChatStore, or a store with its methods
 * @property {import('./kv.js').Kv} kv the chatbot's key-value store
 * @property {(request: import('fastify').FastifyRequest) => Promise<{ userId: number, token: string } | null>} authenticate
 *
 * @typedef {Pick<import('levelkit/chat').ChatStore, 'checkChatMember' | 'getChat' | 'addChatMessage' | 'watch'>} Store
 *
 * A client's socket: its user, the session it came with, and one
 * AbortController per subscribed chat, which stops that chat's watcher.
 * @typedef {object} Connection
 * @property {import('ws').WebSocket} socket
 * @property {number} userId
 * @property {string} token
 * @property {Map<number, AbortController>} subscriptions
 * @property {Promise<void>} queue the frames read, answered one at a time in order
 * @property {number} queued
 * @property {boolean} closing
 * @property {Promise<void>} closed
 *
 * @typedef {{ type: 'subscribe', chatId: number, after?: number }
 *   | { type: 'unsubscribe', chatId: number }
 *   | { type: 'send', chatId: number, text: string, to?: number[] }
 *   | { type: 'active', chatId: number }} Frame
 */

/**
 * The live side of the chat service, `GET /api/ws`: a WebSocket per client,
 * one JSON object per frame (the protocol is in docs/server.md). Each
 * subscription is a ChatStore watch() of its own, so a client gets every
 * message after `after` in id order with no gap and no duplicate, at its own
 * pace. Decorates `app.live.endSession(token)`, which closes the sockets
 * opened with that session (call it on sign-out). On app close every socket
 * is closed with 1001 and every watcher stopped.
 * @param {import('fastify').FastifyInstance} fastify
 * @param {Partial<typeof DEFAULTS>} [options]
 */
async function livePlugin (fastify, options = {}) {
  const settings = { ...DEFAULTS, ...options }
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
  /** @type {WeakMap<import('fastify').FastifyRequest, { userId: number, token: string }>} */
  const sessions = new WeakMap()
  let closing = false

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
    // All marked first, so that no one is told of the others leaving.
    const open = Array.from(connections).filter(connection => !connection.closing)
    for (const connection of open) connection.closing = true
    for (const connection of open) hangUp(connection, 1001, 'The server is shutting down')
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
      closed: new Promise(resolve => socket.once('close', () => resolve()))
    }
    connections.add(connection)
    socket.on('close', () => {
      connections.delete(connection)
      drop(connection)
    })
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

  /** @param {Connection} connection @param {number} chatId @param {number | undefined} after */
  async function subscribe (connection, chatId, after) {
    if (connection.subscriptions.has(chatId)) {
      throw coded('BAD_REQUEST', `Already subscribed to chat ${chatId} on this socket: unsubscribe first`)
    }
    if (connection.subscriptions.size >= settings.maxSubscriptions) {
      throw coded('TOO_MANY_SUBSCRIPTIONS', `A socket subscribes to at most ${settings.maxSubscriptions} chats`)
    }
    await assertMember(chatId, connection.userId)
    if (connection.closing) return
    const controller = new AbortController()
    connection.subscriptions.set(chatId, controller)
    // Called now: without `after`, the watch starts at the chat's last
    // message as of now.
    const messages = store.watch(chatId, { after, signal: controller.signal, viewerId: connection.userId })
    send(connection, { type: 'subscribed', chatId })
    enter(connection, chatId)
    pump(connection, chatId, controller, messages)
  }

  /**
   * Deliver a subscription's messages as its watcher yields them, at the
   * pace the client reads: past half of maxBufferedBytes, wait for the
   * socket to drain (the watcher reads on from where it was: nothing is
   * lost or buffered meanwhile). The subscription ends when unsubscribed or
   * closed (aborted), or, told with an `unsubscribed` frame, when the user
   * is no longer a member, the chat is deleted or the store fails.
   * @param {Connection} connection @param {number} chatId @param {AbortController} controller
   * @param {AsyncIterable<import('levelkit/chat').Message>} messages
   */
  async function pump (connection, chatId, controller, messages) {
    const { signal } = controller
    /** @type {{ code: string, message: string } | null} */
    let reason = null
    try {
      for await (const message of messages) {
        // A member removed since subscribing reads no more: checked per
        // message, one point read, since removal does not reach the watcher.
        const member = await store.checkChatMember(chatId, connection.userId)
        if (signal.aborted) return
        if (!member) {
          reason = { code: codes.FORBIDDEN, message: `You are no longer a member of chat ${chatId}` }
          break
        }
        send(connection, { type: 'message', chatId, message })
        if (connection.socket.bufferedAmount > settings.maxBufferedBytes / 2) await drain(connection, signal)
      }
      if (reason === null && !signal.aborted) {
        // The watch ended by itself: the chat was deleted, or the database closed.
        const chat = await store.getChat(chatId).catch((/** @type {Error} */ err) => err)
        reason = chat === null
          ? { code: codes.NOT_FOUND, message: `Chat ${chatId} was deleted` }
          : chat instanceof Error ? describeError(chat) : { code: 'INTERNAL', message: `The subscription to chat ${chatId} ended` }
      }
    } catch (err) {
      reason = describeError(err)
    }
    if (signal.aborted || connection.subscriptions.get(chatId) !== controller) return
    leave(connection, chatId)
    send(connection, { type: 'unsubscribed', chatId, ...reason })
  }

  /**
   * Wait until the socket has sent all but half of maxBufferedBytes; a
   * client that does not read for drainTimeout is closed with 1008.
   * @param {Connection} connection @param {AbortSignal} signal
   */
  async function drain (connection, signal) {
    const deadline = Date.now() + settings.drainTimeout
    while (connection.socket.bufferedAmount > settings.maxBufferedBytes / 2) {
      if (signal.aborted || connection.closing) return
      if (Date.now() >= deadline) {
        closeConnection(connection, 1008, 'Too slow: messages are not being read')
        return
      }
      await new Promise(resolve => setTimeout(resolve, DRAIN_POLL))
    }
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
   * End a subscription: stop its watcher, and if it was the user's last
   * socket in the chat, tell the others they left.
   * @param {Connection} connection @param {number} chatId
   */
  function leave (connection, chatId) {
    connection.subscriptions.get(chatId)?.abort()
    connection.subscriptions.delete(chatId)
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
   * @param {Connection} connection @param {object | string} frame
   */
  function send (connection, frame) {
    if (connection.closing || connection.socket.readyState !== OPEN) return
    connection.socket.send(typeof frame === 'string' ? frame : JSON.stringify(frame))
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
   * else (logged, not shown).
   * @param {unknown} err @returns {{ code: string, message: string }}
   */
  function describeError (err) {
    const { code, message } = /** @type {any} */ (err) || {}
    if (typeof code === 'string' && typeof message === 'string' && (code.startsWith('LEVELKIT_') || ownCodes.has(code))) return { code, message }
    app.log.error({ err }, 'live: unexpected error')
    return { code: 'INTERNAL', message: 'Internal error' }
  }
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
