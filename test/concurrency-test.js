// Concurrency: many writes in flight at once, on real LevelDB (classic-level,
// where the naive hook approach leaves stale index entries), on memory-level,
// and on LevelDB with syncReads: false (asynchronous reads inside the write
// path, as on browser-level).
//
// Besides db.check(), every case audits the raw namespaces itself: it reads
// records and index entries straight from the sublevels named by `layout`
// (lib/names.js), decodes keys with the bytewise package (not levelkit's own
// codec) and compares the index entries with what the records imply.
//
// Where a case fires many writes at once it also replays them one by one, in
// call order, against a plain in-memory model: the write path runs critical
// sections FIFO (lib/writer.js), so every outcome (value or error code) and
// the final state must equal that serial replay.
//
// Random choices come from a seeded PRNG: LEVELKIT_SEED=<n> reproduces a run.

import test from 'tape'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import bytewise from 'bytewise'
import { open } from '../index.js'
import { layout } from '../lib/names.js'
import { prng } from './util/prng.js'
import { hash, range, numeric, outcomes, rawEntries } from './util/common.js'

const SEED = process.env.LEVELKIT_SEED ? Number(process.env.LEVELKIT_SEED) : Date.now() % 0x7fffffff
const VARIANTS = [{ backend: 'leveldb' }, { backend: 'memory' }, { backend: 'leveldb', syncReads: false }]

const USER_INDEXES = {
  username: { unique: true, key: u => u.username },
  byAge: { key: u => [u.age] },
  tags: { key: u => u.tags, multi: true }
}

// ---------------------------------------------------------------------------
// Helpers

/**
 * Run `fn` once per variant with a fresh database (a temp dir for LevelDB).
 * LevelDB with syncReads: false reads asynchronously inside the critical
 * sections too, as browser-level (no getSync) always does.
 */
function each (name, fn) {
  for (const options of VARIANTS) {
    const label = options.syncReads === false ? `${options.backend}, syncReads: false` : options.backend
    test(`${name} (${label})`, async t => {
      t.comment(`seed ${SEED} (reproduce with LEVELKIT_SEED=${SEED})`)
      const dir = options.backend === 'leveldb' ? fs.mkdtempSync(path.join(os.tmpdir(), 'levelkit-concurrency-')) : undefined
      const db = await open(dir ? { ...options, location: dir } : options)
      try {
        await fn(t, db, prng(SEED ^ hash(name)))
      } finally {
        await db.close()
        if (dir) fs.rmSync(dir, { recursive: true, force: true })
      }
    })
  }
}

const decode = bytes => bytewise.decode(Buffer.from(bytes))
const text = bytes => Buffer.from(bytes).toString('utf8')

/**
 * Independent audit of one collection: records, every index entry, the
 * sequence. Returns the records (by id) and a list of problems found.
 */
async function audit (db, name, indexes, { sequential = true } = {}) {
  const problems = []
  const records = new Map()
  const stored = new Map()
  for (const [id, value] of await rawEntries(db, layout.records(name))) {
    const record = JSON.parse(text(value))
    if (record.id !== id) problems.push(`${name} ${id}: record has id ${record.id}`)
    records.set(id, record)
    stored.set(id, text(value))
  }
  for (const [indexName, spec] of Object.entries(indexes)) {
    const expected = []
    const holders = new Map()
    for (const [id, record] of records) {
      const computed = spec.key(record)
      if (computed === undefined) continue
      for (const value of spec.multi ? new Set(computed) : [computed]) {
        // A covering entry holds the record exactly as stored.
        expected.push(JSON.stringify(spec.covering ? [[value], stored.get(id)] : spec.unique ? [[value], id] : [[value, id], '']))
        if (spec.unique) {
          const k = JSON.stringify(value)
          holders.set(k, [...(holders.get(k) || []), id])
        }
      }
    }
    for (const [value, ids] of holders) {
      if (ids.length > 1) problems.push(`${name}.${indexName}: records ${ids.join(', ')} share unique value ${value}`)
    }
    const actual = (await rawEntries(db, layout.index(name, indexName))).map(([key, value]) =>
      JSON.stringify(spec.unique && !spec.covering ? [key, decode(value)] : [key, text(value)]))
    actual.sort()
    expected.sort()
    const want = new Set(expected)
    const have = new Set(actual)
    for (const entry of actual) if (!want.has(entry)) problems.push(`${name}.${indexName}: stale or dangling entry ${entry}`)
    for (const entry of expected) if (!have.has(entry)) problems.push(`${name}.${indexName}: missing entry ${entry}`)
    if (actual.length !== have.size) problems.push(`${name}.${indexName}: duplicate raw keys`)
  }
  if (sequential) {
    const seq = await rawEntries(db, layout.sequence(name))
    const last = seq.length === 0 ? 0 : Number(text(seq[0][1]))
    const max = Math.max(0, ...records.keys())
    if (seq.length > 1 || (seq.length === 1 && seq[0][0] !== 'last')) problems.push(`${name}.seq has unexpected keys`)
    if (max > last) problems.push(`${name}.seq is at ${last} but id ${max} exists`)
  }
  return { records, problems }
}

async function assertClean (t, db, name, indexes, options) {
  const { records, problems } = await audit(db, name, indexes, options)
  t.deepEqual(problems, [], `independent scan of "${name}": records and raw index entries agree`)
  return records
}

async function assertCheckOk (t, db, what) {
  const result = await db.check()
  t.deepEqual(result.problems, [], `${what}: check() reports no problems`)
  t.is(result.ok, true, `${what}: check() is ok`)
}

const unexpected = (list, allowed) => list.filter(o => !o.ok && !allowed.includes(o.code)).map(o => `${o.code}: ${o.message}`)

// ---------------------------------------------------------------------------
// Inserts

each('300 concurrent inserts with distinct usernames get ids exactly 1..300', async (t, db) => {
  const users = db.collection('users', { indexes: USER_INDEXES })
  const n = 300
  const ids = await Promise.all(range(0, n - 1).map(i =>
    users.insert({ username: `u${i}`, age: i % 7, tags: [`t${i % 3}`, `s${i % 5}`] })))
  t.deepEqual([...ids].sort(numeric), range(1, n), 'ids are 1..300')
  t.is(new Set(ids).size, n, 'no id handed out twice')

  const records = await assertClean(t, db, 'users', USER_INDEXES)
  t.is(records.size, n, '300 records stored')
  const wrong = ids.filter((id, i) => records.get(id)?.username !== `u${i}`)
  t.deepEqual(wrong, [], 'each insert resolved with the id its own record is stored under')
  const [[, last]] = await rawEntries(db, layout.sequence('users'))
  t.is(text(last), '300', 'sequence is at 300')
  t.is(await users.count({ index: 'username' }), n, '300 unique index entries')
  t.is(await users.count({ index: 'tags' }), 2 * n, '600 multi index entries')
  t.is((await users.getBy('username', 'u123')).id, ids[123], 'getBy finds a record by its unique value')
  t.is(await users.insert({ username: 'next', age: 1, tags: [] }), n + 1, 'the next insert gets 301')
  await assertCheckOk(t, db, 'after 300 concurrent inserts')
})

each('200 concurrent inserts of the same username: exactly one wins', async (t, db) => {
  const users = db.collection('users', { indexes: USER_INDEXES })
  const results = await outcomes(range(1, 200).map(i => users.insert({ username: 'same', age: i, tags: [`t${i}`] })))
  const won = results.filter(r => r.ok)
  const lost = results.filter(r => !r.ok)
  t.is(won.length, 1, 'exactly one insert fulfils')
  t.is(lost.length, 199, '199 inserts reject')
  t.deepEqual(unexpected(lost, ['LEVELKIT_UNIQUE']), [], 'every rejection is LEVELKIT_UNIQUE')
  t.is(won[0].value, 1, 'the winner got id 1')

  const records = await assertClean(t, db, 'users', USER_INDEXES)
  t.deepEqual([...records.keys()], [1], 'one record stored')
  const entries = await rawEntries(db, layout.index('users', 'username'))
  t.deepEqual(entries.map(([key, value]) => [key, decode(value)]), [[['same'], 1]], 'the unique index has exactly one entry, pointing at the winner')
  t.is((await rawEntries(db, layout.index('users', 'tags'))).length, 1, 'no multi index entries of the losers')
  t.is((await rawEntries(db, layout.index('users', 'byAge'))).length, 1, 'no non-unique index entries of the losers')
  t.is(await users.insert({ username: 'other', age: 1, tags: [] }), 2, 'rejected inserts consumed no ids: the next insert gets 2')
  await assertCheckOk(t, db, 'after 200 racing inserts')
})

// ---------------------------------------------------------------------------
// Updates that move unique and non-unique index entries

// With the unique index as it is, and covering (holding a copy of each record).
for (const covering of [false, true]) {
  const indexes = covering ? { ...USER_INDEXES, username: { ...USER_INDEXES.username, covering } } : USER_INDEXES
  each(`hundreds of concurrent updates moving unique${covering ? ' (covering)' : ''}, non-unique and multi index entries`, async (t, db, rand) => {
    const users = db.collection('users', { indexes })
    const pool = ['p0', 'p1', 'p2', 'p3', 'p4', 'p5']
    const tagPool = ['a', 'b', 'c', 'd', 'e']
    const ids = []
    for (let i = 0; i < 4; i++) ids.push(await users.insert({ username: pool[i], age: 0, tags: [] }))
    const tags = () => tagPool.filter(() => rand() < 0.4)

    // The ops, decided up front so that the replay below can apply the same ones.
    const ops = []
    for (let i = 0; i < 400; i++) {
      const id = ids[i % 4]
      const username = rand.pick(pool)
      const age = rand.int(10)
      const newTags = tags()
      switch (rand.int(4)) {
        case 0: ops.push({ id, change: { username, age } }); break
        case 1: ops.push({ id, change: { username, tags: newTags } }); break
        case 2: ops.push({ id, change: { age, tags: newTags } }); break
        default: ops.push({ id, change: old => ({ ...old, username, age: old.age + 1, tags: newTags }) })
      }
    }

    const checks = []
    const promises = ops.map((op, i) => {
      if (i % 100 === 50) checks.push(db.check())
      return users.update(op.id, op.change)
    })
    const results = await outcomes(promises)
    const midway = await Promise.all(checks)
    t.deepEqual(midway.map(r => r.problems.length), [0, 0, 0, 0], 'check() run concurrently with the updates saw no problem')

    const fulfilled = results.filter(r => r.ok).length
    const rejected = results.filter(r => !r.ok)
    t.deepEqual(unexpected(rejected, ['LEVELKIT_UNIQUE']), [], 'every rejection is LEVELKIT_UNIQUE')
    t.is(fulfilled + rejected.length, 400, 'all 400 updates settled')
    t.ok(rejected.length > 0 && fulfilled > 0, `the workload had conflicts (${rejected.length} rejected, ${fulfilled} fulfilled)`)

    const records = await assertClean(t, db, 'users', indexes)
    const names = [...records.values()].map(r => r.username)
    t.is(new Set(names).size, 4, 'every unique value is held by at most one record')
    for (const name of pool) {
      const holder = [...records.values()].find(r => r.username === name)
      const found = await users.getBy('username', name)
      if ((found && found.id) !== (holder && holder.id)) t.fail(`getBy(${name}) returned ${found && found.id}, holder is ${holder && holder.id}`)
    }
    await assertCheckOk(t, db, 'after the updates')

    // Serial replay in call order.
    const model = new Map()
    for (const id of ids) model.set(id, { id, username: pool[id - 1], age: 0, tags: [] })
    const expected = ops.map(op => {
      const old = model.get(op.id)
      const next = typeof op.change === 'function' ? op.change(old) : { ...old, ...op.change }
      const taken = [...model.values()].some(r => r.id !== op.id && r.username === next.username)
      if (taken) return { ok: false, code: 'LEVELKIT_UNIQUE' }
      model.set(op.id, next)
      return { ok: true, value: next }
    })
    t.deepEqual(results.map(r => r.ok ? r : { ok: false, code: r.code }), expected, 'each update had the outcome of a serial replay in call order')
    t.deepEqual([...records.values()].sort((a, b) => a.id - b.id), [...model.values()], 'final records equal the serial replay')
  })
}

each('hook race: 4 concurrent puts to one key, 20 repetitions, leave no stale index entry', async (t, db, rand) => {
  const indexes = {
    byAuthor: { key: b => [b.author] },
    slug: { unique: true, key: b => b.slug },
    words: { key: b => b.words, multi: true }
  }
  const books = db.collection('books', { indexes })
  const staleReps = []
  for (let rep = 0; rep < 20; rep++) {
    const versions = range(0, 3).map(i => ({ author: `author-${rep}-${i}`, slug: `slug-${rep}-${i}`, words: [`w${i}`, `rep${rep}`, `x${rand.int(3)}`] }))
    const created = await Promise.all(versions.map(v => books.put(1, v)))
    const byAuthor = await rawEntries(db, layout.index('books', 'byAuthor'))
    const slug = await rawEntries(db, layout.index('books', 'slug'))
    const stored = await books.get(1)
    if (byAuthor.length !== 1 || slug.length !== 1 || JSON.stringify(byAuthor[0][0]) !== JSON.stringify([[stored.author], 1])) {
      staleReps.push({ rep, byAuthor: byAuthor.map(e => e[0]), slug: slug.map(e => e[0]) })
    }
    if (rep === 0) t.deepEqual(created, [true, false, false, false], 'the first put creates, the others replace')
    if (JSON.stringify(stored) !== JSON.stringify({ id: 1, ...versions[3] })) t.fail(`rep ${rep}: the last put (in call order) did not win: ${JSON.stringify(stored)}`)
  }
  t.deepEqual(staleReps, [], 'no repetition left a stale index entry')
  const records = await assertClean(t, db, 'books', indexes)
  t.deepEqual([...records.keys()], [1], 'one record')
  t.is((await rawEntries(db, layout.index('books', 'words'))).length, 3, 'the multi index has exactly the last version\'s 3 entries')
  await assertCheckOk(t, db, 'after the hook race')
})

// With syncReads (the default on classic-level and memory-level) a read is one
// synchronous call; without, reads are asynchronous and only snapshots keep
// an index entry and its record from two different moments apart.
each('readers running alongside swapping transactions never see a torn state', async (t, db) => {
  const users = db.collection('users', { indexes: USER_INDEXES })
  for (let i = 0; i < 8; i++) await users.insert({ username: `n${i}`, age: i, tags: [`t${i % 2}`] })
  const torn = []
  let reads = 0
  const state = { writing: true }
  const reader = async r => {
    for (let n = r; state.writing; n++) {
      await new Promise(resolve => setImmediate(resolve)) // let the writes through
      const name = `n${n % 8}`
      const found = await users.getBy('username', name)
      if (!found || found.username !== name) torn.push(['getBy', name, found])
      const lo = n % 8
      for (const u of await users.query({ index: 'byAge', gte: [lo], lt: [lo + 3] }).all()) {
        if (!(u.age >= lo && u.age < lo + 3)) torn.push(['byAge', lo, u])
      }
      for (const u of await users.query({ index: 'tags', eq: 't0' }).all()) {
        if (!u.tags.includes('t0')) torn.push(['tags', u])
      }
      const names = (await users.query({ index: 'username' }).all()).map(u => u.username).sort()
      if (names.join() !== 'n0,n1,n2,n3,n4,n5,n6,n7') torn.push(['all', names])
      if ((await db.check()).problems.length > 0) torn.push(['check'])
      reads++
    }
  }
  const readers = [0, 1, 2].map(reader)
  // Each write swaps everything but the id between two records, through a
  // temporary name, so a reader that mixed two moments would see it.
  const writes = []
  for (let i = 0; i < 400; i++) {
    const a = 1 + (i % 8)
    const b = 1 + ((i * 3 + 1) % 8)
    if (a === b) continue
    writes.push(db.write(async w => {
      const U = users.in(w)
      const ra = await U.get(a)
      const rb = await U.get(b)
      await U.update(a, { username: 'tmp' })
      await U.update(b, { username: ra.username, age: ra.age, tags: ra.tags })
      await U.update(a, { username: rb.username, age: rb.age, tags: rb.tags })
    }))
    if (i % 20 === 0) await new Promise(resolve => setImmediate(resolve))
  }
  await Promise.all(writes)
  state.writing = false
  await Promise.all(readers)
  t.ok(reads > 0, `readers ran alongside the writes (${reads} rounds)`)
  t.deepEqual(torn.slice(0, 5), [], 'no reader saw a record without its index entries or a half-done swap')
  const records = await assertClean(t, db, 'users', USER_INDEXES)
  t.deepEqual([...records.values()].map(u => u.username).sort(), range(0, 7).map(i => `n${i}`), 'the names are still n0..n7, each once')
  t.deepEqual([...records.values()].map(u => u.age).sort(numeric), range(0, 7), 'the ages moved with the names')
  await assertCheckOk(t, db, 'after the swaps')
})

// ---------------------------------------------------------------------------
// Children, relations, counters

each('200 concurrent appends to one chat get seqs exactly 1..200', async (t, db) => {
  const chats = db.collection('chats')
  const messages = db.children('messages', { parent: chats })
  const chat = await chats.insert({ title: 'busy' })
  const other = await chats.insert({ title: 'quiet' })
  const busy = []
  const quiet = []
  for (let i = 0; i < 200; i++) {
    busy.push(messages.append(chat, { text: `m${i}` }))
    if (i % 4 === 0) quiet.push(messages.append(other, { text: `o${i}` }))
  }
  const busySeqs = await Promise.all(busy)
  const quietSeqs = await Promise.all(quiet)
  t.deepEqual([...busySeqs].sort(numeric), range(1, 200), 'seqs of the busy chat are exactly 1..200')
  t.deepEqual([...quietSeqs].sort(numeric), range(1, 50), 'seqs of the other chat are exactly 1..50')

  const stored = []
  for await (const entry of messages.range(chat).entries()) stored.push(entry)
  const expected = busySeqs.map((seq, i) => [seq, { text: `m${i}` }]).sort((a, b) => a[0] - b[0])
  t.deepEqual(stored, expected, 'each message is stored under the seq its append resolved with')
  t.is(await messages.lastSeq(chat), 200, 'lastSeq is 200')
  const raw = await rawEntries(db, layout.records('messages'))
  t.is(raw.length, 250, '250 raw message entries')
  const seqEntries = (await rawEntries(db, layout.sequence('messages'))).map(([key, value]) => [key, text(value)])
  t.deepEqual(seqEntries, [[chat, '200'], [other, '50']], 'raw sequences are 200 and 50')
  t.deepEqual((await messages.range(chat, { gte: 100, lt: 103 }).all()).length, 3, 'range over seqs works')
  await assertCheckOk(t, db, 'after concurrent appends')
})

each('concurrent appends, puts and dels on children kept in blocks match a serial replay, block by block', async (t, db, rand) => {
  const chats = db.collection('chats')
  const messages = db.children('messages', { parent: chats, blockSize: 4 })
  const chatIds = []
  for (let i = 0; i < 3; i++) chatIds.push(await chats.insert({ title: `c${i}` }))
  const ops = []
  for (let i = 0; i < 400; i++) {
    const c = rand.pick(chatIds)
    const r = rand()
    // Puts and dels aim at seqs that may or may not exist yet.
    if (r < 0.6) ops.push({ type: 'append', c, value: `a${i}` })
    else if (r < 0.8) ops.push({ type: 'put', c, seq: 1 + rand.int(90), value: `p${i}` })
    else ops.push({ type: 'del', c, seq: 1 + rand.int(90) })
  }
  const results = await outcomes(ops.map(op => op.type === 'append'
    ? messages.append(op.c, op.value)
    : op.type === 'put' ? messages.put(op.c, op.seq, op.value) : messages.del(op.c, op.seq)))

  // Serial replay in call order.
  const model = new Map(chatIds.map(c => [c, new Map()]))
  const last = new Map(chatIds.map(c => [c, 0]))
  const expected = ops.map(op => {
    const children = model.get(op.c)
    if (op.type === 'append') {
      const seq = last.get(op.c) + 1
      last.set(op.c, seq)
      children.set(seq, op.value)
      return { ok: true, value: seq }
    }
    if (op.type === 'put') {
      if (!children.has(op.seq)) return { ok: false, code: 'LEVELKIT_NOT_FOUND' }
      children.set(op.seq, op.value)
      return { ok: true, value: undefined }
    }
    return { ok: true, value: children.delete(op.seq) }
  })
  t.deepEqual(results.map(r => r.ok ? r : { ok: false, code: r.code }), expected, 'each op had the outcome of a serial replay in call order')

  // The raw blocks, decoded with bytewise: each under [chat, first seq of
  // its block], its pairs in seq order, none empty.
  const wanted = []
  for (const [c, children] of model) {
    const blocks = new Map()
    for (const seq of [...children.keys()].sort(numeric)) {
      const first = seq - (seq - 1) % 4
      if (!blocks.has(first)) blocks.set(first, [])
      blocks.get(first).push([seq, children.get(seq)])
    }
    for (const [first, pairs] of blocks) wanted.push(JSON.stringify([[c, first], pairs]))
  }
  const stored = (await rawEntries(db, layout.blocks('messages'))).map(([key, value]) => JSON.stringify([key, JSON.parse(text(value))]))
  t.deepEqual(stored.sort(), wanted.sort(), 'the stored blocks are exactly the replayed children, block by block')
  for (const c of chatIds) {
    const entries = []
    for await (const entry of messages.range(c).entries()) entries.push(entry)
    t.deepEqual(entries, [...model.get(c)].sort((a, b) => a[0] - b[0]), `range(${c}) reads the replayed children`)
  }
  await assertCheckOk(t, db, 'after racing appends, puts and dels')
})

// With edges in both directions, and with both directions kept as lists.
for (const lists of [[], ['from', 'to']]) {
  const layoutName = lists.length === 0 ? 'edges' : 'lists'
  each(`concurrent members.add/remove with a cascading chats.del and users.del leave no one-sided edges (${layoutName})`, async (t, db, rand) => {
    const users = db.collection('users', { indexes: USER_INDEXES })
    const chats = db.collection('chats')
    const members = db.relation('members', { from: chats, to: users, onDelete: 'cascade', lists })
    const messages = db.children('messages', { parent: chats })
    const userIds = []
    for (let i = 0; i < 12; i++) userIds.push(await users.insert({ username: `u${i}`, age: i, tags: [] }))
    const chatIds = []
    for (let i = 0; i < 3; i++) chatIds.push(await chats.insert({ title: `c${i}` }))
    const [doomedChat] = chatIds
    const doomedUser = userIds[5]
    for (const u of userIds.slice(0, 6)) await members.add(doomedChat, u)

    const ops = []
    for (let i = 0; i < 400; i++) {
      if (i === 130) ops.push({ type: 'delChat', c: doomedChat })
      else if (i === 260) ops.push({ type: 'delUser', u: doomedUser })
      else if (i % 10 === 3) ops.push({ type: 'append', c: rand.pick(chatIds) })
      else ops.push({ type: rand() < 0.6 ? 'add' : 'remove', c: rand.pick(chatIds), u: rand.pick(userIds) })
    }
    const results = await outcomes(ops.map(op => {
      switch (op.type) {
        case 'delChat': return chats.del(op.c)
        case 'delUser': return users.del(op.u)
        case 'append': return messages.append(op.c, { text: 'hi' })
        case 'add': return members.add(op.c, op.u)
        default: return members.remove(op.c, op.u)
      }
    }))
    t.deepEqual(unexpected(results, ['LEVELKIT_NOT_FOUND']), [], 'the only rejections are LEVELKIT_NOT_FOUND')
    const notFoundEarly = results.slice(0, 130).filter(r => !r.ok).length
    t.is(notFoundEarly, 0, 'nothing was rejected before the deletions')

    const forward = lists.length === 0
      ? (await rawEntries(db, layout.forward('members'))).map(([key]) => JSON.stringify(key)).sort()
      : await listedEdges(db, layout.list('members', 'to'), false)
    const reverse = lists.length === 0
      ? (await rawEntries(db, layout.reverse('members'))).map(([[u, c]]) => JSON.stringify([c, u])).sort()
      : await listedEdges(db, layout.list('members', 'from'), true)
    t.deepEqual(reverse, forward, 'forward and reverse entries are mirror images (no one-sided edge)')
    t.deepEqual(forward.filter(k => JSON.parse(k)[0] === doomedChat), [], 'no edge of the deleted chat')
    t.deepEqual(forward.filter(k => JSON.parse(k)[1] === doomedUser), [], 'no edge of the deleted user')
    const rawMessages = await rawEntries(db, layout.records('messages'))
    t.deepEqual(rawMessages.filter(([[c]]) => c === doomedChat), [], 'no message of the deleted chat')
    const rawSeqs = await rawEntries(db, layout.sequence('messages'))
    t.deepEqual(rawSeqs.filter(([c]) => c === doomedChat), [], 'no message sequence of the deleted chat')
    await assertClean(t, db, 'users', USER_INDEXES)
    await assertCheckOk(t, db, 'after edges raced with deletions')

    // Serial replay in call order.
    const liveChats = new Set(chatIds)
    const liveUsers = new Set(userIds)
    const edges = new Set(userIds.slice(0, 6).map(u => JSON.stringify([doomedChat, u])))
    const lastSeq = new Map()
    const expected = ops.map(op => {
      const key = JSON.stringify([op.c, op.u])
      switch (op.type) {
        case 'delChat':
          liveChats.delete(op.c)
          for (const e of edges) if (JSON.parse(e)[0] === op.c) edges.delete(e)
          return { ok: true, value: true }
        case 'delUser':
          liveUsers.delete(op.u)
          for (const e of edges) if (JSON.parse(e)[1] === op.u) edges.delete(e)
          return { ok: true, value: true }
        case 'append': {
          if (!liveChats.has(op.c)) return { ok: false, code: 'LEVELKIT_NOT_FOUND' }
          const seq = (lastSeq.get(op.c) || 0) + 1
          lastSeq.set(op.c, seq)
          return { ok: true, value: seq }
        }
        case 'add':
          if (!liveChats.has(op.c) || !liveUsers.has(op.u)) return { ok: false, code: 'LEVELKIT_NOT_FOUND' }
          if (edges.has(key)) return { ok: true, value: false }
          edges.add(key)
          return { ok: true, value: true }
        default:
          return { ok: true, value: edges.delete(key) }
      }
    })
    t.deepEqual(results.map(r => r.ok ? r : { ok: false, code: r.code }), expected, 'each op had the outcome of a serial replay in call order')
    t.deepEqual(forward, [...edges].sort(), 'the stored edges equal the serial replay')
    for (const c of [chatIds[1], chatIds[2]]) {
      const want = [...edges].map(e => JSON.parse(e)).filter(([ec]) => ec === c).map(([, u]) => u).sort(numeric)
      t.deepEqual(await members.to(c).all(), want, `members.to(${c}) lists the replayed members`)
    }
  })
}

/**
 * The edges a relation direction keeps as lists, as sorted JSON [from, to]
 * pairs, decoded with bytewise; each list must be sorted and free of
 * duplicates.
 */
async function listedEdges (db, name, reversed) {
  const edges = []
  for (const [head, value] of await rawEntries(db, name)) {
    const others = decode(value)
    if (others.some((other, i) => i > 0 && others[i - 1] >= other)) throw new Error(`The list of ${head} in ${name} is not sorted: ${JSON.stringify(others)}`)
    for (const other of others) edges.push(JSON.stringify(reversed ? [other, head] : [head, other]))
  }
  return edges.sort()
}

each('500 concurrent counter.add calls lose no increment', async (t, db) => {
  const counter = db.counter('hits')
  const calls = []
  const others = []
  for (let i = 0; i < 500; i++) {
    calls.push(counter.add('k', 1))
    if (i % 5 === 0) others.push(counter.add('other', -2))
  }
  const kValues = await Promise.all(calls)
  await Promise.all(others)
  t.deepEqual([...kValues].sort(numeric), range(1, 500), 'the adds resolved with 1..500, each once')
  t.is(await counter.get('k'), 500, 'counter is 500')
  t.is(await counter.get('other'), -200, 'the interleaved counter is -200')
  const raw = (await rawEntries(db, layout.counter('hits'))).map(([key, value]) => [key, text(value)])
  t.deepEqual(raw, [['k', '500'], ['other', '-200']], 'raw counter values')
})

// ---------------------------------------------------------------------------
// Transactions (db.write) concurrently with single operations

each('db.write transfers race with single ops; throwing writes leave nothing', async (t, db, rand) => {
  const accountIndexes = { name: { unique: true, key: a => a.name }, byBalance: { key: a => [a.balance] } }
  const ledgerIndexes = { byTx: { key: l => l.tx === undefined ? undefined : [l.tx] } }
  const accounts = db.collection('accounts', { indexes: accountIndexes })
  const ledger = db.collection('ledger', { indexes: ledgerIndexes })
  const stats = db.counter('stats')
  const accountIds = []
  for (let i = 0; i < 5; i++) accountIds.push(await accounts.insert({ name: `acct${i}`, balance: 100 }))

  const ops = []
  for (let i = 0; i < 300; i++) {
    const r = rand()
    if (r < 0.5) {
      const from = rand.pick(accountIds)
      const to = rand.pick(accountIds.filter(a => a !== from))
      ops.push({ type: 'transfer', i, from, to, amount: 1 + rand.int(20), boom: rand() < 0.3 })
    } else if (r < 0.8) {
      ops.push({ type: 'deposit', i, id: rand.pick(accountIds) })
    } else {
      ops.push({ type: 'note', i })
    }
  }

  const transfer = op => db.write(async w => {
    const from = await accounts.in(w).get(op.from)
    await accounts.in(w).update(op.from, { balance: from.balance - op.amount })
    await ledger.in(w).insert({ tx: op.i, from: op.from, to: op.to, amount: op.amount })
    await stats.in(w).add('transfers', 1)
    if (op.boom) throw new Error(`boom ${op.i}`)
    await accounts.in(w).update(op.to, old => ({ ...old, balance: old.balance + op.amount }))
    return op.i
  })
  const results = await outcomes(ops.map(op => {
    if (op.type === 'transfer') return transfer(op)
    if (op.type === 'deposit') return accounts.update(op.id, old => ({ ...old, balance: old.balance + 1 }))
    return ledger.insert({ note: op.i })
  }))

  const transfers = ops.filter(op => op.type === 'transfer')
  const committed = transfers.filter(op => !op.boom)
  const deposits = ops.filter(op => op.type === 'deposit').length
  const notes = ops.filter(op => op.type === 'note')
  const wrong = results.filter((r, n) => {
    const op = ops[n]
    if (op.type === 'transfer' && op.boom) return r.ok || r.message !== `boom ${op.i}`
    return !r.ok
  })
  t.deepEqual(wrong, [], 'throwing writes rejected with their own error, everything else fulfilled')
  t.ok(committed.length > 0 && committed.length < transfers.length, `some transfers threw (${transfers.length - committed.length} of ${transfers.length})`)

  const accountRecords = await assertClean(t, db, 'accounts', accountIndexes)
  const total = [...accountRecords.values()].reduce((sum, a) => sum + a.balance, 0)
  t.is(total, 500 + deposits, 'money is conserved: total = initial + deposits (no half transfer)')

  const ledgerRecords = await assertClean(t, db, 'ledger', ledgerIndexes)
  const txs = [...ledgerRecords.values()].filter(l => l.tx !== undefined).map(l => l.tx).sort(numeric)
  t.deepEqual(txs, committed.map(op => op.i), 'the ledger holds exactly the committed transfers')
  const noted = [...ledgerRecords.values()].filter(l => l.note !== undefined).map(l => l.note).sort(numeric)
  t.deepEqual(noted, notes.map(op => op.i), 'the ledger holds every single-op note')
  t.deepEqual([...ledgerRecords.keys()].sort(numeric), range(1, committed.length + notes.length), 'ledger ids have no gaps: throwing writes consumed no ids')
  t.is(await stats.get('transfers'), committed.length, 'the transfer counter counts only committed writes')
  await assertCheckOk(t, db, 'after transfers')

  // Serial replay in call order gives every balance exactly.
  const balances = new Map(accountIds.map(id => [id, 100]))
  for (const op of ops) {
    if (op.type === 'deposit') balances.set(op.id, balances.get(op.id) + 1)
    if (op.type === 'transfer' && !op.boom) {
      balances.set(op.from, balances.get(op.from) - op.amount)
      balances.set(op.to, balances.get(op.to) + op.amount)
    }
  }
  t.deepEqual(accountIds.map(id => accountRecords.get(id).balance), accountIds.map(id => balances.get(id)), 'each balance equals the serial replay')
})

each('a write that catches failed ops commits the rest and nothing of the failed ops', async (t, db) => {
  const accountIndexes = { name: { unique: true, key: a => a.name }, byBalance: { key: a => [a.balance] } }
  const accounts = db.collection('accounts', { indexes: accountIndexes })
  const projects = db.collection('projects')
  const tasks = db.collection('tasks')
  // Declared before `notes`, so deleting a project first cascades its edges
  // (adding deletes to the batch) and only then hits notes' restrict.
  const assigned = db.relation('assigned', { from: projects, to: tasks, onDelete: 'cascade' })
  const notes = db.children('notes', { parent: projects, onDelete: 'restrict' })

  const ann = await accounts.insert({ name: 'ann', balance: 0 })
  const bob = await accounts.insert({ name: 'bob', balance: 0 })
  const project = await projects.insert({ title: 'p' })
  const taskIds = [await tasks.insert({ title: 't1' }), await tasks.insert({ title: 't2' })]
  for (const task of taskIds) await assigned.add(project, task)
  await notes.append(project, { text: 'keep me' })

  const complex = w => async () => {
    const A = accounts.in(w)
    const caught = []
    const attempt = async fn => {
      try {
        await fn()
        caught.push('no error')
      } catch (err) {
        caught.push(err.code)
      }
    }
    await attempt(() => A.insert({ name: 'ann', balance: 1000 }))
    await attempt(() => projects.in(w).del(project))
    await attempt(() => A.update(ann, { name: 'bob', balance: 1000 }))
    await attempt(() => A.update(9999, { balance: 1000 }))
    await attempt(() => assigned.in(w).add(project, 9999))
    const seen = {
      project: await projects.in(w).has(project),
      edges: [await assigned.in(w).has(project, taskIds[0]), await assigned.in(w).has(project, taskIds[1])],
      annName: (await A.get(ann)).name
    }
    const cat = await A.insert({ name: 'cat', balance: 5 })
    await A.update(ann, old => ({ ...old, balance: old.balance + 10 }))
    await notes.in(w).append(project, { text: 'added' })
    return { caught, seen, cat }
  }

  // The complex write runs amid single ops, and 20 small writes that each
  // catch a duplicate insert, then insert a fresh name.
  const calls = []
  let complexResult
  for (let i = 0; i < 40; i++) {
    if (i === 20) calls.push(db.write(w => complex(w)()).then(r => { complexResult = r }))
    if (i % 2 === 0) {
      calls.push(db.write(async w => {
        try {
          await accounts.in(w).insert({ name: 'bob', balance: 1 })
          return 'no error'
        } catch (err) {
          if (err.code !== 'LEVELKIT_UNIQUE') throw err
        }
        return accounts.in(w).insert({ name: `w${i}`, balance: 1 })
      }))
    } else {
      calls.push(accounts.update(bob, old => ({ ...old, balance: old.balance + 1 })))
    }
  }
  const results = await outcomes(calls)
  t.deepEqual(results.filter(r => !r.ok || r.value === 'no error'), [], 'every write fulfilled, each caught its error')

  t.deepEqual(complexResult.caught, ['LEVELKIT_UNIQUE', 'LEVELKIT_RESTRICT', 'LEVELKIT_UNIQUE', 'LEVELKIT_NOT_FOUND', 'LEVELKIT_NOT_FOUND'], 'the failed ops threw their codes')
  t.deepEqual(complexResult.seen, { project: true, edges: [true, true], annName: 'ann' }, 'inside the write, failed ops left no trace')

  const records = await assertClean(t, db, 'accounts', accountIndexes)
  const byName = new Map([...records.values()].map(a => [a.name, a]))
  t.is(records.size, 2 + 20 + 1, 'only the successful inserts created accounts')
  t.deepEqual([...records.keys()].sort(numeric), range(1, records.size), 'account ids have no gaps: failed inserts consumed no ids')
  t.deepEqual(byName.get('ann'), { id: ann, name: 'ann', balance: 10 }, 'ann got the +10 and nothing of the failed update')
  t.deepEqual(byName.get('bob'), { id: bob, name: 'bob', balance: 20 }, 'bob got exactly the 20 single-op deposits')
  t.is(byName.get('cat').id, complexResult.cat, 'the insert after the failed ops committed')
  t.ok(await projects.has(project), 'the project whose delete was refused still exists')
  const forward = (await rawEntries(db, layout.forward('assigned'))).map(([key]) => key)
  const reverse = (await rawEntries(db, layout.reverse('assigned'))).map(([key]) => key)
  t.deepEqual(forward, taskIds.map(task => [project, task]), 'both forward edges survive the rolled-back cascade')
  t.deepEqual(reverse, taskIds.map(task => [task, project]), 'both reverse edges survive the rolled-back cascade')
  t.deepEqual(await notes.range(project).all(), [{ text: 'keep me' }, { text: 'added' }], 'notes: the old one and the one appended after the failed ops')
  await assertCheckOk(t, db, 'after writes that caught errors')
})
