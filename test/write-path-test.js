// The write path under failures and misuse, on memory-level with a batch
// that can be made slow or failing: things the conformance suite cannot
// provoke through the public API alone.
import test from 'tape'
import { MemoryLevel } from 'memory-level'
import { open } from '../index.js'
import { ChatStore } from '../chat.js'

/** A memory database whose next batch waits `ms` and then fails if `fail`. */
function flaky () {
  const level = new MemoryLevel()
  const plan = { delay: 0, fail: 0 }
  const batch = level._batch.bind(level)
  level._batch = async (ops, options) => {
    if (plan.delay) await new Promise(resolve => setTimeout(resolve, plan.delay))
    if (plan.fail > 0) {
      plan.fail--
      throw Object.assign(new Error('disk full'), { code: 'LEVEL_IO_ERROR' })
    }
    return batch(ops, options)
  }
  return { level, plan }
}

/** @param {Promise<unknown>} promise */
async function codeOf (promise) {
  try {
    await promise
    return 'fulfilled'
  } catch (err) {
    return err.code
  }
}

test('a refusal that rests on a failed write is LEVELKIT_ABORTED, never a wrong answer', async t => {
  const { level, plan } = flaky()
  const db = await open({ db: level })
  const users = db.collection('users', { indexes: { name: { unique: true, key: u => u.name } } })
  await users.insert({ name: 'warm' })
  plan.delay = 30
  plan.fail = 1
  const first = users.insert({ name: 'ann' })
  const second = users.insert({ name: 'ann' })
  t.same(await Promise.all([codeOf(first), codeOf(second)]), ['LEVEL_IO_ERROR', 'LEVELKIT_ABORTED'],
    'the second insert is not told the name is taken by an insert that failed')
  plan.delay = 0
  t.is(typeof await users.insert({ name: 'ann' }), 'number', 'the name is free')
  t.ok((await db.check()).ok)
  await db.close()
})

test('a no-op answer waits until the write it rests on is on disk', async t => {
  const { level, plan } = flaky()
  const db = await open({ db: level })
  const a = db.collection('a')
  const rel = db.relation('rel', { from: a, to: a })
  const x = await a.insert({})
  plan.delay = 30
  const adding = rel.add(x, x)
  t.is(await rel.add(x, x), false, 'the edge exists (decided by the first add)')
  t.is(await rel.has(x, x), true, 'and by the time that answer arrives, it is written')
  await adding
  plan.fail = 1
  const failing = rel.remove(x, x)
  const again = rel.remove(x, x)
  t.same(await Promise.all([codeOf(failing), codeOf(again)]), ['LEVEL_IO_ERROR', 'LEVELKIT_ABORTED'])
  t.is(await rel.has(x, x), true)
  await db.close()
})

test('nested db.write(), repair and ChatStore calls inside a write scope fail fast', async t => {
  const db = await open()
  const chat = new ChatStore(db, { passwordCost: { scryptN: 1024 } })
  const users = db.collection('things')
  const outcome = await codeOf(db.write(async () => {
    t.is(await codeOf(db.write(async () => {})), 'LEVELKIT_INVALID', 'nested db.write()')
    t.is(await codeOf(db.check({ repair: true })), 'LEVELKIT_INVALID', 'repair')
    t.is(await codeOf(chat.createUser({ username: 'x', password: 'y' })), 'LEVELKIT_INVALID', 'ChatStore method')
  }))
  t.is(outcome, 'fulfilled')
  t.is(await users.insert({}), 1, 'later writes are not blocked')
  await db.close()
})

test('db.write() options: sync and rerunnable take booleans only; a refused option writes nothing', async t => {
  const db = await open()
  const things = db.collection('things')
  let ran = 0
  for (const options of [{ rerunnable: 'yes' }, { rerunnable: 1 }, { sync: 'true' }, { rerunnable: null }]) {
    const err = await db.write(async w => { ran++; await things.in(w).insert({}) }, /** @type {any} */ (options)).catch(err => err)
    t.is(err?.code, 'LEVELKIT_INVALID', `${JSON.stringify(options)} refused`)
  }
  t.is(ran, 0, 'the callback never ran')
  t.is(await things.count(), 0, 'nothing written')
  t.is(await db.write(async w => things.in(w).insert({}), { rerunnable: true }), 1, 'rerunnable: true writes (once: no claim to refuse off IndexedDB)')
  t.is(await db.write(async w => things.in(w).insert({}), { rerunnable: false, sync: true }), 2, 'rerunnable: false, sync: true')
  await db.close()
})

// Callback tracking is switched off between callbacks (it costs every promise
// of the process): each new callback, however it starts, is tracked again.
test('nested calls are refused in every callback, after callbacks have come and gone', async t => {
  const db = await open()
  const things = db.collection('things')
  const starts = [
    () => db.write(async () => db.write(async () => {})),
    () => new Promise(resolve => setTimeout(resolve, 1)).then(() => db.write(async () => { await null; return db.write(async () => {}) })),
    () => db.write(async w => { await things.in(w).insert({}); return db.write(async () => {}) })
  ]
  for (let round = 0; round < 2; round++) {
    for (const [i, start] of starts.entries()) {
      t.is(await codeOf(start()), 'LEVELKIT_INVALID', `round ${round}, start ${i}: nested db.write() refused`)
    }
    // Concurrent callbacks queue: the second must be tracked although the
    // first has settled before it runs.
    const both = await Promise.all([0, 1].map(() => codeOf(db.write(async () => db.write(async () => {})))))
    t.same(both, ['LEVELKIT_INVALID', 'LEVELKIT_INVALID'], `round ${round}: queued callbacks both refuse nesting`)
  }
  const id = await things.insert({})
  t.ok(await things.get(id), 'outside callbacks, model calls run')
  await db.close()
})

test('a lagging sequence is never reused, whatever the first write of a process is', async t => {
  const level = new MemoryLevel()
  const first = await open({ db: level })
  const users = first.collection('users', { indexes: { name: { unique: true, key: u => u.name } } })
  for (const name of ['a', 'b', 'c']) await users.insert({ name })
  await first.level.sublevel('users.seq', { keyEncoding: 'view' }).clear()
  for (const start of ['put', 'failed insert']) {
    const db = await open({ db: level })
    const again = db.collection('users', { indexes: { name: { unique: true, key: u => u.name } } })
    if (start === 'put') await again.put(2, { name: 'b2' })
    else t.is(await codeOf(again.insert({ name: 'a' })), 'LEVELKIT_UNIQUE')
    const id = await again.insert({ name: `after ${start}` })
    t.ok(id > 3, `after a first ${start}, insert hands out ${id}, past the stored ids`)
    t.is((await again.get(1)).name, 'a', 'record 1 intact')
  }
  await level.close()
})

test('paging an index skips vanished records without ending early', async t => {
  const db = await open()
  const people = db.collection('people', { indexes: { age: { key: p => [p.age] } } })
  for (const age of [10, 20, 30, 40, 50, 60]) await people.insert({ age })
  // An index entry whose record is gone (damage check() reports).
  await db.level.sublevel('people', { keyEncoding: 'view' }).del((await import('../index.js')).encodeTuple(2))
  const ages = []
  let cursor = null
  do {
    const page = await people.query({ index: 'age', limit: 2, cursor }).page()
    ages.push(...page.items.map(p => p.age))
    cursor = page.cursor
  } while (cursor)
  t.same(ages, [10, 30, 40, 50, 60], 'every page is full until the end')
  t.same((await people.query({ index: 'age', limit: 3 }).all()).map(p => p.age), [10, 30, 40], 'limit counts records, not entries')
  await db.close()
})

test('user callbacks get a deeply frozen record', async t => {
  const db = await open()
  const lists = db.collection('lists', { indexes: { last: { key: r => r.list.reverse()[0] } } })
  t.is(await codeOf(lists.insert({ list: [1, 2] })), 'LEVELKIT_INVALID', 'reverse() on a nested array is refused')
  t.same(await db.level.keys().all(), [])
  await db.close()
})

test('watch() starts from the children there when it is called', async t => {
  const db = await open()
  const chats = db.collection('chats')
  const messages = db.children('messages', { parent: chats })
  const c = await chats.insert({})
  await messages.append(c, 'before')
  const controller = new AbortController()
  const stream = messages.watch(c, { signal: controller.signal })
  await messages.append(c, 'first')
  await messages.append(c, 'second')
  const seen = []
  for await (const [seq, value] of stream) {
    seen.push([seq, value])
    if (seen.length === 2) controller.abort()
  }
  t.same(seen, [[2, 'first'], [3, 'second']])
  await db.close()
})

test('a failed purge batch is retried; settled() waits for it', async t => {
  const { level, plan } = flaky()
  const db = await open({ db: level })
  const chats = db.collection('chats')
  const messages = db.children('messages', { parent: chats, onDelete: 'purge' })
  const c = await chats.insert({})
  await db.write(async w => { for (let i = 0; i < 1500; i++) await messages.in(w).append(c, i) })
  await db.write(async w => {
    await chats.in(w).del(c)
    t.is(await messages.in(w).get(c, 1), undefined, 'hidden inside the deleting scope too')
    t.is(await messages.in(w).lastSeq(c), 0)
    t.is(await codeOf(messages.in(w).put(c, 1, 'x')), 'LEVELKIT_NOT_FOUND', 'no put to a purged parent')
  })
  plan.fail = 1
  await messages.settled()
  t.same(await db.level.sublevel('messages', { keyEncoding: 'view' }).keys().all(), [], 'purged despite a failed batch')
  t.same(await db.level.sublevel('messages.purge', { keyEncoding: 'view' }).keys().all(), [])
  await db.close()
})

test('check() reports malformed keys instead of throwing, and repairs them', async t => {
  const db = await open()
  const users = db.collection('users')
  const chats = db.collection('chats')
  db.relation('members', { from: chats, to: users })
  db.children('messages', { parent: chats })
  await users.insert({})
  const { encodeTuple } = await import('../index.js')
  await db.level.sublevel('users', { keyEncoding: 'view' }).put(Uint8Array.of(0x99), '{}')
  await db.level.sublevel('users', { keyEncoding: 'view' }).put(encodeTuple('x'), '{}')
  await db.level.sublevel('members.fwd', { keyEncoding: 'view' }).put(encodeTuple('x'), '')
  await db.level.sublevel('messages', { keyEncoding: 'view' }).put(encodeTuple(5), '1')
  const report = await db.check()
  t.same(report.problems.map(p => p.type), ['invalid-key', 'invalid-key', 'invalid-key', 'invalid-key'])
  t.is((await db.check({ repair: true })).repaired, 4)
  t.ok((await db.check()).ok)
  t.is(await users.insert({}), 2, 'the sequence ignores what is not an id')
  await db.close()
})

test('a scoped face cannot read after its scope ends', async t => {
  const db = await open()
  const things = db.collection('things')
  const id = await things.insert({ v: 1 })
  let kept
  await db.write(async w => { kept = things.in(w); await kept.get(id) })
  await things.put(id, { v: 2 })
  t.is(await codeOf(kept.get(id)), 'LEVELKIT_INVALID')
  t.is(await codeOf(kept.getMany([id])), 'LEVELKIT_INVALID')
  await db.close()
})

test('the read cache serves only what is on disk: not a failed write, not a replaced value, never more than its size', async t => {
  const { level, plan } = flaky()
  const db = await open({ db: level, readCache: 3 })
  const users = db.collection('users', { indexes: { name: { unique: true, key: u => u.name } } })
  const ids = []
  for (const name of ['a', 'b', 'c', 'd', 'e']) ids.push(await users.insert({ name }))
  for (const id of ids) await users.get(id)
  const records = modelSpace(db, 'users')
  const held = records.readCache.size
  t.ok(held <= 3, `at most readCache values per namespace (${held})`)

  t.is((await users.getBy('name', 'e')).id, ids[4], 'cached: the last records read')
  plan.delay = 20
  plan.fail = 1
  const failing = users.update(ids[4], { name: 'e2' })
  t.is((await users.get(ids[4])).name, 'e', 'while the batch is in flight, readers see what is on disk')
  t.is(await codeOf(failing), 'LEVEL_IO_ERROR')
  t.is((await users.get(ids[4])).name, 'e', 'a failed batch leaves the cached value as it was')
  t.is((await users.getBy('name', 'e')).id, ids[4], 'and the cached index entry')
  t.is(await users.getBy('name', 'e2'), undefined)

  plan.delay = 0
  await users.update(ids[4], { name: 'e3' })
  t.is((await users.get(ids[4])).name, 'e3', 'a written batch updates the cached record')
  t.is(await users.getBy('name', 'e'), undefined, 'and drops the replaced index entry')
  t.is((await users.getBy('name', 'e3')).id, ids[4])
  await users.del(ids[4])
  t.is(await users.get(ids[4]), undefined, 'and a delete')
  t.ok((await db.check()).ok)
  await db.close()

  const off = await open({ backend: 'memory', readCache: 0 })
  const things = off.collection('things')
  await things.get(await things.insert({}))
  t.is(modelSpace(off, 'things').readCache, null, 'readCache: 0 turns it off')
  await off.close()
  t.is(await codeOf(open({ backend: 'memory', readCache: -1 })), 'LEVELKIT_INVALID', 'a bad readCache is refused')
  t.is(await codeOf(open({ backend: 'memory', readCache: '10' })), 'LEVELKIT_INVALID')
})

/** The records namespace of a collection, for looking at its cache. @param {any} db @param {string} name */
function modelSpace (db, name) {
  return db.models().find((/** @type {any} */ m) => m.kind === 'collection' && m.model.name === name).model.records
}

test('cached relation lists follow every written edge, even one written while the list was read', async t => {
  for (const backend of ['memory', 'leveldb']) {
    const db = backend === 'memory'
      ? await open({ backend: 'memory' })
      : await open({ backend: 'leveldb', location: await tempLocation() })
    const users = db.collection('users')
    const groups = db.collection('groups')
    const members = db.relation('members', { from: groups, to: users })
    const u = await users.insert({})
    const gs = []
    for (let i = 0; i < 30; i++) gs.push(await groups.insert({}))
    let stale = 0
    const expected = new Set()
    for (const g of gs) {
      // A list read racing with the add: whatever it returns, the next read
      // after the add has resolved must include the new edge.
      const racing = members.from(u).all()
      await members.add(g, u)
      expected.add(g)
      await racing
      const after = await members.from(u).all()
      if (after.length !== expected.size || !after.every(id => expected.has(id))) stale++
    }
    for (const g of gs.slice(0, 10)) {
      const racing = members.to(g).all()
      await members.remove(g, u)
      expected.delete(g)
      await racing
      if ((await members.to(g).all()).length !== 0) stale++
      if ((await members.from(u).all()).length !== expected.size) stale++
    }
    t.is(stale, 0, `${backend}: no stale list after 40 writes racing with reads`)
    t.same(await members.from(u, { limit: 5 }).all(), gs.slice(10, 15), `${backend}: limited queries read the range as before`)
    t.same(await members.from(u, { reverse: true, limit: 2 }).all(), [gs[29], gs[28]])
    await db.close()
  }
})

async function tempLocation () {
  const { mkdtemp } = await import('node:fs/promises')
  const { tmpdir } = await import('node:os')
  const { join } = await import('node:path')
  return mkdtemp(join(tmpdir(), 'levelkit-write-path-'))
}

test('a group commit writes each key once: its last op, in order', async t => {
  const { level, plan } = flaky()
  /** @type {any[][]} */
  const batches = []
  const batch = level._batch.bind(level)
  level._batch = async (ops, options) => {
    batches.push(ops.map((/** @type {any} */ op) => op.type))
    return batch(ops, options)
  }
  const db = await open({ db: level })
  const notes = db.collection('notes')
  const hits = db.counter('hits')
  const id = await notes.insert({ n: 0 })
  batches.length = 0
  // The first update is written alone; the 50 updates and 51 increments
  // behind it are decided while it is slow, and go out as one group.
  plan.delay = 30
  const updates = []
  for (let n = 1; n <= 51; n++) updates.push(notes.update(id, { n }), hits.add('all', 1))
  await Promise.all(updates)
  t.same(batches.map(ops => ops.length), [1, 2], 'the first update, then one op per key for the other 101 writes')
  t.same(await notes.get(id), { id, n: 51 }, 'the last update wins')
  t.is(await hits.get('all'), 51, 'every increment counted')
  // A key put and then deleted in one group is deleted.
  batches.length = 0
  const doomed = await notes.insert({ n: -1 })
  batches.length = 0
  const writes = [notes.update(doomed, { n: -2 }), notes.del(doomed), notes.insert({ n: 99 })]
  await Promise.all(writes)
  t.same(await notes.get(doomed), undefined, 'a put followed by a delete leaves it deleted')
  t.ok(batches.flat().includes('del'), 'the delete is written')
  t.ok((await db.check()).ok)
  await db.close()
})
