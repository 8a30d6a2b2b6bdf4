// The chat workload: levelkit's ChatStore (classic-level, on disk) against a
// normalised schema on better-sqlite3 (a file database: WAL,
// synchronous=NORMAL, foreign keys, indexes, prepared statements), same
// machine, same data, side by side in one process (issue 6, part 2).
//
// Operations (ChatStore's public API; the SQLite side answers the same
// calls with the same shapes, bench/lib/chat-workload-sides.js):
//   reads, on the pre-populated data as configured:
//     getUser by username, last 50 messages (getChatMessages n=50),
//     getChats of a user (with each chat's members, like ChatStore),
//     checkChatMember (half members, half not), existsChat (half pairs that
//     have a chat of their own, half random pairs)
//   writes, each awaited one at a time and with --concurrency (64) in flight:
//     createUser, createChat with --members (20), addChatMessage
// levelkit group-commits concurrent writes; better-sqlite3 is synchronous,
// so its "in flight" rows are the same one-at-a-time transactions called
// through the same harness. Neither side fsyncs per operation (LevelDB's
// default sync: false; SQLite WAL + synchronous=NORMAL): the same durability
// class. createUser hashes the password on both sides with the same function
// and cost (scrypt, --scrypt-n, default 2: a token cost, so storage dominates;
// the summary prints what the hash alone costs).
//
// Every run is a child process of its own (bench/lib/chat-workload-worker.js)
// with fresh databases in a temp dir, pre-populated identically (--users,
// --chats of --members, --pair-chats of 2, --messages), checked to answer
// the same before and after the timed writes. Within a measurement the ops
// are split into --slices slices that alternate between the sides
// (A B B A ...; which side starts alternates per run), so drift and
// background load hit both. Per operation we report the median over runs of
// ops/s of each side and the median of the per-run ratios levelkit/SQLite
// (> 1: levelkit is faster). Goal (issue 6): >= 1.0 on every operation,
// >= 2.0 on writes.
//
// The floor: after the timed operations each run also times single awaited
// classic-level calls in the same process (get, and batches of 3 and 43
// puts), and the summary prints the best ratio a design with one batch per
// operation could reach on the sequential write rows on this machine.
//
// Output: a summary on stdout; a progress bar on stderr when it is a
// terminal; under --out (default bench/out/, ignored by git) a folder
// chat-workload-<time>/ with results.csv (one row per run, operation and
// side), summary.json and chat-workload.svg (ops/s per operation, both sides).
//
// Usage: node bench/chat-workload.js [--runs 3] [--users 10000] [--chats 2000]
//   [--members 20] [--pair-chats 200] [--messages 100000] [--concurrency 64]
//   [--scale 1] [--n N] [--ops a,b] [--slices 10] [--scrypt-n 2] [--seed 1]
//   [--no-warmup] [--out bench/out] [--db-dir <tmpdir>] [--keep-db]

import os from 'node:os'
import fs from 'node:fs'
import path from 'node:path'
import { runInChild } from './lib/child-run.js'
import { parseCli, failWith, optionOf, machineInfo, versionsOf } from './lib/seeds-common.js'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { median, min, max, fmt, mb, parseCount } from './lib/stats.js'
import { barChartSvg } from './lib/svg-plot.js'
import { operations } from './lib/chat-workload-worker.js'

const require = createRequire(import.meta.url)
const here = path.dirname(fileURLToPath(import.meta.url))
const WORKER = path.join(here, 'lib', 'chat-workload-worker.js')

// Ops per measurement and side at --scale 1: roughly 0.3–1 s of levelkit time
// each on a 2 vCPU AMD EPYC VM.
// Calls per kind in the floor measurement (one awaited classic-level call).
const FLOOR_N = 2000

const DEFAULT_N = {
  getUser: 20000,
  last50: 3000,
  getChats: 8000,
  checkChatMember: 30000,
  existsChat: 30000,
  createUser: 3000,
  createUserC: 6000,
  createChat: 500,
  createChatC: 1000,
  addChatMessage: 5000,
  addChatMessageC: 10000
}
const OP_KEYS = Object.keys(DEFAULT_N)

const USAGE = `Usage: node bench/chat-workload.js [options]
  --runs K           runs, each a fresh process with fresh databases (default 3)
  --users N          pre-populated users (default 10000)
  --chats N          pre-populated chats of --members members (default 2000)
  --members N        members per chat, the admin included (default 20)
  --pair-chats N     pre-populated chats of 2 members, for existsChat (default 200)
  --messages N       pre-populated messages, spread over the --chats chats (default 100000)
  --concurrency N    writes in flight for the concurrent write rows (default 64)
  --scale X          multiply the ops per measurement (default 1; e.g. 0.1 for a quick look)
  --n N              ops per measurement for every operation (overrides --scale)
  --ops a,b,...      only these operations (${OP_KEYS.join(', ')})
  --slices N         alternating slices per measurement (default 10)
  --scrypt-n N       scrypt cost for createUser's password hash, both sides (default 2)
  --seed N           seed of the data set and inputs (default 1)
  --zipf S           pick the users and chats of the read rows with Zipf skew S (default 0: uniformly)
  --read-cache C     levelkit's read caches: a policy (lru, 2q, arc, tinylfu), policy:entries, or off (default: open()'s defaults)
  --no-warmup        skip the untimed warm-up of every operation on both sides
  --out DIR          output folder (default bench/out)
  --db-dir DIR       where the databases go (default the OS temp dir)
  --keep-db          keep the databases`

/** @param {string} message @returns {never} */
const fail = message => failWith('chat-workload', USAGE, message)

const args = parseCli('chat-workload', USAGE, {
  runs: { type: 'string', default: '3' },
  users: { type: 'string', default: '10000' },
  chats: { type: 'string', default: '2000' },
  members: { type: 'string', default: '20' },
  'pair-chats': { type: 'string', default: '200' },
  messages: { type: 'string', default: '100000' },
  concurrency: { type: 'string', default: '64' },
  scale: { type: 'string', default: '1' },
  n: { type: 'string' },
  ops: { type: 'string' },
  slices: { type: 'string', default: '10' },
  'scrypt-n': { type: 'string', default: '2' },
  seed: { type: 'string', default: '1' },
  zipf: { type: 'string', default: '0' },
  'read-cache': { type: 'string' },
  'no-warmup': { type: 'boolean', default: false },
  out: { type: 'string', default: path.join(here, 'out') },
  'db-dir': { type: 'string', default: os.tmpdir() },
  'keep-db': { type: 'boolean', default: false }
})

/** @template T @param {() => T} parse @returns {T} */
const option = parse => optionOf('chat-workload', USAGE, parse)
/** A count that may be 0. @param {string} text */
const count0 = text => String(text).trim() === '0' ? 0 : parseCount(text)

const runs = option(() => parseCount(args.runs))
const sizes = {
  users: option(() => parseCount(args.users)),
  chats: option(() => parseCount(args.chats)),
  members: option(() => parseCount(args.members)),
  pairChats: option(() => count0(args['pair-chats'])),
  messages: option(() => count0(args.messages))
}
if (sizes.members < 2 || sizes.members > 30) fail('--members is 2..30 (ChatStore\'s default maxMembers is 30)')
if (sizes.members > sizes.users) fail('--members cannot exceed --users')
const concurrency = option(() => parseCount(args.concurrency))
const slices = option(() => parseCount(args.slices))
const scryptN = option(() => parseCount(args['scrypt-n']))
if (scryptN < 2 || (scryptN & (scryptN - 1)) !== 0) fail('--scrypt-n is a power of 2, at least 2')
const seed = option(() => parseCount(args.seed))
const scale = Number(args.scale)
if (!(scale > 0)) fail('--scale is a positive number')
const zipf = Number(args.zipf)
if (!(zipf >= 0 && zipf <= 5)) fail('--zipf is a number from 0 to 5')
const readCache = args['read-cache'] === undefined ? undefined : option(() => readCacheOf(args['read-cache']))
const ops = args.ops ? args.ops.split(',') : OP_KEYS
for (const op of ops) if (!OP_KEYS.includes(op)) fail(`Unknown operation ${JSON.stringify(op)}`)
/** @type {Record<string, number>} */
const n = {}
for (const op of OP_KEYS) n[op] = args.n !== undefined ? option(() => parseCount(args.n)) : Math.max(10, Math.round(DEFAULT_N[/** @type {keyof typeof DEFAULT_N} */ (op)] * scale))

const versions = { ...versionsOf(['classic-level', 'abstract-level', 'better-sqlite3']), sqlite: sqliteVersion() }
const machine = machineInfo()

function sqliteVersion () {
  const Database = require('better-sqlite3')
  const db = new Database(':memory:')
  try {
    return db.prepare('SELECT sqlite_version()').pluck().get()
  } finally {
    db.close()
  }
}

const stamp = new Date().toISOString().replace(/[:.]/g, '-')
const outDir = path.resolve(args.out, `chat-workload-${stamp}`)
/** @param {string} file */
const shown = file => file.startsWith(process.cwd() + path.sep) ? path.relative(process.cwd(), file) : file
fs.mkdirSync(args['db-dir'], { recursive: true })

/**
 * --read-cache: 'off' (0), a policy, or policy:entries.
 * @param {string} text @returns {0 | { policy: string, size?: number }}
 */
function readCacheOf (text) {
  if (text === 'off') return 0
  const [policy, size] = text.split(':')
  if (!['lru', '2q', 'arc', 'tinylfu'].includes(policy)) throw new Error(`--read-cache: unknown policy ${JSON.stringify(policy)}`)
  return size === undefined ? { policy } : { policy, size: parseCount(size) }
}

/** @param {number} run @returns {Promise<any>} */
function runOne (run) {
  const config = {
    ...sizes,
    n,
    concurrency,
    slices,
    scryptN,
    seed: seed + run - 1,
    zipf,
    readCache,
    run,
    dbDir: args['db-dir'],
    keepDb: args['keep-db'],
    ops,
    sides: ['levelkit', 'sqlite'],
    warmup: !args['no-warmup'],
    label: `run ${run}/${runs}`,
    floorN: args.n !== undefined ? Math.max(50, n.getUser) : Math.max(50, Math.round(FLOOR_N * scale))
  }
  return runInChild(WORKER, config, `Run ${run}`)
}

const loadBefore = os.loadavg()
const startedAt = new Date()
console.log(`chat-workload: ChatStore on classic-level vs better-sqlite3, ${runs} run(s)`)
console.log(`  data: ${fmt(sizes.users)} users, ${fmt(sizes.chats)} chats of ${sizes.members} members + ${fmt(sizes.pairChats)} of 2, ${fmt(sizes.messages)} messages; ${concurrency} in flight for the concurrent writes; scrypt N=${scryptN}`)
if (zipf > 0 || readCache !== undefined) console.log(`  read rows: users and chats picked ${zipf > 0 ? `with Zipf skew ${zipf}` : 'uniformly'}; levelkit's read caches ${readCache === undefined ? 'as open() sets them' : readCache === 0 ? 'off' : `${readCache.policy}${readCache.size ? `, ${fmt(readCache.size)} entries per namespace` : ''}`}`)
console.log(`  ${machine.cpu}, ${machine.cores} cores, ${machine.platform}, node ${versions.node}, classic-level ${versions['classic-level']}, better-sqlite3 ${versions['better-sqlite3']} (SQLite ${versions.sqlite}), levelkit ${versions.levelkit}`)
console.log(`  load average ${loadBefore.map(l => l.toFixed(2)).join(' ')}; output ${shown(outDir)}`)

/** @type {any[]} */
const perRun = []
for (let run = 1; run <= runs; run++) {
  const result = await runOne(run)
  perRun.push(result)
  if (result.mismatches.length > 0) {
    console.error(`Run ${run}: the two sides answered differently:\n  ${result.mismatches.slice(0, 5).join('\n  ')}`)
    process.exit(1)
  }
  const cells = ops.map(op => {
    const s = result.results[op].sides
    return `${op} ${(s.levelkit.opsPerSec / s.sqlite.opsPerSec).toFixed(2)}×`
  })
  console.log(`  run ${run}: load ${result.loadAverage[0].toFixed(2)}; levelkit/SQLite ${cells.join(', ')}`)
}
const loadAfter = os.loadavg()

// Aggregate: per operation, medians over runs; ratios within each run.
const labels = Object.fromEntries(operations(concurrency).map(op => [op.key, op]))
/** @type {Record<string, any>} */
const summary = {}
for (const op of ops) {
  const lk = perRun.map(r => r.results[op].sides.levelkit.opsPerSec)
  const sq = perRun.map(r => r.results[op].sides.sqlite.opsPerSec)
  const ratios = perRun.map((r, i) => lk[i] / sq[i])
  // A check against load spikes: the ratio of the median slice rates, per run.
  const sliceRatios = perRun.map(r => median(r.results[op].sides.levelkit.sliceOpsPerSec) / median(r.results[op].sides.sqlite.sliceOpsPerSec))
  const write = labels[op].write
  const goal = write ? 2 : 1
  summary[op] = {
    label: labels[op].label,
    write,
    concurrency: labels[op].concurrency,
    ops: n[op],
    levelkitOpsPerSec: median(lk),
    sqliteOpsPerSec: median(sq),
    ratio: median(ratios),
    ratioMin: min(ratios),
    ratioMax: max(ratios),
    ratioPerRun: ratios,
    sliceRatio: median(sliceRatios),
    goal,
    meetsGoal: median(ratios) >= goal,
    levelkitPerRun: lk,
    sqlitePerRun: sq
  }
}

const table = [['operation', 'ops', 'levelkit ops/s', 'SQLite ops/s', 'levelkit/SQLite', 'min..max', 'slice check', 'goal']]
for (const op of ops) {
  const s = summary[op]
  table.push([
    s.label, fmt(s.ops), fmt(s.levelkitOpsPerSec), fmt(s.sqliteOpsPerSec), `${s.ratio.toFixed(2)}×`,
    `${s.ratioMin.toFixed(2)}..${s.ratioMax.toFixed(2)}`, `${s.sliceRatio.toFixed(2)}×`, `≥${s.goal}× ${s.meetsGoal ? 'met' : 'MISSED'}`
  ])
}
console.log()
printTable(table)
console.log()
console.log(`  Medians over ${runs} run(s); ratio = levelkit ops/s / SQLite ops/s within each run, then the median (> 1: levelkit faster);`)
console.log('  slice check = median over runs of the ratio of median slice rates (robust to a load spike in one slice).')
console.log(`  createUser includes the same scrypt hash on both sides: ${fmt(median(perRun.map(r => r.hashUs)), 1)} µs per hash alone (N=${scryptN}).`)
const pop = (/** @type {string} */ side) => ['users', 'chats', 'messages'].map(k => `${k} ${fmt(median(perRun.map(r => r.populate[side][k])) / 1000, 2)} s`).join(', ')
console.log(`  Pre-population (not timed in the table): levelkit via ChatStore ${pop('levelkit')}; SQLite in transactions of 1000 ${pop('sqlite')}.`)
console.log(`  On-disk size after a run: levelkit ${mb(median(perRun.map(r => r.dbBytes.levelkit)))}, SQLite ${mb(median(perRun.map(r => r.dbBytes.sqlite)))} (file + WAL).`)
console.log('  Both sides answered the same sample of reads before and after the timed writes, in every run.')

// The floor: what one awaited classic-level call costs in this process, and
// so the best ratio any design with one batch per operation could reach on
// the sequential write rows (SQLite's whole operation against one batch,
// plus the password hash both sides pay in createUser).
const floor = {
  getUs: median(perRun.map(r => r.floor.getUs)),
  batch3Us: median(perRun.map(r => r.floor.batch3Us)),
  batch43Us: median(perRun.map(r => r.floor.batch43Us))
}
const hashUs = median(perRun.map(r => r.hashUs))
/** @type {Record<string, number>} */
const ceilings = {}
for (const [op, batchUs, extraUs] of /** @type {Array<[string, number, number]>} */ ([['createUser', floor.batch3Us, hashUs], ['createChat', floor.batch43Us, 0], ['addChatMessage', floor.batch3Us, 0]])) {
  if (!summary[op]) continue
  ceilings[op] = (1e6 / summary[op].sqliteOpsPerSec) / (batchUs + extraUs)
  summary[op].ceiling = ceilings[op]
}
console.log(`  Floor, one awaited classic-level call in the same process: get ${fmt(floor.getUs, 1)} µs, batch of 3 puts ${fmt(floor.batch3Us, 1)} µs, of 43 puts ${fmt(floor.batch43Us, 1)} µs.`)
if (Object.keys(ceilings).length > 0) {
  console.log(`  So on sequential writes, one batch per operation can reach at best: ${Object.entries(ceilings).map(([op, c]) => `${op} ${c.toFixed(2)}×`).join(', ')} (SQLite's time per operation / the batch's${ceilings.createUser ? ', plus the hash for createUser' : ''}).`)
}

fs.mkdirSync(outDir, { recursive: true })
let csv = 'run,operation,label,side,concurrency,ops,ms,ops_per_sec\n'
for (const r of perRun) {
  for (const op of ops) {
    const e = r.results[op]
    for (const side of ['levelkit', 'sqlite']) {
      const s = e.sides[side]
      csv += `${r.run},${op},"${e.label}",${side},${e.concurrency},${s.ops},${s.ms.toFixed(3)},${s.opsPerSec.toFixed(1)}\n`
    }
  }
}
fs.writeFileSync(path.join(outDir, 'results.csv'), csv)

const svg = barChartSvg({
  title: `levelkit ChatStore vs SQLite: chat workload, ops/s (median of ${runs} run${runs === 1 ? '' : 's'})`,
  subtitle: `${fmt(sizes.users)} users, ${fmt(sizes.chats)} chats × ${sizes.members}, ${fmt(sizes.messages)} messages; ${machine.cpu}, ${machine.cores} cores, node ${versions.node}, classic-level ${versions['classic-level']}, better-sqlite3 ${versions['better-sqlite3']}, ${startedAt.toISOString().slice(0, 10)}`,
  yLabel: 'Operations per second',
  categories: ops.map(op => summary[op].label),
  series: [
    { name: 'levelkit (classic-level)', values: ops.map(op => summary[op].levelkitOpsPerSec), color: '#d62728' },
    { name: 'SQLite (better-sqlite3)', values: ops.map(op => summary[op].sqliteOpsPerSec), color: '#1f77b4' }
  ],
  notes: ops.map(op => `${summary[op].ratio.toFixed(2)}×`),
  notesLabel: 'top: levelkit/SQLite (median ratio)'
})
fs.writeFileSync(path.join(outDir, 'chat-workload.svg'), svg)

fs.writeFileSync(path.join(outDir, 'summary.json'), JSON.stringify({
  benchmark: 'chat-workload',
  date: startedAt.toISOString(),
  command: `node ${path.relative(process.cwd(), fileURLToPath(import.meta.url))} ${process.argv.slice(2).join(' ')}`.trim(),
  machine,
  versions,
  loadAverage: { before: loadBefore, after: loadAfter, perRun: perRun.map(r => r.loadAverage) },
  options: { runs, ...sizes, concurrency, slices, scryptN, seed, zipf, readCache: readCache ?? 'default', n, ops, warmup: !args['no-warmup'] },
  csvColumns: ['run', 'operation', 'label', 'side', 'concurrency', 'ops', 'ms', 'ops_per_sec'],
  summary,
  floor,
  runs: perRun.map(r => ({
    run: r.run,
    loadAverage: r.loadAverage,
    hashUs: r.hashUs,
    floor: r.floor,
    populateMs: r.populate,
    dbBytes: r.dbBytes,
    peakRssBytes: r.peakRssBytes,
    results: r.results
  }))
}, null, 2) + '\n')

console.log()
console.log(`Load average ${loadAfter.map(l => l.toFixed(2)).join(' ')} (before: ${loadBefore.map(l => l.toFixed(2)).join(' ')})`)
console.log(`Wrote ${shown(outDir)}/: results.csv, summary.json, chat-workload.svg`)

/** @param {string[][]} rows */
function printTable (rows) {
  const widths = rows[0].map((_, c) => Math.max(...rows.map(row => row[c].length)))
  for (const row of rows) {
    console.log('  ' + row.map((cell, c) => c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c])).join('  '))
  }
}
