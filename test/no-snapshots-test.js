// levelkit on a backend without explicit snapshots and without getSync()
// (what browser-level is), in Node: memory-level and classic-level that say
// so (test/util/no-snapshots.js), with hooks that make a write land between
// two reads. getBy() must never answer with a record that no longer holds
// the value, and db.check() inside a db.write() callback must answer (or
// refuse) rather than wait for the callback that waits for it.

import test from 'tape'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open } from '../index.js'
import { ChatStore } from '../chat.js'
import { NoSnapshotMemoryLevel, NoSnapshotClassicLevel, HookedClassicLevel } from './util/no-snapshots.js'
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

  test(`${backend.name}: getBy() when the value moves to another record between the entry and the record`, async t => {
    const level = backend.level()
    const { users, close } = await schema(level)
    const ann = await users.insert({ username: 'ann' })
    const bob = await users.insert({ username: 'bob' })
    const moved = moveBetweenReads(level, users, ann, bob)
    t.same(await users.getBy('username', 'ann'), { id: bob, username: 'ann' }, 'the record that holds the value now')
    t.ok(moved.fired, 'the write landed between the two reads')
    await close()
  })

  test(`${backend.name}: getBy() when the value is dropped between the entry and the record`, async t => {
    const level = backend.level()
    const { users, close } = await schema(level)
    const ann = await users.insert({ username: 'ann' })
    let fired = false
    level.afterGet = async (/** @type {string} */ namespace) => {
      if (namespace !== 'users.idx.username' || fired) return
      fired = true
      await users.update(ann, { username: 'ann.old' })
    }
    t.is(await users.getBy('username', 'ann'), undefined, 'no record has it')
    t.ok(fired, 'the write landed between the two reads')
    await close()
  })

  test(`${backend.name}: getBy() when the value moves on at every read`, async t => {
    const level = backend.level()
    const { db, users, close } = await schema(level)
    const a = await users.insert({ username: 'ann' })
    const b = await users.insert({ username: 'bob' })
    let owner = a
    let moves = 0
    /** @type {Promise<unknown> | null} */
    let moving = null
    level.afterGet = async (/** @type {string} */ namespace) => {
      if (namespace !== 'users.idx.username' || moving) return
      // Swap the names of a and b after every read of an entry. A read
      // that holds back writes makes this swap wait: give up waiting after
      // a while (so the test can tell a wait from a write that landed).
      const [from, to] = owner === a ? [a, b] : [b, a]
      moving = db.write(async w => {
        await users.in(w).update(from, { username: 'tmp' })
        await users.in(w).update(to, { username: 'ann' })
        await users.in(w).update(from, { username: 'bob' })
      }).then(() => { owner = to; moves++ }).finally(() => { moving = null })
      await Promise.race([moving, new Promise(resolve => setTimeout(resolve, 200))])
    }
    const found = await users.getBy('username', 'ann')
    level.afterGet = null
    t.is(found && found.username, 'ann', `the record found holds the value (after ${moves} moves)`)
    t.ok(moves >= 1, 'the value moved under the reads')
    await moving
    t.ok((await db.check()).ok)
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

test('LevelDB with syncReads: false: getBy() reads the entry and the record from one snapshot', async t => {
  const level = new HookedClassicLevel(join(root, String(n++)))
  const { db, users, close } = await schema(level, { syncReads: false })
  t.is(db.writer.syncReads, false, 'reads are asynchronous')
  t.is(db.level.supports.explicitSnapshots, true, 'and LevelDB has snapshots')
  const ann = await users.insert({ username: 'ann' })
  const bob = await users.insert({ username: 'bob' })
  const moved = moveBetweenReads(level, users, ann, bob)
  t.same(await users.getBy('username', 'ann'), { id: ann, username: 'ann' }, 'the pair as it was when the snapshot was taken')
  t.ok(moved.fired, 'the write landed between the two reads')
  t.same(await users.getBy('username', 'ann'), { id: bob, username: 'ann' }, 'and the new owner once it is written')
  await close()
})

test.onFinish(() => rmSync(root, { recursive: true, force: true }))

/**
 * After getBy() reads ann's username entry, and before it reads the record:
 * ann is renamed and bob takes her name. `fired` says whether it happened.
 * @param {any} level @param {any} users @param {number} ann @param {number} bob
 */
function moveBetweenReads (level, users, ann, bob) {
  const moved = { fired: false }
  level.afterGet = async (/** @type {string} */ namespace) => {
    if (namespace !== 'users.idx.username' || moved.fired) return
    moved.fired = true
    await users.update(ann, { username: 'ann.old' })
    await users.update(bob, { username: 'ann' })
  }
  return moved
}
