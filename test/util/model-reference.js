// The reference model of the model property tests: a plain in-memory model
// of the models test/util/model-run.js declares (Maps and Sets written from
// the documented semantics), which answers every command as levelkit must.
// Shared by Node and the browser page.

import { encode } from '../../lib/tuple.js'
import { compareBytes } from '../../lib/bytes.js'

export const INVALID = 'LEVELKIT_INVALID'
export const UNIQUE = 'LEVELKIT_UNIQUE'
export const EXISTS = 'LEVELKIT_EXISTS'
export const NOT_FOUND = 'LEVELKIT_NOT_FOUND'
export const RESTRICT = 'LEVELKIT_RESTRICT'
export const ABORT = 'TEST_ABORT'

export const ok = value => ({ ok: true, value })
export const fail = code => ({ ok: false, code })
const isId = x => Number.isSafeInteger(x) && x > 0
const clone = value => value === undefined ? undefined : JSON.parse(JSON.stringify(value))
export const edge = (c, u) => `${c},${u}`
const tupleOrder = (a, b) => compareBytes(encode([a]), encode([b]))

const STATE = ['users', 'chats', 'edges', 'messages', 'lastSeqs']

export class Reference {
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
    for (const key of STATE) copy[key] = structuredClone(this[key])
    return copy
  }

  adopt (other) {
    for (const key of STATE) this[key] = other[key]
  }

  /** Plain data (Maps and Sets), which structured cloning carries to another tab. */
  state () {
    return Object.fromEntries([['policy', this.policy], ...STATE.map(key => [key, this[key]])])
  }

  /** A reference with the state `state()` gave. */
  static from (state) {
    const ref = new Reference(state.policy)
    ref.adopt(structuredClone(state))
    return ref
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
