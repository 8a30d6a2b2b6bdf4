// A writer still running older declarations after another one changed the
// stored schema (lib/schema-watch.js), on PostgreSQL with the shared option:
// two databases opened on one table, as two processes would. One moves a
// relation to lists, or builds a new index; the other's next write to that
// model rejects with LEVELKIT_SCHEMA_CHANGED and writes nothing, its reads
// that would be wrong reject so too, its writes to other models go on, and
// check() is clean in the first. Control: without the watch (no
// SchemaWatch), the old writer's edge lands in the old layout and check()
// reports it. Then an index declared on an empty collection (nothing to
// build) that the other writer fills first, not knowing the index: compared
// again, it is built (control: without that, it misses those records). The
// same on IndexedDB with two tabs:
// test/browser-schema-changed-test.js.
import test from 'tape'
import { open } from '../index.js'
import { postgresForTests } from './util/postgres.js'

const server = await postgresForTests(test)

/** @param {string} table */
const openShared = table => open({ backend: 'postgres', connectionString: server.connectionString, table, shared: true, poolSize: 2 })

/** @param {Promise<unknown>} promise @returns {Promise<string>} */
const codeOf = promise => promise.then(() => 'fulfilled', err => err.code ?? String(err))

test('postgres shared: a relation moved to lists by another process refuses the old writer\'s edges', async t => {
  const table = server.table()
  const a = await openShared(table)
  const b = await openShared(table)
  try {
    const peopleA = a.collection('people')
    const followsA = a.relation('follows', { from: peopleA, to: peopleA })
    const notesA = a.collection('notes')
    await peopleA.insertMany([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }])
    await followsA.add(1, 2)
    await followsA.add(2, 3)

    const peopleB = b.collection('people')
    const followsB = b.relation('follows', { from: peopleB, to: peopleB, lists: ['from', 'to'] })
    await b.buildIndexes()

    t.is(await codeOf(followsA.add(4, 3)), 'LEVELKIT_SCHEMA_CHANGED', 'the old writer\'s next edge rejects with LEVELKIT_SCHEMA_CHANGED')
    t.is(await codeOf(peopleA.del(2)), 'LEVELKIT_SCHEMA_CHANGED', 'so does a delete whose cascade would remove edges in the old layout')
    t.is(await codeOf(followsA.to(3).all()), 'LEVELKIT_SCHEMA_CHANGED', 'and a read of the relation')
    t.deepEqual([await followsB.to(4).all(), await followsB.from(3).all()], [[], [2]], 'nothing of it was written')
    t.ok(await peopleB.get(2), 'the refused delete deleted nothing')
    t.is(await peopleA.insert({ n: 5 }), 5, 'a write to a model no one changed goes on')
    t.is(await notesA.insert({ text: 'hi' }), 1, 'a write to a model only the old writer declares goes on')
    const repair = await a.check({ repair: true }).then((/** @type {any} */ report) => report.problems.map((/** @type {any} */ p) => `${p.type}${p.repaired ? ' (repaired)' : ''}`), (/** @type {any} */ err) => err.code)
    t.is(repair, 'LEVELKIT_SCHEMA_CHANGED', 'a repair in the old writer (which would move the edges back) is refused too')
    t.deepEqual((await b.check()).problems, [], 'check() is clean in the new writer, after a repair tried by the old one')
  } finally {
    await a.close()
    await b.close()
  }
})

test('postgres shared: an index built by another process refuses the old writer\'s records', async t => {
  const table = server.table()
  const a = await openShared(table)
  const b = await openShared(table)
  try {
    const peopleA = a.collection('people', { indexes: { byN: { key: (/** @type {any} */ p) => p.n } } })
    const otherA = a.collection('other')
    await peopleA.insertMany([{ n: 1 }, { n: 2 }])

    const peopleB = b.collection('people', { indexes: { byN: { key: (/** @type {any} */ p) => p.n }, byName: { key: (/** @type {any} */ p) => p.name } } })
    await b.buildIndexes()

    t.is(await codeOf(peopleA.insert({ n: 3, name: 'c' })), 'LEVELKIT_SCHEMA_CHANGED', 'the old writer\'s next record rejects with LEVELKIT_SCHEMA_CHANGED')
    t.is(await peopleB.count(), 2, 'nothing of it was written')
    t.deepEqual((await peopleA.query({ index: 'byN', eq: 2 }).all()).map((/** @type {any} */ p) => p.n), [2], 'a read of an index both declare alike still answers')
    t.is(await otherA.insert({ x: 1 }), 1, 'a write to another collection goes on')
    t.is(await peopleB.insert({ n: 4, name: 'd' }), 3, 'the new writer writes')
    t.deepEqual((await b.check()).problems, [], 'check() is clean in the new writer')
  } finally {
    await a.close()
    await b.close()
  }
})

test('postgres shared: an index declared on an empty collection is built when another process fills it with records that lack it', async t => {
  const table = server.table()
  const a = await openShared(table)
  const b = await openShared(table)
  try {
    // Both declare "tags" while it is empty: to b, its new index needs no build.
    const tagsA = a.collection('tags')
    const tagsB = b.collection('tags', { indexes: { byName: { key: (/** @type {any} */ t) => t.name } } })
    await a.schemaStatus()
    await b.schemaStatus()
    // a, which does not know the index, fills the collection first.
    await tagsA.insertMany([{ name: 'x' }, { name: 'y' }])
    t.is(await tagsB.insert({ name: 'z' }), 3, 'the new writer\'s first record')
    t.deepEqual((await tagsB.query({ index: 'byName', eq: 'x' }).all()).map((/** @type {any} */ r) => r.id), [1], 'its index holds the record the old writer wrote before')
    t.deepEqual((await b.check()).problems, [], 'check() is clean in the new writer')
    t.is(await codeOf(tagsA.insert({ name: 'w' })), 'LEVELKIT_SCHEMA_CHANGED', 'and the old writer is refused once the index is stored')
  } finally {
    await a.close()
    await b.close()
  }
})
