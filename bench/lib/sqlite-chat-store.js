// ChatStore's methods and semantics (lib/chat/chat-store.js, docs/chat.md) on
// better-sqlite3, for bench/chat-server.js: the same server code runs on
// either store, so the HTTP benchmark compares the storage layers and nothing
// else. Written as a competent SQLite user would, after the SQLite side of
// bench/chat-workload.js (bench/lib/chat-workload-sides.js): a file database
// in WAL mode with synchronous=NORMAL (no fsync per commit, like LevelDB's
// default), foreign keys, indexes, prepared statements, one statement where
// one is enough and a transaction where an operation needs several.
//
// Same answers, same error codes (LEVELKIT_INVALID, _UNIQUE, _NOT_FOUND,
// _FORBIDDEN, _LIMIT, _NOT_OPEN), so the server maps them to the same HTTP
// statuses. bench/test/sqlite-chat-store-test.js runs the same random
// operation sequences on both stores and compares every answer.
//
// watch() is an in-process notifier, not polling: addChatMessage() and
// deleteChat() wake the watchers of their chat after they commit, and a woken
// watcher reads everything after the last message it delivered. So it sees
// the writes made through this object only (the server is one process with
// one store), and like ChatStore's watch it has no gap and no duplicate.
//
// Differences that no caller of the server can see: passwords are checked
// against a dummy hash of the current passwordCost for an unknown username
// (ChatStore takes the cost most stored hashes have; here every hash is made
// at the current one unless the cost changed between runs), and there is no
// check() or ownership marker.

import { randomBytes } from 'node:crypto'
import Database from 'better-sqlite3'
// Not public API, as in chat-workload-sides.js: the SQLite store must hash
// and check passwords exactly as ChatStore does, and fail with the same
// errors; this benchmark lives in the library's repository.
import { hashPassword, checkPassword, paramsFor } from '../../lib/chat/password-node.js'
import { dummyHash, parseHash } from '../../lib/chat/password-format.js'
import { levelkitError, invalid, codes } from '../../lib/errors.js'
import { byNumber, assertId, idList, assertPassword, notFound, limit, optionsObject, characters } from './peer-store-checks.js'

const DEFAULTS = Object.freeze({
  maxMembers: 30,
  maxMessageLength: 200,
  maxUsernameLength: 64,
  maxChatNameLength: 100,
  passwordCost: Object.freeze({ scryptN: 16384, pbkdf2Iterations: 600000 })
})
const DEFAULT_PAGE = 50
// Messages a watcher reads per statement.
const WATCH_PAGE = 100

const SCHEMA = `
CREATE TABLE IF NOT EXISTS users (
  id INTEGER PRIMARY KEY,
  username TEXT NOT NULL UNIQUE,
  password_hash TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY,
  user_id INTEGER NOT NULL REFERENCES users (id),
  expiry INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sessions_by_expiry ON sessions (expiry);
CREATE TABLE IF NOT EXISTS chats (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  admin_id INTEGER NOT NULL REFERENCES users (id),
  password_hash TEXT,
  member_count INTEGER NOT NULL,
  last_message_id INTEGER NOT NULL DEFAULT 0,
  last_activity INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS members (
  chat_id INTEGER NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
  user_id INTEGER NOT NULL REFERENCES users (id),
  PRIMARY KEY (chat_id, user_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS members_by_user ON members (user_id, chat_id);
CREATE TABLE IF NOT EXISTS messages (
  chat_id INTEGER NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
  id INTEGER NOT NULL,
  sender_id INTEGER NOT NULL,
  text TEXT NOT NULL,
  timestamp INTEGER NOT NULL,
  recipients TEXT,
  PRIMARY KEY (chat_id, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kv (
  chat_id INTEGER NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (chat_id, key)
) WITHOUT ROWID;
`
// Chats use AUTOINCREMENT: ChatStore never reuses a deleted chat's id, and a
// plain rowid table would. The message table is clustered by (chat_id, id),
// so a page of one chat is one contiguous range. A whisper's recipients are a
// JSON array, read with json_each() only for whispers. The chatbot's keys
// outlive their chat, as levelkitKv()'s do (chat ids are never reused).

const MESSAGE_COLUMNS = 'id, chat_id AS chatId, sender_id AS senderId, text, timestamp, recipients'
const VISIBLE = '(:all = 1 OR recipients IS NULL OR sender_id = :viewer OR EXISTS (SELECT 1 FROM json_each(recipients) WHERE value = :viewer))'
const CHAT_COLUMNS = `c.id, c.name, c.admin_id AS adminId,
  (SELECT json_group_array(user_id) FROM (SELECT user_id FROM members WHERE chat_id = c.id ORDER BY user_id)) AS members,
  c.last_activity AS lastActivity, c.created_at AS createdAt, c.password_hash IS NOT NULL AS private`

/**
 * @typedef {import('../../lib/chat/chat-store.js').User} User
 * @typedef {import('../../lib/chat/chat-store.js').Chat} Chat
 * @typedef {import('../../lib/chat/chat-store.js').Message} Message
 */

export class SqliteChatStore {
  /** @type {Map<number, Set<Wakeup>>} the watchers of each chat */
  #watchers = new Map()
  #closed = false
  /** @type {Record<string, import('better-sqlite3').Statement>} */
  #q
  /** @type {Record<string, (...args: any[]) => any>} */
  #tx

  /**
   * Open (or create) the database file and its tables.
   * @param {string} file a path, or ':memory:'
   * @param {Partial<typeof DEFAULTS>} [options] ChatStore's limits and passwordCost
   */
  constructor (file, options = {}) {
    if (typeof file !== 'string' || file.length === 0) throw invalid('new SqliteChatStore(file) takes a file path or \':memory:\'')
    const unknown = Object.keys(options).filter(key => !(key in DEFAULTS))
    if (unknown.length > 0) throw invalid(`Unknown SqliteChatStore option(s): ${unknown.join(', ')}`)
    this.options = { ...DEFAULTS, ...options, passwordCost: { ...DEFAULTS.passwordCost, ...options.passwordCost } }
    const sql = new Database(file)
    sql.pragma('journal_mode = WAL')
    sql.pragma('synchronous = NORMAL')
    sql.pragma('foreign_keys = ON')
    sql.exec(SCHEMA)
    /** The better-sqlite3 database (sqliteKv() keeps its table in it). */
    this.sql = sql
    const q = this.#q = {
      insertUser: sql.prepare('INSERT INTO users (username, password_hash, created_at) VALUES (?, ?, ?)'),
      userByName: sql.prepare('SELECT id, username, password_hash AS passwordHash, created_at AS createdAt FROM users WHERE username = ?'),
      userById: sql.prepare('SELECT id, username, created_at AS createdAt FROM users WHERE id = ?'),
      userExists: sql.prepare('SELECT 1 FROM users WHERE id = ?').pluck(),
      setHash: sql.prepare('UPDATE users SET password_hash = ? WHERE id = ? AND password_hash = ?'),
      putSession: sql.prepare('INSERT OR REPLACE INTO sessions (id, user_id, expiry) VALUES (?, ?, ?)'),
      session: sql.prepare('SELECT user_id AS userId, expiry FROM sessions WHERE id = ?'),
      delSession: sql.prepare('DELETE FROM sessions WHERE id = ?'),
      purgeSessions: sql.prepare('DELETE FROM sessions WHERE expiry <= ?'),
      insertChat: sql.prepare('INSERT INTO chats (name, admin_id, password_hash, member_count, last_activity, created_at) VALUES (?, ?, ?, ?, ?, ?)'),
      chat: sql.prepare(`SELECT ${CHAT_COLUMNS} FROM chats c WHERE c.id = ?`),
      chatsOfUser: sql.prepare(`SELECT ${CHAT_COLUMNS} FROM members m JOIN chats c ON c.id = m.chat_id WHERE m.user_id = ? ORDER BY c.last_activity DESC, c.id DESC`),
      chatRow: sql.prepare('SELECT member_count AS memberCount, password_hash AS passwordHash, last_message_id AS lastMessageId FROM chats WHERE id = ?'),
      chatExists: sql.prepare('SELECT 1 FROM chats WHERE id = ?').pluck(),
      lastMessageId: sql.prepare('SELECT last_message_id FROM chats WHERE id = ?').pluck(),
      deleteChat: sql.prepare('DELETE FROM chats WHERE id = ?'),
      countMembers: sql.prepare('UPDATE chats SET member_count = member_count + ? WHERE id = ?'),
      insertMember: sql.prepare('INSERT INTO members (chat_id, user_id) VALUES (?, ?)'),
      deleteMember: sql.prepare('DELETE FROM members WHERE chat_id = ? AND user_id = ?'),
      isMember: sql.prepare('SELECT 1 FROM members WHERE chat_id = ? AND user_id = ?').pluck(),
      pairExists: sql.prepare(`SELECT EXISTS (
        SELECT 1 FROM members a
        JOIN members b ON b.chat_id = a.chat_id AND b.user_id = ?
        JOIN chats c ON c.id = a.chat_id
        WHERE a.user_id = ? AND c.member_count = 2)`).pluck(),
      bumpChat: sql.prepare('UPDATE chats SET last_message_id = last_message_id + 1, last_activity = max(last_activity, ?) WHERE id = ? RETURNING last_message_id').pluck(),
      insertMessage: sql.prepare('INSERT INTO messages (chat_id, id, sender_id, text, timestamp, recipients) VALUES (?, ?, ?, ?, ?, ?)'),
      newest: sql.prepare(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE chat_id = :chat AND id < :to AND ${VISIBLE} ORDER BY id DESC LIMIT :n`),
      fromId: sql.prepare(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE chat_id = :chat AND id >= :from AND id < :to AND ${VISIBLE} ORDER BY id LIMIT :n`),
      after: sql.prepare(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE chat_id = ? AND id > ? ORDER BY id LIMIT ${WATCH_PAGE}`)
    }
    this.#tx = {
      createChat: sql.transaction((/** @type {string} */ name, /** @type {number} */ adminId, /** @type {number[]} */ members, /** @type {string | null} */ passwordHash, /** @type {number} */ now) => {
        // The first unknown member, in id order, as ChatStore reports it.
        const missing = members.find(id => !q.userExists.get(id))
        if (missing !== undefined) throw notFound(`No user with id ${missing}`)
        const chatId = Number(q.insertChat.run(name, adminId, passwordHash, members.length, now, now).lastInsertRowid)
        for (const userId of members) q.insertMember.run(chatId, userId)
        return chatId
      }),
      addMember: sql.transaction((/** @type {number} */ chatId, /** @type {number} */ userId) => {
        const chat = q.chatRow.get(chatId)
        if (!chat || !q.userExists.get(userId) || q.isMember.get(chatId, userId)) return false
        if (chat.memberCount >= this.options.maxMembers) throw limit(`Chat ${chatId} is full (${this.options.maxMembers} members)`)
        q.insertMember.run(chatId, userId)
        q.countMembers.run(1, chatId)
        return true
      }),
      removeMember: sql.transaction((/** @type {number} */ chatId, /** @type {number} */ userId) => {
        if (q.deleteMember.run(chatId, userId).changes === 0) return false
        q.countMembers.run(-1, chatId)
        return true
      }),
      send: sql.transaction((/** @type {number} */ chatId, /** @type {number} */ senderId, /** @type {string} */ text, /** @type {number} */ timestamp, /** @type {number[] | undefined} */ recipients) => {
        if (!q.isMember.get(chatId, senderId)) {
          if (!q.chatExists.get(chatId)) throw notFound(`No chat with id ${chatId}`)
          throw levelkitError(codes.FORBIDDEN, `User ${senderId} is not a member of chat ${chatId}`, { chatId, userId: senderId })
        }
        if (recipients && recipients.some(id => !q.isMember.get(chatId, id))) {
          throw levelkitError(codes.FORBIDDEN, 'Whisper recipients must be members of the chat', { chatId })
        }
        const id = q.bumpChat.get(timestamp, chatId)
        q.insertMessage.run(chatId, id, senderId, text, timestamp, recipients ? JSON.stringify(recipients) : null)
        return id
      })
    }
  }

  // Users

  /**
   * @param {{ username: string, password: string }} user
   * @returns {Promise<number>} the new user's id
   */
  async createUser (user) {
    const { username, password } = optionsObject(user, 'createUser()')
    const name = this.#username(username)
    assertPassword(password)
    const passwordHash = await hashPassword(password, this.options.passwordCost)
    this.#assertOpen()
    try {
      return Number(this.#q.insertUser.run(name, passwordHash, Date.now()).lastInsertRowid)
    } catch (err) {
      if (/** @type {any} */ (err).code === 'SQLITE_CONSTRAINT_UNIQUE') {
        throw levelkitError(codes.UNIQUE, `The username ${JSON.stringify(name)} is taken`, { cause: err, username: name })
      }
      throw err
    }
  }

  /** @param {string} username @returns {Promise<User | null>} */
  async getUser (username) {
    const name = this.#username(username)
    this.#assertOpen()
    const user = this.#q.userByName.get(name)
    return user ? { id: user.id, username: user.username, createdAt: user.createdAt } : null
  }

  /** @param {number} id @returns {Promise<User | null>} */
  async getUserById (id) {
    assertId(id, 'user id')
    this.#assertOpen()
    return this.#q.userById.get(id) || null
  }

  /**
   * The user if the password is theirs, else null; an unknown username costs
   * a check against a dummy hash. A hash made at another cost is replaced on
   * a successful check.
   * @param {string} username @param {string} password
   * @returns {Promise<User | null>}
   */
  async verifyPassword (username, password) {
    assertPassword(password)
    const name = this.#username(username)
    this.#assertOpen()
    const user = this.#q.userByName.get(name)
    const params = paramsFor(this.options.passwordCost)
    const matches = await checkPassword(password, user ? user.passwordHash : dummyHash(params))
    if (!user || !matches) return null
    if (parseHash(user.passwordHash).params !== params) {
      const passwordHash = await hashPassword(password, this.options.passwordCost)
      this.#assertOpen()
      this.#q.setHash.run(passwordHash, user.id, user.passwordHash)
    }
    return { id: user.id, username: user.username, createdAt: user.createdAt }
  }

  // Sessions

  /**
   * Create or replace a session.
   * @param {{ sessionId?: string, userId: number, expiry: number }} session
   * @returns {Promise<string>} the session id (a random 128-bit hex id when none is given)
   */
  async setUserSession (session) {
    const { sessionId, userId, expiry } = optionsObject(session, 'setUserSession()')
    const id = sessionId === undefined ? randomBytes(16).toString('hex') : sessionId
    if (typeof id !== 'string' || id.length === 0 || id.length > 256) throw invalid('sessionId must be a non-empty string of at most 256 characters')
    assertId(userId, 'userId')
    if (typeof expiry !== 'number' || !Number.isFinite(expiry)) throw invalid('expiry must be a finite number (milliseconds since the epoch)')
    this.#assertOpen()
    try {
      this.#q.putSession.run(id, userId, expiry)
    } catch (err) {
      if (/** @type {any} */ (err).code === 'SQLITE_CONSTRAINT_FOREIGNKEY') throw notFound(`No user with id ${userId}`, err)
      throw err
    }
    return id
  }

  /**
   * @param {string} sessionId @param {number} [now]
   * @returns {Promise<number | null>} the user id, or null when missing or expired
   */
  async getUserFromSession (sessionId, now = Date.now()) {
    if (typeof sessionId !== 'string') throw invalid('sessionId must be a string')
    if (typeof now !== 'number' || !Number.isFinite(now)) throw invalid('now must be a finite number')
    this.#assertOpen()
    const session = this.#q.session.get(sessionId)
    return session && session.expiry > now ? session.userId : null
  }

  /** @param {string} sessionId @returns {Promise<boolean>} */
  async removeSession (sessionId) {
    if (typeof sessionId !== 'string') throw invalid('sessionId must be a string')
    this.#assertOpen()
    return this.#q.delSession.run(sessionId).changes > 0
  }

  /** @param {number} [now] @returns {Promise<number>} how many sessions were removed */
  async purgeExpiredSessions (now = Date.now()) {
    if (typeof now !== 'number' || !Number.isFinite(now)) throw invalid('now must be a finite number')
    this.#assertOpen()
    return this.#q.purgeSessions.run(now).changes
  }

  // Chats

  /**
   * @param {{ name: string, adminId: number, userIds?: number[], password?: string }} chat
   * @returns {Promise<number>} the new chat's id
   */
  async createChat (chat) {
    const { name, adminId, userIds = [], password } = optionsObject(chat, 'createChat()')
    const chatName = this.#chatName(name)
    assertId(adminId, 'adminId')
    const members = Array.from(new Set([adminId, ...idList(userIds, 'userIds')])).sort(byNumber)
    if (members.length > this.options.maxMembers) throw limit(`A chat holds at most ${this.options.maxMembers} members`)
    let passwordHash = null
    if (password !== undefined) {
      assertPassword(password)
      passwordHash = await hashPassword(password, this.options.passwordCost)
    }
    this.#assertOpen()
    return this.#tx.createChat(chatName, adminId, members, passwordHash, Date.now())
  }

  /** @param {number} chatId @returns {Promise<Chat | null>} */
  async getChat (chatId) {
    assertId(chatId, 'chatId')
    this.#assertOpen()
    const row = this.#q.chat.get(chatId)
    return row ? chatOf(row) : null
  }

  /**
   * The user's chats, most recent activity first.
   * @param {number} userId
   * @returns {Promise<Chat[]>}
   */
  async getChats (userId) {
    assertId(userId, 'userId')
    this.#assertOpen()
    return this.#q.chatsOfUser.all(userId).map(chatOf)
  }

  /**
   * Delete a chat with its members and messages (ON DELETE CASCADE), in one
   * statement; its watchers end.
   * @param {number} chatId
   * @returns {Promise<boolean>}
   */
  async deleteChat (chatId) {
    assertId(chatId, 'chatId')
    this.#assertOpen()
    const deleted = this.#q.deleteChat.run(chatId).changes > 0
    if (deleted) this.#notify(chatId)
    return deleted
  }

  /**
   * @param {number} chatId @param {number} userId
   * @param {{ password?: string }} [options] the chat's password, for a private chat
   * @returns {Promise<boolean>} true if added; false if already a member or the chat or user does not exist
   */
  async addChatMember (chatId, userId, options) {
    const { password } = optionsObject(options, 'addChatMember() options')
    assertId(chatId, 'chatId')
    assertId(userId, 'userId')
    this.#assertOpen()
    const chat = this.#q.chatRow.get(chatId)
    if (!chat) return false
    if (chat.passwordHash) {
      if (typeof password !== 'string' || !(await checkPassword(password, chat.passwordHash))) {
        throw levelkitError(codes.FORBIDDEN, `Chat ${chatId} is private: the password is missing or wrong`, { chatId })
      }
      this.#assertOpen()
    }
    return this.#tx.addMember(chatId, userId)
  }

  /**
   * @param {number} chatId @param {number} userId
   * @returns {Promise<boolean>} true if the user was a member
   */
  async removeChatMember (chatId, userId) {
    assertId(chatId, 'chatId')
    assertId(userId, 'userId')
    this.#assertOpen()
    return this.#tx.removeMember(chatId, userId)
  }

  /** @param {number} chatId @param {number} userId @returns {Promise<boolean>} */
  async checkChatMember (chatId, userId) {
    assertId(chatId, 'chatId')
    assertId(userId, 'userId')
    this.#assertOpen()
    return this.#q.isMember.get(chatId, userId) === 1
  }

  /**
   * True iff a chat exists whose members are exactly these two users.
   * @param {number} user1 @param {number} user2
   * @returns {Promise<boolean>}
   */
  async existsChat (user1, user2) {
    assertId(user1, 'user1')
    assertId(user2, 'user2')
    if (user1 === user2) return false
    this.#assertOpen()
    return this.#q.pairExists.get(user2, user1) === 1
  }

  // Messages

  /**
   * @param {{ chatId: number, senderId: number, text: string, timestamp?: number, recipients?: number[] }} message
   *   `recipients` makes it a whisper, shown only to the sender and them
   * @returns {Promise<number>} the message id: 1, 2, 3, ... per chat, without gaps
   */
  async addChatMessage (message) {
    const { chatId, senderId, text, timestamp = Date.now(), recipients: recipientList } = optionsObject(message, 'addChatMessage()')
    assertId(chatId, 'chatId')
    assertId(senderId, 'senderId')
    if (typeof text !== 'string' || text.length === 0) throw invalid('text must be a non-empty string')
    if (characters(text) > this.options.maxMessageLength) throw invalid(`A message is at most ${this.options.maxMessageLength} characters`)
    if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) throw invalid('timestamp must be a finite number')
    const recipients = recipientList === undefined ? undefined : idList(recipientList, 'recipients')
    if (recipients !== undefined && recipients.length === 0) throw invalid('recipients must be a non-empty array of user ids')
    this.#assertOpen()
    const id = this.#tx.send(chatId, senderId, text, timestamp, recipients && Array.from(new Set(recipients)).sort(byNumber))
    this.#notify(chatId)
    return id
  }

  /**
   * Messages in ascending id order. With `from`: up to `n` from `from`
   * (inclusive). Without: the `n` just below `to` (exclusive), or the newest
   * `n`. Whispers are shown only to their sender and recipients (`viewerId`),
   * or all of them with `allWhispers`.
   * @param {number} chatId
   * @param {{ from?: number, to?: number, n?: number, viewerId?: number, allWhispers?: boolean }} [options]
   * @returns {Promise<Message[] | null>} null if the chat does not exist
   */
  async getChatMessages (chatId, options) {
    assertId(chatId, 'chatId')
    const { from, to, n = DEFAULT_PAGE, viewerId, allWhispers } = optionsObject(options, 'getChatMessages() options')
    if (from !== undefined) assertId(from, 'from')
    if (to !== undefined) assertId(to, 'to')
    if (!Number.isSafeInteger(n) || n < 1) throw invalid('n must be a positive integer')
    assertViewer(viewerId, allWhispers)
    this.#assertOpen()
    const params = { chat: chatId, to: to === undefined ? Number.MAX_SAFE_INTEGER : to, n, viewer: viewerId === undefined ? null : viewerId, all: allWhispers ? 1 : 0 }
    const rows = from === undefined ? this.#q.newest.all(params).reverse() : this.#q.fromId.all({ ...params, from })
    // A deleted chat's messages go with it, in the same statement: rows
    // prove the chat exists.
    if (rows.length === 0 && !this.#q.chatExists.get(chatId)) return null
    return rows.map(messageOf)
  }

  /**
   * New messages of a chat as they are committed, in id order, with no gap
   * and no duplicate after `after` (default: the last message now). Ends when
   * `signal` aborts, the chat is deleted or the store closes. Whispers as
   * getChatMessages() shows them (`viewerId`, `allWhispers`).
   * @param {number} chatId
   * @param {{ after?: number, signal?: AbortSignal, viewerId?: number, allWhispers?: boolean }} [options]
   * @returns {AsyncGenerator<Message>}
   */
  watch (chatId, options) {
    // Checked and started now, as ChatStore does: the default starting point
    // is the last message at this call; what is wrong is thrown by next().
    /** @type {{ chatId: number, after: number, signal?: AbortSignal, viewerId?: number, allWhispers?: boolean } | Error} */
    let args
    try {
      assertId(chatId, 'chatId')
      const { after, signal, viewerId, allWhispers, ...rest } = optionsObject(options, 'watch() options')
      const unknown = Object.keys(rest)
      if (unknown.length > 0) throw invalid(`watch() has unknown option(s): ${unknown.map(k => JSON.stringify(k)).join(', ')} (it takes after, signal, viewerId, allWhispers)`)
      if (after !== undefined && !(Number.isSafeInteger(after) && after >= 0)) throw invalid(`The after option must be a non-negative integer, got ${String(after)}`)
      if (signal !== undefined && !(signal instanceof AbortSignal)) throw invalid('The signal option must be an AbortSignal')
      assertViewer(viewerId, allWhispers)
      this.#assertOpen()
      args = { chatId, after: after === undefined ? (this.#q.lastMessageId.get(chatId) || 0) : after, signal, viewerId, allWhispers }
    } catch (err) {
      args = /** @type {Error} */ (err)
    }
    return this.#watch(args)
  }

  /**
   * @param {{ chatId: number, after: number, signal?: AbortSignal, viewerId?: number, allWhispers?: boolean } | Error} args
   * @returns {AsyncGenerator<Message>}
   */
  async * #watch (args) {
    if (args instanceof Error) throw args
    const { chatId, signal, viewerId, allWhispers } = args
    let last = args.after
    const ended = () => this.#closed || !!signal?.aborted
    const wakeup = new Wakeup()
    const end = () => wakeup.notify()
    let watchers = this.#watchers.get(chatId)
    if (!watchers) this.#watchers.set(chatId, watchers = new Set())
    watchers.add(wakeup)
    signal?.addEventListener('abort', end)
    try {
      while (!ended()) {
        if (!wakeup.dirty) await wakeup.wait()
        if (ended()) return
        wakeup.dirty = false
        if (!this.#q.chatExists.get(chatId)) return
        // Everything after the last message delivered, a page at a time,
        // each page read whole before any of it is yielded.
        for (let page = WATCH_PAGE; page === WATCH_PAGE;) {
          const rows = this.#q.after.all(chatId, last)
          page = rows.length
          for (const row of rows) {
            if (allWhispers || row.recipients === null || row.senderId === viewerId || (viewerId !== undefined && JSON.parse(row.recipients).includes(viewerId))) {
              yield messageOf(row)
              if (ended()) return
            }
            last = row.id
          }
        }
      }
    } finally {
      signal?.removeEventListener('abort', end)
      watchers.delete(wakeup)
      if (watchers.size === 0 && this.#watchers.get(chatId) === watchers) this.#watchers.delete(chatId)
    }
  }

  /** Close the database; watchers end, and every later call rejects with LEVELKIT_NOT_OPEN. */
  async close () {
    if (this.#closed) return
    this.#closed = true
    this.sql.close()
    for (const watchers of this.#watchers.values()) for (const wakeup of watchers) wakeup.notify()
  }

  /** Wake the watchers of a chat after a commit that concerns it. @param {number} chatId */
  #notify (chatId) {
    const watchers = this.#watchers.get(chatId)
    if (watchers) for (const wakeup of watchers) wakeup.notify()
  }

  #assertOpen () {
    if (this.#closed) throw levelkitError(codes.NOT_OPEN, 'The database is not open')
  }

  /** @param {unknown} username */
  #username (username) {
    if (typeof username !== 'string') throw invalid('username must be a string')
    const name = username.trim()
    if (name.length === 0 || characters(name) > this.options.maxUsernameLength) {
      throw invalid(`username must be 1 to ${this.options.maxUsernameLength} characters (after trimming)`)
    }
    return name
  }

  /** @param {unknown} name */
  #chatName (name) {
    if (typeof name !== 'string' || name.trim().length === 0 || characters(name.trim()) > this.options.maxChatNameLength) {
      throw invalid(`A chat name must be 1 to ${this.options.maxChatNameLength} characters`)
    }
    return name.trim()
  }
}

/**
 * The chatbot's key-value store (the server's `kv` option) in the same
 * database, with levelkitKv()'s rules (server/lib/kv.js): one namespace per
 * chat, keys of 1 to 64 characters, values of at most 1000, well-formed
 * text; bad input rejects with LEVELKIT_INVALID.
 * @param {SqliteChatStore} store
 * @returns {{ put (chatId: number, key: string, value: string): Promise<void>, get (chatId: number, key: string): Promise<string | undefined>, del (chatId: number, key: string): Promise<boolean> }}
 */
export function sqliteKv (store) {
  const put = store.sql.prepare('INSERT OR REPLACE INTO kv (chat_id, key, value) VALUES (?, ?, ?)')
  const get = store.sql.prepare('SELECT value FROM kv WHERE chat_id = ? AND key = ?').pluck()
  const del = store.sql.prepare('DELETE FROM kv WHERE chat_id = ? AND key = ?')
  /** @param {unknown} chatId @param {unknown} key */
  const entry = (chatId, key) => {
    assertId(chatId, 'chatId')
    kvString(key, 'key', 1, 64)
    return /** @type {[number, string]} */ ([chatId, key])
  }
  return {
    async put (chatId, key, value) {
      const args = entry(chatId, key)
      kvString(value, 'value', 0, 1000)
      put.run(...args, value)
    },
    async get (chatId, key) { return get.get(...entry(chatId, key)) ?? undefined },
    async del (chatId, key) { return del.run(...entry(chatId, key)).changes > 0 }
  }
}

/** @param {unknown} value @param {string} what @param {number} min @param {number} max */
function kvString (value, what, min, max) {
  if (typeof value !== 'string') throw invalid(`A ${what} must be a string`)
  if (!value.isWellFormed()) throw invalid(`A ${what} must be well-formed text (no lone surrogates)`)
  const length = characters(value)
  if (length < min || length > max) throw invalid(`A ${what} is ${min} to ${max} characters, got ${length}`)
}

/** Whether a watcher must read again; wait() resolves at the next notify(). */
class Wakeup {
  dirty = true
  /** @type {(() => void) | null} */
  #resume = null

  notify () {
    this.dirty = true
    const resume = this.#resume
    this.#resume = null
    if (resume) resume()
  }

  /** @returns {Promise<void>} */
  wait () {
    return new Promise(resolve => { this.#resume = resolve })
  }
}

/**
 * The viewerId and allWhispers options, checked as ChatStore checks them.
 * @param {unknown} viewerId @param {unknown} allWhispers
 */
function assertViewer (viewerId, allWhispers) {
  if (viewerId !== undefined) assertId(viewerId, 'viewerId')
  if (allWhispers !== undefined && typeof allWhispers !== 'boolean') throw invalid('allWhispers must be a boolean')
  if (allWhispers && viewerId !== undefined) throw invalid('Give viewerId or allWhispers, not both')
}

/** A chats row as ChatStore's chat. @param {any} row @returns {Chat} */
function chatOf (row) {
  return { id: row.id, name: row.name, adminId: row.adminId, members: JSON.parse(row.members), lastActivity: row.lastActivity, createdAt: row.createdAt, private: row.private === 1 }
}

/** A messages row as ChatStore's message. @param {any} row @returns {Message} */
function messageOf (row) {
  /** @type {Message} */
  const message = { id: row.id, chatId: row.chatId, senderId: row.senderId, text: row.text, timestamp: row.timestamp }
  if (row.recipients !== null) message.recipients = JSON.parse(row.recipients)
  return message
}
