// The shared option with failover (hosts): several processes writing one
// table follow the primary when it dies. The stand-in for a failover: two
// TCP proxies to the tests' server are the two hosts; the first one is the
// primary until it cuts every connection, at a batch, and refuses new ones
// (test/util/pg-proxy.js). The lock, listening and pool connections then
// find the other; the batch cut is settled by its commit id. Two worker
// processes (test/fixtures/postgres-shared-worker.js, role 'failover')
// send to one chat and race to create the same usernames through it. Then:
// every acknowledged write is there, every write reported as failed (but
// LEVELKIT_COMMIT_UNKNOWN) is not, message ids are 1..N with no gap nor
// duplicate, usernames have one owner, each process's watcher saw 1..N in
// order (it listens again on the new primary), check() is clean. And the
// writer and listening connections keep TCP alive, on both sides.
import test from 'tape'
import pg from 'pg'
import { open } from '../index.js'
import { ChatStore } from '../chat.js'
import { postgresForTests } from './util/postgres.js'
import { cutter } from './util/pg-proxy.js'
import { startWorker } from './util/shared-workers.js'
import { range } from './util/common.js'
import { FAST, openShared } from './fixtures/postgres-shared-worker.js'

const server = await postgresForTests(test)

/** The two proxies, and a connection string naming both (the first is the primary until cut). */
async function twoHosts () {
  // The shared batch's statement, with a commit id or not.
  const first = await cutter(server.connectionString, { marker: 'written AS (' })
  const second = await cutter(server.connectionString)
  return {
    first,
    second,
    connectionString: `${first.connectionString.replace(first.address, `${first.address},${second.address}`)}?target_session_attrs=read-write`,
    async close () {
      await first.close()
      await second.close()
    }
  }
}

/**
 * The connections this process opens for the writer lock and for
 * listening, as they connect, and the settings they SET.
 */
function recordOwnConnections () {
  /** @type {Map<string, import('pg').Client>} */
  const clients = new Map()
  /** @type {Map<import('pg').Client, Record<string, string>>} */
  const settings = new Map()
  const connect = pg.Client.prototype.connect
  /** @this {any} @param {any[]} args */
  pg.Client.prototype.connect = function (...args) {
    const name = this.connectionParameters?.fallback_application_name
    if (typeof name === 'string' && name.startsWith('levelkit ')) {
      clients.set(name.slice(9), this)
      /** @type {Record<string, string>} */
      const set = {}
      settings.set(this, set)
      const query = this.query
      /** @param {any} config @param {any[]} rest */
      this.query = (config, ...rest) => {
        const text = typeof config === 'string' ? config : config?.text
        for (const [, name, value] of String(text).matchAll(/SET (\w+) = (\d+)/g)) set[name] = value
        return query.call(this, config, ...rest)
      }
    }
    return connect.apply(this, /** @type {any} */ (args))
  }
  return {
    clients,
    settings,
    restore () { pg.Client.prototype.connect = connect }
  }
}

for (const [keepAlive, expected, failovers] of /** @type {Array<[number | false | undefined, any, boolean[]]>} */ ([
  [undefined, { tcp_keepalives_idle: '10', tcp_keepalives_interval: '2', tcp_keepalives_count: '3', tcp_user_timeout: '16000' }, [false, true]],
  [30000, { tcp_keepalives_idle: '30', tcp_keepalives_interval: '6', tcp_keepalives_count: '3', tcp_user_timeout: '48000' }, [true]],
  [false, {}, [true]]
])) {
  for (const failover of failovers) {
    test(`postgres shared${failover ? ' + hosts' : ''}: keepAlive ${keepAlive}: the writer and listening connections keep TCP alive, both ways`, async t => {
      const hosts = await twoHosts()
      const recorded = recordOwnConnections()
      const db = await open({ backend: 'postgres', connectionString: failover ? hosts.connectionString : hosts.first.connectionString, table: server.table(), shared: true, poolSize: 2, ...(keepAlive === undefined ? {} : { keepAlive }) })
      try {
        await new ChatStore(db, { passwordCost: FAST }).createUser({ username: 'u', password: 'x' })
        for (let i = 0; i < 100 && recorded.clients.size < 2; i++) await new Promise(resolve => setTimeout(resolve, 50))
        t.deepEqual([...recorded.clients.keys()].sort(), ['listen', 'writer'], 'both connected')
        for (const [purpose, client] of recorded.clients) {
          t.deepEqual(recorded.settings.get(client), expected, `${purpose}: the session's keepalive settings`)
          // (The tests' server listens on a unix socket, where they read as 0: their source tells they are set.)
          const { rows } = await client.query("SELECT name, source FROM pg_settings WHERE name IN ('tcp_keepalives_idle', 'tcp_keepalives_interval', 'tcp_keepalives_count', 'tcp_user_timeout') ORDER BY name")
          const source = keepAlive === false ? 'default' : 'session'
          t.deepEqual(rows.map(row => row.source), [source, source, source, source], `${purpose}: set ${keepAlive === false ? 'nowhere' : 'for the session'} on the server`)
          t.is(/** @type {any} */ (client).connection._keepAlive, keepAlive !== false, `${purpose}: TCP keepalive on this side ${keepAlive !== false ? 'on' : 'as the OS has it'}`)
          if (keepAlive !== false) t.is(/** @type {any} */ (client).connection._keepAliveInitialDelayMillis, keepAlive ?? 10000, `${purpose}: after ${keepAlive ?? 10000} ms of silence`)
        }
      } finally {
        recorded.restore()
        await db.close()
        await hosts.close()
      }
    })
  }
}

test('postgres shared + hosts: the keepAlive option is checked', async t => {
  for (const keepAlive of [0, -1, 1.5, '10s', true]) {
    const err = await open({ backend: 'postgres', connectionString: server.connectionString, table: server.table(), shared: true, keepAlive }).then(db => db.close(), err => err)
    t.is(err?.code, 'LEVELKIT_INVALID', `keepAlive ${JSON.stringify(keepAlive)}: LEVELKIT_INVALID`)
  }
})

for (const cut of /** @type {const} */ (['after', 'before'])) {
  test(`postgres shared + hosts: 2 processes writing while the primary dies (its connections cut ${cut} a batch commits) lose nothing and double nothing`, async t => {
    const hosts = await twoHosts()
    const table = server.table()
    // The parent reads and checks on the server directly.
    const db = await openShared(server.connectionString, table)
    try {
      const store = new ChatStore(db, { passwordCost: FAST })
      const senders = [await store.createUser({ username: 'sender0', password: 'x' }), await store.createUser({ username: 'sender1', password: 'x' })]
      const chatId = await store.createChat({ name: 'failover', adminId: senders[0], userIds: [senders[1]] })
      const names = range(0, 19).map(i => `racer${i}`)
      const workers = await Promise.all(senders.map((senderId, worker) => startWorker(hosts.connectionString, table, 'failover', { n: 50, inFlight: 4, chatId, senderId, worker, names }, 'table')))
      for (const w of workers) w.go()
      // Mid-workload: once some messages are in, the next batch through the first host.
      let seq = 0
      for (let i = 0; i < 400 && seq < 20; i++) {
        await new Promise(resolve => setTimeout(resolve, 25))
        seq = await store.messages.lastSeq(chatId)
      }
      const cutDone = hosts.first.cutDone()
      hosts.first.cut(cut, { all: true, refuse: true })
      await Promise.race([cutDone, new Promise(resolve => setTimeout(resolve, 20000))])
      t.is(hosts.first.cuts, 1, `the first host cut every connection at a batch (${seq} messages in)`)
      const atCut = await store.messages.lastSeq(chatId)
      await Promise.all(workers.map(w => w.next(m => m?.written === true)))
      // Heard of by the workers only through their listening connections.
      await store.addChatMessage({ chatId, senderId: senders[0], text: 'last' })
      const messages = await store.getChatMessages(chatId, { from: 1, n: 100000 })
      const total = messages.length
      for (const w of workers) w.child.send({ until: total })
      const results = await Promise.all(workers.map(w => w.result()))
      t.deepEqual(messages.map(m => m.id), range(1, total), `stored: ids 1..${total}, no gap, no duplicate`)
      const texts = messages.map(m => m.text)
      t.is(new Set(texts).size, texts.length, 'no message stored twice')
      const byId = new Map(messages.map(m => [m.id, m.text]))
      const stored = new Set(texts)
      const sent = results.flatMap(r => r.sent)
      const acked = sent.filter(s => s.id !== undefined)
      const failed = sent.filter(s => s.id === undefined)
      t.deepEqual(acked.filter(s => byId.get(s.id) !== s.text), [], `all ${acked.length} acknowledged messages are there, under their ids`)
      t.deepEqual(failed.filter(s => s.code !== 'LEVELKIT_COMMIT_UNKNOWN' && stored.has(s.text)), [], `none of the ${failed.length} reported as failed is there`)
      /** @type {Record<string, number>} */
      const kinds = {}
      for (const s of failed) kinds[`${s.code} (committed: ${s.committed})`] = (kinds[`${s.code} (committed: ${s.committed})`] ?? 0) + 1
      t.comment(`${acked.length} acknowledged; failed: ${JSON.stringify(kinds)}`)
      // Only what was in flight at the cut: the batch (or a batch sent on its dead connection) and what was decided with it.
      t.deepEqual(failed.filter(s => !(s.code === 'LEVELKIT_BACKEND_UNAVAILABLE' && s.committed === false) && s.code !== 'LEVELKIT_ABORTED' && s.code !== 'LEVELKIT_COMMIT_UNKNOWN'), [], 'nothing else failed: the writer lock, the reads and the listening connection waited for the new primary')
      for (const [i, r] of results.entries()) {
        t.ok(r.sent.some((/** @type {any} */ s) => s.id > atCut), `worker ${i} wrote on the new primary`)
        t.deepEqual(r.watched, range(1, total), `worker ${i}'s watcher saw 1..${total} in order, the last one written by another process after the workload (it listened again)`)
      }
      const users = results.flatMap(r => r.users)
      const wrong = []
      let owners = 0
      for (const username of names) {
        const attempts = users.filter(u => u.username === username)
        const won = attempts.filter(u => u.id !== undefined)
        const owner = await store.getUser(username)
        if (owner) owners++
        // Owned by the one acknowledged winner, or by an attempt whose outcome was reported unknown.
        const right = won.length === 1 ? owner?.id === won[0].id : won.length === 0 && (!owner || attempts.some(u => u.code === 'LEVELKIT_COMMIT_UNKNOWN'))
        if (!right) wrong.push({ username, attempts, owner: owner?.id })
      }
      t.deepEqual(wrong, [], `each of ${names.length} usernames raced for is owned by its one acknowledged winner, or nobody (${owners} owned)`)
      t.is(await store.users.count(), owners + 2, 'no other user stored')
      const result = await db.check()
      t.deepEqual(result.problems, [], 'check() reports no problems')
    } finally {
      await db.close()
      await hosts.close()
    }
  })
}
