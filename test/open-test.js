import test from 'tape'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MemoryLevel } from 'memory-level'
import { open, Database } from '../index.js'

/** @param {any} t @param {Promise<unknown>} promise @param {string} code @param {RegExp} [pattern] */
async function rejects (t, promise, code, pattern) {
  try {
    await promise
    t.fail(`should reject with ${code}`)
  } catch (err) {
    t.is(err.code, code, `rejects with ${code}`)
    if (pattern) t.match(err.message, pattern)
  }
}

test('open() picks the backend from the options', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-open-'))
  try {
    const memory = await open()
    t.ok(memory instanceof Database)
    t.is(memory.level.constructor.name, 'MemoryLevel', 'no location: memory')
    await memory.close()
    const disk = await open({ location: join(dir, 'a'), cacheSize: 1 << 20 })
    t.is(disk.level.constructor.name, 'ClassicLevel', 'a location: LevelDB')
    t.is(disk.status, 'open')
    await disk.close()
    t.is(disk.level.status, 'closed', 'close() closes what open() opened')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('open() explains what it cannot do', async t => {
  await rejects(t, open({ backend: 'indexeddb', location: 'x' }), 'LEVELKIT_BACKEND_UNAVAILABLE', /IndexedDB/)
  await rejects(t, open({ backend: 'rocksdb' }), 'LEVELKIT_INVALID', /Unknown backend/)
  await rejects(t, open({ backend: 'leveldb' }), 'LEVELKIT_INVALID', /location/)
  await rejects(t, open({ location: '' }), 'LEVELKIT_INVALID')
  await rejects(t, open({ db: {} }), 'LEVELKIT_INVALID', /abstract-level 3/)
  await rejects(t, open({ db: new MemoryLevel(), location: 'x' }), 'LEVELKIT_INVALID')
  await rejects(t, open({ syncReads: 'no' }), 'LEVELKIT_INVALID')
  await rejects(t, open(null), 'LEVELKIT_INVALID')
})

test('open() refuses a LevelDB location that is already open', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-lock-'))
  try {
    const first = await open({ location: dir })
    await rejects(t, open({ location: dir }), 'LEVELKIT_LOCKED', /in use/)
    await first.close()
    const again = await open({ location: dir })
    t.pass('opens again once released')
    await again.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('open({ db }) uses a database you own and leaves it open', async t => {
  const level = new MemoryLevel()
  const db = await open({ db: level })
  const items = db.collection('items')
  t.is(await items.insert({ a: 1 }), 1)
  await db.close()
  t.is(level.status, 'open', 'your database stays open')
  t.ok(await level.sublevel('items', { keyEncoding: 'view' }).keys().all(), 'data is in your database')
  await level.close()
})

test('syncReads: false reads asynchronously with the same results', async t => {
  const db = await open({ syncReads: false })
  const users = db.collection('users', { indexes: { name: { unique: true, key: u => u.name } } })
  const ids = await Promise.all(['a', 'b', 'a'].map(name => users.insert({ name }).catch(err => err.code)))
  t.same(ids, [1, 2, 'LEVELKIT_UNIQUE'])
  t.is((await users.getBy('name', 'b')).id, 2)
  t.ok((await db.check()).ok)
  await db.close()
})

test('a direct model call inside db.write() fails fast instead of deadlocking', async t => {
  const db = await open()
  const users = db.collection('users')
  await rejects(t, db.write(async () => {
    await users.insert({ name: 'x' })
  }), 'LEVELKIT_INVALID', /in\(w\)/)
  const outside = await users.insert({ name: 'y' })
  t.is(outside, 1, 'the failed write wrote nothing; calls outside a write still work')
  await db.close()
})
