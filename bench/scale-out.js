// Scale-out (issue 18): the chat workload on PostgreSQL with 1, 2 and 4
// writer processes, against the same workload written directly in SQL, and
// beside levelkit in one process on LevelDB.
//
// Cells, each a fresh set of tables and its own processes
// (bench/lib/scale-out-worker.js):
//   SQL ×P         the hand-written store on `pg` (bench/lib/pg-chat-store.js),
//                  P writer processes on the same tables (--writers, default 1,2,4)
//   SQL, gap-free ids ×P  the same with user and chat ids from a counters
//                  row bumped in the inserting statement, ChatStore's guarantee,
//                  where the default takes them from identity columns (a
//                  sequence: gaps); --sql-ids serial,gapfree runs both
//   levelkit-pg ×P levelkit's ChatStore over the postgres backend, P processes
//                  on one table opened with `shared: true` (--processes,
//                  default 1,2,4; the shared writer lock serializes their writes)
//   levelkit-leveldb ×1  levelkit's ChatStore on classic-level, one process
// Every cell gets the same data set (--users, --chats of --members,
// --messages), filled by its first process in an order that gives the same
// ids everywhere, then an untimed warm-up. Then each operation in turn:
// createUser, createChat (20 members), addChatMessage, getChatMessages
// (last 50), getChats of a user, its inputs in --slices slices. Within a
// cell all its processes run a slice at once, each taking every P-th input
// (the total is the same for every P), --concurrency calls in flight per
// process.
//
// Cold or steady. By default (--warm-ops 0) a cell's processes are fresh:
// after that short warm-up (20 createUser, 10 createChat, 100
// addChatMessage split among them, 100 + 300 reads each) they start the timed
// slices with their code still in V8's interpreter and baseline tiers, and
// at --scale 0.2 a ×4 cell's processes run only 20 createChats each: the
// cold numbers measure start-up as much as the store (session 20: a fresh
// process pays 1.2-2.4× Node CPU per createChat in its first ones). --warm-ops
// N measures the steady state of a served system: after the warm-up, every
// process of every cell (SQL store, levelkit, base library alike) runs N of
// each measured operation with inputs of its own (bench/lib/scale-out-warm.js:
// the timed inputs' shape, drawn from their own stream so the timed inputs do
// not change; one list for every cell, process rank r taking the r-th N),
// --concurrency in flight, all of the cell's processes at once, untimed.
// The final check checks these writes too and leaves them out of its
// digest, which still agrees between cells of 1, 2 and 4 processes (they
// wrote P × N of them). Cold stays the default so that the
// commands in RESULTS.md (sessions 16-20) reproduce what they measured;
// RESULTS.md reports both from session 21 on. How many: in one process
// (bench/pg-cpu.js, node --trace-opt) V8 keeps optimizing createChat's code
// with TurboFan at 6-12 functions per 25 createChats up to about the 300th,
// 2-5 after, and the Node CPU per op falls until about then (session 21):
// --warm-ops 300 for createChat.
//
// --turns pairs (the default): one cell at a time as with cells (below),
// the two sides alternating: for each process count, the SQL cell(s), a
// levelkit cell, the SQL cell(s) again, the next levelkit cell, ..., the
// SQL cell(s) (odd runs by rising process counts, even runs the whole
// order reversed). Each levelkit cell's ratio in a run is against the mean
// of the SQL measurements just before and just after it, so a ratio is of
// measurements minutes apart at most, not of the two ends of an
// invocation (session 17: the SQL store moved 1.45× between two
// invocations); a SQL cell's ops/s in a run is over all its measurements.
// --base-library DIR adds, after each levelkit-on-PostgreSQL cell, the same
// cell over another copy of levelkit (the root of a checkout), paired with
// the SQL cells alike: base and branch in one invocation, their ratios
// same-run pairs. Its statements are counted on the `pg` it resolves, its
// own or this one's (session 20's base with its own node_modules counted 0
// round trips); a write slice that counts none fails the run
// (LEVELKIT_BENCH_UNCOUNTED) rather than report 0.
// --turns cells: a run measures one cell at a time, from its
// start to its end: its processes are started for it, fill its fresh
// tables, run every slice of every operation, are checked and end, and its
// tables are dropped, before the next cell starts; the cells go in the
// order of --locking etc. in odd runs and the reverse in even runs. No
// other cell's processes or connections exist while a cell is measured,
// and its pools keep their connections for the whole cell (--idle-ms,
// default 60000), so a cell measures the same thing whether the run holds
// one cell or nine.
// --turns slices: every cell is open for the whole run and the cells take
// turns slice by slice (A B C, C B A, ...; which goes first alternates by
// slice and by run), so slow drift hits every cell alike; but all of them
// together would hold more connections than the server allows, so pools
// let a connection go after --idle-ms (default 1000 here), and a cell whose
// slice comes after the others' finds its connections gone: each of its
// slices opens new ones (backend start, cold caches, statements prepared
// again), more the more cells the run holds (the "connections opened/op"
// column). The SQL store, one statement per operation and a connection
// per call in flight, loses most (session 16: 192 ops/s alone, 42-50 in a
// nine-cell run).
//
// Per operation and cell: ops/s (all ops / the time from the first process's
// start to the last one's end), p50 and p99 latency (over every call of
// every process), and retries (the SQL store's deadlock and serialization
// retries; levelkit on PostgreSQL retries none: its writes are serialized
// by the shared writer lock), and round trips per operation (statements
// every process of the cell sent to PostgreSQL / ops), connections opened
// per operation (every process's new connections / ops: 0 in a warm
// cell). Medians over --runs runs; ratio =
// the cell's ops/s / the SQL store's ops/s with as many processes, measured
// in the same run (levelkit-leveldb against SQL ×1), then the median (> 1:
// faster than the hand-written SQL); with --sql-ids serial,gapfree, a ratio
// against each SQL variant. Goals (issue 18): levelkit-pg ≥ 0.7×
// SQL, and throughput rising with processes until PostgreSQL saturates the
// machine.
//
// CPU, so that the results show whether the machine is saturated (a
// throughput that does not rise with processes on a machine already busy
// says nothing of the store): per operation and cell, the cores busy over
// its slices — its Node processes' (process.cpuUsage() in each worker),
// PostgreSQL's (the postmaster's and its backends' CPU time from /proc,
// exited backends included through the postmaster's children times) and
// the whole machine's (/proc/stat, other work included) — and the Node
// processes' and PostgreSQL's CPU milliseconds per operation (what an
// operation costs each side, which load changes less than rates). And where the
// processes wait for each other, from the shared lock's counters: table
// lock hand-overs and the time waiting for it; serializable failures by
// kind (a row updated since the snapshot, or a read made stale); busy key
// locks by namespace (locking: 'keys'). --user-chats list,edges runs the
// levelkit cells with ChatStore's userChats option each way, side by side.
//
// The answers agree: every cell answers the same sample reads after being
// filled, and after the timed writes every cell's state is checked (each
// chat's message ids 1..N without gap and holding the messages sent to it,
// the users and chats created, no more) and must give the same digest.
//
// --shard-chats: each process of a cell sends only the messages of the
// chats routed to it (a chat's id modulo the cell's processes), as a chat
// server that routes each chat to one process would; the processes then
// write disjoint keys (bench/RESULTS.md: serializable transactions fail
// each other all the same, as PostgreSQL's predicate locks cover pages).
//
// LEVELKIT_BENCH_CPU_PROFILE=<dir>: each worker writes a CPU profile of each
// timed slice (<dir>/<cell>-x<processes>-<op>-r<rank>-<slice>.<pid>.cpuprofile,
// sampled every 100 µs), not of its whole life. The profiler's own cost
// shows as `dispatch`, and a sample counts wall time: a process waiting for
// a core is charged to the function it waits in.
//
// PostgreSQL: the server LEVELKIT_PG_URL names, else a throwaway cluster
// (levelkit-testkit/postgres: fsync, synchronous_commit and
// full_page_writes off, as LevelDB's default writes do not fsync either).
//
// Output: a table on stdout; under --out (default bench/out/, ignored by
// git) a folder scale-out-<time>/ with results.csv (one row per run,
// operation and cell), summary.json and scale-out.svg.
//
// Usage: node bench/scale-out.js [--runs 3] [--writers 1,2,4]
//   [--processes 1,2,4] [--users 2000] [--chats 200] [--members 20]
//   [--messages 20000] [--concurrency 16] [--scale 1] [--n N] [--slices 4] [--ops a,b]
//   [--scrypt-n 2] [--seed 1] [--locking table] [--user-chats list] [--sql-ids serial] [--no-leveldb] [--out bench/out]
//   [--db-dir <tmpdir>] [--turns pairs] [--idle-ms N] [--base-library DIR] [--warm-ops 0] [--shard-chats]

import os from 'node:os'
import fs from 'node:fs'
import path from 'node:path'
import { fork } from 'node:child_process'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { postgres } from 'levelkit-testkit/postgres'
import { postgresTables } from 'levelkit'
import { parseCli, failWith, optionOf, startRun, printMachine, finishRun, writeCsv, printTable, printProblems, loadText } from './lib/seeds-common.js'
import { median, min, max, quantile, fmt, parseCount } from './lib/stats.js'
import { barChartSvg } from './lib/svg-plot.js'
import { Progress } from './lib/progress.js'
import { makeWorkload } from './lib/chat-workload-worker.js'
import { OPERATIONS } from './lib/scale-out-worker.js'
import { warmInputs } from './lib/scale-out-warm.js'
import { processTreeCpuMs, machineCpuMs, parentPid } from './lib/proc-cpu.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const WORKER = path.join(here, 'lib', 'scale-out-worker.js')
const NA = 'n/a (one process per table until multi-process lands)'

// Ops per operation and cell at --scale 1 (the total over its processes).
const DEFAULT_N = { createUser: 2000, createChat: 400, addChatMessage: 4000, last50: 3000, getChats: 3000 }
/** @type {string[]} */
const OP_KEYS = OPERATIONS.map(op => op.key)

const USAGE = `Usage: node bench/scale-out.js [options]
  --runs K           runs, fresh tables and processes for every cell (default 3)
  --turns T          pairs: one cell at a time, the sides alternating per process count (SQL,
                     levelkit, SQL, levelkit, ..., SQL): each levelkit cell's ratio is against
                     the SQL measurements just before and after it (the default); cells: one
                     cell at a time, all SQL cells then all levelkit cells (odd runs in order,
                     even runs reversed); slices: every cell
                     open for the whole run, the cells taking turns slice by slice (idle
                     connections go after --idle-ms, so each slice opens new ones)
  --idle-ms N        ms a pool keeps an idle connection (default 60000 with --turns pairs or
                     cells, 1000 with --turns slices)
  --warm-ops N       steady state: every process of every cell first runs N of each measured
                     operation, its own inputs, untimed (default 0: fresh processes, cold)
  --base-library DIR also run each levelkit-on-PostgreSQL cell over the levelkit at DIR (a
                     checkout; its statements counted on the pg it resolves), paired with SQL alike
  --writers L        process counts of the hand-written SQL store (default 1,2,4)
  --processes L      process counts of levelkit on PostgreSQL (default 1,2,4)
  --locking L        how levelkit's processes take turns: a list of table, keys, serializable
                     (both side by side; default table)
  --user-chats L     ChatStore's userChats option for levelkit on PostgreSQL: list and/or edges
                     (both: cells of each side by side; default list)
  --sql-ids L        where the SQL store takes user and chat ids: serial (identity columns,
                     with gaps) and/or gapfree (a counters row, no gap, as levelkit);
                     both: cells of each and ratios against each (default serial)
  --no-leveldb       leave out levelkit on LevelDB
  --users N          pre-populated users (default 2000)
  --chats N          pre-populated chats of --members members (default 200)
  --members N        members per chat, the admin included (default 20)
  --messages N       pre-populated messages, spread over the chats (default 20000)
  --concurrency N    calls in flight per process (default 16)
  --scale X          multiply the ops per operation (default 1)
  --n N              ops per operation and cell, for every operation (overrides --scale)
  --slices N         slices per operation (with --turns slices the cells take turns slice by slice; default 4)
  --ops a,b,...      only these operations (${OP_KEYS.join(', ')}; the final check needs all three writes)
  --scrypt-n N       scrypt cost of the password hashes, every side (default 2)
  --seed N           seed of the data set and inputs (default 1)
  --out DIR          output folder (default bench/out)
  --db-dir DIR       where the LevelDB databases go (default the OS temp dir)
  --shard-chats      each process sends the messages of its own chats only (a chat's id modulo
                     the processes: a server routing each chat to one process), every cell alike
  --pg-set L         name=value,... server settings for the throwaway cluster, set by ALTER
                     SYSTEM and a reload before the run (only settings a reload applies; not
                     with LEVELKIT_PG_URL), e.g. max_pred_locks_per_page=1000
PostgreSQL: the server LEVELKIT_PG_URL names, else a throwaway cluster.`

/** @param {string} message @returns {never} */
const fail = message => failWith('scale-out', USAGE, message)

const args = parseCli('scale-out', USAGE, {
  runs: { type: 'string', default: '3' },
  writers: { type: 'string', default: '1,2,4' },
  processes: { type: 'string', default: '1,2,4' },
  locking: { type: 'string', default: 'table' },
  'user-chats': { type: 'string', default: 'list' },
  'sql-ids': { type: 'string', default: 'serial' },
  'no-leveldb': { type: 'boolean', default: false },
  users: { type: 'string', default: '2000' },
  chats: { type: 'string', default: '200' },
  members: { type: 'string', default: '20' },
  messages: { type: 'string', default: '20000' },
  concurrency: { type: 'string', default: '16' },
  scale: { type: 'string', default: '1' },
  n: { type: 'string' },
  ops: { type: 'string' },
  slices: { type: 'string', default: '4' },
  'scrypt-n': { type: 'string', default: '2' },
  seed: { type: 'string', default: '1' },
  out: { type: 'string', default: path.join(here, 'out') },
  'db-dir': { type: 'string', default: os.tmpdir() },
  turns: { type: 'string', default: 'pairs' },
  'idle-ms': { type: 'string' },
  'base-library': { type: 'string' },
  'warm-ops': { type: 'string', default: '0' },
  'pg-set': { type: 'string' },
  'shard-chats': { type: 'boolean', default: false }
})

/** @template T @param {() => T} parse @returns {T} */
const option = parse => optionOf('scale-out', USAGE, parse)
/** A list of process counts. @param {string} text @param {string} flag */
const counts = (text, flag) => {
  const list = String(text).split(',').map(s => parseCount(s))
  if (new Set(list).size !== list.length) throw new Error(`${flag} lists a count twice`)
  if (list.some(n => n > 32)) throw new Error(`${flag}: at most 32 processes`)
  return list
}

const runs = option(() => parseCount(args.runs))
const turns = option(() => {
  if (args.turns !== 'pairs' && args.turns !== 'cells' && args.turns !== 'slices') throw new Error('--turns is pairs, cells or slices')
  return args.turns
})
const idleMs = args['idle-ms'] !== undefined ? option(() => parseCount(args['idle-ms'])) : turns === 'slices' ? 1000 : 60000
const baseLibrary = args['base-library'] === undefined
  ? null
  : option(() => {
    const root = path.resolve(args['base-library'])
    if (!fs.existsSync(path.join(root, 'index.js')) || !fs.existsSync(path.join(root, 'chat.js'))) throw new Error(`--base-library: no levelkit at ${root} (index.js, chat.js)`)
    return root
  })
const writers = option(() => counts(args.writers, '--writers'))
const processes = option(() => counts(args.processes, '--processes'))
const lockings = option(() => {
  const list = String(args.locking).split(',')
  if (list.length === 0 || list.some(l => l !== 'table' && l !== 'keys' && l !== 'serializable') || new Set(list).size !== list.length) throw new Error('--locking lists table, keys and/or serializable')
  return list
})
const userChatsList = option(() => {
  const list = String(args['user-chats']).split(',')
  if (list.some(l => l !== 'list' && l !== 'edges') || new Set(list).size !== list.length) throw new Error('--user-chats lists list and/or edges')
  return list
})
/** --shard-chats: each process sends to the chats routed to it (bench/lib/scale-out-warm.js routedToProcess()). */
const shardChats = args['shard-chats'] === true
/** @type {Array<[string, string]>} --pg-set's settings */
const pgSet = option(() => {
  if (args['pg-set'] === undefined) return []
  const pairs = String(args['pg-set']).split(',').map(item => item.split('='))
  if (pairs.some(pair => pair.length !== 2 || !/^[a-z_]+$/.test(pair[0]) || !/^[A-Za-z0-9_.]+$/.test(pair[1]))) throw new Error('--pg-set is name=value,... (a setting\'s name, a plain value)')
  return /** @type {Array<[string, string]>} */ (pairs)
})
const sqlIdsList = option(() => {
  const list = String(args['sql-ids']).split(',')
  if (list.some(l => l !== 'serial' && l !== 'gapfree') || new Set(list).size !== list.length) throw new Error('--sql-ids lists serial and/or gapfree')
  return /** @type {Array<'serial' | 'gapfree'>} */ (list)
})
if (!writers.includes(1) && !args['no-leveldb']) fail('--writers must include 1 (or --no-leveldb): levelkit on LevelDB is measured against the SQL store with one process')
const sizes = {
  users: option(() => parseCount(args.users)),
  chats: option(() => parseCount(args.chats)),
  members: option(() => parseCount(args.members)),
  messages: option(() => parseCount(args.messages))
}
if (sizes.members < 2 || sizes.members > 30) fail('--members is 2..30 (ChatStore\'s default maxMembers is 30)')
if (sizes.members > sizes.users) fail('--members cannot exceed --users')
const concurrency = option(() => parseCount(args.concurrency))
const slices = option(() => parseCount(args.slices))
const scryptN = option(() => parseCount(args['scrypt-n']))
if (scryptN < 2 || (scryptN & (scryptN - 1)) !== 0) fail('--scrypt-n is a power of 2, at least 2')
const seed = option(() => parseCount(args.seed))
const warmOps = option(() => {
  const value = Number(args['warm-ops'])
  if (!Number.isSafeInteger(value) || value < 0) throw new Error('--warm-ops is a count, 0 or more')
  return value
})
const scale = Number(args.scale)
if (!(scale > 0)) fail('--scale is a positive number')
/** @type {string[]} */
const ops = args.ops ? args.ops.split(',') : OP_KEYS
for (const op of ops) if (!OP_KEYS.includes(op)) fail(`Unknown operation ${JSON.stringify(op)}`)
/** @type {Record<string, number>} */
const n = {}
for (const op of OP_KEYS) n[op] = !ops.includes(op) ? 0 : args.n !== undefined ? option(() => parseCount(args.n)) : Math.max(10, Math.round(DEFAULT_N[/** @type {keyof typeof DEFAULT_N} */ (op)] * scale))

/**
 * @typedef {{ key: string, kind: import('./lib/scale-out-worker.js').Kind, processes: number, label: string, against: string, againstEach: string[], one: string, userChats?: string, sqlIds?: 'serial' | 'gapfree', library?: string, base?: string }} Cell
 *   library: another copy of levelkit (--base-library); base: the key of this cell over it
 */
const LOCKING_KINDS = /** @type {const} */ ([
  ['table', 'levelkit-pg', 'levelkit on PostgreSQL'],
  ['keys', 'levelkit-pg-keys', 'levelkit on PostgreSQL, key locks'],
  ['serializable', 'levelkit-pg-serializable', 'levelkit on PostgreSQL, serializable']
])
// The SQL cells of serial ids keep their names of before (sql-P); the
// ratios are against the first --sql-ids variant, and against each.
/** @param {'serial' | 'gapfree'} ids @param {number} p */
const sqlKey = (ids, p) => ids === 'serial' ? `sql-${p}` : `sql-gapfree-${p}`
/** @param {number} p */
const againstEach = p => sqlIdsList.map(ids => sqlKey(ids, p))
/** @type {Cell[]} */
const cells = [
  ...sqlIdsList.flatMap(ids => writers.map(p => ({ key: sqlKey(ids, p), kind: /** @type {const} */ ('sql'), processes: p, label: ids === 'serial' ? `SQL (pg) ×${p}` : `SQL (pg), gap-free ids ×${p}`, against: sqlKey(sqlIdsList[0], p), againstEach: againstEach(p), one: sqlKey(ids, 1), sqlIds: ids }))),
  ...LOCKING_KINDS.filter(([locking]) => lockings.includes(locking)).flatMap(([, kind, label]) => userChatsList.flatMap(userChats => {
    // With one --user-chats layout the cells keep their names of before.
    const suffix = userChatsList.length === 1 ? '' : `-${userChats}`
    const named = userChatsList.length === 1 ? '' : `, user's chats as ${userChats}`
    return processes.flatMap(p => {
      const cell = { key: `${kind}${suffix}-${p}`, kind, processes: p, label: `${label}${named} ×${p}`, against: sqlKey(sqlIdsList[0], p), againstEach: againstEach(p), one: `${kind}${suffix}-1`, userChats }
      if (baseLibrary === null) return [cell]
      // The same over the base library, right after it.
      const base = { ...cell, key: `${kind}${suffix}-base-${p}`, label: `${label}${named}, base library ×${p}`, one: `${kind}${suffix}-base-1`, library: baseLibrary }
      return [{ ...cell, base: base.key }, base]
    })
  })),
  ...(args['no-leveldb'] ? [] : [{ key: 'levelkit-leveldb-1', kind: /** @type {const} */ ('levelkit-leveldb'), processes: 1, label: 'levelkit on LevelDB ×1', against: sqlKey(sqlIdsList[0], 1), againstEach: againstEach(1), one: 'levelkit-leveldb-1' }])
]

// Connections. With --turns cells only one cell is open at a time. With
// --turns slices every cell of a run stays open while the others take their
// turns, so what each process keeps while idle adds up over all cells: a
// levelkit process on PostgreSQL keeps the pool connection that holds the
// table's shared lock, its writer and listening connections and up to 4
// idle snapshot connections (KEPT); the SQL store keeps none (its pool lets
// idle connections go after 1 s, as levelkit's does). Busy, a levelkit
// process holds at most its pool (concurrency + 1), the writer and listening
// connections and a snapshot per call in flight; a SQL process its pool. The
// cell running and the one before it (its pools not yet let go) are busy.
const KEPT = 7
/** @param {Cell} cell */
const busy = cell => cell.processes * (cell.kind === 'sql' ? concurrency : cell.kind === 'levelkit-leveldb' ? 0 : 2 * concurrency + 3)
const kept = cells.reduce((sum, cell) => sum + (cell.kind === 'sql' || cell.kind === 'levelkit-leveldb' ? 0 : cell.processes * KEPT), 0)
const busiest = cells.map(busy).sort((x, y) => y - x)
// (+ this process's admin pool and PostgreSQL's reserved superuser connections)
const connectionsNeeded = turns !== 'slices' ? busiest[0] + 2 + 3 : kept + busiest[0] + (busiest[1] ?? 0) + 2 + 3
// A throwaway cluster is started with enough; a server of the user's must allow them.
const server = await postgres({ maxConnections: Math.max(200, connectionsNeeded) })
const admin = new pg.Pool({ connectionString: server.connectionString, max: 2 })
admin.on('error', () => {})
if (pgSet.length > 0) {
  if (!server.throwaway) fail('--pg-set changes only a throwaway cluster, not the server LEVELKIT_PG_URL names')
  for (const [name, value] of pgSet) {
    const { rows } = await admin.query('SELECT context FROM pg_settings WHERE name = $1', [name])
    if (rows.length === 0) fail(`--pg-set: PostgreSQL has no setting ${name}`)
    if (rows[0].context === 'postmaster' || rows[0].context === 'internal') fail(`--pg-set: ${name} takes a restart, not a reload`)
    await admin.query(`ALTER SYSTEM SET ${name} = ${pg.escapeLiteral(value)}`)
  }
  await admin.query('SELECT pg_reload_conf()')
  // The backends read the file once signalled: a new connection sees it.
  for (const [name, value] of pgSet) {
    let seen
    for (let i = 0; i < 50 && seen !== value; i++) {
      const client = await admin.connect()
      try { seen = (await client.query('SELECT setting FROM pg_settings WHERE name = $1', [name])).rows[0].setting } finally { client.release(true) }
      if (seen !== value) await new Promise(resolve => setTimeout(resolve, 100))
    }
    if (seen !== value) fail(`--pg-set: ${name} reads ${seen} after the reload, not ${value}`)
  }
}
const serverVersion = (await admin.query('SHOW server_version')).rows[0].server_version
const settings = Object.fromEntries((await admin.query("SELECT name, setting FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes', 'max_connections', 'shared_buffers') OR name = ANY($1)", [pgSet.map(([name]) => name)])).rows.map(row => [row.name, row.setting]))
// The postmaster (the parent of a backend), if it runs on this machine: its
// CPU time and its backends' are PostgreSQL's (null: not measured).
const postmaster = await (async () => {
  const { rows } = await admin.query('SELECT pg_backend_pid() AS pid')
  const pid = parentPid(rows[0].pid)
  return pid !== null && processTreeCpuMs(pid) !== null ? pid : null
})()
if (Number(settings.max_connections) < connectionsNeeded) fail(`The server allows ${settings.max_connections} connections; this run's cells, all open at once, need about ${connectionsNeeded} (fewer --concurrency, processes or --locking modes, or raise max_connections)`)

const run0 = startRun('scale-out', args.out, ['pg', 'classic-level', 'abstract-level'])
/** @type {Record<string, string>} */
const versions = { ...run0.versions, postgresql: serverVersion }
console.log(`scale-out: the chat workload on PostgreSQL ${serverVersion} with several writer processes, ${runs} run(s)`)
console.log(`  cells: ${cells.map(c => c.label).join(', ')}; ${turns === 'pairs' ? 'one at a time, SQL between every two others' : turns === 'cells' ? 'one at a time' : 'taking turns slice by slice'}`)
console.log(`  processes: ${warmOps > 0 ? `steady state (--warm-ops ${warmOps}: each process ran ${warmOps} of each measured operation, its own inputs${shardChats ? ' (appends: about as many, those to its own chats)' : ''}, before the timed slices, untimed)` : 'cold (fresh processes: the timed slices follow a short warm-up, 20 createUser, 10 createChat and 100 addChatMessage split among a cell\'s processes; --warm-ops N for the steady state)'}`)
console.log(`  data: ${fmt(sizes.users)} users, ${fmt(sizes.chats)} chats of ${sizes.members} members, ${fmt(sizes.messages)} messages; ${concurrency} calls in flight per process; scrypt N=${scryptN}${shardChats ? '; messages sharded: each process sends to its own chats (--shard-chats)' : ''}`)
console.log(`  PostgreSQL: ${server.throwaway ? 'a throwaway cluster' : 'LEVELKIT_PG_URL'}; fsync ${settings.fsync}, synchronous_commit ${settings.synchronous_commit}, full_page_writes ${settings.full_page_writes}, shared_buffers ${settings.shared_buffers} (8 kB pages)${pgSet.map(([name]) => `, ${name} ${settings[name]}`).join('')}`)
printMachine({ ...run0, versions }, ['pg', 'classic-level'])

/** A worker process, asked one thing at a time. */
class Worker {
  /** @type {Array<{ resolve: (value: any) => void, reject: (err: Error) => void }>} */
  #waiting = []
  #exited = false

  constructor () {
    this.child = fork(WORKER, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    this.child.on('message', (/** @type {any} */ answer) => {
      const waiter = this.#waiting.shift()
      if (!waiter) return
      if (answer.ok) waiter.resolve(answer.result)
      else waiter.reject(Object.assign(new Error(answer.error), { code: answer.code }))
    })
    this.child.on('exit', (code, signal) => {
      this.#exited = true
      for (const waiter of this.#waiting.splice(0)) waiter.reject(new Error(`A worker exited with ${signal || code}`))
    })
  }

  /** @param {string} type @param {Record<string, unknown>} [message] @returns {Promise<any>} */
  ask (type, message = {}) {
    if (this.#exited) return Promise.reject(new Error('The worker has exited'))
    return new Promise((resolve, reject) => {
      this.#waiting.push({ resolve, reject })
      this.child.send({ type, ...message })
    })
  }

  async end () {
    if (this.#exited) return
    const exited = new Promise(resolve => this.child.once('exit', resolve))
    this.child.disconnect()
    await exited
  }
}

/**
 * One cell of one run, opened: its processes on its fresh tables, the data
 * set filled by the first, the others opened after it, all warmed up. A cell
 * whose second process cannot open its table (LEVELKIT_LOCKED) is n/a.
 * @param {Cell} cell @param {number} run @param {any} work
 */
async function openCell (cell, run, work) {
  const name = `scaleout_${process.pid.toString(36)}_${run}_${cell.key.replace(/-/g, '_')}`
  const location = path.join(args['db-dir'], `levelkit-scale-out-${process.pid}-${run}-${cell.key}`)
  fs.rmSync(location, { recursive: true, force: true })
  /** @param {number} rank */
  const config = rank => ({ kind: cell.kind, rank, processes: cell.processes, connectionString: server.connectionString, schema: name, table: name, location, concurrency, scryptN, userChats: cell.userChats, sqlIds: cell.sqlIds, idleMs, library: cell.library, shardChats })
  /** @type {Worker[]} */
  const workers = []
  const handle = {
    cell,
    workers,
    /** @type {string | null} */
    na: null,
    /** @type {any} */
    populateMs: null,
    sampleAnswer: '',
    /** @type {{ ops: number, ms: number, cpuMs: number, queries: number } | null} --warm-ops, over the cell's processes */
    warmedUp: null,
    async cleanup () {
      await Promise.all(workers.map(w => w.end()))
      fs.rmSync(location, { recursive: true, force: true })
      if (cell.kind === 'sql') await admin.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`)
      // With its lock tables, which a serializable cell's open made (64 of them).
      if (cell.kind !== 'sql' && cell.kind !== 'levelkit-leveldb') await admin.query(postgresTables(name).map(table => `DROP TABLE IF EXISTS "${table}"`).join('; '))
    }
  }
  const first = new Worker()
  workers.push(first)
  await first.ask('open', { config: config(0), work })
  handle.populateMs = await first.ask('populate')
  handle.sampleAnswer = await first.ask('sample', { seed: seed + run - 1 })
  for (let rank = 1; rank < cell.processes; rank++) {
    const worker = new Worker()
    workers.push(worker)
    try {
      await worker.ask('open', { config: config(rank), work })
    } catch (err) {
      if (/** @type {any} */ (err).code !== 'LEVELKIT_LOCKED') throw err
      handle.na = NA
      await handle.cleanup()
      return handle
    }
  }
  await Promise.all(workers.map(w => w.ask('warmup')))
  if (warmOps > 0) {
    progress.label = `run ${run}/${runs}: --warm-ops ${warmOps}, ${cell.label}`
    const parts = await Promise.all(workers.map(w => w.ask('steady')))
    handle.warmedUp = { ops: parts.reduce((sum, p) => sum + p.ops, 0), ms: max(parts.map(p => p.ms)), cpuMs: parts.reduce((sum, p) => sum + p.cpuMs, 0), queries: parts.reduce((sum, p) => sum + p.queries, 0) }
  }
  return handle
}

/**
 * Inputs [from, to) of an operation through one cell, all its processes at
 * once, each taking every P-th input.
 * @param {Awaited<ReturnType<typeof openCell>>} handle @param {string} op @param {number} from @param {number} to
 */
async function slice (handle, op, from, to) {
  const pgBefore = postmaster === null ? null : processTreeCpuMs(postmaster)
  const machineBefore = machineCpuMs()
  const wallBefore = performance.now()
  const parts = await Promise.all(handle.workers.map(w => w.ask('phase', { op, from, to })))
  const wallMs = performance.now() - wallBefore
  const pgAfter = postmaster === null ? null : processTreeCpuMs(postmaster)
  const machineAfter = machineCpuMs()
  return {
    ms: max(parts.map(p => p.end)) - min(parts.map(p => p.start)),
    ops: parts.reduce((sum, p) => sum + p.ops, 0),
    latencies: parts.flatMap(p => p.latencies),
    retries: parts.some(p => p.retries === null) ? null : parts.reduce((sum, p) => sum + p.retries, 0),
    queries: parts.reduce((sum, p) => sum + p.queries, 0),
    connects: parts.reduce((sum, p) => sum + p.connects, 0),
    // CPU over the slice as measured from here (its wall time includes the
    // messages to and from the workers): the workers', PostgreSQL's, the machine's.
    wallMs,
    nodeCpuMs: parts.reduce((sum, p) => sum + p.cpuMs, 0),
    pgCpuMs: pgBefore === null || pgAfter === null ? null : pgAfter - pgBefore,
    machineBusyMs: machineBefore === null || machineAfter === null ? null : machineAfter.busyMs - machineBefore.busyMs,
    lock: parts.some(p => p.lock === null) ? null : parts.reduce((sum, p) => addStats(sum, p.lock), {})
  }
}

/** Sum two stats objects (numbers, and objects of numbers by name). @param {Record<string, any>} a @param {Record<string, any>} b @returns {Record<string, any>} */
function addStats (a, b) {
  const out = { ...a }
  for (const [key, value] of Object.entries(b)) {
    out[key] = typeof value === 'number' ? (out[key] ?? 0) + value : addStats(out[key] ?? {}, value)
  }
  return out
}

/** An empty accumulator of one operation's slices through one cell. */
function newAcc () {
  return { ms: 0, ops: 0, latencies: /** @type {number[]} */ ([]), retries: /** @type {number | null} */ (0), queries: 0, connects: 0, slices: /** @type {number[]} */ ([]), wallMs: 0, nodeCpuMs: 0, pgCpuMs: /** @type {number | null} */ (0), machineBusyMs: /** @type {number | null} */ (0), lock: /** @type {Record<string, any> | null} */ ({}) }
}

/** Add a slice to an accumulator. @param {ReturnType<typeof newAcc>} a @param {Awaited<ReturnType<typeof slice>>} part */
function accumulate (a, part) {
  a.ms += part.ms
  a.ops += part.ops
  for (const l of part.latencies) a.latencies.push(l)
  a.retries = a.retries === null || part.retries === null ? null : a.retries + part.retries
  a.queries += part.queries
  a.connects += part.connects
  a.slices.push(part.ops / part.ms * 1000)
  a.wallMs += part.wallMs
  a.nodeCpuMs += part.nodeCpuMs
  a.pgCpuMs = a.pgCpuMs === null || part.pgCpuMs === null ? null : a.pgCpuMs + part.pgCpuMs
  a.machineBusyMs = a.machineBusyMs === null || part.machineBusyMs === null ? null : a.machineBusyMs + part.machineBusyMs
  a.lock = a.lock === null || part.lock === null ? null : addStats(a.lock, part.lock)
}

/** An operation's result through a cell, from its accumulator. @param {ReturnType<typeof newAcc>} a */
function resultOf (a) {
  return {
    ops: a.ops,
    ms: a.ms,
    opsPerSec: a.ops / a.ms * 1000,
    p50Ms: quantile(a.latencies, 0.5),
    p99Ms: quantile(a.latencies, 0.99),
    retries: a.retries,
    roundTrips: a.queries / a.ops,
    connectsPerOp: a.connects / a.ops,
    sliceOpsPerSec: a.slices,
    // CPU seconds per wall second (cores busy): the cell's Node processes, PostgreSQL, the whole machine.
    nodeCores: a.nodeCpuMs / a.wallMs,
    pgCores: a.pgCpuMs === null ? null : a.pgCpuMs / a.wallMs,
    machineCores: a.machineBusyMs === null ? null : a.machineBusyMs / a.wallMs,
    // CPU milliseconds per operation: the cell's Node processes, PostgreSQL
    // (a count of work that load does not change as it does rates; issue 18's
    // Node side was the limit at 4 processes on 2 cores).
    nodeCpuMsPerOp: a.nodeCpuMs / a.ops,
    pgCpuMsPerOp: a.pgCpuMs === null ? null : a.pgCpuMs / a.ops,
    lock: a.lock
  }
}

/** The slices [from, to) of an operation's inputs. @param {any} work @param {string} op */
function slicesOf (work, op) {
  const total = work.inputs[op].length
  const count = Math.max(1, Math.min(slices, total))
  return Array.from({ length: count }, (_, k) => [Math.floor(k * total / count), Math.floor((k + 1) * total / count)])
}

/**
 * A cell's final check, its processes' end; what the run keeps of it.
 * @param {Awaited<ReturnType<typeof openCell>>} h @param {Record<string, any>} results
 */
async function closeCell (h, results) {
  const check = ops.length === OP_KEYS.length ? await h.workers[0].ask('check') : null
  const closed = await Promise.all(h.workers.map(w => w.ask('close')))
  return { results, populateMs: h.populateMs, sampleAnswer: h.sampleAnswer, check, peakRssBytes: closed.map(c => c.peakRssBytes), warmedUp: h.warmedUp }
}

/**
 * Every slice of every operation through an opened cell: its accumulators
 * and results by operation.
 * @param {Awaited<ReturnType<typeof openCell>>} h @param {number} run @param {any} work @param {number} visits how many cells the run measures
 */
async function measureCell (h, run, work, visits) {
  /** @type {Record<string, ReturnType<typeof newAcc>>} */
  const accs = {}
  /** @type {Record<string, any>} */
  const results = {}
  for (const op of ops) {
    progress.label = `run ${run}/${runs}: ${h.cell.label}, ${op}`
    const a = newAcc()
    for (const [from, to] of slicesOf(work, op)) {
      accumulate(a, await slice(h, op, from, to))
      progress.update(slicesDone += 1 / visits)
    }
    accs[op] = a
    results[op] = resultOf(a)
  }
  return { accs, results }
}

/** Two accumulators of one operation through one cell as one. @param {ReturnType<typeof newAcc>} a @param {ReturnType<typeof newAcc>} b */
function mergeAcc (a, b) {
  return {
    ms: a.ms + b.ms,
    ops: a.ops + b.ops,
    latencies: [...a.latencies, ...b.latencies],
    retries: a.retries === null || b.retries === null ? null : a.retries + b.retries,
    queries: a.queries + b.queries,
    connects: a.connects + b.connects,
    slices: [...a.slices, ...b.slices],
    wallMs: a.wallMs + b.wallMs,
    nodeCpuMs: a.nodeCpuMs + b.nodeCpuMs,
    pgCpuMs: a.pgCpuMs === null || b.pgCpuMs === null ? null : a.pgCpuMs + b.pgCpuMs,
    machineBusyMs: a.machineBusyMs === null || b.machineBusyMs === null ? null : a.machineBusyMs + b.machineBusyMs,
    lock: a.lock === null || b.lock === null ? null : addStats(a.lock, b.lock)
  }
}

/**
 * The order of the cells in one run with --turns pairs: for each process
 * count, the SQL cells of that count between every two other cells of it
 * and at both ends (S A S B S); rising counts in odd runs, the whole order
 * reversed in even runs. With --turns cells, every cell once, in order in
 * odd runs and reversed in even runs.
 * @param {number} run @returns {Cell[]}
 */
function visitOrder (run) {
  /** @type {Cell[]} */
  let order = cells
  if (turns === 'pairs') {
    const counts = [...new Set(cells.map(c => c.processes))].sort((a, b) => a - b)
    order = counts.flatMap(p => {
      const sql = cells.filter(c => c.kind === 'sql' && c.processes === p)
      const others = cells.filter(c => c.kind !== 'sql' && c.processes === p)
      return sql.length === 0 ? others : [...sql, ...others.flatMap(c => [c, ...sql])]
    })
  }
  return run % 2 === 1 ? order : [...order].reverse()
}

/**
 * One run with --turns pairs or cells: one cell at a time (visitOrder()),
 * each started, filled, measured through every operation, checked and
 * ended, its tables dropped, before the next: no other cell's processes or
 * connections while it is measured. A cell measured more than once (SQL,
 * with pairs) is reported over all its measurements; with pairs, each
 * other cell's `paired` holds, by SQL cell and operation, the mean ops/s
 * of the SQL measurements next to it (before and after).
 * @param {number} run @param {any} work
 */
async function runByCells (run, work) {
  const order = visitOrder(run)
  /** @type {Array<{ cell: Cell, out: any, accs: Record<string, ReturnType<typeof newAcc>> | null }>} */
  const visits = []
  for (const cell of order) {
    progress.label = `run ${run}/${runs}: fill ${cell.label}`
    const h = await openCell(cell, run, work)
    try {
      if (h.na !== null) {
        visits.push({ cell, out: { na: h.na }, accs: null })
        for (const op of ops) progress.update(slicesDone += slicesOf(work, op).length / order.length)
        continue
      }
      const { accs, results } = await measureCell(h, run, work, order.length)
      progress.label = `run ${run}/${runs}: check ${cell.label}`
      visits.push({ cell, out: await closeCell(h, results), accs })
    } finally {
      await h.cleanup()
    }
  }
  /** @type {Record<string, any>} */
  const out = {}
  for (const cell of cells) {
    const mine = visits.filter(v => v.cell === cell)
    const first = mine[0].out
    if (mine.length === 1 || first.na) {
      out[cell.key] = first
      continue
    }
    // Measured several times: one result over all, every check's problems.
    const results = Object.fromEntries(ops.map(op => [op, resultOf(mine.map(v => /** @type {any} */ (v.accs)[op]).reduce(mergeAcc))]))
    const problemsSeen = mine.flatMap(v => v.out.check?.problems ?? [])
    mine.forEach((v, i) => {
      if (v.out.sampleAnswer !== first.sampleAnswer) problemsSeen.push(`its measurement ${i + 1} answered the sample reads unlike its first`)
      if (v.out.check && v.out.check.digest !== first.check.digest) problemsSeen.push(`its measurement ${i + 1}'s final state differs from its first's`)
    })
    out[cell.key] = { ...first, results, check: first.check && { ...first.check, problems: problemsSeen }, measured: mine.length }
  }
  if (turns === 'pairs') {
    visits.forEach((v, i) => {
      if (v.cell.kind === 'sql' || v.out.na) return
      /** @type {Record<string, Record<string, number>>} */
      const paired = {}
      for (const against of v.cell.againstEach) {
        // The nearest measurement of `against` before and after this one.
        const before = visits.slice(0, i).reverse().find(x => x.cell.key === against && !x.out.na)
        const after = visits.slice(i + 1).find(x => x.cell.key === against && !x.out.na)
        const near = [before, after].filter(x => x !== undefined)
        if (near.length === 0) continue
        paired[against] = Object.fromEntries(ops.map(op => [op, near.reduce((sum, x) => sum + /** @type {any} */ (x).out.results[op].opsPerSec, 0) / near.length]))
      }
      out[v.cell.key].paired = paired
    })
  }
  return out
}

/**
 * One run with --turns slices: every cell opened, then each operation in
 * --slices slices, the cells taking turns slice by slice (A B C, C B A,
 * ...: which goes first alternates by slice and by run), so drift and
 * background load hit all of them; then each cell's final check.
 * @param {number} run @param {any} work
 */
async function runBySlices (run, work) {
  /** @type {Array<Awaited<ReturnType<typeof openCell>>>} */
  const handles = []
  try {
    for (const cell of cells) {
      progress.label = `run ${run}/${runs}: fill ${cell.label}`
      handles.push(await openCell(cell, run, work))
    }
    const live = handles.filter(h => h.na === null)
    /** @type {Record<string, Record<string, any>>} */
    const results = Object.fromEntries(live.map(h => [h.cell.key, {}]))
    for (const op of ops) {
      progress.label = `run ${run}/${runs}: ${op}`
      const acc = live.map(newAcc)
      let k = 0
      for (const [from, to] of slicesOf(work, op)) {
        const order = (k + run) % 2 === 0 ? live.map((_, i) => i) : live.map((_, i) => live.length - 1 - i)
        for (const i of order) accumulate(acc[i], await slice(live[i], op, from, to))
        progress.update(++slicesDone)
        k++
      }
      live.forEach((h, i) => { results[h.cell.key][op] = resultOf(acc[i]) })
    }
    /** @type {Record<string, any>} */
    const out = {}
    for (const h of handles) {
      if (h.na !== null) {
        out[h.cell.key] = { na: h.na }
        continue
      }
      progress.label = `run ${run}/${runs}: check ${h.cell.label}`
      out[h.cell.key] = await closeCell(h, results[h.cell.key])
    }
    return out
  } finally {
    for (const h of handles) await h.cleanup()
  }
}

/** One run, as --turns says. @param {number} run @param {any} work */
function runOnce (run, work) {
  return turns === 'slices' ? runBySlices(run, work) : runByCells(run, work)
}

/** @type {Array<{ run: number, loadAverage: number[], cells: Record<string, any> }>} */
const perRun = []
/** @type {string[]} */
const problems = []
const progress = new Progress('scale-out', runs * ops.length * slices)
let slicesDone = 0
try {
  for (let run = 1; run <= runs; run++) {
    const work = makeWorkload(/** @type {any} */ ({ ...sizes, pairChats: 0, seed: seed + run - 1, run, n, zipf: 0 }))
    // --warm-ops: every process's own inputs, as many lists as the most processes of a cell.
    if (warmOps > 0) Object.assign(work, { steady: warmInputs(work, { perProcess: warmOps, processes: Math.max(...cells.map(c => c.processes)), ops, memberCount: Math.min(sizes.members, sizes.users), seed, run }) })
    const results = await runOnce(run, work)
    const measured = cells.filter(c => !results[c.key].na)
    const reference = results[measured[0].key]
    for (const cell of measured) {
      const r = results[cell.key]
      if (r.sampleAnswer !== reference.sampleAnswer) problems.push(`run ${run}: ${cell.label} answered the sample reads unlike ${measured[0].label}`)
      if (r.check) {
        for (const p of r.check.problems.slice(0, 5)) problems.push(`run ${run}, ${cell.label}: ${p}`)
        if (r.check.digest !== reference.check.digest) problems.push(`run ${run}: ${cell.label}'s final state differs from ${measured[0].label}'s`)
      }
    }
    perRun.push({ run, loadAverage: os.loadavg(), cells: results })
    progress.done()
    console.log(`  run ${run}: load ${loadText(os.loadavg())}; ${measured.map(c => `${c.label} ${fmt(ops.reduce((s, op) => s + results[c.key].results[op].ops, 0) / ops.reduce((s, op) => s + results[c.key].results[op].ms / 1000, 0))} ops/s`).join(', ')}`)
  }
} finally {
  await admin.end()
  await server.stop()
}

/** The median, or null if any is null. @param {Array<number | null>} values */
function nullableMedian (values) {
  return values.some(v => v === null) ? null : median(/** @type {number[]} */ (values))
}

/**
 * The SQL cell `against`'s ops/s for a cell's ratio in run `r`: the
 * measurements next to the cell (`paired`, --turns pairs), else the run's.
 * @param {any} r @param {Cell} cell @param {string} against @param {string} op @param {string} [key] the cell's key, if not cell.key
 */
function sqlRate (r, cell, against, op, key = cell.key) {
  const paired = r.cells[key]?.paired?.[against]?.[op]
  if (paired !== undefined) return paired
  return r.cells[against]?.results?.[op] ? r.cells[against].results[op].opsPerSec : NaN
}

// Per operation and cell: medians over runs; ratios within each run.
/** @type {Record<string, Record<string, any>>} */
const summary = {}
for (const op of ops) {
  summary[op] = {}
  for (const cell of cells) {
    const measured = perRun.filter(r => !r.cells[cell.key].na)
    if (measured.length === 0) {
      summary[op][cell.key] = { label: cell.label, processes: cell.processes, na: NA }
      continue
    }
    const rate = measured.map(r => r.cells[cell.key].results[op].opsPerSec)
    /** @param {string} against */
    const ratiosAgainst = against => measured.map(r => r.cells[cell.key].results[op].opsPerSec / sqlRate(r, cell, against, op)).filter(Number.isFinite)
    const ratios = ratiosAgainst(cell.against)
    // Against each SQL variant with as many processes (--sql-ids), in the same run.
    const ratioEach = Object.fromEntries(cell.againstEach.map(against => {
      const each = ratiosAgainst(against)
      return [against, each.length > 0 ? median(each) : null]
    }))
    // Against the same store with one process, in the same run.
    const one = cell.one
    const scalings = cell.processes === 1 ? [] : measured.map(r => r.cells[one]?.results?.[op] ? r.cells[cell.key].results[op].opsPerSec / r.cells[one].results[op].opsPerSec : NaN).filter(Number.isFinite)
    const retries = measured.map(r => r.cells[cell.key].results[op].retries)
    // Against the same cell over the base library (--base-library): the
    // ratio of their ratios to SQL in each run, then the median.
    const base = cell.base
    const againstBase = base === undefined
      ? []
      : measured.filter(r => r.cells[base] && !r.cells[base].na).map(r => (r.cells[cell.key].results[op].opsPerSec / sqlRate(r, cell, cell.against, op)) / (r.cells[base].results[op].opsPerSec / sqlRate(r, cell, cell.against, op, base))).filter(Number.isFinite)
    summary[op][cell.key] = {
      label: cell.label,
      processes: cell.processes,
      ops: n[op],
      opsPerSec: median(rate),
      p50Ms: median(measured.map(r => r.cells[cell.key].results[op].p50Ms)),
      p99Ms: median(measured.map(r => r.cells[cell.key].results[op].p99Ms)),
      against: cell.against,
      ratio: ratios.length > 0 ? median(ratios) : null,
      ratioPerRun: ratios,
      ratioEach,
      scaling: scalings.length > 0 ? median(scalings) : null,
      againstBase: againstBase.length > 0 ? median(againstBase) : null,
      againstBasePerRun: againstBase,
      retries: retries.includes(null) ? null : retries.reduce((a, b) => a + b, 0),
      roundTrips: median(measured.map(r => r.cells[cell.key].results[op].roundTrips)),
      connectsPerOp: median(measured.map(r => r.cells[cell.key].results[op].connectsPerOp)),
      nodeCores: median(measured.map(r => r.cells[cell.key].results[op].nodeCores)),
      pgCores: nullableMedian(measured.map(r => r.cells[cell.key].results[op].pgCores)),
      machineCores: nullableMedian(measured.map(r => r.cells[cell.key].results[op].machineCores)),
      nodeCpuMsPerOp: median(measured.map(r => r.cells[cell.key].results[op].nodeCpuMsPerOp)),
      pgCpuMsPerOp: nullableMedian(measured.map(r => r.cells[cell.key].results[op].pgCpuMsPerOp)),
      // Summed over the runs (as retries are).
      lock: measured.some(r => r.cells[cell.key].results[op].lock == null) ? null : measured.reduce((sum, r) => addStats(sum, r.cells[cell.key].results[op].lock), {}),
      opsPerSecPerRun: rate,
      runs: measured.length
    }
  }
}

const CSV_COLUMNS = ['run', 'operation', 'cell', 'kind', 'processes', 'ops', 'ms', 'ops_per_sec', 'p50_ms', 'p99_ms', 'retries', 'round_trips_per_op', 'connects_per_op', 'node_cores', 'pg_cores', 'machine_cores', 'node_cpu_ms_per_op', 'pg_cpu_ms_per_op', 'ratio_vs_sql']
const cores = (/** @type {number | null} */ x) => x === null ? '?' : x.toFixed(2)
const cpuMs = (/** @type {number | null} */ x) => x === null ? '?' : x.toFixed(x < 10 ? 2 : 1)
// One ratio column per SQL variant (--sql-ids).
const ratioHeads = sqlIdsList.length === 1 ? ['× SQL (same processes)'] : sqlIdsList.map(ids => ids === 'serial' ? '× SQL serial ids' : '× SQL gap-free ids')
// With --base-library, a column of each cell against the same over the base.
const baseHeads = baseLibrary === null ? [] : ['× base library']
const table = [['operation', 'cell', 'ops/s', 'p50 ms', 'p99 ms', ...ratioHeads, ...baseHeads, '× one process', 'retries', 'round trips/op', 'connections opened/op', 'cores: node / PG / machine', 'CPU ms/op: node / PG']]
for (const op of ops) {
  const label = OPERATIONS.find(o => o.key === op)?.label ?? op
  for (const cell of cells) {
    const s = summary[op][cell.key]
    if (s.na) table.push([label, cell.label, s.na, '', '', ...ratioHeads.map(() => ''), ...baseHeads.map(() => ''), '', '', '', '', '', ''])
    else {
      const levelkitPg = cell.kind === 'levelkit-pg' || cell.kind === 'levelkit-pg-keys' || cell.kind === 'levelkit-pg-serializable'
      const ratios = cell.againstEach.map(against => {
        const r = s.ratioEach[against]
        if (against === cell.key) return 'reference'
        if (r === null) return '–'
        const goal = levelkitPg ? (r >= 0.7 ? ' (≥0.7 met)' : ' (≥0.7 MISSED)') : ''
        return `${r.toFixed(2)}×${goal}`
      })
      const againstBase = baseHeads.map(() => s.againstBase === null ? '–' : `${s.againstBase.toFixed(2)}×`)
      table.push([label, cell.label, fmt(s.opsPerSec), fmt(s.p50Ms, 2), fmt(s.p99Ms, 2), ...ratios, ...againstBase, s.scaling === null ? '–' : `${s.scaling.toFixed(2)}×`, s.retries === null ? '–' : String(s.retries), cell.kind === 'levelkit-leveldb' ? '–' : s.roundTrips.toFixed(2), cell.kind === 'levelkit-leveldb' ? '–' : s.connectsPerOp.toFixed(2), `${cores(s.nodeCores)} / ${cores(s.pgCores)} / ${cores(s.machineCores)}`, `${cpuMs(s.nodeCpuMsPerOp)} / ${cpuMs(s.pgCpuMsPerOp)}`])
    }
  }
}
console.log()
printTable(table, 2)
console.log()
console.log(`  Medians over ${runs} run(s); ops/s = every process's ops / (last end - first start); p50/p99 over every call of every process.`)
console.log(turns === 'pairs'
  ? '  × SQL = ops/s / the hand-written SQL store\'s ops/s with as many processes, measured just before and after the cell (the mean of the two) in the same run, then the median over runs (levelkit on LevelDB: against SQL ×1). A SQL cell\'s ops/s is over all its measurements of the run.'
  : '  × SQL = ops/s / the hand-written SQL store\'s ops/s with as many processes, in the same run, then the median (levelkit on LevelDB: against SQL ×1).')
if (baseLibrary !== null) console.log(`  × base library = the cell's × SQL / the same cell's over ${baseLibrary} (× SQL, its own SQL neighbours), in the same run, then the median.`)
if (sqlIdsList.length > 1) console.log('  SQL serial ids: user and chat ids from identity columns (a sequence: gaps, as nextval is not transactional); gap-free ids: from a counters row bumped in the inserting statement (no gap, levelkit\'s guarantee; inserts of one id space take turns on the row\'s lock).')
console.log('  retries: the SQL store\'s operations PostgreSQL aborted (deadlock, serialization failure) and it ran again; levelkit with the table lock retries none (its writes are serialized by the shared writer lock); with key locks, the critical sections run again on a busy key; serializable, the critical sections run again after a serialization failure or deadlock (40001, 40P01).')
console.log('  round trips/op: statements sent to PostgreSQL by every process of the cell (a query of several statements counts once) / ops, the median over runs.')
console.log(`  connections opened/op: connections to PostgreSQL every process of the cell opened during its slices / ops, the median over runs (a new backend, cold caches). Turns: ${turns === 'pairs' ? `one cell at a time, SQL and the other side alternating (its processes started for it and ended after it; pools keep idle connections ${idleMs} ms)` : turns === 'cells' ? `one cell at a time (its processes started for it and ended after it; pools keep idle connections ${idleMs} ms)` : `the cells took turns slice by slice, all open for the whole run (pools let idle connections go after ${idleMs} ms)`}.`)
console.log('  × one process = ops/s / the same store\'s with one process, in the same run, then the median: how throughput rises with processes.')
console.log(`  cores: CPU seconds per wall second over the cell's slices (medians over runs): its Node processes' (process.cpuUsage()), PostgreSQL's (the postmaster and its backends, /proc${postmaster === null ? ': not measured, the server is not on this machine' : ''}), and the whole machine's busy time (/proc/stat: other work included), of ${os.cpus().length}.`)
console.log(warmOps > 0
  ? `  Steady state: before its timed slices, each process of every cell ran ${warmOps} of each measured operation (${ops.join(', ')}) with inputs of its own (the same for every cell, not the timed ones), --concurrency in flight, all the cell's processes at once, untimed; the final check checks their writes too, and leaves them out of the digest that cells of every process count share.`
  : '  Cold: every cell\'s processes are fresh (started for it; a short warm-up, 20 createUser, 10 createChat, 100 addChatMessage split among them), so the slices include V8\'s warm-up of their code; --warm-ops N measures the steady state.')
console.log(`  CPU ms/op: CPU milliseconds per operation over the cell's slices (medians over runs), its Node processes' and PostgreSQL's${postmaster === null ? ' (not measured)' : ''}: the work an operation costs each side, which load changes less than it changes rates.`)
// Where the processes wait for each other, per operation: the lock's counters summed over the runs, per op.
const lockTable = [['operation', 'cell', 'per op: what the lock counted (summed over runs ÷ ops)']]
for (const op of ops) {
  const label = OPERATIONS.find(o => o.key === op)?.label ?? op
  for (const cell of cells) {
    const s = summary[op][cell.key]
    if (s.na || !s.lock) continue
    const total = s.ops * s.runs
    /** @param {Record<string, any>} stats @param {string} prefix @returns {string[]} */
    const parts = (stats, prefix) => Object.entries(stats).flatMap(([key, value]) => typeof value === 'number'
      ? [`${prefix}${key} ${(value / total).toFixed(value / total >= 10 ? 1 : 3)}`]
      : parts(value, `${prefix}${key}.`))
    lockTable.push([label, cell.label, parts(s.lock, '').join(', ') || 'none'])
  }
}
if (lockTable.length > 1) {
  console.log()
  printTable(lockTable, 2)
  console.log('  table lock: acquired = times the shared writer lock was taken, waitMs = ms waiting for it (with its round trip), released = times it was let go (the holding\'s end and the unlock in one query). keys/serializable: transactions, statements, retries (sections run again), failures (COMMITs refused), failedOn.<where>:<kind> (update: a row changed since the snapshot; readWrite: a read made stale), busyOn.<namespace> (a key lock found held by another process), firstStatementMs (a key transaction\'s first statement, which waits for its locks; serializable: the opening query, its locks\' wait, BEGIN and first statement), contended (serializable: transactions begun in contention mode, after a failure on a sequence key: each took that key\'s lock first), sequenceLocked (serializable: transactions whose first statement read a sequence key, which took its lock first), contentionWaits (of those two, the ones that waited for a lock: another process held it; each puts or keeps the key in the mode, not the table\'s turn), contentionEntered / contentionLeft (a sequence key, or the table\'s turn, entering / leaving the mode), tableContended (serializable: transactions begun holding the table\'s turn, taken after two failed transactions in a row).')
}
const pop = (/** @type {string} */ key) => {
  const measured = perRun.filter(r => !r.cells[key].na)
  return ['users', 'chats', 'messages'].map(k => `${k} ${fmt(median(measured.map(r => r.cells[key].populateMs[k])) / 1000, 2)} s`).join(', ')
}
console.log(`  Filling the data set through each store (not timed above): ${[...new Set(cells.filter(c => c.processes === 1).map(c => c.key))].map(key => `${cells.find(c => c.key === key)?.label}: ${pop(key)}`).join('; ')}.`)
if (problems.length === 0) {
  console.log(ops.length === OP_KEYS.length
    ? '  Every cell answered the sample reads alike after being filled, and its final state checked out (message ids 1..N per chat without gap, the users and chats created) with the same digest.'
    : '  Every cell answered the sample reads alike after being filled (the final check needs every operation: not run).')
}

writeCsv(path.join(run0.outDir, 'results.csv'), CSV_COLUMNS,
  perRun.flatMap(r => ops.flatMap(op => cells.filter(c => !r.cells[c.key].na).map(c => {
    const x = r.cells[c.key].results[op]
    // This run's ratio against SQL (paired with --turns pairs); empty for SQL itself.
    const ratio = c.kind === 'sql' ? '' : x.opsPerSec / sqlRate(r, c, c.against, op)
    return [r.run, op, c.key, c.kind, c.processes, x.ops, x.ms, x.opsPerSec, x.p50Ms, x.p99Ms, x.retries, x.roundTrips, x.connectsPerOp, x.nodeCores, x.pgCores, x.machineCores, x.nodeCpuMsPerOp, x.pgCpuMsPerOp, ratio]
  }))))

const colors = { sql: ['#1f77b4', '#6baed6', '#c6dbef', '#08519c'], 'sql-gapfree': ['#17becf', '#9edae5', '#d9f2f5', '#0e7c87'], 'levelkit-pg': ['#d62728', '#fb6a4a', '#fcbba1', '#a50f15'], 'levelkit-pg-keys': ['#9467bd', '#bcbddc', '#dadaeb', '#54278f'], 'levelkit-pg-serializable': ['#8c564b', '#c49c94', '#e7cbc1', '#5b3a32'], 'levelkit-leveldb': ['#2ca02c'] }
const shownCells = cells.filter(c => ops.some(op => !summary[op][c.key].na))
const svg = barChartSvg({
  title: `Scale-out: the chat workload on PostgreSQL, ops/s (median of ${runs} run${runs === 1 ? '' : 's'})`,
  subtitle: `${fmt(sizes.users)} users, ${fmt(sizes.chats)} chats × ${sizes.members}, ${fmt(sizes.messages)} messages, ${concurrency} in flight per process${shardChats ? ', chats sharded' : ''}, ${warmOps > 0 ? `steady (--warm-ops ${warmOps})` : 'cold processes'}; ${run0.machine.cpu}, ${run0.machine.cores} cores, PostgreSQL ${serverVersion}, node ${versions.node}, ${run0.startedAt.toISOString().slice(0, 10)}`,
  yLabel: 'Operations per second',
  categories: ops.map(op => OPERATIONS.find(o => o.key === op)?.label ?? op),
  series: shownCells.map(c => ({
    name: c.label,
    values: ops.map(op => summary[op][c.key].na ? 0 : summary[op][c.key].opsPerSec),
    color: ((/** @type {string[]} */ palette) => palette[cells.filter(x => x.kind === c.kind && x.sqlIds === c.sqlIds).indexOf(c) % palette.length])(c.sqlIds === 'gapfree' ? colors['sql-gapfree'] : colors[c.kind])
  })),
  notes: summary[ops[0]]['levelkit-pg-1'] && !summary[ops[0]]['levelkit-pg-1'].na ? ops.map(op => `${summary[op]['levelkit-pg-1'].ratio?.toFixed(2)}×`) : undefined,
  notesLabel: 'top: levelkit on PostgreSQL ×1 / SQL ×1 (median ratio)'
})
fs.writeFileSync(path.join(run0.outDir, 'scale-out.svg'), svg)

const loadAfter = os.loadavg()
printProblems(problems)
finishRun(run0.outDir, { name: 'scale-out', startedAt: run0.startedAt, machine: run0.machine, versions, loadBefore: run0.loadBefore, loadAfter }, {
  postgres: { throwaway: server.throwaway, settings },
  options: { runs, turns, idleMs, warmOps, baseLibrary, writers, processes, sqlIds: sqlIdsList, leveldb: !args['no-leveldb'], ...sizes, concurrency, slices, scryptN, seed, n, ops, shardChats },
  cells,
  csvColumns: CSV_COLUMNS,
  summary,
  problems,
  runs: perRun.map(r => ({
    run: r.run,
    loadAverage: r.loadAverage,
    cells: Object.fromEntries(Object.entries(r.cells).map(([key, c]) => [key, c.na ? { na: c.na } : { populateMs: c.populateMs, peakRssBytes: c.peakRssBytes, check: c.check && { problems: c.check.problems }, results: c.results, ...(c.measured ? { measured: c.measured } : {}), ...(c.paired ? { paired: c.paired } : {}), ...(c.warmedUp ? { warmedUp: c.warmedUp } : {}) }]))
  }))
}, ['results.csv', 'scale-out.svg'])
if (problems.length > 0) process.exitCode = 1
