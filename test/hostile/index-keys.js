// An index key function that returns a value that is not a key (most often
// a compound key with a missing field) is refused with an error that says
// which index, collection, record and field, and how to leave a record out
// of the index. Environment-free.

import { rejects } from '../conformance/index.js'

/** @param {any} test @param {{ backend: string, open: () => Promise<any> }} common */
export default function (test, common) {
  test(`${common.backend}: a compound index key with a missing field names the index, the record and the field`, async (/** @type {any} */ t) => {
    const db = await common.open()
    const users = db.collection('users', {
      indexes: {
        byAge: { key: (/** @type {any} */ u) => [u.age, u.city] },
        tags: { key: (/** @type {any} */ u) => u.tags, multi: true }
      }
    })
    await users.insert({ age: 30, city: 'Oslo', tags: ['a'] })
    const err = await rejects(t, users.insert({ age: 31 }), 'LEVELKIT_INVALID', 'a missing field is refused')
    if (err) {
      t.ok(err.message.includes('"byAge"') && err.message.includes('"users"'), `names the index and the collection (${err.message})`)
      t.ok(err.message.includes('record 2'), 'names the record\'s id')
      t.ok(err.message.includes('[1]') && err.message.includes('undefined'), 'names the field position and what it holds')
      t.ok(err.message.includes('return undefined'), 'says how to leave a record out of the index')
      t.notOk(err.message.includes('encode()'), 'does not talk about encode()')
      t.same(err.path, [1], 'err.path is the position in the key')
      t.is(err.index, 'byAge', 'err.index')
      t.is(err.collection, 'users', 'err.collection')
      t.is(err.id, 2, 'err.id')
    }
    const update = await rejects(t, users.update(1, { city: undefined }), 'LEVELKIT_INVALID', 'so is an update that removes the field')
    if (update) t.ok(update.message.includes('record 1'), `names that record (${update.message})`)
    const multi = await rejects(t, users.update(1, { tags: ['a', [1, '\ud800']] }), 'LEVELKIT_INVALID', 'and a bad element of a multi index')
    if (multi) {
      t.ok(multi.message.includes('"tags"') && multi.message.includes('[1][1]'), `names the index and the element (${multi.message})`)
      t.same(multi.path, [1, 1], 'err.path')
    }
    const bad = await rejects(t, users.insert({ age: 1, city: '\ud800' }), 'LEVELKIT_INVALID', 'a value that is not a key')
    if (bad) t.ok(bad.message.includes('lone surrogate') && bad.message.includes('[1]'), `says what and where (${bad.message})`)
    t.same(await users.query().all(), [{ id: 1, age: 30, city: 'Oslo', tags: ['a'] }], 'nothing was written')
    await db.close()
  })
}
