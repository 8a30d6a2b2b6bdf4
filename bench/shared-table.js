// What sharing one table costs processes that write it (issue 18): P
// processes appending chat messages (ChatStore.addChatMessage(), --concurrency
// in flight each) to one PostgreSQL table opened with `shared: true`, beside
// the same P processes each on a table of its own (nothing shared: no key,
// no index page, no lock; the ceiling of P writers side by side on this
// machine), and one process alone. Same code, same server, same data in
// every table: the difference is the sharing.
//
// With --shard-chats each process of the shared cell appends to its own
// chats only (a chat's id modulo P), as a server routing each chat to one
// process would: no key is shared, only the table (its index pages, and
// with 'serializable' the predicate locks that cover them). Without it,
// every process appends to every chat.
//
// Each cell: fresh tables filled by the parent (a user, --chats chats), P
// worker processes forked, a second of appends untimed, then --seconds of
// appends timed, all P at once. Reported per cell (medians over --runs):
// appends/s, ÷ one process, shared ÷ own tables, the workers' CPU per append
// (user and system, process.cpuUsage()), minor page faults and context
// switches per append (process.resourceUsage()), and with 'serializable' or
// 'keys' what the section lock counted (failed COMMITs, sections run again,
// transactions holding the table's turn). After each cell every table is
// checked: `db.check()` clean, and each chat's message ids 1..N holding one
// message per append acknowledged, or the run fails (exit 1).
//
// Usage: node bench/shared-table.js [--processes 1,4] [--chats 200]
//   [--seconds 5] [--runs 3] [--concurrency 16] [--locking serializable]
//   [--shard-chats] [--library DIR] [--out bench/out]
// PostgreSQL: the server LEVELKIT_PG_URL names, else a throwaway cluster.
import os from 'node:os'
import path from 'node:path'
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { postgres } from 'levelkit-testkit/postgres'
import { postgresTables } from 'levelkit'
import { parseCli, failWith, optionOf, startRun, printMachine, finishRun, printTable, printProblems } from './lib/seeds-common.js'
import { median, fmt, parseCount } from './lib/stats.js'
import { levelkitOf, openOptions, PASSWORD_COST, WARM_MS } from './lib/shared-table-worker.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const USAGE = `Usage: node bench/shared-table.js [options]
  --processes L    process counts (default 1,4; 1 is the baseline and always run)
  --chats N        chats in each table (default 200)
  --seconds S      timed appends per cell (default 5)
  --runs K         runs; every cell once per run, in alternating order (default 3)
  --concurrency N  appends in flight per process (default 16)
  --locking L      table, keys or serializable (default serializable)
  --shard-chats    each process of the shared cell appends to its own chats only
  --library DIR    another copy of levelkit to run (default this one)
  --out DIR        output folder (default bench/out)
PostgreSQL: the server LEVELKIT_PG_URL names, else a throwaway cluster.`

const args = parseCli('shared-table', USAGE, {
  processes: { type: 'string', default: '1,4' },
  chats: { type: 'string', default: '200' },
  seconds: { type: 'string', default: '5' },
  runs: { type: 'string', default: '3' },
  concurrency: { type: 'string', default: '16' },
  locking: { type: 'string', default: 'serializable' },
  'shard-chats': { type: 'boolean', default: false },
  library: { type: 'string' },
  out: { type: 'string', default: path.join(here, 'out') }
})
/** @param {string} message @returns {never} */
const fail = message => failWith('shared-table', USAGE, message)
/** @template T @param {() => T} parse @returns {T} */
const option = parse => optionOf('shared-table', USAGE, parse)
const counts = option(() => {
  const list = String(args.processes).split(',').map(p => parseCount(p))
  return [...new Set([1, ...list])].sort((a, b) => a - b)
})
const chatCount = option(() => parseCount(args.chats))
const seconds = option(() => {
  const s = Number(args.seconds)
  if (!(s > 0 && s <= 600)) throw new Error(`--seconds is a number of seconds above 0 (at most 600), got ${JSON.stringify(args.seconds)}`)
  return s
})
const runs = option(() => parseCount(args.runs))
const concurrency = option(() => parseCount(args.concurrency))
const locking = String(args.locking)
if (!['table', 'keys', 'serializable'].includes(locking)) fail('--locking is table, keys or serializable')
const shardChats = args['shard-chats'] === true
const library = path.resolve(args.library ?? path.join(here, '..'))
if (counts.some(p => p > 1) && chatCount < Math.max(...counts) && shardChats) fail('--shard-chats needs at least as many --chats as processes')

const { open, ChatStore } = await levelkitOf(library)
const server = await postgres({ maxConnections: Math.max(200, Math.max(...counts) * 2 * (concurrency + 3) + 20) })
const admin = new pg.Pool({ connectionString: server.connectionString, max: 1 })
admin.on('error', () => {})
const run0 = startRun('shared-table', args.out, ['pg'])
console.log(`shared-table: ${locking === 'serializable' ? 'serializable transactions' : locking === 'keys' ? 'key locks' : 'the table lock'}, P processes appending to one shared table, or each to a table of its own; ${runs} run(s)`)
console.log(`  data: ${fmt(chatCount)} chats in each table; ${concurrency} appends in flight per process; ${seconds} s timed per cell after ${WARM_MS / 1000} s untimed${shardChats ? '; shared cells: each process appends to its own chats (--shard-chats)' : ''}`)
console.log(`  PostgreSQL: ${server.throwaway ? 'a throwaway cluster' : 'LEVELKIT_PG_URL'}; levelkit ${library === path.join(here, '..') ? 'of this checkout' : library}`)
printMachine(run0, ['pg'])

/**
 * @typedef {{ key: string, label: string, processes: number, own: boolean }} Cell
 * @type {Cell[]}
 */
const cells = counts.flatMap(p => p === 1
  ? [{ key: 'one', label: 'one process', processes: 1, own: false }]
  : [{ key: `shared-${p}`, label: `×${p} on one table`, processes: p, own: false }, { key: `own-${p}`, label: `×${p}, a table each`, processes: p, own: true }])

let made = 0
/**
 * A fresh table with a user and the chats: their ids.
 * @returns {Promise<{ table: string, sender: number, chats: number[] }>}
 */
async function freshTable () {
  const table = `shared_table_${process.pid}_${made++}`
  const db = await open(openOptions({ connectionString: server.connectionString, locking, concurrency: 2 }, table))
  try {
    const store = await ChatStore.open(db, { passwordCost: PASSWORD_COST })
    const sender = await store.createUser({ username: 'sender', password: 'password1' })
    const chats = []
    for (let i = 0; i < chatCount; i++) chats.push(await store.createChat({ name: `chat ${i}`, adminId: sender }))
    return { table, sender, chats }
  } finally {
    await db.close()
  }
}

/**
 * Check a table after a cell: clean, and every chat's message ids 1..N with
 * N what the workers acknowledged. The problems found.
 * @param {string} table @param {Map<number, number>} appended
 */
async function checkTable (table, appended) {
  const db = await open(openOptions({ connectionString: server.connectionString, locking, concurrency: 2 }, table))
  const problems = []
  try {
    const store = await ChatStore.open(db, { passwordCost: PASSWORD_COST })
    const found = (await db.check()).problems
    if (found.length > 0) problems.push(`${table}: check() found ${found.length} problem(s), the first ${JSON.stringify(found[0])}`)
    for (const [chatId, n] of appended) {
      const ids = (await store.getChatMessages(chatId, { n: n + 1 }) ?? []).map((/** @type {any} */ m) => m.id)
      if (ids.length !== n || ids.some((id, i) => id !== i + 1)) problems.push(`${table}: chat ${chatId} holds ids ${ids.slice(0, 5).join(',')}… (${ids.length}), ${n} appended`)
    }
  } finally {
    await db.close()
  }
  await dropTable(table)
  return problems
}

/** @param {string} table */
async function dropTable (table) {
  await admin.query(`DROP TABLE IF EXISTS ${postgresTables(table).map(name => `"${name}"`).join(', ')}`)
}

/** One cell once: what its workers did. @param {Cell} cell */
async function runCell (cell) {
  const tables = cell.own ? await Promise.all(Array.from({ length: cell.processes }, freshTable)) : [await freshTable()]
  const workers = Array.from({ length: cell.processes }, (_, rank) => {
    const { table, sender, chats } = tables[cell.own ? rank : 0]
    const mine = !cell.own && shardChats ? chats.filter(id => (id - 1) % cell.processes === rank) : chats
    const config = { connectionString: server.connectionString, locking, concurrency, library, table, sender, chats: mine, seconds }
    return fork(path.join(here, 'lib', 'shared-table-worker.js'), [JSON.stringify(config)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  })
  /** @param {import('node:child_process').ChildProcess} w @returns {Promise<any>} */
  const next = w => new Promise((resolve, reject) => {
    w.once('message', resolve)
    w.once('exit', code => reject(new Error(`a worker exited (${code}) before it answered`)))
  })
  await Promise.all(workers.map(next))
  const results = Promise.all(workers.map(next))
  for (const w of workers) w.send('go')
  const parts = await results
  const problems = []
  for (let t = 0; t < tables.length; t++) {
    const appended = new Map()
    parts.forEach((part, rank) => {
      if (cell.own && rank !== t) return
      for (const [chatId, n] of part.appended) appended.set(chatId, (appended.get(chatId) ?? 0) + n)
    })
    problems.push(...await checkTable(tables[t].table, appended))
  }
  const ops = parts.reduce((sum, part) => sum + part.ops, 0)
  const ms = Math.max(...parts.map(part => part.ms))
  /** @param {(part: any) => number} pick */
  const perOp = pick => parts.reduce((sum, part) => sum + pick(part), 0) / ops
  return {
    opsPerSec: ops / ms * 1000,
    userMsPerOp: perOp(part => part.userMs),
    systemMsPerOp: perOp(part => part.systemMs),
    minorFaultsPerOp: perOp(part => part.minorFaults),
    contextSwitchesPerOp: perOp(part => part.contextSwitches),
    failuresPerOp: perOp(part => part.counted.failures ?? 0),
    rerunsPerOp: perOp(part => part.counted.retries ?? 0),
    turnShare: perOp(part => part.counted.tableContended ?? 0) / Math.max(1e-9, perOp(part => part.counted.transactions ?? 0)),
    gaveUpPerOp: perOp(part => part.gaveUp),
    problems
  }
}

/** @type {Record<string, Array<Awaited<ReturnType<typeof runCell>>>>} */
const measured = Object.fromEntries(cells.map(cell => [cell.key, []]))
const problems = []
try {
  for (let run = 0; run < runs; run++) {
    const order = run % 2 === 0 ? cells : [...cells].reverse()
    const line = []
    for (const cell of order) {
      const result = await runCell(cell)
      measured[cell.key].push(result)
      problems.push(...result.problems)
      line.push(`${cell.label} ${fmt(result.opsPerSec)}/s`)
    }
    console.log(`  run ${run + 1}: load ${os.loadavg().map(l => l.toFixed(2)).join(' ')}; ${line.join(', ')}`)
  }
} finally {
  await admin.end()
  await server.stop()
}

/** @param {string} key @param {string} field */
const med = (key, field) => median(measured[key].map(result => /** @type {any} */ (result)[field]))
const one = med('one', 'opsPerSec')
/** @type {Record<string, Record<string, number>>} */
const summary = {}
const table = [['cell', 'appends/s', '× one process', 'shared ÷ own', 'CPU ms/append: user / system', 'minor faults/append', 'context switches/append', 'failed COMMITs/append', 'reruns/append', 'gave up/append', 'in the table\'s turn']]
for (const cell of cells) {
  const ops = med(cell.key, 'opsPerSec')
  const own = cell.own || cell.processes === 1 ? null : med(`own-${cell.processes}`, 'opsPerSec')
  summary[cell.key] = Object.fromEntries(['opsPerSec', 'userMsPerOp', 'systemMsPerOp', 'minorFaultsPerOp', 'contextSwitchesPerOp', 'failuresPerOp', 'rerunsPerOp', 'gaveUpPerOp', 'turnShare'].map(field => [field, med(cell.key, field)]))
  if (own !== null) summary[cell.key].sharedOverOwn = ops / own
  table.push([
    cell.label,
    fmt(ops),
    `${(ops / one).toFixed(2)}×`,
    own === null ? '–' : `${(ops / own).toFixed(2)}×`,
    `${med(cell.key, 'userMsPerOp').toFixed(3)} / ${med(cell.key, 'systemMsPerOp').toFixed(3)}`,
    med(cell.key, 'minorFaultsPerOp').toFixed(2),
    med(cell.key, 'contextSwitchesPerOp').toFixed(2),
    locking === 'table' ? '–' : med(cell.key, 'failuresPerOp').toFixed(4),
    locking === 'table' ? '–' : med(cell.key, 'rerunsPerOp').toFixed(3),
    med(cell.key, 'gaveUpPerOp').toFixed(4),
    locking === 'serializable' ? `${(100 * med(cell.key, 'turnShare')).toFixed(0)}%` : '–'
  ])
}
console.log()
printTable(table)
console.log()
console.log(`  Medians over ${runs} run(s). appends/s: every process's appends / the longest timed part. shared ÷ own: the cell on one table over the same processes each on a table of its own. CPU, faults and switches: the workers' over the timed part (process.cpuUsage(), process.resourceUsage()). failed COMMITs, reruns, the table's turn: the section lock's counters (reruns: critical sections run again; the table's turn: transactions that began holding it). gave up: appends rejected with LEVELKIT_CONFLICT after maxReruns (nothing written), over the appends made.`)
console.log(problems.length === 0 ? '  Every table checked out: check() clean, each chat\'s ids 1..N, one message per append acknowledged.' : '')
printProblems(problems)
finishRun(run0.outDir, { ...run0, name: 'shared-table', loadAfter: os.loadavg() }, {
  options: { processes: counts, chats: chatCount, seconds, runs, concurrency, locking, shardChats, library },
  cells,
  runs: measured,
  summary
}, [])
if (problems.length > 0) process.exitCode = 1
