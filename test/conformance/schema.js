import { open, encodeTuple as encode, decodeTuple } from '../../index.js'
import { rejects } from './index.js'

// Records a collection holds before an index is declared on it: enough for
// several build batches (256 records each), few enough for npm test. Not
// fewer: a build alone grows its batches (256, then 512 read ahead), so
// below 769 records it is two batches. With a build that does not read
// again a record written after its page was read ahead (the bug the tests
// of each kind below are for), at 600 records the four pass on memory; at
// 800 they fail on memory and LevelDB, and on postgres one of the four
// passed in each of two runs; at 1,000 all four fail (session 19).
// LEVELKIT_SCHEMA_RECORDS=10000 runs the size (in Node); fewer
// (at least 300) where the build's batches are not what is under test
// (test/read-cache-policies-test.js's runs under each cache policy).
const RECORDS = Number(globalThis.process?.env?.LEVELKIT_SCHEMA_RECORDS) || 1000
if (!(Number.isSafeInteger(RECORDS) && RECORDS >= 300)) throw new Error(`LEVELKIT_SCHEMA_RECORDS must be a whole number of at least 300, not ${RECORDS}`)
// Records the reads made during a build ask for, near the end of the
// collection (900..902 and 950 of 1,000): the build reaches them last.
const NEAR_END = Math.floor(RECORDS * 0.9)
const LATE = Math.floor(RECORDS * 0.95)

/** @type {Record<string, any>} the four kinds of index, on the same records */
const KINDS = {
  plain: { key: (/** @type {any} */ r) => r.title },
  unique: { unique: true, key: (/** @type {any} */ r) => r.title },
  multi: { multi: true, key: (/** @type {any} */ r) => r.tags },
  covering: { unique: true, covering: true, key: (/** @type {any} */ r) => r.title }
}

const title = (/** @type {number} */ i) => `t${String(i).padStart(5, '0')}`
const record = (/** @type {number} */ i) => ({ title: title(i), tags: [`g${i % 7}`, `h${i % 3}`, `g${i % 7}`], n: i })

/** @param {Uint8Array | string} bytes */
function hex (bytes) {
  if (typeof bytes === 'string') return bytes
  let s = ''
  for (const b of bytes) s += b.toString(16).padStart(2, '0')
  return s
}

/**
 * A database on `level` (which outlives it), with `books` declared with `indexes`.
 * @param {any} level @param {Record<string, any>} [indexes]
 */
async function session (level, indexes) {
  const db = await open({ db: level })
  const books = db.collection('books', indexes === undefined ? undefined : { indexes })
  return { db, books }
}

/** Fill `books` with RECORDS records, a few hundred per batch. @param {any} db @param {any} books */
async function fill (db, books, from = 0, n = RECORDS) {
  for (let i = from; i < from + n; i += 300) {
    await db.write(async (/** @type {any} */ w) => {
      for (let k = i; k < Math.min(i + 300, from + n); k++) await books.in(w).insert(record(k))
    })
  }
}

/**
 * The entries of index `name` as stored, and as computed from scratch from
 * the stored records with `spec`: they must be equal.
 * @param {any} level @param {string} name @param {any} spec
 */
async function indexAgainstScratch (level, name, spec) {
  const stored = await level.sublevel(`books.idx.${name}`, { keyEncoding: 'view', valueEncoding: spec.covering ? 'utf8' : 'view' }).iterator().all()
  const records = await level.sublevel('books', { keyEncoding: 'view', valueEncoding: 'utf8' }).iterator().all()
  const scratch = new Map()
  for (const [key, json] of records) {
    const id = decodeTuple(key)
    const computed = spec.key(JSON.parse(json))
    if (computed === undefined) continue
    for (const value of spec.multi ? new Set(computed) : [computed]) {
      const entryKey = spec.unique ? encode([value]) : encode([value, id])
      scratch.set(hex(entryKey), spec.covering ? json : spec.unique ? hex(key) : '')
    }
  }
  const actual = new Map(stored.map((/** @type {any[]} */ [k, v]) => [hex(k), hex(v)]))
  return { actual: [...actual].sort(), scratch: [...scratch].sort(), records: records.length }
}

/**
 * Writes while the build runs: inserts, updates that move indexed values,
 * deletes; `sample` is called now and then to see the build in progress.
 * @param {any} books @param {() => Promise<void>} sample
 */
async function concurrentWrites (books, sample, n = RECORDS, salt = 0) {
  const ids = []
  for (let k = 0; k < 200; k++) {
    const i = (k * 37) % n + 1
    if (k % 4 === 0) ids.push(await books.insert(record(100000 + salt + k)))
    else if (k % 4 === 1) await books.update(i, { title: `moved${salt + k}`, tags: [`x${k % 5}`] }).catch(notFound)
    else if (k % 4 === 2) await books.del(n - k)
    else await books.put(i + 1, { title: `put${salt + k}`, tags: [] })
    if (k % 10 === 0) await sample()
  }
  return ids
}

/** @param {any} err */
function notFound (err) {
  if (err.code !== 'LEVELKIT_NOT_FOUND') throw err
}

/** @param {any} test @param {any} common */
export default function (test, common) {
  for (const [kind, spec] of Object.entries(KINDS)) {
    test(`${common.backend}: a ${kind} index declared on ${RECORDS} existing records is built while writes go on`, async t => {
      const base = await common.open()
      const first = await session(base.level)
      await fill(first.db, first.books)
      await first.db.close()

      const { db, books } = await session(base.level, { byTitle: spec })
      const states = new Set()
      const sample = async () => { states.add((await db.schemaStatus()).books.byTitle.state) }
      await concurrentWrites(books, sample)
      await db.buildIndexes()
      t.ok(states.has('building'), `writes went on while it was built (states seen: ${[...states].join(', ')})`)
      const status = (await db.schemaStatus()).books.byTitle
      t.is(status.state, 'ready', 'ready')
      const { actual, scratch, records } = await indexAgainstScratch(base.level, 'byTitle', spec)
      t.ok(records > RECORDS - 60, `${records} records`)
      t.same(actual, scratch, 'the index equals one computed from scratch: nothing missed, nothing doubled, nothing stale')
      t.same(await db.check(), { ok: true, problems: [], repaired: 0 }, 'check() is clean')
      const all = await books.query({ index: 'byTitle' }).all()
      t.is(all.length, kind === 'multi' ? scratch.length : records, 'a query over it reads every entry')
      await db.close()

      // Opened again, it is ready at once: nothing is built twice.
      const again = await session(base.level, { byTitle: spec })
      t.is(await again.books.count({ index: 'byTitle', wait: false }), scratch.length, 'ready at once when opened again')
      t.same((await again.db.schemaStatus()).books.byTitle, { state: 'ready', declared: true }, 'ready, with no done: this open built nothing')
      await again.db.close()
      await base.close()
    })
  }

  test(`${common.backend}: reads of an index being built wait for it, or with { wait: false } reject with LEVELKIT_INDEX_BUILDING`, async t => {
    const base = await common.open()
    const first = await session(base.level)
    await fill(first.db, first.books)
    await first.db.close()

    const { db, books } = await session(base.level, { byTitle: KINDS.unique, tags: KINDS.multi })
    const waited = Promise.all([
      books.query({ index: 'byTitle', gte: title(NEAR_END), lt: title(NEAR_END + 3) }).all(),
      books.count({ index: 'tags', eq: 'g3' }),
      books.getBy('byTitle', title(LATE)),
      books.query({ index: 'tags', eq: 'h1', limit: 2 }).page()
    ])
    const err = await rejects(t, books.query({ index: 'byTitle', wait: false }).all(), 'LEVELKIT_INDEX_BUILDING', 'a query with { wait: false }')
    t.is(err.collection, 'books')
    t.is(err.index, 'byTitle')
    t.ok(Number.isInteger(err.done) && Number.isInteger(err.total), 'with its progress')
    await rejects(t, books.count({ index: 'tags', wait: false }), 'LEVELKIT_INDEX_BUILDING', 'count()')
    await rejects(t, books.getBy('byTitle', title(3), { wait: false }), 'LEVELKIT_INDEX_BUILDING', 'getBy()')
    await rejects(t, db.write(w => books.in(w).getBy('byTitle', title(3))), 'LEVELKIT_INDEX_BUILDING', 'inside db.write(), which the build waits for, a read cannot wait')
    t.throws(() => books.query({ index: 'byTitle', wait: 'no' }), /wait/, 'wait must be a boolean')
    const [range, count, one, page] = await waited
    t.same(range.map((/** @type {any} */ r) => r.n), [NEAR_END, NEAR_END + 1, NEAR_END + 2], 'a query made during the build answers in full')
    t.is(count, Array.from({ length: RECORDS }, (_, i) => i).filter(i => i % 7 === 3).length, 'count() too')
    t.is(one.n, LATE, 'getBy() too')
    t.is(page.items.length, 2, 'page() too')
    t.is(await books.count({ index: 'byTitle', wait: false }), RECORDS, 'once built, { wait: false } reads it')
    t.ok((await db.check()).ok)
    await db.close()
    await base.close()
  })

  test(`${common.backend}: a unique index whose build finds a value twice fails with LEVELKIT_UNIQUE naming both, until the data is fixed`, async t => {
    const base = await common.open()
    const first = await session(base.level)
    await fill(first.db, first.books, 0, 600)
    await first.books.update(500, { title: title(10) })
    await first.db.close()

    const { db, books } = await session(base.level, { byTitle: KINDS.unique })
    const reading = rejects(t, books.getBy('byTitle', title(20)), 'LEVELKIT_UNIQUE', 'a read that waited rejects with it')
    const err = await rejects(t, db.buildIndexes(), 'LEVELKIT_UNIQUE', 'buildIndexes() rejects')
    t.same(err.ids, [11, 500], 'naming both records')
    t.is(err.value, title(10))
    t.is(err.index, 'byTitle')
    t.is((await reading).index, 'byTitle')
    await rejects(t, books.query({ index: 'byTitle' }).all(), 'LEVELKIT_UNIQUE', 'so do later reads')
    const status = (await db.schemaStatus()).books.byTitle
    t.is(status.state, 'failed')
    t.is(status.error.code, 'LEVELKIT_UNIQUE')
    await db.close()

    const again = await session(base.level, { byTitle: KINDS.unique })
    await rejects(t, again.db.buildIndexes(), 'LEVELKIT_UNIQUE', 'tried again at the next open: still failing')
    await again.books.update(500, { title: 'fixed' })
    await again.db.buildIndexes()
    t.is((await again.books.getBy('byTitle', title(10))).id, 11, 'after the fix, buildIndexes() builds it')
    t.is((await again.books.getBy('byTitle', 'fixed')).id, 500)
    const { actual, scratch } = await indexAgainstScratch(base.level, 'byTitle', KINDS.unique)
    t.same(actual, scratch, 'the index equals one computed from scratch')
    t.ok((await again.db.check()).ok, 'check() is clean')
    await again.db.close()
    await base.close()
  })

  test(`${common.backend}: raising an index's version (or changing unique, multi, covering) rebuilds it with the new key function`, async t => {
    const base = await common.open()
    const first = await session(base.level, { byTitle: { key: (/** @type {any} */ r) => r.title } })
    await first.db.schemaStatus()
    t.same(await base.level.keys().all(), [], 'declared on an empty collection, nothing is written yet')
    await fill(first.db, first.books, 0, 700)
    await first.db.close()

    const upper = { key: (/** @type {any} */ r) => r.title.toUpperCase(), version: 1 }
    const second = await session(base.level, { byTitle: upper })
    t.is((await second.db.schemaStatus()).books.byTitle.state, 'clearing', 'the old entries are cleared first')
    await concurrentWrites(second.books, async () => {}, 700)
    t.same((await second.books.query({ index: 'byTitle', gte: 'T00005', lt: 'T00007' }).all()).map((/** @type {any} */ r) => r.n), [5, 6], 'read with the new key function')
    t.is(await second.books.count({ index: 'byTitle', lt: 'a' }), await second.books.count(), 'no entry of the old function is left')
    let { actual, scratch } = await indexAgainstScratch(base.level, 'byTitle', upper)
    t.same(actual, scratch, 'the index equals one computed from scratch with the new function')
    t.ok((await second.db.check()).ok, 'check() is clean')
    await second.db.close()

    const unique = { ...upper, unique: true }
    const third = await session(base.level, { byTitle: unique })
    await third.db.buildIndexes()
    ;({ actual, scratch } = await indexAgainstScratch(base.level, 'byTitle', unique))
    t.same(actual, scratch, 'made unique: rebuilt in the unique layout')
    t.ok((await third.db.check()).ok, 'check() is clean')
    await third.db.close()

    // Writes while the entries of the old layout are cleared leave the index alone.
    const covering = { ...unique, covering: true }
    const fourth = await session(base.level, { byTitle: covering })
    await fourth.books.update(5, { title: 'renamed' })
    await fourth.books.del(6)
    await concurrentWrites(fourth.books, async () => {}, 700, 1000)
    await fourth.db.buildIndexes()
    ;({ actual, scratch } = await indexAgainstScratch(base.level, 'byTitle', covering))
    t.same(actual, scratch, 'made covering while written: rebuilt in the covering layout')
    t.ok((await fourth.db.check()).ok, 'check() is clean')
    await fourth.db.close()
    await base.close()
  })

  test(`${common.backend}: an index no longer declared stays stored until dropUndeclared(); declared again, it is rebuilt`, async t => {
    const base = await common.open()
    const first = await session(base.level, { byTitle: KINDS.plain, tags: KINDS.multi })
    await fill(first.db, first.books, 0, 600)
    await first.db.close()
    const raw = base.level.sublevel('books.idx.tags', { keyEncoding: 'view' })
    const entries = (await raw.keys().all()).length

    const second = await session(base.level, { byTitle: KINDS.plain })
    t.same((await second.db.schemaStatus()).books.tags, { state: 'undeclared', declared: false }, 'reported as undeclared')
    await second.books.update(1, { tags: ['changed'] })
    await second.books.del(2)
    t.is((await raw.keys().all()).length, entries, 'its entries are left alone')
    await second.db.close()

    // Declared again: its entries missed the writes made meanwhile, so it is rebuilt.
    const third = await session(base.level, { byTitle: KINDS.plain, tags: KINDS.multi })
    t.same((await third.books.query({ index: 'tags', eq: 'changed' }).all()).map((/** @type {any} */ r) => r.id), [1], 'rebuilt')
    const { actual, scratch } = await indexAgainstScratch(base.level, 'tags', KINDS.multi)
    t.same(actual, scratch, 'the index equals one computed from scratch')
    await third.db.close()

    const fourth = await session(base.level, { byTitle: KINDS.plain })
    t.same(await fourth.db.dropUndeclared(), [{ collection: 'books', index: 'tags' }], 'dropUndeclared() names what it dropped')
    t.same(await raw.keys().all(), [], 'its entries are deleted')
    t.is((await fourth.db.schemaStatus()).books.tags, undefined, 'and its stored declaration')
    await fourth.books.update(3, { title: 'written after the drop' })
    t.is((await fourth.db.schemaStatus()).books.tags, undefined, 'a write after the drop does not store it again')
    t.same(await fourth.db.dropUndeclared(), [], 'nothing left to drop')
    t.ok((await fourth.db.check()).ok)
    t.is(await fourth.books.count({ index: 'byTitle' }), 599, 'the declared index is untouched')
    await fourth.db.close()
    await base.close()
  })

  test(`${common.backend}: declaring an index on records writes nothing until the collection is used; a read waiting for a build when the database closes rejects with LEVELKIT_NOT_OPEN`, async t => {
    const base = await common.open()
    const first = await session(base.level)
    await fill(first.db, first.books, 0, 600)
    await first.db.close()
    const before = (await base.level.keys().all()).length

    const { db, books } = await session(base.level, { byTitle: KINDS.unique })
    t.same((await db.schemaStatus()).books.byTitle, { state: 'building', declared: true, done: 0, total: 0 }, 'to be built')
    const report = await db.check()
    t.ok(report.ok, 'check() leaves it out')
    t.same(report.unchecked, [{ collection: 'books', index: 'byTitle', state: 'building' }], 'and says so')
    t.is((await base.level.keys().all()).length, before, 'nothing written: a program may still find the database is not its own')
    const waiting = books.getBy('byTitle', title(500))
    const closing = db.close()
    const err = await rejects(t, waiting, 'LEVELKIT_NOT_OPEN', 'the read that waited for the build')
    t.match(err.message, /closed/, 'says the database closed')
    await closing
    await base.close()
  })

  test(`${common.backend}: a database written before levelkit stored its schema: its indexes get every missing entry`, async t => {
    const base = await common.open()
    const first = await session(base.level, { byTitle: KINDS.unique })
    await fill(first.db, first.books, 0, 600)
    await first.db.close()
    // What an earlier levelkit leaves: no stored schema, and an index declared
    // late, so entries are missing (and one stale entry of a value no record has).
    await base.level.sublevel(':levelkit.meta', { keyEncoding: 'view' }).clear()
    const raw = base.level.sublevel('books.idx.byTitle', { keyEncoding: 'view', valueEncoding: 'view' })
    await raw.clear({ gte: encode([title(100)]), lt: encode([title(300)]) })
    await raw.put(encode([title(5)]), encode(9))

    const { db, books } = await session(base.level, { byTitle: KINDS.unique })
    t.is((await books.getBy('byTitle', title(150))).n, 150, 'the missing entries are added')
    t.is((await books.getBy('byTitle', title(5))).n, 5, 'a stale unique entry is replaced')
    const { actual, scratch } = await indexAgainstScratch(base.level, 'byTitle', KINDS.unique)
    t.same(actual, scratch, 'the index equals one computed from scratch')
    t.ok((await db.check()).ok, 'check() is clean')
    await db.close()
    await base.close()
  })
}
