// bench/lib/scale-out-warm.js, the inputs of scale-out's --warm-ops: the
// timed inputs are the same with and without them, each process gets its
// own, no name collides with another input's, and they are the timed
// inputs' shape (chats of the data set's users, messages from a member).
// No database: the runs themselves are in bench-scale-out-test.js.

import test from 'tape'
import { makeWorkload } from '../lib/chat-workload-worker.js'
import { warmInputs, warmShare, warmWritten, routedToProcess } from '../lib/scale-out-warm.js'
import { inputsOf } from '../lib/scale-out-worker.js'

const SIZES = { users: 50, chats: 5, members: 6, messages: 100, pairChats: 0, zipf: 0 }
const N = { createUser: 12, createChat: 12, addChatMessage: 12, last50: 12, getChats: 12 }
const OPS = ['createUser', 'createChat', 'addChatMessage', 'last50', 'getChats']
/** JSON without the message times (makeWorkload() starts them at Date.now()). @param {any} value */
const timeless = value => JSON.stringify(value, (key, v) => key === 'timestamp' ? undefined : v)
/** @param {number} run */
const workload = run => /** @type {any} */ (makeWorkload(/** @type {any} */ ({ ...SIZES, seed: run, run, n: N })))

test('warmInputs(): the timed inputs do not change, and the warm-up is the same for every cell', t => {
  const work = workload(1)
  const timed = JSON.stringify({ inputs: work.inputs, warm: work.warm, chats: work.chats, messages: work.messages })
  const options = { perProcess: 4, processes: 3, ops: OPS, memberCount: 6, seed: 1, run: 1 }
  const warm = warmInputs(work, options)
  t.is(JSON.stringify({ inputs: work.inputs, warm: work.warm, chats: work.chats, messages: work.messages }), timed, 'the workload is left as it was')
  t.is(timeless(workload(1).inputs), timeless(work.inputs), 'and is what it is without a warm-up')
  t.same(warmInputs(work, options), warm, 'the same workload: the same warm-up (every cell of a run gets it)')
  t.is(timeless(warmInputs(workload(1), options)), timeless(warm), 'the same seed and run: the same warm-up')
  t.notSame(warmInputs(workload(2), { ...options, run: 2 }).createChat, warm.createChat, 'another run: another warm-up')
  t.end()
})

test('warmInputs(): perProcess of each measured operation per process, its own', t => {
  const work = workload(1)
  const warm = warmInputs(work, { perProcess: 4, processes: 3, ops: OPS, memberCount: 6, seed: 1, run: 1 })
  for (const op of OPS) {
    const list = /** @type {any[]} */ (/** @type {any} */ (warm)[op])
    t.is(list.length, 12, `${op}: 4 for each of 3 processes`)
    const shares = [0, 1, 2].map(rank => warmShare(warm, list, { rank, processes: 3 }, op))
    t.ok(shares.every(s => s.length === 4), `${op}: each process's share is 4`)
    t.same(shares.flat(), list, `${op}: the shares are disjoint and cover the list`)
  }
  const some = warmInputs(work, { perProcess: 4, processes: 3, ops: ['createChat'], memberCount: 6, seed: 1, run: 1 })
  t.same([some.createUser.length, some.createChat.length, some.addChatMessage.length, some.last50.length, some.getChats.length], [0, 12, 0, 0, 0], 'only the measured operations')
  t.same(warmWritten(warm, 2).createChat, warm.createChat.slice(0, 8), 'a cell of 2 processes wrote the first 2 × 4')
  t.same(warmWritten(undefined, 4), { createUser: [], createChat: [], addChatMessage: [] }, 'no warm-up: nothing written')
  t.end()
})

test('--shard-chats: each process sends the messages of the chats routed to it, the cell\'s messages all, and the other operations\' shares are as without', t => {
  const work = workload(1)
  const warm = warmInputs(work, { perProcess: 20, processes: 3, ops: OPS, memberCount: 6, seed: 1, run: 1 })
  for (const processes of [1, 2, 3]) {
    const cell = Array.from({ length: processes }, (_, rank) => ({ rank, processes, shardChats: true }))
    const warmParts = cell.map(config => warmShare(warm, warm.addChatMessage, config, 'addChatMessage'))
    t.ok(warmParts.every((part, rank) => part.every(m => routedToProcess(m.chatId, processes) === rank)), `×${processes} warm-up: each process's messages go to its own chats`)
    t.same(warmParts.flat().sort((a, b) => a.timestamp - b.timestamp), warmWritten(warm, processes).addChatMessage, `×${processes} warm-up: together, what warmWritten() tells`)
    const timed = work.inputs.addChatMessage
    const timedParts = cell.map(config => inputsOf('addChatMessage', timed, config))
    t.ok(timedParts.every((part, rank) => part.every(m => routedToProcess(m.chatId, processes) === rank)), `×${processes} timed: each process's messages go to its own chats`)
    t.is(timedParts.reduce((sum, part) => sum + part.length, 0), timed.length, `×${processes} timed: every message once`)
    t.same(cell.map(config => inputsOf('createChat', work.inputs.createChat, config)), cell.map(config => inputsOf('createChat', work.inputs.createChat, { ...config, shardChats: false })), `×${processes}: other operations shared as without`)
  }
  t.same(new Set(work.inputs.addChatMessage.map(m => routedToProcess(m.chatId, 3))).size, 3, 'the timed messages go to chats of every process')
  t.end()
})

test('warmInputs(): the timed inputs\' shape, no name taken twice', t => {
  const work = workload(1)
  const warm = warmInputs(work, { perProcess: 30, processes: 4, ops: OPS, memberCount: 6, seed: 1, run: 1 })
  const names = [...work.users, ...work.inputs.createUser, ...work.warm.createUser, ...warm.createUser].map(u => u.username)
  t.is(new Set(names).size, names.length, 'every username once')
  const chatNames = [...work.chats, ...work.inputs.createChat, ...work.warm.createChat, ...warm.createChat].map(c => c.name)
  t.is(new Set(chatNames).size, chatNames.length, 'every chat name once (the final check tells them apart)')
  t.ok(warm.createChat.every(c => c.userIds.length === 5 && new Set([c.adminId, ...c.userIds]).size === 6 && [c.adminId, ...c.userIds].every(id => id >= 1 && id <= 50)), 'chats of 6 distinct users of the data set')
  t.ok(warm.addChatMessage.every(m => m.chatId >= 1 && m.chatId <= 5 && work.members[m.chatId - 1].includes(m.senderId) && m.text.length >= 10 && m.text.length < 150), 'messages from a member of a data set\'s chat, 10..149 characters')
  const latest = Math.max(...[...work.messages, ...work.inputs.addChatMessage, ...work.warm.addChatMessage].map(m => m.timestamp))
  t.ok(warm.addChatMessage.every((m, i) => m.timestamp === latest + 1 + i), 'timestamps after every other message\'s')
  t.ok(warm.last50.every(id => id >= 1 && id <= 5) && warm.getChats.every(id => id >= 1 && id <= 50), 'reads of the data set\'s chats and users')
  t.end()
})
