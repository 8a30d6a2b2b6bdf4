/* global IDBObjectStore, IDBCursor, indexedDB */
// A relation's forward lists kept in IndexedDB's lists store only (the
// default for a new relation, open({ relationIndexes: 'entries' }) to move
// a stored one there: its stored layout says native: ['from', 'to'],
// lib/idb-direct.js's #entriesOnly): a chat costs two puts, not three; every
// edge reads back from both sides, through the write path and outside it;
// check() is clean; relationIndexes: 'lists' and 'entries' move a stored
// relation between the two layouts (lib/idb-entries-move.js); browser-level's
// interface reads large ranges a chunk at a time.
// test/browser-idb-entries-test.js bundles this file, opens it in Chromium
// and calls window.levelkitTests.run().

import { test, run } from './harness.js'
import { open } from '../../browser.js'
import { openChats as openMembers, people, edges, memberRows, loadChats } from './chat-members.js'
import { countRequests } from './count-requests.js'
import { decode, encode } from '../../lib/tuple.js'
import { ChatStore } from '../../chat.js'

const run_ = Math.random().toString(36).slice(2)
let opened = 0
const fresh = () => `levelkit-idb-entries-${run_}-${++opened}`

/** @param {Promise<unknown>} promise */
const settled = promise => promise.then(value => ({ value }), err => ({ code: err?.code ?? err?.name }))

/** Chats whose members are kept as `relationIndexes` says (by default: in the entries). @param {string} location @param {any} [relationIndexes] */
const openChats = (location, relationIndexes) => openMembers(location, relationIndexes === undefined ? {} : { relationIndexes })

/** The members relation's stored layout record. @param {any} s */
async function storedLayout (s) {
  const layout = (await s.db.level.sublevel(':levelkit.meta').iterator().all()).map((/** @type {any} */ [, value]) => String(value)).find((/** @type {string} */ value) => value.includes('"native"'))
  const { native, state } = JSON.parse(layout ?? '{}')
  return { native, state }
}

/** The members relation's model. @param {any} s */
const membersOf = s => s.db.models().find((/** @type {any} */ m) => m.kind === 'relation' && m.model.name === 'members').model

/**
 * The members' forward lists as browser-level's store holds them (past the
 * routing of lists kept in their entries), and as the entries do, decoded.
 * @param {any} s
 */
async function bothStores (s) {
  const idb = s.db.writer.idb
  const forward = membersOf(s).forward.namespace
  const stored = (await idb.entries(idb.storedSide(forward), {}, {}, false)).map((/** @type {any} */ [key, value]) => [decode(key), decode(value)])
  const entries = (await idb.listEntries(forward, {}, {}, false)).map((/** @type {any} */ [key, value]) => [decode(key), decode(value)])
  return { stored, entries }
}

/** `n` chats' members among users 1..60, 2 to 6 each. @param {number} n */
const manyRows = n => Array.from({ length: n }, (_, c) => [1 + c % 60, 1 + (c * 7 + 3) % 60, 1 + (c * 13 + 5) % 60].filter((u, i, all) => all.indexOf(u) === i).sort((a, b) => a - b))

test('idb-entries: by default, the stored layout says native: [\'from\', \'to\']; a bulk load of chats makes two puts per chat; every edge both ways; check() clean', async (/** @type {any} */ t) => {
  const location = fresh()
  const s = await openChats(location)
  await s.users.insertMany(people(60))
  // The schema's first write of chats and members done before counting.
  await s.members.addMany(await s.chats.insert({ title: 'warm' }), [1])
  t.same((await storedLayout(s)).native, ['from', 'to'], 'the stored layout (the default)')
  const rows = memberRows()
  const { made, answer } = await countRequests(() => loadChats(s, rows))
  // The chat's record and its mirror entry (the list): a few more for the batch (meta, slot claims).
  t.ok(made.put + made.add <= 2 * rows.length + 4, `two puts per chat (${JSON.stringify(made)})`)
  const expected = rows.flatMap((members, c) => members.map(u => `${answer[c]}>${u}`)).sort()
  const found = await edges(s, answer, 60)
  t.same(found.forward, expected, 'every chat lists its members')
  t.same(found.reverse, expected, 'every member lists its chats (the index)')
  t.same((await s.db.check()).problems, [], 'check() is clean')
  await s.db.close()
})

test('idb-entries: add, addMany, remove read back from both sides, in the write path and out, and after reopening', async (/** @type {any} */ t) => {
  const location = fresh()
  let s = await openChats(location)
  await s.users.insertMany(people(8))
  const a = await s.chats.insert({ title: 'a' })
  const b = await s.chats.insert({ title: 'b' })
  await s.members.add(a, 3)
  await s.members.addMany(a, [5, 1, 7])
  await s.members.addMany(b, [3, 4])
  await s.members.remove(a, 5)
  t.same(await s.members.to(a).all(), [1, 3, 7], 'to(): the forward list')
  t.same(await s.members.from(3).all(), [a, b], 'from(): the index')
  t.same(await s.members.from(5).all(), [], 'a removed edge is gone from the reverse side')
  t.ok(await s.members.has(a, 7), 'has()')
  t.notOk(await s.members.has(a, 5), 'has() of a removed edge')
  t.same(await s.members.to(a, { reverse: true, limit: 2 }).all(), [7, 3], 'a reversed range with a limit')
  const inWrite = await s.db.write(async (/** @type {any} */ w) => {
    await s.members.in(w).add(b, 8)
    return await s.members.in(w).has(b, 8)
  })
  t.ok(inWrite, 'in a write: its own edge')
  t.same(await s.members.to(b).all(), [3, 4, 8], 'after it')
  // A user's deletion cascades into the chats that list it.
  await s.users.del(3)
  t.same(await s.members.to(a).all(), [1, 7], 'a deleted member leaves the list')
  t.same((await s.db.check()).problems, [], 'check() is clean')
  await s.db.close()
  s = await openChats(location)
  t.same(await s.members.to(b).all(), [4, 8], 'reopened: the forward list')
  t.same(await s.members.from(8).all(), [b], 'reopened: the reverse side')
  t.same((await s.db.check()).problems, [], 'reopened: check() is clean')
  await s.db.close()
})

/**
 * The keys put more than once in one transaction's object store while `fn`
 * runs (IDBObjectStore.put() wrapped, keys compared as IndexedDB does),
 * and how many puts were made. Restores put(), whatever `fn` does.
 * @param {() => Promise<unknown>} fn
 */
async function putsTwice (fn) {
  const original = IDBObjectStore.prototype.put
  /** @type {Array<{ transaction: IDBTransaction, store: string, key: any }>} */
  const made = []
  let twice = 0
  IDBObjectStore.prototype.put = function (/** @type {any} */ value, /** @type {any} */ key) {
    if (key !== undefined && made.some(p => p.transaction === this.transaction && p.store === this.name && indexedDB.cmp(p.key, key) === 0)) twice++
    made.push({ transaction: this.transaction, store: this.name, key })
    return original.call(this, value, key)
  }
  try {
    await fn()
  } finally {
    IDBObjectStore.prototype.put = original
  }
  return { puts: made.length, twice }
}

// With the lists in the entries only (the default) or in browser-level's store too ('lists').
for (const layout of [undefined, 'lists']) {
  test(`idb-entries: after a reopen (nothing known of the chat), add() and remove() put the chat's entry once, carrying its record; both sides and check() right (${layout ?? 'entries'})`, async (/** @type {any} */ t) => {
    const location = fresh()
    let s = await openChats(location, layout)
    await s.users.insertMany(people(6))
    const a = await s.chats.insert({ title: 'a' })
    await s.members.addMany(a, [1, 2])
    await s.db.close()
    s = await openChats(location, layout)
    const added = await putsTwice(() => s.members.add(a, 4))
    t.is(added.twice, 0, `add(): no key put twice in a transaction (${JSON.stringify(added)})`)
    await s.db.close()
    s = await openChats(location, layout)
    const removed = await putsTwice(() => s.members.remove(a, 1))
    t.is(removed.twice, 0, `remove(): likewise (${JSON.stringify(removed)})`)
    t.same(await s.members.to(a).all(), [2, 4], 'the forward list')
    t.same(await s.members.from(4).all(), [a], 'the index')
    t.same(await s.members.from(1).all(), [], 'a removed edge is gone from the index')
    t.same((await s.members.from(2).records()).map((/** @type {any} */ c) => c.title), ['a'], 'the entry carries the chat\'s record')
    t.same((await s.db.check()).problems, [], 'check() is clean (entries carry the stored records)')
    await s.db.close()
  })
}

test('idb-entries: relationIndexes: \'lists\' and \'entries\' move a stored relation between the two layouts (300 lists, batches of 256); the default and false keep either', async (/** @type {any} */ t) => {
  const location = fresh()
  let s = await openChats(location, 'lists')
  await s.users.insertMany(people(60))
  const rows = manyRows(300)
  const ids = await loadChats(s, rows)
  const expected = rows.flatMap((members, c) => members.map(u => `${ids[c]}>${u}`)).sort()
  const lists = rows.map((members, c) => [ids[c], members])
  t.same(await storedLayout(s), { native: ['from'], state: 'ready' }, '\'lists\': a new relation stores native: [\'from\']')
  t.same(await bothStores(s), { stored: lists, entries: lists }, '\'lists\': every list in browser-level\'s store and in its entry')
  await s.db.close()
  s = await openChats(location)
  await s.members.add(ids[0], 59)
  t.same((await storedLayout(s)).native, ['from'], 'the default keeps the stored layout')
  await s.members.remove(ids[0], 59)
  await s.db.close()
  s = await openChats(location, 'entries')
  t.same(await edges(s, ids, 60), { forward: expected, reverse: expected }, '\'entries\': every edge both ways (its first use moves it)')
  t.same(await storedLayout(s), { native: ['from', 'to'], state: 'ready' }, '\'entries\': the stored layout says native: [\'from\', \'to\'], ready')
  t.same(await bothStores(s), { stored: [], entries: lists }, '\'entries\': no list left in browser-level\'s store, every one in its entry')
  t.same((await s.db.check()).problems, [], '\'entries\': check() is clean')
  // The first write after open stores what the schema keeps of it: not counted.
  await s.members.add(ids[2], 56)
  // Which object store each put goes to.
  const proto = /** @type {any} */ (IDBObjectStore.prototype)
  const put = proto.put
  /** @type {string[]} */
  const stores = []
  proto.put = function (/** @type {any[]} */ ...args) { stores.push(this.name.slice(location.length)); return put.apply(this, args) }
  try {
    await s.members.addMany(ids[1], [58, 57])
  } finally {
    proto.put = put
  }
  t.ok(stores.length > 0 && stores.every(store => store === '/levelkit-lists'), `'entries': a list written goes to the lists store only (${stores.join(', ')})`)
  await s.members.remove(ids[1], 58)
  await s.members.remove(ids[1], 57)
  await s.members.remove(ids[2], 56)
  await s.db.close()
  s = await openChats(location, false)
  t.same(await s.members.to(ids[0]).all(), rows[0], 'entries stored, relationIndexes: false keeps them: reads')
  t.same((await storedLayout(s)).native, ['from', 'to'], 'and the stored layout')
  await s.db.close()
  s = await openChats(location)
  t.same((await storedLayout(s)).native, ['from', 'to'], 'the default keeps the stored entries')
  t.same(await s.members.to(ids[0]).all(), rows[0], 'and reads them')
  await s.db.close()
  s = await openChats(location, 'lists')
  t.same(await edges(s, ids, 60), { forward: expected, reverse: expected }, '\'lists\' again: every edge both ways (moved back)')
  t.same(await storedLayout(s), { native: ['from'], state: 'ready' }, '\'lists\' again: the stored layout says native: [\'from\'], ready')
  t.same(await bothStores(s), { stored: lists, entries: lists }, '\'lists\' again: every list in browser-level\'s store and in its entry')
  t.same((await s.db.check()).problems, [], '\'lists\' again: check() is clean')
  await s.db.close()
})

test('idb-entries: \'entries\' on a relation that stores reverse lists: moved into the index with its lists in browser-level\'s store first, into the entries at the next open with \'entries\'', async (/** @type {any} */ t) => {
  const location = fresh()
  let s = await openChats(location, false)
  await s.users.insertMany(people(60))
  const rows = manyRows(40)
  const ids = await loadChats(s, rows)
  const expected = rows.flatMap((members, c) => members.map(u => `${ids[c]}>${u}`)).sort()
  const lists = rows.map((members, c) => [ids[c], members])
  t.same((await storedLayout(s)).native, [], 'relationIndexes: false: reverse lists, not the index')
  await s.db.close()
  s = await openChats(location, 'entries')
  t.same(await edges(s, ids, 60), { forward: expected, reverse: expected }, 'first \'entries\' open: every edge both ways')
  t.same(await storedLayout(s), { native: ['from'], state: 'ready' }, 'first \'entries\' open: into the index, the lists in browser-level\'s store')
  t.same(await bothStores(s), { stored: lists, entries: lists }, 'first \'entries\' open: every list in both stores')
  await s.db.close()
  s = await openChats(location, 'entries')
  t.same(await edges(s, ids, 60), { forward: expected, reverse: expected }, 'second \'entries\' open: every edge both ways')
  t.same(await storedLayout(s), { native: ['from', 'to'], state: 'ready' }, 'second \'entries\' open: the entries only')
  t.same(await bothStores(s), { stored: [], entries: lists }, 'second \'entries\' open: no list left in browser-level\'s store')
  t.same((await s.db.check()).problems, [], 'check() is clean')
  await s.db.close()
})

test('idb-entries: two tabs open a new database at once, one with relationIndexes: \'lists\': the one that did not store the layout first is refused', async (/** @type {any} */ t) => {
  for (const first of ['entries', 'plain']) {
    const location = fresh()
    const a = await openChats(location)
    const b = await openChats(location, 'lists')
    const [winner, loser] = first === 'entries' ? [a, b] : [b, a]
    await winner.users.insertMany(people(3))
    await winner.members.add(await winner.chats.insert({ title: 'w' }), 1)
    const refused = await settled(loser.members.add(1, 2))
    t.is(refused.code, 'LEVELKIT_SCHEMA_CHANGED', `${first} first: the other tab's write is refused`)
    t.same(await winner.members.to(1).all(), [1], `${first} first: its list is as it wrote it`)
    t.same((await winner.db.check()).problems, [], `${first} first: check() is clean`)
    await a.db.close()
    await b.db.close()
  }
})

test('idb-entries: browser-level\'s interface reads the lists from their entries (point reads, ranges either way, the whole database in order); a write through it is refused', async (/** @type {any} */ t) => {
  const s = await openChats(fresh())
  await s.users.insertMany(people(6))
  const chats = []
  for (let c = 0; c < 4; c++) chats.push(await s.chats.insert({ title: `c${c}` }))
  for (let c = 0; c < 4; c++) await s.members.addMany(chats[c], [c + 1, c + 2, c + 3])
  const lists = s.db.level.sublevel('members.list.to', { keyEncoding: 'view', valueEncoding: 'view' })
  const all = await lists.iterator().all()
  t.same(all.map((/** @type {any} */ [key, value]) => [decode(key), decode(value)]), chats.map((chat, c) => [chat, [c + 1, c + 2, c + 3]]), 'an iterator over the namespace: every list, in key order')
  t.same((await lists.keys({ reverse: true, limit: 2 }).all()).map((/** @type {any} */ key) => decode(key)), [chats[3], chats[2]], 'reversed, with a limit')
  t.same((await lists.keys({ gt: encode(chats[0]), lte: encode(chats[2]) }).all()).map((/** @type {any} */ key) => decode(key)), [chats[1], chats[2]], 'a range')
  t.same(decode(await lists.get(encode(chats[1]))), [2, 3, 4], 'get()')
  t.same((await lists.getMany([encode(chats[2]), encode(99)])).map((/** @type {any} */ value) => value === undefined ? undefined : decode(value)), [[3, 4, 5], undefined], 'getMany()')
  const keys = (await s.db.level.keys({ keyEncoding: 'utf8' }).all())
  const sorted = [...keys].sort()
  t.same(keys, sorted, 'the whole database: in order')
  t.is(keys.filter((/** @type {string} */ key) => key.startsWith('!members.list.to!')).length, 4, 'the whole database: the lists among its keys')
  t.is((await s.db.level.keys({ keyEncoding: 'utf8', limit: 3 }).all()).length, 3, 'the whole database, with a limit')
  t.is((await settled(lists.put(encode(chats[0]), encode([1])))).code, 'LEVELKIT_INVALID', 'a put through it is refused')
  t.same(await s.members.to(chats[0]).all(), [1, 2, 3], 'nothing written')
  await s.db.close()
})

test('idb-entries: a ChatStore with native users: createChat, members both ways, getChats(), removeChatMember, deleteChat, check() clean', async (/** @type {any} */ t) => {
  const db = await open({ location: fresh(), native: ChatStore.native })
  const store = await ChatStore.open(db, { passwordCost: { scryptN: 1024, pbkdf2Iterations: 1 } })
  const users = []
  for (let i = 0; i < 5; i++) users.push(await store.createUser({ username: `user${i}`, password: 'secret-password' }))
  const chat = { id: await store.createChat({ name: 'one', adminId: users[0], userIds: users.slice(1, 4) }) }
  const other = { id: await store.createChat({ name: 'two', adminId: users[1], userIds: [users[4]] }) }
  t.ok(await store.checkChatMember(chat.id, users[3]), 'a member')
  t.same((await store.getChats(users[1])).map((/** @type {any} */ c) => c.id).sort(), [chat.id, other.id].sort(), 'a user\'s chats (the index\'s entries)')
  await store.removeChatMember(chat.id, users[3])
  t.notOk(await store.checkChatMember(chat.id, users[3]), 'removed')
  await store.deleteChat(other.id)
  t.same((await store.getChats(users[1])).map((/** @type {any} */ c) => c.id), [chat.id], 'a deleted chat is gone from its members\' chats')
  t.same((await db.check()).problems, [], 'check() is clean')
  await db.close()
})

test('idb-entries: browser-level\'s interface reads a range larger than a chunk of entries (300 lists): both ways, with limits, bounds and seeks', async (/** @type {any} */ t) => {
  const s = await openChats(fresh(), 'entries')
  await s.users.insertMany(people(60))
  const rows = manyRows(300)
  const ids = await loadChats(s, rows)
  const lists = s.db.level.sublevel('members.list.to', { keyEncoding: 'view', valueEncoding: 'view' })
  const all = rows.map((members, c) => [ids[c], members])
  const read = async (/** @type {any} */ options) => (await lists.iterator(options).all()).map((/** @type {any} */ [key, value]) => [decode(key), decode(value)])
  // What the first step of an iterator over all 300 lists reads of the
  // lists store: entries fetched by getAll()/getAllKeys() (their count) and
  // cursor steps (reversed).
  for (const reverse of [false, true]) {
    const store = /** @type {any} */ (IDBObjectStore.prototype)
    const cursor = /** @type {any} */ (IDBCursor.prototype)
    const originals = { getAll: store.getAll, getAllKeys: store.getAllKeys, continue: cursor.continue }
    let fetched = 0
    for (const name of /** @type {const} */ (['getAll', 'getAllKeys'])) {
      store[name] = function (/** @type {any} */ range, /** @type {any} */ count) {
        if (this.name.endsWith('/levelkit-lists')) fetched = Math.max(fetched, count ?? Infinity)
        return originals[name].call(this, range, count)
      }
    }
    cursor.continue = function (/** @type {any[]} */ ...args) { fetched++; return originals.continue.apply(this, args) }
    const it = lists.iterator({ reverse })
    try {
      await it.next()
    } finally {
      store.getAll = originals.getAll
      store.getAllKeys = originals.getAllKeys
      cursor.continue = originals.continue
    }
    await it.close()
    t.ok(fetched <= 128, `${reverse ? 'reverse' : 'forward'}: the first step reads one chunk of the 300 lists, not all (${fetched} entries at most in a request)`)
  }
  t.same(await read({}), all, 'forward: every list, in order')
  t.same(await read({ reverse: true }), [...all].reverse(), 'reverse: every list, in order')
  t.same(await read({ limit: 200 }), all.slice(0, 200), 'forward, a limit past a chunk')
  t.same(await read({ reverse: true, limit: 150 }), [...all].reverse().slice(0, 150), 'reverse, a limit past a chunk')
  t.same(await read({ gt: encode(ids[10]), lte: encode(ids[270]) }), all.slice(11, 271), 'bounds across chunks')
  t.same(await read({ gte: encode(ids[10]), lt: encode(ids[270]), reverse: true }), all.slice(10, 270).reverse(), 'bounds across chunks, reversed')
  const whole = await s.db.level.keys({ keyEncoding: 'utf8' }).all()
  t.same(whole, [...whole].sort(), 'the whole database: in order')
  t.is(whole.filter((/** @type {string} */ key) => key.startsWith('!members.list.to!')).length, 300, 'the whole database: every list among its keys')
  for (const reverse of [false, true]) {
    const it = lists.iterator({ reverse })
    const seen = []
    for (let i = 0; i < 3; i++) seen.push(decode((await it.next())[0]))
    it.seek(encode(ids[200]))
    seen.push(decode((await it.next())[0]))
    it.seek(encode(ids[5]))
    const after = []
    for (let i = 0; i < 140; i++) {
      const entry = await it.next()
      if (entry === undefined) break
      after.push(decode(entry[0]))
    }
    await it.close()
    const order = reverse ? [...ids].reverse() : ids
    t.same(seen, [...order.slice(0, 3), ids[200]], `${reverse ? 'reverse' : 'forward'}: a seek past a chunk`)
    t.same(after, reverse ? ids.slice(0, 6).reverse() : ids.slice(5, 145), `${reverse ? 'reverse' : 'forward'}: a seek back, then on past a chunk`)
  }
  await s.db.close()
})

// @ts-ignore
window.levelkitTests = { run }
