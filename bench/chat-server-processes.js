// The chat server as several processes on one PostgreSQL (issue 18): N
// levelkit-chat processes (server/bin/levelkit-chat.js --backend postgres,
// one table, shared mode) under the same send load, for each N of
// --processes, beside one levelkit-chat on LevelDB (--backend leveldb) in
// the same run as the baseline.
//
// Each cell of each run gets a fresh table (or LevelDB directory), filled
// by this process through levelkit (users, chats, a session per user; no
// messages) before the servers start. The load: autocannon, --connections
// keep-alive connections spread round-robin over the N servers, each
// request a random member of a random chat sending a message
// (POST /api/chats/:id/messages), for --duration seconds after --warmup
// seconds of the same. Cells take turns in an order that rotates per run.
//
// Checked after each cell, on the stopped servers' database: every message
// acknowledged (201 with its id) is there with its text, and each chat's
// ids run 1..N without gap. CPU: the servers' processes (/proc), the
// PostgreSQL server processes (those pg_stat_activity lists; Linux only,
// else not shown) and this process (the client), as cores busy.
//
// PostgreSQL: the server LEVELKIT_PG_URL names, else a throwaway cluster
// (levelkit-testkit/postgres: fsync, synchronous_commit and
// full_page_writes off, as LevelDB's default writes do not fsync either).
//
// Output: a table on stdout; under --out (default bench/out/, ignored by
// git) a folder chat-server-processes-<time>/ with results.csv (one row per
// run and cell) and summary.json.
//
// Usage: node bench/chat-server-processes.js [--processes 1,2,4] [--runs 3]
//   [--duration 5] [--warmup 1] [--connections 32] [--users 400]
//   [--chats 100] [--members 10] [--seed 1] [--no-leveldb]
//   [--out bench/out] [--db-dir <tmpdir>]
// To profile the servers: BENCH_SERVER_NODE_ARGS='--cpu-prof' (node options
// of the levelkit-chat processes).

import os from 'node:os'
import fs from 'node:fs'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import autocannon from 'autocannon'
import { open } from 'levelkit'
import { ChatStore } from 'levelkit/chat'
import { postgres } from 'levelkit-testkit/postgres'
import { parseCli, optionOf, failWith, startRun, printMachine, printTable, printProblems, writeCsv, finishRun } from './lib/seeds-common.js'
import { median, fmt, quantile, parseCount } from './lib/stats.js'
import { makeWorkload } from './lib/chat-workload-worker.js'
import { requestFeed } from './lib/chat-server-load.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const BIN = path.join(here, '..', 'server', 'bin', 'levelkit-chat.js')
const START_LIMIT = 30000

const USAGE = `Usage: node bench/chat-server-processes.js [options]
  --processes a,b   levelkit-chat processes on one PostgreSQL table (default 1,2,4)
  --runs K          runs of each cell, cells in turn (default 3)
  --duration S      seconds of timed load per cell (default 5)
  --warmup S        seconds of the same load before, not timed (default 1)
  --connections N   keep-alive connections, round-robin over the servers (default 32)
  --users N         users, each with a session (default 400)
  --chats N         chats of --members members (default 100)
  --members N       members per chat (default 10)
  --seed N          seed of the data set and the requests (default 1)
  --no-leveldb      leave out the LevelDB baseline
  --out DIR         output folder (default bench/out)
  --db-dir DIR      where the LevelDB directories go (default the OS temp dir)`

/** @param {string} message @returns {never} */
const fail = message => failWith('chat-server-processes', USAGE, message)
const args = parseCli('chat-server-processes', USAGE, {
  processes: { type: 'string', default: '1,2,4' },
  runs: { type: 'string', default: '3' },
  duration: { type: 'string', default: '5' },
  warmup: { type: 'string', default: '1' },
  connections: { type: 'string', default: '32' },
  users: { type: 'string', default: '400' },
  chats: { type: 'string', default: '100' },
  members: { type: 'string', default: '10' },
  seed: { type: 'string', default: '1' },
  'no-leveldb': { type: 'boolean', default: false },
  out: { type: 'string', default: path.join(here, 'out') },
  'db-dir': { type: 'string', default: os.tmpdir() }
})
/** @template T @param {() => T} parse @returns {T} */
const option = parse => optionOf('chat-server-processes', USAGE, parse)
/** @param {string} text @param {string} name */
const seconds = (text, name) => {
  const value = Number(text)
  if (!(value >= 0) || !Number.isFinite(value) || (value === 0 && name === 'duration')) fail(`--${name} is a positive number of seconds`)
  return value
}
const processes = option(() => args.processes.split(',').map((/** @type {string} */ p) => parseCount(p)))
const runs = option(() => parseCount(args.runs))
const duration = seconds(args.duration, 'duration')
const warmup = seconds(args.warmup, 'warmup')
const connections = option(() => parseCount(args.connections))
const sizes = {
  users: option(() => parseCount(args.users)),
  chats: option(() => parseCount(args.chats)),
  members: option(() => parseCount(args.members))
}
if (sizes.members < 2 || sizes.members > 30) fail('--members is 2..30 (ChatStore\'s default maxMembers is 30)')
if (sizes.members > sizes.users) fail('--members cannot exceed --users')
const seed = option(() => parseCount(args.seed))
for (const p of processes) if (p > connections) fail(`--connections ${connections} leaves some of ${p} servers without a connection`)
fs.mkdirSync(args['db-dir'], { recursive: true })

/** @typedef {{ key: string, backend: 'postgres' | 'leveldb', processes: number, label: string }} Cell */
/** @type {Cell[]} */
const cells = [
  ...processes.map(p => ({ key: `pg-${p}`, backend: /** @type {const} */ ('postgres'), processes: p, label: `PostgreSQL ×${p}` })),
  ...(args['no-leveldb'] ? [] : [{ key: 'leveldb-1', backend: /** @type {const} */ ('leveldb'), processes: 1, label: 'LevelDB ×1' }])
]

const server = await postgres()
const admin = new pg.Pool({ connectionString: server.connectionString, max: 2 })
admin.on('error', () => {})
const pgVersion = (await admin.query('SHOW server_version')).rows[0].server_version
const run0 = startRun('chat-server-processes', args.out, ['fastify', 'autocannon', 'pg', 'classic-level'])
console.log(`chat-server-processes: levelkit-chat ×N on one PostgreSQL ${pgVersion} table, and ×1 on LevelDB, under send-message load`)
console.log(`  data: ${fmt(sizes.users)} users with a session each, ${fmt(sizes.chats)} chats of ${sizes.members} members; cells: ${cells.map(c => c.label).join(', ')}`)
console.log(`  load: autocannon, ${connections} keep-alive connections round-robin over the servers, POST /api/chats/:id/messages as a random member of a random chat, ${duration} s after ${warmup} s of warm-up, ${runs} run(s), cells in turn`)
printMachine(run0, ['fastify', 'autocannon', 'pg', 'classic-level'])

const work = makeWorkload({ ...sizes, messages: 0, seed, pairChats: 0, run: 1, n: {} })
const tokens = Array.from({ length: sizes.users }, () => randomBytes(16).toString('hex'))
const feed = requestFeed('send', { tokens, members: work.members, chats: sizes.chats }, seed * 1000)

/** @type {any[]} */
const rows = []
/** @type {string[]} */
const problems = []
try {
  for (let r = 1; r <= runs; r++) {
    const turn = cells.map((_, i) => cells[(i + r - 1) % cells.length])
    for (const cell of turn) {
      const row = await measureCell(cell, r)
      rows.push(row)
      if (row.errors > 0 || row.non2xx > 0) problems.push(`${cell.label} run ${r}: ${row.errors} errors, ${row.non2xx} non-2xx (${JSON.stringify(row.statusCodes)})`)
      if (row.check.problems.length > 0) problems.push(...row.check.problems.map((/** @type {string} */ p) => `${cell.label} run ${r}: ${p}`))
      console.log(`  run ${r}, ${cell.label}: ${fmt(row.perSec)} messages/s, p50 ${fmt(row.p50, 1)} ms, p99 ${fmt(row.p99, 1)} ms; ${fmt(row.check.acknowledged)} acknowledged, ${row.check.problems.length === 0 ? 'all there, ids gap-free' : 'CHECK FAILED'}`)
    }
  }
} finally {
  await admin.end()
  await server.stop()
}
report()

/**
 * A fresh database for the cell, filled here (ChatStore, cheap password
 * hashes: no login is measured), then closed for the servers to open.
 * @param {Cell} cell @param {number} r
 */
async function fill (cell, r) {
  const table = `chat_processes_${process.pid}_${cell.key.replace('-', '_')}_${r}`
  const location = path.join(args['db-dir'], `levelkit-chat-processes-${process.pid}-${cell.key}-${r}`)
  const options = cell.backend === 'postgres'
    ? { backend: 'postgres', connectionString: server.connectionString, table, shared: true }
    : { backend: 'leveldb', location }
  const db = await open(/** @type {any} */ (options))
  const store = await ChatStore.open(db, { passwordCost: { scryptN: 2, pbkdf2Iterations: 1000 } })
  for (const user of work.users) await store.createUser(user)
  for (const chat of work.chats) await store.createChat(chat)
  const expiry = Date.now() + 24 * 3600 * 1000
  await Promise.all(tokens.map((token, i) => store.setUserSession({ sessionId: token, userId: i + 1, expiry })))
  await db.close()
  return { options, table, location }
}

/**
 * Start one levelkit-chat and resolve with its URL once it listens.
 * @param {string[]} flags
 * @returns {Promise<{ url: string, child: import('node:child_process').ChildProcess }>}
 */
function startBin (flags) {
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS || '').split(' ').filter(Boolean)
  const child = spawn(process.execPath, [...nodeArgs, BIN, '--port', '0', ...flags], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { child.kill(); reject(new Error(`levelkit-chat did not listen within ${START_LIMIT / 1000} s: ${output}`)) }, START_LIMIT)
    const onData = (/** @type {Buffer} */ chunk) => {
      output += chunk
      const match = /levelkit-chat listening on (http:\/\/\S+)/.exec(output)
      if (match) {
        clearTimeout(timer)
        child.stdout?.off('data', onData)
        child.stdout?.resume()
        resolve({ url: match[1], child })
      }
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', chunk => { output += chunk })
    child.on('exit', code => { clearTimeout(timer); reject(new Error(`levelkit-chat exited with ${code} before listening: ${output.trim()}`)) })
  })
}

/** Stop a server with SIGTERM (it closes its database) and wait for it. @param {import('node:child_process').ChildProcess} child */
function stopBin (child) {
  if (child.exitCode !== null) return Promise.resolve()
  return new Promise(resolve => {
    child.once('exit', resolve)
    child.kill('SIGTERM')
  })
}

/** CPU time of a process so far, in ms (Linux /proc; null elsewhere or gone). @param {number} pid */
function cpuMsOf (pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // utime and stime: fields 14 and 15 of stat, 12 and 13 after the name.
    return (Number(fields[11]) + Number(fields[12])) * 1000 / 100
  } catch {
    return null
  }
}

/** Transactions PostgreSQL has committed or rolled back in this database so far. */
async function pgXacts () {
  const { rows } = await admin.query('SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()')
  return Number(rows[0].n)
}

/** CPU ms of each PostgreSQL server process now, by pid. */
async function pgCpu () {
  const { rows } = await admin.query('SELECT pid FROM pg_stat_activity')
  return new Map(rows.map(row => [row.pid, cpuMsOf(row.pid)]))
}

/** @param {Map<number, number | null>} before @param {Map<number, number | null>} after */
function pgCpuDelta (before, after) {
  let total = 0
  for (const [pid, ms] of after) {
    if (ms === null) return null
    total += ms - (before.get(pid) ?? 0)
  }
  return total
}

/**
 * Drive the feed at the servers: `connections` connections round-robin
 * over `urls`; the acknowledged messages go into `acks`.
 * @param {string[]} urls @param {number} seconds @param {Map<number, Map<number, string>>} acks
 */
async function drive (urls, seconds, acks) {
  let next = 0
  /** @type {number[]} */
  const latencies = []
  const instance = autocannon({
    url: urls,
    connections,
    pipelining: 1,
    timeout: 10,
    duration: seconds,
    requests: [{
      setupRequest: (/** @type {any} */ request) => {
        const r = feed[next++ % feed.length]
        return { ...request, method: r.method, path: r.path, headers: { ...r.headers }, body: r.body }
      },
      onResponse: (/** @type {number} */ status, /** @type {string} */ body) => {
        if (status !== 201) return
        const message = JSON.parse(body)
        let chat = acks.get(message.chatId)
        if (chat === undefined) acks.set(message.chatId, chat = new Map())
        chat.set(message.id, message.text)
      }
    }]
  })
  instance.on('response', (/** @type {any} */ client, /** @type {number} */ status, /** @type {number} */ bytes, /** @type {number} */ ms) => {
    if (status === 201) latencies.push(ms)
  })
  const result = await instance
  /** @type {Record<string, number>} */
  const statusCodes = {}
  for (const [code, { count }] of Object.entries(result.statusCodeStats || {})) statusCodes[code] = Number(count)
  return { requests: result.requests.total, seconds: result.duration, latencies, errors: result.errors, non2xx: result.non2xx, statusCodes }
}

/**
 * Every acknowledged message is in its chat with its text, and each chat's
 * ids run 1..last without gap (read on the closed servers' database).
 * @param {any} options @param {Map<number, Map<number, string>>} acks
 */
async function check (options, acks) {
  const db = await open(options)
  const store = await ChatStore.open(db)
  /** @type {string[]} */
  const problems = []
  let acknowledged = 0
  let stored = 0
  try {
    for (let chatId = 1; chatId <= sizes.chats; chatId++) {
      const messages = await store.getChatMessages(chatId, { from: 1, n: 1e9, allWhispers: true })
      if (messages === null) { problems.push(`chat ${chatId} is missing`); continue }
      stored += messages.length
      messages.forEach((/** @type {any} */ m, i) => {
        if (m.id !== i + 1 && problems.length < 10) problems.push(`chat ${chatId}: id ${m.id} at position ${i + 1} (a gap)`)
      })
      const byId = new Map(messages.map((/** @type {any} */ m) => [m.id, m.text]))
      for (const [id, text] of acks.get(chatId) ?? []) {
        acknowledged++
        if (byId.get(id) !== text && problems.length < 10) problems.push(`chat ${chatId}: acknowledged message ${id} is ${byId.has(id) ? 'different' : 'missing'}`)
      }
    }
  } finally {
    await db.close()
  }
  return { acknowledged, stored, problems }
}

/** @param {Cell} cell @param {number} r */
async function measureCell (cell, r) {
  const { options, table, location } = await fill(cell, r)
  const flags = cell.backend === 'postgres'
    ? ['--backend', 'postgres', '--connection-string', server.connectionString, '--table', table]
    : ['--backend', 'leveldb', '--data', location]
  /** @type {Array<{ url: string, child: import('node:child_process').ChildProcess }>} */
  const bins = []
  /** @type {Map<number, Map<number, string>>} */
  const acks = new Map()
  try {
    for (let i = 0; i < cell.processes; i++) bins.push(await startBin(flags))
    const urls = bins.map(b => b.url)
    if (warmup > 0) await drive(urls, warmup, acks)
    const serversBefore = bins.map(b => cpuMsOf(/** @type {number} */ (b.child.pid)))
    const pgBefore = await pgCpu()
    const xactsBefore = await pgXacts()
    const clientBefore = process.cpuUsage()
    const result = await drive(urls, duration, acks)
    const client = process.cpuUsage(clientBefore)
    const pgMs = cell.backend === 'postgres' ? pgCpuDelta(pgBefore, await pgCpu()) : null
    const serversAfter = bins.map(b => cpuMsOf(/** @type {number} */ (b.child.pid)))
    const serverMs = serversBefore.some(ms => ms === null) ? null : serversAfter.reduce((sum, ms, i) => sum + /** @type {number} */ (ms) - /** @type {number} */ (serversBefore[i]), 0)
    await Promise.all(bins.map(b => stopBin(b.child)))
    // Read once the servers stopped: backends report to pg_stat_database
    // at most every second, and when they exit. Includes the warm-up's
    // last second and the shutdown: about, not exactly.
    const xacts = cell.backend === 'postgres' ? await pgXacts() - xactsBefore : null
    const checked = await check(options, acks)
    return {
      cell: cell.key,
      run: r,
      requests: result.requests,
      seconds: result.seconds,
      acknowledged: result.latencies.length,
      perSec: result.latencies.length / result.seconds,
      p50: quantile(result.latencies, 0.5),
      p99: quantile(result.latencies, 0.99),
      errors: result.errors,
      non2xx: result.non2xx,
      statusCodes: result.statusCodes,
      serverCores: serverMs === null ? null : serverMs / 1000 / result.seconds,
      pgCores: pgMs === null ? null : pgMs / 1000 / result.seconds,
      pgXactsPerMessage: xacts === null ? null : xacts / Math.max(1, result.latencies.length),
      clientCores: (client.user + client.system) / 1e6 / result.seconds,
      check: checked
    }
  } finally {
    await Promise.all(bins.map(b => stopBin(b.child)))
    if (cell.backend === 'postgres') await admin.query(`DROP TABLE IF EXISTS "${table}"`).catch(() => {})
    else fs.rmSync(location, { recursive: true, force: true })
  }
}

function report () {
  const mine = (/** @type {string} */ key) => rows.filter(row => row.cell === key)
  /** Per run, the ratio of two cells' messages/s; the median over runs. @param {string} a @param {string} b */
  const ratio = (a, b) => {
    const [ra, rb] = [mine(a), mine(b)]
    if (ra.length === 0 || rb.length === 0) return null
    return median(ra.map(row => row.perSec / rb.find(other => other.run === row.run).perSec))
  }
  const cores = (/** @type {Array<number | null>} */ values) => values.some(v => v === null) ? null : median(/** @type {number[]} */ (values))
  const base = `pg-${processes[0]}`
  const summary = cells.map(cell => {
    const cellRows = mine(cell.key)
    return {
      cell: cell.key,
      label: cell.label,
      backend: cell.backend,
      processes: cell.processes,
      messagesPerSec: median(cellRows.map(row => row.perSec)),
      p50: median(cellRows.map(row => row.p50)),
      p99: median(cellRows.map(row => row.p99)),
      overFirst: cell.backend === 'postgres' ? ratio(cell.key, base) : null,
      overLevelDB: cells.some(c => c.key === 'leveldb-1') ? ratio(cell.key, 'leveldb-1') : null,
      serverCores: cores(cellRows.map(row => row.serverCores)),
      pgCores: cores(cellRows.map(row => row.pgCores)),
      pgXactsPerMessage: cores(cellRows.map(row => row.pgXactsPerMessage)),
      clientCores: cores(cellRows.map(row => row.clientCores)),
      acknowledged: cellRows.reduce((sum, row) => sum + row.check.acknowledged, 0),
      checked: cellRows.every(row => row.check.problems.length === 0),
      errors: cellRows.reduce((sum, row) => sum + row.errors + row.non2xx, 0)
    }
  })
  const cx = (/** @type {number | null} */ v) => v === null ? 'n/a' : v.toFixed(2)
  console.log()
  printTable([
    ['servers', 'messages/s', 'p50 ms', 'p99 ms', `×${processes[0]} = 1`, 'vs LevelDB', 'cores: node / PG / client', 'PG xacts/msg', 'acknowledged', 'check', 'errors'],
    ...summary.map(s => [s.label, fmt(s.messagesPerSec), fmt(s.p50, 1), fmt(s.p99, 1), s.overFirst === null ? '' : `${s.overFirst.toFixed(2)}×`, s.overLevelDB === null ? '' : `${s.overLevelDB.toFixed(2)}×`,
      `${cx(s.serverCores)} / ${cx(s.pgCores)} / ${cx(s.clientCores)}`, s.pgXactsPerMessage === null ? '' : `≈${s.pgXactsPerMessage.toFixed(1)}`, fmt(s.acknowledged), s.checked ? 'ok' : 'FAILED', String(s.errors)])
  ], 1)
  console.log(`  Medians over ${runs} run(s) of ${duration} s; ratios per run, then the median. Cores: CPU time per second of the servers' processes, of PostgreSQL's, and of this process (autocannon), of ${run0.machine.cores}.`)
  console.log('  PG xacts/msg: PostgreSQL transactions (each autocommit statement is one) per message acknowledged, from pg_stat_database.')
  console.log('  check: every acknowledged message is in its chat with its text, and every chat\'s ids run 1..N without gap.')
  printProblems(problems)
  writeCsv(path.join(run0.outDir, 'results.csv'),
    ['cell', 'run', 'requests', 'seconds', 'messages_per_sec', 'p50_ms', 'p99_ms', 'errors', 'non2xx', 'server_cores', 'pg_cores', 'client_cores', 'pg_xacts_per_message', 'acknowledged', 'stored', 'check_problems'],
    rows.map(r => [r.cell, r.run, r.requests, r.seconds, r.perSec, r.p50, r.p99, r.errors, r.non2xx, r.serverCores, r.pgCores, r.clientCores, r.pgXactsPerMessage, r.check.acknowledged, r.check.stored, r.check.problems.length]))
  finishRun(run0.outDir, { name: 'chat-server-processes', ...run0, loadAfter: os.loadavg() }, {
    options: { processes, runs, duration, warmup, connections, ...sizes, seed, leveldb: !args['no-leveldb'] },
    postgres: { version: pgVersion, throwaway: server.throwaway },
    cells,
    summary,
    runs: rows,
    problems
  }, ['results.csv'])
  if (problems.length > 0) process.exitCode = 1
}
