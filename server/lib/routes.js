// The HTTP API: each route checks its input with its schema, who may call it,
// then calls the store once or twice and answers with JSON. The store's
// own errors (a taken username, a full chat, a wrong chat password, a
// whisper to a non-member...) become 4xx answers in errors.js.
import { schemas } from './schemas.js'
import { requireSession, sessionOf, SESSION_COOKIE } from './auth.js'
import { forbidden, notFound, unauthorized, badRequest } from './errors.js'
import { runChatbot } from './chatbot.js'

const DAY = 24 * 3600 * 1000

/**
 * @typedef {(request: import('fastify').FastifyRequest, reply: import('fastify').FastifyReply) => Promise<void>} Hook
 * @typedef {{ authByIp: Hook | null, authByUsername: Hook | null, sessionDays: number }} RouteOptions
 */

/**
 * @param {import('fastify').FastifyInstance} app
 * @param {RouteOptions} options
 */
export async function routes (app, { authByIp, authByUsername, sessionDays }) {
  const store = /** @type {any} */ (app).store
  /** Hooks of the routes that need a session. */
  const member = { onRequest: requireSession }
  const attempts = { onRequest: authByIp ? [authByIp] : [], preHandler: authByUsername ? [authByUsername] : [] }

  app.post('/api/users', { schema: schemas.createUser, ...attempts }, async (request, reply) => {
    const { username, password } = /** @type {any} */ (request.body)
    const id = await store.createUser({ username, password })
    return reply.code(201).send({ id, username: username.trim() })
  })

  app.post('/api/sessions', { schema: schemas.createSession, ...attempts }, async (request, reply) => {
    const { username, password } = /** @type {any} */ (request.body)
    const user = await store.verifyPassword(username, password)
    if (user === null) throw unauthorized('Wrong username or password')
    const expiry = Date.now() + sessionDays * DAY
    const token = await store.setUserSession({ userId: user.id, expiry })
    reply.setCookie(SESSION_COOKIE, token, { httpOnly: true, sameSite: 'strict', path: '/', expires: new Date(expiry) })
    return reply.code(201).send({ token, userId: user.id, expiry })
  })

  app.delete('/api/sessions/current', { schema: schemas.deleteSession, ...member }, async (request, reply) => {
    const { token } = sessionOf(request)
    await store.removeSession(token)
    // Its sockets go too (live.js).
    app.live?.endSession(token)
    reply.clearCookie(SESSION_COOKIE, { httpOnly: true, sameSite: 'strict', path: '/' })
    return reply.code(204).send()
  })

  app.get('/api/me', { schema: schemas.me, ...member }, async request => {
    const user = await store.getUserById(sessionOf(request).userId)
    if (user === null) throw unauthorized('The session\'s user no longer exists')
    return { id: user.id, username: user.username }
  })

  app.get('/api/users/:username', { schema: schemas.getUser, ...member }, async request => {
    const { username } = /** @type {any} */ (request.params)
    const user = await store.getUser(username)
    if (user === null) throw notFound(`No user named ${JSON.stringify(username)}`)
    return { id: user.id, username: user.username }
  })

  app.get('/api/users/by-id/:userId', { schema: schemas.getUserById, ...member }, async request => {
    const userId = Number(/** @type {any} */ (request.params).userId)
    const user = await store.getUserById(userId)
    if (user === null) throw notFound(`No user with id ${userId}`)
    return { id: user.id, username: user.username }
  })

  app.get('/api/chats', { schema: schemas.getChats, ...member }, async request => {
    return store.getChats(sessionOf(request).userId)
  })

  app.post('/api/chats', { schema: schemas.createChat, ...member }, async (request, reply) => {
    const { name, members, private: isPrivate, password } = /** @type {any} */ (request.body)
    if (isPrivate === true && password === undefined) throw badRequest('A private chat needs a password')
    if (isPrivate === false && password !== undefined) throw badRequest('A chat with a password is private: drop "private": false or the password')
    const userIds = await Promise.all(members.map(async (/** @type {string} */ username) => {
      const user = await store.getUser(username)
      if (user === null) throw notFound(`No user named ${JSON.stringify(username)}`)
      return user.id
    }))
    const chatId = await store.createChat({ name, adminId: sessionOf(request).userId, userIds, password })
    return reply.code(201).send(await existingChat(chatId))
  })

  app.get('/api/chats/:id', { schema: schemas.getChat, ...member }, async request => {
    const chat = await existingChat(chatIdOf(request))
    if (!chat.members.includes(sessionOf(request).userId)) throw forbidden(`Only members of chat ${chat.id} can read it`)
    return chat
  })

  app.delete('/api/chats/:id', { schema: schemas.deleteChat, ...member }, async (request, reply) => {
    const chat = await existingChat(chatIdOf(request))
    if (chat.adminId !== sessionOf(request).userId) throw forbidden(`Only the admin of chat ${chat.id} can delete it`)
    await store.deleteChat(chat.id)
    return reply.code(204).send()
  })

  // Anyone may join a chat (a private one with its password); a member may
  // add others too.
  app.post('/api/chats/:id/members', { schema: schemas.addMember, ...member }, async (request, reply) => {
    const { username, password } = /** @type {any} */ (request.body)
    const caller = sessionOf(request).userId
    const chat = await existingChat(chatIdOf(request))
    const user = await store.getUser(username)
    if (user === null) throw notFound(`No user named ${JSON.stringify(username)}`)
    if (user.id !== caller && !chat.members.includes(caller)) throw forbidden(`Only members of chat ${chat.id} can add others to it`)
    const added = await store.addChatMember(chat.id, user.id, password === undefined ? {} : { password })
    // Not added: already a member (fine), or the chat was deleted meanwhile.
    if (!added) await existingChat(chat.id)
    return reply.code(204).send()
  })

  app.delete('/api/chats/:id/members/:userId', { schema: schemas.removeMember, ...member }, async (request, reply) => {
    const caller = sessionOf(request).userId
    const chat = await existingChat(chatIdOf(request))
    const userId = Number(/** @type {any} */ (request.params).userId)
    if (userId !== caller && chat.adminId !== caller) throw forbidden(`Only the admin of chat ${chat.id} can remove other members`)
    if (!(await store.removeChatMember(chat.id, userId))) throw notFound(`User ${userId} is not a member of chat ${chat.id}`)
    return reply.code(204).send()
  })

  app.get('/api/chats/:id/messages', { schema: schemas.getMessages, ...member }, async request => {
    const chatId = chatIdOf(request)
    const viewerId = sessionOf(request).userId
    await assertMember(chatId, viewerId)
    const query = /** @type {Record<string, string | undefined>} */ (request.query)
    /** @type {{ viewerId: number, from?: number, to?: number, n?: number }} */
    const options = { viewerId }
    for (const key of /** @type {const} */ (['from', 'to', 'n'])) if (query[key] !== undefined) options[key] = Number(query[key])
    const messages = await store.getChatMessages(chatId, options)
    if (messages === null) throw notFound(`No chat with id ${chatId}`)
    return messages
  })

  app.post('/api/chats/:id/messages', { schema: schemas.sendMessage, ...member }, async (request, reply) => {
    const chatId = chatIdOf(request)
    const senderId = sessionOf(request).userId
    const { text, to } = /** @type {any} */ (request.body)
    // A chatbot command is answered to the sender alone and not stored.
    const bot = app.kv === undefined ? null : await runChatbot({ store, kv: app.kv, chatId, userId: senderId, text })
    if (bot !== null) return reply.code(200).send({ bot: bot.message, result: bot.result })
    // addChatMessage() checks the chat (404) and that sender and recipients
    // are members (403) in the write itself.
    const timestamp = Date.now()
    const id = await store.addChatMessage({ chatId, senderId, text, timestamp, recipients: to })
    /** @type {{ id: number, chatId: number, senderId: number, text: string, timestamp: number, recipients?: number[] }} */
    const message = { id, chatId, senderId, text, timestamp }
    if (to !== undefined) message.recipients = Array.from(new Set(/** @type {number[]} */ (to))).sort((a, b) => a - b)
    return reply.code(201).send(message)
  })

  app.get('/api/direct-chats/:userId', { schema: schemas.directChat, ...member }, async request => {
    const caller = sessionOf(request).userId
    const other = Number(/** @type {any} */ (request.params).userId)
    if (other !== caller && await store.existsChat(caller, other)) {
      // The most recently active chat of exactly these two.
      const direct = (await store.getChats(caller)).find((/** @type {any} */ chat) => chat.members.length === 2 && chat.members.includes(other))
      if (direct) return { chatId: direct.id }
    }
    throw notFound(`No chat of exactly users ${caller} and ${other}`)
  })

  /** @param {number} chatId */
  async function existingChat (chatId) {
    const chat = await store.getChat(chatId)
    if (chat === null) throw notFound(`No chat with id ${chatId}`)
    return chat
  }

  /**
   * 404 for a chat that does not exist, 403 for one the user is not a member of.
   * @param {number} chatId @param {number} userId
   */
  async function assertMember (chatId, userId) {
    if (await store.checkChatMember(chatId, userId)) return
    await existingChat(chatId)
    throw forbidden(`Only members of chat ${chatId} can read it`)
  }
}

/** @param {import('fastify').FastifyRequest} request */
function chatIdOf (request) {
  return Number(/** @type {any} */ (request.params).id)
}
