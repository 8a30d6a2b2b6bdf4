// Index builds that read ahead (lib/schema.js, #buildAhead()): a page of
// records is read, and its entries computed, before the critical section
// that indexes it; a record written in between (written by then, or
// decided and not yet written) is indexed as it is, not as it was read.
// And a build, or db.schemaStatus(), answers while writes go on without a
// pause (it reads the stored schema in a critical section, not after
// waiting for the write path to be idle). On memory and LevelDB.
import test from 'tape'
import { open, encodeTuple as encode, decodeTuple } from '../index.js'
import { memoryAndLevelDB } from './util/backends.js'
import { setBuildBatchSize, setBuildPageHook } from '../lib/schema.js'

const RECORDS = 400
const BATCH = 20

const backends = memoryAndLevelDB('levelkit-schema-build-', test)

/** @type {Record<string, any>} */
const INDEXES = {
  byTitle: { key: (/** @type {any} */ r) => r.title },
  uniqueTitle: { unique: true, key: (/** @type {any} */ r) => r.title },
  byTag: { multi: true, key: (/** @type {any} */ r) => r.tags },
  covering: { unique: true, covering: true, key: (/** @type {any} */ r) => r.title }
}

/** @param {Uint8Array | string} bytes */
const hex = bytes => typeof bytes === 'string' ? bytes : Buffer.from(bytes).toString('hex')

/** The stored entries of index `name` and those computed from the stored records. @param {any} level @param {string} name */
async function againstScratch (level, name) {
  const spec = INDEXES[name]
  const stored = await level.sublevel(`books.idx.${name}`, { keyEncoding: 'view', valueEncoding: spec.covering ? 'utf8' : 'view' }).iterator().all()
  const records = await level.sublevel('books', { keyEncoding: 'view', valueEncoding: 'utf8' }).iterator().all()
  const scratch = new Map()
  for (const [key, json] of records) {
    const id = decodeTuple(key)
    for (const value of spec.multi ? new Set(spec.key(JSON.parse(json))) : [spec.key(JSON.parse(json))]) {
      scratch.set(hex(spec.unique ? encode([value]) : encode([value, id])), spec.covering ? json : spec.unique ? hex(key) : '')
    }
  }
  return { actual: stored.map((/** @type {any[]} */ [k, v]) => [hex(k), hex(v)]).sort(), scratch: [...scratch].sort(), records: records.length }
}

/** @param {any} err */
function notFound (err) {
  if (err.code !== 'LEVELKIT_NOT_FOUND') throw err
}

/** @param {number} ms */
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

for (const backend of backends) {
  for (const name of Object.keys(INDEXES)) {
    test(`${backend.name}: a ${name} index built by reading ahead: records written between a page's read and its batch are indexed as they are`, async t => {
      setBuildBatchSize(BATCH)
      const base = await backend.base()
      try {
        const first = await open({ db: base.level })
        const plain = first.collection('books')
        await first.write(async w => {
          for (let i = 0; i < RECORDS; i++) await plain.in(w).insert({ title: `t${i}`, tags: [`g${i % 5}`, `h${i % 3}`], n: i })
        })
        await first.close()

        const db = await open({ db: base.level })
        const books = db.collection('books', { indexes: { [name]: INDEXES[name] } })
        let pages = 0
        let k = 0
        /** @type {Promise<unknown>[]} */
        const unawaited = []
        setBuildPageHook(async keys => {
          if (keys.length < 4) return
          pages++
          const ids = keys.map(key => decodeTuple(key))
          // Awaited on even pages (written before the batch: the build hears
          // of them), not on odd ones (decided, maybe not yet written when
          // the batch is decided: the overlay has them).
          const writes = [
            // A change of the indexed value.
            books.update(ids[0], { title: `moved${k++}`, tags: ['m'] }),
            // A change of another field: the write keeps the entries as they
            // were, so the build must put them.
            books.update(ids[1], { n: -1 }),
            books.del(ids[2]),
            // Moved twice.
            books.update(ids[3], { title: `again${k++}` }).then(() => books.update(ids[3], { title: `twice${k++}`, tags: [] })),
            // A record past the page, and one after every record.
            books.update(ids[ids.length - 1] + BATCH * 3, { title: `ahead${k++}` }).catch(notFound),
            books.insert({ title: `new${k++}`, tags: ['n'], n: k })
          ]
          if (pages % 2 === 0) await Promise.all(writes)
          else unawaited.push(...writes)
        })
        await db.buildIndexes()
        await Promise.all(unawaited)
        t.ok(pages >= RECORDS / BATCH / 4, `writes went on between ${pages} pages and their batches`)
        t.is((await db.schemaStatus()).books[name].state, 'ready', 'ready')
        const { actual, scratch, records } = await againstScratch(base.level, name)
        t.is(records, RECORDS, 'as many records: one deleted and one inserted per page')
        t.same(actual, scratch, 'the index equals one computed from scratch')
        t.same((await db.check()).problems, [], 'check() is clean')
        await db.close()
      } finally {
        setBuildPageHook(null)
        setBuildBatchSize(256)
        await base.close()
      }
    })
  }

  for (const name of Object.keys(INDEXES)) {
    test(`${backend.name}: a ${name} index built where other tabs write (each page read in its batch's critical section) while writes go on`, async t => {
      setBuildBatchSize(BATCH)
      const base = await backend.base()
      let readAhead = 0
      try {
        const first = await open({ db: base.level })
        const plain = first.collection('books')
        await first.write(async w => {
          for (let i = 0; i < RECORDS; i++) await plain.in(w).insert({ title: `t${i}`, tags: [`g${i % 5}`, `h${i % 3}`], n: i })
        })
        await first.close()

        const db = await open({ db: base.level })
        // As on IndexedDB with Web Locks, or PostgreSQL shared: this process
        // hears of other writers' writes only once written (lib/schema.js, #buildFresh()).
        Object.defineProperty(db.writer, 'acrossTabs', { value: true })
        setBuildPageHook(() => { readAhead++ })
        const books = db.collection('books', { indexes: { [name]: INDEXES[name] } })
        let built = false
        const build = db.buildIndexes().then(() => { built = true })
        const building = () => !built
        let k = 0
        /** @type {Set<string>} */
        const states = new Set()
        // Four writers: writes decided and not yet written when a batch reads its page.
        await Promise.all(Array.from({ length: 4 }, async (_, w) => {
          for (let i = w; building() && i < 800; i += 4) {
            const id = 1 + (i * 13) % RECORDS
            if (i % 4 === 0) await books.update(id, { title: `moved${k++}`, tags: ['m'] }).catch(notFound)
            else if (i % 4 === 1) await books.update(id, { n: -1 }).catch(notFound)
            else if (i % 4 === 2) await books.del(1 + (i * 7) % RECORDS).catch(notFound)
            else await books.insert({ title: `new${k++}`, tags: ['n'], n: k })
            if (i % 40 === w) states.add((await db.schemaStatus()).books[name].state)
          }
        }))
        await build
        t.is(readAhead, 0, 'no page was read ahead')
        t.ok(states.has('building'), `writes went on during the build (states seen: ${[...states].join(', ')})`)
        t.is((await db.schemaStatus()).books[name].state, 'ready', 'ready')
        const { actual, scratch } = await againstScratch(base.level, name)
        t.same(actual, scratch, 'the index equals one computed from scratch')
        t.same((await db.check()).problems, [], 'check() is clean')
        await db.close()
      } finally {
        setBuildPageHook(null)
        setBuildBatchSize(256)
        await base.close()
      }
    })
  }

  test(`${backend.name}: a build's batches grow while no other writes go on, and stay at the batch size while they do`, async t => {
    setBuildBatchSize(BATCH)
    const base = await backend.base()
    try {
      const first = await open({ db: base.level })
      const plain = first.collection('books')
      await first.write(async w => {
        for (let i = 0; i < RECORDS * 2; i++) await plain.in(w).insert({ title: `t${i}`, tags: [], n: i })
      })
      await first.close()

      /** @type {number[]} */
      let sizes = []
      let writes = 0
      /** @type {number[]} how many writes the writers had made as each page was read */
      const writesAt = []
      setBuildPageHook(keys => {
        sizes.push(keys.length)
        writesAt.push(writes)
      })
      const quiet = await open({ db: base.level })
      quiet.collection('books', { indexes: { byN: { key: (/** @type {any} */ r) => r.n } } })
      await quiet.buildIndexes()
      await quiet.close()
      t.ok(sizes.some(n => n > BATCH), `alone, pages grew past ${BATCH} records (${sizes.join(' ')})`)

      sizes = []
      writesAt.length = 0
      const db = await open({ db: base.level })
      const books = db.collection('books', { indexes: { byTitle: INDEXES.byTitle } })
      let built = false
      const build = db.buildIndexes().then(() => { built = true })
      const building = () => !built
      await Promise.all(Array.from({ length: 4 }, async (_, w) => {
        for (let i = 0; building(); i++) {
          await books.update(1 + ((i * 4 + w) % (RECORDS * 2)), { n: -i - 1 })
          writes++
          // On memory a write settles in microtasks: without a turn of the
          // event loop, the build's pause (a timer) would never end.
          await new Promise(resolve => setImmediate(resolve))
        }
      }))
      await build
      // A page's size is decided with the batch of the page before it: it
      // stays at the batch size if other writes were decided since the
      // batch before that. More writes written between those two pages'
      // reads than the writers can have decided and not yet written (one
      // each) means one was decided after the first was, so the page after
      // them stays at the batch size. (Pages read before the writers' first
      // writes may grow: on a loaded machine, more than the first two. On
      // memory, writes settle in microtasks and the build can run between
      // two of them: then it is alone, and grows.)
      const between = sizes.filter((n, i) => i >= 2 && writesAt[i - 1] - writesAt[i - 2] > 4)
      if (backend.name === 'leveldb') {
        t.ok(between.length >= 3, `pages after more than 4 writes between the two pages before: ${between.length}`)
        t.same(between.filter(n => n > BATCH), [], `with writes going on (${writes} of them during the build), pages of ${BATCH} records (${sizes.join(' ')}; writes made by each page: ${writesAt.join(' ')})`)
      }
      const { actual, scratch } = await againstScratch(base.level, 'byTitle')
      t.same(actual, scratch, 'the index equals one computed from scratch')
      await db.close()
    } finally {
      setBuildPageHook(null)
      setBuildBatchSize(256)
      await base.close()
    }
  })

  test(`${backend.name}: db.schemaStatus() during a build reports how many records it has to index (counted once asked for)`, async t => {
    setBuildBatchSize(BATCH)
    const base = await backend.base()
    try {
      const first = await open({ db: base.level })
      const plain = first.collection('books')
      await first.write(async w => {
        for (let i = 0; i < RECORDS; i++) await plain.in(w).insert({ title: `t${i}`, tags: [], n: i })
      })
      await first.close()

      const db = await open({ db: base.level })
      db.collection('books', { indexes: { byN: { key: (/** @type {any} */ r) => r.n } } })
      /** @type {any[]} */
      const seen = []
      let pages = 0
      setBuildPageHook(async () => {
        if (++pages === 3) seen.push((await db.schemaStatus()).books.byN)
      })
      await db.buildIndexes()
      t.is(seen.length, 1, 'asked during the build')
      t.is(seen[0].state, 'building')
      t.ok(seen[0].done > 0 && seen[0].done < RECORDS, `part of it done (${seen[0].done})`)
      t.is(seen[0].total, RECORDS, 'the total is every record')
      t.same((await db.schemaStatus()).books.byN, { state: 'ready', declared: true, done: RECORDS, total: RECORDS }, 'ready: every record done')
      await db.close()
    } finally {
      setBuildPageHook(null)
      setBuildBatchSize(256)
      await base.close()
    }
  })

  test(`${backend.name}: a build and db.schemaStatus() answer while writes go on without a pause`, async t => {
    const base = await backend.base()
    let stop = false
    const stopped = () => stop
    /** @type {Promise<unknown>[]} */
    let writers = []
    try {
      const first = await open({ db: base.level })
      const plain = first.collection('books')
      await first.write(async w => {
        for (let i = 0; i < 600; i++) await plain.in(w).insert({ title: `t${i}`, tags: [], n: i })
      })
      await first.close()

      const db = await open({ db: base.level })
      const books = db.collection('books', { indexes: { byN: { key: (/** @type {any} */ r) => r.n } } })
      // A write started every turn of the event loop (up to 32 at a time),
      // so that there is always a batch being written, and the next queued:
      // the write path is never idle until they stop.
      writers = [(async () => {
        /** @type {Set<Promise<unknown>>} */
        const running = new Set()
        for (let i = 0; !stopped(); i++) {
          const write = books.update(1 + (i % 600), { n: i }).finally(() => running.delete(write))
          running.add(write)
          if (running.size >= 32) await Promise.race(running)
          await new Promise(resolve => setImmediate(resolve))
        }
        await Promise.all(running)
      })()]
      await sleep(50)
      const answered = await Promise.race([
        Promise.all([db.schemaStatus(), db.buildIndexes()]).then(() => 'answered'),
        sleep(5000).then(() => 'waited')
      ])
      t.is(answered, 'answered', 'the build finished and the status answered with the writes going on')
      stop = true
      await Promise.all(writers)
      t.is((await db.schemaStatus()).books.byN.state, 'ready', 'ready')
      t.same((await db.check()).problems, [], 'check() is clean')
      await db.close()
    } finally {
      stop = true
      await Promise.allSettled(writers)
      await base.close()
    }
  })
}

for (const backend of backends) {
  // A build reads records nobody else holds, but its key function must see
  // what a write's sees: one that changes the record (in place) fails the
  // build as it fails the write, instead of indexing what writes refuse.
  test(`${backend.name}: a build's key function gets a deeply frozen record, as a write's does`, async t => {
    setBuildBatchSize(BATCH)
    const base = await backend.base()
    try {
      const first = await open({ db: base.level })
      await first.collection('lists').insertMany(Array.from({ length: 50 }, (_, i) => ({ list: [i, i + 1] })))
      await first.close()
      const db = await open({ db: base.level })
      db.collection('lists', { indexes: { last: { key: (/** @type {any} */ r) => r.list.reverse()[0] } } })
      const failed = await db.buildIndexes().then(() => null, err => err)
      t.is(failed?.code, 'LEVELKIT_INVALID', 'reverse() on a nested array fails the build')
      t.is((await db.schemaStatus()).lists.last.state, 'failed', 'the index is failed')
      await db.close()
    } finally {
      await base.close()
    }
  })
}
