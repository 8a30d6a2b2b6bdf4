import { codes } from 'levelkit'

/**
 * The sender id of the bot's answers. Not a user: user ids start at 1.
 *
 * The bot is deliberately not a user of the ChatStore. A bot user would
 * have to be a member of every chat to send in it (addChatMessage accepts
 * members only): it would take one of the 30 places of every chat, turn every
 * direct chat into a chat of three (existsChat() would never find one
 * again), and its own list of chats would grow with every chat created. And
 * storing its answers would put into the chat's history what the issue says
 * is not chat text. So an answer is a message-shaped whisper to the sender
 * (`recipients: [sender]`, `senderId: 0`, `bot: true`) that is delivered
 * and never stored: it has no id, and the chat's ids stay gap-free.
 */
export const BOT_SENDER_ID = 0

const USAGE = Object.freeze({
  put: 'Usage: /put <key> <value>',
  get: 'Usage: /get <key>',
  del: 'Usage: /del <key>'
})

/**
 * @typedef {{ command: 'put', key: string, value: string }
 *   | { command: 'get' | 'del', key: string }
 *   | { command: 'put' | 'get' | 'del', usage: string }} Command
 * @typedef {{ command: 'put', key: string, value: string }
 *   | { command: 'get', key: string, value: string | null }
 *   | { command: 'del', key: string, deleted: boolean }
 *   | { command: 'put' | 'get' | 'del', error: { code: string, message: string } }} Result
 * @typedef {{ chatId: number, senderId: number, bot: true, text: string, timestamp: number, recipients: number[] }} BotMessage
 */

/**
 * The command a message's text is, or null for ordinary text. A command
 * starts the text: `/put`, `/get` or `/del`, then whitespace or the end.
 * `/put <key> <value>`: the key is the first word, the value the rest,
 * trimmed. `/get <key>`, `/del <key>`: one word. With other arguments, the
 * command's usage.
 * @param {string} text
 * @returns {Command | null}
 */
export function parseCommand (text) {
  const match = /^\/(put|get|del)(?:\s|$)/.exec(text)
  if (match === null) return null
  const command = /** @type {'put' | 'get' | 'del'} */ (match[1])
  const rest = text.slice(match[1].length + 1).trim()
  if (command === 'put') {
    const parts = /^(\S+)\s+([\s\S]+)$/.exec(rest)
    return parts === null ? { command, usage: USAGE.put } : { command, key: parts[1], value: parts[2] }
  }
  return /^\S+$/.test(rest) ? { command, key: rest } : { command, usage: USAGE[command] }
}

/**
 * Run a message's text as a chatbot command, if it is one, on the chat's
 * own keys in `kv`, and resolve with the bot's answer to the sender alone;
 * null if the text is no command (then nothing was read or written). Only
 * members run commands: LEVELKIT_FORBIDDEN otherwise, as for any message.
 * A command with bad arguments (usage, a key the store refuses) is answered
 * too, with `result.error`.
 * @param {{ store: { checkChatMember (chatId: number, userId: number): Promise<boolean> }, kv: import('./kv.js').Kv, chatId: number, userId: number, text: string, now?: number }} options
 * @returns {Promise<{ message: BotMessage, result: Result } | null>}
 */
export async function runChatbot ({ store, kv, chatId, userId, text, now = Date.now() }) {
  const command = parseCommand(text)
  if (command === null) return null
  if (!(await store.checkChatMember(chatId, userId))) {
    throw Object.assign(new Error(`User ${userId} is not a member of chat ${chatId}`), { code: codes.FORBIDDEN, chatId, userId })
  }
  const { text: answer, result } = await run(kv, chatId, command)
  return {
    message: { chatId, senderId: BOT_SENDER_ID, bot: true, text: answer, timestamp: now, recipients: [userId] },
    result
  }
}

/**
 * @param {import('./kv.js').Kv} kv @param {number} chatId @param {Command} command
 * @returns {Promise<{ text: string, result: Result }>}
 */
async function run (kv, chatId, command) {
  if ('usage' in command) return refused(command.command, 'BAD_REQUEST', command.usage)
  try {
    if (command.command === 'put') {
      await kv.put(chatId, command.key, command.value)
      return { text: `Saved ${command.key} = ${command.value}`, result: command }
    }
    const { key } = command
    if (command.command === 'get') {
      const value = await kv.get(chatId, key)
      return { text: value === undefined ? `${key} is not set` : `${key} = ${value}`, result: { command: 'get', key, value: value === undefined ? null : value } }
    }
    const deleted = await kv.del(chatId, key)
    return { text: deleted ? `Deleted ${key}` : `${key} is not set`, result: { command: 'del', key, deleted } }
  } catch (err) {
    // Bad input is the user's to fix: the bot says what is wrong. Anything
    // else is the server's, and goes up.
    if (/** @type {any} */ (err).code !== codes.INVALID) throw err
    return refused(command.command, codes.INVALID, /** @type {Error} */ (err).message)
  }
}

/**
 * @param {'put' | 'get' | 'del'} command @param {string} code @param {string} message
 * @returns {{ text: string, result: Result }}
 */
function refused (command, code, message) {
  return { text: message, result: { command, error: { code, message } } }
}
