import { hashPassword, checkPassword, paramsFor, schemes } from '#passwords'
import { dummyHash, parseHash, schemeOf } from './password-format.js'
import { invalid, levelkitError, codes } from '../errors.js'
import { promised, modelOf, scopeOf } from '../model-handle.js'
import { layout } from '../names.js'
import { describe, readInput, elementsOf, unreadable } from '../common.js'
import { optionsObject as copyOf } from '../options.js'
import { chatMigrations } from './migrations.js'
import { idbDirectFor } from '../idb-direct.js'
import { layoutReady } from '../layout-moves.js'
import { encodeJson } from '../json-value.js'
import { writeUntracked } from '../database.js'

const DEFAULTS = Object.freeze({
  maxMembers: 30,
  maxMessageLength: 200,
  maxUsernameLength: 64,
  maxChatNameLength: 100,
  passwordCost: Object.freeze({ scryptN: 16384, pbkdf2Iterations: 600000 }),
  adopt: false,
  userChats: 'list'
})

const USER_CHATS = ['list', 'edges']

// A ChatStore marks its database as its own, in a namespace no model can
// have, before it writes anything else there.
const MARKER_NAMESPACE = layout.meta('chat')
const MARKER_KEY = 'store'
// The key prefix of passwordCosts' mark (see ChatStore#countCreated()):
// hash params never start so ('scrypt$...', 'pbkdf2$...').
const FROM = 'from:'
const FROM_END = 'from;'
const MARKER = Object.freeze({ kind: 'levelkit/chat', version: 1 })

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
 * chats per exact pair of members, so existsChat() is a point read),
 * `passwordCosts` (a counter of stored hashes per cost, see
 * #countCreated()), and the marker
 * that the database is a ChatStore's (`chat.meta`).
 */
export class ChatStore {
  /** True once the database is known to be this store's: then operations run directly. */
  #owned = false
  /** @type {Promise<void> | null} */
  #owning = null
  /** How many stored password hashes have each params, as far as this store knows. @type {Map<string, number>} */
  #hashCounts = new Map()
  /** @type {{ params: string, hash: string } | null} */
  #dummy = null
  /** Whether pages of messages are read as ranges (see #rangedMessages()). */
  #ranged = false
  /** @type {import('../idb-direct.js').IdbDirect | null} the IndexedDB layer under the write path, if any */
  #idb = null

  /**
   * Declares the chat models on `db` (synchronously; the database is open).
   * Whether the database is this store's is checked before its first
   * operation; ChatStore.open() checks it at once.
   * @param {import('../database.js').Database} db
   * @param {Partial<typeof DEFAULTS>} [options]
   */
  constructor (db, options = {}) {
    if (!isDatabase(db)) throw invalid(`new ChatStore(db) takes a levelkit database, as open() resolves with, got ${describe(db)}`)
    if (options === null || typeof options !== 'object') throw invalid('ChatStore options must be an object')
    const given = copyOf(options, 'new ChatStore()')
    const unknown = Object.keys(given).filter(key => !(key in DEFAULTS))
    if (unknown.length > 0) throw invalid(`Unknown ChatStore option(s): ${unknown.join(', ')}`)
    const settings = { ...DEFAULTS, ...given, passwordCost: passwordCostOption(given.passwordCost) }
    for (const key of ['maxMembers', 'maxMessageLength', 'maxUsernameLength', 'maxChatNameLength']) {
      const value = /** @type {any} */ (settings)[key]
      if (!Number.isSafeInteger(value) || value < 2) throw invalid(`The ${key} option must be an integer of at least 2`)
    }
    if (typeof settings.adopt !== 'boolean') throw invalid('The adopt option must be a boolean')
    if (!USER_CHATS.includes(settings.userChats)) throw invalid(`The userChats option must be one of ${USER_CHATS.map(v => `'${v}'`).join(', ')}`)
    this.db = db
    this.options = settings
    this.#idb = idbDirectFor(db.level)
    this.#ranged = this.#idb !== null

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
    // A chat's members are one value (a list), so createChat() writes one
    // instead of an edge per member. A user's chats are a list too by
    // default: getChats() reads one value (kept in the read cache, on
    // PostgreSQL too), but every createChat rewrites each member's list.
    // userChats: 'edges' keeps them as a key per membership instead: a
    // createChat writes new keys only (on PostgreSQL fewer statements, and no
    // row that another process's createChat with a member in common also
    // rewrites), for getChats() reading a range (bench/RESULTS.md, scale-out,
    // session 13: createChat faster, getChats 2 statements instead of 0.13).
    this.userChats = settings.userChats
    this.members = db.relation('members', { from: this.chats, to: this.users, onDelete: { from: 'cascade', to: 'restrict' }, lists: this.userChats === 'list' ? ['from', 'to'] : ['to'] })
    // Messages in blocks of 16: the last 50 are 4 or 5 point reads instead
    // of 50, for a block rewritten per message. A chat shows its last page
    // far more often than it gets a message (bench/RESULTS.md, child-blocks,
    // and chat-workload, session 4).
    this.messages = db.children('messages', { parent: this.chats, onDelete: 'purge', blockSize: 16 })
    this.pairs = db.counter('pairs')
    // Stored password hashes per params (`scrypt$N$r$p`): an unknown
    // username is checked against a hash with the most common params.
    // Users created by createUser are counted by the users' sequence from
    // a mark on, not one by one (#countCreated()).
    this.passwordCosts = db.counter('passwordCosts')
  }

  /**
   * The native option of open() for a new database on IndexedDB whose users
   * are kept in an object store of their own, with IndexedDB's unique index
   * on their usernames: createUser() is then one request (see
   * lib/idb-records.js). A database made without it keeps its layout.
   */
  static native = Object.freeze({ users: Object.freeze(['username']) })

  /**
   * A ChatStore on `db`, once the database is known to be its own: marked
   * as a ChatStore's, or empty of its models' data (then it is marked now).
   * Rejects with LEVELKIT_FOREIGN_DATA otherwise.
   * @param {import('../database.js').Database} db
   * @param {Partial<typeof DEFAULTS>} [options]
   */
  static async open (db, options) {
    const store = new ChatStore(db, options)
    await store.#own()
    return store
  }

  // Every operation first makes sure the database is this store's (once;
  // after that it runs directly). Set up here for every method, so none can
  // go without it.
  static {
    /** @param {Function} method */
    const owned = method => /** @this {ChatStore} */ function (/** @type {any[]} */ ...args) {
      return this.#owned ? method.apply(this, args) : this.#own().then(() => method.apply(this, args))
    }
    // watch() hands out its iterator at once; the iterator waits instead.
    /** @param {Function} method */
    const ownedIterator = method => /** @this {ChatStore} */ function (/** @type {any[]} */ ...args) {
      if (this.#owned) return method.apply(this, args)
      const store = this
      return (async function * () {
        await store.#own()
        yield * method.apply(store, args)
      })()
    }
    const proto = /** @type {any} */ (ChatStore.prototype)
    for (const name of Object.getOwnPropertyNames(proto)) {
      const { value } = /** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(proto, name))
      if (name !== 'constructor' && typeof value === 'function') proto[name] = name === 'watch' ? ownedIterator(value) : owned(value)
    }
  }

  /**
   * db.write() for this store's own callbacks: each calls every model
   * through `w`, so its async context need not be tracked, and no
   * AsyncLocalStorage is enabled for it (lib/database.js writeUntracked).
   * `hint`: what `fn` will read, where it is known when it is called
   * (lib/writer.js readHints).
   * @template T
   * @param {(w: import('../write-scope.js').WriteScope) => Promise<T>} fn @param {boolean} [rerunnable]
   * @param {() => import('../writer.js').ReadHint[]} [hint]
   * @returns {Promise<T>}
   */
  #write (fn, rerunnable = false, hint) {
    return this.db[writeUntracked](fn, rerunnable, hint)
  }

  /** Make sure, once, that the database is this store's. */
  #own () {
    if (this.#owning === null) {
      this.#owning = this.#claim().catch(err => {
        // Not decided (the database was closed, a read failed): ask again next time.
        this.#owning = null
        throw err
      })
    }
    return this.#owning
  }

  async #claim () {
    if (this.db.status !== 'open') throw levelkitError(codes.NOT_OPEN, 'The database is not open')
    const meta = this.db.level.sublevel(MARKER_NAMESPACE, { keyEncoding: 'utf8', valueEncoding: 'utf8' })
    let marker = await meta.get(MARKER_KEY)
    let migrated = false
    if (marker === undefined) {
      const found = await namespacesWithData(this.db.level, this.#modelNames())
      // Another store (a second tab) may have marked it since: it writes its
      // marker before any data, so data seen here comes with it.
      if (found.length > 0) marker = await meta.get(MARKER_KEY)
      if (marker === undefined) {
        if (found.length > 0 && !this.options.adopt) {
          throw levelkitError(codes.FOREIGN_DATA, `This database is not a ChatStore's: it holds data in ${found.join(', ')}, namespaces of the chat models, but no ChatStore marker (${MARKER_NAMESPACE}), so another program wrote it. Use a database of its own for the chat (another location). If it is a ChatStore's from before stores were marked, open it once with { adopt: true }.`, { found, marker: null })
        }
        if (found.length > 0) {
          // Adopted data is checked (and moved into the current layout) before it is marked.
          await this.#migrate()
          migrated = true
          await this.#recountHashes()
        }
        marker = JSON.stringify(MARKER)
        await meta.put(MARKER_KEY, marker)
      }
    }
    assertOwnMarker(marker)
    if (!migrated) await this.#migrate()
    // Data in another layout than declared (members' reverse lists where
    // IndexedDB keeps the index, userChats changed) is moved now: inside
    // the store's writes, a relation being moved cannot wait for it.
    // A move that fails is the model's (its uses reject with the error), not the claim's.
    for (const handle of [this.members, this.messages]) {
      try {
        await layoutReady(modelOf(handle), false)
      } catch {}
    }
    // Outside a write (which would take the cross-tab lock from another
    // tab): the counters and the sequence may be of two moments, and other
    // tabs' writes are not followed anyway; the counts only pick the dummy.
    this.#hashCounts = await hashCounts(await countsOf(this.passwordCosts.query()), () => modelOf(this.users).storedSequenceValue())
    this.#owned = true
  }

  /**
   * Run the migrations this database has not run yet (lib/chat/migrations.js):
   * it refuses records that are not a ChatStore's, and moves data of an
   * earlier layout into the current one.
   */
  async #migrate () {
    await this.db.migrate(chatMigrations(this))
  }

  /** The names of the chat models, whose namespaces a foreign database may hold. */
  #modelNames () {
    return [this.users, this.sessions, this.chats, this.members, this.messages, this.pairs, this.passwordCosts].map(model => model.name)
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
    const params = paramsFor(this.options.passwordCost)
    try {
      // The callback may run again (it does nothing but write): on
      // IndexedDB the username is then claimed by the batch, not read
      // first (Writer#run()).
      const createdAt = Date.now()
      const id = await this.#write(async (w) => {
        const id = /** @type {number} */ (await this.users.in(w).insert({ username: name, passwordHash, createdAt }))
        await this.#countCreated(w, params, id)
        return id
      }, true, () => [...modelOf(this.users).insertReads({ username: name }), ...modelOf(this.passwordCosts).readsOf(FROM + params)])
      this.#countHash(params, 1)
      return id
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
   * The user, if the password is theirs; null otherwise. An unknown
   * username is checked against a dummy hash with the params most stored
   * hashes have: the same read and the same key derivation as for most
   * users. A hash older than the current passwordCost is replaced on a
   * successful check. A stored hash that cannot be checked rejects with
   * LEVELKIT_DECODE_ERROR.
   * @param {string} username @param {string} password
   * @returns {Promise<User | null>}
   */
  async verifyPassword (username, password) {
    assertPassword(password)
    const user = await this.users.getBy('username', this.#username(username))
    const matches = await checkPassword(password, user ? user.passwordHash : this.#dummyHash())
    if (!user || !matches) return null
    await this.#upgradeHash(user, password)
    return publicUser(user)
  }

  /** A hash no password matches, with the params most stored hashes have. */
  #dummyHash () {
    let params = paramsFor(this.options.passwordCost)
    let most = this.#hashCounts.get(params) || 0
    for (const [other, count] of this.#hashCounts) {
      if (count > most && schemes.includes(schemeOf(other))) [params, most] = [other, count]
    }
    if (this.#dummy === null || this.#dummy.params !== params) this.#dummy = { params, hash: dummyHash(params) }
    return this.#dummy.hash
  }

  /**
   * Re-hash a password just verified at the current cost, so stored costs
   * converge to it. Hashed before the write (it takes tens of ms); written
   * only if the stored hash is still the one verified.
   * @param {any} user @param {string} password
   */
  async #upgradeHash (user, password) {
    const from = parseHash(user.passwordHash).params
    const to = paramsFor(this.options.passwordCost)
    if (from === to) return
    const passwordHash = await hashPassword(password, this.options.passwordCost)
    const upgraded = await this.#write(async (w) => {
      const current = await this.users.in(w).get(user.id)
      if (!current || current.passwordHash !== user.passwordHash) return false
      await this.users.in(w).update(user.id, { passwordHash })
      await this.passwordCosts.in(w).add(from, -1)
      await this.passwordCosts.in(w).add(to, 1)
      return true
    })
    if (upgraded) {
      this.#countHash(from, -1)
      this.#countHash(to, 1)
    }
  }

  /**
   * Count the hash of user `id`, just created with `params`. Its count is
   * implied, without a write, while the counter `from:<params>` holds an
   * id at or below it: every user from that id to the users' sequence
   * (gap-free; ChatStore deletes no user) was created here with those
   * params, and the counter of `params` holds the others (hashes that
   * moved to or from them count there). A store with other params (another
   * tab's passwordCost) first counts the mark's users explicitly and moves
   * the mark: two writes where the params change, none per user.
   * @param {import('../write-scope.js').WriteScope} w @param {string} params @param {number} id
   */
  async #countCreated (w, params, id) {
    const counters = this.passwordCosts.in(w)
    if (await counters.get(FROM + params) !== 0) return
    for (const [key, from] of await countsOf(counters.query({ gte: FROM, lt: FROM_END }))) {
      await counters.add(key.slice(FROM.length), id - from)
      await counters.add(key, -from)
    }
    await counters.add(FROM + params, id)
  }

  /**
   * How many stored hashes have each params: the counters, plus the users
   * a mark implies (see #countCreated()).
   * @param {import('../write-scope.js').WriteScope} w
   * @returns {Promise<Map<string, number>>}
   */
  #hashCountsIn (w) {
    const users = this.users.in(w)
    return countsOf(this.passwordCosts.in(w).query()).then(counters => hashCounts(counters, () => modelOf(users).sequenceValue(scopeOf(users))))
  }

  /** @param {string} params @param {number} delta */
  #countHash (params, delta) {
    this.#hashCounts.set(params, (this.#hashCounts.get(params) || 0) + delta)
  }

  /**
   * Stored hashes per params, counted from the users; and the users whose
   * hash cannot be read.
   * @param {import('../write-scope.js').WriteScope} w
   */
  async #storedHashes (w) {
    /** @type {Map<string, number>} */
    const counts = new Map()
    /** @type {number[]} */
    const unreadable = []
    for await (const user of this.users.in(w).query()) {
      try {
        const { params } = parseHash(user.passwordHash)
        counts.set(params, (counts.get(params) || 0) + 1)
      } catch {
        unreadable.push(user.id)
      }
    }
    return { counts, unreadable }
  }

  /** Set the hash counts from the users: for data adopted without them. */
  async #recountHashes () {
    await this.#write(async (w) => {
      const { counts } = await this.#storedHashes(w)
      const counters = this.passwordCosts.in(w)
      // (Marks too: every hash is now counted one by one.)
      for (const [params, count] of await countsOf(counters.query())) if (!counts.has(params)) await counters.add(params, -count)
      for (const [params, count] of counts) await counters.add(params, count - await counters.get(params))
    })
  }

  /**
   * Problems with the stored hashes: counts that differ from the users',
   * and hashes that cannot be checked.
   * @param {import('../write-scope.js').WriteScope} w
   */
  async #passwordProblems (w) {
    const { counts, unreadable } = await this.#storedHashes(w)
    /** @type {Array<{ type: string, message: string }>} */
    const problems = unreadable.map(id => ({ type: 'unreadable-password-hash', message: `User ${id} has a password hash that cannot be checked` }))
    const counted = await this.#hashCountsIn(w)
    for (const params of new Set([...counts.keys(), ...counted.keys()])) {
      if ((counts.get(params) || 0) !== (counted.get(params) || 0)) {
        problems.push({ type: 'password-cost-count-mismatch', message: `Hashes with params ${params}: ${counted.get(params) || 0} counted, ${counts.get(params) || 0} stored` })
      }
    }
    return problems
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
    await this.#write(async (w) => {
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
    if (typeof now !== 'number' || !Number.isFinite(now)) throw invalid(`now must be a finite number, got ${describe(now)}`)
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
      const count = await this.#write(async (w) => {
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
    const members = Array.from(new Set([adminId, ...idList(userIds, 'userIds')])).sort(byNumber)
    if (members.length > this.options.maxMembers) throw limit(`A chat holds at most ${this.options.maxMembers} members`)
    let passwordHash = null
    if (password !== undefined) {
      assertPassword(password)
      passwordHash = await hashPassword(password, this.options.passwordCost)
    }
    const now = Date.now()
    return this.#write(async (w) => {
      // What adding the members reads, asked for with the chats' sequence
      // (the insert's read): one statement on postgres, where with locking:
      // 'serializable' the sequence key is then held for the transaction's
      // two round trips, not three.
      modelOf(this.members).prefetchAdds(w, members)
      // Its id taken in the batch's statement where the backend can
      // (PostgreSQL with locking: 'keys', lib/deferred-ids.js): then the
      // chats' sequence is neither read nor locked here, and other
      // processes' createChat wait for it only during that statement. The
      // section only puts the id into keys and values, and returns it.
      const json = encodeJson({ name: chatName, adminId, members, lastActivity: now, createdAt: now, private: passwordHash !== null, passwordHash }, 'Record for "chats"')
      const chatId = /** @type {number} */ (await w.atomic(scope => modelOf(this.chats).insertDeferred(scope, json)))
      try {
        await this.members.in(w).addMany(chatId, members)
      } catch (err) {
        if (/** @type {any} */ (err).code === codes.NOT_FOUND) throw notFound(`No user with id ${/** @type {any} */ (err).id}`, err)
        throw err
      }
      await this.#countPair(w, null, members)
      return chatId
    }, false, () => modelOf(this.members).addsReads(members))
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
    // On IndexedDB one request (the index's entries carry the chats); elsewhere the ids, then the chats.
    /** @type {any[]} */
    const chats = await this.members.from(assertId(userId, 'userId')).records()
    return chats
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
    return this.#write(async (w) => {
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
    return this.#write(async (w) => {
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
    return this.#write(async (w) => {
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
    const { chatId, senderId, text, timestamp = Date.now(), recipients: recipientList } = optionsObject(message, 'addChatMessage()')
    assertId(chatId, 'chatId')
    assertId(senderId, 'senderId')
    if (typeof text !== 'string' || text.length === 0) throw invalid('text must be a non-empty string')
    if (characters(text) > this.options.maxMessageLength) throw invalid(`A message is at most ${this.options.maxMessageLength} characters`)
    if (typeof timestamp !== 'number' || !Number.isFinite(timestamp)) throw invalid('timestamp must be a finite number')
    // Read now: the write below runs later, and must use what was checked.
    const recipients = recipientList === undefined ? undefined : idList(recipientList, 'recipients')
    if (recipients !== undefined && recipients.length === 0) throw invalid('recipients must be a non-empty array of user ids')
    return this.#write(async (w) => {
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
    }, false, () => modelOf(this.messages).appendReads(chatId))
  }

  /**
   * Messages in ascending id order. With `from`: up to `n` from `from`
   * (inclusive). Without: the `n` just below `to` (exclusive), or the newest
   * `n`. Whispers are shown only to their sender and recipients (`viewerId`),
   * or all of them with `allWhispers` (to a caller that shows each to its
   * sender and recipients itself, like a server fanning messages out).
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
    const visible = visibility(viewerId, allWhispers)
    if (this.#ranged) return this.#rangedMessages(chatId, from, to, n, visible)
    const [exists, last] = await Promise.all([this.chats.has(chatId), this.messages.lastSeq(chatId)])
    if (!exists) return null
    /** @type {Message[]} */
    const result = []
    // Message ids are gap-free (1 to lastSeq) and messages are never deleted
    // one by one, so a page is a run of ids read with point reads, without
    // an iterator. Only hidden whispers make another round.
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
   * getChatMessages() where a read is a round trip (IndexedDB): a page is
   * one range of the messages (one request for the blocks that hold it, the
   * chat's record read beside it: messages are visible only while their
   * chat is there), not the last id and then point reads. Only hidden
   * whispers make another round.
   * @param {number} chatId @param {number | undefined} from @param {number | undefined} to @param {number} n
   * @param {(message: Message) => boolean} visible
   * @returns {Promise<Message[] | null>}
   */
  async #rangedMessages (chatId, from, to, n, visible) {
    const forward = from !== undefined
    /** @type {Message[]} */
    const result = []
    let low = from
    let high = to
    while (result.length < n) {
      const wanted = n - result.length
      /** @type {Record<string, number | boolean>} */
      const bounds = { limit: wanted }
      if (low !== undefined) bounds.gte = low
      if (high !== undefined) bounds.lt = high
      if (!forward) bounds.reverse = true
      const page = /** @type {Message[]} */ (await this.messages.range(chatId, bounds).all())
      for (const message of page) if (visible(message)) result.push(message)
      const edge = page.length === 0 ? undefined : page[page.length - 1].id
      if (page.length < wanted || !Number.isSafeInteger(edge)) break
      if (forward) low = /** @type {number} */ (edge) + 1
      else high = edge
    }
    // Messages are read only while their chat is there: none found, the
    // chat may be missing.
    if (result.length === 0 && !(await this.chats.has(chatId))) return null
    return forward ? result : result.reverse()
  }

  /**
   * New messages of a chat as they are committed, in id order, with no gap
   * and no duplicate after `after` (default: the last message now). Ends when
   * `signal` aborts or the chat is deleted. Whispers as getChatMessages()
   * shows them (`viewerId`, `allWhispers`).
   * @param {number} chatId
   * @param {{ after?: number, signal?: AbortSignal, viewerId?: number, allWhispers?: boolean }} [options]
   * @returns {AsyncGenerator<Message>}
   */
  watch (chatId, options) {
    // Start the underlying watch now, so its starting point is taken now.
    let inner = null
    let error = null
    try {
      assertId(chatId, 'chatId')
      const { viewerId, allWhispers, ...watchOptions } = optionsObject(options, 'watch() options')
      inner = { visible: visibility(viewerId, allWhispers), messages: this.messages.watch(chatId, watchOptions) }
    } catch (err) {
      error = err
    }
    return visibleMessages(inner, error)
  }

  /**
   * db.check() plus the chat model's own invariants: every chat's member
   * list equals its edges, the pair counts match the chats, and the hash
   * counts match the users' password hashes, which are all readable. The
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
    await this.#write(async (w) => {
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
      found.push(...await this.#passwordProblems(w))
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
    // Code points are at most UTF-16 units: counted only past the limit in units
    // (the iteration allocates, on every createUser() and getUser()).
    if (name.length === 0 || (name.length > this.options.maxUsernameLength && characters(name) > this.options.maxUsernameLength)) {
      throw invalid(`username must be 1 to ${this.options.maxUsernameLength} characters (after trimming)`)
    }
    return name
  }

  /** @param {unknown} name */
  #chatName (name) {
    if (typeof name !== 'string' || name.trim().length === 0 || (name.trim().length > this.options.maxChatNameLength && characters(name.trim()) > this.options.maxChatNameLength)) {
      throw invalid(`A chat name must be 1 to ${this.options.maxChatNameLength} characters`)
    }
    return name.trim()
  }
}

/**
 * The passwordCost option over its defaults; each a positive integer, and
 * scrypt's N a power of 2.
 * @param {unknown} option
 */
function passwordCostOption (option) {
  if (option === undefined) return { ...DEFAULTS.passwordCost }
  if (option === null || typeof option !== 'object') throw invalid('The passwordCost option must be an object')
  const given = copyOf(option, 'The passwordCost option')
  const unknown = Object.keys(given).filter(key => !(key in DEFAULTS.passwordCost))
  if (unknown.length > 0) throw invalid(`Unknown passwordCost field(s): ${unknown.join(', ')}`)
  const cost = { ...DEFAULTS.passwordCost, ...given }
  if (!Number.isSafeInteger(cost.scryptN) || cost.scryptN < 2 || (cost.scryptN & (cost.scryptN - 1)) !== 0) {
    throw invalid(`passwordCost.scryptN must be a power of 2, got ${describe(cost.scryptN)}`)
  }
  if (!Number.isSafeInteger(cost.pbkdf2Iterations) || cost.pbkdf2Iterations < 1) {
    throw invalid(`passwordCost.pbkdf2Iterations must be a positive integer, got ${describe(cost.pbkdf2Iterations)}`)
  }
  return cost
}

/**
 * The namespaces, among those of these models, that hold data: a model's
 * own (`name`) and derived ones (`name.idx.x`, `name.seq`, ...). Sublevel
 * keys are prefixed `!namespace!` in the root.
 * @param {any} level the root database
 * @param {string[]} names
 * @returns {Promise<string[]>}
 */
async function namespacesWithData (level, names) {
  const ranges = names.flatMap(name => [[`!${name}!`, `!${name}"`], [`!${name}.`, `!${name}/`]])
  const firstKeys = await Promise.all(ranges.map(([gte, lt]) => level.keys({ gte, lt, limit: 1, keyEncoding: 'utf8' }).all()))
  return firstKeys.flat().map((/** @type {string} */ key) => key.slice(1, key.indexOf('!', 1))).sort()
}

/**
 * A counter query's values by key.
 * @param {import('../query.js').Query} query
 * @returns {Promise<Map<string, number>>}
 */
async function countsOf (query) {
  const counts = new Map()
  for await (const [key, count] of query.entries()) counts.set(key, count)
  return counts
}

/**
 * How many stored hashes have each params, from passwordCosts' counters
 * and mark (see ChatStore#countCreated()), given the users' sequence.
 * @param {Map<string, number>} counters @param {() => Promise<number>} last the users' sequence value
 * @returns {Promise<Map<string, number>>}
 */
async function hashCounts (counters, last) {
  /** @type {Map<string, number>} */
  const counts = new Map()
  /** @type {Array<[string, number]>} */
  const marks = []
  for (const [key, count] of counters) {
    if (key.startsWith(FROM)) marks.push([key.slice(FROM.length), count])
    else counts.set(key, count)
  }
  if (marks.length > 0) {
    const lastId = await last()
    for (const [params, from] of marks) counts.set(params, (counts.get(params) || 0) + Math.max(0, lastId - from + 1))
  }
  for (const [params, count] of counts) if (count === 0) counts.delete(params)
  return counts
}

/** Refuse a marker other than a ChatStore's of a version this one knows. @param {string} stored */
function assertOwnMarker (stored) {
  let marker
  try {
    marker = JSON.parse(stored)
  } catch {
    marker = stored
  }
  if (marker && marker.kind === MARKER.kind && marker.version === MARKER.version) return
  const message = marker && marker.kind === MARKER.kind && Number.isSafeInteger(marker.version) && marker.version > MARKER.version
    ? `This database was written by a newer ChatStore (layout version ${marker.version}; this one knows ${MARKER.version})`
    : `This database is marked as another store's, not a ChatStore's: ${MARKER_NAMESPACE} holds ${JSON.stringify(marker)}`
  throw levelkitError(codes.FOREIGN_DATA, message, { found: [MARKER_NAMESPACE], marker })
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
  if (!Number.isSafeInteger(id) || /** @type {number} */ (id) < 1) throw invalid(`${what} must be a positive integer, got ${describe(id)}`)
  return /** @type {number} */ (id)
}

/**
 * Whether `db` looks like a levelkit Database (one from another copy of
 * levelkit is one too).
 * @param {unknown} db
 */
function isDatabase (db) {
  return db !== null && typeof db === 'object' && readInput('The db argument of new ChatStore()', () => {
    const value = /** @type {any} */ (db)
    return typeof value.collection === 'function' && typeof value.relation === 'function' && typeof value.write === 'function' && typeof value.check === 'function'
  })
}

/**
 * An array of user ids, read once and checked.
 * @param {unknown} ids @param {string} what
 * @returns {number[]}
 */
function idList (ids, what) {
  return elementsOf(ids, what).map(id => assertId(id, `${what} item`))
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
 * Options or a record argument: an object, or undefined for none, read once
 * (a copy: see optionsObject() in lib/options.js).
 * @param {unknown} value @param {string} what
 * @returns {any}
 */
function optionsObject (value, what) {
  if (value === undefined) return {}
  // Inline, not readInput(): on every call, and the sentence is only needed if the read throws.
  let array = true
  if (value !== null && typeof value === 'object') {
    try {
      array = Array.isArray(value)
    } catch (err) {
      throw unreadable(`The argument of ${what}`, err)
    }
  }
  if (array) throw invalid(`${what} takes an object`)
  return copyOf(value, what)
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
 * @param {{ visible: (message: Message) => boolean, messages: AsyncGenerator<[number, any]> } | null} inner
 * @param {unknown} error
 * @returns {AsyncGenerator<Message>}
 */
async function * visibleMessages (inner, error) {
  if (inner === null) throw error
  const { visible, messages } = inner
  for await (const [, message] of messages) {
    if (visible(message)) yield message
  }
}

/**
 * Which messages a reader sees: every public one, and the whispers it sent
 * or was sent (`viewerId`), or every whisper (`allWhispers`); checked.
 * @param {unknown} viewerId @param {unknown} allWhispers
 * @returns {(message: Message) => boolean}
 */
function visibility (viewerId, allWhispers) {
  if (viewerId !== undefined) assertId(viewerId, 'viewerId')
  if (allWhispers !== undefined && typeof allWhispers !== 'boolean') throw invalid('allWhispers must be a boolean')
  if (allWhispers && viewerId !== undefined) throw invalid('Give viewerId or allWhispers, not both')
  if (allWhispers) return () => true
  return message => !message.recipients || message.senderId === viewerId || (viewerId !== undefined && message.recipients.includes(/** @type {number} */ (viewerId)))
}
