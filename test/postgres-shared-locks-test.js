// Shared key locks (open({ backend: 'postgres', shared: true, locking:
// 'keys' }), lib/backends/postgres-keylocks.js): a record a critical
// section only reads to check that it exists (a relation's endpoint) is
// locked shared. Sections of other processes checking it go on; one that
// rewrites or deletes it waits for them. Two databases on one table stand
// for two processes in the first test; the second runs real processes
// (test/fixtures/postgres-shared-locks-worker.js) creating chats that name
// users while another deletes those users: a chat is refused
// (LEVELKIT_NOT_FOUND) or the deletion is refused or takes the edges with
// it, never an edge to a deleted user.
import test from 'tape'
import { fork } from 'node:child_process'
import pg from 'pg'
import { fileURLToPath } from 'node:url'
import { open } from '../index.js'
import { postgresForTests } from './util/postgres.js'
import { declare } from './fixtures/postgres-shared-locks-worker.js'

const server = await postgresForTests(test)
const WORKER = fileURLToPath(new URL('./fixtures/postgres-shared-locks-worker.js', import.meta.url))

/** @param {number} ms */
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

test('postgres shared key locks: an endpoint checked by one process is checked by another at once; its update waits', async t => {
  const table = server.table()
  const options = { backend: 'postgres', connectionString: server.connectionString, table, shared: true, locking: 'keys', poolSize: 2 }
  const a = await open(options)
  const b = await open(options)
  try {
    const modelA = declare(a, 'restrict')
    const modelB = declare(b, 'restrict')
    const user = await modelA.users.insert({ name: 'ann' })
    const chatA = await modelA.chats.insert({ name: 'a' })
    const chatB = await modelA.chats.insert({ name: 'b' })
    /** @type {() => void} */
    let letGo = () => {}
    const gate = new Promise(resolve => { letGo = () => resolve(undefined) })
    /** @type {() => void} */
    let hasChecked = () => {}
    const checked = new Promise(resolve => { hasChecked = () => resolve(undefined) })
    const holding = a.write(async (/** @type {any} */ w) => {
      await modelA.members.in(w).add(chatA, user)
      hasChecked()
      await gate
    })
    await checked
    const other = await Promise.race([modelB.members.add(chatB, user).then(() => 'added'), sleep(5000).then(() => 'still waiting after 5 s')])
    t.is(other, 'added', 'another database adds an edge to the same user while the first holds its check')
    let updated = false
    const update = modelB.users.update(user, { name: 'anna' }).then(() => { updated = true })
    await sleep(500)
    t.notOk(updated, 'its update of the user waits for the section that checked the user')
    letGo()
    await holding
    await update
    t.is((await modelA.users.get(user)).name, 'anna', 'then it goes on')
    t.same(await modelA.members.from(user).all(), [chatA, chatB], 'both edges are there')
    const { rows } = await server.pool.query('SELECT count(*)::int AS n FROM pg_locks WHERE locktype = \'advisory\' AND granted AND objsubid = 1')
    t.is(rows[0].n, 0, 'no key lock is left once both are idle')
    t.same((await a.check()).problems, [], 'check() is clean')
  } finally {
    await a.close()
    await b.close()
  }
})

/**
 * A worker process in `role`, once open.
 * @param {string} table @param {string} role @param {object} args
 */
async function startWorker (table, role, args) {
  const child = fork(WORKER, [server.connectionString, table, role, JSON.stringify(args)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  /** @type {any[]} */
  const messages = []
  /** @type {(() => void) | null} */
  let wake = null
  child.on('message', message => { messages.push(message); wake?.() })
  const exited = new Promise(resolve => child.once('exit', resolve))
  /** @param {(m: any) => boolean} match */
  const next = async match => {
    for (;;) {
      const found = messages.find(match)
      if (found !== undefined) return found
      const ended = await Promise.race([new Promise(resolve => { wake = () => resolve(null) }), exited])
      if (ended !== null && messages.find(match) === undefined) throw new Error(`worker (${role}) exited (${ended}) before answering`)
    }
  }
  await next(m => m === 'ready')
  return {
    go () { child.send({ go: true }) },
    async result () {
      const message = await next(m => typeof m === 'object' && m !== null)
      await exited
      if (message.failed) throw new Error(`worker (${role}) failed: ${message.failed}`)
      return message.done
    }
  }
}

for (const onDelete of /** @type {const} */ (['restrict', 'cascade'])) {
  test(`postgres shared key locks: users deleted while 2 other processes create chats naming them (onDelete: '${onDelete}'): never an edge to a deleted user`, async t => {
    const table = server.table()
    const db = await open({ backend: 'postgres', connectionString: server.connectionString, table, shared: true, locking: 'keys', poolSize: 2 })
    try {
      const { users, chats, members } = declare(db, onDelete)
      const USERS = 24
      for (let i = 1; i <= USERS; i++) await users.insert({ name: `u${i}` })
      // Each chat names 3 of the 24 users; the deleter takes users 1..16 away.
      const workers = await Promise.all([
        startWorker(table, 'create', { seed: 1, n: 40, members: 3, users: USERS, onDelete }),
        startWorker(table, 'create', { seed: 2, n: 40, members: 3, users: USERS, onDelete }),
        startWorker(table, 'delete', { from: 1, to: 16, onDelete })
      ])
      for (const w of workers) w.go()
      const [one, two, deleter] = await Promise.all(workers.map(w => w.result()))
      t.is(one.created + one.refused + two.created + two.refused, 80, `every createChat answered (created ${one.created + two.created}, refused ${one.refused + two.refused})`)
      t.is(deleter.deleted + deleter.restricted, 16, `every deletion answered (deleted ${deleter.deleted}, refused ${deleter.restricted})`)
      // Every edge's user exists, in both directions.
      /** @type {string[]} */
      const dangling = []
      let chatsFound = 0
      for (let chat = 1; await chats.get(chat) !== undefined; chat++) {
        chatsFound++
        for (const id of await members.to(chat).all()) {
          if (await users.get(id) === undefined) dangling.push(`chat ${chat} → user ${id}`)
        }
      }
      for (let id = 1; id <= USERS; id++) {
        if (await users.get(id) === undefined && (await members.from(id).all()).length > 0) dangling.push(`deleted user ${id} has chats`)
      }
      t.is(chatsFound, one.created + two.created, 'the chats created, ids without gap')
      t.same(dangling, [], 'no chat lists a deleted user, no deleted user has chats')
      t.same((await db.check()).problems, [], 'check() is clean')
      if (onDelete === 'restrict') t.ok(deleter.deleted > 0 || deleter.restricted > 0, 'the deleter ran')
    } finally {
      await db.close()
    }
  })
}

// What a key transaction read under a shared lock is kept for the
// transaction's life (lib/shared-reads.js): the sections of one group that
// check the same record read it once.

/**
 * Run, in one key transaction, a first section that checks `first` and
 * waits at a gate, then `rest` (each its own section, queued behind it);
 * answer how many statements the process sent once the gate opened.
 * @param {any} db @param {(w: any) => Promise<unknown>} first @param {Array<() => Promise<unknown>>} rest
 */
async function oneTransaction (db, first, rest) {
  /** @type {() => void} */
  let letGo = () => {}
  const gate = new Promise(resolve => { letGo = () => resolve(undefined) })
  /** @type {() => void} */
  let hasChecked = () => {}
  const checked = new Promise(resolve => { hasChecked = () => resolve(undefined) })
  const lock = db.level.sharedWriterLock()
  const transactions = lock.stats.transactions
  const requests = lock.requests
  const holding = db.write(async (/** @type {any} */ w) => {
    await first(w)
    hasChecked()
    await gate
  })
  await checked
  // Queued behind the first section: they run before its group is written.
  const queued = rest.map(fn => fn())
  const before = countStatements()
  letGo()
  const results = await Promise.allSettled([holding, ...queued])
  return { statements: countStatements() - before, requests: lock.requests - requests, transactions: lock.stats.transactions - transactions, results }
}

// Every statement this process sends (pg's Pool runs its queries through Client#query).
let statementsSent = 0
const clientQuery = pg.Client.prototype.query
pg.Client.prototype.query = /** @type {any} */ (countQuery)
/** @this {any} @param {...any} args */
function countQuery (...args) {
  statementsSent++
  return clientQuery.apply(this, /** @type {any} */ (args))
}
const countStatements = () => statementsSent

test('postgres shared key locks: the sections of one key transaction check a record once', async t => {
  const table = server.table()
  const db = await open({ backend: 'postgres', connectionString: server.connectionString, table, shared: true, locking: 'keys', poolSize: 2 })
  try {
    const { users, chats, members } = declare(db, 'cascade')
    const ann = await users.insert({ name: 'ann' })
    /** @type {unknown[]} */
    const others = []
    for (let i = 0; i < 5; i++) others.push(await users.insert({ name: `u${i}` }))
    /** @type {unknown[]} */
    const chatIds = []
    for (let i = 0; i < 12; i++) chatIds.push(await chats.insert({ name: `c${i}` }))
    // Six sections checking ann, against six checking ann then five others.
    const same = await oneTransaction(db, w => members.in(w).add(chatIds[0], ann), [1, 2, 3, 4, 5].map(i => () => members.add(chatIds[i], ann)))
    const different = await oneTransaction(db, w => members.in(w).add(chatIds[6], ann), others.map((id, i) => () => members.add(chatIds[7 + i], id)))
    t.same([same.transactions, different.transactions], [1, 1], 'each set of sections ran in one key transaction')
    t.ok(same.results.every(r => r.status === 'fulfilled') && different.results.every(r => r.status === 'fulfilled'), 'every edge added')
    t.is(different.requests - same.requests, 5, `the five later checks of ann ask for no lock (${same.requests} lock requests, against ${different.requests} checking five other users)`)
    // A later section's check of a user not yet locked is one query: its
    // lock's try and its read behind it (the sections run one at a time:
    // nothing to coalesce across them); of ann, locked shared and read by the
    // first section, nothing.
    t.is(different.statements - same.statements, 5, `nor read her again (${same.statements} statements, against ${different.statements})`)
    t.same(await members.from(ann).all(), chatIds.slice(0, 7), 'ann has her chats')
    t.same((await db.check()).problems, [], 'check() is clean')
  } finally {
    await db.close()
  }
})

// The deletion reads the user's edges (a range): it runs again in a
// transaction of its own, after the first section's ends.
test('postgres shared key locks: a record checked, then deleted by a section queued behind, is not found by the next', async t => {
  const table = server.table()
  const db = await open({ backend: 'postgres', connectionString: server.connectionString, table, shared: true, locking: 'keys', poolSize: 2 })
  try {
    const { users, chats, members } = declare(db, 'cascade')
    const ann = await users.insert({ name: 'ann' })
    const c1 = await chats.insert({ name: 'c1' })
    const c2 = await chats.insert({ name: 'c2' })
    const run = await oneTransaction(db, w => members.in(w).add(c1, ann), [() => users.del(ann), () => members.add(c2, ann)])
    t.is(run.results[1].status, 'fulfilled', 'the deletion is made')
    const refused = run.results[2]
    t.is(refused.status === 'rejected' && refused.reason.code, 'LEVELKIT_NOT_FOUND', 'the later check does not find the user')
    t.is(await users.get(ann), undefined, 'the user is gone')
    t.same(await members.to(c1).all(), [], 'with her edge')
    t.same(await members.to(c2).all(), [], 'and no new one')
    t.same((await db.check()).problems, [], 'check() is clean')
  } finally {
    await db.close()
  }
})

test('postgres shared key locks: a record checked in one key transaction and deleted by another process after it is not found by the next', async t => {
  const table = server.table()
  const options = { backend: 'postgres', connectionString: server.connectionString, table, shared: true, locking: 'keys', poolSize: 2 }
  const a = await open(options)
  const b = await open(options)
  try {
    const modelA = declare(a, 'cascade')
    const modelB = declare(b, 'cascade')
    const ann = await modelA.users.insert({ name: 'ann' })
    const c1 = await modelA.chats.insert({ name: 'c1' })
    const c2 = await modelA.chats.insert({ name: 'c2' })
    // A checks ann in a key transaction that ends, written.
    await modelA.members.add(c1, ann)
    // B deletes her (its exclusive read waits for no lock now).
    await modelB.users.del(ann)
    // A's next transaction must not answer from what the last one read.
    const refused = await modelA.members.add(c2, ann).then(() => null, err => err)
    t.is(refused?.code, 'LEVELKIT_NOT_FOUND', 'the next key transaction does not find the user another process deleted')
    t.same(await modelA.members.to(c2).all(), [], 'no edge to the deleted user')
    t.same((await a.check()).problems, [], 'check() is clean')
  } finally {
    await a.close()
    await b.close()
  }
})
