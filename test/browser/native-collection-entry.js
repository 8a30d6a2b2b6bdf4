/* global indexedDB */
// Native collections on IndexedDB (open()'s `native` option, layout C,
// lib/idb-records.js): a collection's records in an object store of their
// own with a native index per index. What it must keep: unique values (one
// request per new record, a taken one refused with nothing written), an
// update that changes a unique value, a delete that frees it, getBy, the
// order of queries and of the whole key space (astral characters
// included: IndexedDB orders strings by UTF-16 code units, levelkit by
// bytes), check() clean and finding an entry planted behind its back, and
// a layout that never switches silently; then the chat suite with ChatStore's
// users native. test/browser-native-collection-test.js
// bundles this file and runs it in Chromium.

import { test, run } from './harness.js'
import { open } from '../../browser.js'
import { BrowserLevel } from 'browser-level'
import { ChatStore } from '../../chat.js'
import { countRequests } from './count-requests.js'
import { recordsStoreOf } from '../../lib/idb-records.js'
import { encode } from '../../lib/tuple.js'
import { chatSuite } from '../chat/suite.js'

const run_ = Math.random().toString(36).slice(2)
let opened = 0
const fresh = () => `levelkit-native-${run_}-${++opened}`
const NATIVE = { users: ['username', 'tags'] }

/** @param {any} db */
function usersOf (db) {
  return db.collection('users', {
    indexes: {
      username: { unique: true, covering: true, key: (/** @type {any} */ u) => u.username },
      tags: { multi: true, key: (/** @type {any} */ u) => u.tags }
    }
  })
}

/** @param {any} err */
const codeOf = err => err?.code

/** A stored record's JSON: its `v`, text (or bytes, as stored before). @param {any} object */
const jsonOf = object => typeof object.v === 'string' ? object.v : new TextDecoder().decode(object.v)

/**
 * The records the native store of `name` holds, raw: [key bytes, object].
 * @param {string} name
 * @returns {Promise<Array<[Uint8Array, any]>>}
 */
async function rawRecords (name) {
  const idb = await openIdb(name)
  const store = recordsStoreOf(name, 'users')
  const tx = idb.transaction([store], 'readonly').objectStore(store)
  const [keys, values] = await Promise.all([settle(tx.getAllKeys()), settle(tx.getAll())])
  idb.close()
  return keys.map((/** @type {any} */ key, /** @type {number} */ i) => [new Uint8Array(key), values[i]])
}

/** @param {string} name @returns {Promise<IDBDatabase>} */
function openIdb (name) {
  return settle(indexedDB.open(name))
}

/** @param {IDBRequest} request @returns {Promise<any>} */
function settle (request) {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result)
    request.onerror = () => reject(request.error)
  })
}

/** The keys browser-level's own store holds, as strings. @param {string} name */
async function mainKeys (name) {
  const idb = await openIdb(name)
  const keys = await settle(idb.transaction([name], 'readonly').objectStore(name).getAllKeys())
  idb.close()
  return keys.map((/** @type {any} */ key) => new TextDecoder().decode(key))
}

test('native: the records are in their own store, with a unique multiEntry native index per index, and nowhere else', async (/** @type {any} */ t) => {
  const name = fresh()
  const db = await open({ location: name, native: NATIVE })
  const users = usersOf(db)
  const id = await users.insert({ username: 'ada', tags: ['a', 'b'] })
  t.is((await users.get(id))?.username, 'ada', 'get')
  t.is((await users.getBy('username', 'ada'))?.id, id, 'getBy')
  t.same((await users.query({ index: 'tags', eq: 'b' }).all()).map((/** @type {any} */ u) => u.id), [id], 'a multi index query')
  await db.close()
  const idb = await openIdb(name)
  const store = recordsStoreOf(name, 'users')
  t.ok(idb.objectStoreNames.contains(store), 'the records store is there')
  const tx = idb.transaction([store], 'readonly').objectStore(store)
  const indexes = Array.from(tx.indexNames).sort().map(n => {
    const index = tx.index(n)
    return [n, index.unique, index.multiEntry]
  })
  t.same(indexes, [['tags', true, true], ['username', true, true]], 'one native index per index, unique and multiEntry')
  idb.close()
  const keys = await mainKeys(name)
  t.same(keys.filter(k => k.startsWith('!users!') || k.startsWith('!users.idx.')), [], 'browser-level\'s store holds no record and no entry of the collection')
  const raw = await rawRecords(name)
  t.is(raw.length, 1, 'one record in the native store')
  t.same(Object.keys(raw[0][1]).sort(), ['k0', 'k1', 'v'], 'stored as its value and its entries\' keys')
})

test('native: a record is stored as its JSON text; records stored as bytes (levelkit before 0.2, db.level) read, query, update, refuse and check() as before', async (/** @type {any} */ t) => {
  const name = fresh()
  let db = await open({ location: name, native: NATIVE })
  let users = usersOf(db)
  const ada = await users.insert({ username: 'ada', tags: ['x'] })
  await users.insertMany(Array.from({ length: 30 }, (_, i) => ({ username: `bulk${i}`, tags: [`t${i % 3}`] })), { batchSize: 10 })
  await db.write(async (/** @type {any} */ w) => users.in(w).insert({ username: 'café 👍', tags: ['x'] }))
  let raw = await rawRecords(name)
  t.is(raw.length, 32, 'every record in the native store')
  t.ok(raw.every(([, object]) => typeof object.v === 'string'), 'insert(), insertMany() and a db.write() store each record\'s JSON as text')
  t.is(JSON.parse(raw.find(([, o]) => o.v.includes('café'))?.[1].v).username, 'café 👍', 'non-ASCII text as it is')
  await db.close()

  // Rewrite every stored record as levelkit before 0.2 stored it (its JSON's
  // UTF-8 bytes, the same entries' keys), then open it again.
  const idb = await openIdb(name)
  const store = recordsStoreOf(name, 'users')
  const tx = idb.transaction([store], 'readwrite')
  for (const [key, object] of raw) tx.objectStore(store).put({ ...object, v: new TextEncoder().encode(object.v) }, key)
  await new Promise((resolve, reject) => { tx.oncomplete = resolve; tx.onabort = () => reject(tx.error) })
  idb.close()
  raw = await rawRecords(name)
  t.ok(raw.every(([, object]) => object.v instanceof Uint8Array), 'the store now holds bytes, as before')
  db = await open({ location: name, native: NATIVE })
  users = usersOf(db)
  t.is((await users.get(ada))?.username, 'ada', 'get() reads a record stored as bytes')
  t.is((await users.getBy('username', 'café 👍'))?.tags[0], 'x', 'getBy() reads it through the covering index')
  t.same((await users.query({ index: 'tags', eq: 't1' }).all()).map((/** @type {any} */ u) => u.username), ['bulk1', 'bulk4', 'bulk7', 'bulk10', 'bulk13', 'bulk16', 'bulk19', 'bulk22', 'bulk25', 'bulk28'], 'a query reads them in order')
  const levelValue = await db.level.get(raw[0][0], { keyEncoding: 'view', valueEncoding: 'view' })
  t.same(levelValue, raw[0][1].v, 'db.level hands them out as the bytes they are')
  t.same((await db.check()).problems, [], 'check() is clean over them')
  const refused = await users.insertMany([{ username: 'new', tags: [] }, { username: 'bulk3', tags: [] }]).catch((/** @type {any} */ e) => e)
  t.is(codeOf(refused), 'LEVELKIT_UNIQUE', 'a bulk load of a value a bytes record holds is refused')
  t.is(await users.getBy('username', 'new'), undefined, 'and writes nothing of its batch')
  t.is(codeOf(await users.insert({ username: 'ada', tags: [] }).catch((/** @type {any} */ e) => e)), 'LEVELKIT_UNIQUE', 'an insert of it too')
  await users.update(ada, (/** @type {any} */ u) => ({ ...u, username: 'ada2' }))
  t.is((await users.getBy('username', 'ada2'))?.id, ada, 'an update moves its unique value')
  t.is(await users.getBy('username', 'ada'), undefined, 'and frees the old one')
  await users.del((await users.getBy('username', 'bulk0')).id)
  t.is(await users.getBy('username', 'bulk0'), undefined, 'a delete frees its value')
  raw = await rawRecords(name)
  t.is(typeof raw.find(([, o]) => jsonOf(o).includes('"ada2"'))?.[1].v, 'string', 'the updated record is stored as text again')
  t.is(raw.filter(([, o]) => o.v instanceof Uint8Array).length, 30, 'the others stay as they were')
  t.same((await db.check()).problems, [], 'check() is clean over both forms')
  await db.close()
})

test('native: createUser is one request (a put: the username rides on it), no claim, no read', async (/** @type {any} */ t) => {
  const name = fresh()
  const chat = await ChatStore.open(await open({ location: name, native: ChatStore.native }), { passwordCost: { pbkdf2Iterations: 1 } })
  await chat.createUser({ username: 'warmup', password: 'pw' })
  const { made } = await countRequests(() => chat.createUser({ username: 'ada', password: 'pw' }))
  t.is(made.get, 0, 'no get')
  t.is(made.add, 0, 'no add (no claim entry)')
  t.is(made.put + made.add + made.delete, 1, 'one write request')
  t.is(made.readwrite, 1, 'one readwrite transaction')
  t.is((await chat.getUser('ada'))?.username, 'ada', 'getUser finds it')
  await chat.db.close()
})

test('native: a taken unique value is refused with LEVELKIT_UNIQUE, nothing written; an update moves it; a delete frees it', async (/** @type {any} */ t) => {
  const name = fresh()
  const db = await open({ location: name, native: NATIVE })
  const users = usersOf(db)
  const ada = await users.insert({ username: 'ada', tags: [] })
  // Claimed by the batch (no read): IndexedDB refuses it, the section runs again and reads.
  const err = await users.insert({ username: 'ada', tags: ['x'] }).catch((/** @type {any} */ e) => e)
  t.is(codeOf(err), 'LEVELKIT_UNIQUE', 'the second insert is refused')
  t.is((await rawRecords(name)).length, 1, 'nothing of it written')
  t.is((await users.query({ index: 'tags', eq: 'x' }).all()).length, 0, 'not even its other entries')
  const bob = await users.insert({ username: 'bob', tags: [] })
  const clash = await users.update(bob, (/** @type {any} */ u) => ({ ...u, username: 'ada' })).catch((/** @type {any} */ e) => e)
  t.is(codeOf(clash), 'LEVELKIT_UNIQUE', 'renaming into a taken value is refused')
  t.is((await users.get(bob))?.username, 'bob', 'and leaves the record as it was')
  await users.update(ada, (/** @type {any} */ u) => ({ ...u, username: 'ada2' }))
  t.is(await users.getBy('username', 'ada'), undefined, 'the old value is free after a rename')
  t.is((await users.getBy('username', 'ada2'))?.id, ada, 'the new one finds it')
  const again = await users.insert({ username: 'ada', tags: [] })
  t.ok(again > bob, 'the freed value is taken again')
  await users.del(again)
  t.is(await users.getBy('username', 'ada'), undefined, 'a delete frees it')
  t.is((await users.insert({ username: 'ada', tags: [] })) > again, true, 'and it is taken once more')
  t.same((await db.check()).problems, [], 'check() is clean')
  await db.close()
})

// Strings whose UTF-16 order differs from their byte (code point) order:
// an astral character (a surrogate pair, 0xD83D...) sorts below U+FFFD in
// UTF-16 and above it in UTF-8.
const NAMES = ['zed', '\u{1F600}smile', '\uFFFDreplacement', 'é', 'Zed', 'a', '\u{10000}', '\uE000private', 'ab']

test('native: queries and the whole key space read in levelkit\'s order (bytes), astral characters included', async (/** @type {any} */ t) => {
  /** @param {any} db */
  const fill = async db => {
    const users = usersOf(db)
    for (const [i, username] of NAMES.entries()) await users.insert({ username, tags: [NAMES[(i + 3) % NAMES.length], username] })
    return users
  }
  const plainDb = await open({ location: fresh() })
  const plain = await fill(plainDb)
  const nativeDb = await open({ location: fresh(), native: NATIVE })
  const native = await fill(nativeDb)
  const names = (/** @type {any[]} */ users) => users.map(u => u.username)
  const byName = names(await plain.query({ index: 'username' }).all())
  t.same(names(await native.query({ index: 'username' }).all()), byName, 'by the unique index: the order of the layout in one store')
  t.ok(byName.indexOf('\u{1F600}smile') > byName.indexOf('\uFFFDreplacement'), 'which is byte order, not UTF-16 order')
  t.same(names(await native.query({ index: 'username', reverse: true }).all()), [...byName].reverse(), 'reversed')
  t.same(names(await native.query({ index: 'username', gte: '\uE000', limit: 3 }).all()), names(await plain.query({ index: 'username', gte: '\uE000', limit: 3 }).all()), 'a range with a limit')
  t.same(names(await native.query({ index: 'tags' }).all()), names(await plain.query({ index: 'tags' }).all()), 'a multi index')
  t.same(names(await native.query().all()), names(await plain.query().all()), 'by id')
  /** @param {any} db */
  const everything = async db => (await db.level.iterator({ keyEncoding: 'view', valueEncoding: 'view' }).all()).map((/** @type {any} */ [k, v]) => new TextDecoder().decode(k) + '=' + new TextDecoder().decode(v))
  const all = await everything(nativeDb)
  t.same(all.filter(e => e.startsWith('!users')), (await everything(plainDb)).filter(e => e.startsWith('!users')), 'the root\'s iterator: the same entries in the same order as in one store')
  const reversed = (await nativeDb.level.keys({ reverse: true, keyEncoding: 'utf8' }).all())
  t.same(reversed, [...all.map(e => e.slice(0, e.indexOf('=')))].reverse(), 'and reversed, keys only')
  const some = await nativeDb.level.keys({ gt: '!users!', lt: '!users.idx.username!~', limit: 5, keyEncoding: 'utf8' }).all()
  t.same(some, all.map(e => e.slice(0, e.indexOf('='))).filter(k => k > '!users!' && k < '!users.idx.username!~').slice(0, 5), 'a range across segments with a limit')
  await plainDb.close()
  await nativeDb.close()
})

test('native: the abstract-level interface over the routed ranges: has, getMany, seek, clear with a range and a limit', async (/** @type {any} */ t) => {
  const db = await open({ location: fresh(), native: NATIVE })
  const users = usersOf(db)
  for (const username of ['a', 'b', 'c', 'd', 'e']) await users.insert({ username, tags: [] })
  const records = db.level.sublevel('users', { keyEncoding: 'view', valueEncoding: 'utf8' })
  const entries = db.level.sublevel('users.idx.username', { keyEncoding: 'view', valueEncoding: 'utf8' })
  const keys = await records.keys().all()
  t.is(keys.length, 5, 'the records\' keys through a sublevel of db.level')
  t.same(await records.hasMany([keys[0], new Uint8Array([9])]), [true, false], 'hasMany')
  t.ok(await entries.has(encode(['c'])), 'has, of an entry')
  const rootKey = (/** @type {string} */ prefix, /** @type {Uint8Array} */ key) => new Uint8Array([...new TextEncoder().encode(prefix), ...key])
  t.same((await db.level.getMany([rootKey('!users!', keys[1]), rootKey('!users.idx.username!', encode(['b'])), rootKey('!nothing!', keys[1])], { keyEncoding: 'view', valueEncoding: 'utf8' })).map((/** @type {any} */ v) => v === undefined ? v : JSON.parse(v).username), ['b', 'b', undefined], 'getMany across stores, as the root sees them')
  const iterator = entries.iterator()
  iterator.seek(encode(['c']))
  t.is(JSON.parse((await iterator.next())[1]).username, 'c', 'seek lands on the entry')
  await iterator.close()
  const reverse = records.iterator({ reverse: true })
  reverse.seek(keys[2])
  t.same((await reverse.next())[0], keys[2], 'seek backwards lands on the record')
  await reverse.close()
  await records.clear({ gt: keys[3] })
  t.is((await records.keys().all()).length, 4, 'clear with a range deletes the records in it')
  await records.clear({ limit: 2 })
  t.same(await records.keys().all(), keys.slice(2, 4), 'clear with a limit deletes that many, from the start')
  t.same((await entries.keys().all()).map((/** @type {Uint8Array} */ k) => k), [encode(['c']), encode(['d'])], 'and their entries go with them')
  await db.close()
})

test('native: check() is clean, finds an entry planted behind levelkit\'s back, and a repair mends it', async (/** @type {any} */ t) => {
  const name = fresh()
  const db = await open({ location: name, native: NATIVE })
  const users = usersOf(db)
  await users.insert({ username: 'ada', tags: ['t'] })
  const bob = await users.insert({ username: 'bob', tags: [] })
  t.same((await db.check()).problems, [], 'clean')
  // Bob's stored entry says "mallory": his record's own value says bob.
  const idb = /** @type {IDBDatabase} */ (db.level.db)
  const store = recordsStoreOf(name, 'users')
  const raw = await rawRecords(name)
  const [key, object] = /** @type {[Uint8Array, any]} */ (raw.find(([, o]) => jsonOf(o).includes('"bob"')))
  const ada = raw.find(([, o]) => jsonOf(o).includes('"ada"'))
  const planted = { ...object, k0: [new Uint8Array([...new TextEncoder().encode('!users.idx.username!'), ...encode(['mallory'])])] }
  await settle(idb.transaction([store], 'readwrite').objectStore(store).put(planted, key))
  t.same(raw.length, 2, 'two records')
  t.ok(ada, 'ada is there')
  const { problems } = await db.check()
  t.same(problems.map((/** @type {any} */ p) => p.type).sort(), ['dangling-index-entry', 'missing-index-entry'], 'check() finds the planted entry and the missing one')
  await db.check({ repair: true })
  t.same((await db.check()).problems, [], 'a repair mends it')
  t.is((await users.getBy('username', 'bob'))?.id, bob, 'bob is found by his name again')
  await db.close()
})

test('native: a new record\'s entries are computed once (its put takes the model\'s, no parse of its JSON), and are the ones a recompute gives', async (/** @type {any} */ t) => {
  const name = fresh()
  const db = await open({ location: name, native: NATIVE })
  const calls = { username: 0, tags: 0 }
  const users = db.collection('users', {
    indexes: {
      username: { unique: true, covering: true, key: (/** @type {any} */ u) => { calls.username++; return u.username } },
      tags: { multi: true, key: (/** @type {any} */ u) => { calls.tags++; return u.tags } }
    }
  })
  await users.insert({ username: 'first', tags: ['a', 'b'] })
  t.same(calls, { username: 1, tags: 1 }, 'insert(): each key function runs once for the record')
  calls.username = calls.tags = 0
  // Nothing of a new record is parsed on its way: not its JSON for its
  // entries, nor its covering entry's copy to find whose it is.
  const parse = JSON.parse
  let parses = 0
  JSON.parse = function (/** @type {any[]} */ ...args) {
    parses++
    return parse.apply(this, /** @type {any} */ (args))
  }
  let loaded
  try {
    loaded = await users.insertMany(Array.from({ length: 50 }, (_, i) => ({ username: `bulk${i}`, tags: i % 2 === 0 ? [`t${i % 3}`] : [] })), { batchSize: 20 })
  } finally {
    JSON.parse = parse
  }
  t.is(loaded, 50, 'insertMany writes every record')
  t.same(calls, { username: 50, tags: 50 }, 'insertMany(): once per record and index')
  t.is(parses, 0, 'insertMany(): no JSON parsed')
  await db.write(async (/** @type {any} */ w) => {
    await users.in(w).insert({ username: 'inWrite', tags: ['w'] })
    await users.in(w).insertMany([{ username: 'inWrite2', tags: [] }])
  })
  t.same(calls, { username: 52, tags: 52 }, 'in a db.write(): once per record too')
  // What the store holds is what the records give: each record's entry keys, computed here again from its value.
  const raw = await rawRecords(name)
  t.is(raw.length, 53, 'every record in the native store')
  const wrong = raw.filter(([, object]) => {
    const record = JSON.parse(jsonOf(object))
    const keys = (/** @type {any} */ field) => (field ?? []).map((/** @type {Uint8Array} */ k) => Array.from(k).join(',')).sort()
    const expected = (/** @type {string} */ index, /** @type {unknown[]} */ values) => values.map(v => Array.from(new TextEncoder().encode(`!users.idx.${index}!`)).concat(Array.from(encode(index === 'username' ? [v] : [v, record.id]))).join(',')).sort()
    return JSON.stringify(keys(object.k0)) !== JSON.stringify(expected('username', [record.username])) ||
      JSON.stringify(keys(object.k1)) !== JSON.stringify(expected('tags', record.tags))
  })
  t.same(wrong.map(([, object]) => jsonOf(object)), [], 'each stored record carries exactly its entries\' keys')
  t.same((await users.query({ index: 'tags', eq: 't0' }).all()).map((/** @type {any} */ u) => u.username).sort(), Array.from({ length: 50 }, (_, i) => i).filter(i => i % 2 === 0 && i % 3 === 0).map(i => `bulk${i}`).sort(), 'a multi index query finds them')
  t.is(codeOf(await users.insertMany([{ username: 'new', tags: [] }, { username: 'bulk7', tags: [] }]).catch((/** @type {any} */ e) => e)), 'LEVELKIT_UNIQUE', 'a taken value is still refused')
  t.is(await users.getBy('username', 'new'), undefined, 'with nothing of its batch written')
  t.same((await db.check()).problems, [], 'check() is clean')
  await db.close()
})

test('native: a new record\'s covering entry goes to the store unencoded (no TextEncoder call per record), and reads, refuses and checks as before', async (/** @type {any} */ t) => {
  const name = fresh()
  const db = await open({ location: name, native: NATIVE })
  const users = usersOf(db)
  await users.insert({ username: 'warm', tags: [] })
  // The covering entry's value (the record's JSON) is never stored: the
  // native index derives the entry from the record's put.
  const encode = TextEncoder.prototype.encode
  let encodes = 0
  TextEncoder.prototype.encode = function (/** @type {any[]} */ ...args) {
    encodes++
    return encode.apply(this, /** @type {any} */ (args))
  }
  let loaded
  let id
  try {
    loaded = await users.insertMany(Array.from({ length: 40 }, (_, i) => ({ username: `plain${i}`, tags: [`t${i % 2}`] })), { batchSize: 40 })
    id = await users.insert({ username: 'single', tags: [] })
  } finally {
    TextEncoder.prototype.encode = encode
  }
  t.is(loaded, 40, 'insertMany writes every record')
  t.ok(encodes < 40, `fewer TextEncoder calls than records: ${encodes} for 41 records`)
  t.is((await users.getBy('username', 'plain39'))?.tags[0], 't1', 'getBy answers from the covering index')
  t.is((await users.getBy('username', 'single'))?.id, id, 'the single insert too')
  t.is(codeOf(await users.insert({ username: 'plain3', tags: [] }).catch((/** @type {any} */ e) => e)), 'LEVELKIT_UNIQUE', 'a taken value is refused')
  t.is((await rawRecords(name)).length, 42, 'with nothing of it written')
  t.same((await db.check()).problems, [], 'check() is clean')
  await db.close()
})

test('native: bulk loads, transactions, a second tab\'s reads and an index rebuilt for a new key function', async (/** @type {any} */ t) => {
  const name = fresh()
  const db = await open({ location: name, native: NATIVE })
  const users = usersOf(db)
  const loaded = await users.insertMany(Array.from({ length: 300 }, (_, i) => ({ username: `bulk${i}`, tags: [`t${i % 7}`] })), { batchSize: 100 })
  t.is(loaded, 300, 'insertMany writes every record')
  const refused = await users.insertMany([{ username: 'fresh', tags: [] }, { username: 'bulk5', tags: [] }]).catch((/** @type {any} */ e) => e)
  t.is(codeOf(refused), 'LEVELKIT_UNIQUE', 'a bulk load with a taken value is refused')
  t.is(await users.getBy('username', 'fresh'), undefined, 'and writes nothing of its batch')
  t.is((await users.getBy('username', 'bulk299'))?.tags[0], `t${299 % 7}`, 'getBy finds a loaded record')
  t.is((await users.query({ index: 'tags', eq: 't3' }).all()).length, Array.from({ length: 300 }, (_, i) => i).filter(i => i % 7 === 3).length, 'a multi index query over them')
  const renamed = await db.transaction(async (/** @type {any} */ tx) => {
    const found = await users.in(tx).getBy('username', 'bulk1')
    await users.in(tx).update(found.id, (/** @type {any} */ u) => ({ ...u, username: 'renamed' }))
    return found.id
  })
  t.is((await users.getBy('username', 'renamed'))?.id, renamed, 'a transaction reads by the index and renames')
  // Another database on the same IndexedDB, as another tab: it sees what this one wrote, and this one what it writes.
  const other = await open({ location: name, native: NATIVE })
  const otherUsers = usersOf(other)
  t.is((await otherUsers.getBy('username', 'renamed'))?.id, renamed, 'the other tab reads the rename')
  const id = await otherUsers.insert({ username: 'fromOther', tags: [] })
  t.is((await users.getBy('username', 'fromOther'))?.id, id, 'and this tab reads what the other wrote')
  t.is(codeOf(await users.insert({ username: 'fromOther', tags: [] }).catch((/** @type {any} */ e) => e)), 'LEVELKIT_UNIQUE', 'and cannot take its value')
  await other.close()
  t.same((await db.check()).problems, [], 'check() is clean')
  await db.close()
  // The key function changes (version 1): the index is built again, each record's entries computed again.
  const again = await open({ location: name, native: NATIVE })
  const upper = again.collection('users', {
    indexes: {
      username: { unique: true, covering: true, version: 1, key: (/** @type {any} */ u) => u.username.toUpperCase() },
      tags: { multi: true, key: (/** @type {any} */ u) => u.tags }
    }
  })
  t.is((await upper.getBy('username', 'BULK7'))?.username, 'bulk7', 'after the rebuild the new key finds the record')
  t.is(await upper.getBy('username', 'bulk7'), undefined, 'and the old key does not')
  t.same((await again.check()).problems, [], 'check() is clean')
  await again.close()
})

test('native: a layout never switches silently', async (/** @type {any} */ t) => {
  const name = fresh()
  const plain = await open({ location: name })
  await usersOf(plain).insert({ username: 'ada', tags: [] })
  await plain.close()
  const refused = await open({ location: name, native: NATIVE }).catch((/** @type {any} */ e) => e)
  t.is(codeOf(refused), 'LEVELKIT_NATIVE_LAYOUT', 'a collection with records in one store is not made native')
  const still = await open({ location: name })
  t.is((await usersOf(still).getBy('username', 'ada'))?.username, 'ada', 'and the database is as it was')
  await still.close()

  const other = fresh()
  const native = await open({ location: other, native: NATIVE })
  await usersOf(native).insert({ username: 'ada', tags: [] })
  await native.close()
  t.is(codeOf(await open({ location: other }).catch((/** @type {any} */ e) => e)), 'LEVELKIT_NATIVE_LAYOUT', 'a native collection is not opened in one store')
  t.is(codeOf(await open({ location: other, native: { users: ['username'] } }).catch((/** @type {any} */ e) => e)), 'LEVELKIT_NATIVE_LAYOUT', 'nor with other indexes')
  const again = await open({ location: other, native: NATIVE })
  t.is((await usersOf(again).getBy('username', 'ada'))?.username, 'ada', 'opened as it was made, it is all there')
  await again.close()
  const third = await open({ location: other, native: NATIVE })
  const declared = (() => {
    try {
      third.collection('users', { indexes: { username: { unique: true, key: (/** @type {any} */ u) => u.username } } })
    } catch (err) {
      return codeOf(err)
    }
  })()
  t.is(declared, 'LEVELKIT_NATIVE_LAYOUT', 'a declaration with other indexes is refused')
  await third.close()

  t.is(codeOf(await open({ backend: 'memory', native: NATIVE }).catch((/** @type {any} */ e) => e)), 'LEVELKIT_INVALID', 'the option is for indexeddb only')
  const level = new BrowserLevel(fresh(), { prefix: '' })
  t.is(codeOf(await open({ db: level, native: NATIVE }).catch((/** @type {any} */ e) => e)), 'LEVELKIT_INVALID', 'not for a database a user brings')
  t.is(codeOf(await open({ location: fresh(), native: { users: 'username' } }).catch((/** @type {any} */ e) => e)), 'LEVELKIT_INVALID', 'a malformed option is refused')
})

// The chat suite, unchanged, with ChatStore's users native (relations on
// the lists layout: the suite watches batches with a 'write' listener on
// the root, which the relations' IndexedDB index refuses).
chatSuite(/** @type {any} */ (test), {
  backend: 'indexeddb',
  open: () => open({ location: fresh(), relationIndexes: false, native: ChatStore.native })
})

globalThis.levelkitTests = { run }
