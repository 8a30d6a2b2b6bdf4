// relation.to(id).records() and relation.from(id).records() on memory,
// LevelDB and PostgreSQL (one writer, and shared with serializable
// transactions; there a whole direction of edges to records with sequence
// ids is one statement, PostgresLevel#levelkitReadReferenced()), for each
// layout (edges, lists one way, lists both ways): the
// records that the query's ids name, in its order, as reading the ids and
// then getMany() answers; the query's options apply to the ids; through
// in(w) and in a transaction too. (On IndexedDB, from() of a relation kept
// by its index reads them in one request: test/browser-idb-records-test.js.)

import test from 'tape'
import { open } from '../index.js'
import { memoryAndLevelDB } from './util/backends.js'
import { postgresForTests } from './util/postgres.js'
import { modelOf } from '../lib/model-handle.js'
import { encode } from '../lib/tuple.js'

const server = await postgresForTests(test)
const backends = [
  ...memoryAndLevelDB('levelkit-relation-records-', test),
  { name: 'postgres', base: () => open({ backend: 'postgres', connectionString: server.connectionString, table: server.table() }) },
  { name: 'postgres, shared, serializable', base: () => open({ backend: 'postgres', connectionString: server.connectionString, table: server.table(), shared: true, locking: 'serializable' }) }
]
const LAYOUTS = [[], ['to'], ['from', 'to']]

/** @param {any} db @param {string[]} lists */
async function seeded (db, lists) {
  const users = db.collection('users')
  const chats = db.collection('chats')
  const members = db.relation('members', { from: chats, to: users, lists })
  await users.insertMany(Array.from({ length: 12 }, (_, i) => ({ name: `u${i + 1}` })))
  for (let c = 1; c <= 6; c++) {
    const id = await chats.insert({ title: `chat ${c}` })
    await members.addMany(id, [c, c + 1, c + 3, 12].filter((u, i, all) => all.indexOf(u) === i))
  }
  return { users, chats, members }
}

/** The records of `query`'s ids, read the two-step way. @param {any} query @param {any} collection */
async function twoStep (query, collection) {
  return (await collection.getMany(await query.all())).filter((/** @type {any} */ r) => r !== undefined)
}

for (const { name, base } of backends) {
  for (const lists of LAYOUTS) {
    const label = `${name}, lists ${JSON.stringify(lists)}`

    test(`relation records(): ${label}: as the ids then getMany() answer, every option applied to the ids`, async t => {
      const db = await base()
      const { users, chats, members } = await seeded(db, lists)
      const fromQueries = [{}, { reverse: true }, { limit: 2 }, { gt: 2 }, { lte: 4, reverse: true }]
      let same = 0
      for (const options of fromQueries) {
        const got = await members.from(12, options).records()
        const expected = await twoStep(members.from(12, options), chats)
        if (JSON.stringify(got) === JSON.stringify(expected)) same++
        else t.same(got, expected, `from(12, ${JSON.stringify(options)})`)
      }
      t.is(same, fromQueries.length, 'from(id, options).records() for each options')
      t.same((await members.from(12).records()).map((/** @type {any} */ c) => c.title), ['chat 1', 'chat 2', 'chat 3', 'chat 4', 'chat 5', 'chat 6'], 'in id order')
      t.same((await members.to(3).records()).map((/** @type {any} */ u) => u.name), ['u3', 'u4', 'u6', 'u12'], 'to(id).records(): the users')
      t.same(await members.to(3, { reverse: true, limit: 2 }).records(), await twoStep(members.to(3, { reverse: true, limit: 2 }), users), 'to() with reverse and limit')
      t.same(await members.from(99).records(), [], 'none for an id without edges')
      const page = await members.from(12, { limit: 4 }).page()
      t.same((await members.from(12, { limit: 4, cursor: page.cursor }).records()).map((/** @type {any} */ c) => c.id), [5, 6], 'a cursor applies to the ids')
      await db.close()
    })

    test(`relation records(): ${label}: updates and deletes, through in(w) and in a transaction`, async t => {
      const db = await base()
      const { chats, members } = await seeded(db, lists)
      await chats.update(2, { title: 'renamed' })
      t.ok((await members.from(12).records()).some((/** @type {any} */ c) => c.id === 2 && c.title === 'renamed'), 'an update is read')
      await chats.del(3)
      t.notOk((await members.from(12).records()).some((/** @type {any} */ c) => c.id === 3), 'a deleted chat is gone')
      await members.remove(4, 12)
      t.notOk((await members.from(12).records()).some((/** @type {any} */ c) => c.id === 4), 'a removed edge is gone')
      const inScope = await db.write(async (/** @type {any} */ w) => members.in(w).from(12).records())
      t.same(inScope, await members.from(12).records(), 'through in(w): what is written')
      const inTx = await db.transaction(async (/** @type {any} */ tx) => members.in(tx).from(12).records())
      t.same(inTx, await members.from(12).records(), 'in a transaction')
      const seesOwn = await db.transaction(async (/** @type {any} */ tx) => {
        await chats.in(tx).update(5, { title: 'in tx' })
        return members.in(tx).from(12).records()
      })
      t.ok(seesOwn.some((/** @type {any} */ c) => c.id === 5 && c.title === 'in tx'), 'a transaction reads its own writes')
      await db.close()
    })
  }
}

test('relation records(): postgres, shared, serializable: read without in(w) inside a critical section, in its transaction', async t => {
  for (const lists of [['to'], ['from', 'to']]) {
    const table = server.table()
    const db = await open({ backend: 'postgres', connectionString: server.connectionString, table, shared: true, locking: 'serializable' })
    try {
      const users = db.collection('users')
      const chats = db.collection('chats')
      const members = db.relation('members', { from: chats, to: users, lists })
      await users.insert({ n: 1 })
      await chats.insert({ title: 'old' })
      await members.add(1, 1)
      const key = modelOf(chats).records.sublevel.prefixKey(encode(1), 'buffer', false)
      const seen = await db.write(async (/** @type {any} */ w) => {
        // The section's transaction takes its snapshot; then another writer renames the chat.
        await users.in(w).get(1)
        await server.pool.query(`UPDATE "${table}" SET value = convert_to(replace(convert_from(value, 'UTF8'), 'old', 'new'), 'UTF8') WHERE key = $1`, [key])
        return (await members.from(1).records()).map((/** @type {any} */ c) => c.title)
      })
      t.same(seen, ['old'], `lists ${JSON.stringify(lists)}: the chat as of the section's snapshot`)
    } finally {
      await db.close()
    }
  }
})
