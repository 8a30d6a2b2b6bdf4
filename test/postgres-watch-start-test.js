// children.watch() without `after` starts after the last child as of the
// call: a child appended after the call is delivered. On PostgreSQL the
// starting point is a read on the pool, and a write called after it, whose
// critical section runs on other connections (or on the pool, answered
// first), could commit before that read runs (a pool waiting for a
// connection, a backend not scheduled under load): the watcher then started
// after the child and missed it, or waited forever for it. Here the pool
// holds the starting point's read until the write could have committed, so
// the interleaving happens every time.
import test from 'tape'
import pg from 'pg'
import { open } from '../index.js'
import { postgresForTests, POSTGRES_MODES as MODES } from './util/postgres.js'

const server = await postgresForTests(test)

// How long the held read waits: more than a write's few round trips.
const HOLD_MS = 300

/**
 * A pool whose next point read, once `hold()` is called, is sent HOLD_MS
 * late. `held` counts the reads so held.
 */
function holdingPool () {
  const pool = new pg.Pool({ connectionString: server.connectionString, max: 4 })
  pool.on('error', () => {})
  const query = pool.query.bind(pool)
  let armed = false
  const state = {
    pool,
    held: 0,
    hold () { armed = true }
  }
  /** @type {any} */
  const patched = pool
  patched.query = (/** @type {any} */ config, /** @type {any[]} */ ...rest) => {
    const text = typeof config === 'string' ? config : config?.text
    if (armed && typeof text === 'string' && text.startsWith('SELECT value FROM')) {
      armed = false
      state.held++
      return new Promise(resolve => setTimeout(resolve, HOLD_MS)).then(() => query(config, ...rest))
    }
    return query(config, ...rest)
  }
  return state
}

/** @param {Promise<any>} promise @param {number} ms @param {any} late */
function within (promise, ms, late) {
  return Promise.race([promise, new Promise(resolve => setTimeout(resolve, ms, late))])
}

for (const [mode, options] of MODES) {
  test(`postgres watch() start (${mode}): children appended after the call are delivered, though the starting point's read is late`, async t => {
    const holding = holdingPool()
    const db = await open({ backend: 'postgres', pool: holding.pool, table: server.table(), ...options })
    // (Aborted at the end: a watcher still waiting must not keep the test.)
    const stop = new AbortController()
    try {
      const chats = db.collection('chats')
      const messages = db.children('messages', { parent: chats })
      const c = await chats.insert({})
      await messages.append(c, 'before')
      holding.hold()
      const watcher = messages.watch(c, { signal: stop.signal })
      const first = watcher.next()
      await messages.append(c, 'a')
      await messages.append(c, 'b')
      t.is(holding.held, 1, 'the starting point was read late')
      t.same(await within(first, 3000, 'still waiting after 3 s'), { value: [2, 'a'], done: false }, 'the first child appended after the call')
      t.same(await within(watcher.next(), 3000, 'still waiting after 3 s'), { value: [3, 'b'], done: false }, 'then the next')

      // Called inside a db.write() callback (on the handle, not in(w)):
      // it waits neither for the callback, which holds the write path, nor
      // lets the callback's batch land before its starting point is read.
      /** @type {any} */
      let inside = null
      const wrote = await within(db.write(async w => {
        inside = messages.watch(c, { signal: stop.signal })
        await messages.in(w).append(c, 'in a callback')
        return 'written'
      }), 3000, 'still writing after 3 s')
      t.is(wrote, 'written', 'the callback was not held up')
      t.same(await within(inside.next(), 3000, 'still waiting after 3 s'), { value: [4, 'in a callback'], done: false }, 'the child it appended is delivered')
      t.same((await db.check()).problems, [], 'check() is clean')
    } finally {
      stop.abort()
      await db.close()
      await holding.pool.end()
    }
  })
}
