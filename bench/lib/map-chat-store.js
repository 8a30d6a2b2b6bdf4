// The store of bench/chat-server.js's "maps" target: the methods the
// benchmark's data set and its three operations use, answered from plain
// Maps and arrays in memory, nothing written anywhere. It answers what
// ChatStore answers for those calls (bench/test/map-chat-store-test.js), at
// about no cost: the same server code over it measures what the server's
// own layers (fastify, schemas, hooks, auth, JSON) leave of the no-op
// ceiling for any store.

/**
 * @typedef {{ id: number, name: string, adminId: number, members: number[], lastActivity: number, createdAt: number, private: boolean }} Chat
 * @typedef {{ id: number, chatId: number, senderId: number, text: string, timestamp: number, recipients?: number[] }} Message
 */

export class MapChatStore {
  /** @type {Map<string, { userId: number, expiry: number }>} */
  #sessions = new Map()
  /** @type {Chat[]} chats by id - 1 */
  #chats = []
  /** @type {Map<number, Set<number>>} chat ids per user */
  #chatsOf = new Map()
  /** @type {Message[][]} messages by chat id - 1, then id - 1 */
  #messages = []
  #users = 0

  /** @param {{ username: string }} user */
  async createUser (user) {
    return ++this.#users
  }

  /** @param {{ name: string, adminId: number, userIds?: number[] }} chat */
  async createChat ({ name, adminId, userIds = [] }) {
    const now = Date.now()
    const members = Array.from(new Set([adminId, ...userIds])).sort((a, b) => a - b)
    const id = this.#chats.length + 1
    this.#chats.push({ id, name, adminId, members, lastActivity: now, createdAt: now, private: false })
    this.#messages.push([])
    for (const userId of members) {
      let chats = this.#chatsOf.get(userId)
      if (chats === undefined) this.#chatsOf.set(userId, chats = new Set())
      chats.add(id)
    }
    return id
  }

  /** @param {{ sessionId: string, userId: number, expiry: number }} session */
  async setUserSession ({ sessionId, userId, expiry }) {
    this.#sessions.set(sessionId, { userId, expiry })
    return sessionId
  }

  /** @param {string} sessionId */
  async getUserFromSession (sessionId, now = Date.now()) {
    const session = this.#sessions.get(sessionId)
    return session !== undefined && session.expiry > now ? session.userId : null
  }

  /** @param {number} chatId */
  async getChat (chatId) {
    const chat = this.#chats[chatId - 1]
    return chat === undefined ? null : { ...chat, members: chat.members.slice() }
  }

  /** @param {number} userId */
  async getChats (userId) {
    const chats = []
    for (const id of this.#chatsOf.get(userId) ?? []) {
      const chat = this.#chats[id - 1]
      chats.push({ ...chat, members: chat.members.slice() })
    }
    return chats.sort((a, b) => b.lastActivity - a.lastActivity || b.id - a.id)
  }

  /** @param {number} chatId @param {number} userId */
  async checkChatMember (chatId, userId) {
    return this.#chatsOf.get(userId)?.has(chatId) ?? false
  }

  /** @param {{ chatId: number, senderId: number, text: string, timestamp?: number, recipients?: number[] }} message */
  async addChatMessage ({ chatId, senderId, text, timestamp = Date.now(), recipients }) {
    const chat = this.#chats[chatId - 1]
    const messages = this.#messages[chatId - 1]
    if (chat === undefined || !chat.members.includes(senderId)) throw Object.assign(new Error('Not a member'), { code: 'LEVELKIT_FORBIDDEN' })
    /** @type {Message} */
    const message = { id: messages.length + 1, chatId, senderId, text, timestamp }
    if (recipients !== undefined) message.recipients = Array.from(new Set(recipients)).sort((a, b) => a - b)
    messages.push(message)
    chat.lastActivity = Math.max(chat.lastActivity, timestamp)
    return message.id
  }

  /** The newest `n` messages the viewer may see, oldest first. @param {number} chatId @param {{ n?: number, viewerId?: number }} [options] */
  async getChatMessages (chatId, { n = 50, viewerId } = {}) {
    const messages = this.#messages[chatId - 1]
    if (messages === undefined) return null
    const result = []
    for (let i = messages.length - 1; i >= 0 && result.length < n; i--) {
      const m = messages[i]
      if (!m.recipients || m.senderId === viewerId || (viewerId !== undefined && m.recipients.includes(viewerId))) result.push({ ...m })
    }
    return result.reverse()
  }

  async close () {}
}
