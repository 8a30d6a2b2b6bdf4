// Failover of the postgres backend (npm run test:failover; not in npm test:
// it starts etcd and two Patroni nodes and takes a minute or two). A chat
// workload writes through a database given both hosts while the primary's
// PostgreSQL is killed (-9) mid-workload, several rounds: its postmaster
// alone (Patroni restarts it in place) or the whole node (the synchronous
// standby is promoted, and the killed node rejoins as its standby). Then:
// every acknowledged write is there, nothing is there twice (message ids
// 1..N without a gap, each text once, usernames unique), check() is clean,
// and every operation that failed either did not commit (the writers send
// it again: a second copy would show) or was reported with
// LEVELKIT_COMMIT_UNKNOWN.
//
// LEVELKIT_FAILOVER_ROUNDS (default 4) sets the kills; LEVELKIT_FAILOVER_ASYNC=1
// runs the pair with asynchronous replication (the test should then fail:
// acknowledged writes can be lost).
import test from 'tape'
import pg from 'pg'
import { startFailoverCluster, listening } from '../../testkit/patroni.js'
import { open } from '../../index.js'
import { ChatStore } from '../../chat.js'
import { PostgresLevel } from '../../lib/backends/postgres-level.js'

const ROUNDS = Number(process.env.LEVELKIT_FAILOVER_ROUNDS || 4)
const WRITERS = 4
const CHATS = 2
// Writes acknowledged before a kill, and after one, before the next step.
const LOAD = 150
const CHEAP = { passwordCost: { scryptN: 16, pbkdf2Iterations: 1 } }
const RESEND = 20

/** @type {(() => void) | null} called just after the next batch is sent */
let armed = null

/**
 * Kills aimed at a batch in flight: a random kill mostly lands between
 * batches (the critical sections' reads take most of the time), where
 * nothing is left unknown. The next batch after arm() sends its statement
 * and then, at once or a millisecond later, the kill: before or after the
 * commit, or after the answer.
 */
class ArmedLevel extends PostgresLevel {
  /** @param {any} operations @param {any} options */
  _batch (operations, options) {
    return armedWrite(() => super._batch(operations, options))
  }

  /** The write path's batches (lib/writer.js), past abstract-level's batch() and _batch(). @param {any} operations @param {any} options */
  levelkitWriteBatch (operations, options) {
    return armedWrite(() => super.levelkitWriteBatch(operations, options))
  }
}

/** @param {() => Promise<void>} write @returns {Promise<void>} */
function armedWrite (write) {
  const trigger = armed
  armed = null
  const writing = write()
  // Right after the statement is written (setImmediate), or a moment later.
  if (trigger) Math.random() < 0.5 ? setImmediate(trigger) : setTimeout(trigger, 1)
  return writing
}

/** @param {() => Promise<void>} kill @returns {Promise<void>} resolves once the kill is done */
function arm (kill) {
  return new Promise((resolve, reject) => {
    armed = () => { kill().then(resolve, reject) }
  })
}

test('postgres failover: acknowledged writes survive kill -9 of the primary, nothing is doubled', { timeout: 15 * 60 * 1000 }, async t => {
  const started = Date.now()
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`
  const cluster = await startFailoverCluster({ log: line => t.comment(`${elapsed()}: ${line}`), synchronous: process.env.LEVELKIT_FAILOVER_ASYNC !== '1' })
  /** @type {import('../../index.js').Database | null} */
  let db = null
  try {
    t.comment(`${elapsed()}: ${cluster.connectionString}`)
    const level = new ArmedLevel({ connectionString: cluster.connectionString, table: 'chat', failoverTimeout: 60000 })
    /** @type {Array<{ commitId: string, committed: boolean | null }>} */
    const settled = []
    level.on('commit-settled', (/** @type {any} */ event) => settled.push(event))
    db = await open({ db: level })
    const store = await ChatStore.open(db, CHEAP)

    const userIds = []
    for (let i = 0; i < WRITERS; i++) userIds.push(await store.createUser({ username: `writer${i}`, password: 'secret' }))
    const chatIds = []
    for (let c = 0; c < CHATS; c++) chatIds.push(await store.createChat({ name: `chat${c}`, adminId: userIds[0], userIds }))

    /** @type {Map<string, { chatId: number, id: number }>} text -> where it was acknowledged */
    const acked = new Map()
    /** @type {Map<string, number>} username -> id, acknowledged */
    const ackedUsers = new Map()
    /** @type {Set<string>} texts and usernames reported LEVELKIT_COMMIT_UNKNOWN */
    const unknown = new Set()
    /** @type {Map<string, number>} how many times each was reported not committed (and sent again) */
    const notCommitted = new Map()
    /** @type {string[]} */
    const unexpected = []
    // (Properties: the loops below wait for them to change.)
    const run = { stopping: false, acks: 0 }

    /**
     * Run `op` until it is acknowledged; again when it reports that it did
     * not commit (an error other than LEVELKIT_COMMIT_UNKNOWN). A UNIQUE
     * error for the writer's own username means an attempt reported as not
     * committed did commit.
     * @param {string} name @param {() => Promise<any>} op
     */
    async function send (name, op) {
      for (let attempt = 0; attempt <= RESEND; attempt++) {
        try {
          const result = await op()
          run.acks++
          return result
        } catch (err) {
          const code = /** @type {any} */ (err).code
          if (code === 'LEVELKIT_COMMIT_UNKNOWN') {
            unknown.add(name)
            return undefined
          }
          if (code === 'LEVELKIT_BACKEND_UNAVAILABLE' || code === 'LEVELKIT_ABORTED') {
            notCommitted.set(name, (notCommitted.get(name) || 0) + 1)
            // Not sent again once the test is ending (a failed round must not wait out every resend).
            if (run.stopping) return undefined
            await sleep(100)
            continue
          }
          unexpected.push(`${name}: ${code} ${/** @type {Error} */ (err).message}`)
          return undefined
        }
      }
      unexpected.push(`${name}: still not committed after ${RESEND} attempts`)
    }

    /** @param {number} w */
    async function writer (w) {
      const chatId = chatIds[w % CHATS]
      for (let k = 0; !run.stopping; k++) {
        const text = `w${w}-m${k}`
        const id = await send(text, () => store.addChatMessage({ chatId, senderId: userIds[w], text }))
        if (id !== undefined) acked.set(text, { chatId, id })
        if (k % 10 === 9) {
          const username = `w${w}-u${k}`
          const userId = await send(username, () => store.createUser({ username, password: 'secret' }))
          if (userId !== undefined) ackedUsers.set(username, userId)
        }
      }
    }

    /** Wait until `count` more writes are acknowledged. @param {number} count @param {number} ms */
    async function progress (count, ms) {
      const target = run.acks + count
      const deadline = Date.now() + ms
      while (run.acks < target) {
        if (Date.now() > deadline) {
          await diagnose(cluster, t)
          return false
        }
        await sleep(20)
      }
      return true
    }

    const writers = Array.from({ length: WRITERS }, (_, w) => writer(w))
    try {
      for (let round = 1; round <= ROUNDS; round++) {
        t.ok(await progress(LOAD, 60000), `round ${round}: ${LOAD} writes acknowledged before the kill (${elapsed()})`)
        const primary = await cluster.waitForPrimary()
        const whole = round % 2 === 1
        const before = run.acks
        if (whole) {
          await arm(() => cluster.killNode(primary))
          t.comment(`${elapsed()}: round ${round}: killed ${primary.name} (Patroni and PostgreSQL), ${before} acknowledged so far`)
          const next = await cluster.waitForPrimary(60000)
          t.notEqual(next.name, primary.name, `round ${round}: the standby was promoted (${next.name}, ${elapsed()})`)
        } else {
          await arm(() => cluster.killPostgres(primary))
          t.comment(`${elapsed()}: round ${round}: killed ${primary.name}'s postmaster, ${before} acknowledged so far`)
        }
        t.ok(await progress(LOAD, 90000), `round ${round}: writes acknowledged again after the kill (${elapsed()})`)
        if (whole) {
          cluster.startNode(primary)
          await cluster.waitForSyncStandby(180000)
          t.comment(`${elapsed()}: round ${round}: ${primary.name} is the synchronous standby again`)
        } else {
          await cluster.waitForSyncStandby(180000)
        }
      }
      t.ok(await progress(LOAD, 60000), `writes acknowledged after the last round (${elapsed()})`)
    } finally {
      run.stopping = true
      await Promise.all(writers)
    }

    t.deepEqual(unexpected, [], 'no operation failed otherwise than as not committed or LEVELKIT_COMMIT_UNKNOWN')
    t.comment(`${run.acks} acknowledged; ${[...notCommitted.values()].reduce((a, b) => a + b, 0)} attempts reported not committed (sent again); ${unknown.size} reported LEVELKIT_COMMIT_UNKNOWN`)
    t.comment(`batches settled after a failed connection: ${settled.filter(s => s.committed === true).length} had committed, ${settled.filter(s => s.committed === false).length} had not (written again), ${settled.filter(s => s.committed === null).length} unknown`)

    // Everything read back through a database opened anew (open({ db })
    // leaves the level open: closed here, letting go of the table's lock).
    await db.close()
    await level.close()
    db = await open({ backend: 'postgres', connectionString: cluster.connectionString, table: 'chat' })
    const reader = await ChatStore.open(db, CHEAP)
    /** @type {Map<string, number>} */
    const seen = new Map()
    for (const chatId of chatIds) {
      const last = await reader.messages.lastSeq(chatId)
      const messages = /** @type {any[]} */ (await reader.getChatMessages(chatId, { from: 1, n: last + 1, allWhispers: true }))
      const ids = messages.map(message => message.id)
      t.deepEqual(ids, Array.from({ length: last }, (_, i) => i + 1), `chat ${chatId}: message ids 1..${last} without a gap`)
      for (const message of messages) seen.set(message.text, (seen.get(message.text) || 0) + 1)
      const lost = [...acked].filter(([, at]) => at.chatId === chatId).filter(([text, at]) => {
        const message = messages[at.id - 1]
        return !message || message.text !== text
      })
      t.deepEqual(lost.map(([text]) => text), [], `chat ${chatId}: every acknowledged message is there, with its id`)
    }
    const doubled = [...seen].filter(([, count]) => count > 1).map(([text]) => text)
    t.deepEqual(doubled, [], 'no message is there twice')
    const phantom = [...seen.keys()].filter(text => !acked.has(text) && !unknown.has(text))
    t.deepEqual(phantom, [], 'every message there was acknowledged, or reported LEVELKIT_COMMIT_UNKNOWN')
    const missingUsers = []
    for (const [username, id] of ackedUsers) {
      const user = await reader.getUser(username)
      if (!user || user.id !== id) missingUsers.push(username)
    }
    t.deepEqual(missingUsers, [], `every acknowledged user is there (${ackedUsers.size})`)
    const { ok, problems } = await reader.check()
    t.ok(ok, `check() is clean${ok ? '' : `: ${JSON.stringify(problems.slice(0, 5))}`}`)
  } finally {
    if (db) await db.close().catch(err => t.comment(`close: ${err.message}`))
    const ports = cluster.nodes.flatMap(node => [node.port, node.api])
    await cluster.stop()
    const open = []
    for (const port of ports) if (await listening(port)) open.push(port)
    t.deepEqual(open, [], `after stop(), nothing listens on the cluster's ports (${elapsed()})`)
  }
})

/**
 * What each server is doing, when the writes stall.
 * @param {import('../../testkit/patroni.js').FailoverCluster} cluster @param {any} t
 */
async function diagnose (cluster, t) {
  t.comment(`members: ${JSON.stringify(await cluster.members())}`)
  for (const host of cluster.hosts) {
    const client = new pg.Client({ host: host.host, port: host.port, user: 'postgres', database: 'postgres', connectionTimeoutMillis: 2000 })
    client.on('error', () => {})
    try {
      await client.connect()
      const { rows } = await client.query("SELECT pid, state, wait_event_type, wait_event, left(query, 120) AS query, now() - query_start AS running FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")
      const { rows: settings } = await client.query("SELECT pg_is_in_recovery() AS standby, current_setting('synchronous_standby_names') AS sync")
      t.comment(`${host.port}: ${JSON.stringify(settings[0])} ${JSON.stringify(rows)}`)
    } catch (err) {
      t.comment(`${host.port}: ${/** @type {Error} */ (err).message}`)
    } finally {
      // (Not awaited: pg's end() after a failed connect may never resolve.)
      client.end().catch(() => {})
    }
  }
}

/** @param {number} ms */
function sleep (ms) {
  return new Promise(resolve => setTimeout(resolve, ms))
}
