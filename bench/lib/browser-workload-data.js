// The data set and the inputs of bench/browser-workload.js, the same for
// both sides (made in the page from one seed). Plain JavaScript: it runs in
// the browser, bundled into the page.

import { prng } from 'levelkit-testkit/prng'

/**
 * @typedef {{
 *   users: number, chats: number, members: number, messages: number,
 *   n: Record<string, number>, warm: number, seed: number
 * }} DataConfig
 * @typedef {{ username: string, password: string }} UserInput
 * @typedef {{ name: string, adminId: number, userIds: number[] }} ChatInput
 * @typedef {{ chatId: number, senderId: number, text: string, timestamp: number }} MessageInput
 */

/** Timestamps of the data set: fixed, so both sides hold the same records. */
export const T0 = 1_780_000_000_000

const WORDS = ['hello', 'there', 'ok', 'see', 'you', 'tomorrow', 'lunch', 'deploy', 'is', 'done', 'the', 'build', 'broke', 'again', 'thanks', 'sure', 'meeting', 'at', 'noon', 'coffee', 'ship', 'it', 'review', 'please', 'why', 'not', 'café', '👍']

/** A message text of 10..150 characters. @param {ReturnType<typeof prng>} random */
function text (random) {
  const target = 10 + random.int(140)
  let s = WORDS[random.int(WORDS.length)]
  while (s.length < target) s += ' ' + WORDS[random.int(WORDS.length)]
  return s
}

/**
 * `k` distinct user ids of 1..U, none equal to `exclude`.
 * @param {ReturnType<typeof prng>} random @param {number} U @param {number} k @param {number} exclude
 */
function distinctUsers (random, U, k, exclude) {
  const set = new Set()
  while (set.size < Math.min(k, U - 1)) {
    const id = 1 + random.int(U)
    if (id !== exclude) set.add(id)
  }
  return [...set]
}

/**
 * The pre-loaded records (users 1..U, chats 1..C with their final
 * lastActivity, messages with their per-chat ids) and each operation's
 * inputs: `n[op]` measured ones and `warm` for the untimed warm-up (writes:
 * inputs of their own, so no username is taken twice).
 * @param {DataConfig} config
 */
export function makeData (config) {
  const random = prng(config.seed)
  const U = config.users
  /** @type {UserInput[]} */
  const users = []
  for (let i = 1; i <= U; i++) users.push({ username: `user${i}`, password: `pw${i}` })

  /** @type {Array<{ name: string, adminId: number, members: number[], createdAt: number, lastActivity: number, lastMessageId: number }>} */
  const chats = []
  for (let c = 1; c <= config.chats; c++) {
    const adminId = 1 + random.int(U)
    const members = [adminId, ...distinctUsers(random, U, config.members - 1, adminId)].sort((a, b) => a - b)
    const createdAt = T0 - 1_000_000 + c
    chats.push({ name: `chat ${c}`, adminId, members, createdAt, lastActivity: createdAt, lastMessageId: 0 })
  }

  /** @type {Array<MessageInput & { id: number }>} */
  const messages = []
  for (let k = 1; k <= config.messages; k++) {
    const chatId = 1 + random.int(config.chats)
    const chat = chats[chatId - 1]
    const timestamp = T0 + k
    chat.lastMessageId++
    messages.push({ id: chat.lastMessageId, chatId, senderId: random.pick(chat.members), text: text(random), timestamp })
    chat.lastActivity = timestamp
  }

  const inputs = (/** @type {string} */ op, /** @type {number} */ count, /** @type {(r: ReturnType<typeof prng>, i: number) => any} */ make) => {
    const r = prng(config.seed * 1000 + hash(op))
    return Array.from({ length: count }, (_, i) => make(r, i))
  }
  const chatOf = (/** @type {ReturnType<typeof prng>} */ r) => 1 + r.int(config.chats)
  /** @type {Record<string, (r: ReturnType<typeof prng>, i: number, tag: string) => any>} */
  const makers = {
    getUser: r => `user${1 + r.int(U)}`,
    last50: r => chatOf(r),
    getChats: r => 1 + r.int(U),
    // Half members, half (most likely) not.
    checkChatMember: (r, i) => {
      const chatId = chatOf(r)
      return [chatId, i % 2 === 0 ? r.pick(chats[chatId - 1].members) : 1 + r.int(U)]
    },
    createUser: (r, i, tag) => ({ username: `${tag}-${i}`, password: `pw-${tag}-${i}` }),
    createChat: (r, i, tag) => {
      const adminId = 1 + r.int(U)
      return { name: `${tag} ${i}`, adminId, userIds: distinctUsers(r, U, config.members - 1, adminId) }
    },
    addChatMessage: (r, i) => {
      const chatId = chatOf(r)
      return { chatId, senderId: r.pick(chats[chatId - 1].members), text: text(r), timestamp: T0 + config.messages + 1 + i }
    }
  }
  /** @type {Record<string, any[]>} */
  const measured = {}
  /** @type {Record<string, any[]>} */
  const warm = {}
  for (const [op, count] of Object.entries(config.n)) {
    const kind = baseOp(op)
    measured[op] = inputs(op, count, (r, i) => makers[kind](r, i, op))
    warm[op] = inputs(`warm-${op}`, config.warm, (r, i) => makers[kind](r, i, `warm-${op}`))
  }
  return { users, chats, messages, inputs: measured, warm }
}

/**
 * The operation a row measures: `createUserC` (16 in flight) is createUser,
 * `getUserCold` (from a fresh open that holds no lease) getUser.
 * @param {string} op
 */
export function baseOp (op) {
  if (op.endsWith('Cold')) return op.slice(0, -4)
  return op.endsWith('C') ? op.slice(0, -1) : op
}

/** FNV-1a of a string, 32 bits. @param {string} s */
export function hash (s) {
  let h = 0x811c9dc5
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

/**
 * An answer as compared between the sides: JSON with sorted keys, without
 * the creation times (Date.now() on each side).
 * @param {unknown} value
 */
export function normal (value) {
  return JSON.stringify(value, (key, v) => {
    if (key === 'createdAt') return undefined
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v
    return Object.fromEntries(Object.keys(v).sort().map(k => [k, v[k]]))
  })
}
