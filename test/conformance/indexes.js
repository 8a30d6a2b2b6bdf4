import { rejects, usersSchema } from './index.js'

/** @param {any} test @param {any} common */
export default function (test, common) {
  test(`${common.backend}: unique index rejects duplicates and writes nothing`, async t => {
    const db = await common.open()
    const users = usersSchema(db)
    const ann = await users.insert({ username: 'ann', age: 31, tags: ['a'] })
    const before = await db.level.iterator().all()
    const err = await rejects(t, users.insert({ username: 'ann', age: 20, tags: ['b'] }), 'LEVELKIT_UNIQUE')
    t.is(err.index, 'username')
    t.is(err.value, 'ann')
    t.same(await db.level.iterator().all(), before, 'database unchanged')
    const bob = await users.insert({ username: 'bob' })
    await rejects(t, users.update(bob, { username: 'ann' }), 'LEVELKIT_UNIQUE', 'update into a taken value')
    await users.update(ann, { username: 'anna' })
    await users.update(bob, { username: 'ann' })
    t.is((await users.getBy('username', 'ann')).id, bob, 'a released value can be taken')
    t.is((await users.getBy('username', 'anna')).id, ann)
    t.is(await users.getBy('username', 'nobody'), undefined)
    await users.update(bob, { age: 50 })
    t.is((await users.getBy('username', 'ann')).age, 50, 'same unique value kept across an update')
    await users.del(bob)
    t.is(await users.getBy('username', 'ann'), undefined, 'entry removed with the record')
    await rejects(t, users.getBy('byAge', [1]), 'LEVELKIT_INVALID', 'getBy needs a unique index')
    await rejects(t, users.getBy('nope', 1), 'LEVELKIT_INVALID', 'unknown index')
    t.ok((await db.check()).ok)
    await db.close()
  })

  test(`${common.backend}: index entries follow updates and deletes (no stale entries)`, async t => {
    const db = await common.open()
    const users = usersSchema(db)
    const id = await users.insert({ username: 'ann', age: 31, city: 'Oslo', tags: ['a', 'b'] })
    await users.update(id, { age: 32, tags: ['b', 'c'] })
    t.same((await users.query({ index: 'byAge', eq: [31, 'Oslo'] }).all()), [], 'old compound entry gone')
    t.same((await users.query({ index: 'byAge', eq: [32, 'Oslo'] }).all()).map(u => u.id), [id])
    t.same((await users.query({ index: 'tags', eq: 'a' }).all()), [], 'old multi entry gone')
    t.same((await users.query({ index: 'tags', eq: 'c' }).all()).map(u => u.id), [id])
    t.same((await users.query({ index: 'tags', eq: 'b' }).all()).map(u => u.id), [id], 'kept entry still there')
    await users.put(id, { username: 'ann', age: 1 })
    t.is(await users.count({ index: 'tags' }), 0, 'put without tags removes every tag entry')
    t.same((await users.query({ index: 'byAge' }).all()).map(u => u.age), [1], 'one byAge entry, for the new age')
    await rejects(t, users.put(id, { username: 'ann', age: 2, city: null, tags: [undefined] }), 'LEVELKIT_INVALID', 'an undefined item in a key is refused')
    t.ok((await db.check()).ok)
    await db.close()
  })

  test(`${common.backend}: multi index de-duplicates and sparse indexes skip undefined`, async t => {
    const db = await common.open()
    const posts = db.collection('posts', {
      indexes: {
        tags: { key: p => p.tags, multi: true },
        featured: { key: p => p.featured ? p.rank : undefined }
      }
    })
    const id = await posts.insert({ tags: ['x', 'x', 'y'] })
    await posts.insert({ tags: [], featured: true, rank: 2 })
    t.is(await posts.count({ index: 'tags' }), 2, 'duplicate tag stored once')
    t.same((await posts.query({ index: 'tags', eq: 'x' }).all()).map(p => p.id), [id])
    t.is(await posts.count({ index: 'featured' }), 1, 'only featured posts are indexed')
    await rejects(t, posts.insert({ tags: 'x' }), 'LEVELKIT_INVALID', 'multi key must be an array')
    await rejects(t, posts.insert({ tags: [{ a: 1 }] }), 'LEVELKIT_INVALID', 'objects are not keys')
    t.ok((await db.check()).ok)
    await db.close()
  })

  test(`${common.backend}: validate and key functions cannot change the record they are given`, async t => {
    const db = await common.open()
    const sneaky = db.collection('sneaky', {
      indexes: { name: { key: r => r.name } },
      validate (r) { r.name = 'changed' }
    })
    await rejects(t, sneaky.insert({ name: 'orig' }), 'LEVELKIT_INVALID', 'a validate that assigns fails loudly')
    const items = db.collection('items', { indexes: { name: { key: r => { r.extra = 1; return r.name } } } })
    await rejects(t, items.insert({ name: 'x' }), 'LEVELKIT_INVALID', 'so does a key function that assigns')
    t.same(await db.level.keys().all(), [], 'nothing written')
    const ok = db.collection('ok', { indexes: { name: { key: r => r.name } } })
    const id = await ok.insert({ name: 'a' })
    const updated = await ok.update(id, { name: 'b' })
    updated.name = 'mutable copy'
    t.is((await ok.get(id)).name, 'b', 'update() resolves with a copy the caller may change')
    await db.close()
  })

  test(`${common.backend}: a throwing key function is LEVELKIT_INVALID and writes nothing`, async t => {
    const db = await common.open()
    const items = db.collection('items', { indexes: { name: { key: i => i.name.toUpperCase() } } })
    await rejects(t, items.insert({ other: 1 }), 'LEVELKIT_INVALID')
    t.same(await db.level.keys().all(), [])
    await db.close()
  })
}
