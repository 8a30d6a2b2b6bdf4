// Stored data that does not parse as what levelkit writes there (written
// behind its back, or damaged) fails every read and write that needs it
// with LEVELKIT_DECODE_ERROR, naming where and with the parse error as
// `cause`: not a raw SyntaxError, not LEVELKIT_INVALID (which means the
// caller's input is bad). check() keeps reporting such data rather than
// throwing. Environment-free.

import { encodeTuple as encode } from '../../index.js'
import { rejects } from '../conformance/index.js'

const DECODE = 'LEVELKIT_DECODE_ERROR'
// A tuple cut short: an array holding a number of one byte.
const BAD_TUPLE = new Uint8Array([0xa0, 0x42, 0x01])

/**
 * Write a raw value behind levelkit's back.
 * @param {any} db @param {string} namespace @param {Uint8Array} key @param {string | Uint8Array} value
 */
async function plant (db, namespace, key, value) {
  const sublevel = db.level.sublevel(namespace, { keyEncoding: 'view', valueEncoding: typeof value === 'string' ? 'utf8' : 'view' })
  await sublevel.put(key, value)
  // A tab holding IndexedDB's leased lock sees writes made to db.level
  // directly only once its lease cache is dropped (documented): this one
  // may know the key (a list of a record it created, known to be empty).
  db.writer.idb?.clearCache()
}

/** @param {any} t @param {Promise<unknown>} promise @param {string} what @param {boolean} [json] the cause is a SyntaxError */
async function decodeError (t, promise, what, json = true) {
  const err = await rejects(t, promise, DECODE, what)
  if (err && json) t.ok(err.cause instanceof SyntaxError, `${what}: its cause is the SyntaxError`)
}

/** @param {any} t @param {any} db @param {boolean} [reported] check() looks at the damaged data */
async function checkReports (t, db, reported = true) {
  try {
    const report = await db.check()
    if (reported) t.is(report.ok, false, 'check() reports the damage rather than throwing')
    else t.pass('check() does not throw')
  } catch (err) {
    t.fail(`check() threw ${/** @type {Error} */ (err).message}`)
  }
}

/** @param {any} test @param {{ backend: string, open: () => Promise<any> }} common */
export default function (test, common) {
  test(`${common.backend}: a record that does not parse`, async (/** @type {any} */ t) => {
    const db = await common.open()
    const users = db.collection('users', {
      indexes: { username: { unique: true, key: (/** @type {any} */ u) => u.username }, byAge: { key: (/** @type {any} */ u) => u.age } }
    })
    await users.insert({ username: 'ann', age: 30 })
    await plant(db, 'users', encode(5), '{"username":')
    await plant(db, 'users', encode(6), '5')
    await plant(db, 'users.idx.username', encode(['ghost']), encode(5))
    await plant(db, 'users.idx.byAge', encode([7, 5]), new Uint8Array(0))
    await decodeError(t, users.get(5), 'get()')
    await decodeError(t, users.getMany([1, 5]), 'getMany()')
    await decodeError(t, users.getBy('username', 'ghost'), 'getBy()')
    await decodeError(t, users.query().all(), 'query()')
    await decodeError(t, users.query({ index: 'byAge' }).all(), 'an index query()')
    await decodeError(t, users.update(5, { age: 1 }), 'update() with a patch')
    await decodeError(t, users.update(5, () => ({ username: 'x' })), 'update() with a function')
    await decodeError(t, users.put(5, { username: 'x' }), 'put() over it')
    await decodeError(t, users.del(5), 'del()')
    await rejects(t, users.get(6), DECODE, 'a record that is JSON but not an object')
    t.is(await users.has(5), true, 'has() needs no parse')
    t.same(await users.get(1), { id: 1, username: 'ann', age: 30 }, 'other records read as usual')
    await checkReports(t, db)
    await db.close()
  })

  test(`${common.backend}: a covering index entry that does not parse`, async (/** @type {any} */ t) => {
    const db = await common.open()
    const people = db.collection('people', { id: (/** @type {any} */ p) => p.name, indexes: { email: { unique: true, covering: true, key: (/** @type {any} */ p) => p.email } } })
    await people.insert({ name: 'ann', email: 'ann@x' })
    await plant(db, 'people.idx.email', encode(['ghost@x']), '{oops')
    await decodeError(t, people.getBy('email', 'ghost@x'), 'getBy()')
    await decodeError(t, people.query({ index: 'email' }).all(), 'an index query()')
    await decodeError(t, people.insert({ name: 'zed', email: 'ghost@x' }), 'insert() taking its value')
    t.same(await people.getBy('email', 'ann@x'), { name: 'ann', email: 'ann@x' }, 'other entries read as usual')
    await checkReports(t, db)
    await db.close()
  })

  test(`${common.backend}: a record key or a sequence that does not parse`, async (/** @type {any} */ t) => {
    const db = await common.open()
    const keyed = db.collection('keyed')
    const counted = db.collection('counted')
    await plant(db, 'keyed', BAD_TUPLE.subarray(1), '{}')
    await plant(db, 'counted.seq', encode('last'), 'many')
    await decodeError(t, keyed.insert({ a: 1 }), 'insert() next to a key that is not a tuple', false)
    await decodeError(t, keyed.query().all(), 'query() over it', false)
    await decodeError(t, counted.insert({ a: 1 }), 'insert() with a sequence that is not a number', false)
    await checkReports(t, db)
    await db.close()
  })

  for (const ids of ['sequence', 'function']) {
    test(`${common.backend}: a relation list that does not parse (${ids} ids)`, async (/** @type {any} */ t) => {
      const db = await common.open()
      const options = ids === 'sequence' ? undefined : { id: (/** @type {any} */ r) => r.n }
      const chats = db.collection('chats', options)
      const users = db.collection('users', options)
      const members = db.relation('members', { from: chats, to: users, lists: ['from', 'to'] })
      for (const n of [1, 2]) {
        await chats.insert({ n })
        await users.insert({ n })
      }
      await plant(db, 'members.list.to', encode(1), BAD_TUPLE)
      await plant(db, 'members.list.from', encode(1), encode([1]))
      await decodeError(t, members.to(1).all(), 'to().all()', false)
      await decodeError(t, members.to(1).count(), 'to().count()', false)
      await decodeError(t, members.has(1, 1), 'has()', false)
      await decodeError(t, members.add(1, 2), 'add()', false)
      await decodeError(t, members.remove(1, 1), 'remove()', false)
      await decodeError(t, chats.del(1), 'deleting the record', false)
      t.same(await members.from(2).all(), [], 'the failed add() left nothing behind')
      t.same(await members.from(1).all(), [1], 'the failed remove() left nothing behind')
      await checkReports(t, db)
      await db.close()
    })
  }

  test(`${common.backend}: an edge key that does not parse`, async (/** @type {any} */ t) => {
    const db = await common.open()
    const chats = db.collection('chats')
    const users = db.collection('users')
    const members = db.relation('members', { from: chats, to: users })
    await chats.insert({})
    await users.insert({})
    await members.add(1, 1)
    // [1, then an unterminated string]
    const key = new Uint8Array([...encode([1]).subarray(0, -1), 0x70, 0x61])
    await plant(db, 'members.fwd', key, '')
    await decodeError(t, members.to(1).all(), 'to().all()', false)
    await decodeError(t, chats.del(1), 'deleting the record', false)
    await checkReports(t, db)
    await db.close()
  })

  test(`${common.backend}: a counter that does not parse`, async (/** @type {any} */ t) => {
    const db = await common.open()
    const hits = db.counter('hits')
    await plant(db, 'hits', encode('k'), 'lots')
    await decodeError(t, hits.get('k'), 'get()', false)
    await decodeError(t, hits.add('k', 1), 'add()', false)
    await decodeError(t, hits.query().all(), 'query()', false)
    await db.close()
  })

  for (const blockSize of [undefined, 4]) {
    test(`${common.backend}: a child or a children sequence that does not parse (${blockSize ? 'blocks' : 'keys'})`, async (/** @type {any} */ t) => {
      const db = await common.open()
      const chats = db.collection('chats')
      const messages = db.children('messages', { parent: chats, blockSize })
      for (let i = 0; i < 3; i++) await chats.insert({})
      await messages.append(2, 'fine')
      await plant(db, blockSize ? 'messages.blocks' : 'messages', encode([1, 1]), blockSize ? '[[1,' : '{"text":')
      await plant(db, 'messages.seq', encode(1), '1')
      await decodeError(t, messages.get(1, 1), 'get()')
      await decodeError(t, messages.getMany(1, [1]), 'getMany()')
      await decodeError(t, messages.range(1).all(), 'range()')
      await decodeError(t, messages.watch(1, { after: 0 }).next(), 'watch()')
      // A sequence levelkit has not read yet (it keeps the ones it has).
      await plant(db, 'messages.seq', encode(3), 'x')
      await decodeError(t, messages.lastSeq(3), 'lastSeq() of a sequence that is not a number', false)
      await decodeError(t, messages.append(3, 'more'), 'append() after it', false)
      t.same(await messages.range(3).all(), [], 'the failed append() left nothing behind')
      t.same(await messages.range(2).all(), ['fine'], 'other parents read as usual')
      // check() does not parse a child kept as a key of its own.
      await checkReports(t, db, blockSize !== undefined)
      await db.close()
    })
  }
}
