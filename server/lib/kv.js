import { codes } from 'levelkit'

/** The longest key and value, in characters (code points: an emoji is one). */
export const MAX_KEY_LENGTH = 64
export const MAX_VALUE_LENGTH = 1000

/**
 * @typedef {object} Kv the chatbot's key-value store: one namespace per chat
 * @property {(chatId: number, key: string, value: string) => Promise<void>} put
 * @property {(chatId: number, key: string) => Promise<string | undefined>} get
 * @property {(chatId: number, key: string) => Promise<boolean>} del true if the key was there
 */

/**
 * The chatbot's key-value store on a levelkit database: a collection of its
 * own (`chatbotKv` unless named otherwise) beside the ChatStore's models,
 * keyed `[chatId, key]`, so each chat has its own keys and `db.check()`
 * checks them with the rest. Bad input rejects with LEVELKIT_INVALID and
 * writes nothing.
 *
 * Entries outlive their chat when it is deleted; chat ids are never reused,
 * so no other chat ever sees them.
 * @param {import('levelkit').Database} db an open levelkit database
 * @param {{ name?: string }} [options]
 * @returns {Kv}
 */
export function levelkitKv (db, { name = 'chatbotKv' } = {}) {
  const entries = db.collection(name, { id: (/** @type {any} */ entry) => [entry.chatId, entry.key] })
  return {
    async put (chatId, key, value) {
      const id = entryId(chatId, key)
      checkString(value, 'value', 0, MAX_VALUE_LENGTH)
      await entries.put(id, { chatId, key, value })
    },
    async get (chatId, key) {
      const entry = await entries.get(entryId(chatId, key))
      return entry === undefined ? undefined : entry.value
    },
    async del (chatId, key) {
      return entries.del(entryId(chatId, key))
    }
  }
}

/** @param {unknown} chatId @param {unknown} key */
function entryId (chatId, key) {
  if (!Number.isSafeInteger(chatId) || /** @type {number} */ (chatId) < 1) throw invalid(`chatId must be a positive integer, got ${typeof chatId === 'number' ? chatId : typeof chatId}`)
  checkString(key, 'key', 1, MAX_KEY_LENGTH)
  return [chatId, key]
}

/**
 * A well-formed string (keys are encoded as UTF-8) of `min` to `max`
 * characters.
 * @param {unknown} value @param {string} what @param {number} min @param {number} max
 */
function checkString (value, what, min, max) {
  if (typeof value !== 'string') throw invalid(`A ${what} must be a string, got ${value === null ? 'null' : typeof value}`)
  if (!value.isWellFormed()) throw invalid(`A ${what} must be well-formed text (no lone surrogates)`)
  const length = characters(value)
  if (length < min || length > max) throw invalid(`A ${what} is ${min} to ${max} characters, got ${length}`)
}

/** @param {string} text the length in code points */
function characters (text) {
  let n = 0
  for (const _ of text) n++ // eslint-disable-line no-unused-vars
  return n
}

/** @param {string} message */
function invalid (message) {
  return Object.assign(new Error(message), { code: codes.INVALID })
}
