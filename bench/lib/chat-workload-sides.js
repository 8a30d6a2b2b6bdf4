// The two sides of bench/chat-workload.js: the same chat operations through
// levelkit's ChatStore (classic-level on disk) and through a normalised
// schema on better-sqlite3 (a file database: WAL, synchronous=NORMAL,
// foreign keys, indexes, prepared statements), written as a competent SQLite
// user would: one statement where one is enough, a transaction where the
// operation needs several to be atomic.
//
// Both sides expose the same async methods, taking and returning the same
// shapes as ChatStore's public API, so the benchmark calls them the same way
// and can compare their answers.

import { open } from 'levelkit'
import { ChatStore } from 'levelkit/chat'
// Not public API: the SQLite side must pay for exactly the password hash
// ChatStore pays for, and the library rightly does not export it (nor a
// subpath for it: its node or browser variant is chosen by the library's
// own #passwords import map). This benchmark lives in the library's
// repository and is measured against this very source.
import { hashPassword } from '../../lib/chat/password-node.js'
import Database from 'better-sqlite3'

export { hashPassword }

/**
 * @typedef {{
 *   name: string,
 *   createUser (user: { username: string, password: string }): Promise<number>,
 *   getUser (username: string): Promise<any>,
 *   createChat (chat: { name: string, adminId: number, userIds: number[] }): Promise<number>,
 *   addChatMessage (message: { chatId: number, senderId: number, text: string, timestamp: number }): Promise<number>,
 *   getChatMessages (chatId: number, options: { n: number }): Promise<any[] | null>,
 *   getChats (userId: number): Promise<any[]>,
 *   checkChatMember (chatId: number, userId: number): Promise<boolean>,
 *   existsChat (user1: number, user2: number): Promise<boolean>,
 *   close (): Promise<void>
 * }} Side
 */

/**
 * @param {string} location a directory
 * @param {{ scryptN: number }} passwordCost
 * @param {0 | { policy: string, size?: number }} [readCache] open()'s readCache option (default: its default)
 * @returns {Promise<Side & { store: ChatStore, db: any }>}
 */
export async function openLevelkit (location, passwordCost, readCache) {
  const db = await open({ backend: 'leveldb', location, ...(readCache === undefined ? {} : { readCache }) })
  const store = new ChatStore(db, { passwordCost: { scryptN: passwordCost.scryptN, pbkdf2Iterations: 1000 } })
  return {
    name: 'levelkit',
    store,
    db,
    createUser: user => store.createUser(user),
    getUser: username => store.getUser(username),
    createChat: chat => store.createChat(chat),
    addChatMessage: message => store.addChatMessage(message),
    getChatMessages: (chatId, options) => store.getChatMessages(chatId, options),
    getChats: userId => store.getChats(userId),
    checkChatMember: (chatId, userId) => store.checkChatMember(chatId, userId),
    existsChat: (user1, user2) => store.existsChat(user1, user2),
    close: () => db.close()
  }
}

const SCHEMA = `
CREATE TABLE users (
  id INTEGER PRIMARY KEY,
  username TEXT NOT NULL UNIQUE,
  password_hash TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE TABLE chats (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  admin_id INTEGER NOT NULL REFERENCES users (id),
  private INTEGER NOT NULL DEFAULT 0,
  password_hash TEXT,
  member_count INTEGER NOT NULL,
  last_message_id INTEGER NOT NULL DEFAULT 0,
  last_activity INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE TABLE members (
  chat_id INTEGER NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
  user_id INTEGER NOT NULL REFERENCES users (id),
  PRIMARY KEY (chat_id, user_id)
) WITHOUT ROWID;
CREATE INDEX members_by_user ON members (user_id, chat_id);
CREATE TABLE messages (
  chat_id INTEGER NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
  id INTEGER NOT NULL,
  sender_id INTEGER NOT NULL,
  text TEXT NOT NULL,
  timestamp INTEGER NOT NULL,
  recipients TEXT,
  PRIMARY KEY (chat_id, id)
) WITHOUT ROWID;
`

/**
 * The SQLite side. `messages` is clustered by (chat_id, id) (WITHOUT ROWID),
 * so a page of one chat is one contiguous range; per-chat message ids come
 * from chats.last_message_id, bumped in the same transaction (gap-free, like
 * ChatStore's); `member_count` makes existsChat a join over the two users'
 * memberships. The sender's membership is checked in the transaction (that
 * also proves the sender exists), so messages need no foreign key to users.
 * @param {string} file
 * @param {{ scryptN: number }} passwordCost
 * @param {{ maxMembers?: number, maxMessageLength?: number, maxUsernameLength?: number }} [limits]
 * @returns {Side & { sql: import('better-sqlite3').Database, bulk: any }}
 */
export function openSqlite (file, passwordCost, limits = {}) {
  const maxMembers = limits.maxMembers ?? 30
  const maxMessageLength = limits.maxMessageLength ?? 200
  const maxUsernameLength = limits.maxUsernameLength ?? 64
  const sql = new Database(file)
  sql.pragma('journal_mode = WAL')
  sql.pragma('synchronous = NORMAL')
  sql.pragma('foreign_keys = ON')
  sql.exec(SCHEMA)

  const insertUser = sql.prepare('INSERT INTO users (username, password_hash, created_at) VALUES (?, ?, ?)')
  const userByName = sql.prepare('SELECT id, username, created_at AS createdAt FROM users WHERE username = ?')
  const insertChat = sql.prepare('INSERT INTO chats (name, admin_id, private, password_hash, member_count, last_activity, created_at) VALUES (?, ?, 0, NULL, ?, ?, ?)')
  const insertMember = sql.prepare('INSERT INTO members (chat_id, user_id) VALUES (?, ?)')
  const isMember = sql.prepare('SELECT 1 FROM members WHERE chat_id = ? AND user_id = ?').pluck()
  const chatExists = sql.prepare('SELECT 1 FROM chats WHERE id = ?').pluck()
  const bumpChat = sql.prepare('UPDATE chats SET last_message_id = last_message_id + 1, last_activity = max(last_activity, ?) WHERE id = ? RETURNING last_message_id').pluck()
  const insertMessage = sql.prepare('INSERT INTO messages (chat_id, id, sender_id, text, timestamp, recipients) VALUES (?, ?, ?, ?, ?, NULL)')
  const lastMessages = sql.prepare('SELECT id, chat_id AS chatId, sender_id AS senderId, text, timestamp FROM messages WHERE chat_id = ? AND recipients IS NULL ORDER BY id DESC LIMIT ?')
  // The same shape as ChatStore.getChats(): each chat with its member ids.
  const chatsOfUser = sql.prepare(`
    SELECT c.id, c.name, c.admin_id AS adminId, c.last_activity AS lastActivity, c.created_at AS createdAt, c.private,
      (SELECT json_group_array(user_id) FROM (SELECT user_id FROM members WHERE chat_id = c.id ORDER BY user_id)) AS members
    FROM members m JOIN chats c ON c.id = m.chat_id
    WHERE m.user_id = ?
    ORDER BY c.last_activity DESC, c.id DESC`)
  const pairExists = sql.prepare(`
    SELECT EXISTS (
      SELECT 1 FROM members a
      JOIN members b ON b.chat_id = a.chat_id AND b.user_id = ?
      JOIN chats c ON c.id = a.chat_id
      WHERE a.user_id = ? AND c.member_count = 2)`).pluck()

  const createChatTx = sql.transaction((/** @type {string} */ name, /** @type {number} */ adminId, /** @type {number[]} */ members, /** @type {number} */ now) => {
    const chatId = Number(insertChat.run(name, adminId, members.length, now, now).lastInsertRowid)
    for (const userId of members) insertMember.run(chatId, userId)
    return chatId
  })
  const sendTx = sql.transaction((/** @type {number} */ chatId, /** @type {number} */ senderId, /** @type {string} */ text, /** @type {number} */ timestamp) => {
    if (!isMember.get(chatId, senderId)) {
      if (!chatExists.get(chatId)) throw new Error(`No chat with id ${chatId}`)
      throw new Error(`User ${senderId} is not a member of chat ${chatId}`)
    }
    const id = bumpChat.get(timestamp, chatId)
    insertMessage.run(chatId, id, senderId, text, timestamp)
    return id
  })

  return {
    name: 'sqlite',
    sql,
    async createUser ({ username, password }) {
      const name = checkUsername(username, maxUsernameLength)
      checkPassword(password)
      const passwordHash = await hashPassword(password, passwordCost)
      try {
        return Number(insertUser.run(name, passwordHash, Date.now()).lastInsertRowid)
      } catch (err) {
        if (/** @type {any} */ (err).code === 'SQLITE_CONSTRAINT_UNIQUE') throw new Error(`The username ${JSON.stringify(name)} is taken`)
        throw err
      }
    },
    async getUser (username) {
      return userByName.get(checkUsername(username, maxUsernameLength)) || null
    },
    async createChat ({ name, adminId, userIds = [] }) {
      if (typeof name !== 'string' || name.trim().length === 0) throw new Error('A chat name is required')
      checkId(adminId)
      for (const id of userIds) checkId(id)
      const members = Array.from(new Set([adminId, ...userIds])).sort((a, b) => a - b)
      if (members.length > maxMembers) throw new Error(`A chat holds at most ${maxMembers} members`)
      return createChatTx(name.trim(), adminId, members, Date.now())
    },
    async addChatMessage ({ chatId, senderId, text, timestamp = Date.now() }) {
      checkId(chatId)
      checkId(senderId)
      if (typeof text !== 'string' || text.length === 0 || characters(text) > maxMessageLength) throw new Error('Bad text')
      if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) throw new Error('Bad timestamp')
      return sendTx(chatId, senderId, text, timestamp)
    },
    async getChatMessages (chatId, { n = 50 } = {}) {
      checkId(chatId)
      const rows = lastMessages.all(chatId, n)
      if (rows.length === 0 && !chatExists.get(chatId)) return null
      return rows.reverse()
    },
    async getChats (userId) {
      checkId(userId)
      const rows = chatsOfUser.all(userId)
      for (const row of rows) {
        row.members = JSON.parse(row.members)
        row.private = row.private === 1
      }
      return rows
    },
    async checkChatMember (chatId, userId) {
      return isMember.get(checkId(chatId), checkId(userId)) === 1
    },
    async existsChat (user1, user2) {
      checkId(user1)
      checkId(user2)
      if (user1 === user2) return false
      return pairExists.get(user2, user1) === 1
    },
    async close () {
      sql.close()
    },
    // Bulk loading for the pre-population (not measured): one transaction
    // per chunk of rows.
    bulk: {
      users: sql.transaction((/** @type {Array<[string, string]>} */ rows) => {
        for (const [username, hash] of rows) insertUser.run(username, hash, Date.now())
      }),
      chats: sql.transaction((/** @type {Array<{ name: string, adminId: number, userIds: number[] }>} */ rows) => {
        for (const chat of rows) {
          const members = Array.from(new Set([chat.adminId, ...chat.userIds])).sort((a, b) => a - b)
          createChatTx(chat.name, chat.adminId, members, Date.now())
        }
      }),
      messages: sql.transaction((/** @type {Array<{ chatId: number, senderId: number, text: string, timestamp: number }>} */ rows) => {
        for (const m of rows) sendTx(m.chatId, m.senderId, m.text, m.timestamp)
      })
    }
  }
}

/** @param {unknown} id */
function checkId (id) {
  if (!Number.isSafeInteger(id) || /** @type {number} */ (id) < 1) throw new Error(`Not an id: ${String(id)}`)
  return /** @type {number} */ (id)
}

/** @param {unknown} username @param {number} max */
function checkUsername (username, max) {
  if (typeof username !== 'string') throw new Error('username must be a string')
  const name = username.trim()
  if (name.length === 0 || characters(name) > max) throw new Error('Bad username')
  return name
}

/** @param {unknown} password */
function checkPassword (password) {
  if (typeof password !== 'string' || password.length === 0 || password.length > 1024) throw new Error('Bad password')
}

/** @param {string} text */
function characters (text) {
  let n = 0
  for (const _ of text) n++ // eslint-disable-line no-unused-vars
  return n
}
