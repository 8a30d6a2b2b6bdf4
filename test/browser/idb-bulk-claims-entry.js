/* global IDBObjectStore, IDBIndex */
// Bulk loads' unique values on IndexedDB (lib/indexes.js newRecordsEntries(),
// lib/bulk.js loadInBatches()), in a browser page: insertMany() claims each
// batch's unique values (add()ed, or a native collection's put) instead of
// reading them; a value taken in the batch or by a stored record is still
// refused with LEVELKIT_UNIQUE and nothing of its batch written; a createUser
// racing a load for one name: one winner. test/browser-idb-bulk-test.js
// bundles this file, opens it in Chromium and calls window.levelkitTests.run().

import { test, run } from './harness.js'
import { open } from '../../browser.js'
import { ChatStore } from '../../chat.js'
import { countRequests } from './count-requests.js'

const run_ = Math.random().toString(36).slice(2)
let opened = 0
const fresh = () => `levelkit-idb-bulk-${run_}-${++opened}`
const cost = { scryptN: 1024, pbkdf2Iterations: 1 }

/** Forget what this tab's lease cache knows: the next reads and claims go to IndexedDB, as for values another tab wrote. @param {any} db */
const forgetCache = db => db.writer.idb?.clearCache()

/** @param {Promise<unknown>} promise */
const settled = promise => promise.then(value => ({ value }), err => ({ code: err?.code ?? err?.name, written: err?.written }))

const READS = ['get', 'getKey', 'getAll', 'getAllKeys', 'getAllRecords', 'count', 'openCursor', 'openKeyCursor']

/**
 * Count IndexedDB read requests (object stores and indexes) while `fn` runs.
 * @template T @param {() => Promise<T>} fn @returns {Promise<{ reads: number, answer: T }>}
 */
async function countReads (fn) {
  let reads = 0
  /** @type {Array<[any, string, any]>} */
  const originals = []
  for (const proto of [IDBObjectStore.prototype, IDBIndex.prototype]) {
    for (const name of READS) {
      const original = /** @type {any} */ (proto)[name]
      if (typeof original !== 'function') continue
      originals.push([proto, name, original]);
      /** @type {any} */ (proto)[name] = function (/** @type {any[]} */ ...args) {
        reads++
        return original.apply(this, args)
      }
    }
  }
  try {
    const answer = await fn()
    return { reads, answer }
  } finally {
    for (const [proto, name, original] of originals) proto[name] = original
  }
}

/** @param {number} from @param {number} n @param {string} [prefix] */
const names = (from, n, prefix = 'user') => Array.from({ length: n }, (_, i) => ({ username: `${prefix}${from + i}` }))

for (const native of [false, true]) {
  const layout = native ? 'native collection' : 'one-store layout'
  /** @param {string} location */
  const openStore = async location => ChatStore.open(await open({ location, native: native ? ChatStore.native : undefined }), { passwordCost: cost })

  test(`idb-bulk (${layout}): insertMany() claims its batches' usernames: no read of them, one readwrite transaction per batch`, async (/** @type {any} */ t) => {
    const store = await openStore(fresh())
    await store.createUser({ username: 'warm', password: 'secret-password' })
    const counted = await countRequests(() => countReads(() => store.users.insertMany(names(0, 300), { batchSize: 100 })))
    const { reads, answer } = counted.answer
    t.is(answer, 300, '300 inserted')
    t.is(reads, 0, `no IndexedDB read (${JSON.stringify(counted.made)})`)
    t.is(counted.made.readwrite, 3, 'one readwrite transaction per batch')
    if (!native) t.is(counted.made.add, 300, 'each username add()ed')
    t.is((await store.getUser('user150'))?.username, 'user150', 'a loaded user is found by name')
    t.is((await store.db.check()).problems.length, 0, 'check() is clean')
    await store.db.close()
  })

  test(`idb-bulk (${layout}): a username another tab stored, in a load's second batch: LEVELKIT_UNIQUE, the first batch written, nothing of the second nor after`, async (/** @type {any} */ t) => {
    const location = fresh()
    const store = await openStore(location)
    const other = await openStore(location)
    await other.createUser({ username: 'user7', password: 'secret-password' })
    forgetCache(store.db)
    const { made, answer } = await countRequests(() => settled(store.users.insertMany(names(0, 12), { batchSize: 4 })))
    t.same(answer, { code: 'LEVELKIT_UNIQUE', written: 4 }, 'refused, with the first batch written')
    t.ok(made.aborted >= 1, `the batch's claim was made and refused (${JSON.stringify(made)})`)
    const users = await store.users.query().all()
    t.same(users.map((/** @type {any} */ u) => u.username).sort(), ['user0', 'user1', 'user2', 'user3', 'user7'], 'the first batch and the stored user, nothing else')
    t.is((await store.getUser('user7'))?.id, 1, 'the stored user keeps its name')
    // The ids the refused batch took are free again.
    t.is(await store.users.insert({ username: 'next' }), 6, 'the next insert takes the next id')
    t.is((await store.db.check()).problems.length, 0, 'check() is clean')
    await other.db.close()
    await store.db.close()
  })

  test(`idb-bulk (${layout}): a username twice in a batch: LEVELKIT_UNIQUE before any claim, nothing of the batch written`, async (/** @type {any} */ t) => {
    const store = await openStore(fresh())
    const rows = [...names(0, 5), { username: 'user2' }, ...names(5, 5)]
    const { made, answer } = await countRequests(() => settled(store.users.insertMany(rows, { batchSize: 4 })))
    t.same(answer, { code: 'LEVELKIT_UNIQUE', written: 4 }, 'refused in the second batch, the first written')
    t.is(made.aborted, 0, 'found in the batch: no transaction aborted')
    t.is((await store.users.query().all()).length, 4, 'the first batch only')
    t.is((await store.db.check()).problems.length, 0, 'check() is clean')
    await store.db.close()
  })

  test(`idb-bulk (${layout}): createUser racing a load for the same usernames: one winner each, the load all or nothing per batch`, async (/** @type {any} */ t) => {
    for (const [when, delay] of /** @type {Array<[string, number]>} */ ([['called first', -1], ['called with it', 0], ['called a turn later', 1], ['called after a batch', 8]])) {
      const location = fresh()
      const store = await openStore(location)
      const other = await openStore(location)
      await store.createUser({ username: 'warm', password: 'secret-password' })
      await other.getUser('warm')
      const contested = ['user3', 'user9', 'user14']
      const racing = contested.map((username, i) => {
        const by = i === 1 ? other : store
        const call = () => settled(by.createUser({ username, password: 'secret-password' }))
        if (delay < 0) return call()
        return new Promise(resolve => setTimeout(resolve, delay)).then(call)
      })
      const load = settled(store.users.insertMany(names(0, 16), { batchSize: 4 }))
      const [loaded, ...created] = await Promise.all([load, ...racing])
      const users = await store.users.query().all()
      const byName = new Map()
      for (const user of users) byName.set(user.username, (byName.get(user.username) ?? 0) + 1)
      t.ok([...byName.values()].every(n => n === 1), `${when}: each username once (${users.length} users)`)
      const written = typeof loaded.value === 'number' ? 16 : loaded.written
      const loadedNames = new Set(names(0, written).map(u => u.username))
      for (const [i, name] of contested.entries()) {
        const won = typeof created[i].value === 'number'
        const loadHas = loadedNames.has(name)
        t.ok(won !== loadHas, `${when}: ${name}: one winner (createUser ${JSON.stringify(created[i])}, load ${JSON.stringify(loaded)})`)
        if (!won) t.is(created[i].code, 'LEVELKIT_UNIQUE', `${when}: ${name}: the losing createUser is refused with LEVELKIT_UNIQUE`)
      }
      if (loaded.code !== undefined) {
        t.is(loaded.code, 'LEVELKIT_UNIQUE', `${when}: a refused load: LEVELKIT_UNIQUE`)
        t.is(written % 4, 0, `${when}: whole batches only (${written})`)
      }
      t.is(users.length, 1 + written + created.filter(r => typeof r.value === 'number').length, `${when}: every user written is accounted for`)
      t.is((await store.db.check()).problems.length, 0, `${when}: check() is clean`)
      await other.db.close()
      await store.db.close()
    }
  })

  test(`idb-bulk (${layout}): a createUser refused for a taken name while a load runs does not stop the load`, async (/** @type {any} */ t) => {
    const store = await openStore(fresh())
    await store.createUser({ username: 'taken', password: 'secret-password' })
    forgetCache(store.db)
    const load = settled(store.users.insertMany(names(0, 40), { batchSize: 4 }))
    const refused = await settled(store.createUser({ username: 'taken', password: 'secret-password' }))
    t.is(refused.code, 'LEVELKIT_UNIQUE', 'the taken name is refused')
    t.same(await load, { value: 40 }, 'the load goes on: every batch written')
    t.is((await store.users.query().all()).length, 41, 'every user')
    t.is((await store.db.check()).problems.length, 0, 'check() is clean')
    await store.db.close()
  })

  test(`idb-bulk (${layout}): a db.write() callback that may run again (the bench's preload) claims its insertMany(); a taken name: it runs again, reading, and is refused`, async (/** @type {any} */ t) => {
    const location = fresh()
    const store = await openStore(location)
    let runs = 0
    const write = (/** @type {any[]} */ rows) => store.db.write(async (/** @type {any} */ w) => {
      runs++
      await store.users.in(w).insertMany(rows, { batchSize: rows.length })
      await store.passwordCosts.in(w).add('p', rows.length)
    }, { rerunnable: true })
    const first = await countReads(() => write(names(0, 50)))
    // The users' sequence and the password costs' counter (and on the
    // native layout the records' store's sequence): no username.
    t.is(first.reads, native ? 3 : 2, `no read of the usernames (${first.reads} reads)`)
    t.is(runs, 1, 'it ran once')
    const other = await openStore(location)
    await other.createUser({ username: 'user60', password: 'secret-password' })
    forgetCache(store.db)
    runs = 0
    const { made, answer } = await countRequests(() => settled(write(names(50, 50))))
    t.is(/** @type {any} */ (answer).code, 'LEVELKIT_UNIQUE', 'the chunk is refused')
    t.is(runs, 2, 'its claim refused, it ran again, reading')
    t.ok(made.aborted >= 1, `a transaction aborted (${JSON.stringify(made)})`)
    t.is((await store.users.query().all()).length, 51, 'nothing of the chunk written')
    t.is(await store.passwordCosts.get('p'), 50, 'nor its count')
    t.is((await store.db.check()).problems.length, 0, 'check() is clean')
    await other.db.close()
    await store.db.close()
  })
}

// @ts-ignore
window.levelkitTests = { run }
