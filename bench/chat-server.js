// The chat service under load (issue 14): the server of server/ (buildApp)
// over levelkit's ChatStore on LevelDB, the same server code over a SQLite
// store with the same methods (bench/lib/sqlite-chat-store.js: better-sqlite3,
// WAL, synchronous=NORMAL), the same server code over Maps in memory
// (bench/lib/map-chat-store.js: no storage at all, so what is left is the
// server's own cost: fastify, schemas, hooks, auth, JSON), and a no-op app on
// the same fastify answering the same routes with a constant (the ceiling of
// the HTTP stack on this machine). Each server runs in a child process of its own, filled with the
// data set of bench/chat-workload.js (users, chats of 20 members, messages),
// with a session per user; this process is the client.
//
// 1. HTTP, with autocannon (programmatic, keep-alive): the seed's three
//    operations — get chat list (GET /api/chats), send message (POST
//    /api/chats/:id/messages), get messages (GET /api/chats/:id/messages?n=50)
//    — each request as a random user (or a random member of a random chat)
//    with a bearer token, the same request sequence on every server, at 1
//    connection and at 64. Each measurement runs --runs times, the servers
//    taking turns in an order that rotates per run. Reported: req/s, p50/p99
//    latency, errors, non-2xx, the server's CPU time per request; ratios
//    levelkit/SQLite and levelkit/no-op; the goals at 64 connections.
// 2. WebSocket fan-out (levelkit and SQLite): rooms of 30 members, each a
//    `ws` client subscribed to its room; senders at a fixed rate per room;
//    messages delivered per second and send -> receive p50/p99 (skipped, and
//    said so, if the server has no GET /api/ws).
// 3. The seed's own setup with the seed's own tool, when Debian's siege is
//    installed: 1 user, 5000 requests, 3 runs, the three operations, on every
//    server; a table beside the seed's figures.
//
// Output: a summary on stdout; under --out (default bench/out/, ignored by
// git) a folder chat-server-<time>/ with results.csv (one row per HTTP
// measurement), siege.csv, summary.json, chat-server.svg (req/s per
// operation and connection count) and chat-server-siege.svg.
//
// Usage: node bench/chat-server.js [--runs 3] [--duration 5] [--warmup 1]
//   [--connections 1,64] [--ops chatList,send,messages]
//   [--targets levelkit,sqlite,noop] [--users 10000] [--chats 2000]
//   [--members 20] [--messages 100000] [--seed 1] [--scrypt-n 2]
//   [--ws-rooms 10] [--ws-rate 10] [--ws-duration 10] [--no-ws]
//   [--siege-reps 5000] [--siege-runs 3] [--no-siege] [--out bench/out]
//   [--db-dir <tmpdir>]
// To profile the servers: BENCH_SERVER_NODE_ARGS='--cpu-prof' (node options
// of the server processes).

import os from 'node:os'
import fs from 'node:fs'
import path from 'node:path'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { parseCli, optionOf, failWith, startRun, printMachine, printTable, writeCsv, finishRun } from './lib/seeds-common.js'
import { median, min, max, fmt, mb, parseCount } from './lib/stats.js'
import { barChartSvg } from './lib/svg-plot.js'
import { makeWorkload } from './lib/chat-workload-worker.js'
import { startServer } from './lib/chat-server-process.js'
import { OPERATIONS, requestFeed, runLoad, siegeVersion, writeSiegeRc, runSiege } from './lib/chat-server-load.js'
import { fanOut, probeWebSocket } from './lib/chat-server-fanout.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const TARGETS = ['levelkit', 'sqlite', 'maps', 'noop']
const TARGET_LABELS = /** @type {Record<string, string>} */ ({ levelkit: 'levelkit (LevelDB)', sqlite: 'SQLite (better-sqlite3)', maps: 'the server over Maps (no storage)', noop: 'no-op route' })
// Targets without storage: no WebSocket fan-out, no size on disk.
const STORELESS = ['maps', 'noop']
// The issue's goals at 64 connections: levelkit against SQLite, and the share
// of the no-op ceiling, per operation.
const GOALS = /** @type {Record<string, { sqlite: number, noop: number }>} */ ({
  chatList: { sqlite: 1.0, noop: 0.7 },
  send: { sqlite: 1.0, noop: 0.5 },
  messages: { sqlite: 1.0, noop: 0.3 }
})
// Seed 000's siege table: one user, 5000 requests, 3 runs (transactions/s).
const SEED_SIEGE = /** @type {Record<string, { leveldb: number, sql: number }>} */ ({
  chatList: { leveldb: 1033, sql: 397 },
  send: { leveldb: 950, sql: 217 },
  messages: { leveldb: 12.81, sql: 13.05 }
})
const GOAL_CONNECTIONS = 64

const USAGE = `Usage: node bench/chat-server.js [options]
  --runs K            runs of each HTTP measurement, the servers taking turns (default 3)
  --duration S        seconds per HTTP measurement (default 5)
  --warmup S          seconds of the same requests before each, not counted (default 1)
  --connections a,b   keep-alive connections (default 1,64)
  --ops a,b           operations: ${OPERATIONS.map(op => op.key).join(', ')} (default all)
  --targets a,b       servers: ${TARGETS.join(', ')} (default all)
  --users N           users, each with a session (default 10000)
  --chats N           chats of --members members (default 2000)
  --members N         members per chat (default 20)
  --messages N        messages spread over the chats (default 100000)
  --seed N            seed of the data set and the request sequences (default 1)
  --scrypt-n N        scrypt cost of the users' password hashes (default 2: no login is measured)
  --ws-rooms N        WebSocket fan-out: rooms of 30 members (default 10)
  --ws-rate N         messages per second sent in each room (default 10)
  --ws-duration S     seconds of sending (default 10)
  --no-ws             skip the WebSocket fan-out
  --siege-reps N      siege: requests of its one user (default 5000)
  --siege-runs K      siege: runs per operation and server (default 3)
  --no-siege          skip siege (skipped anyway when it is not installed)
  --out DIR           output folder (default bench/out)
  --db-dir DIR        where the databases go (default the OS temp dir)`

/** @param {string} message @returns {never} */
const fail = message => failWith('chat-server', USAGE, message)

const args = parseCli('chat-server', USAGE, {
  runs: { type: 'string', default: '3' },
  duration: { type: 'string', default: '5' },
  warmup: { type: 'string', default: '1' },
  connections: { type: 'string', default: '1,64' },
  ops: { type: 'string' },
  targets: { type: 'string' },
  users: { type: 'string', default: '10000' },
  chats: { type: 'string', default: '2000' },
  members: { type: 'string', default: '20' },
  messages: { type: 'string', default: '100000' },
  seed: { type: 'string', default: '1' },
  'scrypt-n': { type: 'string', default: '2' },
  'ws-rooms': { type: 'string', default: '10' },
  'ws-rate': { type: 'string', default: '10' },
  'ws-duration': { type: 'string', default: '10' },
  'no-ws': { type: 'boolean', default: false },
  'siege-reps': { type: 'string', default: '5000' },
  'siege-runs': { type: 'string', default: '3' },
  'no-siege': { type: 'boolean', default: false },
  out: { type: 'string', default: path.join(here, 'out') },
  'db-dir': { type: 'string', default: os.tmpdir() }
})

/** @template T @param {() => T} parse @returns {T} */
const option = parse => optionOf('chat-server', USAGE, parse)
/** A positive number of seconds. @param {string} text @param {string} name */
const seconds = (text, name) => {
  const value = Number(text)
  if (!(value > 0) || !Number.isFinite(value)) fail(`--${name} is a positive number of seconds`)
  return value
}
/** A list of names, each one of `known`. @param {string | undefined} text @param {string[]} known @param {string} name */
const names = (text, known, name) => {
  if (text === undefined) return known
  const list = text.split(',').map(s => s.trim()).filter(Boolean)
  for (const item of list) if (!known.includes(item)) fail(`Unknown ${name} ${JSON.stringify(item)}`)
  if (list.length === 0) fail(`--${name}s needs at least one`)
  return list
}

const runs = option(() => parseCount(args.runs))
const duration = seconds(args.duration, 'duration')
const warmup = args.warmup === '0' ? 0 : seconds(args.warmup, 'warmup')
const connections = option(() => args.connections.split(',').map((/** @type {string} */ c) => parseCount(c)))
const ops = names(args.ops, OPERATIONS.map(op => op.key), 'op')
const targets = names(args.targets, TARGETS, 'target')
const sizes = {
  users: option(() => parseCount(args.users)),
  chats: option(() => parseCount(args.chats)),
  members: option(() => parseCount(args.members)),
  messages: args.messages === '0' ? 0 : option(() => parseCount(args.messages))
}
if (sizes.members < 2 || sizes.members > 30) fail('--members is 2..30 (ChatStore\'s default maxMembers is 30)')
if (sizes.members > sizes.users) fail('--members cannot exceed --users')
const seed = option(() => parseCount(args.seed))
const scryptN = option(() => parseCount(args['scrypt-n']))
if (scryptN < 2 || (scryptN & (scryptN - 1)) !== 0) fail('--scrypt-n is a power of 2, at least 2')
const ws = {
  rooms: option(() => parseCount(args['ws-rooms'])),
  rate: seconds(args['ws-rate'], 'ws-rate'),
  duration: seconds(args['ws-duration'], 'ws-duration'),
  members: 30
}
const wsTargets = args['no-ws'] ? [] : targets.filter(t => !STORELESS.includes(t))
if (wsTargets.length > 0 && ws.rooms * ws.members > sizes.users) fail(`--ws-rooms ${ws.rooms} needs ${ws.rooms * ws.members} users (rooms of ${ws.members}): raise --users or lower --ws-rooms`)
const siegeReps = option(() => parseCount(args['siege-reps']))
const siegeRuns = option(() => parseCount(args['siege-runs']))
fs.mkdirSync(args['db-dir'], { recursive: true })

const run = startRun('chat-server', args.out, ['fastify', 'autocannon', 'ws', 'classic-level', 'better-sqlite3'])
const siege = args['no-siege'] ? null : siegeVersion()
console.log(`chat-server: the chat server over levelkit (LevelDB) and over SQLite, and a no-op route, under HTTP load${wsTargets.length > 0 ? ', WebSocket fan-out' : ''}${siege ? ' and siege' : ''}`)
console.log(`  data: ${fmt(sizes.users)} users with a session each, ${fmt(sizes.chats)} chats of ${sizes.members} members, ${fmt(sizes.messages)} messages; servers: ${targets.join(', ')}`)
console.log(`  HTTP: autocannon, ${connections.join(' and ')} keep-alive connection(s), ${duration} s per measurement after ${warmup} s of warm-up, ${runs} run(s), servers in turn`)
printMachine(run, ['fastify', 'autocannon', 'classic-level', 'better-sqlite3'])

// The data set, as the servers build it (the same seed), for the requests.
const work = makeWorkload({ ...sizes, seed, pairChats: 0, run: 1, n: {} })
const tokens = Array.from({ length: sizes.users }, () => randomBytes(16).toString('hex'))
const data = { tokens, members: work.members, chats: sizes.chats }
const feeds = Object.fromEntries(ops.map((op, i) => [op, requestFeed(op, data, seed * 1000 + i)]))

/** @type {Record<string, import('./lib/chat-server-process.js').ServerHandle>} */
const servers = {}
/** @type {string[]} */
const problems = []
/** Why the fan-out was not measured, if it was not. @type {string | null} */
let fanoutSkipped = null
try {
  for (const target of targets) {
    const started = Date.now()
    servers[target] = await startServer(/** @type {any} */ ({ target, dbDir: args['db-dir'], ...sizes, seed, tokens, scryptN }))
    const p = servers[target].populate
    console.log(`  ${TARGET_LABELS[target]} listening at ${servers[target].url} after ${fmt((Date.now() - started) / 1000, 1)} s${p ? ` (filled: users ${fmt(p.users / 1000, 1)} s, chats ${fmt(p.chats / 1000, 1)} s, messages ${fmt(p.messages / 1000, 1)} s, sessions ${fmt(p.sessions / 1000, 1)} s)` : ''}`)
  }
  await checkAnswers()
  const http = await measureHttp()
  const fanout = await measureFanOut()
  const siegeResults = siege ? await measureSiege() : null
  /** @type {Record<string, any>} */
  const stopped = {}
  for (const target of targets) stopped[target] = await servers[target].stop()
  report(http, fanout, siegeResults, stopped)
} catch (err) {
  for (const server of Object.values(servers)) await server.stop().catch(() => {})
  throw err
}

/**
 * One request of each operation on each server, before any measurement:
 * the answers must be what the operation answers (a failing request is fast,
 * and would make a fast benchmark).
 */
async function checkAnswers () {
  for (const target of targets) {
    for (const op of ops) {
      const request = feeds[op][0]
      const response = await fetch(servers[target].url + request.path, { method: request.method, headers: request.headers, body: request.body })
      const body = await response.json().catch(() => null)
      const ok = target === 'noop'
        ? response.ok
        : op === 'send'
          ? response.status === 201 && Number.isSafeInteger(body?.id)
          : response.status === 200 && Array.isArray(body) && (op !== 'messages' || (body.length > 0 && body.length <= 50))
      if (!ok) throw new Error(`${target}: ${request.method} ${request.path} answered ${response.status} ${JSON.stringify(body).slice(0, 300)}`)
    }
  }
}

async function measureHttp () {
  /** @type {any[]} */
  const rows = []
  const order = ['chatList', 'messages', 'send'].filter(op => ops.includes(op))
  for (const op of order) {
    for (const c of connections) {
      for (let r = 1; r <= runs; r++) {
        const turn = targets.map((_, i) => targets[(i + r - 1) % targets.length])
        for (const target of turn) {
          const server = servers[target]
          let cpuBefore = 0
          let clientBefore = process.cpuUsage()
          const timed = async () => {
            cpuBefore = await server.cpuMs()
            clientBefore = process.cpuUsage()
          }
          const result = await runLoad({ url: server.url, feed: feeds[op], connections: c, duration, warmup, timed })
          const client = process.cpuUsage(clientBefore)
          const serverCpuMs = await server.cpuMs() - cpuBefore
          // This process is the client: its CPU time says when the client,
          // not the server, sets the pace (one core of two).
          rows.push({ op, connections: c, run: r, target, ...result, serverCpuMs, clientCpuMs: (client.user + client.system) / 1000 })
          if (result.errors > 0 || result.non2xx > 0) problems.push(`${target} ${op} ×${c} run ${r}: ${result.errors} errors, ${result.non2xx} non-2xx (${JSON.stringify(result.statusCodes)})`)
        }
      }
      const cells = targets.map(target => {
        const mine = rows.filter(row => row.op === op && row.connections === c && row.target === target)
        return `${target} ${fmt(median(mine.map(row => row.reqPerSec)))} req/s`
      })
      console.log(`  ${op} ×${c}: ${cells.join(', ')}`)
    }
  }
  return rows
}

/**
 * Rooms of 30 for the fan-out, made through the server's own API: room r
 * holds users 30r + 1 ... 30r + 30, its first the admin.
 * @param {import('./lib/chat-server-process.js').ServerHandle} server @param {number} round
 */
async function makeRooms (server, round) {
  const rooms = []
  for (let r = 0; r < ws.rooms; r++) {
    const ids = Array.from({ length: ws.members }, (_, i) => r * ws.members + i + 1)
    const response = await fetch(`${server.url}/api/chats`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens[ids[0] - 1]}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `room ${r + 1}, round ${round}`, members: ids.slice(1).map(id => work.users[id - 1].username) })
    })
    const chat = await response.json()
    if (response.status !== 201) throw new Error(`${server.target}: POST /api/chats answered ${response.status} ${JSON.stringify(chat)}`)
    rooms.push({ chatId: chat.id, members: ids.map(userId => ({ userId, token: tokens[userId - 1] })) })
  }
  return rooms
}

async function measureFanOut () {
  /** @type {any[]} */
  const rows = []
  if (wsTargets.length === 0) return rows
  console.log()
  console.log(`  WebSocket fan-out: ${ws.rooms} rooms of ${ws.members} subscribed members, ${ws.rate} messages/s sent in each room for ${ws.duration} s, ${runs} run(s)`)
  for (const target of wsTargets) {
    const missing = await probeWebSocket(servers[target].url, tokens[0])
    if (missing !== null) {
      fanoutSkipped = `${target}: ${missing}`
      console.log(`  skipped: the ${target} server has no live WebSocket (${missing})`)
      return rows
    }
  }
  for (let r = 1; r <= runs; r++) {
    const turn = wsTargets.map((_, i) => wsTargets[(i + r - 1) % wsTargets.length])
    for (const target of turn) {
      const server = servers[target]
      const rooms = await makeRooms(server, r)
      const cpuBefore = await server.cpuMs()
      const result = await fanOut({ url: server.url, rooms, rate: ws.rate, duration: ws.duration })
      const serverCpuMs = await server.cpuMs() - cpuBefore
      rows.push({ run: r, target, ...result, serverCpuMs })
      if (result.missing > 0 || result.gaps > 0 || result.duplicates > 0 || Object.keys(result.errors).length > 0) {
        problems.push(`${target} fan-out run ${r}: ${result.missing} deliveries missing, ${result.gaps} gaps, ${result.duplicates} duplicates, errors ${JSON.stringify(result.errors)}`)
      }
      console.log(`  ${target} run ${r}: ${fmt(result.deliveredPerSec)} delivered/s, send->receive p50 ${fmt(result.p50, 1)} ms, p99 ${fmt(result.p99, 1)} ms`)
    }
  }
  return rows
}

async function measureSiege () {
  /** @type {any[]} */
  const rows = []
  const rc = writeSiegeRc(run.outDir)
  console.log()
  console.log(`  siege ${siege}: 1 user, ${fmt(siegeReps)} requests, ${siegeRuns} run(s) per operation and server (benchmark mode, connection: close)`)
  for (const op of ops) {
    for (let r = 1; r <= siegeRuns; r++) {
      const turn = targets.map((_, i) => targets[(i + r - 1) % targets.length])
      for (const target of turn) {
        // One URL, one user, like the seed: the feed's first request.
        const result = await runSiege({ url: servers[target].url, request: feeds[op][0], reps: siegeReps, rc })
        rows.push({ op, run: r, target, ...result })
        if (result.failed > 0 || result.successful !== result.transactions) problems.push(`siege ${target} ${op} run ${r}: ${result.failed} failed, ${result.successful} of ${result.transactions} successful`)
      }
    }
    console.log(`  ${op}: ${targets.map(target => `${target} ${fmt(median(rows.filter(row => row.op === op && row.target === target).map(row => row.transPerSec)), 1)} trans/s`).join(', ')}`)
  }
  return rows
}

/**
 * @param {any[]} http @param {any[]} fanout @param {any[] | null} siegeRows
 * @param {Record<string, { dbBytes: number, peakRssBytes: number }>} stopped
 */
function report (http, fanout, siegeRows, stopped) {
  const cell = (/** @type {string} */ op, /** @type {number} */ c, /** @type {string} */ target) => http.filter(row => row.op === op && row.connections === c && row.target === target)
  /** Per run, the ratio of two servers' req/s; the median over runs. @param {string} op @param {number} c @param {string} a @param {string} b */
  const ratio = (op, c, a, b) => {
    const [ra, rb] = [cell(op, c, a), cell(op, c, b)]
    if (ra.length === 0 || rb.length === 0) return null
    return median(ra.map(row => row.reqPerSec / rb.find(other => other.run === row.run).reqPerSec))
  }
  /** @type {any[]} */
  const summary = []
  const table = [['operation', 'conns', ...targets.flatMap(t => [`${t} req/s`, 'p50/p99 ms', 'CPU µs/req']), ...(targets.includes('sqlite') && targets.includes('levelkit') ? ['lk/SQLite'] : []), ...(targets.includes('noop') && targets.includes('levelkit') ? ['lk/no-op'] : []), ...(targets.includes('noop') && targets.includes('maps') ? ['maps/no-op'] : []), 'errors', 'non-2xx']]
  for (const op of OPERATIONS.filter(o => ops.includes(o.key))) {
    for (const c of connections) {
      /** @type {Record<string, any>} */
      const entry = { op: op.key, label: op.label, connections: c, targets: {} }
      const row = [op.label, String(c)]
      let errors = 0
      let non2xx = 0
      for (const target of targets) {
        const mine = cell(op.key, c, target)
        const s = {
          reqPerSec: median(mine.map(m => m.reqPerSec)),
          reqPerSecMin: min(mine.map(m => m.reqPerSec)),
          reqPerSecMax: max(mine.map(m => m.reqPerSec)),
          p50: median(mine.map(m => m.p50)),
          p99: median(mine.map(m => m.p99)),
          serverCpuUsPerReq: median(mine.map(m => m.serverCpuMs * 1000 / Math.max(1, m.requests))),
          serverCores: median(mine.map(m => m.serverCpuMs / 1000 / m.seconds)),
          clientCores: median(mine.map(m => m.clientCpuMs / 1000 / m.seconds)),
          errors: mine.reduce((sum, m) => sum + m.errors, 0),
          non2xx: mine.reduce((sum, m) => sum + m.non2xx, 0)
        }
        entry.targets[target] = s
        errors += s.errors
        non2xx += s.non2xx
        row.push(fmt(s.reqPerSec), `${fmt(s.p50, 2)}/${fmt(s.p99, 2)}`, fmt(s.serverCpuUsPerReq))
      }
      entry.levelkitOverSqlite = ratio(op.key, c, 'levelkit', 'sqlite')
      entry.levelkitOverNoop = ratio(op.key, c, 'levelkit', 'noop')
      if (targets.includes('sqlite') && targets.includes('levelkit')) row.push(`${entry.levelkitOverSqlite.toFixed(2)}×`)
      entry.mapsOverNoop = ratio(op.key, c, 'maps', 'noop')
      if (targets.includes('noop') && targets.includes('levelkit')) row.push(`${(entry.levelkitOverNoop * 100).toFixed(0)}%`)
      if (targets.includes('noop') && targets.includes('maps')) row.push(`${(entry.mapsOverNoop * 100).toFixed(0)}%`)
      row.push(String(errors), String(non2xx))
      table.push(row)
      summary.push(entry)
    }
  }
  console.log()
  printTable(table, 1)
  console.log()
  console.log(`  Medians over ${runs} run(s) of ${duration} s; ratios per run, then the median. CPU µs/req: the server process's CPU time per request.`)
  console.log()
  printTable([
    ['cores busy: server / client', 'conns', ...targets],
    ...summary.map(e => [e.label, String(e.connections), ...targets.map(t => `${e.targets[t].serverCores.toFixed(2)} / ${e.targets[t].clientCores.toFixed(2)}`)])
  ], 1)
  console.log(`  CPU time per second of the server's process (with its database threads) and of the client (autocannon, in this process), of ${run.machine.cores} cores.`)

  /** @type {any[]} */
  const goals = []
  const at64 = summary.filter(e => e.connections === GOAL_CONNECTIONS)
  if (at64.length > 0 && targets.includes('levelkit')) {
    console.log(`  Goals at ${GOAL_CONNECTIONS} connections:`)
    for (const e of at64) {
      const goal = GOALS[e.op]
      if (e.levelkitOverSqlite !== null) goals.push({ op: e.op, what: 'levelkit/SQLite', goal: goal.sqlite, value: e.levelkitOverSqlite, met: e.levelkitOverSqlite >= goal.sqlite })
      if (e.levelkitOverNoop !== null) goals.push({ op: e.op, what: 'levelkit/no-op', goal: goal.noop, value: e.levelkitOverNoop, met: e.levelkitOverNoop >= goal.noop })
    }
    for (const g of goals) {
      const shown = g.what === 'levelkit/no-op' ? `${(g.value * 100).toFixed(0)}% (goal ≥ ${(g.goal * 100).toFixed(0)}%)` : `${g.value.toFixed(2)}× (goal ≥ ${g.goal.toFixed(1)}×)`
      console.log(`    ${OPERATIONS.find(o => o.key === g.op)?.label}, ${g.what}: ${shown} ${g.met ? 'met' : 'MISSED'}`)
    }
  }

  /** @type {any[]} */
  const fanoutSummary = []
  if (fanout.length > 0) {
    console.log()
    const ftable = [['WebSocket fan-out', 'clients', 'sent/s', 'delivered/s', 'p50 ms', 'p99 ms', 'max ms', 'missing', 'gaps', 'dups', 'CPU µs/delivery']]
    for (const target of wsTargets) {
      const mine = fanout.filter(row => row.target === target)
      const s = {
        target,
        rooms: ws.rooms,
        members: ws.members,
        ratePerRoom: ws.rate,
        deliveredPerSec: median(mine.map(m => m.deliveredPerSec)),
        p50: median(mine.map(m => m.p50)),
        p99: median(mine.map(m => m.p99)),
        max: max(mine.map(m => m.max)),
        missing: mine.reduce((sum, m) => sum + m.missing, 0),
        gaps: mine.reduce((sum, m) => sum + m.gaps, 0),
        duplicates: mine.reduce((sum, m) => sum + m.duplicates, 0),
        serverCpuUsPerDelivery: median(mine.map(m => m.serverCpuMs * 1000 / Math.max(1, m.delivered)))
      }
      fanoutSummary.push(s)
      ftable.push([TARGET_LABELS[target], String(mine[0].clients), fmt(ws.rooms * ws.rate), fmt(s.deliveredPerSec), fmt(s.p50, 1), fmt(s.p99, 1), fmt(s.max, 1), String(s.missing), String(s.gaps), String(s.duplicates), fmt(s.serverCpuUsPerDelivery, 1)])
    }
    printTable(ftable, 1)
    console.log(`  ${ws.rooms} rooms × ${ws.members} members, ${ws.rate} messages/s per room for ${ws.duration} s; medians over ${runs} run(s); latency from the send frame to each member's message frame, both in this process.`)
  }

  /** @type {any[]} */
  const siegeSummary = []
  if (siegeRows) {
    console.log()
    const stable = [['siege: trans/s (1 user, ' + fmt(siegeReps) + ' req)', 'seed LevelDB', 'seed SQL', ...targets.map(t => `${t} (min..max)`)]]
    for (const op of OPERATIONS.filter(o => ops.includes(o.key))) {
      /** @type {Record<string, any>} */
      const entry = { op: op.key, label: op.label, seed: SEED_SIEGE[op.key], targets: {} }
      const row = [op.label, fmt(SEED_SIEGE[op.key].leveldb, 2), fmt(SEED_SIEGE[op.key].sql, 2)]
      for (const target of targets) {
        const rates = siegeRows.filter(r => r.op === op.key && r.target === target).map(r => r.transPerSec)
        entry.targets[target] = { transPerSec: median(rates), runs: rates }
        row.push(`${fmt(median(rates), 1)} (${fmt(min(rates), 0)}..${fmt(max(rates), 0)})`)
      }
      stable.push(row)
      siegeSummary.push(entry)
    }
    printTable(stable, 1)
    console.log(`  Medians of ${siegeRuns} run(s); siege's own transaction rate (a new connection per request: siege's default). Seed: seed 000's table, its LevelDB (aggregated) and SQL backends.`)
  } else if (!args['no-siege']) {
    console.log()
    console.log('  siege: not installed, skipped (Debian: apt-get install siege).')
  }
  console.log(`  On disk after the run: ${targets.filter(t => !STORELESS.includes(t)).map(t => `${t} ${mb(stopped[t].dbBytes)}`).join(', ')}; server peak RSS ${targets.map(t => `${t} ${mb(stopped[t].peakRssBytes)}`).join(', ')}.`)
  if (problems.length > 0) {
    console.log()
    for (const p of problems.slice(0, 20)) console.log(`  PROBLEM: ${p}`)
  }

  const files = ['results.csv']
  writeCsv(path.join(run.outDir, 'results.csv'),
    ['operation', 'connections', 'run', 'server', 'requests', 'seconds', 'req_per_sec', 'p50_ms', 'p99_ms', 'errors', 'timeouts', 'non2xx', 'server_cpu_ms', 'client_cpu_ms'],
    http.map(r => [r.op, r.connections, r.run, r.target, r.requests, r.seconds, r.reqPerSec, r.p50, r.p99, r.errors, r.timeouts, r.non2xx, r.serverCpuMs, r.clientCpuMs]))
  if (siegeRows) {
    files.push('siege.csv')
    writeCsv(path.join(run.outDir, 'siege.csv'), ['operation', 'run', 'server', 'transactions', 'elapsed_s', 'trans_per_sec', 'successful', 'failed'],
      siegeRows.map(r => [r.op, r.run, r.target, r.transactions, r.elapsed, r.transPerSec, r.successful, r.failed]))
  }
  const colors = /** @type {Record<string, string>} */ ({ levelkit: '#d62728', sqlite: '#1f77b4', noop: '#7f7f7f' })
  fs.writeFileSync(path.join(run.outDir, 'chat-server.svg'), barChartSvg({
    title: `The chat server over HTTP: requests/s (median of ${runs} run${runs === 1 ? '' : 's'}, autocannon, keep-alive)`,
    subtitle: `${fmt(sizes.users)} users, ${fmt(sizes.chats)} chats × ${sizes.members}, ${fmt(sizes.messages)} messages; ${run.machine.cpu}, ${run.machine.cores} cores, node ${run.versions.node}, fastify ${run.versions.fastify}, ${run.startedAt.toISOString().slice(0, 10)}`,
    yLabel: 'Requests per second',
    categories: summary.map(e => `${e.label}, ${e.connections} conn.`),
    series: targets.map(t => ({ name: TARGET_LABELS[t], values: summary.map(e => e.targets[t].reqPerSec), color: colors[t] })),
    notes: summary.map(e => e.levelkitOverSqlite === null ? '' : `${e.levelkitOverSqlite.toFixed(2)}×`),
    notesLabel: 'top: levelkit/SQLite',
    yScale: 'linear'
  }))
  files.push('chat-server.svg')
  if (siegeRows) {
    fs.writeFileSync(path.join(run.outDir, 'chat-server-siege.svg'), barChartSvg({
      title: `siege, 1 user, ${fmt(siegeReps)} requests: transactions/s (median of ${siegeRuns} runs), beside seed 000's`,
      subtitle: `${run.machine.cpu}, ${run.machine.cores} cores, node ${run.versions.node}, siege ${siege}, ${run.startedAt.toISOString().slice(0, 10)}`,
      yLabel: 'Transactions per second',
      categories: siegeSummary.map(e => e.label),
      series: [
        { name: 'seed 000, LevelDB', values: siegeSummary.map(e => e.seed.leveldb), color: '#ff7f0e' },
        { name: 'seed 000, SQL', values: siegeSummary.map(e => e.seed.sql), color: '#9467bd' },
        ...targets.map(t => ({ name: TARGET_LABELS[t], values: siegeSummary.map(e => e.targets[t].transPerSec), color: colors[t] }))
      ]
    }))
    files.push('chat-server-siege.svg')
  }
  finishRun(run.outDir, { name: 'chat-server', ...run, loadAfter: os.loadavg() }, {
    options: { runs, duration, warmup, connections, ops, targets, ...sizes, seed, scryptN, ws, siegeReps, siegeRuns, siege },
    csvColumns: ['operation', 'connections', 'run', 'server', 'requests', 'seconds', 'req_per_sec', 'p50_ms', 'p99_ms', 'errors', 'timeouts', 'non2xx', 'server_cpu_ms', 'client_cpu_ms'],
    summary,
    goals,
    fanout: { summary: fanoutSummary, runs: fanout, skipped: fanoutSkipped },
    siege: siegeRows ? { version: siege, summary: siegeSummary, seed: SEED_SIEGE } : null,
    servers: stopped,
    problems
  }, files)
  if (problems.length > 0) process.exitCode = 1
}
