import { hashPassword, checkPassword } from '#passwords'
import { invalid, levelkitError, codes } from '../errors.js'
import { promised } from '../model-handle.js'

const DEFAULTS = Object.freeze({
  maxMembers: 30,
  maxMessageLength: 200,
  maxUsernameLength: 64,
  maxChatNameLength: 100,
  passwordCost: Object.freeze({ scryptN: 16384, pbkdf2Iterations: 600000 })
})

const PURGE_SESSIONS_CHUNK = 1000
const DEFAULT_PAGE = 50

/**
 * @typedef {{ id: number, username: string, createdAt: number }} User
 * @typedef {{ id: number, name: string, adminId: number, members: number[], lastActivity: number, createdAt: number, private: boolean }} Chat
 * @typedef {{ id: number, chatId: number, senderId: number, text: string, timestamp: number, recipients?: number[] }} Message
 */

/**
 * The chat reference model on levelkit: users, sessions, chats, members in
 * both directions and messages, each in its own namespace of one database,
 * every change one atomic batch.
 *
 * Namespaces: `users` (+ `users.idx.username`), `sessions`
 * (+ `sessions.idx.expiry`), `chats`, `members.list.to` (each chat's member
 * ids, one value per chat) and `members.list.from` (each user's chat ids),
 * `messages` (per-chat sequence), `pairs` (a counter of
 * chats per exact pair of members, so existsChat() is a point read).
 */
export class ChatStore {
  /**
   * Declares the chat models on `db` (synchronously; the database is open).
   * @param {import('../database.js').Database} db
   * @param {Partial<typeof DEFAULTS>} [options]
   */
  constructor (db, options = {}) {
    if (options === null || typeof options !== 'object') throw invalid('ChatStore options must be an object')
    const unknown = Object.keys(options).filter(key => !(key in DEFAULTS))
    if (unknown.length > 0) throw invalid(`Unknown ChatStore option(s): ${unknown.join(', ')}`)
    const settings = { ...DEFAULTS, ...options, passwordCost: { ...DEFAULTS.passwordCost, ...options.passwordCost } }
    for (const key of ['maxMembers', 'maxMessageLength', 'maxUsernameLength', 'maxChatNameLength']) {
      const value = /** @type {any} */ (settings)[key]
      if (!Number.isSafeInteger(value) || value < 2) throw invalid(`The ${key} option must be an integer of at least 2`)
    }
    this.db = db
    this.options = settings

    // The username index holds a copy of each user, so getUser() is one read.
    this.users = db.collection('users', {
      indexes: { username: { unique: true, covering: true, key: (/** @type {any} */ u) => u.username } }
    })
    this.sessions = db.collection('sessions', {
      id: (/** @type {any} */ s) => s.sessionId,
      indexes: { expiry: { key: (/** @type {any} */ s) => [s.expiry] } }
    })
    this.chats = db.collection('chats')
    // Deleting a chat removes its edges; a user in a chat cannot be deleted.
    // Both directions are lists: a user's chats are one value, so getChats()
    // reads it instead of opening an iterator, and a chat's members are one
    // value, so createChat() writes one instead of an edge per member.
    this.members = db.relation('members', { from: this.chats, to: this.users, onDelete: { from: 'cascade', to: 'restrict' }, lists: ['from', 'to'] })
    // Messages in blocks of 16: the last 50 are 4 or 5 point reads instead
    // of 50, for a block rewritten per message. A chat shows its last page
    // far more often than it gets a message (bench/RESULTS.md, child-blocks,
    // and chat-workload, session 4).
    this.messages = db.children('messages', { parent: this.chats, onDelete: 'purge', blockSize: 16 })
    this.pairs = db.counter('pairs')
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
    try {
      return /** @type {number} */ (await this.users.insert({ username: name, passwordHash, createdAt: Date.now() }))
    } catch (err) {
      if (/** @type {any} */ (err).code === codes.UNIQUE) {
        throw levelkitError(codes.UNIQUE, `The username ${JSON.stringify(name)} is taken`, { cause: err, username: name })
      }
      throw err
    }
  }

  /** @param {string} username @returns {Promise<User | null>} */
  getUser (username) {
    // Not async: one read, and one promise fewer per call.
    return promised(() => this.users.getBy('username', this.#username(username)).then(publicUser))
  }

  /** @param {number} id @returns {Promise<User | null>} */
  async getUserById (id) {
    return publicUser(await this.users.get(assertId(id, 'user id')))
  }

  /**
   * The user, if the password is theirs; null otherwise (also for an
   * unknown username, after the same amount of hashing work).
   * @param {string} username @param {string} password
   * @returns {Promise<User | null>}
   */
  async verifyPassword (username, password) {
    assertPassword(password)
    const user = await this.users.getBy('username', this.#username(username))
    if (!user) {
      await hashPassword(password, this.options.passwordCost)
      return null
    }
    return (await checkPassword(password, user.passwordHash)) ? publicUser(user) : null
  }

  // Sessions

  /**
   * Create or replace a session.
   * @param {{ sessionId?: string, userId: number, expiry: number }} session
   * @returns {Promise<string>} the session id (a random 128-bit hex id when none is given)
   */
  async setUserSession (session) {
    const { sessionId, userId, expiry } = optionsObject(session, 'setUserSession()')
    const id = sessionId === undefined ? randomId() : sessionId
    if (typeof id !== 'string' || id.length === 0 || id.length > 256) throw invalid('sessionId must be a non-empty string of at most 256 characters')
    assertId(userId, 'userId')
    if (typeof expiry !== 'number' || !Number.isFinite(expiry)) throw invalid('expiry must be a finite number (milliseconds since the epoch)')
    await this.db.write(async (w) => {
      if (!(await this.users.in(w).has(userId))) throw notFound(`No user with id ${userId}`)
      await this.sessions.in(w).put(id, { sessionId: id, userId, expiry })
    })
    return id
  }

  /**
   * @param {string} sessionId @param {number} [now]
   * @returns {Promise<number | null>} the user id, or null when missing or expired
   */
  async getUserFromSession (sessionId, now = Date.now()) {
    if (typeof sessionId !== 'string') throw invalid('sessionId must be a string')
    const session = await this.sessions.get(sessionId)
    return session && session.expiry > now ? session.userId : null
  }

  /** @param {string} sessionId @returns {Promise<boolean>} */
  async removeSession (sessionId) {
    if (typeof sessionId !== 'string') throw invalid('sessionId must be a string')
    return this.sessions.del(sessionId)
  }

  /**
   * Delete every session whose expiry is at or before `now`: a range read
   * over the expiry index, in bounded batches.
   * @param {number} [now]
   * @returns {Promise<number>} how many were removed
   */
  async purgeExpiredSessions (now = Date.now()) {
    if (typeof now !== 'number' || !Number.isFinite(now)) throw invalid('now must be a finite number')
    let removed = 0
    while (true) {
      const count = await this.db.write(async (w) => {
        const sessions = this.sessions.in(w)
        const expired = await sessions.query({ index: 'expiry', lte: [now], limit: PURGE_SESSIONS_CHUNK }).all()
        for (const session of expired) await sessions.del(session.sessionId)
        return expired.length
      })
      removed += count
      if (count < PURGE_SESSIONS_CHUNK) return removed
    }
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
    if (!Array.isArray(userIds)) throw invalid('userIds must be an array of user ids')
    for (const id of userIds) assertId(id, 'user id')
    const members = Array.from(new Set([adminId, ...userIds])).sort(byNumber)
    if (members.length > this.options.maxMembers) throw limit(`A chat holds at most ${this.options.maxMembers} members`)
    let passwordHash = null
    if (password !== undefined) {
      assertPassword(password)
      passwordHash = await hashPassword(password, this.options.passwordCost)
    }
    const now = Date.now()
    return this.db.write(async (w) => {
      const chatId = /** @type {number} */ (await this.chats.in(w).insert({
        name: chatName, adminId, members, lastActivity: now, createdAt: now, private: passwordHash !== null, passwordHash
      }))
      try {
        await this.members.in(w).addMany(chatId, members)
      } catch (err) {
        if (/** @type {any} */ (err).code === codes.NOT_FOUND) throw notFound(`No user with id ${/** @type {any} */ (err).id}`, err)
        throw err
      }
      await this.#countPair(w, null, members)
      return chatId
    })
  }

  /** @param {number} chatId @returns {Promise<Chat | null>} */
  async getChat (chatId) {
    return publicChat(await this.chats.get(assertId(chatId, 'chatId')))
  }

  /**
   * The user's chats, most recent activity first, from the user -> chat
   * direction of the members relation.
   * @param {number} userId
   * @returns {Promise<Chat[]>}
   */
  async getChats (userId) {
    const ids = await this.members.from(assertId(userId, 'userId')).all()
    const chats = await this.chats.getMany(ids)
    return chats
      .filter(chat => chat !== undefined)
      .map(chat => /** @type {Chat} */ (publicChat(chat)))
      .sort((a, b) => b.lastActivity - a.lastActivity || b.id - a.id)
  }

  /**
   * Delete a chat: the chat, its member edges in both directions and its pair
   * count in one batch; its messages are invisible from then on and deleted
   * in bounded background batches. Chat ids are never reused.
   * @param {number} chatId
   * @returns {Promise<boolean>}
   */
  async deleteChat (chatId) {
    assertId(chatId, 'chatId')
    return this.db.write(async (w) => {
      const chat = await this.chats.in(w).get(chatId)
      if (!chat) return false
      await this.#countPair(w, chat.members, null)
      return this.chats.in(w).del(chatId)
    })
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
    const chat = await this.chats.get(chatId)
    if (!chat) return false
    if (chat.passwordHash) {
      // Hash outside the write path: checking takes tens of milliseconds.
      if (typeof password !== 'string' || !(await checkPassword(password, chat.passwordHash))) {
        throw levelkitError(codes.FORBIDDEN, `Chat ${chatId} is private: the password is missing or wrong`, { chatId })
      }
    }
    return this.db.write(async (w) => {
      const current = await this.chats.in(w).get(chatId)
      if (!current || !(await this.users.in(w).has(userId))) return false
      if (current.members.includes(userId)) return false
      if (current.members.length >= this.options.maxMembers) throw limit(`Chat ${chatId} is full (${this.options.maxMembers} members)`)
      const members = [...current.members, userId].sort(byNumber)
      await this.chats.in(w).update(chatId, { members })
      await this.members.in(w).add(chatId, userId)
      await this.#countPair(w, current.members, members)
      return true
    })
  }

  /**
   * @param {number} chatId @param {number} userId
   * @returns {Promise<boolean>} true if the user was a member
   */
  async removeChatMember (chatId, userId) {
    assertId(chatId, 'chatId')
    assertId(userId, 'userId')
    return this.db.write(async (w) => {
      const chat = await this.chats.in(w).get(chatId)
      if (!chat || !chat.members.includes(userId)) return false
      const members = chat.members.filter((/** @type {number} */ id) => id !== userId)
      await this.chats.in(w).update(chatId, { members })
      await this.members.in(w).remove(chatId, userId)
      await this.#countPair(w, chat.members, members)
      return true
    })
  }

  /** @param {number} chatId @param {number} userId @returns {Promise<boolean>} one point read */
  async checkChatMember (chatId, userId) {
    return this.members.has(assertId(chatId, 'chatId'), assertId(userId, 'userId'))
  }

  /**
   * True iff a chat exists whose members are exactly these two users.
   * @param {number} user1 @param {number} user2
   * @returns {Promise<boolean>} one point read
   */
  async existsChat (user1, user2) {
    assertId(user1, 'user1')
    assertId(user2, 'user2')
    if (user1 === user2) return false
    return (await this.pairs.get(pairKey([user1, user2]))) > 0
  }

  // Messages

  /**
   * @param {{ chatId: number, senderId: number, text: string, timestamp?: number, recipients?: number[] }} message
   *   `recipients` makes it a whisper, shown only to the sender and them
   * @returns {Promise<number>} the message id: 1, 2, 3, ... per chat, without gaps
   */
  async addChatMessage (message) {
    const { chatId, senderId, text, timestamp = Date.now(), recipients } = optionsObject(message, 'addChatMessage()')
    assertId(chatId, 'chatId')
    assertId(senderId, 'senderId')
    if (typeof text !== 'string' || text.length === 0) throw invalid('text must be a non-empty string')
    if (characters(text) > this.options.maxMessageLength) throw invalid(`A message is at most ${this.options.maxMessageLength} characters`)
    if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) throw invalid('timestamp must be a finite number')
    if (recipients !== undefined) {
      if (!Array.isArray(recipients) || recipients.length === 0) throw invalid('recipients must be a non-empty array of user ids')
      for (const id of recipients) assertId(id, 'recipient id')
    }
    return this.db.write(async (w) => {
      const chats = this.chats.in(w)
      const chat = await chats.get(chatId)
      if (!chat) throw notFound(`No chat with id ${chatId}`)
      // The chat's member list and its edges are written together (check()
      // verifies it), so the record just read answers without another read.
      if (!chat.members.includes(senderId)) {
        throw levelkitError(codes.FORBIDDEN, `User ${senderId} is not a member of chat ${chatId}`, { chatId, userId: senderId })
      }
      if (recipients && recipients.some((/** @type {number} */ id) => !chat.members.includes(id))) {
        throw levelkitError(codes.FORBIDDEN, 'Whisper recipients must be members of the chat', { chatId })
      }
      const id = (await this.messages.in(w).lastSeq(chatId)) + 1
      /** @type {Message} */
      const message = { id, chatId, senderId, text, timestamp }
      if (recipients) message.recipients = Array.from(new Set(recipients)).sort(byNumber)
      await this.messages.in(w).append(chatId, message)
      await chats.update(chatId, { lastActivity: Math.max(chat.lastActivity, timestamp) })
      return id
    })
  }

  /**
   * Messages in ascending id order. With `from`: up to `n` from `from`
   * (inclusive). Without: the `n` just below `to` (exclusive), or the newest
   * `n`. Whispers are shown only to their sender and recipients (`viewerId`).
   * @param {number} chatId
   * @param {{ from?: number, to?: number, n?: number, viewerId?: number }} [options]
   * @returns {Promise<Message[] | null>} null if the chat does not exist
   */
  async getChatMessages (chatId, options) {
    assertId(chatId, 'chatId')
    const { from, to, n = DEFAULT_PAGE, viewerId } = optionsObject(options, 'getChatMessages() options')
    if (from !== undefined) assertId(from, 'from')
    if (to !== undefined) assertId(to, 'to')
    if (!Number.isSafeInteger(n) || n < 1) throw invalid('n must be a positive integer')
    if (viewerId !== undefined) assertId(viewerId, 'viewerId')
    if (!(await this.chats.has(chatId))) return null
    const visible = (/** @type {Message} */ m) => !m.recipients || m.senderId === viewerId || (viewerId !== undefined && m.recipients.includes(viewerId))
    /** @type {Message[]} */
    const result = []
    // Message ids are gap-free (1 to lastSeq) and messages are never deleted
    // one by one, so a page is a run of ids read with point reads, without
    // an iterator. Only hidden whispers make another round.
    const last = await this.messages.lastSeq(chatId)
    const top = Math.min(last, to === undefined ? last : to - 1)
    let next = from !== undefined ? from : top
    while (result.length < n && next >= 1 && next <= top) {
      const count = from !== undefined ? Math.min(n - result.length, top - next + 1) : Math.min(n - result.length, next)
      const ids = Array.from({ length: count }, (_, i) => from !== undefined ? next + i : next - i)
      const page = await this.messages.getMany(chatId, ids)
      // None there: the chat was deleted meanwhile.
      if (page.every(message => message === undefined)) break
      for (const message of page) if (message !== undefined && visible(message)) result.push(message)
      next = from !== undefined ? next + count : next - count
    }
    // The chat may have been deleted since it was looked up: its messages
    // are then hidden, and the answer is the one for a missing chat.
    if (result.length === 0 && !(await this.chats.has(chatId))) return null
    return from !== undefined ? result : result.reverse()
  }

  /**
   * New messages of a chat as they are committed, in id order, with no gap
   * and no duplicate after `after` (default: the last message now). Ends when
   * `signal` aborts or the chat is deleted.
   * @param {number} chatId
   * @param {{ after?: number, signal?: AbortSignal, viewerId?: number }} [options]
   * @returns {AsyncGenerator<Message>}
   */
  watch (chatId, options) {
    // Start the underlying watch now, so its starting point is taken now.
    let inner = null
    let error = null
    try {
      assertId(chatId, 'chatId')
      const { viewerId, ...watchOptions } = optionsObject(options, 'watch() options')
      if (viewerId !== undefined) assertId(viewerId, 'viewerId')
      inner = { viewerId, messages: this.messages.watch(chatId, watchOptions) }
    } catch (err) {
      error = err
    }
    return visibleMessages(inner, error)
  }

  /**
   * db.check() plus the chat model's own invariants: every chat's member
   * list equals its edges, and the pair counts match the chats. The
   * invariants are read in one critical section, so they hold while other
   * writes run.
   * @returns {Promise<{ ok: boolean, problems: Array<{ type: string, message: string }> }>}
   */
  async check () {
    /** @type {Array<{ type: string, message: string }>} */
    const found = []
    // Read the chat invariants as one critical section: no write lands
    // between reading a chat, its edges and the pair counts. Done first, so
    // that called inside a db.write() callback (where this write is refused
    // in Node, and waits for the callback in browsers) it is refused before
    // db.check() has read the whole database.
    await this.db.write(async (w) => {
      /** @type {Map<string, number>} */
      const expectedPairs = new Map()
      for await (const chat of this.chats.in(w).query()) {
        const edges = await this.members.in(w).to(chat.id).all()
        if (JSON.stringify(edges) !== JSON.stringify(chat.members)) {
          found.push({ type: 'chat-members-mismatch', message: `Chat ${chat.id} lists members ${JSON.stringify(chat.members)} but has edges to ${JSON.stringify(edges)}` })
        }
        if (chat.members.length === 2) {
          const key = JSON.stringify(pairKey(chat.members))
          expectedPairs.set(key, (expectedPairs.get(key) || 0) + 1)
        }
      }
      /** @type {Map<string, number>} */
      const actualPairs = new Map()
      for await (const [key, count] of this.pairs.in(w).query().entries()) actualPairs.set(JSON.stringify(key), count)
      for (const key of new Set([...expectedPairs.keys(), ...actualPairs.keys()])) {
        if ((expectedPairs.get(key) || 0) !== (actualPairs.get(key) || 0)) {
          found.push({ type: 'pair-count-mismatch', message: `Pair ${key}: ${actualPairs.get(key) || 0} counted, ${expectedPairs.get(key) || 0} chats` })
        }
      }
    })
    const { problems } = await this.db.check()
    found.unshift(...problems.map(p => ({ type: p.type, message: p.message })))
    return { ok: found.length === 0, problems: found }
  }

  /**
   * Keep the count of chats per exact pair of members in step with a
   * chat's member list changing from `before` to `after` (null: no chat).
   * @param {import('../write-scope.js').WriteScope} w
   * @param {number[] | null} before
   * @param {number[] | null} after
   */
  async #countPair (w, before, after) {
    if (before && before.length === 2) await this.pairs.in(w).add(pairKey(before), -1)
    if (after && after.length === 2) await this.pairs.in(w).add(pairKey(after), 1)
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

/** @param {number[]} members */
function pairKey (members) {
  return [...members].sort(byNumber)
}

/** @param {number} a @param {number} b */
function byNumber (a, b) {
  return a - b
}

/** @param {any} user @returns {User | null} */
function publicUser (user) {
  if (!user) return null
  const { passwordHash, ...rest } = user
  return rest
}

/** @param {any} chat @returns {Chat | null} */
function publicChat (chat) {
  if (!chat) return null
  const { passwordHash, ...rest } = chat
  return rest
}

/** @param {unknown} id @param {string} what @returns {number} */
function assertId (id, what) {
  if (!Number.isSafeInteger(id) || /** @type {number} */ (id) < 1) throw invalid(`${what} must be a positive integer, got ${String(id)}`)
  return /** @type {number} */ (id)
}

/** @param {unknown} password */
function assertPassword (password) {
  if (typeof password !== 'string' || password.length === 0 || password.length > 1024) {
    throw invalid('password must be a non-empty string of at most 1024 characters')
  }
}

/** @param {string} message @param {unknown} [cause] */
function notFound (message, cause) {
  return levelkitError(codes.NOT_FOUND, message, { cause })
}

/** @param {string} message */
function limit (message) {
  return levelkitError(codes.LIMIT, message)
}

/** A random 128-bit id, as 32 hex digits. */
function randomId () {
  const bytes = crypto.getRandomValues(new Uint8Array(16))
  return Array.from(bytes, b => b.toString(16).padStart(2, '0')).join('')
}

/**
 * Options or a record argument: an object, or undefined for none.
 * @param {unknown} value @param {string} what
 * @returns {any}
 */
function optionsObject (value, what) {
  if (value === undefined) return {}
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalid(`${what} takes an object`)
  return value
}

/**
 * Length in characters (code points), not UTF-16 units: an emoji is one.
 * @param {string} text
 */
function characters (text) {
  let n = 0
  for (const _ of text) n++ // eslint-disable-line no-unused-vars
  return n
}

/**
 * @param {{ viewerId: number | undefined, messages: AsyncGenerator<[number, any]> } | null} inner
 * @param {unknown} error
 * @returns {AsyncGenerator<Message>}
 */
async function * visibleMessages (inner, error) {
  if (inner === null) throw error
  const { viewerId, messages } = inner
  for await (const [, message] of messages) {
    if (!message.recipients || message.senderId === viewerId || (viewerId !== undefined && message.recipients.includes(viewerId))) {
      yield message
    }
  }
}
