// levelkit on a backend without explicit snapshots and without getSync()
// (what browser-level is), in Node: memory-level and classic-level that say
// so (test/util/no-snapshots.js), with hooks that make a write land between
// two reads. db.check() inside a db.write() callback must answer (or
// refuse) rather than wait for the callback that waits for it.

import test from 'tape'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open } from '../index.js'
import { ChatStore } from '../chat.js'
import { NoSnapshotMemoryLevel, NoSnapshotClassicLevel } from './util/no-snapshots.js'
import { settlesWithin } from './conformance/index.js'

const root = mkdtempSync(join(tmpdir(), 'levelkit-no-snapshots-'))
let n = 0

const HANG_MS = 3000

const backends = [
  { name: 'memory without snapshots', level: () => new NoSnapshotMemoryLevel() },
  { name: 'LevelDB without snapshots', level: () => new NoSnapshotClassicLevel(join(root, String(n++))) }
]

/**
 * A levelkit database over `level`, with users whose username is unique.
 * @param {any} level
 * @param {any} [options]
 */
async function schema (level, options = {}) {
  const db = await open({ db: level, ...options })
  const users = db.collection('users', { indexes: { username: { unique: true, key: (/** @type {any} */ u) => u.username } } })
  return {
    db,
    users,
    async close () {
      await db.close()
      await level.close()
    }
  }
}

for (const backend of backends) {
  test(`${backend.name}: levelkit sees no snapshots and no getSync()`, async t => {
    const { db, close } = await schema(backend.level())
    t.is(db.level.supports.explicitSnapshots, false)
    t.is(db.writer.syncReads, false, 'reads are asynchronous')
    await close()
  })

  test(`${backend.name}: db.check() inside a db.write() callback answers`, async t => {
    const { db, users, close } = await schema(backend.level())
    await users.insert({ username: 'ann' })
    const outcome = await settlesWithin(db.write(async w => {
      await users.in(w).insert({ username: 'bob' })
      return db.check()
    }), HANG_MS)
    if (outcome === 'hung') {
      t.fail('check() inside db.write() waits for the callback that waits for it')
      return
    }
    t.same(outcome, { ok: true, problems: [], repaired: 0 }, 'with what is written')
    t.same((await users.query().all()).map((/** @type {any} */ u) => u.username), ['ann', 'bob'], 'and the callback\'s writes are then written')
    await close()
  })

  for (const ending of ['returns', 'throws']) {
    test(`${backend.name}: a check() beside an open db.write() callback sees nothing land while it reads (the callback ${ending})`, async t => {
      const level = backend.level()
      const { db, users, close } = await schema(level)
      await users.insert({ username: 'ann' })
      /** @type {() => void} */
      let release = () => {}
      const gate = new Promise(resolve => { release = () => resolve(undefined) })
      /** @type {() => void} */
      let entered = () => {}
      const inside = new Promise(resolve => { entered = () => resolve(undefined) })
      const writing = db.write(async w => {
        await users.in(w).insert({ username: 'bob' })
        entered()
        await gate
        if (ending === 'throws') throw new Error('changed my mind')
      }).catch(err => err.message)
      await inside
      const queued = users.insert({ username: 'cat' })
      // check() reads the records, then the index: between the two, let the
      // callback end, and give its batch and the write queued behind it
      // every chance to be written.
      let released = false
      level.afterScan = async (/** @type {string} */ namespace) => {
        if (namespace !== 'users' || released) return
        released = true
        release()
        await new Promise(resolve => setTimeout(resolve, 100))
      }
      const report = await settlesWithin(db.check(), HANG_MS)
      level.afterScan = null
      release()
      t.ok(released, 'the callback ended while check() read')
      t.same(report, { ok: true, problems: [], repaired: 0 }, 'it answers, and sees no index entry without its record')
      t.is(await writing, ending === 'throws' ? 'changed my mind' : undefined)
      await queued
      t.same((await users.query().all()).map((/** @type {any} */ u) => u.username), ending === 'throws' ? ['ann', 'cat'] : ['ann', 'bob', 'cat'], 'the writes are written after it')
      t.ok((await db.check()).ok)
      await close()
    })
  }

  test(`${backend.name}: inside a db.write() callback, a repair and ChatStore.check() refuse at once`, async t => {
    const level = backend.level()
    const db = await open({ db: level })
    const chat = new ChatStore(db)
    const outcome = await settlesWithin(db.write(async () => {
      const codes = []
      for (const call of [() => db.check({ repair: true }), () => chat.check()]) {
        try {
          await call()
          codes.push('answered')
        } catch (err) {
          codes.push(/** @type {any} */ (err).code)
        }
      }
      return codes
    }), HANG_MS)
    t.same(outcome, ['LEVELKIT_INVALID', 'LEVELKIT_INVALID'], 'each rejects with LEVELKIT_INVALID')
    if (outcome === 'hung') return
    t.ok((await chat.check()).ok, 'and answers outside it')
    await db.close()
    await level.close()
  })
}

test.onFinish(() => rmSync(root, { recursive: true, force: true }))
