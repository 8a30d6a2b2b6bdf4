// Watchers and garbage collection, on memory-level and classic-level: a
// watcher abandoned at a yield (never resumed) must not stay registered
// with the write path, the database's close or its AbortSignal; one whose
// consumer is waiting for the next child must keep working with nothing
// else referring to it. Needs the garbage collector: exposed here.
import test from 'tape'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { getEventListeners, setMaxListeners } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open } from '../index.js'
import { ChatStore } from '../chat.js'

setFlagsFromString('--expose-gc')
const gc = /** @type {() => void} */ (runInNewContext('gc'))

const root = mkdtempSync(join(tmpdir(), 'levelkit-watch-'))
let n = 0
test.onFinish(() => rmSync(root, { recursive: true, force: true }))

/** @param {string} backend */
function openOn (backend) {
  return backend === 'memory' ? open({ backend: 'memory' }) : open({ backend: 'leveldb', location: join(root, String(n++)) })
}

/**
 * Collect garbage until `done()` or a few rounds have passed (finalizers
 * run after a collection, on a later turn).
 * @param {() => boolean} done
 */
async function collect (done) {
  for (let i = 0; i < 20 && !done(); i++) {
    gc()
    await new Promise(resolve => setTimeout(resolve, 10))
  }
}

const MANY = 5000

for (const backend of ['memory', 'leveldb']) {
  test(`${backend}: ${MANY} watchers abandoned at a yield are let go by the write path, close and their signal`, async t => {
    const db = await openOn(backend)
    const chats = db.collection('chats')
    const messages = db.children('messages', { parent: chats, blockSize: 4 })
    const c = await chats.insert({})
    await messages.append(c, 'first')
    const idle = { ...db.writer.listenerCounts }
    const controller = new AbortController()
    setMaxListeners(MANY, controller.signal)
    await (async () => {
      const watchers = []
      for (let i = 0; i < MANY; i++) watchers.push(messages.watch(c, { after: 0, signal: controller.signal }))
      await Promise.all(watchers.map(watcher => watcher.next()))
    })()
    t.same(db.writer.listenerCounts, { written: idle.written + MANY, close: idle.close + MANY }, `${MANY} watchers suspended at a yield, registered`)
    t.is(getEventListeners(controller.signal, 'abort').length, MANY, 'with the signal too')
    // Nothing refers to them any more: writes must not keep them.
    await messages.append(c, 'second')
    await collect(() => db.writer.listenerCounts.written === idle.written)
    t.same(db.writer.listenerCounts, idle, 'once collected, none is left with the write path or close')
    t.is(getEventListeners(controller.signal, 'abort').length, 0, 'nor with the signal, which is still alive')
    await db.close()
  })

  test(`${backend}: a watcher whose consumer waits is kept, with nothing else referring to it`, async t => {
    const db = await openOn(backend)
    const chats = db.collection('chats')
    const messages = db.children('messages', { parent: chats })
    const c = await chats.insert({})
    /** @type {any[]} */
    const received = []
    // Fire and forget: only the write path's listener leads to this loop.
    ;(async () => {
      for await (const [seq] of messages.watch(c, { after: 0 })) received.push(seq)
    })()
    await messages.append(c, 'a')
    await collect(() => false)
    await messages.append(c, 'b')
    await collect(() => received.length === 2)
    t.same(received, [1, 2], 'it still delivers after garbage collections')
    await db.close()
  })

  test(`${backend}: ChatStore watchers abandoned at a yield, or aborted, are let go`, async t => {
    const db = await openOn(backend)
    const chat = new ChatStore(db, { passwordCost: { scryptN: 16, pbkdf2Iterations: 1 } })
    const ann = await chat.createUser({ username: 'ann', password: 'pw' })
    const chatId = await chat.createChat({ name: 'c', adminId: ann })
    await chat.addChatMessage({ chatId, senderId: ann, text: 'hi' })
    const idle = { ...db.writer.listenerCounts }
    const controller = new AbortController()
    setMaxListeners(200, controller.signal)
    await (async () => {
      const watchers = []
      for (let i = 0; i < 200; i++) watchers.push(chat.watch(chatId, { after: 0, signal: controller.signal }))
      await Promise.all(watchers.map(watcher => watcher.next()))
    })()
    t.is(db.writer.listenerCounts.written, idle.written + 200, '200 chat watchers at a yield')
    await collect(() => db.writer.listenerCounts.written === idle.written)
    t.same(db.writer.listenerCounts, idle, 'let go once collected')

    const aborted = new AbortController()
    setMaxListeners(200, aborted.signal)
    const kept = []
    for (let i = 0; i < 200; i++) kept.push(chat.watch(chatId, { after: 0, signal: aborted.signal }))
    await Promise.all(kept.map(watcher => watcher.next()))
    aborted.abort()
    t.same(db.writer.listenerCounts, idle, 'aborted: let go at once')
    t.is(getEventListeners(aborted.signal, 'abort').length, 0)
    await db.close()
  })
}

for (const backend of ['memory', 'leveldb']) {
  for (const blockSize of [undefined, 16]) {
    test(`${backend}, ${blockSize ? `blocks of ${blockSize}` : 'a key per child'}: a watcher reads what is new with point reads, no iterator, and skips children deleted meanwhile`, async t => {
      const db = await openOn(backend)
      const chats = db.collection('chats')
      const messages = db.children('messages', blockSize ? { parent: chats, blockSize } : { parent: chats })
      const c = await chats.insert({})
      for (let i = 1; i <= 150; i++) await messages.append(c, `m${i}`)
      await messages.del(c, 70)
      let iterators = 0
      const level = /** @type {any} */ (db).level
      const iterator = level.iterator
      level.iterator = function (/** @type {any[]} */ ...args) {
        iterators++
        return iterator.apply(this, args)
      }
      const controller = new AbortController()
      /** @type {Array<[number, any]>} */
      const got = []
      const watching = (async () => {
        for await (const entry of messages.watch(c, { after: 0, signal: controller.signal })) {
          got.push(entry)
          if (entry[0] === 160) controller.abort()
        }
      })()
      for (let i = 151; i <= 160; i++) await messages.append(c, `m${i}`)
      await watching
      const expected = Array.from({ length: 160 }, (_, i) => i + 1).filter(seq => seq !== 70)
      t.same(got.map(([seq]) => seq), expected, 'the history (less the deleted child), then each new child, in order')
      t.same(got.map(([, value]) => value), expected.map(seq => `m${seq}`))
      t.is(iterators, 0, 'without opening an iterator')
      level.iterator = iterator
      await db.close()
    })
  }
}
