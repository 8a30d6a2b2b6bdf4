import { encodeTuple as encode } from '../../index.js'
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

  test(`${common.backend}: a covering unique index holds the record: getBy and queries read it alone`, async t => {
    const db = await common.open()
    for (const options of [{ unique: false, covering: true }, { unique: true, multi: true, covering: true }, { unique: true, covering: 'yes' }]) {
      t.throws(() => db.collection(`bad${Math.random().toString(36).slice(2, 8)}`, { indexes: { name: { key: (/** @type {any} */ r) => r.name, ...options } } }), /covering/, `refuses ${JSON.stringify(options)}`)
    }
    const people = db.collection('people', { indexes: { name: { unique: true, covering: true, key: (/** @type {any} */ p) => p.name } } })
    const tags = db.collection('tags', { id: (/** @type {any} */ t) => t.tag, indexes: { label: { unique: true, covering: true, key: (/** @type {any} */ t) => t.label } } })
    const ann = await people.insert({ name: 'ann', age: 30 })
    const bob = await people.insert({ name: 'bob', age: 40 })
    const raw = db.level.sublevel('people.idx.name', { keyEncoding: 'view', valueEncoding: 'utf8' })
    t.same(JSON.parse(await raw.get(encode(['ann']))), { id: ann, name: 'ann', age: 30 }, 'the entry is the record')
    t.same(await people.getBy('name', 'ann'), { id: ann, name: 'ann', age: 30 })
    await people.update(ann, { age: 31 })
    t.same(await people.getBy('name', 'ann'), { id: ann, name: 'ann', age: 31 }, 'an update that keeps the name rewrites the copy')
    await people.update(ann, { name: 'anna' })
    t.is(await people.getBy('name', 'ann'), undefined, 'a renamed record leaves its old entry')
    t.same(await people.getBy('name', 'anna'), { id: ann, name: 'anna', age: 31 })
    await rejects(t, people.update(bob, { name: 'anna' }), 'LEVELKIT_UNIQUE', 'still unique')
    await rejects(t, people.insert({ name: 'bob' }), 'LEVELKIT_UNIQUE')
    t.same(await people.query({ index: 'name' }).all(), [{ id: ann, name: 'anna', age: 31 }, { id: bob, name: 'bob', age: 40 }], 'a query reads the copies')
    const keys = []
    for await (const [id] of people.query({ index: 'name', gt: 'anna' }).entries()) keys.push(id)
    t.same(keys, [bob], 'with the ids as keys')
    await db.write(async (w) => {
      await people.in(w).update(bob, { age: 41 })
      t.same(await people.in(w).getBy('name', 'bob'), { id: bob, name: 'bob', age: 41 }, 'in a write scope, its own update')
    })
    t.is(await tags.insert({ tag: 'x', label: 'ex' }), 'x')
    t.same(await tags.getBy('label', 'ex'), { tag: 'x', label: 'ex' }, 'function ids too')
    await rejects(t, tags.insert({ tag: 'y', label: 'ex' }), 'LEVELKIT_UNIQUE')
    await tags.put('x', { tag: 'x', label: 'ex', n: 2 })
    t.same(await tags.getBy('label', 'ex'), { tag: 'x', label: 'ex', n: 2 }, 'put rewrites the copy')
    t.is(await people.del(bob), true)
    t.is(await people.getBy('name', 'bob'), undefined, 'a delete removes it')
    t.ok((await db.check()).ok)

    // A stale copy (written behind levelkit's back) is found and repaired.
    await raw.put(encode(['anna']), JSON.stringify({ id: ann, name: 'anna', age: 1 }))
    const report = await db.check()
    t.same(report.problems.map(p => p.type), ['dangling-index-entry'], 'a stale copy is reported')
    t.is((await db.check({ repair: true })).repaired, 1)
    t.same(await people.getBy('name', 'anna'), { id: ann, name: 'anna', age: 31 }, 'and repaired')
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
