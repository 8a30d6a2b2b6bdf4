import { invalid } from '../errors.js'
import { describe } from '../common.js'

// The layouts of an earlier ChatStore: members as edges (not lists),
// messages one key each (not blocks of 16). check() reports them; a repair
// moves them.
const OLD_LAYOUT = ['edge-in-old-layout', 'child-in-old-layout', 'child-block-mismatch']

/**
 * @typedef {import('../collection.js').Collection} Collection
 * @typedef {{ users: Collection, sessions: Collection, chats: Collection }} Models
 */

/**
 * ChatStore's migrations (db.migrate()), run once per database when a
 * store first finds the database its own.
 *
 * 1. Every record of `users`, `sessions` and `chats` has ChatStore's shape
 *    (refused with LEVELKIT_INVALID otherwise: another program's data,
 *    adopted or written behind the store's back, that its operations would
 *    fail on later, one by one); then data of an earlier layout is moved
 *    into the current one. The move is one repair (one batch): resumed, it
 *    finds nothing left to move.
 * @param {Models} models
 */
export function chatMigrations ({ users, sessions, chats }) {
  return [{
    version: 1,
    async up (/** @type {import('../migrate.js').MigrationContext} */ m) {
      await m.collection(users).modify(refuseUnless(isUser, 'users', 'a user { username, passwordHash, createdAt }'))
      await m.collection(sessions).modify(refuseUnless(isSession, 'sessions', 'a session { sessionId, userId, expiry }'))
      await m.collection(chats).modify(refuseUnless(isChat, 'chats', 'a chat { name, adminId, members, lastActivity, createdAt, private }'))
      if ((await m.db.check()).problems.some(p => OLD_LAYOUT.includes(p.type))) await m.db.check({ repair: true })
    }
  }]
}

/**
 * A modify() function that keeps every record of the shape and refuses any other.
 * @param {(record: any) => boolean} shaped @param {string} collection @param {string} what
 */
function refuseUnless (shaped, collection, what) {
  return (/** @type {any} */ record) => {
    if (shaped(record)) return undefined
    const id = collection === 'sessions' ? record.sessionId : record.id
    throw invalid(`This database's "${collection}" holds a record that is not ${what}: record ${describe(id)}, with fields ${Object.keys(record).join(', ') || 'none'}. Another program wrote it: use a database of the chat's own`, { collection, id })
  }
}

/** @param {unknown} n */
const isId = n => Number.isSafeInteger(n) && /** @type {number} */ (n) > 0
/** @param {unknown} n */
const isTime = n => typeof n === 'number' && Number.isFinite(n)

/** @param {any} u */
function isUser (u) {
  return typeof u.username === 'string' && typeof u.passwordHash === 'string' && isTime(u.createdAt)
}

/** @param {any} s */
function isSession (s) {
  return typeof s.sessionId === 'string' && isId(s.userId) && isTime(s.expiry)
}

/** @param {any} c */
function isChat (c) {
  return typeof c.name === 'string' && isId(c.adminId) && Array.isArray(c.members) && c.members.every(isId) &&
    isTime(c.lastActivity) && isTime(c.createdAt) && typeof c.private === 'boolean'
}
