// On PostgreSQL, the write path's batches go to the table directly
// (PostgresLevel#levelkitWriteBatch(), Writer#batch() in lib/writer.js), past
// abstract-level's batch(): the same rows as through it, byte for byte, in
// every locking mode; and through it still wherever abstract-level would do
// more than encode (a 'write' listener or a prewrite hook on the root).
import test from 'tape'
import { AbstractLevel } from 'abstract-level'
import { open } from '../index.js'
import { postgresForTests, POSTGRES_MODES as MODES } from './util/postgres.js'

const server = await postgresForTests(test)

/**
 * Count abstract-level's batch() calls (any database or sublevel) until the
 * test ends.
 * @param {import('tape').Test} t
 */
function countBatches (t) {
  const proto = /** @type {any} */ (AbstractLevel.prototype)
  const { batch } = proto
  const counted = { batch: 0 }
  proto.batch = function (/** @type {any[]} */ ...args) { counted.batch++; return batch.apply(this, args) }
  t.teardown(() => { proto.batch = batch })
  return counted
}

/**
 * The same writes of every kind of model (records with unique and multi
 * indexes, updates and deletes, children in blocks, relation edges, a
 * counter, a transaction), with text that UTF-8 encodes in 1 to 4 bytes and
 * a lone surrogate (in a value: a key refuses it).
 * @param {any} db
 */
async function workload (db) {
  const users = db.collection('users', { indexes: { name: { key: (/** @type {any} */ u) => u.name, unique: true }, tags: { key: (/** @type {any} */ u) => u.tags, multi: true } } })
  const chats = db.collection('chats')
  const messages = db.children('messages', { parent: chats, blockSize: 3 })
  const members = db.relation('members', { from: chats, to: users })
  const hits = db.counter('hits')
  const names = ['ascii', 'é ü', '中文', '😀 astral', 'five', '']
  const ids = []
  for (const name of names) ids.push(await users.insert({ name, tags: [name.length % 3, 'x'], bio: `lone \ud800 surrogate of ${name}` }))
  await users.update(ids[1], { tags: ['y'] })
  await users.del(ids[2])
  const chat = await chats.insert({ title: 'τίτλος' })
  await Promise.all(names.map(name => messages.append(chat, { text: name })))
  await members.add(chat, ids[0])
  await members.add(chat, ids[3])
  await hits.add('page', 5)
  await db.transaction(async (/** @type {any} */ tx) => {
    const user = await users.in(tx).get(ids[0])
    await users.in(tx).update(ids[0], { name: user.name + '!' })
  })
  return { users, chat, messages }
}

/** @param {any} pool @param {string} table */
async function rows (pool, table) {
  const { rows } = await pool.query(`SELECT encode(key, 'hex') AS k, encode(value, 'hex') AS v FROM "${table}" ORDER BY key`)
  return rows.map((/** @type {any} */ row) => `${row.k} ${row.v}`)
}

for (const [mode, options] of MODES) {
  test(`postgres direct writes (${mode}): the rows abstract-level's batch() writes, without it`, async t => {
    const tables = [server.table(), server.table()]
    // Through abstract-level: a 'write' listener on the root keeps batches there.
    const through = await open({ backend: 'postgres', pool: server.pool, table: tables[0], ...options })
    /** @type {any[]} */
    const events = []
    const root = /** @type {any} */ (through).level
    root.on('write', (/** @type {any[]} */ ops) => events.push(ops.length))
    let counted
    try {
      await workload(through)
      t.ok(events.length > 0, 'a \'write\' listener on the root hears the batches')
      t.same((await through.check()).problems, [], 'check() is clean through abstract-level')
    } finally {
      await through.close()
    }
    const direct = await open({ backend: 'postgres', pool: server.pool, table: tables[1], ...options })
    try {
      counted = countBatches(t)
      const { users, chat, messages } = await workload(direct)
      t.is(counted.batch, 0, 'no abstract-level batch() was called')
      t.same((await direct.check()).problems, [], 'check() is clean')
      t.is((await users.getBy('name', '😀 astral'))?.name, '😀 astral', 'an astral name read back by its index')
      t.same((await messages.range(chat).all()).length, 6, 'the children read back')
    } finally {
      await direct.close()
    }
    const [before, after] = [await rows(server.pool, tables[0]), await rows(server.pool, tables[1])]
    t.ok(before.length > 20, `${before.length} rows written`)
    t.same(after, before, 'the same rows, byte for byte')
  })
}
