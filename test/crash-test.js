// Crash safety: a child process (test/fixtures/crash-worker.js) runs a random
// write workload on a LevelDB levelkit database, several writes in flight,
// and is killed with SIGKILL at a random moment; many times in a row, on the
// same database, so any damage would accumulate. After each kill the database
// is reopened here and must
// - pass db.check() with zero problems,
// - hold every acknowledged write, in its last acknowledged state, exactly
//   (records, index entries, edges in both directions, children and their
//   sequences, counters), nothing that was never written,
// - show every write that was in flight at the kill either entirely or not at
//   all (multi-op db.write() transactions included).
//
// The expected state is a model built from the worker's ack log (see the
// worker for its format). CRASH_SEED=<n> reproduces the random choices of a
// run (the kill timing and the interleaving of the writes still vary).

import test from 'tape'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { isDeepStrictEqual } from 'node:util'
import bytewise from 'bytewise'
import { open } from '../index.js'
import { layout } from '../lib/names.js'
import { declare, USER_INDEXES, CHAT_INDEXES, COUNTER_KEYS } from './fixtures/crash-worker.js'
import { prng } from './util/prng.js'
import { acknowledged, killCycle, readAckLog } from './util/worker.js'

const WORKER = fileURLToPath(new URL('./fixtures/crash-worker.js', import.meta.url))
const SEED = process.env.CRASH_SEED ? Number(process.env.CRASH_SEED) : Date.now() % 0x7fffffff
const CYCLES = 25

const same = isDeepStrictEqual
const decode = bytes => bytewise.decode(Buffer.from(bytes))
const text = bytes => Buffer.from(bytes).toString('utf8')
const show = value => JSON.stringify(value)
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

test('crash: SIGKILL during a random write workload, 25 times on one LevelDB database', async t => {
  t.comment(`seed ${SEED} (reproduce with CRASH_SEED=${SEED})`)
  const rand = prng(SEED)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'levelkit-crash-'))
  const location = path.join(dir, 'db')
  const model = {
    users: new Map(),
    chats: new Map(),
    edges: new Set(),
    messages: new Map(),
    counters: new Map()
  }
  const totals = { acked: 0, failed: 0, pending: 0, pendingApplied: 0, pendingKinds: {} }
  // Whether some cycle's check compared a state holding each kind (the last
  // state alone may have lost them all to the workload's own deletes).
  const checked = { users: false, edges: false, messages: false }
  let failed = false

  try {
    for (let cycle = 0; cycle < CYCLES && !failed; cycle++) {
      const logPath = path.join(dir, `ack-${cycle}.log`)
      const wrong = await killCycle(WORKER, [location, logPath, String(rand.int(0x7fffffff)), String(cycle)], async () => {
        if (cycle === 0) {
          // The worker holds the LevelDB lock: a second open must say so.
          let code = null
          try {
            const intruder = await open({ backend: 'leveldb', location })
            await intruder.close()
          } catch (err) {
            code = err.code
          }
          t.is(code, 'LEVELKIT_LOCKED', 'opening the location while the worker holds it fails with LEVELKIT_LOCKED')
        }
        await acknowledged(logPath, 21)
        await sleep(rand.int(350))
      })
      if (wrong) {
        t.fail(`cycle ${cycle}: ${wrong}`)
        failed = true
        break
      }

      const problems = await verify(cycle, logPath, location, model, totals)
      checked.users ||= model.users.size > 0
      checked.edges ||= model.edges.size > 0
      checked.messages ||= [...model.messages.values()].some(items => items.size > 0)
      if (problems.length > 0) {
        failed = true
        t.comment(`seed ${SEED}; database and ack logs kept in ${dir}`)
      }
      t.deepEqual(problems, [], `cycle ${cycle}: after SIGKILL the database is consistent and holds exactly the acknowledged writes`)
    }

    t.comment(`${totals.acked} acknowledged writes, ${totals.failed} rejected as expected, ${totals.pending} in flight at a kill (${totals.pendingApplied} of those found applied)`)
    t.comment(`in flight at a kill, by kind: ${show(totals.pendingKinds)}`)
    if (!failed) {
      t.ok(totals.acked > CYCLES * 20, `the workers acknowledged many writes (${totals.acked})`)
      t.ok(totals.pending > 0, `kills hit writes in flight (${totals.pending})`)
      t.deepEqual(checked, { users: true, edges: true, messages: true }, 'some cycle checked a state with users, edges and messages')
    }
  } finally {
    if (!failed) fs.rmSync(dir, { recursive: true, force: true })
  }
})

/**
 * Apply the cycle's ack log to the model, reopen the database, reconcile the
 * writes that were in flight, and compare everything. Returns problems found.
 */
async function verify (cycle, logPath, location, model, totals) {
  const problems = []
  const { ops, acked, failures } = readLog(logPath, problems)

  for (const { start, ack } of acked) applyAck(model, start, ack, problems)
  for (const { start, fail } of failures) {
    const expected = start.kind === 'abortTx'
      ? fail.msg === 'deliberate'
      : ['insertUser', 'updateUser', 'updateUserFn', 'onboard'].includes(start.kind) && fail.code === 'LEVELKIT_UNIQUE'
    if (!expected) problems.push(`op ${start.n} (${start.kind}) failed unexpectedly: ${fail.code} ${fail.msg}`)
  }
  const pending = [...ops.values()].filter(op => !op.ack && !op.fail).map(op => op.start)
  totals.acked += acked.length
  totals.failed += failures.length
  totals.pending += pending.length
  for (const { kind } of pending) totals.pendingKinds[kind] = (totals.pendingKinds[kind] || 0) + 1

  const db = await open({ backend: 'leveldb', location })
  try {
    const m = declare(db)
    const result = await db.check()
    for (const p of result.problems) problems.push(`check(): ${p.type} in ${p.namespace}: ${p.message}`)
    if (!result.ok) problems.push('check() is not ok')

    const actual = await readRaw(db)
    for (const start of pending) {
      if (resolvePending(model, actual, start, problems)) totals.pendingApplied++
    }
    compare(model, actual, problems)
    problems.push(...auditIndexes(actual.rawUsers, actual.userIndexes, USER_INDEXES, 'users'))
    problems.push(...auditIndexes(actual.rawChats, actual.chatIndexes, CHAT_INDEXES, 'chats'))

    // Through the public API too.
    for (const [id, user] of model.users) {
      const found = await m.users.getBy('username', user.username)
      if (!found || found.id !== id) problems.push(`getBy(username, ${user.username}) gave ${show(found)}, expected user ${id}`)
    }
    if (await m.users.count() !== model.users.size) problems.push('users.count() differs from the model')
    for (const [c, items] of model.messages) {
      if (await m.messages.lastSeq(c) !== Math.max(0, ...items.keys())) problems.push(`messages.lastSeq(${c}) is wrong`)
    }
    for (const k of COUNTER_KEYS) {
      if (await m.stats.get(k) !== (model.counters.get(k) || 0)) problems.push(`stats.get(${k}) differs from the model`)
    }
    for (const [c] of model.chats) {
      const want = [...model.edges].map(e => e.split(',').map(Number)).filter(([ec]) => ec === c).map(([, u]) => u).sort((a, b) => a - b)
      const got = await m.members.to(c).all()
      if (!same(got, want)) problems.push(`members.to(${c}) is ${show(got)}, expected ${show(want)}`)
    }
    const poisoned = [...actual.users.values()].filter(u => u.poison !== undefined)
    if (poisoned.length > 0) problems.push(`records written by a throwing db.write(): ${show(poisoned)}`)
  } finally {
    await db.close()
  }
  return problems
}

/** Parse an ack log: starts, acks and failures by op number. A torn last line is ignored. */
function readLog (logPath, problems) {
  const ops = new Map()
  const acked = []
  const failures = []
  for (const entry of readAckLog(logPath)) {
    if (entry.t === 's') {
      ops.set(entry.n, { start: entry })
      continue
    }
    const op = ops.get(entry.n)
    if (!op) {
      problems.push(`log: ${entry.t} of op ${entry.n} before its start`)
      continue
    }
    if (entry.t === 'a') {
      op.ack = entry
      acked.push(op)
    } else {
      op.fail = entry
      failures.push(op)
    }
  }
  return { ops, acked, failures }
}

const lastSeq = (model, c) => Math.max(0, ...(model.messages.get(c) || new Map()).keys())

function dropChat (model, c) {
  model.chats.delete(c)
  model.messages.delete(c)
  for (const e of model.edges) if (e.startsWith(`${c},`)) model.edges.delete(e)
}

function dropUser (model, u) {
  model.users.delete(u)
  for (const e of model.edges) if (e.endsWith(`,${u}`)) model.edges.delete(e)
}

function addMessage (model, c, seq, value) {
  if (!model.messages.has(c)) model.messages.set(c, new Map())
  model.messages.get(c).set(seq, value)
}

function updated (old, start) {
  if (start.kind === 'updateUser') return { ...old, ...start.patch }
  if (start.kind === 'updateUserFn') return { ...old, age: old.age + start.by, ...(start.username ? { username: start.username } : {}) }
  return { ...old, age: old.age + 1 } // caughtTx
}

/** Apply one acknowledged op, checking that its result agrees with the model. */
function applyAck (model, start, ack, problems) {
  const expect = (ok, what) => { if (!ok) problems.push(`op ${start.n} (${start.kind}): ${what}`) }
  switch (start.kind) {
    case 'insertUser':
      expect(!model.users.has(ack.id), `id ${ack.id} handed out again`)
      model.users.set(ack.id, { id: ack.id, ...start.rec })
      break
    case 'updateUser':
    case 'updateUserFn':
    case 'caughtTx': {
      const old = model.users.get(start.id ?? start.u)
      expect(old !== undefined, 'updated a user the model does not have')
      if (old === undefined) break
      const next = updated(old, start)
      expect(same(ack.rec, next), `resolved with ${show(ack.rec)}, expected ${show(next)}`)
      model.users.set(next.id, next)
      break
    }
    case 'delUser':
      expect(ack.existed === model.users.has(start.id), 'del() result differs from the model')
      dropUser(model, start.id)
      break
    case 'insertChat':
      expect(!model.chats.has(ack.id), `chat id ${ack.id} handed out again`)
      model.chats.set(ack.id, { id: ack.id, ...start.rec })
      break
    case 'delChat':
      expect(ack.existed === model.chats.has(start.id), 'del() result differs from the model')
      dropChat(model, start.id)
      break
    case 'addEdge': {
      const key = `${start.c},${start.u}`
      expect(ack.added === !model.edges.has(key), 'add() result differs from the model')
      model.edges.add(key)
      break
    }
    case 'removeEdge': {
      const key = `${start.c},${start.u}`
      expect(ack.removed === model.edges.has(key), 'remove() result differs from the model')
      model.edges.delete(key)
      break
    }
    case 'append':
      expect(ack.seq === lastSeq(model, start.c) + 1, `append resolved with seq ${ack.seq}, expected ${lastSeq(model, start.c) + 1}`)
      addMessage(model, start.c, ack.seq, start.value)
      break
    case 'counterAdd': {
      const value = (model.counters.get(start.k) || 0) + start.delta
      expect(ack.value === value, `counter resolved with ${ack.value}, expected ${value}`)
      model.counters.set(start.k, value)
      break
    }
    case 'onboard': {
      expect(!model.users.has(ack.id), `id ${ack.id} handed out again`)
      model.users.set(ack.id, { id: ack.id, ...start.rec })
      model.edges.add(`${start.c},${ack.id}`)
      expect(ack.seq === lastSeq(model, start.c) + 1, `onboard appended seq ${ack.seq}, expected ${lastSeq(model, start.c) + 1}`)
      addMessage(model, start.c, ack.seq, { text: 'joined', user: ack.id, m: start.rec.m })
      const joins = (model.counters.get('joins') || 0) + 1
      expect(ack.joins === joins, `joins resolved with ${ack.joins}, expected ${joins}`)
      model.counters.set('joins', joins)
      break
    }
    case 'swap': {
      const r1 = model.users.get(start.u1)
      const r2 = model.users.get(start.u2)
      if (r1 === undefined || r2 === undefined) return expect(false, 'swapped users the model does not have')
      const rec1 = { ...r1, username: r2.username }
      const rec2 = { ...r2, username: r1.username }
      expect(same(ack.rec1, rec1) && same(ack.rec2, rec2), 'swap resolved with other records than expected')
      model.users.set(start.u1, rec1)
      model.users.set(start.u2, rec2)
      break
    }
    default:
      problems.push(`op ${start.n}: acknowledged ${start.kind}, which should never commit`)
  }
}

/**
 * An op that was in flight at the kill: it may have been applied, entirely,
 * or not at all. Check that the database shows one of the two and adopt it.
 * Returns true if it was applied.
 */
function resolvePending (model, actual, start, problems) {
  const bad = what => { problems.push(`in-flight op ${start.n} (${start.kind}) ${show(start)}: ${what}`); return false }
  const newUserWith = marker => [...actual.users.values()].filter(u => u.m === marker && !model.users.has(u.id))
  switch (start.kind) {
    case 'insertUser': {
      const found = newUserWith(start.rec.m)
      if (found.length === 0) return false
      if (found.length > 1 || !same(found[0], { id: found[0].id, ...start.rec })) return bad(`found ${show(found)}`)
      model.users.set(found[0].id, found[0])
      return true
    }
    case 'insertChat': {
      const found = [...actual.chats.values()].filter(c => c.m === start.rec.m && !model.chats.has(c.id))
      if (found.length === 0) return false
      if (found.length > 1 || !same(found[0], { id: found[0].id, ...start.rec })) return bad(`found ${show(found)}`)
      model.chats.set(found[0].id, found[0])
      return true
    }
    case 'updateUser':
    case 'updateUserFn':
    case 'caughtTx': {
      const id = start.id ?? start.u
      const old = model.users.get(id)
      const now = actual.users.get(id)
      if (old === undefined) return bad('the model has no such user')
      if (same(now, old)) return false
      if (!same(now, updated(old, start))) return bad(`user is ${show(now)}, neither before ${show(old)} nor after`)
      model.users.set(id, now)
      return true
    }
    case 'delUser': {
      const now = actual.users.get(start.id)
      if (now === undefined) {
        dropUser(model, start.id)
        return true
      }
      if (!same(now, model.users.get(start.id))) return bad(`user is ${show(now)}`)
      return false
    }
    case 'delChat':
      if (actual.chats.has(start.id)) return false
      dropChat(model, start.id)
      return true
    case 'addEdge':
    case 'removeEdge': {
      const key = `${start.c},${start.u}`
      const was = model.edges.has(key)
      if (actual.edges.has(key)) model.edges.add(key)
      else model.edges.delete(key)
      return was !== actual.edges.has(key)
    }
    case 'append': {
      const before = model.messages.get(start.c) || new Map()
      const now = actual.messages.get(start.c) || new Map()
      if (now.size === before.size) return false
      const seq = lastSeq(model, start.c) + 1
      if (now.size !== before.size + 1 || !same(now.get(seq), start.value)) return bad(`messages of chat ${start.c} are ${show([...now])}`)
      addMessage(model, start.c, seq, start.value)
      return true
    }
    case 'counterAdd': {
      const old = model.counters.get(start.k) || 0
      const now = actual.counters.get(start.k) || 0
      if (now === old) return false
      if (now !== old + start.delta) return bad(`counter is ${now}, neither ${old} nor ${old + start.delta}`)
      model.counters.set(start.k, now)
      return true
    }
    case 'onboard': {
      const found = newUserWith(start.rec.m)
      const joins = model.counters.get('joins') || 0
      const before = model.messages.get(start.c) || new Map()
      const now = actual.messages.get(start.c) || new Map()
      if (found.length === 0) {
        if (now.size !== before.size || (actual.counters.get('joins') || 0) !== joins) return bad('partly applied: messages or counter changed without the user')
        return false
      }
      const [user] = found
      const seq = lastSeq(model, start.c) + 1
      const message = { text: 'joined', user: user.id, m: start.rec.m }
      if (found.length > 1 || !same(user, { id: user.id, ...start.rec })) return bad(`found ${show(found)}`)
      if (!actual.edges.has(`${start.c},${user.id}`)) return bad('partly applied: user without edge')
      if (now.size !== before.size + 1 || !same(now.get(seq), message)) return bad('partly applied: user without message')
      if ((actual.counters.get('joins') || 0) !== joins + 1) return bad('partly applied: user without counter')
      model.users.set(user.id, user)
      model.edges.add(`${start.c},${user.id}`)
      addMessage(model, start.c, seq, message)
      model.counters.set('joins', joins + 1)
      return true
    }
    case 'swap': {
      const r1 = model.users.get(start.u1)
      const r2 = model.users.get(start.u2)
      const n1 = actual.users.get(start.u1)
      const n2 = actual.users.get(start.u2)
      if (r1 === undefined || r2 === undefined) return bad('the model lacks a user')
      if (same(n1, r1) && same(n2, r2)) return false
      if (!same(n1, { ...r1, username: r2.username }) || !same(n2, { ...r2, username: r1.username })) return bad(`partly applied: ${show([n1, n2])}`)
      model.users.set(start.u1, n1)
      model.users.set(start.u2, n2)
      return true
    }
    case 'abortTx':
      return false // it always throws: the comparison below finds any trace of it
    default:
      return bad('unknown kind')
  }
}

/** Read every namespace raw, decoding keys with bytewise (not levelkit's codec). */
async function readRaw (db) {
  const entries = async name => {
    const sublevel = db.level.sublevel(name, { keyEncoding: 'view', valueEncoding: 'view' })
    return (await sublevel.iterator().all()).map(([key, value]) => [decode(key), value])
  }
  const records = list => new Map(list.map(([id, value]) => [id, JSON.parse(text(value))]))
  const rawUsers = await entries(layout.records('users'))
  const rawChats = await entries(layout.records('chats'))
  const userIndexes = {}
  for (const name of Object.keys(USER_INDEXES)) userIndexes[name] = await entries(layout.index('users', name))
  const chatIndexes = {}
  for (const name of Object.keys(CHAT_INDEXES)) chatIndexes[name] = await entries(layout.index('chats', name))
  const messages = new Map()
  for (const [[c, seq], value] of await entries(layout.records('messages'))) {
    if (!messages.has(c)) messages.set(c, new Map())
    messages.get(c).set(seq, JSON.parse(text(value)))
  }
  return {
    rawUsers,
    rawChats,
    userIndexes,
    chatIndexes,
    users: records(rawUsers),
    chats: records(rawChats),
    userSeq: (await entries(layout.sequence('users'))).map(([key, value]) => [key, text(value)]),
    chatSeq: (await entries(layout.sequence('chats'))).map(([key, value]) => [key, text(value)]),
    edges: new Set((await entries(layout.forward('members'))).map(([[c, u]]) => `${c},${u}`)),
    reverse: new Set((await entries(layout.reverse('members'))).map(([[u, c]]) => `${c},${u}`)),
    messages,
    messageSeqs: new Map((await entries(layout.sequence('messages'))).map(([c, value]) => [c, Number(text(value))])),
    counters: new Map((await entries(layout.counter('stats'))).map(([k, value]) => [k, Number(text(value))]))
  }
}

function compare (model, actual, problems) {
  const diffMaps = (what, want, got) => {
    for (const [key, value] of want) {
      if (!got.has(key)) problems.push(`${what} ${key}: acknowledged ${show(value)} but missing`)
      else if (!same(got.get(key), value)) problems.push(`${what} ${key}: expected ${show(value)}, found ${show(got.get(key))}`)
    }
    for (const [key, value] of got) if (!want.has(key)) problems.push(`${what} ${key}: found ${show(value)}, which was never written or was deleted`)
  }
  diffMaps('user', model.users, actual.users)
  diffMaps('chat', model.chats, actual.chats)
  const sortedEdges = set => [...set].sort()
  if (!same(sortedEdges(actual.edges), sortedEdges(model.edges))) {
    problems.push(`edges: expected ${show(sortedEdges(model.edges))}, found ${show(sortedEdges(actual.edges))}`)
  }
  if (!same(sortedEdges(actual.reverse), sortedEdges(actual.edges))) problems.push('reverse edges are not the mirror of forward edges')
  const flat = messages => new Map([...messages].flatMap(([c, items]) => [...items].map(([seq, value]) => [`${c}/${seq}`, value])))
  diffMaps('message', flat(model.messages), flat(actual.messages))
  for (const [c, last] of actual.messageSeqs) {
    if (!model.chats.has(c)) problems.push(`message sequence of deleted chat ${c}`)
    else if (last < lastSeq(model, c)) problems.push(`message sequence of chat ${c} is ${last}, behind ${lastSeq(model, c)}`)
  }
  for (const [c, items] of model.messages) {
    if (items.size > 0 && actual.messageSeqs.get(c) !== lastSeq(model, c)) problems.push(`message sequence of chat ${c} is ${actual.messageSeqs.get(c)}, expected ${lastSeq(model, c)}`)
  }
  const counters = new Map([...model.counters].filter(([, v]) => v !== 0))
  diffMaps('counter', counters, actual.counters)
  for (const [what, seq, ids] of [['users', actual.userSeq, actual.users], ['chats', actual.chatSeq, actual.chats]]) {
    const max = Math.max(0, ...ids.keys())
    const last = seq.length === 1 && seq[0][0] === 'last' ? Number(seq[0][1]) : NaN
    if (ids.size > 0 && !(last >= max)) problems.push(`${what} sequence ${show(seq)} is behind id ${max}`)
  }
}

/** Raw index entries must be exactly those the records imply. */
function auditIndexes (rawRecords, rawIndexes, specs, collection) {
  const problems = []
  for (const [name, spec] of Object.entries(specs)) {
    const expected = []
    for (const [id, value] of rawRecords) {
      const record = JSON.parse(text(value))
      const computed = spec.key(record)
      if (computed === undefined) continue
      for (const v of spec.multi ? new Set(computed) : [computed]) expected.push(show(spec.unique ? [[v], id] : [[v, id], '']))
    }
    const actual = rawIndexes[name].map(([key, value]) => show(spec.unique ? [key, decode(value)] : [key, text(value)]))
    expected.sort()
    actual.sort()
    if (!same(actual, expected)) {
      const extra = actual.filter(e => !expected.includes(e))
      const missing = expected.filter(e => !actual.includes(e))
      problems.push(`index ${collection}.${name}: stale ${show(extra)}, missing ${show(missing)}`)
    }
  }
  return problems
}
