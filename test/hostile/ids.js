// Ids (and sequence numbers) that read differently each time they are read:
// an operation must read each once, at the door, so that what it checks is
// what it writes. Environment-free.

import { encodeTuple } from '../../index.js'
import { rejects } from '../conformance/index.js'

/** An array [n] whose element reads 0, 1, 2, ... one more on every read. */
function countingGetter () {
  let n = 0
  return Object.defineProperty([0], 0, { get: () => n++, enumerable: true })
}

/** The same as a Proxy. */
function countingProxy () {
  let n = 0
  return new Proxy([0], { get: (target, key) => key === '0' ? n++ : Reflect.get(target, key) })
}

const SHAPES = [['a getter', countingGetter], ['a Proxy', countingProxy]]

/** @param {any} test @param {{ backend: string, open: () => Promise<any> }} common */
export default function (test, common) {
  /**
   * Rooms keyed [n] (function ids), with a relation between rooms in both
   * layouts and children in both layouts.
   */
  async function schema () {
    const db = await common.open()
    const rooms = db.collection('rooms', { id: (/** @type {any} */ r) => [r.n], indexes: { byName: { key: (/** @type {any} */ r) => r.name } } })
    const links = db.relation('links', { from: rooms, to: rooms })
    const lists = db.relation('lists', { from: rooms, to: rooms, lists: ['from', 'to'] })
    const notes = db.children('notes', { parent: rooms })
    const blocks = db.children('blocks', { parent: rooms, blockSize: 4 })
    for (let n = 0; n < 12; n++) await rooms.insert({ n, name: `room ${n}` })
    return { db, rooms, links, lists, notes, blocks }
  }

  test(`${common.backend}: a key whose element getter encodes a key itself is encoded as read`, async (/** @type {any} */ t) => {
    const db = await common.open()
    const hits = db.counter('hits')
    const key = Object.defineProperty(['a', 0, 'b'], 1, { get: () => { encodeTuple(['another key', [1, 2, 3], 'x'.repeat(40)]); return 5 }, enumerable: true })
    t.is(await hits.add(key, 1), 1)
    t.same(await hits.query().keys().next(), { value: ['a', 5, 'b'], done: false }, 'counted under the key as read')
    t.same(encodeTuple(key), encodeTuple(['a', 5, 'b']), 'encodeTuple() gives its bytes')
    await db.close()
  })

  for (const [shape, make] of SHAPES) {
    for (const name of ['links', 'lists']) {
      test(`${common.backend}: ${name}: relation.add() with an id that changes on every read (${shape}) writes one edge, in both directions`, async (/** @type {any} */ t) => {
        const models = await schema()
        const relation = /** @type {any} */ (models)[name]
        t.is(await relation.add(make(), [11]), true, 'added')
        t.same(await relation.to([0]).all(), [[11]], 'the edge is from the id as first read')
        t.same(await relation.from([11]).all(), [[0]], 'and the reverse direction holds the same edge')
        t.same(await models.db.check(), { ok: true, problems: [], repaired: 0 }, 'check() finds no one-sided edge')
        t.is(await relation.remove(make(), [11]), true, 'remove() with such an id removes that edge')
        t.same(await relation.from([11]).all(), [], 'from both directions')
        t.ok((await models.db.check()).ok, 'check() is clean')
        await models.db.close()
      })
    }

    test(`${common.backend}: relation.addMany() with ids that change on every read (${shape})`, async (/** @type {any} */ t) => {
      const { db, links } = await schema()
      t.is(await links.addMany(make(), [make(), [11]]), 2, 'two edges')
      t.same(await links.to([0]).all(), [[0], [11]], 'from the id as first read, to the ids as first read')
      t.ok((await db.check()).ok, 'check() is clean')
      await db.close()
    })

    for (const name of ['notes', 'blocks']) {
      test(`${common.backend}: ${name}: children.append() with a parent id that changes on every read (${shape}) leaves no orphan`, async (/** @type {any} */ t) => {
        const models = await schema()
        const children = /** @type {any} */ (models)[name]
        await models.rooms.del([2])
        t.is(await children.append(make(), 'hello'), 1, 'appended as the first child')
        t.same(await children.range([0]).all(), ['hello'], 'under the parent as first read')
        t.is(await children.lastSeq([0]), 1, 'whose sequence it raised')
        t.same(await models.db.check(), { ok: true, problems: [], repaired: 0 }, 'check() finds no orphan child or sequence')
        t.is(await children.put(make(), 1, 'changed'), undefined, 'put() with such a parent id')
        t.same(await children.get([0], 1), 'changed', 'changes the child of the parent as first read')
        t.is(await children.get(make(), 1), 'changed', 'get() reads it')
        t.is(await children.del(make(), 1), true, 'del() deletes it')
        t.same(await children.range([0]).all(), [], 'it is gone')
        t.ok((await models.db.check()).ok, 'check() is clean')
        await models.db.close()
      })

      test(`${common.backend}: ${name}: children.getMany() with sequence numbers that change on every read (${shape})`, async (/** @type {any} */ t) => {
        const models = await schema()
        const children = /** @type {any} */ (models)[name]
        for (const text of ['a', 'b', 'c']) await children.append([0], text)
        let n = 1
        const seqs = Object.defineProperty([0], 0, { get: () => n++, enumerable: true })
        t.same(await children.getMany([0], seqs), ['a'], 'the child of the sequence number as first read')
        await models.db.close()
      })
    }

    test(`${common.backend}: collection.del() with an id that changes on every read (${shape}) deletes that record and its edges`, async (/** @type {any} */ t) => {
      const { db, rooms, links, lists, notes } = await schema()
      for (const from of [[0], [1], [2]]) {
        await links.add(from, [11])
        await lists.add(from, [11])
        await notes.append(from, 'x')
      }
      t.is(await rooms.del(make()), true, 'deleted')
      t.is(await rooms.get([0]), undefined, 'the record as first read is gone')
      t.same(await rooms.get([1]), { n: 1, name: 'room 1' }, 'the next one is not')
      t.same(await links.from([11]).all(), [[1], [2]], 'its edges went with it, not another record\'s')
      t.same(await lists.from([11]).all(), [[1], [2]], 'in both layouts')
      t.same(await notes.range([1]).all(), ['x'], 'another record keeps its children')
      t.same(await db.check(), { ok: true, problems: [], repaired: 0 }, 'check() finds no dangling or one-sided edge, no orphan')
      await db.close()
    })

    test(`${common.backend}: collection.put() and update() with an id that changes on every read (${shape}) keep index entries right`, async (/** @type {any} */ t) => {
      const db = await common.open()
      const things = db.collection('things', { id: (/** @type {any} */ r) => r.key, indexes: { byName: { key: (/** @type {any} */ r) => r.name } } })
      const id = make()
      await rejects(t, things.put(id, { key: [1], name: 'one' }), 'LEVELKIT_INVALID', 'put() under [0] of a record whose id is [1] is refused: the id as first read')
      t.is(await things.put(make(), { key: [0], name: 'zero' }), true, 'put() under the id as first read')
      t.same(await things.query({ index: 'byName', eq: 'zero' }).all(), [{ key: [0], name: 'zero' }], 'found through its index entry')
      t.same(await things.update(make(), { name: 'nil' }), { key: [0], name: 'nil' }, 'update() with such an id')
      t.same(await things.query({ index: 'byName', eq: 'nil' }).all(), [{ key: [0], name: 'nil' }], 'the index entry moved with it')
      t.same(await db.check(), { ok: true, problems: [], repaired: 0 }, 'check() finds no dangling or missing index entry')
      await db.close()
    })

    test(`${common.backend}: an id function returning an id that changes on every read (${shape})`, async (/** @type {any} */ t) => {
      const db = await common.open()
      const things = db.collection('things', { id: () => make(), indexes: { byName: { key: (/** @type {any} */ r) => r.name } } })
      t.same(await things.insert({ name: 'x' }), [0], 'the id as first read')
      t.same(await things.query({ index: 'byName', eq: 'x' }).keys().next(), { value: [0], done: false }, 'is the id of the index entry')
      await db.close()
    })

    test(`${common.backend}: counter keys and query bounds that change on every read (${shape})`, async (/** @type {any} */ t) => {
      const db = await common.open()
      const hits = db.counter('hits')
      t.is(await hits.add(make(), 5), 5)
      t.same(await hits.query().entries().next(), { value: [[0], 5], done: false }, 'counted under the key as first read')
      t.is(await hits.get(make()), 5, 'get() reads the key as first read')
      t.same(await hits.query({ gte: make(), lte: [0] }).all(), [5], 'a bound is read once')
      await db.close()
    })
  }
}
