// Bulk loads: collection.insertMany() / putMany() and children.appendMany()
// write their input in batches, each batch atomic with its index entries
// and counters; a refusal leaves whole batches only and says how many
// records were written before it. A SIGKILL mid-load leaves whole batches
// and a clean check() (a real child process on LevelDB).
import test from 'tape'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import fc from 'fast-check'
import { MemoryLevel } from 'memory-level'
import { open } from '../index.js'
import { encodeJson, encodeJsonWithCopy } from '../lib/json-value.js'
import { increasingKeys } from '../lib/writer.js'
import { encode as encodeTupleOf } from '../lib/tuple.js'
import { killCycle } from './util/worker.js'
import { WriteScope } from '../lib/write-scope.js'
import { modelOf } from '../lib/model-handle.js'
import { ClassicLevel } from 'classic-level'

const WORKER = fileURLToPath(new URL('./fixtures/bulk-worker.js', import.meta.url))

/** @param {Promise<unknown>} promise @returns {Promise<any>} the rejection, or null */
async function rejection (promise) {
  try {
    await promise
    return null
  } catch (err) {
    return err
  }
}

async function usersDb () {
  const db = await open({ backend: 'memory' })
  const users = db.collection('users', { indexes: { email: { unique: true, key: u => u.email } } })
  return { db, users }
}

const user = (/** @type {number} */ i) => ({ email: `u${i}@x`, n: i })

test('encodeJsonWithCopy: the JSON of encodeJson() and the copy JSON.parse() would make, or the same refusal', t => {
  const special = [
    { ['__proto__']: { polluted: true }, a: 1 }, // eslint-disable-line no-useless-computed-key
    JSON.parse('{"__proto__": [1, {"x": 2}]}'),
    { 2: 'b', 1: 'a', z: 0, '-1': 'n' },
    { s: 'lone \ud800 and pair \ud83d\ude00 and "quotes" \n', deep: [[[{}]], [], { a: [null, false, 1.5e300] }] },
    Object.assign(Object.create(null), { a: 1 }),
    { skipped: undefined, kept: 1 }
  ]
  for (const value of special) {
    const [json, copy] = encodeJsonWithCopy(value, 'v')
    t.is(json, encodeJson(value, 'v'), `JSON of ${json}`)
    t.same(copy, JSON.parse(json), 'the copy')
    t.is(JSON.stringify(copy), json, 'in the same order')
    t.is(Object.getPrototypeOf(copy), Object.prototype, 'a plain object')
  }
  const outcome = (/** @type {() => any} */ f) => { try { return f() } catch (err) { return err.message } }
  fc.assert(fc.property(fc.dictionary(fc.string(), fc.jsonValue()), value => {
    const expected = outcome(() => encodeJson(value, 'v'))
    const got = outcome(() => encodeJsonWithCopy(value, 'v'))
    // A refusal (-0) alike, else the same JSON and a copy that writes it.
    return typeof got === 'string' ? got === expected : got[0] === expected && JSON.stringify(got[1]) === expected
  }), { numRuns: 300 })
  for (const bad of [{ a: -0 }, { a: [1, , 2] }, { when: new Date(0) }, { a: { toJSON: () => 1 } }]) { // eslint-disable-line no-sparse-arrays
    let expected = null
    let got = null
    try { encodeJson(bad, 'v') } catch (err) { expected = err.message }
    try { encodeJsonWithCopy(bad, 'v') } catch (err) { got = err.message }
    t.is(got, expected, `refused alike: ${expected}`)
  }
  t.end()
})

test('insertMany: an array in batches, ids from the sequence, index entries with them', async t => {
  const { db, users } = await usersDb()
  await users.insert(user(0))
  t.is(await users.insertMany([1, 2, 3, 4, 5, 6, 7].map(user), { batchSize: 3 }), 7, 'resolves with how many were written')
  t.same((await users.query().all()).map(r => r.id), [1, 2, 3, 4, 5, 6, 7, 8], 'ids go on from the sequence, in input order')
  t.is((await users.getBy('email', 'u7@x')).id, 8, 'index entries written with the records')
  t.is(await users.insert(user(8)), 9, 'the sequence was raised')
  t.is(await users.insertMany([]), 0, 'empty input')
  t.ok((await db.check()).ok, 'check() is clean')
  await db.close()
})

test('insertMany: a unique conflict inside the input refuses its batch only, with error.written', async t => {
  const { db, users } = await usersDb()
  const records = [1, 2, 3, 4, 5].map(user)
  records.push({ email: 'u4@x', n: 6 }) // the same email as record 4, in the same batch of 3
  records.push(user(7))
  const err = await rejection(users.insertMany(records, { batchSize: 3 }))
  t.is(err && err.code, 'LEVELKIT_UNIQUE', 'LEVELKIT_UNIQUE')
  t.is(err && err.written, 3, 'error.written: the first batch')
  t.same((await users.query().all()).map(r => r.n), [1, 2, 3], 'nothing of the failing batch, nothing after it')
  t.is(await users.getBy('email', 'u4@x'), undefined, 'no index entry of the failing batch')
  t.is(await users.insert(user(9)), 4, 'no id of the failing batch was used')
  t.ok((await db.check()).ok, 'check() is clean')
  await db.close()
})

test('insertMany: a unique conflict with a stored record, and across batches', async t => {
  const { db, users } = await usersDb()
  await users.insert(user(5))
  const err = await rejection(users.insertMany([1, 2, 3, 4, 5, 6].map(user), { batchSize: 2 }))
  t.is(err && err.code, 'LEVELKIT_UNIQUE')
  t.is(err && err.written, 4, 'two whole batches were written before the refusal')
  t.is(await users.count(), 5)
  const across = await rejection(users.insertMany([user(10), user(11), user(10)], { batchSize: 2 }))
  t.is(across && across.code, 'LEVELKIT_UNIQUE', 'a value taken by an earlier batch of the same call')
  t.is(across && across.written, 2)
  t.ok((await db.check()).ok, 'check() is clean')
  await db.close()
})

test('insertMany: a covering unique index (as ChatStore\'s users) reads the batch\'s values as keys only, and the records of those found; conflicts refused on LevelDB and memory', async t => {
  for (const backend of ['leveldb', 'memory']) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'levelkit-bulk-covering-'))
    const db = await open(backend === 'memory' ? { backend: 'memory' } : { location: dir })
    const users = db.collection('users', { indexes: { username: { unique: true, covering: true, key: u => u.username } } })
    await users.insert({ username: 'taken', n: 0 })
    // What the unique checks read: the index namespace's reads, values or not.
    const sublevel = modelOf(users).indexes.get('username').namespace.sublevel
    /** @type {boolean[]} */
    const reads = []
    const iterator = sublevel.iterator
    const getMany = sublevel.getMany
    const getSync = sublevel.getSync
    sublevel.iterator = function (/** @type {any} */ options, ...rest) { reads.push(options?.values !== false); return iterator.call(this, options, ...rest) }
    sublevel.getMany = function (/** @type {any[]} */ ...args) { reads.push(true); return getMany.apply(this, args) }
    sublevel.getSync = function (/** @type {any[]} */ ...args) { reads.push(true); return getSync.apply(this, args) }
    try {
      // 80 names (past the point reads), user0..user79, twice: the second load's spans overlap the first's.
      const rows = (/** @type {number} */ from) => Array.from({ length: 80 }, (_, i) => ({ username: `user${from + i}`, n: from + i }))
      t.is(await users.insertMany(rows(0), { batchSize: 80 }), 80, `${backend}: a batch of new names`)
      t.ok(reads.length > 0 && reads.every(values => !values), `${backend}: its unique values read as keys only (${JSON.stringify(reads)})`)
      reads.length = 0
      const err = await rejection(users.insertMany([...rows(100), { username: 'taken', n: -1 }, ...rows(200)], { batchSize: 81 }))
      t.is(err && err.code, 'LEVELKIT_UNIQUE', `${backend}: a name a stored record holds is refused`)
      t.is(err && err.written, 0, `${backend}: nothing written`)
      t.same(reads, [false, true], `${backend}: the keys, then the found one's record`)
      const inside = await rejection(users.insertMany([...rows(300), { username: 'user310', n: -2 }], { batchSize: 100 }))
      t.is(inside && inside.code, 'LEVELKIT_UNIQUE', `${backend}: a name twice in the input is refused`)
      t.is(await users.count(), 81, `${backend}: the first load and the stored record only`)
      t.is((await users.getBy('username', 'taken')).n, 0, `${backend}: the taken name keeps its record`)
    } finally {
      sublevel.iterator = iterator
      sublevel.getMany = getMany
      sublevel.getSync = getSync
    }
    t.ok((await db.check()).ok, `${backend}: check() is clean`)
    await db.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('insertMany: bad input is LEVELKIT_INVALID, nothing of its batch written', async t => {
  const { db, users } = await usersDb()
  const bad = await rejection(users.insertMany([user(1), user(2), user(3), 'nope', user(5)], { batchSize: 2 }))
  t.is(bad && bad.code, 'LEVELKIT_INVALID')
  t.is(bad && bad.written, 2)
  t.match(bad && bad.message, /insertMany/, 'the message names the call')
  t.is(await users.count(), 2)
  const withId = await rejection(users.insertMany([{ id: 7, email: 'a' }]))
  t.is(withId && withId.code, 'LEVELKIT_INVALID', 'records of a sequence collection come without ids')
  t.is((await rejection(users.insertMany(42))).code, 'LEVELKIT_INVALID', 'not iterable')
  t.is((await rejection(users.insertMany([], { batchsize: 3 }))).code, 'LEVELKIT_INVALID', 'unknown option')
  for (const batchSize of [0, 1.5, -1, '10', 1e9]) {
    t.is((await rejection(users.insertMany([], { batchSize }))).code, 'LEVELKIT_INVALID', `batchSize ${JSON.stringify(batchSize)}`)
  }
  let closed = false
  async function * stream () {
    try {
      for (let i = 30; ; i++) yield i === 33 ? user(1) : user(i)
    } finally {
      closed = true
    }
  }
  const refused = await rejection(users.insertMany(stream(), { batchSize: 2 }))
  t.is(refused && refused.code, 'LEVELKIT_UNIQUE')
  t.is(refused && refused.written, 2)
  t.ok(closed, 'the input is closed (return()) when the load stops early')
  const thrown = await rejection(users.insertMany((function * () { yield user(20); throw new Error('source broke') })(), { batchSize: 1 }))
  t.is(thrown && thrown.message, 'source broke', 'an error of the input itself is passed on')
  t.is(thrown && thrown.written, 1, 'with error.written')
  t.ok((await db.check()).ok, 'check() is clean')
  await db.close()
})

test('insertMany streams an async iterable: it never pulls far ahead of what is written', async t => {
  const { db, users } = await usersDb()
  const total = 5000
  const batchSize = 100
  let pulled = 0
  let ahead = 0
  async function * source () {
    for (let i = 1; i <= total; i++) {
      // Record i - 3 batches must be written by the time record i is pulled.
      if (i % 50 === 0 && i > 3 * batchSize && !(await users.has(i - 3 * batchSize))) ahead++
      pulled++
      yield user(i)
    }
  }
  t.is(await users.insertMany(source(), { batchSize }), total)
  t.is(pulled, total)
  t.is(ahead, 0, 'every record 3 batches back was written when a record was pulled')
  t.is(await users.count(), total)
  await db.close()
})

test('insertMany with function ids: an existing id is LEVELKIT_EXISTS; a sync iterable on LevelDB', async t => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'levelkit-bulk-'))
  try {
    let db = await open({ backend: 'leveldb', location: dir })
    let entries = db.collection('entries', { id: e => e.key, indexes: { tag: { key: e => e.tag } } })
    function * source (from, to) {
      for (let i = from; i < to; i++) yield { key: String(i).padStart(8, '0'), tag: i % 7 }
    }
    t.is(await entries.insertMany(source(0, 2500), { batchSize: 1000 }), 2500)
    const err = await rejection(entries.insertMany(source(2400, 2600), { batchSize: 50 }))
    t.is(err && err.code, 'LEVELKIT_EXISTS', 'an id that is stored')
    t.is(err && err.written, 0)
    const dup = await rejection(entries.insertMany([{ key: 'a', tag: 1 }, { key: 'b', tag: 1 }, { key: 'a', tag: 2 }]))
    t.is(dup && dup.code, 'LEVELKIT_EXISTS', 'an id twice in one batch')
    await db.close()
    db = await open({ backend: 'leveldb', location: dir })
    entries = db.collection('entries', { id: e => e.key, indexes: { tag: { key: e => e.tag } } })
    t.is(await entries.count(), 2500, 'every batch on disk after a reopen')
    t.is(await entries.count({ index: 'tag', eq: 3 }), 357, 'with its index entries')
    t.ok((await db.check()).ok, 'check() is clean')
    await db.close()
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('insertMany with function ids sees writes decided and not yet written', async t => {
  const db = await open({ backend: 'memory' })
  const entries = db.collection('entries', { id: e => e.key })
  await entries.insertMany([{ key: 'a' }, { key: 'c' }])
  // Neither awaited: decided, maybe not yet written, when the batch is decided.
  const deleting = entries.del('a')
  const inserting = entries.insert({ key: 'b' })
  t.is(await entries.insertMany([{ key: 'a', again: true }, { key: 'd' }]), 2, 'a key deleted just before is free')
  const err = await rejection(entries.insertMany([{ key: 'e' }, { key: 'b' }]))
  t.is(err && err.code, 'LEVELKIT_EXISTS', 'a key inserted just before is taken')
  await Promise.all([deleting, inserting])
  t.same((await entries.query().all()).map(e => e.key), ['a', 'b', 'c', 'd'])
  t.is((await entries.get('a')).again, true)
  await db.close()
})

test('insertMany with function ids between stored ids: point reads, one range read, or getMany()', async t => {
  const db = await open({ backend: 'memory' })
  const entries = db.collection('entries', { id: e => e.key })
  const key = (/** @type {number} */ i) => String(i).padStart(4, '0')
  const all = Array.from({ length: 1000 }, (_, i) => i)
  t.is(await entries.insertMany(all.filter(i => i % 10 !== 5).map(i => ({ key: key(i) }))), 900)
  // 100 new ids spread among 900 stored ones: too many in their span for one range read.
  t.is(await entries.insertMany(all.filter(i => i % 10 === 5).map(i => ({ key: key(i) })), { batchSize: 100 }), 100)
  const again = await rejection(entries.insertMany(all.filter(i => i % 10 === 0).map(i => ({ key: key(i + 1) })), { batchSize: 100 }))
  t.is(again && again.code, 'LEVELKIT_EXISTS', 'taken ids among many stored ones are found')
  for (const [batchSize, n, base] of [[100, 100, 1000], [200, 200, 2000], [10, 10, 3000]]) {
    const ids = all.slice(0, n).map(i => ({ key: key(base + i) }))
    ids.push({ key: key(500) })
    const err = await rejection(entries.insertMany(ids, { batchSize }))
    t.is(err && err.code, 'LEVELKIT_EXISTS', `batches of ${batchSize}: a stored id is found`)
    t.is(err && err.written, n, 'after the batches before it')
  }
  t.is(await entries.count(), 1310)
  t.ok((await db.check()).ok)
  await db.close()
})

test('insertMany while a newly declared index is built', async t => {
  const level = new MemoryLevel()
  let db = await open({ db: level })
  let items = db.collection('items', { id: r => r.code })
  t.is(await items.insertMany(Array.from({ length: 3000 }, (_, i) => ({ code: `c${i}`, n: i % 100 }))), 3000)
  await db.close()
  db = await open({ db: level })
  items = db.collection('items', { id: r => r.code, indexes: { n: { key: r => r.n } } })
  t.is(await items.insertMany(Array.from({ length: 2000 }, (_, i) => ({ code: `d${i}`, n: i % 100 })), { batchSize: 500 }), 2000)
  t.is(await items.count({ index: 'n', eq: 7 }), 50, 'the index holds the records loaded before and during its build')
  t.ok((await db.check()).ok, 'check() is clean')
  await db.close()
})

test('insertMany in a db.write() scope is part of its one batch', async t => {
  const { db, users } = await usersDb()
  const err = await rejection(db.write(async w => {
    await users.in(w).insertMany([user(1), user(2)], { batchSize: 1 })
    await users.in(w).insert(user(1))
  }))
  t.is(err && err.code, 'LEVELKIT_UNIQUE')
  t.is(await users.count(), 0, 'nothing written: the scope failed')
  await db.write(async w => {
    t.is(await users.in(w).insertMany([user(1), user(2)]), 2)
  })
  t.is(await users.count(), 2)
  await db.close()
})

test('putMany: [id, record] entries, replacing records and their index entries, in batches', async t => {
  const { db, users } = await usersDb()
  await users.insertMany([1, 2, 3].map(user))
  t.is(await users.putMany([[2, { email: 'two@x' }], [10, user(10)], [3, user(3)]], { batchSize: 2 }), 3)
  t.is(await users.getBy('email', 'u2@x'), undefined, 'the old entry is gone')
  t.is((await users.getBy('email', 'two@x')).id, 2)
  t.is(await users.insert(user(11)), 11, 'the sequence was raised past a put id')
  const err = await rejection(users.putMany(new Map([[20, user(20)], [21, user(21)], [22, { email: 'two@x' }]]), { batchSize: 2 }))
  t.is(err && err.code, 'LEVELKIT_UNIQUE', 'a value another stored record holds')
  t.is(err && err.written, 2)
  const swap = await rejection(users.putMany([[1, { email: 'u3@x' }], [3, { email: 'u1@x' }]]))
  t.is(swap && swap.code, 'LEVELKIT_UNIQUE', 'records are put one after the other')
  for (const bad of [[[1]], [5], [[0, {}]], [[1, 'x']]]) {
    t.is((await rejection(users.putMany(bad))).code, 'LEVELKIT_INVALID', `bad entry ${JSON.stringify(bad)}`)
  }
  t.ok((await db.check()).ok, 'check() is clean')
  await db.close()
})

test('appendMany: gap-free sequence numbers per parent, in batches', async t => {
  const db = await open({ backend: 'memory' })
  const chats = db.collection('chats')
  const messages = db.children('messages', { parent: chats })
  const blocks = db.children('blocked', { parent: chats, blockSize: 4 })
  const chat = await chats.insert({})
  await messages.append(chat, 'first')
  async function * texts (n) { for (let i = 0; i < n; i++) yield `m${i}` }
  t.is(await messages.appendMany(chat, texts(25), { batchSize: 10 }), 25)
  t.is(await messages.append(chat, 'last'), 27, 'the sequence went on')
  t.same(await messages.range(chat).all(), ['first', ...Array.from({ length: 25 }, (_, i) => `m${i}`), 'last'])
  t.is(await blocks.appendMany(chat, ['a', 'b', 'c', 'd', 'e', 'f'], { batchSize: 4 }), 6)
  const seqs = []
  for await (const seq of blocks.range(chat).keys()) seqs.push(seq)
  t.same(seqs, [1, 2, 3, 4, 5, 6], 'blocks too')
  const missing = await rejection(messages.appendMany(999, ['x']))
  t.is(missing && missing.code, 'LEVELKIT_NOT_FOUND')
  t.is(missing && missing.written, 0)
  const bad = await rejection(messages.appendMany(chat, ['ok', 'ok', undefined], { batchSize: 2 }))
  t.is(bad && bad.code, 'LEVELKIT_INVALID')
  t.is(bad && bad.written, 2)
  t.is(await messages.append(chat, 'after'), 30, 'no seq of the refused batch was used')
  t.ok((await db.check()).ok, 'check() is clean')
  await db.close()
})

test('appendMany into blocks: each block built and put once per batch, and the database byte for byte what append() one by one stores (LevelDB)', async t => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'levelkit-bulk-blocks-'))
  // Mid-block starts, a batch spanning several blocks, batches of one and of none.
  const plan = [['one', 2], ['many', 11], ['many', 1], ['many', 0], ['one', 1], ['many', 9]]
  const texts = (/** @type {number} */ from, /** @type {number} */ n) => Array.from({ length: n }, (_, i) => ({ text: `m${from + i}`, at: from + i }))
  const puts = { count: 0 }
  const put = WriteScope.prototype.put
  /** @param {string} name @param {boolean} bulk */
  async function load (name, bulk) {
    const location = path.join(dir, name)
    const db = await open({ backend: 'leveldb', location })
    const chats = db.collection('chats')
    const messages = db.children('messages', { parent: chats, blockSize: 4 })
    const chat = await chats.insert({})
    let n = 0
    let blockPuts = 0
    for (const [how, count] of plan) {
      const values = texts(n, count)
      n += count
      puts.count = 0
      if (how === 'many' && bulk) await messages.appendMany(chat, values, { batchSize: 100 })
      else for (const value of values) await messages.append(chat, value)
      blockPuts += puts.count
    }
    t.same(await messages.range(chat).all(), texts(0, n), `${name}: the children in order`)
    t.ok((await db.check()).ok, `${name}: check() is clean`)
    await db.close()
    return { location, blockPuts }
  }
  WriteScope.prototype.put = function (namespace, key, value) {
    if (namespace.name.includes('messages') && typeof value === 'string' && value.startsWith('[[')) puts.count++
    return put.call(this, namespace, key, value)
  }
  try {
    const bulk = await load('bulk', true)
    const one = await load('one', false)
    // 2 + 11 + 1 + 1 + 9 appended: blocks [1-4] [5-8] [9-12] [13-16] [17-20] [21-24];
    // one by one, one put per child (24); in bulk, one per block a batch touches:
    // 2 (one by one) + 4 (3-13: blocks 1, 2, 3, 4) + 1 (14) + 1 (15, one) + 3 (16-24: blocks 4, 5, 6).
    t.is(one.blockPuts, 24, 'append() one by one: a put per child')
    t.is(bulk.blockPuts, 11, 'appendMany(): a put per block per batch')
    const dump = async (/** @type {string} */ location) => {
      const level = new ClassicLevel(location, { keyEncoding: 'hex', valueEncoding: 'hex' })
      const all = await level.iterator().all()
      await level.close()
      return all
    }
    const [a, b] = [await dump(bulk.location), await dump(one.location)]
    t.is(a.filter(([, value]) => Buffer.from(value, 'hex').toString().startsWith('[[')).length, 6, 'six blocks stored')
    t.same(a, b, 'the same keys and values, byte for byte')
  } finally {
    WriteScope.prototype.put = put
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('crash: SIGKILL mid-load leaves whole batches only and a clean check()', async t => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'levelkit-bulk-crash-'))
  const location = path.join(dir, 'db')
  const batchSize = 500
  try {
    let loaded = 0
    for (let cycle = 0; cycle < 3; cycle++) {
      const wrong = await killCycle(WORKER, [location, String(batchSize)], async child => {
        // Kill it once it has written a few batches, mid-load.
        await new Promise(resolve => child.on('message', message => { if (message === 'batches') resolve() }))
        await new Promise(resolve => setTimeout(resolve, 20 + cycle * 15))
      })
      t.is(wrong, null, `cycle ${cycle}: killed mid-load`)
      const db = await open({ backend: 'leveldb', location })
      const items = db.collection('items', { indexes: { code: { unique: true, key: r => r.code } } })
      const all = await items.query().all()
      t.is(all.length % batchSize, 0, `cycle ${cycle}: ${all.length} records, whole batches only`)
      t.ok(all.length > loaded, `cycle ${cycle}: the load made progress`)
      t.ok(all.every((r, i) => r.id === i + 1 && r.code === `c${i}`), 'the records in input order, ids from 1')
      t.is(await items.count({ index: 'code' }), all.length, 'one index entry per record')
      const report = await db.check()
      t.ok(report.ok, `cycle ${cycle}: check() is clean`)
      loaded = all.length
      await db.close()
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

/** A memory-level whose batches wait at a gate before they are applied. */
class GatedLevel extends MemoryLevel {
  constructor () {
    super()
    /** @type {Promise<void> | null} */
    this.gate = null
    /** @type {(() => void) | null} called when a batch reaches the gate */
    this.arrived = null
  }

  /** @param {any} operations @param {any} options */
  async _batch (operations, options) {
    if (this.gate !== null) {
      this.arrived?.()
      await this.gate
    }
    return super._batch(operations, options)
  }
}

test('a bulk batch in flight: what a read of its keys finds meanwhile is not cached behind it', async t => {
  const level = new GatedLevel()
  const db = await open({ db: level })
  const entries = db.collection('entries', { id: e => e.key, indexes: { tag: { key: e => e.tag } } })
  for (const cached of [false, true]) {
    // With nothing cached the batch skips the caches' bookkeeping per key;
    // with something cached, it does it key by key.
    const sizes = Object.values(db.stats()).map(s => s.size)
    if (cached) t.ok(sizes.some(size => size > 0), 'something is cached')
    else t.ok(sizes.every(size => size === 0), 'nothing is cached')
    let open = () => {}
    level.gate = new Promise(resolve => { open = resolve })
    const arrived = new Promise(resolve => { level.arrived = () => resolve(undefined) })
    const key = cached ? 'b' : 'a'
    const loading = entries.insertMany([{ key, tag: 2 }])
    await arrived
    t.is(await entries.get(key), undefined, 'read before the batch is applied')
    t.is(await entries.count({ index: 'tag', eq: 2 }), cached ? 1 : 0, 'and its index entry')
    level.gate = null
    open()
    t.is(await loading, 1)
    t.same(await entries.get(key), { key, tag: 2 }, 'read after it is written: the record, not a cached absence')
    t.same((await entries.query({ index: 'tag', eq: 2 }).all()).map(e => e.key), cached ? ['a', 'b'] : ['a'])
  }
  t.ok((await db.check()).ok)
  await db.close()
})

test('insertMany pulls the items of a batch from a sync iterable without waiting between them', async t => {
  const { db, users } = await usersDb()
  let ticks = 0
  let ticksInBatch = 0
  function * source () {
    for (let i = 1; i <= 300; i++) {
      if (i % 100 === 1) {
        ticks = 0
        queueMicrotask(() => { ticks++ })
      }
      if (i % 100 === 0) ticksInBatch += ticks
      yield user(i)
    }
  }
  t.is(await users.insertMany(source(), { batchSize: 100 }), 300)
  t.is(ticksInBatch, 0, 'no microtask ran while a batch was pulled')
  t.is(await users.count(), 300)
  await db.close()
})

test('insertMany with function ids in increasing order: a stored id inside the span of a batch', async t => {
  const db = await open({ backend: 'memory' })
  const entries = db.collection('entries', { id: e => e.key })
  const key = (/** @type {number} */ i) => String(i).padStart(5, '0')
  t.is(await entries.insertMany([...Array.from({ length: 100 }, (_, i) => ({ key: key(i) })), { key: key(5000) }, { key: key(5100) }]), 102)
  for (const [from, taken] of [[4901, 5000], [5001, 5100], [5030, 5100]]) {
    // Past POINT_READS ids, with two stored ones at most in their span: one range read.
    const batch = Array.from({ length: 100 }, (_, i) => ({ key: key(from + i) }))
    const err = await rejection(entries.insertMany(batch, { batchSize: 100 }))
    t.is(err && err.code, 'LEVELKIT_EXISTS', `ids ${from}.. hold a stored one`)
    t.is(err && err.id, key(taken))
  }
  t.is(await entries.insertMany(Array.from({ length: 99 }, (_, i) => ({ key: key(5001 + i) })), { batchSize: 100 }), 99, 'the ids between them are free')
  t.is(await entries.count(), 201)
  t.ok((await db.check()).ok)
  await db.close()
})

test('relation.addMany: ids from an array, an iterable or an async iterable, in batches', async t => {
  const db = await open({ backend: 'memory' })
  const groups = db.collection('groups')
  const docs = db.collection('docs')
  const members = db.relation('members', { from: groups, to: docs })
  const listed = db.relation('listed', { from: groups, to: docs, lists: ['from', 'to'] })
  const g = await groups.insert({})
  t.is(await docs.insertMany(Array.from({ length: 30 }, (_, i) => ({ i }))), 30)
  async function * ids (/** @type {number} */ from, /** @type {number} */ to) {
    for (let id = from; id <= to; id++) yield id
  }
  for (const relation of [members, listed]) {
    t.is(await relation.addMany(g, ids(1, 25), { batchSize: 10 }), 25, 'an async iterable')
    t.is(await relation.addMany(g, new Set([5, 26, 27]), { batchSize: 2 }), 2, 'a Set: edges already there count as not new')
    t.is(await relation.addMany(g, [28, 28]), 1, 'an id twice counts once')
    const err = await rejection(relation.addMany(g, ids(29, 32), { batchSize: 2 }))
    t.is(err && err.code, 'LEVELKIT_NOT_FOUND', 'doc 31 is missing')
    t.is(err && err.id, 31)
    t.is(err && err.written, 2, 'the batch before it')
    t.same(await relation.to(g).all(), Array.from({ length: 30 }, (_, i) => i + 1), 'nothing of its batch: 32 is not linked')
    t.same(await relation.from(29).all(), [g], 'the reverse direction too')
    const bad = await rejection(relation.addMany(g, 5))
    t.is(bad && bad.code, 'LEVELKIT_INVALID', 'not an iterable')
    t.is((await rejection(relation.addMany(g, [1], { batchSize: 0 }))).code, 'LEVELKIT_INVALID', 'a bad batchSize')
  }
  t.ok(await members.remove(g, 30))
  const failed = await rejection(db.write(async w => {
    t.is(await members.in(w).addMany(g, [30, 1], { batchSize: 1 }), 1, 'in a scope')
    throw new Error('the scope fails')
  }))
  t.is(failed && failed.message, 'the scope fails')
  t.notOk(await members.has(g, 30), 'in a scope, all of it is one operation of the scope')
  await db.write(async w => {
    t.is(await members.in(w).addMany(g, ids(29, 30), { batchSize: 1 }), 1)
  })
  t.ok(await members.has(g, 30))
  t.ok((await db.check()).ok, 'check() is clean')
  await db.close()
})

test('relation.addMany with the forward direction as lists (lists: [\'to\']): the list read and put once per batch, the same lists, answers and refusals as add() one by one', async t => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'levelkit-bulk-addall-'))
  try {
    for (const backend of ['leveldb', 'memory']) {
      const db = await open(backend === 'leveldb' ? { backend, location: dir } : { backend })
      const groups = db.collection('groups')
      const docs = db.collection('docs')
      // Sequence ids, and function ids (strings: a list decoded, not searched as bytes).
      const tags = db.collection('tags', { id: (/** @type {any} */ tag) => tag.name })
      const bulk = db.relation('bulk', { from: groups, to: docs, lists: ['to'] })
      const single = db.relation('single', { from: groups, to: docs, lists: ['to'] })
      const tagged = db.relation('tagged', { from: groups, to: tags, lists: ['to'] })
      const taggedSingle = db.relation('taggedSingle', { from: groups, to: tags, lists: ['to'] })
      t.is(await docs.insertMany(Array.from({ length: 40 }, (_, i) => ({ i }))), 40)
      await tags.insertMany(['b', 'a', 'é', 'c', 'aa'].map(name => ({ name })))
      const g = await groups.insert({})
      const h = await groups.insert({})
      const batches = [[7, 3, 3, 12, 1], [5, 3, 40, 2, 12], [39]]
      for (const ids of batches) {
        let listPuts = -1
        const added = await db.write(async (/** @type {any} */ w) => {
          const n = await bulk.in(w).addMany(g, ids)
          listPuts = w.ops.filter((/** @type {any} */ op) => op.namespace.name === 'bulk.list.to').length
          return n
        })
        t.is(listPuts, 1, `${backend}: addMany(${ids}) puts the list once`)
        let one = 0
        for (const id of ids) if (await single.add(g, id)) one++
        t.is(added, one, `${backend}: as many new edges as add() one by one`)
      }
      t.same(await bulk.to(g).all(), await single.to(g).all(), `${backend}: the same list, in order`)
      t.same(await db.level.get(new Uint8Array([...new TextEncoder().encode('!bulk.list.to!'), ...encodeTupleOf(g)]), { keyEncoding: 'view', valueEncoding: 'view' }),
        await db.level.get(new Uint8Array([...new TextEncoder().encode('!single.list.to!'), ...encodeTupleOf(g)]), { keyEncoding: 'view', valueEncoding: 'view' }), `${backend}: the same bytes stored`)
      t.same(await bulk.from(3).all(), [g], `${backend}: the reverse direction has each edge`)
      t.is(await tagged.addMany(h, ['c', 'a', 'é', 'a']), 3, `${backend}: string ids, one twice`)
      for (const name of ['c', 'a', 'é', 'a']) await taggedSingle.add(h, name)
      t.same(await tagged.to(h).all(), await taggedSingle.to(h).all(), `${backend}: the same list of string ids`)
      t.is(await tagged.addMany(h, ['aa', 'c']), 1, `${backend}: an id already listed is not new`)
      // Refusals: the first missing endpoint, in order, and nothing of its batch.
      const before = await bulk.to(g).all()
      const missing = await rejection(bulk.addMany(g, [20, 41, 42, 21]))
      t.is(missing && missing.code, 'LEVELKIT_NOT_FOUND', `${backend}: a missing doc is refused`)
      t.is(missing && missing.id, 41, `${backend}: the first missing one`)
      t.same(await bulk.to(g).all(), before, `${backend}: nothing of its batch is written`)
      t.same(await bulk.from(20).all(), [], `${backend}: not its reverse half either`)
      const noGroup = await rejection(bulk.addMany(99, [1, 2]))
      t.is(noGroup && noGroup.code, 'LEVELKIT_NOT_FOUND', `${backend}: a missing group is refused`)
      t.is(noGroup && noGroup.id, 99)
      t.same(await bulk.from(1).all(), [g], `${backend}: nothing written for it`)
      const inScope = await rejection(db.write(async (/** @type {any} */ w) => {
        await bulk.in(w).addMany(g, [30, 31])
        throw new Error('the scope fails')
      }))
      t.is(inScope && inScope.message, 'the scope fails')
      t.notOk(await bulk.has(g, 30), `${backend}: in a failed scope, nothing`)
      t.ok((await db.check()).ok, `${backend}: check() is clean`)
      await db.close()
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('relation.addMany in flight: a list read meanwhile is not cached behind it', async t => {
  const level = new GatedLevel()
  const db = await open({ db: level })
  const groups = db.collection('groups')
  const docs = db.collection('docs')
  const members = db.relation('members', { from: groups, to: docs })
  const g = await groups.insert({})
  await docs.insertMany([{}, {}, {}])
  t.ok(Object.entries(db.stats()).every(([name, s]) => !name.includes('members') || s.size === 0), 'no list of members is cached')
  let release = () => {}
  level.gate = new Promise(resolve => { release = resolve })
  const arrived = new Promise(resolve => { level.arrived = () => resolve(undefined) })
  const adding = members.addMany(g, [1, 2])
  await arrived
  // The reverse direction: no point read of its edges fills its caches while the batch is decided.
  t.same(await members.from(2).all(), [], 'read before the batch is applied')
  level.gate = null
  release()
  t.is(await adding, 2)
  t.same(await members.from(2).all(), [g], 'read after it is written: the list, not a cached empty one')
  t.same(await members.to(g).all(), [1, 2])
  await db.close()
})

test('increasingKeys: a group is written without a lookup id per op only if no namespace has a key twice', t => {
  const a = /** @type {any} */ ({ name: 'a' })
  const b = /** @type {any} */ ({ name: 'b' })
  const op = (/** @type {any} */ namespace, /** @type {number[]} */ key) => /** @type {any} */ ({ type: 'put', key: Uint8Array.from(key), namespace })
  t.ok(increasingKeys([]), 'no ops')
  t.ok(increasingKeys([op(a, [1]), op(a, [1, 0]), op(a, [2])]), 'one namespace, increasing')
  t.ok(increasingKeys([op(a, [5]), op(b, [1]), op(a, [6]), op(b, [2])]), 'two namespaces interleaved, each increasing')
  t.notOk(increasingKeys([op(a, [5]), op(b, [1]), op(a, [5])]), 'a key of one namespace twice, another between them')
  t.notOk(increasingKeys([op(a, [5]), op(b, [9]), op(a, [4])]), 'a key lower than one before it')
  t.notOk(increasingKeys([op(a, [1]), op(a, [1])]), 'the same key twice in a row')
  t.end()
})

test('insertMany decides each batch as insert()s one by one would: ids, unique values, validation, key functions', async t => {
  const emails = ['a', 'b', 'c', 'd', undefined]
  const record = fc.record({
    email: fc.constantFrom(...emails),
    tags: fc.array(fc.constantFrom('x', 'y', 'z', 'w'), { maxLength: 2 }),
    bad: fc.boolean({ freq: 8 }),
    boom: fc.boolean({ freq: 8 })
  })
  /** @param {boolean} sequence */
  async function usersOf (sequence) {
    const db = await open({ backend: 'memory' })
    const users = db.collection('users', {
      ...(sequence ? {} : { id: (/** @type {any} */ u) => u.code }),
      validate: (/** @type {any} */ u) => { if (u.bad) throw new Error('bad') },
      indexes: {
        tag: { unique: true, multi: true, key: (/** @type {any} */ u) => u.tags },
        email: { unique: true, key: (/** @type {any} */ u) => { if (u.boom) throw new Error('boom'); return u.email } },
        n: { key: (/** @type {any} */ u) => u.tags.length }
      }
    })
    return { db, users }
  }
  /** @param {any} query */
  const keysOf = async query => {
    const keys = []
    for await (const key of query.keys()) keys.push(key)
    return keys
  }
  /** @param {any} users */
  const contents = async users => ({
    records: await users.query().all(),
    tags: await keysOf(users.query({ index: 'tag' })),
    emails: await keysOf(users.query({ index: 'email' })),
    n: await keysOf(users.query({ index: 'n' }))
  })
  await fc.assert(fc.asyncProperty(
    fc.boolean(), fc.array(record, { maxLength: 3 }), fc.array(record, { minLength: 1, maxLength: 12 }), fc.integer({ min: 1, max: 5 }),
    async (sequence, storedRecords, input, batchSize) => {
      const codes = sequence ? [] : input.map((_, i) => `k${i % 9}`)
      const withCode = (/** @type {any[]} */ rs, /** @type {string} */ prefix) => rs.map((r, i) => sequence ? r : { ...r, code: codes[i] ?? `${prefix}${i}` })
      const stored = withCode(storedRecords.map(r => ({ ...r, bad: false, boom: false })), 's').map((r, i) => sequence ? r : { ...r, code: `k${i * 4}` })
      const records = withCode(input, 'k')
      const bulk = await usersOf(sequence)
      const one = await usersOf(sequence)
      for (const { users } of [bulk, one]) {
        for (const r of stored) await users.insert(r).catch(() => {})
      }
      const err = await rejection(bulk.users.insertMany(records, { batchSize }))
      let expected = null
      let written = 0
      for (let from = 0; from < records.length && expected === null; from += batchSize) {
        const batch = records.slice(from, from + batchSize)
        expected = await rejection(one.db.write(async (/** @type {any} */ w) => { for (const r of batch) await one.users.in(w).insert(r) }))
        if (expected === null) written += batch.length
      }
      const same = (err === null) === (expected === null) &&
        (err === null || (err.code === expected.code && err.message === expected.message && err.written === written))
      if (!same) t.fail(`insertMany: ${err && err.message} (written ${err && err.written}); one by one: ${expected && expected.message} (written ${written})`)
      const [got, want] = [await contents(bulk.users), await contents(one.users)]
      if (JSON.stringify(got) !== JSON.stringify(want)) t.fail(`different contents: ${JSON.stringify(got)} against ${JSON.stringify(want)}`)
      await bulk.db.close()
      await one.db.close()
      return same && JSON.stringify(got) === JSON.stringify(want)
    }), { numRuns: 150 })
  t.pass('150 random loads')
})

test('insertMany checks unique values against writes decided and not yet written', async t => {
  const { db, users } = await usersDb()
  await users.insertMany([user(1), user(2)])
  // Neither awaited: decided, maybe not yet written, when the batch is decided.
  const deleting = users.del(1)
  const inserting = users.insert(user(3))
  t.is(await users.insertMany([user(1), user(4)]), 2, 'a value deleted just before is free')
  const err = await rejection(users.insertMany([user(5), user(3)]))
  t.is(err && err.code, 'LEVELKIT_UNIQUE', 'a value inserted just before is taken')
  await Promise.all([deleting, inserting])
  t.same((await users.query().all()).map(u => u.email), ['u2@x', 'u3@x', 'u1@x', 'u4@x'])
  t.ok((await db.check()).ok)
  await db.close()
})

test('encodeJson writes every UTF-16 code unit, alone and with a neighbour, as JSON.stringify does', t => {
  // The check for characters to escape decides between writing a string as
  // it is and JSON.stringify(): one wrong character class is wrong JSON.
  let wrong = 0
  for (let unit = 0; unit <= 0xffff; unit++) {
    const c = String.fromCharCode(unit)
    for (const s of [c, `a${c}`, `${c}\udc00`, `\ud83d${c}`]) {
      if (encodeJson(s, 'v') !== JSON.stringify(s) || encodeJsonWithCopy({ s }, 'v')[0] !== JSON.stringify({ s })) wrong++
    }
  }
  t.is(wrong, 0, 'all 65,536 code units, lone and paired surrogates among them')
  t.end()
})

test('encodeJsonWithCopy with freeze: the copy is frozen all the way down; the message of a refusal is made only for it', t => {
  const [json, copy] = encodeJsonWithCopy({ a: { b: [1, { c: 'x' }] }, d: 2 }, 'v', true)
  t.is(json, '{"a":{"b":[1,{"c":"x"}]},"d":2}')
  t.ok(Object.isFrozen(copy) && Object.isFrozen(copy.a) && Object.isFrozen(copy.a.b) && Object.isFrozen(copy.a.b[1]), 'every level frozen')
  const [, unfrozen] = encodeJsonWithCopy({ a: { b: [] } }, 'v')
  t.ok(!Object.isFrozen(unfrozen) && !Object.isFrozen(unfrozen.a) && !Object.isFrozen(unfrozen.a.b), 'not frozen without freeze')
  let made = 0
  const what = () => { made++; return 'Record 7' }
  encodeJsonWithCopy({ a: 1 }, what, true)
  t.is(made, 0, 'no message for a value that is stored')
  let err = null
  try { encodeJsonWithCopy({ a: { b: NaN } }, what, true) } catch (e) { err = e }
  t.is(err && err.code, 'LEVELKIT_INVALID')
  t.match(err && err.message, /^Record 7 has a non-finite number \(NaN\) at a\.b/, 'the message, made for the refusal')
  t.end()
})

test('insertMany and putMany refuse values JSON would change, and ids a key cannot hold: LEVELKIT_INVALID, nothing of the batch written', async t => {
  const db = await open({ backend: 'memory' })
  const users = db.collection('users')
  const entries = db.collection('entries', { id: e => e.key })
  // Each made on top of the record's other properties (its key, for function ids).
  const bad = [
    ['NaN', (/** @type {object} */ base) => ({ ...base, a: NaN }), 'a'],
    ['-0', (/** @type {object} */ base) => ({ ...base, a: { b: -0 } }), 'a.b'],
    ['Infinity in an array', (/** @type {object} */ base) => ({ ...base, a: [1, Infinity] }), 'a[1]'],
    ['a Date', (/** @type {object} */ base) => ({ ...base, when: new Date(0) }), 'when'],
    ['a toJSON', (/** @type {object} */ base) => ({ ...base, a: { toJSON: () => 1 } }), 'a'],
    ['a hole', (/** @type {object} */ base) => ({ ...base, a: [1, , 2] }), 'a[1]'], // eslint-disable-line no-sparse-arrays
    ['a symbol-keyed property', (/** @type {object} */ base) => ({ ...base, a: { [Symbol('s')]: 1 } }), 'a'],
    ['a bigint', (/** @type {object} */ base) => ({ ...base, a: 1n }), 'a'],
    ['a getter that throws', (/** @type {object} */ base) => Object.defineProperty({ ...base }, 'a', { get () { throw new Error('no') }, enumerable: true }), 'a']
  ]
  for (const [what, make, where] of /** @type {Array<[string, (base: object) => any, string]>} */ (bad)) {
    for (const [call, run] of /** @type {Array<[string, () => Promise<unknown>]>} */ ([
      ['insertMany() (sequence)', () => users.insertMany([{ n: 1 }, make({}), { n: 3 }], { batchSize: 2 })],
      ['insertMany() (function ids)', () => entries.insertMany([{ key: 'k1' }, make({ key: 'k2' }), { key: 'k3' }], { batchSize: 2 })],
      ['putMany()', () => users.putMany([[1, { n: 1 }], [2, make({})], [3, { n: 3 }]], { batchSize: 2 })]
    ])) {
      const err = await rejection(run())
      t.is(err && err.code, 'LEVELKIT_INVALID', `${call} refuses ${what}`)
      t.is(err && err.written, 0, 'nothing written')
      if (err && !err.message.includes(` at ${where}`)) t.fail(`${call}: the message names ${where}: ${err.message}`)
      if (err && !/\b(Record|entry) 1 passed to (insertMany|putMany)\(\)/.test(err.message)) t.fail(`${call}: the message names the record: ${err.message}`)
    }
  }
  for (const key of ['\ud800', 'a\udc00b', ['x', '\udfff']]) {
    const err = await rejection(entries.insertMany([{ key: 'ok' }, { key }]))
    t.is(err && err.code, 'LEVELKIT_INVALID', `an id with a lone surrogate: ${JSON.stringify(key)}`)
    t.match(err && err.message, /lone surrogate/)
    t.is(err && err.written, 0)
  }
  t.is(await users.count(), 0, 'nothing stored')
  t.is(await entries.count(), 0, 'nothing stored')
  // A lone surrogate inside a value is JSON (escaped), stored and read back as it was.
  t.is(await entries.insertMany([{ key: 'lone', text: 'a\ud800b' }]), 1)
  t.is((await entries.get('lone')).text, 'a\ud800b')
  t.ok((await db.check()).ok)
  await db.close()
})

test('insertMany with function ids: the id function gets a copy frozen all the way down, read once', async t => {
  const db = await open({ backend: 'memory' })
  let reads = 0
  const record = Object.defineProperty({ key: 'a', nested: { list: [1] } }, 'flaky', { get: () => reads++ === 0 ? 1 : NaN, enumerable: true })
  /** @type {any[]} */
  const seen = []
  const entries = db.collection('entries', {
    id: (/** @type {any} */ e) => {
      seen.push(Object.isFrozen(e) && Object.isFrozen(e.nested) && Object.isFrozen(e.nested.list))
      try { e.nested.list.push(2) } catch {}
      return e.key
    }
  })
  t.is(await entries.insertMany([record]), 1)
  t.same(seen[0], true, 'frozen at every level')
  t.is(reads, 1, 'each property read once')
  t.same(await entries.get('a'), { key: 'a', nested: { list: [1] }, flaky: 1 }, 'what was read and checked is stored')
  await db.close()
})

// A sorted load reads the store once for a run of batches: the gap it found
// free holds only while nothing but the load decides ops (lib/read-keys.js, Gap).
const padded = (/** @type {number} */ i) => String(i).padStart(5, '0')
/** @param {number} from @param {number} to */
const keyed = (from, to) => Array.from({ length: to - from }, (_, i) => ({ key: padded(from + i) }))

test('insertMany in increasing order: an id stored past the first batch, by put() or behind levelkit\'s back, is found', async t => {
  const level = new MemoryLevel()
  const db = await open({ db: level })
  const entries = db.collection('entries', { id: e => e.key })
  await entries.put(padded(150), { key: padded(150), mine: true })
  let err = await rejection(entries.insertMany(keyed(0, 300), { batchSize: 100 }))
  t.is(err && err.code, 'LEVELKIT_EXISTS', 'an id put before the load')
  t.is(err && err.id, padded(150))
  t.is(err && err.written, 100, 'after the batch before it')
  t.same(await entries.get(padded(150)), { key: padded(150), mine: true }, 'not overwritten')
  // The same record written to the store directly, under a key past what is loaded.
  const [[key, value]] = await level.iterator({ gte: '', keyEncoding: 'view', valueEncoding: 'view' }).all().then(all => all.filter(([k]) => Buffer.from(k).toString('latin1').endsWith(padded(150))))
  const behind = Uint8Array.from(key)
  behind[behind.length - 1] = '7'.charCodeAt(0) // 00157
  await level.put(behind, value, { keyEncoding: 'view', valueEncoding: 'view' })
  err = await rejection(entries.insertMany(keyed(151, 400), { batchSize: 2 }))
  t.is(err && err.code, 'LEVELKIT_EXISTS', 'an id written behind levelkit\'s back before the load')
  t.is(err && err.id, padded(157))
  t.is(err && err.written, 6)
  t.same(JSON.parse(await level.get(behind, { keyEncoding: 'view', valueEncoding: 'utf8' })), { key: padded(150), mine: true }, 'not overwritten')
  await db.close()
})

test('insertMany in increasing order: a put() decided between two batches, into the span of the next, is found', async t => {
  const db = await open({ backend: 'memory' })
  const entries = db.collection('entries', { id: e => e.key })
  async function * source () {
    yield * keyed(0, 100)
    // Decided after the first batch, before the second.
    await entries.put(padded(150), { key: padded(150), mine: true })
    yield * keyed(100, 300)
  }
  const err = await rejection(entries.insertMany(source(), { batchSize: 100 }))
  t.is(err && err.code, 'LEVELKIT_EXISTS')
  t.is(err && err.id, padded(150))
  t.is(err && err.written, 100)
  t.same(await entries.get(padded(150)), { key: padded(150), mine: true }, 'not overwritten')
  t.is(await entries.count(), 101)
  t.ok((await db.check()).ok)
  await db.close()
})

/** A memory-level that says when an iterator is made. */
class WatchedLevel extends GatedLevel {
  constructor () {
    super()
    /** @type {(() => void) | null} */
    this.reading = null
  }

  /** @param {any} options */
  _iterator (options) {
    this.reading?.()
    return super._iterator(options)
  }
}

test('insertMany in increasing order: a write decided and not yet written past the first batch is found after it lands', async t => {
  const level = new WatchedLevel()
  const db = await open({ db: level })
  const entries = db.collection('entries', { id: e => e.key })
  let release = () => {}
  level.gate = new Promise(resolve => { release = resolve })
  const arrived = new Promise(resolve => { level.arrived = () => resolve(undefined) })
  // Decided, held at the gate: not in the store when the first batch reads it.
  const putting = entries.put(padded(150), { key: padded(150), mine: true })
  await arrived
  const read = new Promise(resolve => { level.reading = () => resolve(undefined) })
  async function * source () {
    yield * keyed(0, 100)
    await read
    // The first batch decided (everything after its read is synchronous
    // or a microtask), the put lands: the second batch finds it stored.
    await new Promise(resolve => setImmediate(resolve))
    level.gate = null
    release()
    await putting
    yield * keyed(100, 300)
  }
  const err = await rejection(entries.insertMany(source(), { batchSize: 100 }))
  t.is(err && err.code, 'LEVELKIT_EXISTS')
  t.is(err && err.id, padded(150))
  t.is(err && err.written, 100)
  t.same(await entries.get(padded(150)), { key: padded(150), mine: true }, 'not overwritten')
  t.ok((await db.check()).ok)
  await db.close()
})

test('putMany reads the records a batch replaces at once: an id twice in a batch, and writes decided and not yet written', async t => {
  const { db, users } = await usersDb()
  await users.insertMany([1, 2, 3].map(user))
  t.is(await users.putMany([[1, { email: 'a@x' }], [2, { email: 'b@x' }], [1, { email: 'c@x' }]]), 3)
  t.same(await users.get(1), { id: 1, email: 'c@x' }, 'the later put of an id wins')
  t.is(await users.getBy('email', 'a@x'), undefined, 'the entry of what it replaced is gone')
  t.is(await users.getBy('email', 'u1@x'), undefined)
  // Not awaited: decided, maybe not yet written, when the batch reads.
  const putting = users.put(3, { email: 'd@x' })
  const inserting = users.insert(user(4))
  t.is(await users.putMany([[3, { email: 'e@x' }], [4, { email: 'f@x' }]]), 2)
  await Promise.all([putting, inserting])
  t.is(await users.getBy('email', 'd@x'), undefined, 'a record put just before is replaced with its index entries')
  t.is(await users.getBy('email', 'u4@x'), undefined, 'a record inserted just before too')
  t.same((await users.query().all()).map(u => u.email), ['c@x', 'b@x', 'e@x', 'f@x'])
  t.ok((await db.check()).ok, 'check() is clean')
  await db.close()
})

test('insertMany with sequence ids: a record stored past the sequence, by put() or behind levelkit\'s back, is not overwritten', async t => {
  const level = new MemoryLevel()
  let db = await open({ db: level })
  let users = db.collection('users')
  t.is(await users.insertMany([{ n: 1 }, { n: 2 }]), 2)
  await users.put(10, { n: 10 })
  t.is(await users.insertMany([{ n: 11 }, { n: 12 }], { batchSize: 1 }), 2)
  t.same((await users.query().all()).map(u => u.id), [1, 2, 10, 11, 12], 'ids go on past a put id')
  // Record 20 written to the store directly, next to record 10.
  const [[key10, value10]] = (await level.iterator({ keyEncoding: 'view', valueEncoding: 'utf8' }).all()).filter(([, v]) => v === '{"id":10,"n":10}')
  const { encode } = await import('../lib/tuple.js')
  const prefix = key10.subarray(0, key10.length - encode(10).length)
  const key20 = new Uint8Array([...prefix, ...encode(20)])
  await db.close()
  await level.open()
  await level.put(key20, value10.replace('10', '20').replace('10', '20'), { keyEncoding: 'view', valueEncoding: 'utf8' })
  db = await open({ db: level })
  users = db.collection('users')
  t.is(await users.insertMany([{ n: 21 }, { n: 22 }]), 2)
  t.same((await users.query().all()).map(u => [u.id, u.n]), [[1, 1], [2, 2], [10, 10], [11, 11], [12, 12], [20, 20], [21, 21], [22, 22]], 'a load after opening goes on past the highest stored id')
  await db.close()
})
