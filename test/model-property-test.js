// Model-based property test: random sequences of operations are applied both
// to levelkit and to a plain in-memory reference model (Maps and Sets written
// from the documented semantics). After every command the results (or error
// codes) must agree; at the end of every run the whole state is compared
// through every read path, and db.check() must find nothing wrong.
//
// A failure prints the shrunk counterexample, the mismatch, and a command
// line that replays it:
//   LEVELKIT_MODEL_ONLY=<memory|leveldb> LEVELKIT_MODEL_SEED=<seed> LEVELKIT_MODEL_PATH=<path> npx tape test/model-property-test.js
// LEVELKIT_MODEL_RUNS=<n> sets the number of runs (a quarter of it on classic-level).

import test from 'tape'
import fc from 'fast-check'
import assert from 'node:assert/strict'
import os from 'node:os'
import path from 'node:path'
import fs from 'node:fs/promises'
import { open } from '../index.js'
import { encode } from '../lib/tuple.js'
import { compareBytes } from '../lib/bytes.js'

const env = process.env
const SEED = env.LEVELKIT_MODEL_SEED === undefined ? (Date.now() ^ (Math.random() * 0x100000000)) | 0 : Number(env.LEVELKIT_MODEL_SEED)
const PATH = env.LEVELKIT_MODEL_PATH
const ONLY = env.LEVELKIT_MODEL_ONLY // 'memory' or 'leveldb'
const RUNS = env.LEVELKIT_MODEL_RUNS === undefined ? null : Number(env.LEVELKIT_MODEL_RUNS)
const MEMORY_RUNS = RUNS ?? 100
const LEVELDB_RUNS = RUNS === null ? 25 : Math.max(1, Math.ceil(RUNS / 4))
const MAX_COMMANDS = 40

const INVALID = 'LEVELKIT_INVALID'
const UNIQUE = 'LEVELKIT_UNIQUE'
const EXISTS = 'LEVELKIT_EXISTS'
const NOT_FOUND = 'LEVELKIT_NOT_FOUND'
const RESTRICT = 'LEVELKIT_RESTRICT'
const ABORT = 'TEST_ABORT'

// ---------------------------------------------------------------------------
// Small value domains, so that collisions happen all the time. '😀' and
// '\uffff' sort one way in JS (UTF-16 units) and the other way as UTF-8 keys.

const USERNAMES = ['ann', 'bob', 'Bob', 'bo', '😀', '\uffff']
const CITIES = ['Oslo', 'Oslo😀', 'Oslo\uffff']
const TAGS = ['red', 'green', 'blue', '😀']
const TITLES = ['general', 'random', '😀']
const MAX_ID = 8
const MAX_SEQ = 6

const age = fc.integer({ min: 0, max: 5 })
const city = fc.constantFrom(...CITIES)
const tag = fc.constantFrom(...TAGS)
const username = fc.constantFrom(...USERNAMES)
const tags = fc.array(tag, { maxLength: 3 }) // duplicates on purpose
// Ids that mostly exist (setup inserts a few records first), some that may
// not, and rarely 0, which sequence collections reject (LEVELKIT_INVALID).
const id = fc.oneof(
  { arbitrary: fc.integer({ min: 1, max: 3 }), weight: 8 },
  { arbitrary: fc.integer({ min: 1, max: MAX_ID }), weight: 3 },
  { arbitrary: fc.constant(0), weight: 1 }
)
// Chats are named by relation and message commands: fewer of them, so that
// edges and messages pile up on the same ones.
const chatId = fc.oneof(
  { arbitrary: fc.integer({ min: 1, max: 2 }), weight: 8 },
  { arbitrary: fc.integer({ min: 1, max: MAX_ID }), weight: 2 },
  { arbitrary: fc.constant(0), weight: 1 }
)
const validId = fc.integer({ min: 1, max: MAX_ID })
const seq = fc.oneof(fc.integer({ min: 1, max: 2 }), fc.integer({ min: 1, max: MAX_SEQ }))
const message = fc.oneof(
  fc.string({ maxLength: 3 }),
  fc.integer({ min: -3, max: 3 }),
  fc.constant(null),
  fc.record({ text: fc.constantFrom('hi', '😀', '\uffff') })
)

const user = fc.record({ username, age, city, tags }, { requiredKeys: ['age', 'city'] })
const chat = fc.record({ title: fc.constantFrom(...TITLES) })
// A patch property set to undefined removes it. Without age or city the byAge
// key [age, city] cannot be encoded, so such an update is LEVELKIT_INVALID.
const removable = (arb, freq) => fc.option(arb, { nil: undefined, freq })
const patch = fc.record({
  username: removable(username, 4),
  age: removable(age, 12),
  city: removable(city, 12),
  tags: removable(tags, 4)
}, { requiredKeys: [] })

const cmd = (type, fields = {}) => fc.record({ type: fc.constant(type), ...fields })

const writeCommand = fc.oneof(
  { arbitrary: cmd('insertUser', { rec: user }), weight: 6 },
  { arbitrary: cmd('putUser', { id, rec: user }), weight: 2 },
  { arbitrary: cmd('updateUser', { id, patch }), weight: 4 },
  // update(id, old => new): the returned record replaces the old one.
  { arbitrary: cmd('replaceUser', { id, rec: user }), weight: 1 },
  { arbitrary: cmd('delUser', { id }), weight: 3 },
  { arbitrary: cmd('insertChat', { rec: chat }), weight: 3 },
  { arbitrary: cmd('putChat', { id: chatId, rec: chat }), weight: 1 },
  { arbitrary: cmd('delChat', { id: chatId }), weight: 2 },
  { arbitrary: cmd('addMember', { chat: chatId, user: id }), weight: 8 },
  { arbitrary: cmd('removeMember', { chat: chatId, user: id }), weight: 3 },
  { arbitrary: cmd('append', { chat: chatId, value: message }), weight: 5 },
  { arbitrary: cmd('delMessage', { chat: chatId, seq }), weight: 2 },
  { arbitrary: cmd('putMessage', { chat: chatId, seq, value: message }), weight: 2 }
)

const readCommand = fc.oneof(
  cmd('getUser', { id }),
  cmd('getBy', { username }),
  cmd('getChat', { id: chatId }),
  cmd('hasMember', { chat: chatId, user: id }),
  cmd('getMessage', { chat: chatId, seq }),
  cmd('lastSeq', { chat: chatId })
)

// Range options over a value domain: the pairs a caller would write.
const range = value => fc.oneof(
  fc.record({ gte: value, lt: value }, { requiredKeys: [] }),
  fc.record({ gt: value, lte: value }, { requiredKeys: [] }),
  fc.record({ eq: value })
)
const ageKey = fc.oneof(fc.tuple(age), fc.tuple(age, city))
const probeOptions = { reverse: fc.boolean(), limit: fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined }), pageSize: fc.integer({ min: 1, max: 4 }) }
const probe = fc.oneof(
  fc.record({ target: fc.constant('users'), index: fc.constant(undefined), range: range(validId), ...probeOptions }),
  fc.record({ target: fc.constant('users'), index: fc.constant('byAge'), range: range(ageKey), ...probeOptions }),
  fc.record({ target: fc.constant('users'), index: fc.constant('byAge'), range: fc.record({ prefix: fc.oneof(fc.tuple(age), fc.tuple(age, city), fc.constant([])) }), ...probeOptions }),
  fc.record({ target: fc.constant('users'), index: fc.constant('tags'), range: fc.oneof(fc.record({ eq: tag }), range(tag)), ...probeOptions }),
  fc.record({ target: fc.constant('users'), index: fc.constant('username'), range: range(username), ...probeOptions }),
  fc.record({ target: fc.constant('to'), id: fc.integer({ min: 1, max: 3 }), range: range(validId), ...probeOptions }),
  fc.record({ target: fc.constant('from'), id: fc.integer({ min: 1, max: 4 }), range: range(validId), ...probeOptions }),
  fc.record({ target: fc.constant('messages'), id: fc.integer({ min: 1, max: 3 }), range: range(seq), ...probeOptions })
)

const caught = fc.oneof({ arbitrary: fc.constant(false), weight: 2 }, { arbitrary: fc.constant(true), weight: 1 })
// Deletes are the operations that can fail after deciding writes (a cascade
// of one dependent, then a restrict of the next): inside a group, a caught
// failure must take back exactly its own writes.
const groupOp = fc.oneof(
  { arbitrary: writeCommand, weight: 6 },
  { arbitrary: fc.oneof(cmd('delChat', { id: chatId }), cmd('delUser', { id })), weight: 2 },
  { arbitrary: readCommand, weight: 2 }
)
const abort = fc.oneof({ arbitrary: fc.constant(false), weight: 5 }, { arbitrary: fc.constant(true), weight: 1 })
// db.write() groups. Sequential ones await each operation (and may read in
// between); parallel ones start every operation at once, which the scope must
// still run one after the other, in call order.
const group = fc.oneof(
  cmd('write', {
    parallel: fc.constant(false),
    abort,
    ops: fc.array(fc.record({ op: groupOp, caught }), { minLength: 1, maxLength: 4 })
  }),
  cmd('write', {
    parallel: fc.constant(true),
    abort,
    ops: fc.array(fc.record({ op: writeCommand, caught }), { minLength: 1, maxLength: 4 })
  })
)

const command = fc.oneof(
  { arbitrary: writeCommand, weight: 12 },
  { arbitrary: readCommand, weight: 3 },
  { arbitrary: group, weight: 4 },
  // Writes and write groups started without waiting: the write path runs
  // them FIFO, so each must see exactly the effects of those started before.
  { arbitrary: cmd('concurrent', { ops: fc.array(fc.oneof({ arbitrary: writeCommand, weight: 4 }, { arbitrary: group, weight: 1 }), { minLength: 2, maxLength: 5 }) }), weight: 2 },
  { arbitrary: cmd('probe', { probe }), weight: 1 },
  // A first page, some writes, then the next page: the cursor resumes right
  // after the last key it returned, in whatever the data is by then.
  { arbitrary: cmd('pages', { probe, between: fc.array(writeCommand, { maxLength: 3 }) }), weight: 1 },
  // Close and reopen (classic-level only; a no-op on memory-level).
  { arbitrary: cmd('reopen'), weight: 1 }
)

const anyPolicy = fc.record({
  members: fc.constantFrom('cascade', 'restrict', { from: 'cascade', to: 'restrict' }, { from: 'restrict', to: 'cascade' }),
  messages: fc.constantFrom('cascade', 'restrict'),
  // Declaration order is the order in which a chat's dependents are visited
  // when it is deleted.
  messagesFirst: fc.boolean()
})
// Deleting a chat cascades to its first dependent, then its second refuses:
// the cascade's writes must be taken back.
const cascadeThenRestrict = fc.constantFrom(
  { members: 'cascade', messages: 'restrict', messagesFirst: false },
  { members: { from: 'cascade', to: 'restrict' }, messages: 'restrict', messagesFirst: false },
  { members: 'restrict', messages: 'cascade', messagesFirst: true },
  { members: { from: 'restrict', to: 'cascade' }, messages: 'cascade', messagesFirst: true }
)
const policy = fc.oneof(anyPolicy, cascadeThenRestrict)

// A few inserts first (themselves checked like any command), so that most
// ids the commands name exist.
const setup = fc.tuple(
  fc.array(cmd('insertUser', { rec: user }), { minLength: 2, maxLength: 5 }),
  fc.array(cmd('insertChat', { rec: chat }), { minLength: 2, maxLength: 3 })
).map(([users, chats]) => [...users, ...chats])

const scenario = fc.record({
  policy,
  // Reads with getSync() where the backend has it (the default), or without.
  syncReads: fc.boolean(),
  setup,
  commands: fc.array(command, { maxLength: MAX_COMMANDS, size: 'max' }),
  probes: fc.array(probe, { maxLength: 8 })
})

// ---------------------------------------------------------------------------
// The reference model

const ok = value => ({ ok: true, value })
const fail = code => ({ ok: false, code })
const isId = x => Number.isSafeInteger(x) && x > 0
const clone = value => value === undefined ? undefined : JSON.parse(JSON.stringify(value))
const edge = (c, u) => `${c},${u}`
const tupleOrder = (a, b) => compareBytes(encode([a]), encode([b]))

class Reference {
  constructor (policy) {
    const members = typeof policy.members === 'string' ? { from: policy.members, to: policy.members } : policy.members
    this.policy = { members, messages: policy.messages }
    this.users = { records: new Map(), seq: 0 }
    this.chats = { records: new Map(), seq: 0 }
    this.edges = new Set() // 'chat,user'
    this.messages = new Map() // chat -> Map(seq -> value)
    this.lastSeqs = new Map() // chat -> last seq handed out
  }

  copy () {
    const copy = new Reference(this.policy)
    for (const key of ['users', 'chats', 'edges', 'messages', 'lastSeqs']) copy[key] = structuredClone(this[key])
    return copy
  }

  adopt (other) {
    for (const key of ['users', 'chats', 'edges', 'messages', 'lastSeqs']) this[key] = other[key]
  }

  apply (c) {
    switch (c.type) {
      case 'insertUser': return this.insert(this.users, c.rec)
      case 'putUser': return this.put(this.users, c.id, c.rec)
      case 'updateUser': return this.update(c.id, c.patch)
      case 'replaceUser': return this.update(c.id, c.rec, true)
      case 'delUser': return this.delUser(c.id)
      case 'getUser': return isId(c.id) ? ok(this.users.records.get(c.id)) : fail(INVALID)
      case 'getBy': return ok(this.userByName(c.username))
      case 'insertChat': return this.insert(this.chats, c.rec)
      case 'putChat': return this.put(this.chats, c.id, c.rec)
      case 'delChat': return this.delChat(c.id)
      case 'getChat': return isId(c.id) ? ok(this.chats.records.get(c.id)) : fail(INVALID)
      case 'addMember': {
        if (!isId(c.chat) || !isId(c.user)) return fail(INVALID)
        if (!this.chats.records.has(c.chat) || !this.users.records.has(c.user)) return fail(NOT_FOUND)
        if (this.edges.has(edge(c.chat, c.user))) return ok(false)
        this.edges.add(edge(c.chat, c.user))
        return ok(true)
      }
      case 'removeMember':
        if (!isId(c.chat) || !isId(c.user)) return fail(INVALID)
        return ok(this.edges.delete(edge(c.chat, c.user)))
      case 'hasMember':
        if (!isId(c.chat) || !isId(c.user)) return fail(INVALID)
        return ok(this.edges.has(edge(c.chat, c.user)))
      case 'append': {
        if (!isId(c.chat)) return fail(INVALID)
        if (!this.chats.records.has(c.chat)) return fail(NOT_FOUND)
        const next = (this.lastSeqs.get(c.chat) || 0) + 1
        if (!this.messages.has(c.chat)) this.messages.set(c.chat, new Map())
        this.messages.get(c.chat).set(next, clone(c.value))
        this.lastSeqs.set(c.chat, next)
        return ok(next)
      }
      case 'delMessage': {
        if (!isId(c.chat)) return fail(INVALID)
        const items = this.messages.get(c.chat)
        return ok(items ? items.delete(c.seq) : false)
      }
      case 'putMessage': {
        if (!isId(c.chat)) return fail(INVALID)
        const items = this.messages.get(c.chat)
        if (!items || !items.has(c.seq)) return fail(NOT_FOUND)
        items.set(c.seq, clone(c.value))
        return ok(undefined)
      }
      case 'getMessage':
        if (!isId(c.chat)) return fail(INVALID)
        return ok(this.messages.get(c.chat)?.get(c.seq))
      case 'lastSeq':
        if (!isId(c.chat)) return fail(INVALID)
        return ok(this.lastSeqs.get(c.chat) || 0)
      default:
        throw new Error(`Unknown command ${c.type}`)
    }
  }

  /** A db.write() group: all of it, or (on an uncaught error) none of it. */
  group (c) {
    const scratch = this.copy()
    const inner = []
    let outcome = null
    for (const { op, caught } of c.ops) {
      const result = scratch.apply(op)
      inner.push(result)
      if (!result.ok && !caught) {
        outcome = fail(result.code)
        break
      }
    }
    if (outcome === null && c.abort) outcome = fail(ABORT)
    if (outcome === null) {
      this.adopt(scratch)
      outcome = ok(inner.length)
    }
    return { inner, outcome }
  }

  insert (collection, rec) {
    const id = collection.seq + 1
    const record = { id, ...clone(rec) }
    if (collection.records.has(id)) return fail(EXISTS)
    if (this.usernameTaken(collection, record)) return fail(UNIQUE)
    collection.records.set(id, record)
    collection.seq = id
    return ok(id)
  }

  put (collection, id, rec) {
    if (!isId(id)) return fail(INVALID)
    const record = { id, ...clone(rec) }
    if (this.usernameTaken(collection, record)) return fail(UNIQUE)
    const created = !collection.records.has(id)
    collection.records.set(id, record)
    if (id > collection.seq) collection.seq = id
    return ok(created)
  }

  update (id, patch, replace = false) {
    if (!isId(id)) return fail(INVALID)
    const old = this.users.records.get(id)
    if (old === undefined) return fail(NOT_FOUND)
    // A patch is merged shallowly (a property set to undefined is removed);
    // what an update function returns replaces the record.
    const record = replace ? { id } : { ...old }
    for (const [key, value] of Object.entries(patch)) {
      if (value === undefined) delete record[key]
      else record[key] = clone(value)
    }
    // Every index key is computed before any unique value is checked.
    if (record.age === undefined || record.city === undefined) return fail(INVALID)
    if (this.usernameTaken(this.users, record)) return fail(UNIQUE)
    this.users.records.set(id, record)
    return ok(record)
  }

  usernameTaken (collection, record) {
    if (collection !== this.users || record.username === undefined) return false
    for (const [other, r] of collection.records) {
      if (other !== record.id && r.username === record.username) return true
    }
    return false
  }

  userByName (name) {
    for (const r of this.users.records.values()) if (r.username === name) return r
    return undefined
  }

  edgesOf (side, id) {
    return Array.from(this.edges).map(e => e.split(',').map(Number)).filter(([c, u]) => (side === 'chat' ? c : u) === id)
  }

  delUser (id) {
    if (!isId(id)) return fail(INVALID)
    if (!this.users.records.has(id)) return ok(false)
    const edges = this.edgesOf('user', id)
    if (this.policy.members.to === 'restrict' && edges.length > 0) return fail(RESTRICT)
    for (const [c, u] of edges) this.edges.delete(edge(c, u))
    this.users.records.delete(id)
    return ok(true)
  }

  delChat (id) {
    if (!isId(id)) return fail(INVALID)
    if (!this.chats.records.has(id)) return ok(false)
    const edges = this.edgesOf('chat', id)
    if (this.policy.members.from === 'restrict' && edges.length > 0) return fail(RESTRICT)
    const items = this.messages.get(id)
    if (this.policy.messages === 'restrict' && items && items.size > 0) return fail(RESTRICT)
    for (const [c, u] of edges) this.edges.delete(edge(c, u))
    this.messages.delete(id)
    this.lastSeqs.delete(id) // the per-chat sequence goes with the chat
    this.chats.records.delete(id)
    return ok(true)
  }

  /**
   * What a query returns: entries { value (what the range is over), key (the
   * stored key, for the order), item }, filtered, ordered, reversed, limited.
   */
  query (p, { limit = p.limit, reverse = p.reverse } = {}) {
    let entries = []
    let order = tupleOrder
    if (p.target === 'users') {
      for (const [id, r] of this.users.records) {
        if (p.index === undefined) entries.push({ value: id, key: encode(id), item: r })
        else if (p.index === 'username') {
          if (r.username !== undefined) entries.push({ value: r.username, key: encode([r.username]), item: r })
        } else if (p.index === 'byAge') entries.push({ value: [r.age, r.city], key: encode([[r.age, r.city], id]), item: r })
        else if (p.index === 'tags') {
          for (const t of new Set(r.tags || [])) entries.push({ value: t, key: encode([t, id]), item: r })
        } else throw new Error(`Unknown index ${p.index}`)
      }
      if (p.index === undefined) order = (a, b) => compareBytes(encode(a), encode(b))
    } else if (p.target === 'to' || p.target === 'from') {
      for (const [c, u] of this.edgesOf(p.target === 'to' ? 'chat' : 'user', p.id)) {
        const other = p.target === 'to' ? u : c
        entries.push({ value: other, key: encode([p.id, other]), item: other })
      }
    } else if (p.target === 'messages') {
      for (const [s, value] of this.messages.get(p.id) || []) entries.push({ value: s, key: encode([p.id, s]), item: value })
    } else {
      throw new Error(`Unknown target ${p.target}`)
    }
    const r = p.range || {}
    entries = entries.filter(({ value: v }) =>
      (r.gte === undefined || order(v, r.gte) >= 0) &&
      (r.gt === undefined || order(v, r.gt) > 0) &&
      (r.lte === undefined || order(v, r.lte) <= 0) &&
      (r.lt === undefined || order(v, r.lt) < 0) &&
      (r.eq === undefined || order(v, r.eq) === 0) &&
      (r.prefix === undefined || (Array.isArray(v) && r.prefix.length <= v.length && r.prefix.every((x, i) => order(v[i], x) === 0))))
    entries.sort((a, b) => compareBytes(a.key, b.key))
    if (reverse) entries.reverse()
    if (limit !== undefined) entries = entries.slice(0, limit)
    return entries
  }
}

// ---------------------------------------------------------------------------
// Running commands against levelkit

function declare (db, policy) {
  const users = db.collection('users', {
    indexes: {
      username: { unique: true, key: u => u.username },
      byAge: { key: u => [u.age, u.city] },
      tags: { key: u => u.tags, multi: true }
    }
  })
  const chats = db.collection('chats')
  const declareMembers = () => db.relation('members', { from: chats, to: users, onDelete: policy.members })
  const declareMessages = () => db.children('messages', { parent: chats, onDelete: policy.messages })
  if (policy.messagesFirst) {
    const messages = declareMessages()
    return { users, chats, members: declareMembers(), messages }
  }
  const members = declareMembers()
  return { users, chats, members, messages: declareMessages() }
}

function scoped (api, w) {
  return { users: api.users.in(w), chats: api.chats.in(w), members: api.members.in(w), messages: api.messages.in(w) }
}

/** Start one command; its promise settles with its result. */
function perform (api, c) {
  switch (c.type) {
    case 'insertUser': return api.users.insert(c.rec)
    case 'putUser': return api.users.put(c.id, c.rec)
    case 'updateUser': return api.users.update(c.id, c.patch)
    case 'replaceUser': return api.users.update(c.id, old => ({ ...c.rec, id: old.id }))
    case 'delUser': return api.users.del(c.id)
    case 'getUser': return api.users.get(c.id)
    case 'getBy': return api.users.getBy('username', c.username)
    case 'insertChat': return api.chats.insert(c.rec)
    case 'putChat': return api.chats.put(c.id, c.rec)
    case 'delChat': return api.chats.del(c.id)
    case 'getChat': return api.chats.get(c.id)
    case 'addMember': return api.members.add(c.chat, c.user)
    case 'removeMember': return api.members.remove(c.chat, c.user)
    case 'hasMember': return api.members.has(c.chat, c.user)
    case 'append': return api.messages.append(c.chat, c.value)
    case 'delMessage': return api.messages.del(c.chat, c.seq)
    case 'putMessage': return api.messages.put(c.chat, c.seq, c.value)
    case 'getMessage': return api.messages.get(c.chat, c.seq)
    case 'lastSeq': return api.messages.lastSeq(c.chat)
    default: throw new Error(`Unknown command ${c.type}`)
  }
}

/**
 * Call fn now (synchronously, so that writes queue in call order) and settle
 * with { ok, value } or { ok: false, code }; the error itself is kept
 * non-enumerable, for rethrowing and for messages.
 */
async function attempt (fn) {
  try {
    return ok(await fn())
  } catch (err) {
    return Object.defineProperty(fail(err.code), 'error', { value: err })
  }
}

class Mismatch extends Error {}

function same (actual, expected, what) {
  try {
    assert.deepStrictEqual(actual, expected)
  } catch {
    const cause = actual && actual.error ? `\n  (error: ${actual.error.stack})` : ''
    throw new Mismatch(`${what}:\n  expected ${fc.stringify(expected)}\n  actual   ${fc.stringify(actual)}${cause}`)
  }
}

/**
 * Start a command or a db.write() group (synchronously, so that it queues for
 * the write path in call order) and settle with what happened.
 */
function start (db, api, c) {
  if (c.type !== 'write') return attempt(() => perform(api, c))
  const inner = []
  const outcome = attempt(() => db.write(async w => {
    const local = scoped(api, w)
    if (c.parallel) {
      const pending = c.ops.map(({ op }) => attempt(() => perform(local, op)))
      for (let i = 0; i < pending.length; i++) {
        const result = await pending[i]
        inner.push(result)
        if (!result.ok && !c.ops[i].caught) throw result.error
      }
    } else {
      for (const { op, caught } of c.ops) {
        const result = await attempt(() => perform(local, op))
        inner.push(result)
        if (!result.ok && !caught) throw result.error
      }
    }
    if (c.abort) throw Object.assign(new Error('abort'), { code: ABORT })
    return inner.length
  }))
  return outcome.then(outcome => ({ inner, outcome }))
}

/** What the reference model says `start(db, api, c)` settles with. */
function expect (ref, c) {
  return c.type === 'write' ? ref.group(c) : ref.apply(c)
}

async function step (run, c, where) {
  const { ref } = run
  switch (c.type) {
    case 'probe': return checkProbe(run.api, ref, c.probe, where)
    case 'pages': return checkPages(run, c, where)
    case 'reopen': return run.reopen()
    case 'concurrent': {
      const actual = await Promise.all(c.ops.map(op => start(run.db, run.api, op)))
      c.ops.forEach((op, i) => same(actual[i], expect(ref, op), `${where}: concurrent op ${i} ${fc.stringify(op)}`))
      return
    }
    default:
      same(await start(run.db, run.api, c), expect(ref, c), `${where}: ${fc.stringify(c)}`)
  }
}

function realQuery (api, p, extra) {
  const options = { ...p.range, reverse: p.reverse, limit: p.limit, ...extra }
  switch (p.target) {
    case 'users': return api.users.query(p.index === undefined ? options : { index: p.index, ...options })
    case 'to': return api.members.to(p.id, options)
    case 'from': return api.members.from(p.id, options)
    case 'messages': return api.messages.range(p.id, options)
  }
}

async function checkProbe (api, ref, p, where) {
  const what = `${where} probe ${fc.stringify(p)}`
  const expected = ref.query(p)
  same(await realQuery(api, p).all(), expected.map(e => e.item), `${what}: all()`)
  same(await realQuery(api, p).count(), expected.length, `${what}: count()`)

  // Collecting every page equals the whole (unlimited) query.
  const whole = ref.query(p, { limit: Infinity }).map(e => e.item)
  const pages = []
  let cursor = null
  do {
    const page = await realQuery(api, p, { limit: p.pageSize, cursor }).page()
    pages.push(page.items)
    cursor = page.cursor
    if (pages.length > whole.length + 1) throw new Mismatch(`${what}: page() does not stop (${pages.length} pages for ${whole.length} items)`)
  } while (cursor !== null)
  same(pages.flat(), whole, `${what}: items of all pages (page size ${p.pageSize})`)
  same(pages.length, Math.max(1, Math.ceil(whole.length / p.pageSize)), `${what}: number of pages`)
}

async function checkPages (run, { probe: p, between }, where) {
  const what = `${where}: pages ${fc.stringify(p)}`
  const first = await realQuery(run.api, p, { limit: p.pageSize }).page()
  const expected = run.ref.query(p, { limit: Infinity })
  same(first.items, expected.slice(0, p.pageSize).map(e => e.item), `${what}: first page`)
  same(first.cursor !== null, expected.length > p.pageSize, `${what}: a cursor if and only if there is more`)
  for (let i = 0; i < between.length; i++) await step(run, between[i], `${what}: between pages, command ${i}`)
  if (first.cursor === null) return
  const last = expected[p.pageSize - 1].key
  const rest = run.ref.query(p, { limit: Infinity }).filter(e => compareBytes(e.key, last) * (p.reverse ? -1 : 1) > 0)
  const next = await realQuery(run.api, p, { limit: p.pageSize, cursor: first.cursor }).page()
  same(next.items, rest.slice(0, p.pageSize).map(e => e.item), `${what}: second page after ${fc.stringify(between)}`)
  same(next.cursor !== null, rest.length > p.pageSize, `${what}: a cursor on the second page if and only if there is more`)
}

/** Compare everything levelkit holds with the reference, through every read path. */
async function compareAll (db, api, ref, probes, where) {
  const byId = (a, b) => a.id - b.id
  const users = Array.from(ref.users.records.values()).sort(byId)
  const chats = Array.from(ref.chats.records.values()).sort(byId)
  same(await api.users.query().all(), users, `${where}: all users`)
  same(await api.users.count(), users.length, `${where}: users.count()`)
  same(await api.chats.query().all(), chats, `${where}: all chats`)
  const userIds = Array.from({ length: ref.users.seq + 1 }, (_, i) => i + 1)
  const chatIds = Array.from({ length: ref.chats.seq + 1 }, (_, i) => i + 1)
  // More than 16 ids: getMany() reads them with one getMany() rather than getSync() each.
  const manyIds = Array.from({ length: Math.max(20, ref.users.seq + 1) }, (_, i) => i + 1)
  same(await api.users.getMany(manyIds), manyIds.map(i => ref.users.records.get(i)), `${where}: users.getMany()`)
  for (const i of userIds) same(await api.users.get(i), ref.users.records.get(i), `${where}: users.get(${i})`)
  for (const i of chatIds) same(await api.chats.get(i), ref.chats.records.get(i), `${where}: chats.get(${i})`)
  for (const name of USERNAMES) {
    same(await api.users.getBy('username', name), ref.userByName(name), `${where}: getBy('username', ${fc.stringify(name)})`)
  }

  const everything = { range: {}, reverse: false, limit: undefined, pageSize: 3 }
  for (const index of [undefined, 'username', 'byAge', 'tags']) {
    await checkProbe(api, ref, { ...everything, target: 'users', index }, where)
    await checkProbe(api, ref, { ...everything, target: 'users', index, reverse: true, limit: 2, pageSize: 2 }, where)
  }
  for (const c of chatIds) {
    await checkProbe(api, ref, { ...everything, target: 'to', id: c }, where)
    await checkProbe(api, ref, { ...everything, target: 'messages', id: c, pageSize: 2 }, where)
    const entries = []
    for await (const entry of api.messages.range(c).entries()) entries.push(entry)
    same(entries, Array.from(ref.messages.get(c) || []).sort((a, b) => a[0] - b[0]), `${where}: messages.range(${c}).entries()`)
    same(await api.messages.lastSeq(c), ref.lastSeqs.get(c) || 0, `${where}: messages.lastSeq(${c})`)
    for (const u of userIds) same(await api.members.has(c, u), ref.edges.has(edge(c, u)), `${where}: members.has(${c}, ${u})`)
  }
  for (const u of userIds) await checkProbe(api, ref, { ...everything, target: 'from', id: u, reverse: true }, where)
  for (const p of probes) await checkProbe(api, ref, p, where)

  const report = await db.check()
  same({ ok: report.ok, problems: report.problems }, { ok: true, problems: [] }, `${where}: db.check()`)
}

async function runScenario (backend, { policy, syncReads, setup, commands, probes }) {
  const dir = backend === 'leveldb' ? await fs.mkdtemp(path.join(os.tmpdir(), 'levelkit-model-')) : null
  const options = dir ? { backend: 'leveldb', location: dir, syncReads } : { backend: 'memory', syncReads }
  const run = {
    ref: new Reference(policy),
    db: await open(options),
    api: null,
    async reopen () {
      if (!dir) return
      await run.db.close()
      run.db = await open(options)
      run.api = declare(run.db, policy)
    }
  }
  try {
    run.api = declare(run.db, policy)
    for (let i = 0; i < setup.length; i++) await step(run, setup[i], `setup command ${i}`)
    for (let i = 0; i < commands.length; i++) await step(run, commands[i], `command ${i}`)
    await compareAll(run.db, run.api, run.ref, probes, 'after all commands')
    if (dir) {
      // What was acknowledged must also be what is on disk.
      await run.reopen()
      await compareAll(run.db, run.api, run.ref, probes, 'after reopening')
    }
  } finally {
    await run.db.close()
    if (dir) await fs.rm(dir, { recursive: true, force: true })
  }
}

// ---------------------------------------------------------------------------
// The tests

async function property (t, backend, numRuns) {
  const seed = SEED + (backend === 'leveldb' ? 1 : 0)
  t.comment(`fast-check seed ${seed}, ${numRuns} runs (rerun with LEVELKIT_MODEL_SEED=${SEED})`)
  const started = Date.now()
  const details = await fc.check(fc.asyncProperty(scenario, s => runScenario(backend, s)), {
    numRuns,
    seed,
    path: PATH,
    endOnFailure: PATH !== undefined,
    includeErrorInReport: true
  })
  if (details.failed) {
    t.fail(fc.defaultReportMessage(details))
    t.comment(`replay: LEVELKIT_MODEL_ONLY=${backend} LEVELKIT_MODEL_SEED=${SEED} LEVELKIT_MODEL_PATH=${details.counterexamplePath} npx tape test/model-property-test.js`)
  } else {
    t.pass(`${details.numRuns} random runs of up to ${MAX_COMMANDS} commands agree with the reference model (${Date.now() - started} ms)`)
  }
}

test('model: levelkit on memory-level behaves like the reference model', { skip: ONLY !== undefined && ONLY !== 'memory' }, async t => {
  await property(t, 'memory', MEMORY_RUNS)
})

test('model: levelkit on classic-level behaves like the reference model (and survives reopening)', { skip: ONLY !== undefined && ONLY !== 'leveldb' }, async t => {
  await property(t, 'leveldb', LEVELDB_RUNS)
})
