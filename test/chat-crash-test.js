// Crash safety of the chat reference model: a child process
// (test/fixtures/chat-crash-worker.js) runs a random ChatStore workload on a
// LevelDB database, many calls in flight, and is killed with SIGKILL at a
// random moment; many times in a row on the same database, so any damage would
// accumulate. Chats with hundreds or thousands of messages are deleted along
// the way, so a kill often lands while their background purge runs.
//
// After each kill the database is reopened here with a ChatStore and must
// - pass store.check() (db.check() plus the chat invariants) with zero
//   problems, both while the resumed purge may still run and after it,
// - hold every acknowledged write: users with their usernames, sessions,
//   chats with their members, messages with their id and text, ids 1..max
//   without gaps; and nothing else (a write in flight at the kill is there
//   entirely or not at all),
// - agree in every membership view: getChats(), checkChatMember(),
//   existsChat(), members.to()/from() and each chat's `members`, for every
//   user, (chat, user) and pair of users,
// - for every deleted chat: getChat() null and, once store.messages.settled(),
//   no message, no sequence and no purge marker of it left in the raw
//   namespaces; the purge resumes by itself after a crash.
//
// The expected state is a model built from the worker's ack log.
// CHAT_CRASH_SEED=<n> reproduces the random choices of a run (not the kill
// timing nor the interleaving). The database and logs are kept on failure.

import test from 'tape'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { isDeepStrictEqual } from 'node:util'
import { open } from '../index.js'
import { ChatStore } from '../chat.js'
import { layout } from '../lib/names.js'
import { STORE_OPTIONS, SESSION_CUTOFF, chatPassword } from './fixtures/chat-crash-worker.js'
import { prng } from './util/prng.js'
import { rawEntries, rawChildren } from './util/common.js'
import { membershipProblems } from './util/chat-agreement.js'
import { acknowledged, killCycle, readAckLog } from './util/worker.js'

const WORKER = fileURLToPath(new URL('./fixtures/chat-crash-worker.js', import.meta.url))
const SEED = process.env.CHAT_CRASH_SEED ? Number(process.env.CHAT_CRASH_SEED) : Date.now() % 0x7fffffff
const CYCLES = 20

const same = isDeepStrictEqual
const show = value => JSON.stringify(value)
const numeric = (a, b) => a - b
const sorted = list => [...list].sort(numeric)
const range = (from, to) => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i)

test('chat crash: SIGKILL during a random ChatStore workload, 20 times on one LevelDB database', async t => {
  t.comment(`seed ${SEED} (reproduce with CHAT_CRASH_SEED=${SEED})`)
  const rand = prng(SEED)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'levelkit-chat-crash-'))
  const location = path.join(dir, 'db')
  const model = {
    users: new Map(), // id -> username
    sessions: new Map(), // id -> { sessionId, userId, expiry }
    chats: new Map(), // id -> { name, adminId, members: number[], private }
    messages: new Map(), // chat id -> Map(id -> message)
    deleted: new Set(), // ids of deleted chats
    deletedSizes: [] // how many messages each deleted chat had
  }
  const totals = { acked: 0, failed: {}, pending: 0, pendingApplied: 0, pendingKinds: {}, resumedPurges: 0, resumedMessages: 0, cyclesResumingPurges: 0, refusedOnLostWrite: 0 }
  let failed = false

  try {
    for (let cycle = 0; cycle < CYCLES && !failed; cycle++) {
      const logPath = path.join(dir, `ack-${cycle}.log`)
      // At a random moment; on odd cycles, right after the worker reports a
      // deletion of a chat with hundreds of messages (its purge running), or
      // after a long wait if none comes (a loaded machine gets there late).
      const targeted = cycle % 2 === 1
      const deadline = targeted ? 15000 + rand.int(1000) : 50 + rand.int(350)
      const afterPurgeStart = rand.int(4)
      const wrong = await killCycle(WORKER, [location, logPath, String(rand.int(0x7fffffff)), String(cycle)], async child => {
        // The untargeted half kills after real work whatever the machine's
        // speed, so the count asserted below holds on a loaded machine too.
        if (!targeted) await acknowledged(logPath, 2 * 51)
        await new Promise(resolve => {
          const timer = setTimeout(resolve, deadline)
          if (!targeted) return
          child.on('message', msg => {
            if (!msg || msg.purging === undefined) return
            clearTimeout(timer)
            setTimeout(resolve, afterPurgeStart)
          })
        })
      })
      if (wrong) {
        t.fail(`cycle ${cycle}: ${wrong}`)
        failed = true
        break
      }

      const resumed = totals.resumedPurges
      const problems = await verify(logPath, location, model, totals)
      if (totals.resumedPurges > resumed) totals.cyclesResumingPurges++
      if (problems.length > 0) failed = true
      if (problems.length > 60) problems.splice(50, Infinity, `... and ${problems.length - 50} more problems`)
      t.deepEqual(problems, [], `cycle ${cycle}: after SIGKILL the chat store is consistent and holds exactly the acknowledged writes`)
    }

    const messages = [...model.messages.values()].reduce((sum, m) => sum + m.size, 0)
    t.comment(`${totals.acked} acknowledged writes, rejected as expected: ${show(totals.failed)}; ${totals.pending} in flight at a kill (${totals.pendingApplied} of those found applied): ${show(totals.pendingKinds)}`)
    if (totals.refusedOnLostWrite > 0) t.comment(`${totals.refusedOnLostWrite} createUser() refused as taken by a createUser() in flight at the kill and lost`)
    t.comment(`final state: ${model.users.size} users, ${model.sessions.size} sessions, ${model.chats.size} chats, ${messages} messages, ${model.deleted.size} chats deleted`)
    t.comment(`deleted chats had ${show(model.deletedSizes.slice(0, 40))}${model.deletedSizes.length > 40 ? '...' : ''} messages; purges resumed after a kill: ${totals.resumedPurges} in ${totals.cyclesResumingPurges} cycles (${totals.resumedMessages} messages left to purge)`)
    if (!failed) {
      t.ok(totals.acked > CYCLES * 50, `the workers acknowledged many writes (${totals.acked})`)
      t.ok(totals.pending > 0, `kills hit writes in flight (${totals.pending})`)
      t.ok(model.users.size > 0 && model.chats.size > 0 && messages > 0 && model.deleted.size > 0, 'the final state has users, chats and messages, and chats were deleted')
      t.ok(model.deletedSizes.some(count => count >= 200), 'chats with hundreds of messages were deleted')
      t.ok(totals.cyclesResumingPurges > 0, `kills interrupted purges, which resumed on reopen (in ${totals.cyclesResumingPurges} cycles)`)
    }
  } finally {
    if (failed) t.comment(`seed ${SEED}; database and ack logs kept in ${dir}`)
    else fs.rmSync(dir, { recursive: true, force: true })
  }
})

/**
 * Apply the cycle's ack log to the model, reopen the database, reconcile the
 * writes that were in flight, and compare everything. Returns problems found.
 */
async function verify (logPath, location, model, totals) {
  const problems = []
  const { pending, usernamesTaken } = replayLog(logPath, model, totals, problems)
  totals.pending += pending.length
  for (const { kind } of pending) totals.pendingKinds[kind] = (totals.pendingKinds[kind] || 0) + 1

  const db = await open({ backend: 'leveldb', location })
  try {
    // What the crash left to purge, read before the ChatStore (whose
    // declaration resumes the purge) exists.
    const markers = (await rawEntries(db, layout.purge('messages'))).map(([key]) => key)
    if (markers.length > 0) {
      totals.resumedPurges += markers.length
      const left = (await rawChildren(db, layout.records('messages'))).filter(([[c]]) => markers.includes(c))
      totals.resumedMessages += left.length
    }

    const store = new ChatStore(db, STORE_OPTIONS)
    // While the resumed purge may still run.
    const first = await store.check()
    for (const p of first.problems) problems.push(`check() (purge resuming): ${p.type}: ${p.message}`)
    if (!first.ok) problems.push('check() is not ok while the purge resumes')

    const actual = await readActual(store)
    for (const start of pending) {
      if (resolvePending(model, actual, start, problems)) totals.pendingApplied++
    }
    adoptPendingMessages(model, actual, pending, problems)
    for (const username of usernamesTaken) {
      if ([...actual.users.values()].some(u => u.username === username)) continue
      // The write path decides on writes not yet on disk (lib/writer.js) and
      // rejects at once: a createUser() in flight at the kill can have taken
      // the name, then been lost. Any other refusal is wrong.
      if (pending.some(start => start.kind === 'createUser' && start.username === username)) totals.refusedOnLostWrite++
      else problems.push(`createUser(${username}) was refused as taken, but no user has that name`)
    }
    compare(model, actual, problems)
    problems.push(...await membershipProblems(store, [...model.chats.values()], [...model.users.keys()], Math.max(0, ...model.chats.keys(), ...model.deleted)))
    problems.push(...await publicReadProblems(store, model))

    await store.messages.settled()
    const children = db.models().find(m => m.kind === 'children').model
    if (children.purgeError) problems.push(`the background purge failed: ${children.purgeError.message}`)
    const purge = await rawEntries(db, layout.purge('messages'))
    if (purge.length > 0) problems.push(`after settled(), messages.purge still holds ${show(purge.map(([key]) => key))}`)
    const rawMessages = await rawChildren(db, layout.records('messages'))
    const leftOver = new Map()
    for (const [[c]] of rawMessages) {
      if (model.deleted.has(c) || !model.chats.has(c)) leftOver.set(c, (leftOver.get(c) || 0) + 1)
    }
    for (const [c, count] of leftOver) problems.push(`after settled(), ${count} raw messages of ${model.deleted.has(c) ? 'deleted' : 'unknown'} chat ${c} remain`)
    for (const [c] of await rawEntries(db, layout.sequence('messages'))) {
      if (!model.chats.has(c)) problems.push(`after settled(), the message sequence of ${model.deleted.has(c) ? 'deleted' : 'unknown'} chat ${c} remains`)
    }
    const flat = [...model.messages.values()].reduce((sum, m) => sum + m.size, 0)
    if (rawMessages.length !== flat) problems.push(`after settled(), ${rawMessages.length} raw messages, the model has ${flat}`)

    const second = await store.check()
    for (const p of second.problems) problems.push(`check() (settled): ${p.type}: ${p.message}`)
    if (!second.ok) problems.push('check() is not ok after settled()')
  } finally {
    await db.close()
  }
  return problems
}

/**
 * Walk the ack log in order, applying acks to the model and checking each
 * result and each rejection against the model. Returns the ops in flight at
 * the kill and the usernames refused as taken.
 */
function replayLog (logPath, model, totals, problems) {
  const ops = new Map()
  const usernamesTaken = []
  for (const entry of readAckLog(logPath)) {
    if (entry.t === 's') {
      ops.set(entry.n, { start: entry })
      continue
    }
    if (entry.t === 'e') {
      problems.push(`read ${entry.kind} failed: ${entry.code} ${entry.msg}`)
      continue
    }
    const op = ops.get(entry.n)
    if (!op) {
      problems.push(`log: ${entry.t} of op ${entry.n} before its start`)
      continue
    }
    op.done = true
    if (entry.t === 'a') {
      totals.acked++
      applyAck(model, op.start, entry, problems)
    } else {
      totals.failed[entry.code] = (totals.failed[entry.code] || 0) + 1
      const expected = expectedFailure(model, op.start)
      if (expected !== entry.code) problems.push(`op ${op.start.n} (${op.start.kind}) ${show(op.start)} failed with ${entry.code} (${entry.msg}), expected ${expected || 'success'}`)
      if (op.start.kind === 'createUser' && entry.code === 'LEVELKIT_UNIQUE') usernamesTaken.push(op.start.username)
    }
  }
  const pending = [...ops.values()].filter(op => !op.done).map(op => op.start)
  return { pending, usernamesTaken }
}

const uniqueMembers = start => sorted(new Set([start.adminId, ...start.userIds]))

/** The error code the op must fail with given the model (null: it must succeed). */
function expectedFailure (model, start) {
  switch (start.kind) {
    case 'createUser':
      return 'LEVELKIT_UNIQUE' // checked against the database afterwards
    case 'createChat':
      return uniqueMembers(start).length > STORE_OPTIONS.maxMembers ? 'LEVELKIT_LIMIT' : null
    case 'addChatMember': {
      const chat = model.chats.get(start.chatId)
      if (!chat) return 'unknown chat'
      if (chat.private && start.password !== chatPassword(chat.name)) return 'LEVELKIT_FORBIDDEN'
      if (!chat.members.includes(start.userId) && chat.members.length >= STORE_OPTIONS.maxMembers) return 'LEVELKIT_LIMIT'
      return null
    }
    case 'addChatMessage': {
      const chat = model.chats.get(start.chatId)
      if (!chat) return 'unknown chat'
      return chat.members.includes(start.senderId) ? null : 'LEVELKIT_FORBIDDEN'
    }
    default:
      return null
  }
}

function messageOf (start, id) {
  const message = { id, chatId: start.chatId, senderId: start.senderId, text: start.text, timestamp: start.timestamp }
  if (start.recipients) message.recipients = sorted(new Set(start.recipients))
  return message
}

function dropChat (model, c) {
  model.deletedSizes.push(model.messages.get(c)?.size || 0)
  model.chats.delete(c)
  model.messages.delete(c)
  model.deleted.add(c)
}

/** Apply one acknowledged op, checking that its result agrees with the model. */
function applyAck (model, start, ack, problems) {
  const expect = (ok, what) => { if (!ok) problems.push(`op ${start.n} (${start.kind}) ${show(start)}: ${what}`) }
  const failure = expectedFailure(model, start)
  if (start.kind !== 'createUser') expect(failure === null, `acknowledged, but it should fail with ${failure}`)
  switch (start.kind) {
    case 'createUser':
      expect(!model.users.has(ack.id), `user id ${ack.id} handed out again`)
      expect(![...model.users.values()].includes(start.username), `username ${start.username} given twice`)
      model.users.set(ack.id, start.username)
      break
    case 'setUserSession':
      expect(ack.id === start.sessionId, `resolved with ${ack.id}`)
      model.sessions.set(start.sessionId, { sessionId: start.sessionId, userId: start.userId, expiry: start.expiry })
      break
    case 'removeSession':
      expect(ack.removed === model.sessions.has(start.sessionId), `resolved with ${ack.removed}`)
      model.sessions.delete(start.sessionId)
      break
    case 'purgeExpiredSessions': {
      const expired = [...model.sessions.values()].filter(s => s.expiry <= start.now)
      expect(ack.removed === expired.length, `removed ${ack.removed}, expected ${expired.length}`)
      for (const s of expired) model.sessions.delete(s.sessionId)
      break
    }
    case 'createChat':
      expect(!model.chats.has(ack.id) && !model.deleted.has(ack.id), `chat id ${ack.id} handed out again`)
      model.chats.set(ack.id, { id: ack.id, name: start.name, adminId: start.adminId, members: uniqueMembers(start), private: start.private })
      model.messages.set(ack.id, new Map())
      break
    case 'addChatMember': {
      const chat = model.chats.get(start.chatId)
      if (!chat) break
      const added = !chat.members.includes(start.userId)
      expect(ack.added === added, `resolved with ${ack.added}, expected ${added}`)
      if (added) chat.members = sorted([...chat.members, start.userId])
      break
    }
    case 'removeChatMember': {
      const chat = model.chats.get(start.chatId)
      expect(chat !== undefined, 'the model has no such chat')
      if (!chat) break
      const removed = chat.members.includes(start.userId)
      expect(ack.removed === removed, `resolved with ${ack.removed}, expected ${removed}`)
      chat.members = chat.members.filter(u => u !== start.userId)
      break
    }
    case 'deleteChat':
      expect(ack.deleted === model.chats.has(start.chatId), `resolved with ${ack.deleted}`)
      dropChat(model, start.chatId)
      break
    case 'addChatMessage': {
      const messages = model.messages.get(start.chatId)
      if (!messages) break
      expect(Number.isSafeInteger(ack.id) && ack.id > 0 && !messages.has(ack.id), `message id ${ack.id} handed out again`)
      messages.set(ack.id, messageOf(start, ack.id))
      break
    }
    default:
      expect(false, 'unknown kind')
  }
}

/** Read the chat store's state through its models (records as stored). */
async function readActual (store) {
  const users = new Map((await store.users.query().all()).map(u => [u.id, u]))
  const sessions = new Map((await store.sessions.query().all()).map(s => [s.sessionId, s]))
  const chats = new Map((await store.chats.query().all()).map(c => [c.id, c]))
  const messages = new Map()
  for (const c of chats.keys()) {
    const items = new Map()
    for await (const [seq, message] of store.messages.range(c).entries()) items.set(seq, message)
    messages.set(c, items)
  }
  return { users, sessions, chats, messages }
}

/**
 * An op that was in flight at the kill: it may have been applied, entirely,
 * or not at all. Check that the database shows one of the two and adopt it.
 * Messages are adopted afterwards (adoptPendingMessages). Returns true if applied.
 */
function resolvePending (model, actual, start, problems) {
  const bad = what => { problems.push(`in-flight op ${start.n} (${start.kind}) ${show(start)}: ${what}`); return false }
  switch (start.kind) {
    case 'createUser': {
      const found = [...actual.users.values()].filter(u => u.username === start.username && !model.users.has(u.id))
      if (found.length === 0) return false
      model.users.set(found[0].id, start.username)
      return true
    }
    case 'setUserSession': {
      const before = model.sessions.get(start.sessionId)
      const now = actual.sessions.get(start.sessionId)
      const after = { sessionId: start.sessionId, userId: start.userId, expiry: start.expiry }
      if (same(now, after)) {
        model.sessions.set(start.sessionId, after)
        return true
      }
      if (!same(now, before)) return bad(`session is ${show(now)}, neither before ${show(before)} nor after`)
      return false
    }
    case 'removeSession': {
      if (!model.sessions.has(start.sessionId) || actual.sessions.has(start.sessionId)) return false
      model.sessions.delete(start.sessionId)
      return true
    }
    case 'purgeExpiredSessions': {
      const expired = [...model.sessions.values()].filter(s => s.expiry <= start.now)
      const left = expired.filter(s => actual.sessions.has(s.sessionId))
      if (left.length === expired.length) return false
      if (left.length > 0) return bad(`partly applied: ${left.length} of ${expired.length} expired sessions left`)
      for (const s of expired) model.sessions.delete(s.sessionId)
      return true
    }
    case 'createChat': {
      const found = [...actual.chats.values()].filter(c => c.name === start.name)
      if (found.length === 0) return false
      const [chat] = found
      const want = { name: start.name, adminId: start.adminId, members: uniqueMembers(start), private: start.private }
      if (found.length > 1 || !same({ name: chat.name, adminId: chat.adminId, members: chat.members, private: chat.private }, want)) return bad(`found ${show(found)}`)
      if (model.chats.has(chat.id) || model.deleted.has(chat.id)) return bad(`chat id ${chat.id} handed out again`)
      model.chats.set(chat.id, { id: chat.id, ...want })
      model.messages.set(chat.id, new Map())
      return true
    }
    case 'addChatMember':
    case 'removeChatMember': {
      const chat = model.chats.get(start.chatId)
      const now = actual.chats.get(start.chatId)
      if (!chat || !now) return bad('the chat is missing')
      const after = start.kind === 'addChatMember'
        ? sorted(new Set([...chat.members, start.userId]))
        : chat.members.filter(u => u !== start.userId)
      if (same(now.members, chat.members)) return false
      if (!same(now.members, after)) return bad(`members are ${show(now.members)}, neither ${show(chat.members)} nor ${show(after)}`)
      chat.members = after
      return true
    }
    case 'deleteChat':
      if (actual.chats.has(start.chatId)) return false
      dropChat(model, start.chatId)
      return true
    case 'addChatMessage':
      return false // see adoptPendingMessages()
    default:
      return bad('unknown kind')
  }
}

/** Stored messages the model lacks must each be one in-flight send, whole. */
function adoptPendingMessages (model, actual, pending, problems) {
  const sends = new Map(pending.filter(s => s.kind === 'addChatMessage').map(s => [s.text, s]))
  for (const [c, items] of actual.messages) {
    const known = model.messages.get(c)
    if (!known) continue // an unknown chat: compare() reports it
    for (const [seq, message] of items) {
      if (known.has(seq)) continue
      const start = sends.get(message.text)
      if (!start || start.chatId !== c) {
        problems.push(`chat ${c} message ${seq} ${show(message)} was never sent or acknowledged under another id`)
        continue
      }
      sends.delete(message.text)
      if (!same(message, messageOf(start, seq))) problems.push(`in-flight message ${show(start)} is stored as ${show(message)}`)
      known.set(seq, message)
    }
  }
}

function compare (model, actual, problems) {
  const diff = (what, want, got) => {
    for (const [key, value] of want) {
      if (!got.has(key)) problems.push(`${what} ${key}: acknowledged ${show(value)} but missing`)
      else if (!same(got.get(key), value)) problems.push(`${what} ${key}: expected ${show(value)}, found ${show(got.get(key))}`)
    }
    for (const [key, value] of got) if (!want.has(key)) problems.push(`${what} ${key}: found ${show(value)}, which was never written or was deleted`)
  }
  const users = new Map([...actual.users].map(([id, u]) => [id, u.username]))
  diff('user', model.users, users)
  for (const [id, user] of actual.users) {
    if (typeof user.passwordHash !== 'string' || !user.passwordHash.startsWith('scrypt$1024$')) problems.push(`user ${id} has password hash ${show(user.passwordHash)}`)
  }
  diff('session', model.sessions, actual.sessions)
  const chats = new Map([...actual.chats].map(([id, c]) => [id, { id, name: c.name, adminId: c.adminId, members: c.members, private: c.private }]))
  diff('chat', model.chats, chats)
  for (const c of model.deleted) if (actual.chats.has(c)) problems.push(`deleted chat ${c} is stored`)
  for (const [c, chat] of actual.chats) {
    const items = actual.messages.get(c)
    const ids = [...items.keys()]
    if (!same(ids, range(1, ids.length))) problems.push(`chat ${c}: message ids ${show(ids.length > 20 ? [...ids.slice(0, 10), '...', ...ids.slice(-10)] : ids)} are not 1..${ids.length}`)
    for (const [seq, message] of items) if (message.id !== seq) problems.push(`chat ${c}: message ${seq} says it is ${message.id}`)
    const newest = Math.max(chat.createdAt, ...[...items.values()].map(m => m.timestamp))
    if (chat.lastActivity !== newest) problems.push(`chat ${c}: lastActivity ${chat.lastActivity}, but its newest message or creation is at ${newest}`)
    if (chat.private !== (chat.passwordHash !== null)) problems.push(`chat ${c}: private is ${chat.private} but its password hash is ${show(chat.passwordHash)}`)
    const known = model.messages.get(c)
    if (known) diff(`chat ${c} message`, known, items)
  }
}

/** The ChatStore's own read methods on users, sessions, chats and messages. */
async function publicReadProblems (store, model) {
  const problems = []
  for (const [id, username] of model.users) {
    const user = await store.getUser(username)
    if (!user || user.id !== id || user.username !== username || 'passwordHash' in user) problems.push(`getUser(${username}) is ${show(user)}, expected user ${id}`)
    const byId = await store.getUserById(id)
    if (!same(byId, user)) problems.push(`getUserById(${id}) is ${show(byId)}`)
  }
  for (const [sessionId, session] of model.sessions) {
    const userId = await store.getUserFromSession(sessionId, SESSION_CUTOFF)
    const want = session.expiry > SESSION_CUTOFF ? session.userId : null
    if (userId !== want) problems.push(`getUserFromSession(${sessionId}) is ${userId}, expected ${want}`)
  }
  for (const [c, items] of model.messages) {
    const last = await store.messages.lastSeq(c)
    if (last !== items.size) problems.push(`messages.lastSeq(${c}) is ${last}, expected ${items.size}`)
    // Without a viewer, whispers are hidden.
    const visible = [...items.values()].filter(m => !m.recipients).sort((a, b) => a.id - b.id)
    const page = await store.getChatMessages(c, { from: 1, n: 1000000 })
    if (!same(page, visible)) problems.push(`getChatMessages(${c}) gives ${page.length} messages, expected the ${visible.length} that are not whispers`)
  }
  for (const c of model.deleted) {
    if (await store.getChat(c) !== null) problems.push(`getChat(${c}) of a deleted chat is not null`)
    if (await store.getChatMessages(c) !== null) problems.push(`getChatMessages(${c}) of a deleted chat is not null`)
    if (await store.messages.lastSeq(c) !== 0) problems.push(`messages.lastSeq(${c}) of a deleted chat is not 0`)
  }
  return problems
}
