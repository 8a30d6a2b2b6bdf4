// The bulk path of relation.addMany() where the forward direction keeps
// lists and the reverse does not (lists: ['to'] here; IndexedDB's index
// kind in test/browser-idb-add-many-test.js), and what it is made of: a
// list of sequence ids changed as bytes in one merge (the same lists and
// counts as add() of each edge in turn, into stored lists, with repeats
// and ids out of order), the endpoints checked in order, arrays read a
// batch at a time as their iterator reads them, tuple.js's encodeEach()
// and stored.js's decodeIds() (the same as encode() and decodeList()),
// and onWrittenTo() (lib/written-listeners.js), which calls a write
// listener only for batches that wrote one of its namespaces.

import test from 'tape'
import { memoryAndLevelDB } from './util/backends.js'
import { encode, encodeEach } from '../lib/tuple.js'
import { decodeIds, decodeList } from '../lib/stored.js'
import { onWrittenTo } from '../lib/written-listeners.js'
import { prng } from './util/prng.js'
import { modelOf } from '../lib/model-handle.js'

const backends = memoryAndLevelDB('levelkit-relation-add-many-', test)

/** @param {any} db @param {string} name @param {any} users @param {any} chats */
const relation = (db, name, users, chats) => db.relation(name, { from: chats, to: users, lists: ['to'] })

/** @param {Promise<unknown>} promise */
const settled = promise => promise.then(value => ({ value }), err => ({ code: err?.code, id: err?.id, written: err?.written }))

for (const { name, base } of backends) {
  test(`relation addMany() (${name}): the same lists, counts and reverse edges as add() of each edge in turn, into stored lists, with repeats and ids out of order`, async t => {
    const db = await base()
    const users = db.collection('users')
    const chats = db.collection('chats')
    const many = relation(db, 'many', users, chats)
    const one = relation(db, 'one', users, chats)
    await users.insertMany(Array.from({ length: 40 }, (_, i) => ({ name: `u${i + 1}` })))
    const chatIds = []
    for (let c = 0; c < 6; c++) chatIds.push(await chats.insert({ title: `c${c}` }))
    const random = prng(7)
    let agreed = 0
    for (let round = 0; round < 60; round++) {
      const chat = chatIds[random.int(chatIds.length)]
      const count = random.int(9)
      const ids = Array.from({ length: count }, () => 1 + random.int(40))
      // Half the rounds ascending (a chat's sorted members), half as drawn.
      if (round % 2 === 0) ids.sort((a, b) => a - b)
      const added = await many.addMany(chat, ids)
      let each = 0
      for (const id of ids) if (await one.add(chat, id)) each++
      const lists = [await many.to(chat).all(), await one.to(chat).all()]
      if (added === each && JSON.stringify(lists[0]) === JSON.stringify(lists[1])) agreed++
      else t.fail(`round ${round}: addMany(${chat}, ${JSON.stringify(ids)}) added ${added}, add() ${each}; lists ${JSON.stringify(lists)}`)
    }
    t.is(agreed, 60, 'every round: the same count and list')
    for (let u = 1; u <= 40; u++) {
      const reverse = [await many.from(u).all(), await one.from(u).all()]
      if (JSON.stringify(reverse[0]) !== JSON.stringify(reverse[1])) t.fail(`from(${u}): ${JSON.stringify(reverse)}`)
    }
    t.same(await db.check(), { ok: true, problems: [], repaired: 0 }, 'check() is clean')
    await db.close()
  })

  test(`relation addMany() (${name}): the first missing member in order is refused, nothing of the call written; the write's own ops count`, async t => {
    const { db, users, members, chat } = await tenUsersAndAChat(base)
    await members.addMany(chat, [2, 4])
    t.same(await settled(members.addMany(chat, [1, 30, 3, 20])), { code: 'LEVELKIT_NOT_FOUND', id: 30, written: 0 }, 'the first missing id in order')
    t.same(await members.to(chat).all(), [2, 4], 'the list as it was')
    const inWrite = await db.write(async (/** @type {any} */ w) => {
      const fresh = await users.in(w).insert({ name: 'new' })
      await users.in(w).del(5)
      const refused = await settled(members.in(w).addMany(chat, [1, 5, fresh]))
      const added = await members.in(w).addMany(chat, [fresh, 1, 3])
      return { fresh, refused, added }
    })
    t.same(inWrite.refused, { code: 'LEVELKIT_NOT_FOUND', id: 5, written: 0 }, 'a member deleted earlier in the write is missing')
    t.is(inWrite.added, 3, 'a member inserted earlier in the write exists')
    t.same(await members.to(chat).all(), [1, 2, 3, 4, inWrite.fresh], 'the list holds what was added, in order')
    t.same(await db.check(), { ok: true, problems: [], repaired: 0 }, 'check() is clean')
    await db.close()
  })

  test(`relation addMany() (${name}): an array is read as its iterator reads it, a batch at a time`, async t => {
    const { db, members, chat } = await tenUsersAndAChat(base)
    // Each index read once, in order; the length read anew for each batch (an array grown meanwhile is read on).
    const reads = []
    const target = [1, 2, 3]
    const proxy = new Proxy(target, {
      get (array, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) {
          reads.push(Number(key))
          if (key === '2') array.push(4, 5)
        }
        return Reflect.get(array, key, receiver)
      }
    })
    t.is(await members.addMany(chat, proxy, { batchSize: 2 }), 5, 'grown while read: all five')
    t.same(reads, [0, 1, 2, 3, 4], 'each element read once, in order')
    t.same(await members.to(chat).all(), [1, 2, 3, 4, 5])
    // A hole is undefined (an invalid id), as the iterator reads it; a getter that throws is bad input.
    t.same(await settled(members.addMany(chat, [6, , 7], { batchSize: 10 })), { code: 'LEVELKIT_INVALID', id: undefined, written: 0 }, 'a hole: invalid')// eslint-disable-line no-sparse-arrays
    const throwing = [6, 7]
    Object.defineProperty(throwing, 1, { get () { throw new Error('boom') } })
    t.same(await settled(members.addMany(chat, throwing)), { code: 'LEVELKIT_INVALID', id: undefined, written: 0 }, 'a getter that throws: invalid')
    // Batches of a long array: the first ones written before a refusal.
    const long = Array.from({ length: 7 }, (_, i) => i + 1).concat([99])
    const refused = await settled(members.addMany(chat, long, { batchSize: 4 }))
    t.same(refused, { code: 'LEVELKIT_NOT_FOUND', id: 99, written: 4 }, 'the batch with the missing id refused, the one before written')
    t.same(await members.to(chat).all(), [1, 2, 3, 4, 5], 'one batch\'s edges were new')
    await db.close()
  })

  test(`onWrittenTo() (${name}): called only for batches that wrote one of its namespaces, each registration once per batch; stop() lets go`, async t => {
    const db = await base()
    const users = db.collection('users')
    const chats = db.collection('chats')
    await users.insert({ name: 'warm' })
    await chats.insert({ title: 'warm' })
    const idle = db.writer.listenerCounts.written
    const heard = { users: 0, both: 0, ops: 0, failing: 0 }
    // The failing one first: the others of a batch are called after it.
    const stopFailing = onWrittenTo(db.writer, [recordsOf(users), recordsOf(chats)], () => { heard.failing++; throw new Error('a failing listener') })
    const stopUsers = onWrittenTo(db.writer, [recordsOf(users)], ops => { heard.users++; heard.ops += ops.length })
    const stopBoth = onWrittenTo(db.writer, [recordsOf(users), recordsOf(chats), null], () => { heard.both++ })
    t.is(db.writer.listenerCounts.written, idle + 1, 'one writer listener for all of them')
    await chats.insert({ title: 'c' })
    t.same(heard, { users: 0, both: 1, ops: 0, failing: 1 }, 'a chats batch: the chats listeners only, a failing one not stopping the write')
    await db.write(async (/** @type {any} */ w) => {
      await users.in(w).insert({ name: 'a' })
      await chats.in(w).insert({ title: 'd' })
    })
    t.is(heard.both, 2, 'a batch of both namespaces: a listener of both called once')
    t.is(heard.users, 1, 'and the users listener, after a failing one')
    t.is(heard.failing, 2, 'the failing one once per batch')
    t.ok(heard.ops >= 2, 'with the whole batch')
    stopUsers()
    stopUsers()
    await users.insert({ name: 'b' })
    t.same([heard.users, heard.both], [1, 3], 'stopped: not called; stop() twice is harmless')
    stopBoth()
    stopFailing()
    t.is(db.writer.listenerCounts.written, idle, 'none left: the writer listener removed')
    // One that an earlier one removes in the same batch is not called.
    let second = 0
    /** @type {() => void} */
    let stopSecond = () => {}
    const stopFirst = onWrittenTo(db.writer, [recordsOf(users)], () => stopSecond())
    stopSecond = onWrittenTo(db.writer, [recordsOf(users)], () => { second++ })
    await users.insert({ name: 'c' })
    t.is(second, 0, 'removed by an earlier listener of the batch: not called')
    stopFirst()
    t.is(db.writer.listenerCounts.written, idle)
    await db.close()
  })
}

/**
 * A database with users 1..10, a chat and the members relation (lists kept
 * from chats to users only). @param {() => Promise<any>} base
 */
async function tenUsersAndAChat (base) {
  const db = await base()
  const users = db.collection('users')
  const chats = db.collection('chats')
  const members = relation(db, 'members', users, chats)
  await users.insertMany(Array.from({ length: 10 }, (_, i) => ({ name: `u${i + 1}` })))
  const chat = await chats.insert({ title: 'c' })
  return { db, users, chats, members, chat }
}

/** A collection's records namespace. @param {any} collection */
function recordsOf (collection) {
  return modelOf(collection).records
}

test('encodeEach(): encode() of each value; decodeIds(): decodeList() of a list, the same error for a damaged one', t => {
  const values = [1, 2, 7, 2 ** 31, 2 ** 53 - 1, 0.5, 1e300, 0, -1, -0.25, Infinity, -Infinity, 'a', '', [1, 2], null, true, new Uint8Array([0, 255])]
  const each = encodeEach(values)
  t.ok(values.every((value, i) => Buffer.compare(Buffer.from(each[i]), Buffer.from(encode(value))) === 0), 'each as encode() writes it')
  t.ok(each.every(key => key.byteOffset === 0 && key.buffer.byteLength === key.length), 'each in a buffer of its own')
  const named = { name: 'lists' }
  const key = encode(1)
  for (const list of [[], [1], [1, 2, 3, 2 ** 40], [0.5, 7], [1, 'a'], ['abcdefg'], [[1]], [null, 3]]) {
    t.same(decodeIds(encode(list), named, key), decodeList(encode(list), named, key), `${JSON.stringify(list)}: as decodeList()`)
  }
  const number = encode([3])
  const damaged = [
    number.slice(0, -1),
    Uint8Array.from([...number.slice(0, 2), 0x80, ...number.slice(3)]), // the sign bit set: -0 or a negative float body
    Uint8Array.from([0xa0, 0x42, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0, 0x00]), // NaN
    Uint8Array.from([0xa0, 0x42, 0x7f, 0xf0, 0, 0, 0, 0, 0, 0, 0x00]), // Infinity as a float body
    encode(3)
  ]
  for (const bytes of damaged) {
    const codes = [decodeIds, decodeList].map(decode => { try { decode(bytes, named, key); return 'decoded' } catch (err) { return /** @type {any} */ (err).code } })
    t.same(codes, ['LEVELKIT_DECODE_ERROR', 'LEVELKIT_DECODE_ERROR'], `${Buffer.from(bytes).toString('hex')}: refused alike`)
  }
  t.end()
})
