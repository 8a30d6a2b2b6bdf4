// With locking: 'serializable', a critical section's reads go to its
// database's serializable transaction (PostgreSQL watches them) and every
// other read to the pool (lib/backends/postgres-serializable.js). What tells
// them apart is the async context: the one AsyncLocalStorage of
// lib/context-node.js, whose frames name both the db.write() callback and
// the section, and which is switched off while nothing runs in it. These
// tests interleave what a flag set while a section runs would confuse: a
// read made outside while a section waits, two databases' sections waiting
// on each other, a db.write() callback (its frame inside the section's),
// and a section after the storage was switched off for being idle.
import test from 'tape'
import pg from 'pg'
import { open } from '../index.js'
import { postgresForTests } from './util/postgres.js'

const server = await postgresForTests(test)

/** @param {string} table */
const options = table => ({ backend: 'postgres', connectionString: server.connectionString, table, shared: true, locking: 'serializable', poolSize: 2 })

function gate () {
  /** @type {() => void} */
  let open = () => {}
  /** @type {Promise<void>} */
  const opened = new Promise(resolve => { open = () => resolve(undefined) })
  return { open, opened }
}

/** A turn of the event loop and a little more: the storage is switched off after one idle turn. */
const idle = () => new Promise(resolve => setTimeout(resolve, 20))

/** @param {unknown} value @returns {string} every byte string in `value`, as hex */
function hexOf (value) {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('hex')
  if (Array.isArray(value)) return value.map(hexOf).join(' ')
  return ''
}

/**
 * Record which connection each key (a string, unique to the test) was read
 * on: `on(key)` answers the connection's client and whether it is a writer
 * connection (where serializable transactions run), or null if not read.
 * @param {import('tape').Test} t
 */
function watchReads (t) {
  const Client = /** @type {any} */ (pg.Client).prototype
  const query = Client.query
  /** @type {Array<{ client: any, writer: boolean, text: string }>} */
  const sent = []
  Client.query = function (/** @type {any[]} */ ...args) {
    const config = args[0]
    const text = String(typeof config === 'string' ? config : config?.text)
    sent.push({ client: this, writer: this.connectionParameters.fallback_application_name === 'levelkit writer', text: text + ' ' + hexOf(config?.values ?? args[1]) })
    return query.apply(this, args)
  }
  t.teardown(() => { Client.query = query })
  return {
    /** @param {string} key */
    on (key) {
      const hex = Buffer.from(key).toString('hex')
      const found = sent.filter(s => /SELECT (key, )?value FROM/.test(s.text) && s.text.includes(hex))
      if (found.length !== 1) return null
      return { client: found[0].client, writer: found[0].writer }
    }
  }
}

test('postgres section context: a read made outside while a section waits goes to the pool, the section\'s own reads before and after to its transaction', async t => {
  const db = await open(options(server.table()))
  try {
    const level = /** @type {any} */ (db).level
    const reads = watchReads(t)
    const waiting = gate()
    const paused = gate()
    const section = db.write(async () => {
      await level.get('in-before')
      paused.open()
      await waiting.opened
      return level.get('in-after')
    })
    await paused.opened
    // The section waits: this runs between its reads, outside it.
    await level.get('outside')
    waiting.open()
    await section
    const before = reads.on('in-before')
    const after = reads.on('in-after')
    const outside = reads.on('outside')
    t.ok(before?.writer, 'the section\'s first read went to a writer connection (its transaction)')
    t.ok(after?.writer && after.client === before?.client, 'its read after the wait to the same one')
    t.ok(outside !== null && !outside.writer, 'the read made outside while it waited went to the pool')
  } finally {
    await db.close()
  }
})

test('postgres section context: two databases\' sections interleaved each read in their own transaction', async t => {
  const a = await open(options(server.table()))
  const b = await open(options(server.table()))
  try {
    const levelA = /** @type {any} */ (a).level
    const levelB = /** @type {any} */ (b).level
    const reads = watchReads(t)
    const aRead = gate()
    const bRead = gate()
    const aGo = gate()
    // a reads, waits for b to enter and read, then reads again (b's
    // section still running); b reads again once a has.
    const sectionA = a.write(async () => {
      await levelA.get('a-1')
      aRead.open()
      await bRead.opened
      await levelA.get('a-2')
      aGo.open()
    })
    const sectionB = b.write(async () => {
      await aRead.opened
      await levelB.get('b-1')
      bRead.open()
      await aGo.opened
      await levelB.get('b-2')
    })
    await Promise.all([sectionA, sectionB])
    const [a1, a2, b1, b2] = ['a-1', 'a-2', 'b-1', 'b-2'].map(key => reads.on(key))
    t.ok(a1?.writer && b1?.writer, 'each section\'s first read went to a writer connection')
    t.ok(a1?.client !== b1?.client, 'each to its own database\'s')
    t.ok(a2?.client === a1?.client, 'a\'s read made after b entered its section went to a\'s transaction')
    t.ok(b2?.client === b1?.client, 'b\'s read made after a read again went to b\'s')
  } finally {
    await a.close()
    await b.close()
  }
})

test('postgres section context: a db.write() callback inside its section reads in the transaction and still refuses a model call without in(w)', async t => {
  const db = await open(options(server.table()))
  try {
    const level = /** @type {any} */ (db).level
    const accounts = db.collection('accounts')
    await accounts.insert({ balance: 1 })
    const reads = watchReads(t)
    const refused = await db.write(async (/** @type {any} */ w) => {
      await level.get('callback')
      const err = await accounts.insert({ balance: 2 }).then(() => null, (/** @type {any} */ err) => err)
      await accounts.in(w).update(1, { balance: 5 })
      return err
    })
    t.ok(reads.on('callback')?.writer, 'the callback\'s read went to the transaction')
    t.is(refused?.code, 'LEVELKIT_INVALID', 'a model call without in(w) inside it is refused (its frame names the callback too)')
    t.is((await accounts.get(1)).balance, 5, 'the callback\'s write is there')
    t.is(await accounts.get(2), undefined, 'the refused insert is not')
  } finally {
    await db.close()
  }
})

test('postgres section context: after an idle turn switched the storage off, reads outside go to the pool and a new section\'s to its transaction', async t => {
  const db = await open(options(server.table()))
  try {
    const level = /** @type {any} */ (db).level
    const reads = watchReads(t)
    await db.write(async () => level.get('first'))
    await idle()
    await level.get('idle')
    await db.write(async () => level.get('again'))
    await idle()
    const [first, between, again] = ['first', 'idle', 'again'].map(key => reads.on(key))
    t.ok(first?.writer, 'the first section\'s read went to its transaction')
    t.ok(between !== null && !between.writer, 'a read while idle to the pool')
    t.ok(again?.writer, 'the next section\'s read, once the storage was switched on again, to its transaction')
  } finally {
    await db.close()
  }
})
