// Ids taken in the statement that writes the batch (lib/deferred-ids.js,
// lib/backends/postgres-deferred.js): with locking: 'keys', createChat()
// takes a placeholder id and the batch's statement bumps the chats'
// sequence, so no process holds the sequence across its critical section.
// The guarantees of createChat() hold in every locking mode (the deferred
// path is taken with 'keys' only):
// - 4 processes creating chats with overlapping members: ids 1..N without
//   gap or duplicate; every chat's record holds its id and members; every
//   user's chat list holds each of its chats once, in id order; check() clean.
// - With 'keys': createChat() locks no key of the chats' sequence; a batch
//   the server refuses takes no id; the process's caches and another
//   database on the table see the real id at once (the notification names
//   the real keys); inserts of the public API mixed with createChat() in one
//   group; a process killed with SIGKILL mid-workload leaves no gap.
import test from 'tape'
import { ChatStore } from '../chat.js'
import { modelOf } from '../lib/model-handle.js'
import { encode, decode } from '../lib/tuple.js'
import { postgresForTests } from './util/postgres.js'
import { startWorker } from './util/shared-workers.js'
import { range } from './util/common.js'
import { prng } from './util/prng.js'
import { FAST, openShared } from './fixtures/postgres-shared-worker.js'
import { PLACEHOLDER_BASE, findPlaceholders, substitute, isPlaceholder } from '../lib/deferred-ids.js'
import { deferredStatement, basesOf } from '../lib/backends/postgres-deferred.js'
import { inlineValues } from '../lib/backends/postgres-literal.js'
import pg from 'pg'

const server = await postgresForTests(test)
const MODES = /** @type {const} */ (['keys', 'table', 'serializable'])

/** @param {number} ms */
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

/**
 * What createChat() stored, checked against itself: chat ids 1..N (N the
 * sequence), each record's id and members, each member's list of chats.
 * @param {any} t @param {ChatStore} store @param {number[]} userIds @param {string} what
 * @returns {Promise<number>} N
 */
async function checkChats (t, store, userIds, what) {
  const chats = await store.chats.query().all()
  const ids = chats.map((/** @type {any} */ c) => c.id)
  const last = await modelOf(store.chats).storedSequenceValue()
  t.deepEqual(ids, range(1, last), `${what}: chat ids are exactly 1..${last} (the sequence), no gap`)
  t.ok(chats.every((/** @type {any} */ c) => typeof c.id === 'number' && c.id <= last), `${what}: every record's JSON holds its id`)
  /** @type {Map<number, number[]>} */
  const expected = new Map(userIds.map(id => [id, []]))
  for (const chat of chats) for (const member of chat.members) expected.get(member)?.push(chat.id)
  let wrong = 0
  for (const userId of userIds) {
    const listed = await store.members.from(userId).all()
    if (JSON.stringify(listed) !== JSON.stringify(expected.get(userId))) wrong++
  }
  t.is(wrong, 0, `${what}: every user's list holds its chats once each, in id order`)
  for (const chat of chats) {
    const members = await store.members.to(chat.id).all()
    if (JSON.stringify(members) !== JSON.stringify(chat.members)) wrong++
  }
  t.is(wrong, 0, `${what}: every chat's member list is its record's members`)
  t.deepEqual((await store.db.check()).problems, [], `${what}: check() is clean`)
  return last
}

/**
 * A chat record for `chats.insert()`, named `name`, of admin `adminId`.
 * @param {string} name @param {number} adminId
 */
const plainChat = (name, adminId) => ({ name, adminId, members: [], lastActivity: 0, createdAt: 0, private: false, passwordHash: null })

/**
 * `fn` on a new table shared with locking: 'keys': its database, a
 * ChatStore and `n` users; the database closed after.
 * @param {number} n @param {(opened: { db: any, store: ChatStore, userIds: number[] }) => Promise<void>} fn
 */
async function withKeysStore (n, fn) {
  const db = await openShared(server.connectionString, server.table(), 'keys')
  try {
    const { store, ids } = await users(db, n)
    await fn({ db, store, userIds: ids })
  } finally {
    await db.close()
  }
}

/** @param {any} db @param {number} n */
async function users (db, n) {
  const store = new ChatStore(db, { passwordCost: FAST })
  const ids = []
  for (let i = 0; i < n; i++) ids.push(await store.createUser({ username: `u${i}`, password: 'x' }))
  return { store, ids }
}

test('placeholder ids: found where levelkit writes an id (a key\'s element, a list, a JSON number), replaced by the real id\'s bytes', t => {
  const p = PLACEHOLDER_BASE + 70000
  t.ok(isPlaceholder(p) && isPlaceholder(Number.MAX_SAFE_INTEGER) && !isPlaceholder(PLACEHOLDER_BASE - 1), 'placeholders run from the base to MAX_SAFE_INTEGER')
  const key = encode([5, p, 'x'])
  t.deepEqual(findPlaceholders(key).map(f => [f.placeholder, f.text]), [[p, false]], 'in a tuple key: once, as a binary element')
  const ids = new Map([[p, 12], [p + 1, 13]])
  t.deepEqual(Buffer.from(substitute(key, ids)), Buffer.from(encode([5, 12, 'x'])), 'replaced: the key of [5, 12, \'x\']')
  const list = encode([[1, 7, p, p + 1]])
  t.deepEqual(Buffer.from(substitute(list, ids)), Buffer.from(encode([[1, 7, 12, 13]])), 'a list of ids: both replaced, in place')
  const json = `{"name":"n","text":"a ${p} \\"id\\":${p}","id":${p},"members":[${p + 1}, 3],"f":1.${p},"big":1${p}}`
  t.is(substitute(json, ids), `{"name":"n","text":"a ${p} \\"id\\":${p}","id":12,"members":[${p + 1}, 3],"f":1.${p},"big":1${p}}`, 'JSON: the record\'s "id" replaced; the same number in a string, an array, a fraction, a longer number left alone')
  t.is(substitute(`{"id":${p}5}`, ids), `{"id":${p}5}`, 'a longer "id" left alone')
  t.is(substitute(String(p + 1), ids), '13', 'a sequence\'s value')
  t.throws(() => substitute(encode([p + 2]), ids), /placeholder id/, 'a placeholder no insert took: an error, not a guess')
  // Written into one array of its final size (session 20): a view at an
  // offset into a larger buffer, binary and text placeholders in one item,
  // ids of 1 and 16 digits (the text shrinks by 15 and by 0 bytes).
  const wide = new Map([[p, 7], [p + 1, 2 ** 52 + 1], [p + 2, 3]])
  const item = Buffer.concat([Buffer.from('zz'), Buffer.from(encode([p, 'a', p + 2])), Buffer.from(`{"id":${p + 1}},{"id":${p + 2}}`)])
  t.deepEqual(Buffer.from(substitute(item.subarray(2), wide)), Buffer.concat([Buffer.from(encode([7, 'a', 3])), Buffer.from(`{"id":${2 ** 52 + 1}},{"id":3}`)]), 'a view into a larger buffer: each placeholder replaced in place, the bytes between kept')
  const none = encode([1, 'b'])
  t.is(substitute(none, wide), none, 'bytes holding no placeholder: the same array')
  t.end()
})

/**
 * A group's ops as the write path hands them to the deferred statement: `n`
 * inserts of placeholder ids (a record keyed by its id, holding it in its
 * JSON; a list entry holding it in its key and value), a plain put, the
 * sequence raised to the last placeholder; and a notice naming every key.
 * @param {number} n
 */
function deferredGroup (n) {
  const ps = range(0, n - 1).map(i => PLACEHOLDER_BASE + 5 + i)
  /** @type {any[]} */
  const ops = []
  for (const p of ps) {
    ops.push({ type: 'put', key: Buffer.from(encode(['c', p])), value: Buffer.from(`{"id":${p},"name":"n"}`) })
    ops.push({ type: 'put', key: Buffer.from(encode(['u', 1, p])), value: Buffer.from(encode([[7, p]])) })
  }
  ops.push({ type: 'put', key: Buffer.from(encode(['plain'])), value: Buffer.from('v') })
  ops.push({ type: 'put', key: Buffer.from('seq'), value: Buffer.from(String(ps[n - 1])), deferredSequence: true })
  // '~0~' elsewhere in the payload: only the keys are replaced.
  const notice = JSON.stringify({ f: 'a~0~b~~1~', g: 1, s: 1, n: 1, o: ops.filter(op => op.deferredSequence !== true).map(op => ['!x!', 1, op.key.toString('base64')]) })
  return { ops, deferred: { sequences: [ps], bases: null }, notices: [notice] }
}

test('postgres keys: a group\'s deferred batch statement has one text whatever the group holds, and writes the real ids in keys, values and its notification', async t => {
  const table = server.table()
  const quoted = pg.escapeIdentifier(table)
  const one = deferredGroup(1)
  const many = deferredGroup(16)
  const small = deferredStatement(quoted, 'chan', one.ops, one.deferred, one.notices)
  const big = deferredStatement(quoted, 'chan', many.ops, many.deferred, many.notices)
  // Its planning cost grew with the ops when each placeholder was an expression (session 19).
  t.is(big.text, small.text, 'the text for 16 inserts is the text for 1: only the values grow')
  const client = new pg.Client({ connectionString: server.connectionString })
  const listener = new pg.Client({ connectionString: server.connectionString })
  try {
    await client.connect()
    await listener.connect()
    /** @type {string[]} */
    const heard = []
    listener.on('notification', message => heard.push(String(message.payload)))
    await listener.query('LISTEN chan')
    await client.query(`CREATE TABLE ${quoted} (key bytea PRIMARY KEY, value bytea)`)
    await client.query({ text: `INSERT INTO ${quoted} (key, value) VALUES ($1, $2)`, values: [Buffer.from('seq'), Buffer.from('40')] })
    // As the key transaction sends it: values as literals, with its COMMIT.
    const inlined = inlineValues(big.text, big.values)
    t.is(typeof inlined, 'string', 'its values can be written as literals (BEGIN and COMMIT in the same query)')
    const results = await client.query(`BEGIN; ${inlined}; COMMIT`)
    t.deepEqual(basesOf(results), [41], 'it answers the first id the sequence gave: 41')
    const rows = new Map((await client.query(`SELECT key, value FROM ${quoted}`)).rows.map(row => [row.key.toString('hex'), row.value]))
    t.is(rows.get(Buffer.from('seq').toString('hex'))?.toString(), '56', 'the sequence row is raised by 16, to 56')
    let wrong = 0
    for (let i = 0; i < 16; i++) {
      const id = 41 + i
      if (rows.get(Buffer.from(encode(['c', id])).toString('hex'))?.toString() !== `{"id":${id},"name":"n"}`) wrong++
      if (!rows.get(Buffer.from(encode(['u', 1, id])).toString('hex'))?.equals(Buffer.from(encode([[7, id]])))) wrong++
    }
    t.is(wrong, 0, 'every record and list entry is stored under its real id, holding it (text and binary forms)')
    t.is(rows.size, 16 * 2 + 2, 'no key holding a placeholder is stored')
    for (let i = 0; i < 100 && heard.length === 0; i++) await sleep(10)
    t.is(heard.length, 1, 'one notification')
    const message = JSON.parse(heard[0] ?? '{}')
    t.is(message.f, 'a~0~b~~1~', 'the rest of the payload is as it was')
    const expected = many.ops.filter(op => op.deferredSequence !== true).map(op => Buffer.from(substitute(op.key, new Map(many.deferred.sequences[0].map((p, i) => [p, 41 + i])))).toString('base64'))
    t.deepEqual((message.o ?? []).map((/** @type {any} */ op) => op[2]), expected, 'it names every key as written, in order')
  } finally {
    await client.query(`DROP TABLE IF EXISTS ${quoted}`).catch(() => {})
    await client.end().catch(() => {})
    await listener.end().catch(() => {})
  }
})

for (const locking of MODES) {
  test(`postgres ${locking}: 4 processes creating chats with overlapping members get ids 1..N, lists right both ways, check() clean`, async t => {
    const table = server.table()
    const db = await openShared(server.connectionString, table, locking)
    try {
      const { store, ids: userIds } = await users(db, 10)
      const workers = await Promise.all(range(0, 3).map(worker => startWorker(server.connectionString, table, 'chats', { n: 12, inFlight: 4, userIds, worker }, locking)))
      for (const w of workers) w.go()
      const created = (await Promise.all(workers.map(w => w.result()))).flat()
      t.deepEqual([...created].sort((a, b) => a - b), range(1, 48), 'the 48 createChat() resolved with ids exactly 1..48')
      const last = await checkChats(t, store, userIds, 'after 4 processes')
      t.is(last, 48, 'the sequence is at 48')
      t.is(await store.createChat({ name: 'next', adminId: userIds[0] }), 49, 'the next createChat here gets 49')
    } finally {
      await db.close()
    }
  })
}

test('postgres keys: createChat() locks no key of the chats\' sequence, and reads none', async t => {
  const table = server.table()
  const db = await openShared(server.connectionString, table, 'keys')
  try {
    const { store, ids: userIds } = await users(db, 6)
    await store.createChat({ name: 'first', adminId: userIds[0], userIds: userIds.slice(1, 3) })
    const lock = /** @type {any} */ (db).level.sharedWriterLock()
    const sequence = modelOf(store.chats).sequence
    /** @type {string[]} */
    const locked = []
    const original = lock.lock
    lock.lock = function (/** @type {string} */ prefix, /** @type {Uint8Array[]} */ keys) {
      locked.push(prefix)
      return original.call(this, prefix, keys)
    }
    // Another process's createChat since: this one's cache knows nothing.
    const other = await openShared(server.connectionString, table, 'keys')
    try {
      t.is(await new ChatStore(other, { passwordCost: FAST }).createChat({ name: 'other', adminId: userIds[3], userIds: [userIds[4]] }), 2, 'the other database creates chat 2')
    } finally {
      await other.close()
    }
    const id = await store.createChat({ name: 'counted', adminId: userIds[0], userIds: userIds.slice(1, 4) })
    lock.lock = original
    t.is(id, 3, 'createChat() answers with the real id, 3')
    t.ok(locked.length > 0, `its section locked keys (${locked.length} requests)`)
    t.notOk(locked.includes(sequence.prefix), 'none of the chats\' sequence')
    await checkChats(t, store, userIds, 'after it')
  } finally {
    await db.close()
  }
})

test('postgres keys: a batch the server refuses takes no id; the next chat has the next one', async t => {
  const table = server.table()
  const db = await openShared(server.connectionString, table, 'keys')
  const fn = `${table}_refuse`
  try {
    const { store, ids: userIds } = await users(db, 6)
    t.is(await store.createChat({ name: 'one', adminId: userIds[0], userIds: [userIds[1]] }), 1, 'chat 1')
    // A row of the batch the server refuses (a trigger, as a constraint of the table would).
    await server.pool.query(`CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF position('boom' in convert_from(NEW.value, 'SQL_ASCII')) > 0 THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$`)
    await server.pool.query(`CREATE TRIGGER ${fn} BEFORE INSERT OR UPDATE ON ${table} FOR EACH ROW EXECUTE FUNCTION ${fn}()`)
    const refused = await Promise.allSettled([
      store.createChat({ name: 'boom', adminId: userIds[0], userIds: userIds.slice(1, 3) }),
      store.createChat({ name: 'boom too', adminId: userIds[2], userIds: userIds.slice(3) })
    ])
    t.deepEqual(refused.map(r => r.status), ['rejected', 'rejected'], 'both createChat() of the refused batch reject')
    await server.pool.query(`DROP TRIGGER ${fn} ON ${table}`)
    t.is(await store.createChat({ name: 'two', adminId: userIds[0], userIds: userIds.slice(1, 3) }), 2, 'the next createChat() gets 2: the refused ones took none')
    t.deepEqual((await store.getChats(userIds[1])).map(c => c.id), [2, 1], "a member's chats: 2 and 1, and no refused one")
    await checkChats(t, store, userIds, 'after a refused batch')
  } finally {
    await server.pool.query(`DROP FUNCTION IF EXISTS ${fn}() CASCADE`).catch(() => {})
    await db.close()
  }
})

test('postgres keys: right after createChat() the caches, another database and the notification hold the real id', async t => {
  const table = server.table()
  const a = await openShared(server.connectionString, table, 'keys')
  const b = await openShared(server.connectionString, table, 'keys')
  const listener = new pg.Client({ connectionString: server.connectionString })
  try {
    const { store, ids: userIds } = await users(a, 5)
    const other = new ChatStore(b, { passwordCost: FAST })
    await store.createChat({ name: 'first', adminId: userIds[0], userIds: userIds.slice(1, 3) })
    // Cached in both: the member's list of chats, the chats.
    t.deepEqual((await store.getChats(userIds[1])).map(c => c.id), [1], 'a: user 2 is in chat 1')
    t.deepEqual((await other.getChats(userIds[1])).map(c => c.id), [1], 'b: the same')
    await listener.connect()
    /** @type {any[]} */
    const heard = []
    listener.on('notification', message => heard.push(JSON.parse(String(message.payload))))
    await listener.query(`LISTEN ${pg.escapeIdentifier(/** @type {any} */ (a).level.sharedWriterLock().channel)}`)
    const [x, y] = await Promise.all([
      store.createChat({ name: 'second', adminId: userIds[1], userIds: [userIds[2]] }),
      store.createChat({ name: 'third', adminId: userIds[1], userIds: [userIds[3]] })
    ])
    t.deepEqual([x, y], [2, 3], 'two createChat() in one batch answer 2 and 3')
    t.deepEqual((await store.getChats(userIds[1])).map(c => c.id).sort(), [1, 2, 3], 'a, at once: user 2 is in chats 1, 2 and 3')
    t.deepEqual(await store.members.from(userIds[1]).all(), [1, 2, 3], 'a, at once: its list is [1, 2, 3]')
    t.is((await store.getChat(3))?.id, 3, 'a, at once: chat 3 holds id 3')
    t.is(await store.getChat(2).then(c => c?.name), 'second', 'a: chat 2 is "second"')
    let seen = null
    for (let i = 0; i < 100 && JSON.stringify(seen) !== '[1,2,3]'; i++) {
      seen = await other.members.from(userIds[1]).all()
      if (JSON.stringify(seen) !== '[1,2,3]') await sleep(20)
    }
    t.deepEqual(seen, [1, 2, 3], 'b (another process) reads [1, 2, 3] once it heard of the batch')
    t.is((await other.getChat(3))?.name, 'third', 'b reads chat 3')
    for (let i = 0; i < 100 && heard.length === 0; i++) await sleep(20)
    const chatsPrefix = modelOf(store.chats).records.prefix
    const keys = heard.flatMap(m => (m.o ?? []).filter((/** @type {any} */ op) => op[0] === chatsPrefix).map((/** @type {any} */ op) => decode(Buffer.from(op[2], 'base64'))))
    t.deepEqual(keys, [2, 3], 'the notification names the chats\' records by their real keys, 2 and 3')
    const raw = heard.flatMap(m => (m.o ?? []).map((/** @type {any} */ op) => op[2]))
    t.ok(raw.every((/** @type {string} */ k) => !/~/.test(k) && Buffer.from(k, 'base64').toString('base64') === k), 'every key in it is base64, no token left')
    t.notOk(raw.some((/** @type {string} */ k) => Buffer.from(k, 'base64').includes(Buffer.from(encode(2 ** 53 - 2 ** 24)).subarray(0, 6))), 'no placeholder bytes in any key')
    await checkChats(t, store, userIds, 'after them')
  } finally {
    await listener.end().catch(() => {})
    await a.close()
    await b.close()
  }
})

test('postgres keys: inserts of the public API beside createChat() in the same batches keep ids 1..N', async t => {
  const table = server.table()
  const db = await openShared(server.connectionString, table, 'keys')
  try {
    const { store, ids: userIds } = await users(db, 6)
    const made = await Promise.all(range(0, 29).map(i => i % 3 === 2
      ? store.chats.insert({ name: `plain${i}`, adminId: userIds[0], members: [], lastActivity: 0, createdAt: 0, private: false, passwordHash: null })
      : store.createChat({ name: `c${i}`, adminId: userIds[i % 6], userIds: [userIds[(i + 1) % 6]] })))
    t.deepEqual([...made].sort((a, b) => a - b), range(1, 30), 'the 30 inserts answered ids 1..30')
    for (const [i, id] of made.entries()) {
      const chat = await store.chats.get(id)
      if (chat?.name !== (i % 3 === 2 ? `plain${i}` : `c${i}`)) t.fail(`insert ${i} answered ${id}, which holds ${chat?.name}`)
    }
    await checkChats(t, store, userIds, 'after them')
  } finally {
    await db.close()
  }
})

test('postgres keys: a plain insert decided before createChat() in the same group: createChat() takes the next id from it, not a placeholder', async t => {
  const table = server.table()
  const db = await openShared(server.connectionString, table, 'keys')
  try {
    const { store, ids: userIds } = await users(db, 3)
    const plain = (/** @type {string} */ name) => store.chats.insert(plainChat(name, userIds[0]))
    // The first insert reads the highest stored id (a drain of its own): past it, the group below holds both.
    t.is(await plain('first'), 1, 'a first plain insert')
    // createChat()'s deferred inserts that take the id insert() takes instead.
    const model = /** @type {any} */ (modelOf(store.chats))
    const { insert, insertDeferred } = model
    let deferring = false
    let fellBack = 0
    model.insertDeferred = async (/** @type {any[]} */ ...args) => {
      deferring = true
      try {
        return await insertDeferred.apply(model, args)
      } finally {
        deferring = false
      }
    }
    model.insert = (/** @type {any[]} */ ...args) => {
      if (deferring) fellBack++
      return insert.apply(model, args)
    }
    const made = await Promise.all([plain('plain'), store.createChat({ name: 'c', adminId: userIds[0], userIds: [userIds[1]] }), plain('plain too'), store.createChat({ name: 'c too', adminId: userIds[1], userIds: [userIds[2]] })])
    t.deepEqual(made, [2, 3, 4, 5], 'each call answered the next id, in call order')
    t.is(fellBack, 2, 'both createChat() calls took theirs after the plain insert\'s, in its group')
    delete model.insert
    delete model.insertDeferred
    t.deepEqual((await Promise.all(made.map(id => store.chats.get(id)))).map((/** @type {any} */ c) => c.name), ['plain', 'c', 'plain too', 'c too'], 'each id holds its record')
    await checkChats(t, store, userIds, 'after them')
  } finally {
    await db.close()
  }
})

test('postgres keys: a transaction inserting beside a createChat() not yet written reads the real id once it is, never the placeholder', async t => {
  await withKeysStore(3, async ({ db, store, userIds }) => {
    const plain = (/** @type {string} */ name) => plainChat(name, userIds[0])
    t.is(await store.createChat({ name: 'c0', adminId: userIds[0], userIds: [userIds[1]] }), 1, 'chat 1')
    const writer = modelOf(store.chats).writer
    const chat = store.createChat({ name: 'c1', adminId: userIds[0], userIds: [userIds[2]] })
    // Once its ops are decided (a placeholder id in the overlay), not yet written.
    for (const deadline = Date.now() + 10000; !writer.pending && Date.now() < deadline;) await new Promise(resolve => setImmediate(resolve))
    t.ok(writer.pending, 'createChat() decided, not written')
    const inTransaction = db.transaction((/** @type {any} */ tx) => store.chats.in(tx).insert(plain('tx')))
    t.same(await Promise.all([chat, inTransaction]), [2, 3], 'createChat() answered 2, the transaction\'s insert 3')
    t.is(await db.transaction((/** @type {any} */ tx) => store.chats.in(tx).insert(plain('tx too'))), 4, 'a later transaction\'s insert: 4')
    t.same((await store.chats.query().all()).map((/** @type {any} */ c) => c.id), [1, 2, 3, 4], 'the chats stored are 1..4')
    await checkChats(t, store, userIds, 'after them')
  })
})

test('postgres keys: a transaction begun while a createChat() section holds a placeholder, committing in its group: the group is written first and the transaction runs again on the next id', async t => {
  await withKeysStore(3, async ({ db, store, userIds }) => {
    const plain = (/** @type {string} */ name) => plainChat(name, userIds[0])
    t.is(await store.createChat({ name: 'c0', adminId: userIds[0], userIds: [userIds[1]] }), 1, 'chat 1')
    const model = /** @type {any} */ (modelOf(store.chats))
    const { create } = model
    /** @type {Promise<number> | null} */
    let inTransaction = null
    /** @type {(id: number) => void} */
    let reserved = () => {}
    const reservedId = new Promise(resolve => { reserved = resolve })
    let attempts = 0
    // The section, holding its placeholder, lets a transaction take its id (from the stored sequence) before it decides.
    model.create = async (/** @type {any[]} */ ...args) => {
      if (isPlaceholder(args[3]) && inTransaction === null) {
        inTransaction = db.transaction(async (/** @type {any} */ tx) => {
          attempts++
          const id = await store.chats.in(tx).insert(plain('tx'))
          if (attempts === 1) reserved(id)
          return id
        })
        inTransaction.catch(() => {})
        await reservedId
      }
      return create.apply(model, args)
    }
    const chat = store.createChat({ name: 'c1', adminId: userIds[0], userIds: [userIds[2]] })
    // (Awaited below: a failure is this test's, not the process's.)
    chat.catch(() => {})
    t.is(await reservedId, 2, 'the transaction took id 2 from the stored sequence, before the section decided')
    t.is(await chat, 2, 'createChat() answered 2')
    t.is(await inTransaction, 3, 'the transaction, checked once the group was written, ran again: 3')
    t.is(attempts, 2, 'in two attempts')
    delete model.create
    t.same((await store.chats.query().all()).map((/** @type {any} */ c) => [c.id, c.name]), [[1, 'c0'], [2, 'c1'], [3, 'tx']], 'the chats stored are 1..3, each its own')
    await checkChats(t, store, userIds, 'after them')
  })
})

// A seeded mix of what met deferred ids in this file's bugs: createChat(),
// chats.insert() and db.transaction() inserts (some reading the chats'
// newest record first), called together in rounds, so that transactions
// begin and commit beside sections holding placeholders.
// Seeds 1 and 2 fail on session 25's code (a plain insert then createChat()
// in a group; a transaction beside a section holding a placeholder);
// LEVELKIT_TEST_SEED replays one.
const MIX_SEEDS = process.env.LEVELKIT_TEST_SEED ? [Number(process.env.LEVELKIT_TEST_SEED)] : [1, 2, 3]
for (const seed of MIX_SEEDS) {
  test(`postgres keys: createChat(), inserts and transactions called together in rounds (seed ${seed}): each answered id is its record's, none twice`, async t => {
    const random = prng(seed)
    await withKeysStore(4, async ({ db, store, userIds }) => {
      /** @type {Array<{ name: string, id: number }>} */
      const made = []
      for (let round = 0; round < 12; round++) {
        const calls = Array.from({ length: 2 + random.int(6) }, (_, i) => {
          const name = `r${round}.${i}`
          const kind = random.int(3)
          if (kind === 0) return store.createChat({ name, adminId: userIds[random.int(4)], userIds: [userIds[random.int(4)]] }).then(id => ({ name, id }))
          if (kind === 1) return store.chats.insert(plainChat(name, userIds[0])).then(id => ({ name, id }))
          return db.transaction(async (/** @type {any} */ tx) => {
            if (random.int(2) === 0) await store.chats.in(tx).query({ reverse: true, limit: 1 }).all()
            return store.chats.in(tx).insert(plainChat(name, userIds[0]))
          }).then((/** @type {number} */ id) => ({ name, id }))
        })
        made.push(...await Promise.all(calls))
      }
      // (A transaction's attempt that does not commit leaves its id unused: ids unique and increasing, with gaps, docs/api.md.)
      const ids = made.map(m => m.id).sort((a, b) => a - b)
      t.is(new Set(ids).size, made.length, `the ${made.length} calls answered ${made.length} ids, none twice`)
      t.ok(ids.every(id => Number.isSafeInteger(id) && id > 0 && !isPlaceholder(id)), 'each a real id')
      const stored = new Map((await store.chats.query().all()).map((/** @type {any} */ c) => [c.id, c.name]))
      t.same([...stored.keys()].sort((a, b) => a - b), ids, 'the chats stored are the answered ids')
      t.is(made.filter(m => stored.get(m.id) !== m.name).length, 0, 'each answered id holds that call\'s record')
      t.ok(await modelOf(store.chats).storedSequenceValue() >= ids[ids.length - 1], 'the sequence is at or past the highest id')
      t.same((await db.check()).problems, [], 'check() is clean')
    })
  })
}

test('postgres keys: with userChats: \'edges\' (a key per membership, holding the chat id) createChat() keeps ids 1..N and both directions', async t => {
  const table = server.table()
  const db = await openShared(server.connectionString, table, 'keys')
  try {
    const store = new ChatStore(db, { passwordCost: FAST, userChats: 'edges' })
    const userIds = []
    for (let i = 0; i < 6; i++) userIds.push(await store.createUser({ username: `e${i}`, password: 'x' }))
    const made = await Promise.all(range(0, 11).map(i => store.createChat({ name: `c${i}`, adminId: userIds[i % 6], userIds: [userIds[(i + 2) % 6], userIds[(i + 4) % 6]] })))
    t.deepEqual([...made].sort((a, b) => a - b), range(1, 12), 'the 12 createChat() answered ids 1..12')
    await checkChats(t, store, userIds, 'after them')
  } finally {
    await db.close()
  }
})

test('postgres keys: a process killed with SIGKILL while creating chats leaves no gap', async t => {
  const table = server.table()
  const db = await openShared(server.connectionString, table, 'keys')
  try {
    const { store, ids: userIds } = await users(db, 10)
    const victim = await startWorker(server.connectionString, table, 'chats', { n: 100000, inFlight: 4, userIds, worker: 9, report: true }, 'keys')
    const workers = await Promise.all(range(0, 2).map(worker => startWorker(server.connectionString, table, 'chats', { n: 15, inFlight: 4, userIds, worker }, 'keys')))
    victim.go()
    for (const w of workers) w.go()
    const progress = await victim.next(m => typeof m === 'object' && m !== null && Array.isArray(m.created) && m.created.length >= 10)
    victim.child.kill('SIGKILL')
    t.is((await victim.exited).signal, 'SIGKILL', 'the process was killed mid-workload')
    const created = (await Promise.all(workers.map(w => w.result()))).flat()
    t.is(created.length, 45, 'the other 3 processes created their 45 chats')
    const last = await checkChats(t, store, userIds, 'after the kill')
    const stored = new Set(range(1, last))
    t.ok(progress.created.every((/** @type {number} */ id) => stored.has(id)), `the ${progress.created.length} ids the killed process had been answered are stored`)
    t.is(await store.createChat({ name: 'after', adminId: userIds[0] }), last + 1, 'the next createChat() gets N + 1')
  } finally {
    await db.close()
  }
})
