// The read caches are bounded in bytes as well as in entries: a database's
// caches share a byte budget (open({ readCacheBytes })), an entry above a
// sixteenth of it is not kept, and what they keep stays what is written.
// On memory-level and classic-level (the backends with getSync, so with
// caches), and in a child process with --expose-gc for the heap they keep.
import test from 'tape'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { open } from '../index.js'
import { countReads } from './conformance/reads.js'
import { readCacheBudget } from '../lib/namespace.js'
import { ReadCache, CacheBudget, entrySize } from '../lib/read-cache.js'
import { policies } from '../lib/cache/index.js'

const root = mkdtempSync(join(tmpdir(), 'levelkit-read-cache-'))
let n = 0
test.onFinish(() => rmSync(root, { recursive: true, force: true }))

/** @param {string} backend @param {object} [options] */
function openOn (backend, options) {
  return backend === 'memory'
    ? open({ backend: 'memory', ...options })
    : open({ backend: 'leveldb', location: join(root, String(n++)), ...options })
}

/** Every cache of a budget, added up entry by entry. @param {CacheBudget} budget */
function recount (budget) {
  let bytes = 0
  for (const cache of budget.caches) {
    for (const name of cache.entries.map.keys()) if (cache.entries.has(name)) bytes += entrySize(name, cache.entries.peek(name))
  }
  return bytes
}

for (const policy of policies) {
  test(`${policy}: a byte budget bounds what the caches sharing it hold, and keeps no huge entry`, t => {
    const budget = new CacheBudget(64 * 1024, policy)
    const a = new ReadCache(1000, budget)
    const b = new ReadCache(1000, budget)
    let over = 0
    for (let i = 0; i < 2000; i++) {
      const cache = i % 3 === 0 ? b : a
      cache.set(`k${i}`, 'x'.repeat(i % 500))
      if (budget.used > budget.max) over++
      if (i % 7 === 0) a.update(`k${i - 7}`, 'y'.repeat(i % 300))
      if (i % 11 === 0) b.delete(`k${i - 3}`)
    }
    t.is(over, 0, 'never above the budget')
    t.is(budget.used, recount(budget), 'the budget counts exactly what the caches hold')
    t.ok(budget.used > budget.max / 4, `and is used (${budget.used} of ${budget.max} bytes)`)
    a.set('huge', 'z'.repeat(budget.largest))
    t.is(a.lookup('huge'), undefined, 'an entry above a sixteenth of the budget is not kept')
    a.set('grows', 'small')
    a.update('grows', 'z'.repeat(budget.largest))
    t.is(a.lookup('grows'), undefined, 'nor one that grows past it: it is dropped, never left stale')
    t.ok(a.lookup(`k${1999 - 1}`) !== undefined || a.lookup(`k${1999 - 2}`) !== undefined, 'the latest entries are kept')
    a.set('two-byte', 'é'.repeat(100))
    a.set('two-byte-2', '€'.repeat(100))
    t.ok(a.bytes >= 100 + 200, 'a two-byte string counts two bytes per character')
    a.clear()
    b.clear()
    t.is(budget.used, 0, 'clearing gives every byte back')
    t.end()
  })
}

/**
 * Hold every batch of `level` after the backend has applied it, before it
 * resolves, until `release()`: the moment a batch is on disk but the write
 * path has not heard back yet.
 * @param {any} level
 */
function holdBatches (level) {
  const batch = level._batch
  /** @type {null | { applied: () => void, released: Promise<void> }} */
  let held = null
  level._batch = async function (/** @type {any[]} */ ...args) {
    const hold = held
    held = null
    await batch.apply(this, args)
    if (hold) {
      hold.applied()
      await hold.released
    }
  }
  return {
    /** Hold the next batch: resolves once it is applied, with the function that lets it return. */
    next () {
      /** @type {() => void} */
      let release = () => {}
      /** @type {Promise<void>} */
      const released = new Promise(resolve => { release = () => resolve() })
      return new Promise(resolve => {
        held = { applied: () => resolve(release), released }
      })
    }
  }
}

for (const backend of ['memory', 'leveldb']) {
  test(`${backend}: records, relation lists and child blocks stay within the database's budget`, async t => {
    const db = await openOn(backend, { readCacheBytes: 256 * 1024 })
    const budget = /** @type {CacheBudget} */ (readCacheBudget(db.level))
    t.is(budget.max, 256 * 1024, 'open({ readCacheBytes }) sets the budget')
    const docs = db.collection('docs')
    const groups = db.collection('groups')
    const members = db.relation('members', { from: groups, to: docs, lists: ['from'] })
    const notes = db.children('notes', { parent: groups, blockSize: 8 })
    const ids = []
    for (let i = 0; i < 300; i++) ids.push(await docs.insert({ i, text: String(i).repeat(2000 / String(i).length) }))
    const gs = []
    for (let i = 0; i < 20; i++) {
      const g = await groups.insert({})
      gs.push(g)
      await members.addMany(g, ids.slice(i * 5, i * 5 + 200))
      for (let j = 0; j < 40; j++) await notes.append(g, { j, text: 'n'.repeat(500) })
    }
    let wrong = 0
    let over = 0
    for (let round = 0; round < 3; round++) {
      for (const id of ids) {
        if ((await docs.get(id)).i !== ids.indexOf(id)) wrong++
        if (budget.used > budget.max) over++
      }
      for (const [i, g] of gs.entries()) {
        if ((await members.to(g).all()).length !== 200) wrong++
        if ((await notes.getMany(g, [1, 9, 17, 40])).length !== 4) wrong++
        if ((await members.from(ids[i * 5 + 5]).all()).length === 0) wrong++
        if (budget.used > budget.max) over++
      }
      await docs.update(ids[round], { i: round, text: 'changed' })
    }
    t.is(wrong, 0, 'every read answers right')
    t.is(over, 0, `the caches never held more than the budget (${budget.used} of ${budget.max} bytes at the end)`)
    t.is(budget.used, recount(budget), 'and the budget counts exactly what they hold')
    t.is((await docs.get(ids[2])).text, 'changed', 'a cached record follows its writes')
    t.ok((await db.check()).ok)
    await db.close()
  })

  test(`${backend}: a batch on disk whose write has not returned yet is never hidden by a cached value`, async t => {
    const db = await openOn(backend)
    const gate = holdBatches(db.level)
    const chats = db.collection('chats')
    const messages = db.children('messages', { parent: chats, blockSize: 4 })
    const c = await chats.insert({ v: 1 })
    await messages.append(c, 'm1')
    t.same([await chats.get(c), await messages.getMany(c, [1])], [{ id: c, v: 1 }, ['m1']], 'read once: cached')
    const applied = gate.next()
    const writing = db.write(async w => {
      await chats.in(w).update(c, { v: 2 })
      await messages.in(w).append(c, 'm2')
    })
    const release = await applied
    const last = await messages.lastSeq(c)
    t.is(last, 2, 'the batch is on disk: the sequence, never cached, says 2')
    t.same(await messages.getMany(c, [last]), ['m2'], 'and the child it names is there too, not the cached block without it')
    t.same(await chats.get(c), { id: c, v: 2 }, 'the record as it is on disk, not as cached')
    release()
    await writing
    const reads = countReads(db.level)
    const again = await reads.measure(async () => [await chats.get(c), await messages.getMany(c, [1, 2])])
    t.same(again.result, [{ id: c, v: 2 }, ['m1', 'm2']], 'once the write returns, the new values')
    t.is(again.counts.gets, 0, 'cached again: the values that were cached follow the write')
    await db.close()
  })

  test(`${backend}: a record larger than a sixteenth of the budget is read, not kept`, async t => {
    const db = await openOn(backend, { readCacheBytes: 64 * 1024 })
    const budget = /** @type {CacheBudget} */ (readCacheBudget(db.level))
    const docs = db.collection('docs')
    const big = await docs.insert({ text: 'b'.repeat(8 * 1024) })
    const small = await docs.insert({ text: 's' })
    const before = budget.used
    t.is((await docs.get(big)).text.length, 8 * 1024)
    t.is(budget.used, before, 'reading the big record kept nothing')
    t.is((await docs.get(small)).text, 's')
    t.ok(budget.used > before, 'a small one is kept')
    await docs.update(small, { text: 's'.repeat(8 * 1024) })
    t.is((await docs.get(small)).text.length, 8 * 1024, 'a kept record that grows too big is read again, as written')
    await db.close()
  })

  test(`${backend}: readCacheBytes is validated, and 0 turns the caches off`, async t => {
    for (const bad of [-1, 1.5, '1', null, Infinity]) {
      try {
        await openOn(backend, { readCacheBytes: bad })
        t.fail(`accepted readCacheBytes ${String(bad)}`)
      } catch (err) {
        t.is(/** @type {any} */ (err).code, 'LEVELKIT_INVALID', `refuses readCacheBytes ${String(bad)}`)
      }
    }
    const db = await openOn(backend, { readCacheBytes: 0 })
    t.is(db.readCache, 0, 'no cache')
    t.is(readCacheBudget(db.level), undefined, 'and no budget')
    await db.close()
  })

  test(`${backend}: whole relation lists read again and again keep at most the budget on the heap`, t => {
    const budget = 384 * 1024
    const script = fileURLToPath(new URL('./util/list-cache-heap.js', import.meta.url))
    const child = spawnSync(process.execPath, ['--expose-gc', script, backend, join(root, String(n++)), '20', '3000', String(budget)], { encoding: 'utf8', timeout: 120000 })
    t.is(child.status, 0, `the child ran${child.stderr ? `: ${child.stderr.trim().split('\n').slice(-3).join(' | ')}` : ''}`)
    const result = JSON.parse(child.stdout.trim().split('\n').pop() || '{}')
    const kib = (/** @type {number} */ bytes) => `${Math.round(bytes / 1024)} KiB`
    // The heap moves by a few hundred KiB with no cache at all: room for that.
    t.ok(result.retained < budget + 1024 * 1024, `the heap kept ${kib(result.retained)} after reading 20 lists of 3,000 ids whole, with a budget of ${kib(budget)}`)
    t.ok(result.limitedRetained < 1024 * 1024, `and ${kib(result.limitedRetained)} after reading 10 ids of each`)
    t.end()
  })
}
