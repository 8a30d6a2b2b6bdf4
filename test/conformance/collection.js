import { rejects, usersSchema } from './index.js'

/** @param {any} test @param {any} common */
export default function (test, common) {
  test(`${common.backend}: insert assigns sequence ids from 1 and stores the id in the record`, async t => {
    const db = await common.open()
    const users = usersSchema(db)
    const a = await users.insert({ username: 'ann', age: 31 })
    const b = await users.insert({ username: 'bob', age: 40 })
    t.same([a, b], [1, 2])
    t.same(await users.get(a), { id: 1, username: 'ann', age: 31 })
    t.same(await users.getMany([2, 3, 1]), [{ id: 2, username: 'bob', age: 40 }, undefined, { id: 1, username: 'ann', age: 31 }])
    t.is(await users.get(99), undefined, 'missing record is undefined')
    t.is(await users.has(1), true)
    t.is(await users.has(3), false)
    await db.close()
  })

  test(`${common.backend}: sequence ids are never reused after a delete`, async t => {
    const db = await common.open()
    const users = usersSchema(db)
    await users.insert({ username: 'a' })
    const b = await users.insert({ username: 'b' })
    t.is(await users.del(b), true)
    t.is(await users.del(b), false, 'deleting a missing record answers false')
    t.is(await users.insert({ username: 'c' }), 3)
    await db.close()
  })

  test(`${common.backend}: put creates or replaces, and keeps the sequence ahead of explicit ids`, async t => {
    const db = await common.open()
    const users = usersSchema(db)
    t.is(await users.put(10, { username: 'ten' }), true, 'created')
    t.is(await users.put(10, { username: 'TEN', age: 1 }), false, 'replaced')
    t.same(await users.get(10), { id: 10, username: 'TEN', age: 1 })
    t.is(await users.insert({ username: 'next' }), 11, 'insert continues after the highest id')
    await rejects(t, users.put(12, { id: 13, username: 'x' }), 'LEVELKIT_INVALID', 'record id must match the id it is written under')
    await rejects(t, users.put('a', { username: 'x' }), 'LEVELKIT_INVALID', 'sequence ids are positive integers')
    await rejects(t, users.put(0, { username: 'x' }), 'LEVELKIT_INVALID')
    await rejects(t, users.insert({ id: 5, username: 'x' }), 'LEVELKIT_INVALID', 'insert into a sequence refuses an id')
    await db.close()
  })

  test(`${common.backend}: update merges a patch or applies a function`, async t => {
    const db = await common.open()
    const users = usersSchema(db)
    const id = await users.insert({ username: 'ann', age: 31, city: 'Oslo' })
    t.same(await users.update(id, { age: 32 }), { id, username: 'ann', age: 32, city: 'Oslo' }, 'resolves with the new record')
    await users.update(id, { city: undefined })
    t.same(await users.get(id), { id, username: 'ann', age: 32 }, 'undefined removes a property')
    await users.update(id, old => ({ ...old, age: old.age + 1 }))
    t.is((await users.get(id)).age, 33)
    await rejects(t, users.update(99, { age: 1 }), 'LEVELKIT_NOT_FOUND')
    await rejects(t, users.update(id, { id: 2 }), 'LEVELKIT_INVALID', 'cannot change the id')
    await rejects(t, users.update(id, async old => old), 'LEVELKIT_INVALID', 'update function must be synchronous')
    await rejects(t, users.update(id, () => 'nope'), 'LEVELKIT_INVALID')
    t.same(await users.get(id), { id, username: 'ann', age: 33 }, 'failed updates wrote nothing')
    // With and without user code that sees records (users has indexes and
    // validate, notes none): the caller owns what update() resolves with.
    const notes = db.collection('notes')
    const note = await notes.insert({ text: 'a', tags: ['x'] })
    for (const [collection, key] of /** @type {const} */ ([[users, id], [notes, note]])) {
      const updated = await collection.update(key, { tags: ['y'] })
      t.notOk(Object.isFrozen(updated) || Object.isFrozen(updated.tags), `${collection.name}: not frozen`)
      updated.tags.push('mutated')
      t.same((await collection.get(key)).tags, ['y'], `${collection.name}: changing it changes nothing stored`)
    }
    await db.close()
  })

  test(`${common.backend}: function ids`, async t => {
    const db = await common.open()
    const sessions = db.collection('sessions', { id: s => s.token })
    t.is(await sessions.insert({ token: 'abc', user: 1 }), 'abc')
    t.same(await sessions.get('abc'), { token: 'abc', user: 1 })
    await rejects(t, sessions.insert({ token: 'abc', user: 2 }), 'LEVELKIT_EXISTS')
    await rejects(t, sessions.put('xyz', { token: 'abc' }), 'LEVELKIT_INVALID', 'put id must agree with the id function')
    await rejects(t, sessions.insert({ user: 3 }), 'LEVELKIT_INVALID', 'id function returning undefined')
    const compound = db.collection('pairs', { id: p => [p.a, p.b] })
    await compound.insert({ a: 1, b: 'x' })
    t.same(await compound.get([1, 'x']), { a: 1, b: 'x' })
    await rejects(t, sessions.update('abc', { token: 'def' }), 'LEVELKIT_INVALID', 'update cannot move a record to another id')
    await db.close()
  })

  test(`${common.backend}: bad records are rejected with LEVELKIT_INVALID and nothing is written`, async t => {
    const db = await common.open()
    const users = usersSchema(db)
    const circular = { username: 'c' }
    circular.self = circular
    const bad = [
      null, 'string', [1], { username: 'n', n: NaN }, { username: 'i', n: Infinity }, { username: 'd', when: new Date() },
      { username: 'f', f () {} }, { username: 'm', m: new Map() }, { username: 'h', list: [1, undefined] },
      { username: 'b', big: 10n }, circular, { username: '' }, { age: 3 }
    ]
    for (const record of bad) await rejects(t, users.insert(record), 'LEVELKIT_INVALID')
    t.is(await users.count(), 0, 'no record written')
    t.same(await db.level.keys().all(), [], 'no key written at all')
    t.is(await users.insert({ username: 'ok' }), 1, 'the sequence did not advance')
    await db.close()
  })

  test(`${common.backend}: models are declared once with valid names and options`, async t => {
    const db = await common.open()
    usersSchema(db)
    const throwsInvalid = (fn, msg) => {
      try {
        fn()
        t.fail(msg)
      } catch (err) {
        t.is(err.code, 'LEVELKIT_INVALID', msg)
      }
    }
    throwsInvalid(() => db.collection('users'), 'duplicate name')
    throwsInvalid(() => db.collection('bad name'), 'space in name')
    throwsInvalid(() => db.collection('a.b'), 'dot is reserved')
    throwsInvalid(() => db.collection('é'), 'non-ASCII name')
    throwsInvalid(() => db.collection('x', { id: 'uuid' }), 'unknown id kind')
    throwsInvalid(() => db.collection('y', { indexes: { a: { key: 'a' } } }), 'index without key function')
    throwsInvalid(() => db.collection('z', { indexs: {} }), 'unknown option')
    throwsInvalid(() => db.relation('r', { from: {}, to: {} }), 'relation needs collections')
    await db.close()
  })
}
