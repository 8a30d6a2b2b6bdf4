// Values JSON cannot store faithfully are refused, never silently changed,
// and what is checked is exactly what is stored: records (insert, put,
// update patches and what an update function returns) and children (append,
// put). Environment-free.

import { rejects } from '../conformance/index.js'

class Pair extends Array {
  toJSON () {
    return 'a pair'
  }
}

/**
 * A value JSON.stringify would store as something else, and the path the
 * refusal must name.
 * @type {Array<[string, () => unknown, string]>}
 */
const CHANGED = [
  ['-0', () => -0, ''],
  ['-0 in an object', () => ({ a: { b: -0 } }), 'a.b'],
  ['-0 in an array', () => ({ list: [1, -0] }), 'list[1]'],
  ['a non-enumerable own toJSON', () => ({ a: Object.defineProperty({ b: 1 }, 'toJSON', { value: () => 'replaced' }) }), 'a'],
  ['a toJSON on an array', () => ({ list: Object.assign([1, 2], { toJSON: () => 'replaced' }) }), 'list'],
  ['a toJSON inherited by an array', () => ({ list: Pair.from([1, 2]) }), 'list'],
  ['a toJSON on an object with no prototype', () => ({ a: Object.defineProperty(Object.assign(Object.create(null), { b: 1 }), 'toJSON', { value: () => 'replaced' }) }), 'a'],
  ['a symbol-keyed property', () => ({ a: { b: 1, [Symbol('s')]: 2 } }), 'a'],
  ['a non-enumerable property', () => ({ a: Object.defineProperty({ b: 1 }, 'c', { value: 2 }) }), 'a'],
  ['an array with an extra property', () => ({ list: Object.assign([1], { note: 'dropped' }) }), 'list'],
  ['a sparse array', () => ({ list: [1, , 3] }), 'list[1]'], // eslint-disable-line no-sparse-arrays
  ['NaN', () => ({ a: NaN }), 'a'],
  ['a Date', () => ({ when: new Date(0) }), 'when']
]

/** @param {any} test @param {{ backend: string, open: () => Promise<any> }} common */
export default function (test, common) {
  async function schema () {
    const db = await common.open()
    const users = db.collection('users')
    const messages = db.children('messages', { parent: users })
    const notes = db.children('notes', { parent: users, blockSize: 4 })
    await users.insert({ name: 'ann' })
    await messages.append(1, 'first')
    await notes.append(1, 'first')
    return { db, users, messages, notes }
  }

  /** @param {any} db */
  async function raw (db) {
    return db.level.iterator({ keyEncoding: 'view', valueEncoding: 'view' }).all()
  }

  test(`${common.backend}: values JSON would change are refused, naming where, and nothing is written`, async (/** @type {any} */ t) => {
    const { db, users, messages, notes } = await schema()
    const before = await raw(db)
    for (const [what, make, path] of CHANGED) {
      const record = () => {
        const value = make()
        return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : { value }
      }
      const recordPath = (/** @type {string} */ p) => p === '' ? 'value' : p
      const calls = /** @type {Array<[string, () => Promise<unknown>, string]>} */ ([
        ['children.append()', () => messages.append(1, make()), path],
        ['children.append() (blocks)', () => notes.append(1, make()), path],
        ['children.put()', () => messages.put(1, 1, make()), path],
        ['children.put() (blocks)', () => notes.put(1, 1, make()), path],
        ['collection.insert()', () => users.insert(record()), recordPath(path)],
        ['collection.put()', () => users.put(1, record()), recordPath(path)],
        ['collection.update() with a patch', () => users.update(1, record()), recordPath(path)],
        ['collection.update() with a function', () => users.update(1, () => ({ name: 'ann', ...record() })), recordPath(path)]
      ])
      for (const [call, run, where] of calls) {
        const err = await rejects(t, run(), 'LEVELKIT_INVALID', `${call} refuses ${what}`)
        if (where !== '' && err) t.ok(err.message.includes(` at ${where}`), `and names ${where} (${err.message})`)
      }
    }
    t.same(await raw(db), before, 'nothing was written')
    t.same([await users.get(1), await messages.get(1, 1), await notes.get(1, 1)], [{ id: 1, name: 'ann' }, 'first', 'first'], 'nothing changed')
    await db.close()
  })

  test(`${common.backend}: a toJSON inherited from Array.prototype or Object.prototype is refused`, async (/** @type {any} */ t) => {
    const { db, messages } = await schema()
    for (const proto of [Array.prototype, Object.prototype]) {
      Object.defineProperty(proto, 'toJSON', { value: () => 'replaced', configurable: true, writable: true })
      let appended
      try {
        // The value is read when append() is called, before it returns.
        appended = messages.append(1, { list: [1] })
      } finally {
        delete (/** @type {any} */ (proto)).toJSON
      }
      await rejects(t, appended, 'LEVELKIT_INVALID', `a toJSON on ${proto === Array.prototype ? 'Array' : 'Object'}.prototype`)
    }
    t.same(await messages.range(1).all(), ['first'], 'nothing was appended')
    await db.close()
  })

  test(`${common.backend}: each property is read once: what is checked is what is stored`, async (/** @type {any} */ t) => {
    const { db, users, messages, notes } = await schema()
    /** A value whose `a` reads 1, then NaN (which JSON.stringify would store as null). */
    const flaky = () => {
      const reads = { count: 0 }
      const value = Object.defineProperty({}, 'a', { get: () => reads.count++ === 0 ? 1 : NaN, enumerable: true })
      return { reads, value }
    }
    for (const [call, run, read] of /** @type {Array<[string, (value: any) => Promise<unknown>, () => Promise<unknown>]>} */ ([
      ['children.append()', value => messages.append(1, value), () => messages.get(1, 2)],
      ['children.append() (blocks)', value => notes.append(1, value), () => notes.get(1, 2)],
      ['children.put()', value => messages.put(1, 1, value), () => messages.get(1, 1)],
      ['collection.insert()', value => users.insert(value), async () => (await users.get(2)).a],
      ['collection.update() with a patch', value => users.update(1, value), async () => (await users.get(1)).a],
      ['collection.update() with a function', value => users.update(1, () => value), async () => (await users.get(1)).a]
    ])) {
      const { reads, value } = flaky()
      await run(value)
      t.is(reads.count, 1, `${call} reads the property once`)
      const stored = await read()
      t.same(typeof stored === 'object' ? stored : { a: stored }, { a: 1 }, `${call} stores the value it read`)
    }
    await db.close()
  })

  test(`${common.backend}: a patch property that reads as undefined the second time is not removed`, async (/** @type {any} */ t) => {
    const { db, users } = await schema()
    let reads = 0
    const patch = Object.defineProperty({}, 'age', { get: () => reads++ === 0 ? 31 : undefined, enumerable: true })
    t.same(await users.update(1, patch), { id: 1, name: 'ann', age: 31 }, 'the patch as read')
    t.same(await users.get(1), { id: 1, name: 'ann', age: 31 }, 'is what is stored')
    t.is(reads, 1, 'read once')
    t.same(await users.update(1, { age: undefined }), { id: 1, name: 'ann' }, 'a property set to undefined still removes it')
    await db.close()
  })

  test(`${common.backend}: values JSON stores faithfully are stored as they are`, async (/** @type {any} */ t) => {
    const { db, messages } = await schema()
    const values = [0, 1.5, -2, 'a\u0000b', '\ud800', '😀', null, true, [], {}, [1, [2, [3]]], { a: { b: [null, false] } }, Object.assign(Object.create(null), { a: 1 })]
    for (const value of values) {
      const seq = await messages.append(1, value)
      t.same(await messages.get(1, seq), value === values[12] ? { a: 1 } : value, `${JSON.stringify(value)} reads back the same`)
    }
    await db.close()
  })
}
