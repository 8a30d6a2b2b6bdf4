// On PostgreSQL, a namespace's point reads made without options go to the
// table directly (PostgresLevel#levelkitReadKeys(), lib/namespace.js), past
// abstract-level's get() and getMany() on the sublevel and on the database:
// the same answers (decoded per the namespace's value encoding), the same
// coalesced statements, and none of abstract-level's allocation.
import test from 'tape'
import { AbstractLevel } from 'abstract-level'
import { open } from '../index.js'
import { Namespace } from '../lib/namespace.js'
import { postgresForTests } from './util/postgres.js'

const server = await postgresForTests(test)

/**
 * Count abstract-level's get() and getMany() calls (any database or
 * sublevel) until the test ends.
 * @param {import('tape').Test} t
 */
function countAbstractReads (t) {
  const proto = /** @type {any} */ (AbstractLevel.prototype)
  const { get, getMany } = proto
  const counted = { get: 0, getMany: 0 }
  proto.get = function (/** @type {any[]} */ ...args) { counted.get++; return get.apply(this, args) }
  proto.getMany = function (/** @type {any[]} */ ...args) { counted.getMany++; return getMany.apply(this, args) }
  t.teardown(() => { proto.get = get; proto.getMany = getMany })
  return counted
}

const bytes = (/** @type {string} */ text) => new TextEncoder().encode(text)

for (const locking of /** @type {const} */ (['serializable', 'keys', undefined])) {
  test(`postgres direct reads (${locking ?? 'one writer'}): a namespace reads as its sublevel's get() and getMany() do, without them`, async t => {
    const db = await open({ backend: 'postgres', connectionString: server.connectionString, table: server.table(), poolSize: 2, ...(locking ? { shared: true, locking } : {}) })
    try {
      const root = /** @type {any} */ (db).level
      const text = new Namespace(root, 'direct-text', 'utf8')
      const view = new Namespace(root, 'direct-view', 'view')
      await text.sublevel.batch([{ type: 'put', key: bytes('a'), value: 'héllo' }, { type: 'put', key: bytes('b'), value: '' }])
      await view.sublevel.batch([{ type: 'put', key: bytes('a'), value: Uint8Array.of(0, 1, 255) }])
      t.ok(text.pg === root && view.pg === root, 'both read from the database directly')
      const keys = ['a', 'b', 'missing'].map(bytes)
      const expected = {
        text: await Promise.all(keys.map(key => text.sublevel.get(key))),
        view: await Promise.all(keys.map(key => view.sublevel.get(key))),
        textMany: await text.sublevel.getMany(keys),
        viewMany: await view.sublevel.getMany(keys)
      }
      const counted = countAbstractReads(t)
      const got = {
        text: await Promise.all(keys.map(key => text.read(key, false))),
        view: await Promise.all(keys.map(key => view.read(key, false))),
        textMany: await text.readMany(keys, false),
        viewMany: await view.readMany(keys, false)
      }
      t.deepEqual([counted.get, counted.getMany], [0, 0], 'no abstract-level get() or getMany() was called')
      t.deepEqual(got.text, expected.text, 'utf8 values as get() answers them (strings, empty, missing)')
      t.deepEqual(got.textMany, expected.textMany, 'and as getMany() does')
      t.ok(got.view.every((value, i) => value === undefined ? expected.view[i] === undefined : Buffer.compare(value, expected.view[i]) === 0), 'view values as get() answers them')
      t.ok(got.view[0] instanceof Uint8Array && got.viewMany[0] instanceof Uint8Array, 'as bytes')
      t.deepEqual(got.viewMany.map(value => value && [...value]), expected.viewMany.map((/** @type {any} */ value) => value && [...value]), 'and getMany() alike')
      // A model's reads, outside a section and in one, go the same way.
      const accounts = db.collection('accounts')
      await accounts.insert({ balance: 1 })
      counted.get = counted.getMany = 0
      t.is((await accounts.get(1)).balance, 1, 'a record read')
      await db.write(async (/** @type {any} */ w) => {
        const { balance } = await accounts.in(w).get(1)
        await accounts.in(w).update(1, { balance: balance + 1 })
      })
      t.is((await accounts.get(1)).balance, 2, 'a section read and wrote it')
      t.is(counted.get + counted.getMany, 0, 'without abstract-level\'s get() or getMany()')
      t.same((await db.check()).problems, [], 'check() is clean')
    } finally {
      await db.close()
    }
  })
}

test('postgres direct reads: a namespace of a closed database refuses to read as before', async t => {
  const db = await open({ backend: 'postgres', connectionString: server.connectionString, table: server.table(), poolSize: 2 })
  const ns = new Namespace(/** @type {any} */ (db).level, 'closing', 'utf8')
  await ns.sublevel.put(bytes('k'), 'v')
  await db.close()
  const err = await Promise.resolve().then(() => ns.read(bytes('k'), false)).then(() => null, err => err)
  t.ok(err?.code === 'LEVELKIT_NOT_OPEN' || err?.code === 'LEVEL_DATABASE_NOT_OPEN', `rejected (${err?.code})`)
})
