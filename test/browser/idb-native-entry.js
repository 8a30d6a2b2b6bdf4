/* global indexedDB, IDBObjectStore, IDBKeyRange */
// A database levelkit opens itself on IndexedDB gets levelkit's object
// stores (lib/idb-open.js): made by a version upgrade beside browser-level's
// store, which keeps its data; a database a user brings keeps exactly what
// browser-level made; and a connection levelkit opened gives way to another
// one's upgrade (another tab on a newer layout) instead of blocking it.
// test/browser-idb-native-test.js bundles this file, opens it in Chromium
// and calls window.levelkitTests.run().

import { test, run } from './harness.js'
import { open } from '../../browser.js'
import { BrowserLevel } from 'browser-level'
import { ChatStore } from '../../chat.js'
import { listsStoreOf } from '../../lib/idb-open.js'
import { decode, encode } from '../../lib/tuple.js'
import { countRequests } from './count-requests.js'

const run_ = Math.random().toString(36).slice(2)
let opened = 0
const fresh = () => `levelkit-idb-native-${run_}-${++opened}`

/**
 * The IndexedDB database `name` as it is: version, stores, the lists
 * store's index.
 * @param {string} name
 */
async function describeIdb (name) {
  const db = await new Promise((resolve, reject) => {
    const request = indexedDB.open(name)
    request.onsuccess = () => resolve(request.result)
    request.onerror = () => reject(request.error)
  })
  const stores = Array.from(db.objectStoreNames).sort()
  const lists = listsStoreOf(name).store
  let index = null
  if (db.objectStoreNames.contains(lists)) {
    const found = db.transaction([lists], 'readonly').objectStore(lists).index('ids')
    index = { keyPath: found.keyPath, multiEntry: found.multiEntry, unique: found.unique }
  }
  const version = db.version
  db.close()
  return { version, stores, index }
}

/**
 * Open `name` at `version` (as a tab on a newer layout would): resolves
 * 'opened' once open, 'blocked' if another connection still holds it after
 * `ms`, however it ends (the request is left to finish, its connection
 * closed).
 * @param {string} name @param {number} version @param {number} ms
 * @returns {Promise<'opened' | 'blocked'>}
 */
function upgradeTo (name, version, ms) {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(name, version)
    let settled = false
    const timer = setTimeout(() => {
      settled = true
      resolve('blocked')
    }, ms)
    request.onupgradeneeded = () => request.result.createObjectStore('future')
    request.onsuccess = () => {
      request.result.close()
      if (settled) return
      clearTimeout(timer)
      resolve('opened')
    }
    request.onerror = () => {
      if (!settled) reject(request.error)
    }
  })
}

/** @param {any} db */
async function usersOf (db) {
  return db.collection('users', { indexes: { username: { unique: true, key: (/** @type {any} */ u) => u.username } } })
}

test('idb-native: a new database has browser-level\'s store and the lists store with a multiEntry index', async (/** @type {any} */ t) => {
  const name = fresh()
  const db = await open({ location: name })
  const users = await usersOf(db)
  const id = await users.insert({ username: 'ada' })
  t.is((await users.get(id))?.username, 'ada', 'a record written reads back')
  t.is((await db.check()).problems.length, 0, 'check() is clean')
  await db.close()
  t.same(await describeIdb(name), {
    version: 1,
    stores: [name, `${name}/levelkit-lists`].sort(),
    index: { keyPath: 'ids', multiEntry: true, unique: false }
  }, 'version 1: both stores, the index over ids')
  const again = await open({ location: name })
  t.is((await (await usersOf(again)).getBy('username', 'ada'))?.username, 'ada', 'reopened, the record is there')
  await again.close()
  t.is((await describeIdb(name)).version, 1, 'reopening asks for no upgrade')
})

test('idb-native: a database on today\'s layout is upgraded once, its data kept', async (/** @type {any} */ t) => {
  const name = fresh()
  // As levelkit before this change (or browser-level) made it: one store, version 1.
  const level = new BrowserLevel(name, { prefix: '' })
  await level.open()
  const before = await open({ db: level })
  const users = await usersOf(before)
  for (let i = 0; i < 20; i++) await users.insert({ username: `user${i}` })
  await before.close()
  await level.close()
  t.same(await describeIdb(name), { version: 1, stores: [name], index: null }, 'before: browser-level\'s store only')

  const db = await open({ location: name })
  const again = await usersOf(db)
  t.is((await again.query().all()).length, 20, 'every record is there')
  t.is((await again.getBy('username', 'user7'))?.username, 'user7', 'and its index')
  t.is((await db.check()).problems.length, 0, 'check() is clean')
  const id = await again.insert({ username: 'new' })
  t.is(id, 21, 'the sequence goes on')
  await db.close()
  const after = await describeIdb(name)
  t.same(after.stores, [name, `${name}/levelkit-lists`].sort(), 'after: the lists store beside it')
  t.is(after.version, 2, 'one version higher')
  const third = await open({ location: name })
  await third.close()
  t.is((await describeIdb(name)).version, 2, 'opening it again upgrades nothing')
})

test('idb-native: a database a user brings keeps browser-level\'s layout and its connection', async (/** @type {any} */ t) => {
  const name = fresh()
  const level = new BrowserLevel(name, { prefix: '' })
  await level.open()
  const db = await open({ db: level })
  const users = await usersOf(db)
  await users.insert({ username: 'ada' })
  t.is(level.db.version, 1, 'version 1')
  t.same(Array.from(level.db.objectStoreNames), [name], 'browser-level\'s store only')
  // The user's connection is the user's: levelkit does not close it for
  // another's upgrade (browser-level does not either), which then waits.
  t.is(await upgradeTo(name, 2, 500), 'blocked', 'another connection\'s upgrade waits for it')
  t.is(level.status, 'open', 'browser-level still says open')
  t.is(db.status, 'open', 'so does levelkit')
  await db.close()
  await level.close()
})

test('idb-native: another connection\'s upgrade closes a database levelkit opened instead of waiting', async (/** @type {any} */ t) => {
  const name = fresh()
  const db = await open({ location: name })
  const users = await usersOf(db)
  await users.insert({ username: 'ada' })
  t.is(await upgradeTo(name, 2, 5000), 'opened', 'the upgrade proceeds')
  t.is(db.status, 'closed', 'the database is closed')
  let error = null
  try {
    await users.insert({ username: 'late' })
  } catch (err) {
    error = err
  }
  t.is(/** @type {any} */ (error)?.code, 'LEVELKIT_NOT_OPEN', `a write after it: LEVELKIT_NOT_OPEN (${/** @type {any} */ (error)?.message})`)
  let refused = null
  try {
    await db.write(async () => {})
  } catch (err) {
    refused = err
  }
  t.ok(/newer version/.test(/** @type {any} */ (refused)?.message), `db.write() says why (${/** @type {any} */ (refused)?.message})`)
  const again = await open({ location: name })
  const reopened = await usersOf(again)
  t.is((await reopened.getBy('username', 'ada'))?.username, 'ada', 'opened again at the new version: the data is there')
  t.is((await again.check()).problems.length, 0, 'check() is clean')
  const info = await describeIdb(name)
  t.is(info.version, 2, 'at the version the other connection made')
  t.ok(info.stores.includes('future') && info.stores.includes(`${name}/levelkit-lists`), 'its store and levelkit\'s')
  await again.close()
})

test('idb-native: a database at a higher version without the lists store gets it one version higher', async (/** @type {any} */ t) => {
  const name = fresh()
  const level = new BrowserLevel(name, { prefix: '', version: 5 })
  await level.open()
  await level.put('a', 'b')
  await level.close()
  const db = await open({ location: name })
  t.is(await db.level.get('a'), 'b', 'browser-level\'s data is there')
  await db.close()
  const info = await describeIdb(name)
  t.is(info.version, 6, 'version 6')
  t.ok(info.index?.multiEntry, 'the lists store and its index')
})

test('idb-native: an explicit version option is the user\'s: browser-level\'s layout', async (/** @type {any} */ t) => {
  const name = fresh()
  const db = await open({ location: name, version: 3 })
  await (await usersOf(db)).insert({ username: 'ada' })
  await db.close()
  t.same(await describeIdb(name), { version: 3, stores: [name], index: null }, 'version 3, one store')
})

const COST = { passwordCost: { scryptN: 1024, pbkdf2Iterations: 1 } }

/**
 * A ChatStore on `db` whose members relation's forward lists (a chat's
 * members, by chat id) are mirrored in the lists store, the direct layer,
 * and that namespace.
 * @param {any} db
 */
async function mirroredChat (db) {
  const store = await ChatStore.open(db, COST)
  const members = db.models().find((/** @type {any} */ m) => m.kind === 'relation' && m.model.name === 'members').model
  // The bundle's own direct layer: the one its write path writes through.
  const idb = db.writer.idb
  return { store, idb, forward: members.forward.namespace, mirrored: idb.mirror(members.forward.namespace) }
}

/**
 * Whether the mirror is exact: its lists are the forward lists, and the
 * index answers each user's chats as the relation's reverse lists do.
 * @param {any} t @param {any} db @param {{ store: any, idb: any, forward: any }} chat @param {number[]} users @param {string} when
 */
async function assertMirror (t, db, { store, idb, forward }, users, when) {
  const lists = await forward.sublevel.iterator().all()
  const expected = lists.map((/** @type {any} */ [key, value]) => [decode(key), decode(value)])
  const actual = (await idb.mirrored(forward, false)).map((/** @type {any} */ [key, ids]) => [decode(key), ids])
  t.same(actual, expected, `${when}: the mirror holds the forward lists (${expected.length})`)
  let same = 0
  for (const user of users) {
    const listed = (await idb.listing(forward, user, false)).map((/** @type {Uint8Array} */ key) => decode(key))
    const chats = await store.members.from(user).all()
    if (JSON.stringify(listed) === JSON.stringify(chats)) same++
    else t.same(listed, chats, `${when}: user ${user}'s chats by the index`)
  }
  t.is(same, users.length, `${when}: the index lists each user's chats, in id order, as the reverse lists do`)
  t.is((await db.check()).problems.length, 0, `${when}: check() is clean`)
}

test('idb-native: a relation\'s forward lists mirrored in the lists store, in each batch\'s transaction, answer the reverse lists by the index', async (/** @type {any} */ t) => {
  const db = await open({ location: fresh() })
  const chat = await mirroredChat(db)
  t.ok(chat.mirrored, 'a database levelkit opened mirrors')
  const { store } = chat
  const users = []
  for (let i = 0; i < 24; i++) users.push(await store.createUser({ username: `user${i}`, password: 'secret-password' }))
  const chats = []
  for (let c = 0; c < 6; c++) {
    const members = users.filter((_, i) => (i + c) % 3 !== 0).slice(0, 19 - c)
    chats.push(await store.createChat({ name: `chat${c}`, adminId: users[c], userIds: members.filter(id => id !== users[c]) }))
  }
  await assertMirror(t, db, chat, users, 'after 6 createChat')
  const transactions = (await countRequests(() => store.createChat({ name: 'one more', adminId: users[0], userIds: users.slice(1, 20) }))).made.transactions
  t.is(transactions, 1, 'createChat with the mirror: one IndexedDB transaction')
  t.ok(await store.addChatMember(chats[1], users[23]), 'a member added')
  t.ok(await store.removeChatMember(chats[2], users[4]) || await store.removeChatMember(chats[2], users[5]), 'a member removed')
  await assertMirror(t, db, chat, users, 'after adding and removing members')
  t.ok(await store.deleteChat(chats[3]), 'a chat deleted')
  await assertMirror(t, db, chat, users, 'after a delete (its lists deleted by the cascade)')
  await db.close()
})

test('idb-native: a batch whose mirror request fails writes nothing', async (/** @type {any} */ t) => {
  const db = await open({ location: fresh() })
  const chat = await mirroredChat(db)
  const { store } = chat
  const users = []
  for (let i = 0; i < 5; i++) users.push(await store.createUser({ username: `user${i}`, password: 'secret-password' }))
  await store.createChat({ name: 'first', adminId: users[0], userIds: users.slice(1) })
  const original = IDBObjectStore.prototype.put
  IDBObjectStore.prototype.put = function (/** @type {any} */ value, /** @type {any} */ key) {
    // A mirror entry, in the shared index's layout (ids) or a slot's (s<k>).
    if (value !== null && typeof value === 'object' && Object.keys(value).some(name => name === 'ids' || /^s\d+$/.test(name))) throw new DOMException('injected', 'DataError')
    return original.call(this, value, key)
  }
  let error = null
  try {
    await store.createChat({ name: 'second', adminId: users[1], userIds: users.slice(2) })
  } catch (err) {
    error = err
  } finally {
    IDBObjectStore.prototype.put = original
  }
  t.ok(error !== null, `createChat rejects (${/** @type {any} */ (error)?.name})`)
  t.same((await store.getChats(users[2])).map((/** @type {any} */ c) => c.name), ['first'], 'the chat is not there')
  await assertMirror(t, db, chat, users, 'after the failed batch')
  const id = await store.createChat({ name: 'third', adminId: users[1], userIds: users.slice(2) })
  t.ok(id > 0, 'a later createChat is written')
  await assertMirror(t, db, chat, users, 'after it')
  await db.close()
})

test('idb-native: a database a user brings has no lists store: nothing is mirrored', async (/** @type {any} */ t) => {
  const level = new BrowserLevel(fresh(), { prefix: '' })
  await level.open()
  const db = await open({ db: level })
  const { mirrored } = await mirroredChat(db)
  t.is(mirrored, false, 'mirror() says no')
  await db.close()
  await level.close()
})

/** The members relation's model of a ChatStore's database. @param {any} db */
function membersOf (db) {
  return db.models().find((/** @type {any} */ m) => m.kind === 'relation' && m.model.name === 'members').model
}

/**
 * Each user's chats as the chats' member lists give them, in id order.
 * @param {any} store @param {number[]} users @param {number[]} chats
 */
async function expectedChats (store, users, chats) {
  /** @type {Map<number, number[]>} */
  const byUser = new Map(users.map(user => [user, []]))
  for (const chat of chats) {
    const found = await store.chats.get(chat)
    if (found === undefined) continue
    for (const member of found.members) byUser.get(member)?.push(chat)
  }
  return byUser
}

/**
 * Whether every user's chats, by getChats() and members.from(), are the
 * ones the chats list. @param {any} t @param {any} store @param {number[]} users @param {number[]} chats @param {string} when
 */
async function assertChats (t, store, users, chats, when) {
  const expected = await expectedChats(store, users, chats)
  let same = 0
  for (const user of users) {
    const want = /** @type {number[]} */ (expected.get(user))
    const byFrom = await store.members.from(user).all()
    const byGetChats = (await store.getChats(user)).map((/** @type {any} */ c) => c.id).sort((/** @type {number} */ a, /** @type {number} */ b) => a - b)
    if (JSON.stringify(byFrom) === JSON.stringify(want) && JSON.stringify(byGetChats) === JSON.stringify(want)) same++
    else t.same({ byFrom, byGetChats }, { byFrom: want, byGetChats: want }, `${when}: user ${user}'s chats`)
  }
  t.is(same, users.length, `${when}: from() and getChats() answer each user's chats (${users.length} users)`)
}

// relationIndexes: 'lists' (the default keeps the forward lists in the
// entries only, test/browser/idb-entries-entry.js): the mirror beside lists
// in browser-level's store, which check() compares.
test('idb-native: on a new database levelkit opened, ChatStore\'s members keep their reverse direction in the index: createChat writes no reverse lists', async (/** @type {any} */ t) => {
  const db = await open({ location: fresh(), relationIndexes: 'lists' })
  const store = await ChatStore.open(db, COST)
  const users = []
  for (let i = 0; i < 24; i++) users.push(await store.createUser({ username: `user${i}`, password: 'secret-password' }))
  const members = membersOf(db)
  t.is(members.reverse.kind, 'index', 'the reverse direction is the index kind')
  t.same(members.declaredLayout(), { lists: ['from', 'to'], native: ['from'] }, 'its layout says so')
  const chats = []
  for (let c = 0; c < 5; c++) chats.push(await store.createChat({ name: `chat${c}`, adminId: users[c], userIds: users.filter((_, i) => (i + c) % 3 !== 0).slice(0, 19) }))
  const { made } = await countRequests(() => store.createChat({ name: 'twenty', adminId: users[0], userIds: users.slice(1, 20) }).then(id => chats.push(id)))
  const counts = { writes: made.put + made.delete, transactions: made.transactions }
  t.ok(counts.writes <= 5, `createChat of 20 members: ${counts.writes} IndexedDB writes (at most 5)`)
  t.is(counts.transactions, 1, 'in one transaction')
  t.is((await members.reverse.namespace.sublevel.keys().all()).length, 0, 'no reverse lists stored')
  await assertChats(t, store, users, chats, 'after 6 createChat')
  t.same(await store.members.from(users[1], { gt: chats[1], limit: 2 }).all(), (await expectedChats(store, users, chats)).get(users[1])?.filter(c => c > chats[1]).slice(0, 2), 'a range of from() with a limit')
  t.ok(await store.members.has(chats[5], users[3]), 'has()')

  // Restrict: a user in a chat cannot be deleted; in a write, a chat created
  // in the same write counts (pending ops over the index).
  let refused = null
  try {
    await store.users.del(users[2])
  } catch (err) {
    refused = err
  }
  t.is(/** @type {any} */ (refused)?.code, 'LEVELKIT_RESTRICT', 'deleting a user in chats is refused')
  const loner = await store.createUser({ username: 'loner', password: 'secret-password' })
  let pending = null
  try {
    await db.write(async (/** @type {any} */ w) => {
      const chat = await store.chats.in(w).insert({ name: 'mine', adminId: loner, members: [loner], lastActivity: 0, createdAt: 0, private: false, passwordHash: null })
      await store.members.in(w).add(chat, loner)
      await store.users.in(w).del(loner)
    })
  } catch (err) {
    pending = err
  }
  t.is(/** @type {any} */ (pending)?.code, 'LEVELKIT_RESTRICT', 'a membership added earlier in the same write restricts too')
  t.is(await db.write(async (/** @type {any} */ w) => store.users.in(w).del(loner)), true, 'a user in no chat is deleted')

  // Cascade: deleting a chat removes it from its members' chats.
  t.ok(await store.deleteChat(chats[2]), 'a chat deleted')
  t.ok(await store.addChatMember(chats[0], users[3]), 'a member added')
  t.ok(await store.removeChatMember(chats[1], users[4]) || await store.removeChatMember(chats[1], users[5]), 'a member removed')
  await assertChats(t, store, users, chats, 'after delete, add, remove')

  // db.transaction() reads the index's answer from its own reads.
  const inTx = await db.transaction(async (/** @type {any} */ tx) => store.members.in(tx).from(users[1]).all())
  t.same(inTx, (await expectedChats(store, users, chats)).get(users[1]), 'from() inside db.transaction()')
  t.is((await db.check()).problems.length, 0, 'check() is clean')
  await db.close()

  const again = await open({ location: db.level.location })
  const reopened = await ChatStore.open(again, COST)
  await assertChats(t, reopened, users, chats, 'reopened')
  t.is(membersOf(again).reverse.kind, 'index', 'reopened, still the index kind')
  await again.close()
})

test('idb-native: check() finds a mirror that differs from the forward lists and repairs it', async (/** @type {any} */ t) => {
  const name = fresh()
  const db = await open({ location: name, relationIndexes: 'lists' })
  const store = await ChatStore.open(db, COST)
  const users = []
  for (let i = 0; i < 4; i++) users.push(await store.createUser({ username: `user${i}`, password: 'secret-password' }))
  const chat = await store.createChat({ name: 'a', adminId: users[0], userIds: [users[1], users[2]] })
  const other = await store.createChat({ name: 'b', adminId: users[3], userIds: [users[1]] })
  t.is((await db.check()).problems.length, 0, 'clean before')
  const members = membersOf(db)
  const tag = members.forward.namespace.prefix
  const { store: lists } = listsStoreOf(name)
  t.same((await listsEntries(db, name)).claims, { tags: { [tag]: 0 } }, 'the relation has slot 0 (a new database)')
  await new Promise((resolve, reject) => {
    const tx = db.level.db.transaction([lists], 'readwrite')
    const objects = tx.objectStore(lists)
    // In the slot's layout: a member dropped from one list's mirror, another list's mirror gone, one that lists nothing stored.
    objects.put({ s0: [users[0], users[2]] }, [0, encodeBytes(chat)])
    objects.delete([0, encodeBytes(other)])
    objects.put({ s0: [users[3]] }, [0, encodeBytes(999)])
    tx.oncomplete = resolve
    tx.onerror = () => reject(tx.error)
  })
  t.same(await store.members.from(users[1]).all(), [], 'the corrupted index answers wrongly')
  const report = await db.check()
  t.is(report.problems.length, 3, `check() reports 3 problems (${report.problems.map((/** @type {any} */ p) => p.message).join(' | ')})`)
  const repaired = await db.check({ repair: true })
  t.is(repaired.repaired, 3, 'a repair fixes them')
  t.is((await db.check()).problems.length, 0, 'clean after')
  t.same(await store.members.from(users[1]).all(), [chat, other], 'the index answers again')
  await db.close()
})

test('idb-native: a database on the lists layout is moved into the index once levelkit opens it with its lists store (its first operation a write)', async (/** @type {any} */ t) => {
  const name = fresh()
  const level = new BrowserLevel(name, { prefix: '' })
  await level.open()
  const before = await open({ db: level })
  const old = await ChatStore.open(before, COST)
  const users = []
  for (let i = 0; i < 6; i++) users.push(await old.createUser({ username: `user${i}`, password: 'secret-password' }))
  const chats = [await old.createChat({ name: 'a', adminId: users[0], userIds: users.slice(1, 4) })]
  t.is(membersOf(before).reverse.kind, 'lists', 'a database a user brings: reverse lists')
  await before.close()
  await level.close()
  const db = await open({ location: name })
  const store = await ChatStore.open(db, COST)
  chats.push(await store.createChat({ name: 'b', adminId: users[2], userIds: users.slice(3) }))
  t.is(membersOf(db).reverse.kind, 'index', 'upgraded with the lists store, its reverse lists are moved into the index')
  await assertChats(t, store, users, chats, 'old layout')
  t.is((await db.check()).problems.length, 0, 'check() is clean')
  await db.close()
})

test('idb-native: a batch that would write the mirrored lists past the direct layer (a \'write\' listener on the root) is refused', async (/** @type {any} */ t) => {
  const db = await open({ location: fresh() })
  const store = await ChatStore.open(db, COST)
  const users = []
  for (let i = 0; i < 3; i++) users.push(await store.createUser({ username: `user${i}`, password: 'secret-password' }))
  const listener = () => {}
  db.level.on('write', listener)
  let error = null
  try {
    await store.createChat({ name: 'a', adminId: users[0], userIds: [users[1]] })
  } catch (err) {
    error = err
  }
  db.level.off('write', listener)
  t.is(/** @type {any} */ (error)?.code, 'LEVELKIT_FORBIDDEN', `refused (${/** @type {any} */ (error)?.message})`)
  const chat = await store.createChat({ name: 'b', adminId: users[0], userIds: [users[1]] })
  t.same(await store.members.from(users[1]).all(), [chat], 'without the listener it is written')
  t.is((await db.check()).problems.length, 0, 'check() is clean')
  await db.close()
})

// The lists store's stored layout (lib/idb-open.js), spelled out: a
// database keeps it whatever the code's constants become.
const LIST_SLOTS = 8
const LIST_CLAIMS = [-1]
/** @param {number} k */
const slotIndexOf = k => `s${k}`

/**
 * Every record of the lists store of the open database `db` (named `name`):
 * the slots' claims, and the entries as { key, slot, ids, v } (slot null
 * for the shared index's [tag, key] entries, whose ids are [tag, id]).
 * @param {any} db @param {string} name
 */
async function listsEntries (db, name) {
  const { store } = listsStoreOf(name)
  const tx = db.level.db.transaction([store], 'readonly')
  const objects = tx.objectStore(store)
  const [keys, values] = await Promise.all([settle(objects.getAllKeys()), settle(objects.getAll())])
  let claims = null
  const entries = []
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]
    if (key.length === 1 && key[0] === LIST_CLAIMS[0]) {
      claims = values[i]
      continue
    }
    const slot = typeof key[0] === 'number' ? key[0] : null
    entries.push({ head: decode(new Uint8Array(key[1])), slot, tag: slot === null ? key[0] : null, ids: slot === null ? values[i].ids : values[i][slotIndexOf(slot)], v: values[i].v })
  }
  return { claims, entries, indexes: Array.from(objects.indexNames).sort() }
}

/** @param {IDBRequest} request @returns {Promise<any>} */
function settle (request) {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result)
    request.onerror = () => reject(request.error)
  })
}

test('idb-native: on a new database a relation claims a slot: its entries hold plain-number ids under [slot, key], answered by the slot\'s own index', async (/** @type {any} */ t) => {
  const name = fresh()
  const db = await open({ location: name })
  const store = await ChatStore.open(db, COST)
  const users = []
  for (let i = 0; i < 6; i++) users.push(await store.createUser({ username: `user${i}`, password: 'secret-password' }))
  const before = await listsEntries(db, name)
  t.same(before.indexes, ['ids', ...Array.from({ length: LIST_SLOTS }, (_, k) => slotIndexOf(k))].sort(), `the lists store has the shared index and ${LIST_SLOTS} slots' indexes`)
  t.is(before.claims, null, 'no claim before the relation\'s first entry')
  const chats = [
    await store.createChat({ name: 'a', adminId: users[0], userIds: users.slice(1, 4) }),
    await store.createChat({ name: 'b', adminId: users[2], userIds: users.slice(3) })
  ]
  const tag = membersOf(db).forward.namespace.prefix
  const { claims, entries } = await listsEntries(db, name)
  t.same(claims, { tags: { [tag]: 0 } }, 'the first createChat claimed slot 0 for members')
  t.same(entries.map(e => [e.slot, e.head, e.ids]), [[0, chats[0], [users[0], ...users.slice(1, 4)].sort((a, b) => a - b)], [0, chats[1], [users[2], ...users.slice(3)].sort((a, b) => a - b)]], 'one entry per chat under [0, key], its ids plain numbers')
  t.ok(entries.every(e => typeof e.v === 'string' && JSON.parse(e.v).name !== undefined), 'each carrying its chat')
  const { store: lists } = listsStoreOf(name)
  const byIndex = await settle(db.level.db.transaction([lists], 'readonly').objectStore(lists).index(slotIndexOf(0)).getAllKeys(IDBKeyRange.only(users[3])))
  t.same(byIndex.map((/** @type {any[]} */ key) => decode(new Uint8Array(key[1]))), chats, 'the slot\'s index answers a plain id')
  await assertChats(t, store, users, chats, 'slot 0')
  t.is((await db.check()).problems.length, 0, 'check() is clean')
  await db.close()
  const again = await open({ location: name })
  const reopened = await ChatStore.open(again, COST)
  const counted = await countRequests(() => reopened.members.from(users[3]).all())
  t.same(counted.answer, chats, 'reopened: the same answer')
  t.same([counted.made.get, counted.made.transactions], [0, 1], 'the index alone, in one transaction: no claims read (the slot was learned as the layout was compared)')
  await again.close()
})

test('idb-native: a lists store made before slots keeps [tag, id] entries in the shared index', async (/** @type {any} */ t) => {
  const name = fresh()
  const { store: lists, index } = listsStoreOf(name)
  // As levelkit before slots made it: browser-level's store, the lists store with the ids index only.
  await new Promise((resolve, reject) => {
    const request = indexedDB.open(name, 1)
    request.onupgradeneeded = () => {
      request.result.createObjectStore(name)
      request.result.createObjectStore(lists).createIndex(index, index, { multiEntry: true })
    }
    request.onsuccess = () => {
      request.result.close()
      resolve(undefined)
    }
    request.onerror = () => reject(request.error)
  })
  const db = await open({ location: name })
  const store = await ChatStore.open(db, COST)
  const users = []
  for (let i = 0; i < 6; i++) users.push(await store.createUser({ username: `user${i}`, password: 'secret-password' }))
  const chats = [await store.createChat({ name: 'a', adminId: users[0], userIds: users.slice(1, 5) })]
  chats.push(await store.createChat({ name: 'b', adminId: users[1], userIds: users.slice(4) }))
  t.is(membersOf(db).reverse.kind, 'index', 'the index kind')
  const tag = membersOf(db).forward.namespace.prefix
  const { claims, entries, indexes } = await listsEntries(db, name)
  t.same(indexes, ['ids'], 'no slot index made (no upgrade)')
  t.is(claims, null, 'no claim')
  t.ok(entries.length === 2 && entries.every(e => e.slot === null && e.tag === tag && e.ids.every((/** @type {any[]} */ item) => item[0] === tag)), 'its entries under [tag, key], their ids [tag, id]')
  await assertChats(t, store, users, chats, 'shared index')
  t.is((await db.check()).problems.length, 0, 'check() is clean')
  await db.close()
  t.is((await describeIdb(name)).version, 1, 'the database was not upgraded')
})

test('idb-native: past the last slot a relation keeps the shared index; every relation answers, and check() finds what is planted in either layout', async (/** @type {any} */ t) => {
  const name = fresh()
  const db = await open({ location: name, relationIndexes: 'lists' })
  const people = db.collection('people')
  const groups = db.collection('groups')
  const count = LIST_SLOTS + 1
  const relations = Array.from({ length: count }, (_, r) => db.relation(`r${r}`, { from: groups, to: people, lists: ['from', 'to'] }))
  await db.buildIndexes()
  await people.insertMany(Array.from({ length: 8 }, (_, i) => ({ name: `p${i + 1}` })))
  await groups.insertMany(Array.from({ length: 4 }, (_, i) => ({ name: `g${i + 1}` })))
  /** The people of group `g` in relation `r`. @param {number} r @param {number} g */
  const peopleOf = (r, g) => [1 + (r + g) % 8, 1 + (r + 2 * g + 3) % 8].filter((p, i, all) => all.indexOf(p) === i).sort((a, b) => a - b)
  for (let r = 0; r < count; r++) for (let g = 1; g <= 4; g++) await relations[r].addMany(g, peopleOf(r, g))
  const { claims } = await listsEntries(db, name)
  const tagOf = (/** @type {number} */ r) => db.models().find((/** @type {any} */ m) => m.kind === 'relation' && m.model.name === `r${r}`).model.forward.namespace.prefix
  const slots = relations.map((_, r) => claims.tags[tagOf(r)])
  t.same(slots.slice().sort((a, b) => a - b), [-1, ...Array.from({ length: LIST_SLOTS }, (_, k) => k)], `${LIST_SLOTS} relations claimed the ${LIST_SLOTS} slots, the last one the shared index (-1)`)
  const right = async () => {
    let same = 0
    for (let r = 0; r < count; r++) {
      for (let p = 1; p <= 8; p++) {
        const want = [1, 2, 3, 4].filter(g => peopleOf(r, g).includes(p))
        if (JSON.stringify(await relations[r].from(p).all()) === JSON.stringify(want)) same++
      }
    }
    return same
  }
  t.is(await right(), count * 8, 'every relation\'s from() answers its own edges only')
  t.is((await db.check()).problems.length, 0, 'check() is clean')
  const sharedTag = tagOf(slots.indexOf(-1))
  const { store: lists } = listsStoreOf(name)
  await new Promise((resolve, reject) => {
    const tx = db.level.db.transaction([lists], 'readwrite')
    const objects = tx.objectStore(lists)
    // One bad list in the shared index, one missing in slot 3.
    objects.put({ ids: [[sharedTag, 7]] }, [sharedTag, encodeBytes(1)])
    objects.delete([3, encodeBytes(2)])
    tx.oncomplete = resolve
    tx.onerror = () => reject(tx.error)
  })
  const report = await db.check()
  t.same(report.problems.map((/** @type {any} */ p) => p.type), ['edge-list-mismatch', 'edge-list-mismatch'], `check() reports both (${report.problems.map((/** @type {any} */ p) => p.message).join(' | ')})`)
  t.is((await db.check({ repair: true })).repaired, 2, 'a repair fixes them')
  t.is(await right(), count * 8, 'every relation answers its own edges again')
  t.is((await db.check()).problems.length, 0, 'clean after')
  await db.close()
})

/** The tuple encoding of `id`, as the mirror's keys hold it. @param {unknown} id */
function encodeBytes (id) {
  return encode(id)
}

// @ts-ignore
window.levelkitTests = { run }
