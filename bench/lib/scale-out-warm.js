// The steady-state warm-up of bench/scale-out.js (--warm-ops N): inputs of
// the measured operations that every process of a cell runs before the
// timed slices, untimed, so that the slices measure processes whose code
// has reached V8's optimizing tiers (a served system), not fresh ones (the
// cold default: session 20 found fresh processes paying 1.2-2.4× per
// createChat in their first ones).
//
// The inputs are the timed ones' shape (new users; chats of --members
// members of the data set; messages from a member to one of the data set's
// chats; reads of its chats and users) but their own: drawn from their own
// seeded stream, after the workload is made, so the timed inputs are the
// same with and without a warm-up, and named apart (`steady<run>x<k>`), so
// no input collides with a timed or shared warm-up one. Every cell gets the
// same list; process `rank` of a cell takes its own `perProcess` of each
// (warmShare()), so each process runs N whatever the cell's process count
// (with --shard-chats, the messages of the cell's first P × N to its own
// chats: about N), and a cell of P processes writes the first P × N
// (warmWritten(): the final check counts them).

import { prng } from 'levelkit-testkit/prng'

const WORDS = ['steady', 'state', 'warm', 'up', 'hello', 'there', 'ok', 'see', 'you', 'lunch', 'deploy', 'done', 'the', 'build', 'thanks', 'review']

/**
 * @typedef {{
 *   perProcess: number,
 *   createUser: Array<{ username: string, password: string }>,
 *   createChat: Array<{ name: string, adminId: number, userIds: number[] }>,
 *   addChatMessage: Array<{ chatId: number, senderId: number, text: string, timestamp: number }>,
 *   last50: number[],
 *   getChats: number[]
 * }} WarmInputs
 */

/**
 * The warm-up inputs of one run: `perProcess` of each operation in `ops`
 * for each of `processes` processes (none of an operation not measured).
 * @param {{ users: any[], chats: any[], members: number[][], messages: any[], inputs: Record<string, any[]>, warm: Record<string, any[]> }} work the run's workload (makeWorkload())
 * @param {{ perProcess: number, processes: number, ops: string[], memberCount: number, seed: number, run: number }} options
 * @returns {WarmInputs}
 */
export function warmInputs (work, { perProcess, processes, ops, memberCount, seed, run }) {
  // A stream of its own (not the workload's): the timed inputs do not
  // depend on whether there is a warm-up.
  const random = prng((seed * 7919 + run * 104729 + 0x5eed) >>> 0)
  const U = work.users.length
  const bigChats = Math.max(1, work.chats.length)
  const total = perProcess * processes
  /** @param {string} op @param {(k: number) => any} fn */
  const gen = (op, fn) => ops.includes(op) ? Array.from({ length: total }, (_, k) => fn(k + 1)) : []
  /** @param {number} count */
  const pick = count => {
    const set = new Set()
    while (set.size < count) set.add(1 + random.int(U))
    return [...set]
  }
  // After every other message's time (nothing orders by it; tidy).
  let clock = 1 + [work.messages, work.inputs.addChatMessage, work.warm.addChatMessage].flat().reduce((top, m) => Math.max(top, m.timestamp), 0)
  /** A text of 10..150 characters, as the timed messages'. */
  const text = () => {
    const target = 10 + random.int(140)
    let s = WORDS[random.int(WORDS.length)]
    while (s.length < target) s += ' ' + WORDS[random.int(WORDS.length)]
    return s.slice(0, target)
  }
  return {
    perProcess,
    createUser: gen('createUser', k => ({ username: `steady${run}x${k}`, password: `pw${k}` })),
    createChat: gen('createChat', k => {
      const [adminId, ...userIds] = pick(Math.min(memberCount, U))
      return { name: `steady chat ${k}`, adminId, userIds }
    }),
    addChatMessage: gen('addChatMessage', () => {
      const chatId = 1 + random.int(Math.min(bigChats, work.members.length))
      const list = work.members[chatId - 1]
      return { chatId, senderId: list[random.int(list.length)], text: text(), timestamp: clock++ }
    }),
    last50: gen('last50', () => 1 + random.int(bigChats)),
    getChats: gen('getChats', () => 1 + random.int(U))
  }
}

/**
 * Process `rank`'s own inputs of one operation: the rank-th `perProcess`;
 * with `shardChats`, the messages of the cell's (the first `perProcess`
 * × `processes`) to the chats routed to it. Either way the cell's
 * processes write what warmWritten() tells.
 * @template T @param {WarmInputs} warm @param {T[]} list
 * @param {{ rank: number, processes: number, shardChats?: boolean }} process @param {string} op
 * @returns {T[]}
 */
export function warmShare (warm, list, { rank, processes, shardChats }, op) {
  if (shardChats === true && op === 'addChatMessage') {
    return list.slice(0, processes * warm.perProcess).filter(message => routedToProcess(/** @type {any} */ (message).chatId, processes) === rank)
  }
  return list.slice(rank * warm.perProcess, (rank + 1) * warm.perProcess)
}

/**
 * Which of `processes` processes the messages of chat `chatId` go to with
 * --shard-chats: its id's rank modulo their number.
 * @param {number} chatId @param {number} processes
 */
export function routedToProcess (chatId, processes) {
  return (chatId - 1) % processes
}

/**
 * What a cell of `processes` processes wrote in its warm-up, for the final check.
 * @param {WarmInputs | undefined} warm @param {number} processes
 */
export function warmWritten (warm, processes) {
  const count = warm === undefined ? 0 : warm.perProcess * processes
  return {
    createUser: warm ? warm.createUser.slice(0, count) : [],
    createChat: warm ? warm.createChat.slice(0, count) : [],
    addChatMessage: warm ? warm.addChatMessage.slice(0, count) : []
  }
}
