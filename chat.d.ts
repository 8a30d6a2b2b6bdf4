import type { Database, Children, Collection, Counter, Relation } from './index.js'

export interface ChatStoreOptions {
  /** Members per chat (default 30). */
  maxMembers?: number
  /** Characters per message (default 200). */
  maxMessageLength?: number
  /** Characters per username, after trimming (default 64). */
  maxUsernameLength?: number
  /** Characters per chat name (default 100). */
  maxChatNameLength?: number
  /**
   * Password hashing cost: scrypt N in Node (a power of 2, default 16384),
   * PBKDF2-SHA256 iterations in browsers (default 600000). Hashes made at
   * another cost are re-hashed at this one when their user signs in.
   */
  passwordCost?: { scryptN?: number, pbkdf2Iterations?: number }
  /**
   * Take a database that holds data of the chat models but no ChatStore
   * marker as this store's (one a ChatStore wrote before stores were
   * marked), instead of refusing it with LEVELKIT_FOREIGN_DATA. Default false.
   */
  adopt?: boolean
  /**
   * How a user's chats are stored: 'list' (default; one value per user, so
   * getChats() reads one value and createChat() rewrites each member's list) or
   * 'edges' (one key per membership: createChat() writes new keys only,
   * getChats() reads a range). A database stored the other way is moved on open.
   */
  userChats?: 'list' | 'edges'
}

export interface User {
  id: number
  username: string
  createdAt: number
}

export interface Chat {
  id: number
  name: string
  adminId: number
  /** Member ids, ascending. */
  members: number[]
  lastActivity: number
  createdAt: number
  private: boolean
}

export interface Message {
  id: number
  chatId: number
  senderId: number
  text: string
  timestamp: number
  /** Set on a whisper: only the sender and these users see it. */
  recipients?: number[]
}

/** A user as the `users` collection stores it (getters never return the hash). */
export interface UserRecord {
  username: string
  /** The salted slow hash of the password. */
  passwordHash: string
  createdAt: number
}

/** A chat as the `chats` collection stores it. */
export interface ChatRecord extends Omit<Chat, 'id'> {
  /** The hash of a private chat's password; null for an open chat. */
  passwordHash: string | null
}

/** A session as the `sessions` collection stores it, under its `sessionId`. */
export interface Session {
  sessionId: string
  userId: number
  /** Milliseconds since the epoch. */
  expiry: number
}

export interface ChatMessagesOptions {
  /** First id (inclusive): count up from here. */
  from?: number
  /** Upper id (exclusive). Without `from`: the `n` messages just below it. */
  to?: number
  /** Maximum count (default 50). */
  n?: number
  /** Whose view: whispers show only to their sender and recipients. */
  viewerId?: number
  /** Every whisper, whoever it is for (not with `viewerId`): for a caller that shows each to its sender and recipients itself, like a server fanning messages out. */
  allWhispers?: boolean
}

/**
 * The chat reference model: users, sessions, chats, members in both
 * directions and messages in one levelkit database. Not found answers null
 * or false; bad input and broken rules throw errors with a stable `code`.
 */
export declare class ChatStore {
  /**
   * Declares the chat models on an open levelkit database. Whether the
   * database is a ChatStore's is checked before the first operation, which
   * rejects with LEVELKIT_FOREIGN_DATA if it is not.
   */
  constructor (db: Database, options?: ChatStoreOptions)
  /**
   * open()'s `native` option for a new IndexedDB database whose users are a native collection
   * (their own object store, IndexedDB's unique index on the username): createUser() is one
   * request. A database made without it keeps its layout.
   */
  static readonly native: { readonly users: readonly ['username'] }
  /**
   * A ChatStore on `db` once the database is known to be a ChatStore's:
   * marked as one, or holding no data of the chat models (then it is marked).
   * Rejects with LEVELKIT_FOREIGN_DATA otherwise, writing nothing.
   */
  static open (db: Database, options?: ChatStoreOptions): Promise<ChatStore>
  readonly db: Database
  /** Users by id (a sequence), with a covering unique index `username`. */
  readonly users: Collection<UserRecord>
  /** Sessions by `sessionId`, with an index `expiry`. */
  readonly sessions: Collection<Session, string, Session>
  /** Chats by id (a sequence). */
  readonly chats: Collection<ChatRecord>
  /** Chat id → member user ids, both directions kept as lists. */
  readonly members: Relation<number, number>
  /** Messages of each chat, in blocks of 16; the sequence number is the message id. */
  readonly messages: Children<Message, number>
  /** Chats whose members are exactly two users, counted under `[userA, userB]` (ascending). */
  readonly pairs: Counter
  /** Stored password hashes per hash params (`scrypt$N$r$p`, `pbkdf2-sha256$iterations`), besides those of the users `createUser()` made from the id stored under `from:<params>` on (the users' sequence counts them). */
  readonly passwordCosts: Counter
  /** How this store keeps a user's chats (the userChats option). */
  readonly userChats: 'list' | 'edges'

  /** Resolves with the new user's id; a taken username rejects with LEVELKIT_UNIQUE. */
  createUser (user: { username: string, password: string }): Promise<number>
  getUser (username: string): Promise<User | null>
  getUserById (id: number): Promise<User | null>
  /**
   * The user if the password is theirs, else null. An unknown username costs
   * the key derivation most stored hashes cost. A stored hash that cannot be
   * checked rejects with LEVELKIT_DECODE_ERROR.
   */
  verifyPassword (username: string, password: string): Promise<User | null>

  /** Create or replace a session; resolves with its id (random 128-bit hex when none is given). */
  setUserSession (session: { sessionId?: string, userId: number, expiry: number }): Promise<string>
  /** The user id, or null when the session is missing or expired. */
  getUserFromSession (sessionId: string, now?: number): Promise<number | null>
  removeSession (sessionId: string): Promise<boolean>
  /** Removes sessions expired at `now` (default: now); resolves with the count. */
  purgeExpiredSessions (now?: number): Promise<number>

  /** Resolves with the new chat's id. The admin is a member; unknown users reject with LEVELKIT_NOT_FOUND. */
  createChat (chat: { name: string, adminId: number, userIds?: number[], password?: string }): Promise<number>
  getChat (chatId: number): Promise<Chat | null>
  /** The user's chats, most recent activity first. */
  getChats (userId: number): Promise<Chat[]>
  deleteChat (chatId: number): Promise<boolean>
  /** A private chat needs its password (LEVELKIT_FORBIDDEN otherwise); a full chat rejects with LEVELKIT_LIMIT. */
  addChatMember (chatId: number, userId: number, options?: { password?: string }): Promise<boolean>
  removeChatMember (chatId: number, userId: number): Promise<boolean>
  checkChatMember (chatId: number, userId: number): Promise<boolean>
  /** True iff a chat exists whose members are exactly these two users (one point read). */
  existsChat (user1: number, user2: number): Promise<boolean>

  /** Resolves with the message id: 1, 2, 3, ... per chat. Non-members reject with LEVELKIT_FORBIDDEN. */
  addChatMessage (message: { chatId: number, senderId: number, text: string, timestamp?: number, recipients?: number[] }): Promise<number>
  /** Messages in ascending id order, or null if the chat does not exist. */
  getChatMessages (chatId: number, options?: ChatMessagesOptions): Promise<Message[] | null>
  /** New messages as they are committed, in id order, with no gap and no duplicate after `after`. */
  watch (chatId: number, options?: { after?: number, signal?: AbortSignal, viewerId?: number, allWhispers?: boolean }): AsyncGenerator<Message>

  /** db.check() plus the chat invariants (member lists match edges, pair counts match chats, hash counts match users' hashes, every hash readable). */
  check (): Promise<{ ok: boolean, problems: Array<{ type: string, message: string }> }>
}
