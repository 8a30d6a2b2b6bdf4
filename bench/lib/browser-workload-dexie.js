// The Dexie side of bench/browser-workload.js: ChatStore's methods that the
// benchmark calls, with the same answers, on the schema a competent Dexie
// user writes:
//
//   users     ++id, &username      a unique index for getUser()
//   chats     ++id, *members       a multi-entry index: a user's chats are one
//                                  index query; the record keeps its member
//                                  list and its last message id
//   messages  [chatId+id]          a compound primary key: the last 50 of a
//                                  chat are one reverse range with a limit
//
// Every write is one Dexie transaction (one IndexedDB transaction): the
// checks and the writes of createChat() and addChatMessage() together, so
// message ids stay gap-free per chat and members must exist, as in
// ChatStore. Passwords are hashed with ChatStore's browser function at the
// same cost. Not kept here (ChatStore keeps them): the count of stored hashes
// per cost, the count of chats per pair of members (existsChat(), not
// measured), and the user -> chats list (the multi-entry index answers).

import Dexie from 'dexie'
import { hashPassword } from '../../lib/chat/password-browser.js'

const DEFAULT_PAGE = 50

/** @param {string} code @param {string} message */
function failure (code, message) {
  return Object.assign(new Error(message), { code })
}

/** @param {any} user */
function publicUser (user) {
  if (!user) return null
  const { passwordHash, ...rest } = user
  return rest
}

/** @param {any} chat */
function publicChat (chat) {
  const { passwordHash, lastMessageId, ...rest } = chat
  return rest
}

export class DexieChatStore {
  /**
   * @param {string} name the IndexedDB database
   * @param {{ pbkdf2Iterations: number }} passwordCost
   */
  constructor (name, passwordCost) {
    this.name = name
    this.passwordCost = passwordCost
    this.db = new Dexie(name)
    this.db.version(1).stores({
      users: '++id, &username',
      chats: '++id, *members',
      messages: '[chatId+id]'
    })
    /** @type {any} */
    const db = this.db
    this.users = db.users
    this.chats = db.chats
    this.messages = db.messages
  }

  async open () {
    await this.db.open()
    return this
  }

  /** @param {{ username: string, password: string }} user */
  async createUser ({ username, password }) {
    const passwordHash = await hashPassword(password, this.passwordCost)
    try {
      return await this.users.add({ username, passwordHash, createdAt: Date.now() })
    } catch (err) {
      if (/** @type {any} */ (err).name === 'ConstraintError') throw failure('LEVELKIT_UNIQUE', `The username ${JSON.stringify(username)} is taken`)
      throw err
    }
  }

  /** @param {string} username */
  async getUser (username) {
    return publicUser(await this.users.get({ username }))
  }

  /** @param {{ name: string, adminId: number, userIds?: number[] }} chat */
  createChat ({ name, adminId, userIds = [] }) {
    const members = Array.from(new Set([adminId, ...userIds])).sort((a, b) => a - b)
    const now = Date.now()
    return this.db.transaction('rw', this.users, this.chats, async () => {
      const found = await this.users.bulkGet(members)
      const missing = members.find((_, i) => found[i] === undefined)
      if (missing !== undefined) throw failure('LEVELKIT_NOT_FOUND', `No user with id ${missing}`)
      return this.chats.add({ name, adminId, members, lastActivity: now, createdAt: now, private: false, passwordHash: null, lastMessageId: 0 })
    })
  }

  /** The user's chats, most recent activity first. @param {number} userId */
  async getChats (userId) {
    const chats = await this.chats.where('members').equals(userId).toArray()
    return chats.map(publicChat).sort((a, b) => b.lastActivity - a.lastActivity || b.id - a.id)
  }

  /** @param {number} chatId @param {number} userId */
  async checkChatMember (chatId, userId) {
    const chat = await this.chats.get(chatId)
    return chat !== undefined && chat.members.includes(userId)
  }

  /** @param {{ chatId: number, senderId: number, text: string, timestamp?: number }} message */
  addChatMessage ({ chatId, senderId, text, timestamp = Date.now() }) {
    return this.db.transaction('rw', this.chats, this.messages, async () => {
      const chat = await this.chats.get(chatId)
      if (!chat) throw failure('LEVELKIT_NOT_FOUND', `No chat with id ${chatId}`)
      if (!chat.members.includes(senderId)) throw failure('LEVELKIT_FORBIDDEN', `User ${senderId} is not a member of chat ${chatId}`)
      const id = chat.lastMessageId + 1
      await this.messages.add({ id, chatId, senderId, text, timestamp })
      await this.chats.put({ ...chat, lastMessageId: id, lastActivity: Math.max(chat.lastActivity, timestamp) })
      return id
    })
  }

  /**
   * The newest `n` messages in ascending id order, or null if the chat does
   * not exist (read in one transaction with the chat).
   * @param {number} chatId @param {{ n?: number }} [options]
   */
  getChatMessages (chatId, { n = DEFAULT_PAGE } = {}) {
    return this.db.transaction('r', this.chats, this.messages, async () => {
      if (await this.chats.get(chatId) === undefined) return null
      const page = await this.messages.where('[chatId+id]').between([chatId, Dexie.minKey], [chatId, Dexie.maxKey]).reverse().limit(n).toArray()
      return page.reverse()
    })
  }

  /**
   * Bulk load: rows as the benchmark's data set gives them, one bulkAdd
   * (one transaction) per call.
   * @param {'users' | 'chats' | 'messages'} table @param {any[]} rows
   */
  bulkLoad (table, rows) {
    if (table === 'chats') rows = rows.map(chat => ({ ...chat, private: false, passwordHash: null }))
    return /** @type {any} */ (this)[table].bulkAdd(rows)
  }

  close () {
    this.db.close()
  }
}
