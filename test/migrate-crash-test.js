// Migrations survive a crash: a child process (test/fixtures/migrate-crash-worker.js)
// runs migrations 1..round+1 on a LevelDB database, each adding 1 to every
// record's `n` with modify() in batches of 40 and then counting its run with
// m.write(), while other writes touch the records, and is killed with
// SIGKILL in the middle of the new migration's modify(). Between rounds the
// database is reopened here: the records the interrupted modify() passed
// (up to its stored marker) are one migration ahead of the rest, never two
// or none, and the index and check() agree. At the end the migrations are
// finished here: every record's `n` is exactly the number of migrations,
// and each migration's m.write() ran once.

import test from 'tape'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { open, encodeTuple as encode, decodeTuple } from '../index.js'
import { prng } from './util/prng.js'
import { killCycle } from './util/worker.js'
import { compareBytes, hexToBytes } from '../lib/bytes.js'
import { declare, migrations } from './fixtures/migrate-crash-migrations.js'

const WORKER = fileURLToPath(new URL('./fixtures/migrate-crash-worker.js', import.meta.url))
const SEED = process.env.CRASH_SEED ? Number(process.env.CRASH_SEED) : Date.now() % 0x7fffffff
const RECORDS = 3000
const ROUNDS = 8

const sleep = (/** @type {number} */ ms) => new Promise(resolve => setTimeout(resolve, ms))

/**
 * What the database holds: its schema version, the marker of the
 * migration under way, each record's `n` by key.
 * @param {any} db
 */
async function stateOf (db) {
  const meta = db.level.sublevel(':levelkit.meta', { keyEncoding: 'view', valueEncoding: 'utf8' })
  const version = JSON.parse((await meta.get(encode(['version']))) ?? '{"version":0}').version
  const stored = await meta.get(encode(['migration']))
  const progress = stored === undefined ? null : JSON.parse(stored)
  const records = await db.level.sublevel('items', { keyEncoding: 'view', valueEncoding: 'utf8' }).iterator().all()
  return { version, progress, records: records.map((/** @type {any[]} */ [key, json]) => ({ key, record: JSON.parse(json) })) }
}

/** The index's keys against ones computed from the records. @param {any} db */
async function indexAgainstScratch (db) {
  const stored = await db.level.sublevel('items.idx.byN', { keyEncoding: 'view', valueEncoding: 'view' }).keys().all()
  const { records } = await stateOf(db)
  const scratch = records.map(({ key, record }) => Buffer.from(encode([record.n, decodeTuple(key)])).toString('hex')).sort()
  const actual = stored.map((/** @type {Uint8Array} */ key) => Buffer.from(key).toString('hex')).sort()
  return actual.length === scratch.length && actual.every((key, i) => key === scratch[i])
}

test(`crash: SIGKILL in the middle of a migration's modify(), ${ROUNDS} rounds on one LevelDB database`, { skip: process.platform === 'win32' }, async t => {
  t.comment(`seed ${SEED} (reproduce with CRASH_SEED=${SEED})`)
  const rand = prng(SEED)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'levelkit-migrate-crash-'))
  const location = path.join(dir, 'db')
  let interrupted = 0
  try {
    const db = await open({ backend: 'leveldb', location })
    const { items } = declare(db)
    await items.insertMany(Array.from({ length: RECORDS }, (_, i) => ({ title: `t${i}`, n: 0 })))
    await db.close()

    for (let round = 0; round < ROUNDS; round++) {
      let killedAt = null
      const wrong = await killCycle(WORKER, [location, String(rand.int(0x7fffffff)), String(round), String(RECORDS)], async child => {
        // Killed some way into the new migration's modify(), sometimes right after
        // its last batch (before its m.write()), or after a while.
        const share = Math.min(0.05 + rand(), 1)
        await new Promise(resolve => {
          const timer = setTimeout(resolve, 8000)
          child.on('message', (/** @type {any} */ progress) => {
            if (killedAt !== null || progress === 'ready') return
            if (progress.migrated !== undefined || (progress.version === round + 1 && progress.done >= share * RECORDS)) {
              killedAt = progress
              clearTimeout(timer)
              resolve(null)
            }
          })
        })
        await sleep(rand.int(10))
      })
      if (wrong) {
        t.fail(`round ${round}: ${wrong}`)
        break
      }
      const reopened = await open({ backend: 'leveldb', location })
      declare(reopened)
      const { version, progress, records } = await stateOf(reopened)
      const marker = progress === null ? null : progress.steps[0]?.after ?? null
      if (progress !== null) interrupted++
      // Records up to the marker are one migration ahead: none two, none behind.
      const wrongN = records.filter(({ key, record }) => {
        const ahead = progress !== null && marker !== null && compareBytes(key, hexToBytes(marker)) <= 0 && !progress.steps[0].finished
        const expected = version + (ahead || (progress?.steps[0]?.finished) ? 1 : 0)
        return record.n !== expected
      })
      t.comment(`round ${round}: killed at ${JSON.stringify(killedAt)}; version ${version}, progress ${JSON.stringify(progress)}`)
      t.is(wrongN.length, 0, `round ${round}: every record is at version ${version} or, up to the marker, one ahead (${wrongN.length} are not${wrongN.length ? `: ${JSON.stringify(wrongN.slice(0, 3).map(r => r.record))}` : ''})`)
      t.ok(await indexAgainstScratch(reopened), `round ${round}: the index equals one computed from the records`)
      t.same((await reopened.check()).problems, [], `round ${round}: check() is clean`)
      await reopened.close()
    }
    t.ok(interrupted > 0, `${interrupted} rounds left a migration under way`)

    const last = await open({ backend: 'leveldb', location })
    const models = declare(last)
    const result = await last.migrate(migrations(models, ROUNDS))
    t.is(result.to, ROUNDS, `migrated to version ${ROUNDS} (${JSON.stringify(result)})`)
    const { records, progress } = await stateOf(last)
    t.is(progress, null, 'no migration under way')
    t.is(records.length, RECORDS, 'no record lost')
    const wrongN = records.filter(({ record }) => record.n !== ROUNDS)
    t.is(wrongN.length, 0, `every record's n is exactly ${ROUNDS}: none skipped or rewritten twice`)
    /** @type {Record<string, number>} */
    const runs = {}
    for await (const [key, count] of models.runs.query().entries()) runs[key] = count
    t.same(runs, Object.fromEntries(Array.from({ length: ROUNDS }, (_, i) => [`v${i + 1}`, 1])), "each migration's m.write() ran once")
    t.ok(await indexAgainstScratch(last), 'the index equals one computed from the records')
    t.same((await last.check()).problems, [], 'check() is clean')
    await last.close()
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
