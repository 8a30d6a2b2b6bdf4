// Layout moves survive a crash: a child process
// (test/fixtures/schema-layout-crash-worker.js) opens a LevelDB database
// whose relation edges and children were written in another layout, so
// they are moved in the background, and is killed with SIGKILL in the
// middle of the moves. Rounds go in pairs, each declaring other layouts.
// After the first round of a pair, the database is reopened here with its
// layouts: the moves resume at their markers (not from the start), and this
// process closes with them under way; the next round's worker declares
// other layouts, so the moves it starts begin from data in two layouts.
// After the second, the moves are finished here, and every edge and child
// must be there once, with check() clean.

import test from 'tape'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { open } from '../index.js'
import { prng } from './util/prng.js'
import { killCycle } from './util/worker.js'
import { layouts } from './fixtures/schema-layout-crash-layouts.js'

const WORKER = fileURLToPath(new URL('./fixtures/schema-layout-crash-worker.js', import.meta.url))
const SEED = process.env.CRASH_SEED ? Number(process.env.CRASH_SEED) : Date.now() % 0x7fffffff
const PEOPLE = 300
const NOTES = 7
const ROUNDS = 6

/** @param {number} i */
const follows = i => [...new Set([1, 2, 7, 31, 100].map(d => 1 + (i - 1 + d) % PEOPLE))].sort((a, b) => a - b)

const sleep = (/** @type {number} */ ms) => new Promise(resolve => setTimeout(resolve, ms))

/** @param {any} db @param {number} round */
function declare (db, round) {
  const { lists, blockSize } = layouts(round)
  const people = db.collection('people')
  const rel = db.relation('follows', { from: people, to: people, lists })
  const notes = db.children('notes', { parent: people, blockSize })
  return { people, rel, notes }
}

test(`crash: SIGKILL in the middle of layout moves, ${ROUNDS} rounds on one LevelDB database`, { skip: process.platform === 'win32' }, async t => {
  t.comment(`seed ${SEED} (reproduce with CRASH_SEED=${SEED})`)
  const rand = prng(SEED)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'levelkit-layout-crash-'))
  const location = path.join(dir, 'db')
  let resumed = 0
  try {
    const db = await open({ backend: 'leveldb', location })
    // Written one key per edge and per child (the layouts of round 1).
    const { people, rel, notes } = declare(db, 1)
    await people.insertMany(Array.from({ length: PEOPLE }, (_, i) => ({ n: i + 1 })))
    for (let i = 1; i <= PEOPLE; i++) {
      await rel.addMany(i, follows(i))
      await notes.appendMany(i, Array.from({ length: NOTES }, (_, k) => `${i}:${k + 1}`))
    }
    await db.close()

    for (let round = 0; round < ROUNDS; round++) {
      let killedAt = null
      const wrong = await killCycle(WORKER, [location, String(round)], async child => {
        // Killed once the moves are some way in (or after a while).
        const after = 20 + rand.int(600)
        await new Promise(resolve => {
          const timer = setTimeout(resolve, 4000)
          child.on('message', (/** @type {any} */ status) => {
            if (status === 'ready' || killedAt !== null) return
            if (status.done >= after || (status.follows === 'ready' && status.notes === 'ready')) {
              killedAt = status
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
      const { rel, notes } = declare(reopened, round)
      const status = await reopened.schemaStatus()
      const moving = [status.follows?.layout, status.notes?.layout].filter(s => s !== undefined && s.state === 'moving' && (s.done ?? 0) > 0)
      resumed += moving.length
      t.comment(`round ${round}: killed at ${JSON.stringify(killedAt)}; reopened: ${JSON.stringify([status.follows, status.notes])}`)
      if (round % 2 === 0) {
        // Closed with the moves under way: the next round's worker moves towards other layouts.
        await reopened.close()
        continue
      }
      await reopened.buildIndexes()
      let wrongEdges = 0
      let wrongNotes = 0
      for (let i = 1; i <= PEOPLE; i++) {
        if (JSON.stringify(await rel.to(i).all()) !== JSON.stringify(follows(i))) wrongEdges++
        const from = []
        for (let j = 1; j <= PEOPLE; j++) if (follows(j).includes(i)) from.push(j)
        if (JSON.stringify(await rel.from(i).all()) !== JSON.stringify(from)) wrongEdges++
        if (JSON.stringify(await notes.range(i).all()) !== JSON.stringify(Array.from({ length: NOTES }, (_, k) => `${i}:${k + 1}`))) wrongNotes++
      }
      t.is(wrongEdges, 0, `round ${round}: every edge, once, both ways`)
      t.is(wrongNotes, 0, `round ${round}: every child, once, in order`)
      t.same((await reopened.check()).problems, [], `round ${round}: check() is clean`)
      await reopened.close()
    }
    t.ok(resumed > 0, `${resumed} moves resumed at their marker after the kill`)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
