// With locking: 'serializable', a critical section may tell what it will
// read when it is called (a read hint, lib/writer.js readHints): the
// statement that opens a transaction reads the hinted keys of every section
// called by then, and the group's sections find them in the section cache,
// each without a round trip. These tests hold the hints to what a read
// would answer: a value decided earlier in the group wins over the one
// read, keys past one statement's are not taken as absent, and another
// process's write still fails the transaction that read the old value.
import test from 'tape'
import { open } from '../index.js'
import { ChatStore } from '../chat.js'
import { writeUntracked } from '../lib/database.js'
import { modelOf } from '../lib/model-handle.js'
import { encode } from '../lib/tuple.js'
import { postgresForTests, twoDatabases, rewriteStored } from './util/postgres.js'

const server = await postgresForTests(test)

/** @param {any} db */
const itemsOf = db => db.collection('items')

/**
 * A read hint of `ids` of the collection `items`.
 * @param {any} items @param {number[]} ids
 */
const hintOf = (items, ids) => () => [{ namespace: modelOf(items).records, keys: ids.map(id => encode(id)) }]

/**
 * A critical section that adds 1 to item `id`'s n.
 * @param {any} db @param {any} items @param {number} id @param {() => any[]} [hint]
 */
const increment = (db, items, id, hint) => db[writeUntracked](async (/** @type {any} */ w) => {
  const item = await items.in(w).get(id)
  await items.in(w).update(id, { n: item.n + 1 })
}, false, hint)

/** @param {import('tape').Test} t @param {(db: any) => Promise<void>} fn */
async function withDatabase (t, fn) {
  const db = await open({ backend: 'postgres', connectionString: server.connectionString, table: server.table(), shared: true, locking: 'serializable' })
  try {
    await fn(db)
  } finally {
    await db.close()
  }
}

/** @param {any} db */
const statementsTable = db => /** @type {any} */ (db).level.sharedWriterLock().name

/** @param {any} db */
const statementsOf = db => /** @type {any} */ (db).level.sharedWriterLock().stats.statements

test('postgres read hints: a group\'s hinted reads go in the statement that opens its transaction', async t => {
  await withDatabase(t, async db => {
    const items = itemsOf(db)
    for (let i = 1; i <= 8; i++) await items.insert({ n: i })
    /** @param {boolean} hinted */
    const group = async hinted => {
      const before = statementsOf(db)
      const seen = await Promise.all([1, 2, 3, 4, 5, 6, 7, 8].map(id => db[writeUntracked](async (/** @type {any} */ w) => {
        const item = await items.in(w).get(id)
        await items.in(w).update(id, { n: item.n + 100 })
        return item.n
      }, false, hinted ? hintOf(items, [id]) : undefined)))
      return { seen, statements: statementsOf(db) - before }
    }
    const plain = await group(false)
    t.same(plain.seen, [1, 2, 3, 4, 5, 6, 7, 8], 'without hints: each section read its item')
    t.ok(plain.statements >= 9, `without hints: a statement per section's read, then the batch (${plain.statements})`)
    const hinted = await group(true)
    t.same(hinted.seen, [101, 102, 103, 104, 105, 106, 107, 108], 'with hints: each section read its item as written')
    t.is(hinted.statements, 2, 'with hints: the opening (every section\'s read) and the batch with its COMMIT')
    t.same((await Promise.all([1, 2, 3, 4, 5, 6, 7, 8].map(id => items.get(id)))).map(item => item.n), [201, 202, 203, 204, 205, 206, 207, 208], 'every update written')
    t.same((await db.check()).problems, [], 'check() finds nothing')
  })
})

test('postgres read hints: a value decided earlier in the group wins over the hinted read', async t => {
  await withDatabase(t, async db => {
    const items = itemsOf(db)
    for (let i = 1; i <= 3; i++) await items.insert({ n: i })
    // The first section opens the transaction (reading item 1, with item 2
    // hinted by the second), then decides item 2; the second reads it.
    const [first, second] = await Promise.all([
      db[writeUntracked](async (/** @type {any} */ w) => {
        const one = await items.in(w).get(1)
        await items.in(w).update(2, { n: 20 })
        return one.n
      }),
      db[writeUntracked](async (/** @type {any} */ w) => (await items.in(w).get(2)).n, false, hintOf(items, [2]))
    ])
    t.is(first, 1, 'the first section read item 1')
    t.is(second, 20, 'the second section read item 2 as the first decided it, not as the opening read it')
    // Decided before the opening read: not read at all, and the same answer.
    const [, third] = await Promise.all([
      db[writeUntracked](async (/** @type {any} */ w) => {
        await items.in(w).update(3, { n: 30 })
        return (await items.in(w).get(1)).n
      }),
      db[writeUntracked](async (/** @type {any} */ w) => (await items.in(w).get(3)).n, false, hintOf(items, [3]))
    ])
    t.is(third, 30, 'a key decided before the opening: the decided value')
    t.same((await db.check()).problems, [], 'check() finds nothing')
  })
})

test('postgres read hints: more hinted keys than one statement reads: each read answers what is stored', async t => {
  await withDatabase(t, async db => {
    const items = itemsOf(db)
    for (let i = 1; i <= 3; i++) await items.insert({ n: i })
    // 1,200 ids without records first (one statement reads 1,000 keys at
    // most), then the three that have one.
    const absent = Array.from({ length: 1200 }, (_, i) => 100001 + i)
    const [, found] = await Promise.all([
      db[writeUntracked](async (/** @type {any} */ w) => (await items.in(w).get(1)).n),
      db[writeUntracked](async (/** @type {any} */ w) => {
        const records = await Promise.all([1, 2, 3].map(id => items.in(w).get(id)))
        const missing = await items.in(w).get(absent[0])
        return { ns: records.map(record => record?.n), missing }
      }, false, hintOf(items, [...absent, 1, 2, 3]))
    ])
    t.same(found.ns, [1, 2, 3], 'the records past the statement\'s keys are found')
    t.is(found.missing, undefined, 'a hinted id without a record: none')
  })
})

test('postgres read hints: another process\'s write fails the transaction that read the old value (no lost update)', async t => {
  await twoDatabases(server, { locking: 'serializable', poolSize: 2 }, async (a, b) => {
    const counters = [itemsOf(a), itemsOf(b)]
    await counters[0].insert({ n: 0 })
    const rounds = 25
    // A first increment in each, whose sections both read before either
    // writes: their transactions overlap, so one fails however the machine
    // is loaded (CI once ran the rounds below without an overlap).
    /** @type {Array<() => void>} */
    const opens = []
    const bothRead = [0, 1].map(() => new Promise(resolve => opens.push(() => resolve(undefined))))
    await Promise.all([0, 1].map(i => [a, b][i][writeUntracked](async (/** @type {any} */ w) => {
      const item = await counters[i].in(w).get(1)
      opens[i]()
      await Promise.all(bothRead)
      await counters[i].in(w).update(1, { n: item.n + 1 })
    }, false, hintOf(counters[i], [1]))))
    /** @param {number} i */
    const add = i => increment([a, b][i], counters[i], 1, hintOf(counters[i], [1]))
    await Promise.all([0, 1].map(async i => {
      // Several in flight in each process: groups of sections, hinted.
      for (let round = 0; round < rounds; round++) await Promise.all([add(i), add(i)])
    }))
    const locks = [a, b].map(db => /** @type {any} */ (db).level.sharedWriterLock())
    t.is((await counters[1].get(1)).n, 2 + 2 * 2 * rounds, `every increment counted (${2 + 2 * 2 * rounds})`)
    t.ok(locks[0].stats.retries + locks[1].stats.retries > 0, `the processes failed each other's transactions, which ran again (${locks[0].stats.retries + locks[1].stats.retries} reruns)`)
    t.same((await a.check()).problems, [], 'check() finds nothing')
  })
})

test('postgres read hints: ChatStore\'s createChat, addChatMessage and createUser groups read in their opening statement', async t => {
  await withDatabase(t, async db => {
    const store = await ChatStore.open(db, { passwordCost: { scryptN: 2, pbkdf2Iterations: 1000 }, userChats: 'edges' })
    const users = []
    for (let i = 0; i < 24; i++) users.push(await store.createUser({ username: `u${i}`, password: 'password1' }))
    /** @param {() => Promise<any>[]} calls */
    const group = async calls => {
      const before = statementsOf(db)
      const answers = await Promise.all(calls())
      return { answers, statements: statementsOf(db) - before }
    }
    // (The first chat finds no sequence, and looks for the highest stored id: a range read.)
    await store.createChat({ name: 'first', adminId: users[0] })
    const chats = await group(() => Array.from({ length: 8 }, (_, i) => store.createChat({ name: `c${i}`, adminId: users[i], userIds: users.slice(8, 24) })))
    t.is(chats.statements, 2, 'eight createChats of 17 members: the opening with every member\'s record, then the batch')
    t.same((await store.getChats(users[8])).length, 8, 'each chat has its members')
    const messages = await group(() => chats.answers.map((chatId, i) => store.addChatMessage({ chatId, senderId: users[i], text: `hello ${i}` })))
    t.same(messages.answers, [1, 1, 1, 1, 1, 1, 1, 1], 'each chat\'s first message is its 1')
    t.is(messages.statements, 2, 'eight first messages of eight chats: the opening with each chat\'s record, sequence and purge marker, then the batch')
    const more = await group(() => chats.answers.map((chatId, i) => store.addChatMessage({ chatId, senderId: users[i], text: `again ${i}` })))
    t.same(more.answers, [2, 2, 2, 2, 2, 2, 2, 2], 'each chat\'s second message is its 2')
    t.is(more.statements, 2, 'eight second messages: the opening reads each chat\'s block too (guessed from the first message), then the batch')
    const created = await group(() => Array.from({ length: 8 }, (_, i) => store.createUser({ username: `v${i}`, password: 'password1' })))
    t.is(new Set(created.answers).size, 8, 'eight new users')
    t.ok(created.statements <= 4, `eight createUsers: at most two transactions of two statements (hashing the passwords first, the calls come apart): ${created.statements}`)
    const taken = await store.createUser({ username: 'v3', password: 'password1' }).catch(err => err)
    t.is(taken.code, 'LEVELKIT_UNIQUE', 'a taken username is refused: the hinted read of its index entry found it')
    t.same((await db.check()).problems, [], 'check() finds nothing')
  })
})

test('postgres read hints: the block a message goes in is guessed from what this process appended and heard, with the block after it; a wrong guess costs a read, not a message', async t => {
  const base = { backend: 'postgres', connectionString: server.connectionString, table: server.table(), shared: true, locking: 'serializable' }
  const b = await open(base)
  t.teardown(() => b.close())
  const options = { passwordCost: { scryptN: 2, pbkdf2Iterations: 1000 }, userChats: 'edges' }
  const there = await ChatStore.open(b, options)
  const alice = await there.createUser({ username: 'alice', password: 'password1' })
  const chatId = await there.createChat({ name: 'c', adminId: alice })
  // The other process appends 40 (blocks of 16: the third block), then this one opens: it heard none of them.
  for (let i = 1; i <= 40; i++) await there.addChatMessage({ chatId, senderId: alice, text: `m${i}` })
  const a = await open(base)
  t.teardown(() => a.close())
  const here = await ChatStore.open(a, options)
  const lock = /** @type {any} */ (a).level.sharedWriterLock()
  /** @param {string} text */
  const counted = async text => {
    const before = lock.stats.statements
    const id = await here.addChatMessage({ chatId, senderId: alice, text })
    return { id, statements: lock.stats.statements - before }
  }
  const blocks = /** @type {any} */ (modelOf(here.messages)).blocks
  t.same(await counted('unknown'), { id: 41, statements: 3 }, 'a chat this process knows nothing of: no guess; the opening, the block\'s read, the batch')
  for (let i = 42; i <= 44; i++) await there.addChatMessage({ chatId, senderId: alice, text: `m${i}` })
  t.same(await counted('own'), { id: 45, statements: 2 }, 'after its own append and three of theirs: its block (33..48) read in the opening; the opening and the batch')
  // The other process's appends to block 49.. not heard of yet (its notifications late): the stub
  // stays until this process has had them all (its watch sees message 50).
  blocks.heard = () => {}
  const abort = new AbortController()
  const heard = (async () => {
    for await (const message of here.watch(chatId, { signal: abort.signal })) if (message.id === 50) return true
    return false
  })()
  for (let i = 46; i <= 50; i++) await there.addChatMessage({ chatId, senderId: alice, text: `m${i}` })
  t.ok(await heard, 'this process had the notifications of 46..50')
  abort.abort()
  delete blocks.heard
  t.same(await counted('after'), { id: 51, statements: 2 }, 'theirs went past the guessed block: the block after it, read in the opening too')
  // A guess that is wrong: a block past the real one, as if heard.
  blocks.heard(encode([chatId, 81]))
  t.same(await counted('wrong'), { id: 52, statements: 3 }, 'the guessed blocks were not the one: the opening, the right block\'s read, the batch')
  t.same(await counted('again'), { id: 53, statements: 2 }, 'the next guess is the block this process just appended to')
  const messages = await here.getChatMessages(chatId, { n: 100 })
  t.same(messages?.map(m => m.id), Array.from({ length: 53 }, (_, i) => i + 1), 'messages 1..53, in order, none lost')
  t.same(messages?.filter(m => ['unknown', 'own', 'after', 'wrong', 'again'].includes(m.text)).map(m => m.id), [41, 45, 51, 52, 53], 'each where it was answered')
  t.same((await a.check()).problems, [], 'check() finds nothing')
})

test('postgres read hints: a chat sequence that is no number makes the opening read no block; the append refuses it as it would', async t => {
  await withDatabase(t, async db => {
    const store = await ChatStore.open(db, { passwordCost: { scryptN: 2, pbkdf2Iterations: 1000 } })
    const alice = await store.createUser({ username: 'alice', password: 'password1' })
    const chatId = await store.createChat({ name: 'c', adminId: alice })
    for (let i = 1; i <= 3; i++) await store.addChatMessage({ chatId, senderId: alice, text: `m${i}` })
    const sequence = /** @type {any} */ (modelOf(store.messages)).sequence
    await rewriteStored(server.pool, statementsTable(db), sequence.sublevel.prefixKey(encode(chatId), 'buffer', false), () => 'x3')
    const err = await store.addChatMessage({ chatId, senderId: alice, text: 'm4' }).catch(e => e)
    t.is(err?.code, 'LEVELKIT_DECODE_ERROR', 'the append refuses the stored sequence (not a failed statement)')
    await rewriteStored(server.pool, statementsTable(db), sequence.sublevel.prefixKey(encode(chatId), 'buffer', false), () => '3')
    t.is(await store.addChatMessage({ chatId, senderId: alice, text: 'm4' }), 4, 'once mended, message 4')
  })
})

test('postgres read hints: values read for a transaction that ended before they came are not kept for the next', async t => {
  await withDatabase(t, async db => {
    const items = itemsOf(db)
    for (let i = 1; i <= 3; i++) await items.insert({ n: i * 10 })
    const table = /** @type {any} */ (db).level.sharedWriterLock().name
    // A section that starts a read it does not wait for (it opens the
    // transaction, item 1 hinted), lets it go out, and throws: the
    // transaction ends (its COMMIT queued behind the read) before the
    // opening's answer comes.
    const thrown = await db[writeUntracked](async (/** @type {any} */ w) => {
      items.in(w).get(2).catch(() => {})
      await new Promise(resolve => setImmediate(resolve))
      throw new Error('changed its mind')
    }, false, hintOf(items, [1])).catch((/** @type {any} */ err) => err)
    t.is(thrown.message, 'changed its mind', 'the section threw, its read still in flight')
    await new Promise(resolve => setTimeout(resolve, 200))
    const id = modelOf(items).records.keyId(encode(1))
    t.notOk(/** @type {any} */ (db).writer.sectionCache.has(id), 'the section cache keeps nothing of it')
    // The stored value changes behind levelkit's back: a new transaction reads it.
    const key = modelOf(items).records.sublevel.prefixKey(encode(1), 'buffer', false)
    await rewriteStored(server.pool, table, key, text => text.replace('10', '99'))
    const seen = await db[writeUntracked](async (/** @type {any} */ w) => (await items.in(w).get(1)).n)
    t.is(seen, 99, 'a section in the next transaction reads item 1 as stored')
  })
})

test('postgres read hints: a hint that throws leaves its section and the others to read as they would', async t => {
  await withDatabase(t, async db => {
    const items = itemsOf(db)
    for (let i = 1; i <= 2; i++) await items.insert({ n: i })
    const answers = await Promise.all([
      db[writeUntracked](async (/** @type {any} */ w) => (await items.in(w).get(1)).n, false, hintOf(items, [1])),
      db[writeUntracked](async (/** @type {any} */ w) => (await items.in(w).get(2)).n, false, () => { throw new Error('a bad hint') })
    ])
    t.same(answers, [1, 2], 'both sections answered')
  })
})

test('postgres read hints: a section that decides on a hinted value runs again when a query writes its group under it', async t => {
  await withDatabase(t, async db => {
    const items = itemsOf(db)
    for (let i = 1; i <= 3; i++) await items.insert({ n: i })
    const table = /** @type {any} */ (db).level.sharedWriterLock().name
    const key = modelOf(items).records.sublevel.prefixKey(encode(1), 'buffer', false)
    let runs = 0
    const [, second] = await Promise.all([
      // Opens the transaction (item 1 hinted by the second) and decides: its group waits.
      increment(db, items, 3),
      db[writeUntracked](async (/** @type {any} */ w) => {
        runs++
        const one = await items.in(w).get(1)
        if (runs === 1) {
          // Another writer sets item 1 after the transaction's snapshot.
          await rewriteStored(server.pool, table, key, text => text.replace('"n":1', '"n":1000'))
        }
        // A query writes the group first (drain()): the transaction the value was read in ends.
        await items.in(w).query().all()
        await items.in(w).update(1, { n: one.n + 1 })
        return one.n
      }, false, hintOf(items, [1]))
    ])
    t.is(runs, 2, 'the second section ran again')
    t.is(second, 1000, 'and read item 1 as the other writer left it')
    t.is((await items.get(1)).n, 1001, 'no write lost')
    t.is((await items.get(3)).n, 4, 'the first section\'s write is there')
  })
})

test('postgres read hints: a section that decides on an earlier section\'s unwritten value runs again when a query writes its group under it', async t => {
  await withDatabase(t, async db => {
    const items = itemsOf(db)
    for (let i = 1; i <= 3; i++) await items.insert({ n: i })
    const lock = /** @type {any} */ (db).level.sharedWriterLock()
    const key = modelOf(items).records.sublevel.prefixKey(encode(1), 'buffer', false)
    let runs = 0
    let armed = false
    // Another writer's update, committed once the group's COMMIT is done and before the next transaction begins.
    const query = lock.query.bind(lock)
    lock.query = (/** @type {any} */ statement, /** @type {any} */ values) => {
      if (!armed || lock.holding) return query(statement, values)
      armed = false
      return (async () => {
        await rewriteStored(server.pool, lock.name, key, text => text.replace('"n":2', '"n":1000'))
        return query(statement, values)
      })()
    }
    await Promise.all([
      increment(db, items, 1),
      db[writeUntracked](async (/** @type {any} */ w) => {
        runs++
        // What the first section decided, not yet written.
        const one = await items.in(w).get(1)
        if (runs === 1) armed = true
        // The query writes the group (its COMMIT), then reads in a new transaction.
        await items.in(w).query().all()
        await items.in(w).update(1, { n: one.n + 1 })
      })
    ])
    t.is(runs, 2, 'the second section ran again')
    t.is((await items.get(1)).n, 1001, 'the other writer\'s update is not lost')
  })
})
