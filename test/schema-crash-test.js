// Index builds survive a crash: a child process (test/fixtures/schema-crash-worker.js)
// opens a LevelDB database whose records predate an index declaration, so
// the index is built (or, with a raised version or another kind, cleared
// and rebuilt) in the background while the child writes, and is killed with
// SIGKILL in the middle of the build. Rounds go in pairs: a new
// declaration (another kind, a higher version), then the same one again.
// After the first round of a pair, the database is reopened here with it:
// the build resumes at its marker (not from the first record), and this
// process closes with the build under way; the second round's worker
// resumes it again and is killed too. After the second, the build is
// finished here, and the index must equal one computed from scratch, with
// check() clean.

import test from 'tape'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { open, encodeTuple as encode, decodeTuple } from '../index.js'
import { prng } from './util/prng.js'
import { killCycle } from './util/worker.js'
import { declaration } from './fixtures/schema-crash-declarations.js'

const WORKER = fileURLToPath(new URL('./fixtures/schema-crash-worker.js', import.meta.url))
const SEED = process.env.CRASH_SEED ? Number(process.env.CRASH_SEED) : Date.now() % 0x7fffffff
const RECORDS = 3000
const ROUNDS = 8

/** @param {Uint8Array | string} bytes */
const hex = bytes => typeof bytes === 'string' ? bytes : Buffer.from(bytes).toString('hex')

/** The stored entries of the index against ones computed from the stored records. @param {any} level @param {any} spec */
async function againstScratch (level, spec) {
  const stored = await level.sublevel('books.idx.byTitle', { keyEncoding: 'view', valueEncoding: spec.covering ? 'utf8' : 'view' }).iterator().all()
  const records = await level.sublevel('books', { keyEncoding: 'view', valueEncoding: 'utf8' }).iterator().all()
  const scratch = new Map()
  for (const [key, json] of records) {
    const id = decodeTuple(key)
    const computed = spec.key(JSON.parse(json))
    for (const value of spec.multi ? new Set(computed) : [computed]) {
      scratch.set(hex(spec.unique ? encode([value]) : encode([value, id])), spec.covering ? json : spec.unique ? hex(key) : '')
    }
  }
  return { actual: stored.map((/** @type {any[]} */ [k, v]) => [hex(k), hex(v)]).sort(), scratch: [...scratch].sort() }
}

const sleep = (/** @type {number} */ ms) => new Promise(resolve => setTimeout(resolve, ms))

test(`crash: SIGKILL in the middle of index builds, ${ROUNDS} rounds on one LevelDB database`, { skip: process.platform === 'win32' }, async t => {
  t.comment(`seed ${SEED} (reproduce with CRASH_SEED=${SEED})`)
  const rand = prng(SEED)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'levelkit-schema-crash-'))
  const location = path.join(dir, 'db')
  let resumed = 0
  try {
    const db = await open({ backend: 'leveldb', location })
    const books = db.collection('books')
    for (let i = 0; i < RECORDS; i += 500) {
      await db.write(async w => {
        for (let k = i; k < i + 500; k++) await books.in(w).insert({ title: `t${k}`, tags: [`g${k % 7}`, `h${k % 3}`] })
      })
    }
    await db.close()

    for (let round = 0; round < ROUNDS; round++) {
      let killedAt = null
      const wrong = await killCycle(WORKER, [location, String(rand.int(0x7fffffff)), String(round)], async child => {
        // Killed once the build is some way in (or after a while, whatever it did).
        // A share of what is left to build when the worker starts (it may resume one).
        const share = 0.1 + 0.7 * rand()
        /** @type {number | null} */
        let start = null
        await new Promise(resolve => {
          const timer = setTimeout(resolve, 4000)
          child.on('message', (/** @type {any} */ status) => {
            if (status === 'ready' || killedAt !== null) return
            if (start === null) start = status.state === 'building' ? status.done : 0
            if (status.state === 'ready' || (status.state === 'building' && status.done > start && status.done >= start + share * (status.total - start))) {
              killedAt = status
              clearTimeout(timer)
              resolve(null)
            }
          })
        })
        await sleep(rand.int(20))
      })
      if (wrong) {
        t.fail(`round ${round}: ${wrong}`)
        break
      }
      const spec = declaration(round)
      const reopened = await open({ backend: 'leveldb', location })
      reopened.collection('books', { indexes: { byTitle: spec } })
      const status = (await reopened.schemaStatus()).books.byTitle
      if (status.state === 'building' && status.done > 0) resumed++
      t.comment(`round ${round}: killed at ${JSON.stringify(killedAt)}; reopened: ${status.state} ${status.done ?? ''}/${status.total ?? ''}`)
      if (round % 2 === 0) {
        // Closed with its build under way: the next round's worker resumes it.
        t.same((await reopened.check()).problems, [], `round ${round}: check() is clean (an index being built is not checked)`)
        await reopened.close()
        continue
      }
      await reopened.buildIndexes()
      const { actual, scratch } = await againstScratch(reopened.level, spec)
      t.ok(actual.length === scratch.length && actual.every((entry, i) => entry[0] === scratch[i][0] && entry[1] === scratch[i][1]), `round ${round}: the index equals one computed from scratch (${actual.length} entries)`)
      const check = await reopened.check()
      t.same(check.problems, [], `round ${round}: check() is clean`)
      await reopened.close()
    }
    t.ok(resumed > 0, `${resumed} builds resumed at their marker after the kill`)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
