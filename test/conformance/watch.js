import { countReads } from './reads.js'

const LAYOUTS = [undefined, 3]

/** @param {any} test @param {any} common */
export default function (test, common) {
  // IndexedDB reads are slower: fewer watchers there, the same checks.
  // LEVELKIT_WATCHERS sets the number (read-cache-policies-test.js runs
  // this suite again for the caches, not for the watchers' garbage), or
  // the runner's `common.watchers` (a backend's second run, for another
  // option: the garbage is its first run's to prove).
  const many = Number(globalThis.process?.env?.LEVELKIT_WATCHERS) || common.watchers || (common.backend === 'indexeddb' ? 500 : 5000)
  for (const blockSize of LAYOUTS) {
    const backend = `${common.backend} (${blockSize === undefined ? 'keys' : `blocks of ${blockSize}`})`

    /** @param {any} [options] */
    async function schema (options) {
      const db = await common.open()
      const chats = db.collection('chats')
      const messages = db.children('messages', { parent: chats, blockSize, ...options })
      return { db, chats, messages }
    }

    test(`${backend}: aborting watchers lets go of their listeners at once, even while they are suspended at a yield`, async t => {
      const { db, chats, messages } = await schema()
      const c = await chats.insert({})
      await messages.append(c, 'first')
      const reads = countReads(db.level)
      const idle = { ...db.writer.listenerCounts }
      const controllers = []
      const watchers = []
      for (let i = 0; i < many; i++) {
        const controller = new AbortController()
        controllers.push(controller)
        watchers.push(messages.watch(c, { after: 0, signal: controller.signal }))
      }
      const firsts = await Promise.all(watchers.map(watcher => watcher.next()))
      t.ok(firsts.every(({ value }) => value[1] === 'first'), `${many} watchers delivered the first child and wait at their yield`)
      t.same(db.writer.listenerCounts, { written: idle.written + many, close: idle.close + many }, 'each holds a write and a close listener')
      t.is(reads.counts.open, 0, 'and no open iterator: nothing a dropped watcher would leave open')
      for (const controller of controllers) controller.abort()
      t.same(db.writer.listenerCounts, idle, 'aborting removes them, without waiting for next()')
      await messages.append(c, 'second')
      const after = await Promise.all(watchers.slice(0, 10).map(watcher => watcher.next()))
      t.ok(after.every(({ done }) => done), 'an aborted watcher ends at its next next()')
      await db.close()
    })

    test(`${backend}: a watcher wakes only for writes that concern its own parent`, async t => {
      const { db, chats, messages } = await schema({ onDelete: 'purge' })
      const a = await chats.insert({ name: 'a' })
      const b = await chats.insert({ name: 'b' })
      const reads = countReads(db.level)
      const controller = new AbortController()
      const watcher = messages.watch(a, { signal: controller.signal })
      const pending = watcher.next()
      await messages.append(a, 'hello a')
      t.same((await pending).value, [1, 'hello a'], 'the watcher of a delivers a child of a')
      const waiting = watcher.next()
      // The batch of 'hello a' may have landed while the watcher was reading
      // (IndexedDB reads are asynchronous): then it rightly reads once more.
      // Let that be over before counting.
      await new Promise(resolve => setTimeout(resolve, 100))
      const elsewhere = await reads.measure(async () => {
        for (let i = 0; i < 100; i++) {
          await chats.update(b, { name: `b${i}` })
          await messages.append(b, `to b ${i}`)
        }
        await messages.del(b, 1)
        // A moment for a wrongly woken watcher to read.
        await new Promise(resolve => setTimeout(resolve, 20))
      })
      // None of these writes opens an iterator itself: any is a watcher's.
      t.is(elsewhere.counts.iterators, 0, 'writes to another parent\'s record and children wake no watcher of a')
      await chats.del(b)
      await messages.settled()
      await chats.update(a, { name: 'a2' })
      await messages.append(a, 'again a')
      t.same((await waiting).value, [2, 'again a'], 'and it still delivers its own')
      const ending = watcher.next()
      await chats.del(a)
      t.is((await ending).done, true, 'deleting its parent ends it')
      t.same(db.writer.listenerCounts.written, 1, 'only the purge listener is left')
      await db.close()
    })
  }
}
