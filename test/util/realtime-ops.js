// The models and operations of the real-time order tests
// (test/postgres-realtime-test.js, test/browser-realtime-test.js): one
// database handle (a process, a tab) declares them and runs an operation
// by name, with plain arguments and a plain answer, so that a driver in
// Node can run them in this process or in a tab (bundled for the browser:
// no import of Node's). The driver (test/util/realtime.js) tells what each
// answer must show of the operations acknowledged before it was called.
//
// What is read and written:
// - registers: records r0..r<n-1> of `items` (ids 1..n, unique index
//   `name`), whose `n` only grows; written by update(), db.write()
//   (read, wait, update) and db.transaction(); read by get(), getBy(),
//   an index query, a db.write() and a db.transaction();
// - the counter `hits` 'c': add() and get(), query();
// - the children `log` of record 1: append(), lastSeq(), range();
// - records inserted as the history runs (unique names): insert() (twice
//   for some names: the second is refused), getBy(), update() of a record
//   another handle inserted, the relation `links` from record 1 to them
//   (add(), to()), and a query of every record.

/** @param {number} ms */
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

/**
 * Declare the models on `db`.
 * @param {any} db
 * @param {{ lists?: boolean, blockSize?: number }} [options] the relation's list layout, the children's blocks
 */
export function declare (db, options = {}) {
  const items = db.collection('items', { indexes: { name: { unique: true, key: (/** @type {any} */ r) => r.name } } })
  const links = db.relation('links', { from: items, to: items, lists: options.lists ? ['from'] : [] })
  const log = db.children('log', { parent: items, ...(options.blockSize ? { blockSize: options.blockSize } : {}) })
  const hits = db.counter('hits')
  return { db, items, links, log, hits }
}

/**
 * The records every history starts from (one handle inserts them, before).
 * @param {ReturnType<typeof declare>} models @param {number} registers
 */
export async function seed ({ items }, registers) {
  for (let i = 0; i < registers; i++) await items.insert({ name: `r${i}`, n: 0 })
}

/**
 * Run operation `op` with `args` on `models`. Register operations answer
 * `{ observed, after }`: the value seen, and the value the register holds
 * once a write is made (a read: what it saw). Set operations answer what
 * they saw of the set.
 * @param {ReturnType<typeof declare>} models
 * @param {string} op
 * @param {any} args
 * @returns {Promise<any>}
 */
export async function run ({ db, items, links, log, hits }, op, args) {
  const { id, name, wait = 0 } = args
  switch (op) {
    // Registers: records 1..n, their field n.
    case 'update': {
      const record = await items.update(id, (/** @type {any} */ r) => ({ ...r, n: r.n + 1 }))
      return { observed: record.n - 1, after: record.n }
    }
    case 'write': {
      const n = await db.write(async (/** @type {any} */ w) => {
        const record = await items.in(w).get(id)
        if (wait > 0) await sleep(wait)
        await items.in(w).update(id, { n: record.n + 1 })
        return record.n
      })
      return { observed: n, after: n + 1 }
    }
    case 'transaction': {
      const n = await db.transaction(async (/** @type {any} */ tx) => {
        const record = await items.in(tx).get(id)
        if (wait > 0) await sleep(wait)
        await items.in(tx).update(id, { n: record.n + 1 })
        return record.n
      }, { maxRetries: 200 })
      return { observed: n, after: n + 1 }
    }
    case 'get': return seen((await items.get(id)).n)
    case 'getBy': return seen((await items.getBy('name', name)).n)
    case 'query': return seen((await items.query({ index: 'name', eq: name }).all())[0].n)
    case 'readSection': return seen(await db.write(async (/** @type {any} */ w) => {
      const record = await items.in(w).get(id)
      if (wait > 0) await sleep(wait)
      return record.n
    }))
    case 'readTransaction': return seen(await db.transaction(async (/** @type {any} */ tx) => {
      const record = await items.in(tx).get(id)
      if (wait > 0) await sleep(wait)
      return record.n
    }, { maxRetries: 200 }))
    // The counter.
    case 'add': {
      const value = await hits.add('c', 1)
      return { observed: value - 1, after: value }
    }
    case 'counter': return seen(await hits.get('c'))
    case 'counterQuery': {
      const [entry] = await all(hits.query({ eq: 'c' }).entries())
      return seen(entry === undefined ? 0 : entry[1])
    }
    // The children of record 1.
    case 'append': {
      const seq = await log.append(1, { at: args.at })
      return { observed: seq - 1, after: seq }
    }
    case 'lastSeq': return seen(await log.lastSeq(1))
    case 'range': {
      const [entry] = await all(log.range(1, { reverse: true, limit: 1 }).entries())
      return seen(entry === undefined ? 0 : entry[0])
    }
    // Records inserted as the history runs.
    case 'insert': return { id: await items.insert({ name, n: 0 }) }
    case 'findName': {
      const record = await items.getBy('name', name)
      return { found: record === undefined ? [] : [record.id] }
    }
    case 'touch': {
      await items.update(id, { touched: true })
      return { found: [id] }
    }
    case 'link': {
      await links.add(1, id)
      return { linked: id }
    }
    case 'links': return { found: await links.to(1).all() }
    case 'scan': return { found: (await items.query({ gt: args.registers }).all()).map((/** @type {any} */ r) => r.id) }
    // A watcher of record 1's children, from the first: what it delivered.
    case 'watch': {
      const watcher = { seqs: /** @type {number[]} */ ([]), controller: new AbortController(), error: /** @type {string | null} */ (null) }
      watchers.set(log, watcher)
      ;(async () => {
        for await (const [seq] of log.watch(1, { after: 0, signal: watcher.controller.signal })) watcher.seqs.push(seq)
      })().catch(err => { watcher.error = String(err?.code ?? err) })
      return {}
    }
    case 'watched': {
      const watcher = watchers.get(log)
      if (args.stop) watcher.controller.abort()
      return { seqs: watcher.seqs, error: watcher.error }
    }
    default: throw new Error(`unknown operation ${op}`)
  }
}

/** @type {WeakMap<object, { seqs: number[], controller: AbortController, error: string | null }>} each handle's watcher, by its children model */
const watchers = new WeakMap()

/** A read's answer. @param {number} n */
function seen (n) {
  return { observed: n, after: n }
}

/** @param {AsyncIterable<any>} iterable */
async function all (iterable) {
  const items = []
  for await (const item of iterable) items.push(item)
  return items
}
