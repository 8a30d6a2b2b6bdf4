// Transactions, locks, versioned and durable writes: bank transfers on
// levelkit against better-sqlite3, side by side in one process.
//
// Accounts 1..--accounts (10,000) hold 1,000 each. A transfer moves 1..10
// from one account to another (declined when the first holds less); a read
// reads two accounts. Mixes: read-heavy (90% reads, 10% transfers) and
// write-heavy (100% transfers). Accounts are picked uniformly or, for hot
// keys, by a Zipf law (--zipf 1.1: account 1 in about 1 of 7 picks), each
// client with its own seeded PRNG (testkit), the same sequences on every
// side. Clients (--clients 1,16,64) are async loops in this process.
//
// levelkit's modes (bench/lib/transactions-sides.js):
//   plain       accounts.update(a, fn), then update(b, fn), outside transactions
//   versioned   version() + get(), update(id, patch, { ifVersion }), again on
//               LEVELKIT_CONFLICT (a versioned collection)
//   optimistic  db.transaction(): read both, update both
//   soft, hard  the same, both reads with { lock }, in id order
//   write       both updates in one db.write() (relaxed)
//   durable     both updates in one db.write(..., { sync: true })
//   unsafe      (not by default) get() both, then update() both with
//               patches, no transaction: loses updates under concurrency,
//               which the invariant check catches (exit 1)
// Reads are plain get()s, or in the transaction modes a transaction reading
// both without locks. SQLite: a table accounts (id INTEGER PRIMARY KEY,
// balance), WAL, a transfer in BEGIN IMMEDIATE, reads in a deferred
// transaction; synchronous=NORMAL for the relaxed rows, FULL for the
// durable rows. better-sqlite3 is synchronous, so its transactions run one
// after the other whatever the clients: its rows run one loop (said in the
// output).
//
// Each cell (keys, mix, clients, side) runs for --seconds (2) on fresh
// databases (LevelDB: a copy of one populated at the start). The sides of a
// group (keys, mix, clients) are open side by side and take turns in
// --slices slices (4), their order alternating (forward, backward, ...,
// starting the other way from group to group and run to run), so load from
// elsewhere on this shared machine hits every side alike. Then each cell
// checks the invariant (every account there, the sum of balances unchanged, none
// negative; and db.check()) and prints it: a broken invariant fails the
// run (exit 1). Columns: operations completed per second, p99 latency of an
// operation (its retries included), retries (attempts > 1, counted through
// the transaction's attempt argument; for versioned writes, writes made
// again after a conflict), operations that gave up (LEVELKIT_CONFLICT after
// maxRetries, LEVELKIT_LOCK_TIMEOUT, ...), lock timeouts and deadlocks
// (db.writer.locks.stats()), and the ratio levelkit / SQLite (NORMAL,
// durable: FULL). With --runs K we report medians (the ratio: the median
// of per-run ratios).
//
// Then a port of RocksDB db_bench's randomtransaction (bench/lib/
// random-transaction.js): --sets sets of --rt-keys keys, each transaction
// increments a random key in each set, optimistic or with soft locks, lock
// timeout 100 ms; transactions/s and aborts, then every set must sum to the
// number of committed transactions.
//
// Output: a line per cell as it runs, tables of medians, the goals of the
// issue (met / missed), and under --out (default bench/out/, ignored by git)
// a folder transactions-<time>/ with results.csv (one row per run and
// cell), summary.json, transactions.svg (write-heavy ops/s per mode and
// clients) and transactions-read-heavy.svg.
//
// Usage: node bench/transactions.js [--seconds 2] [--runs 1] [--slices 4] [--accounts 10000]
//   [--clients 1,16,64] [--modes plain,versioned,...] [--mixes read-heavy,write-heavy]
//   [--keys uniform,hot] [--zipf 1.1] [--sets 2] [--rt-keys 10000] [--max-retries 10]
//   [--seed 1] [--no-warmup] [--backend leveldb|memory] [--out bench/out] [--db-dir <tmp>]

import os from 'node:os'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'
import { execFileSync } from 'node:child_process'
import { open } from 'levelkit'
import { median, quantile, fmt, parseCount } from './lib/stats.js'
import { barSvg } from './lib/svg-plot.js'
import { parseCli, failWith, optionOf, writeCsv, printTable, finishRun, printProblems, startRun, printMachine } from './lib/seeds-common.js'
import { keyChooser, DISTRIBUTIONS } from './lib/transactions-keys.js'
import { MODES, DEFAULT_MODES, MAX_AMOUNT, INITIAL_BALANCE, levelkitSide, openSqliteSide, populateAccounts, accountsInvariant } from './lib/transactions-sides.js'
import { drive } from './lib/transactions-drive.js'
import { randomTransaction, declareSets, RT_MODES } from './lib/random-transaction.js'

const require = createRequire(import.meta.url)
const here = path.dirname(fileURLToPath(import.meta.url))
const NAME = 'transactions'
const BACKENDS = ['leveldb', 'memory']
/** The share of reads in each mix. */
const MIXES = /** @type {Record<string, number>} */ ({ 'read-heavy': 0.9, 'write-heavy': 0 })
const MIX_TEXT = /** @type {Record<string, string>} */ ({ 'read-heavy': '90% reads of 2 accounts, 10% transfers', 'write-heavy': '100% transfers' })
const SQLITE = /** @type {Record<string, { label: string, synchronous: 'NORMAL' | 'FULL' }>} */ ({
  'sqlite-normal': { label: 'SQLite NORMAL', synchronous: 'NORMAL' },
  'sqlite-full': { label: 'SQLite FULL', synchronous: 'FULL' }
})
/** randomtransaction's lock timeout (db_bench's --transaction_lock_timeout default). */
const RT_LOCK_TIMEOUT = 100
const MODE_KEYS = /** @type {Array<import('./lib/transactions-sides.js').Mode>} */ (Object.keys(MODES))

const USAGE = `Usage: node bench/${NAME}.js [options]
  --seconds S       seconds per cell (default 2)
  --runs K          runs of the whole grid; medians are reported (default 1)
  --slices N        turns per cell: the sides of a group alternate slice by slice (default 4)
  --accounts N      accounts (default 10000)
  --clients N,N     concurrent clients, async loops in this process (default 1,16,64)
  --modes a,b       levelkit modes (default ${DEFAULT_MODES.join(',')}; also unsafe:
                    get() both, update() both, no transaction: it loses updates under
                    concurrency, so the invariant check fails the run)
  --mixes a,b       read-heavy, write-heavy (default both)
  --keys a,b        uniform, hot (Zipf) (default both)
  --zipf S          the Zipf exponent of hot keys (default 1.1)
  --sets N          randomtransaction: sets, one key incremented in each per transaction (default 2)
  --rt-keys N       randomtransaction: keys per set (default 10000)
  --max-retries N   maxRetries of every transaction (default 10, levelkit's default)
  --seed N          seed of the clients' PRNGs (default 1)
  --no-warmup       skip the untimed warm-up of every side
  --backend B       leveldb | memory (default leveldb; with memory, SQLite runs in memory too)
  --out DIR         output folder (default bench/out)
  --db-dir DIR      where the databases go (default the OS temp dir)`

const args = parseCli(NAME, USAGE, {
  seconds: { type: 'string', default: '2' },
  runs: { type: 'string', default: '1' },
  slices: { type: 'string', default: '4' },
  accounts: { type: 'string', default: '10000' },
  clients: { type: 'string', default: '1,16,64' },
  modes: { type: 'string', default: DEFAULT_MODES.join(',') },
  mixes: { type: 'string', default: Object.keys(MIXES).join(',') },
  keys: { type: 'string', default: DISTRIBUTIONS.join(',') },
  zipf: { type: 'string', default: '1.1' },
  sets: { type: 'string', default: '2' },
  'rt-keys': { type: 'string', default: '10000' },
  'max-retries': { type: 'string', default: '10' },
  seed: { type: 'string', default: '1' },
  'no-warmup': { type: 'boolean', default: false },
  backend: { type: 'string', default: 'leveldb' },
  out: { type: 'string', default: path.join(here, 'out') },
  'db-dir': { type: 'string', default: os.tmpdir() }
})

/** @param {string} message @returns {never} */
const fail = message => failWith(NAME, USAGE, message)
/** @param {string} flag */
const count = flag => optionOf(NAME, USAGE, () => parseCount(args[flag]))
/** @template T @param {string} flag @param {readonly T[]} known @param {string} what */
const listOf = (flag, known, what) => {
  const list = String(args[flag]).split(',').map(s => s.trim()).filter(Boolean)
  for (const item of list) if (!known.includes(/** @type {any} */ (item))) fail(`Unknown ${what} ${JSON.stringify(item)} (${known.join(', ')})`)
  if (list.length === 0) fail(`--${flag} is empty`)
  return /** @type {T[]} */ (list)
}

const seconds = Number(args.seconds)
if (!(seconds > 0) || !Number.isFinite(seconds)) fail('--seconds is a positive number')
const zipf = Number(args.zipf)
if (!(zipf > 0) || !Number.isFinite(zipf)) fail('--zipf is a positive number')
const backend = /** @type {'leveldb' | 'memory'} */ (String(args.backend))
if (!BACKENDS.includes(backend)) fail(`Unknown backend ${JSON.stringify(backend)}`)
const opts = {
  seconds,
  runs: count('runs'),
  slices: count('slices'),
  accounts: count('accounts'),
  clients: optionOf(NAME, USAGE, () => String(args.clients).split(',').map(parseCount)),
  modes: listOf('modes', MODE_KEYS, 'mode'),
  mixes: listOf('mixes', Object.keys(MIXES), 'mix'),
  keys: listOf('keys', DISTRIBUTIONS, 'key distribution'),
  zipf,
  sets: count('sets'),
  rtKeys: count('rt-keys'),
  maxRetries: optionOf(NAME, USAGE, () => String(args['max-retries']).trim() === '0' ? 0 : parseCount(args['max-retries'])),
  seed: count('seed'),
  warmup: !args['no-warmup'],
  backend
}
if (opts.accounts < 2) fail('--accounts is at least 2 (a transfer needs two)')
const SIDES = [...opts.modes, ...Object.keys(SQLITE)]
const KEYS_TEXT = /** @type {Record<string, string>} */ ({ uniform: 'uniform keys', hot: `hot keys (Zipf s=${zipf})` })
const choosers = Object.fromEntries(opts.keys.map(keys => [keys, keyChooser(keys, opts.accounts, zipf)]))

/** @param {string} side */
const labelOf = side => side in SQLITE ? `${SQLITE[side].label} (1 loop)` : MODES[/** @type {import('./lib/transactions-sides.js').Mode} */ (side)].label
/** The SQLite side a levelkit mode is compared with. @param {string} mode */
const sqliteFor = mode => mode === 'durable' ? 'sqlite-full' : 'sqlite-normal'

const dbDir = path.resolve(args['db-dir'])
fs.mkdirSync(dbDir, { recursive: true })
const base = path.join(dbDir, `levelkit-${NAME}-${process.pid}`)
let databases = 0

/** @param {any} db @param {boolean} versioned */
const declareAccounts = (db, versioned) => db.collection('accounts', versioned ? { versioned: true } : {})

// LevelDB: the accounts are written once per declaration, then each cell
// opens a copy of that directory (the same files for every cell, and no
// population time per cell).
/** @type {Record<string, string>} */
const templates = {}
process.on('exit', () => {
  for (const location of Object.values(templates)) remove(location)
})
if (backend === 'leveldb') {
  for (const versioned of [false, true]) {
    const location = `${base}-template-${versioned ? 'versioned' : 'plain'}`
    const db = await open({ backend, location })
    await populateAccounts(db, declareAccounts(db, versioned), opts.accounts)
    await db.close()
    templates[String(versioned)] = location
  }
}

/** A fresh database of accounts. @param {boolean} versioned */
async function openAccounts (versioned) {
  if (backend === 'memory') {
    const db = await open({ backend })
    const accounts = declareAccounts(db, versioned)
    await populateAccounts(db, accounts, opts.accounts)
    return { db, accounts, location: null }
  }
  const location = `${base}-${++databases}`
  fs.cpSync(templates[String(versioned)], location, { recursive: true })
  const db = await open({ backend, location })
  return { db, accounts: declareAccounts(db, versioned), location }
}

/** @param {string | null} location */
function remove (location) {
  if (location === null) return
  for (const file of [location, `${location}-wal`, `${location}-shm`]) fs.rmSync(file, { recursive: true, force: true })
}

/**
 * Open one side of a group on fresh databases: what the clients call, how
 * many loops they run, and how to end it (the invariant, db.check(), the
 * lock counters; then close and delete).
 * @param {string} side
 */
async function openSide (side) {
  if (side in SQLITE) {
    const file = backend === 'memory' ? ':memory:' : `${base}-${++databases}.sqlite`
    const sqlite = openSqliteSide(file, SQLITE[side].synchronous, opts.accounts)
    return {
      impl: sqlite,
      sqlite: true,
      async finish () {
        try {
          return { invariant: sqlite.invariant(), checkOk: true, locks: { waits: 0, timeouts: 0, deadlocks: 0 } }
        } finally {
          sqlite.close()
          remove(file === ':memory:' ? null : file)
        }
      }
    }
  }
  const mode = /** @type {import('./lib/transactions-sides.js').Mode} */ (side)
  const { db, accounts, location } = await openAccounts(MODES[mode].versioned)
  return {
    impl: levelkitSide(mode, db, accounts, { maxRetries: opts.maxRetries }),
    sqlite: false,
    async finish () {
      try {
        // Internal (not public API): the lock manager's counters, fine for a benchmark.
        const locks = /** @type {any} */ (db).writer.locks.stats()
        const invariant = await accountsInvariant(accounts, opts.accounts)
        const { ok: checkOk } = await db.check()
        return { invariant, checkOk, locks }
      } finally {
        await db.close()
        remove(location)
      }
    }
  }
}

/**
 * One group (keys, mix, clients): every side on fresh databases, open side
 * by side; `secs` of clients each, in `slices` turns that alternate the
 * order of the sides (forward, backward, ...; `flip` starts backward), so
 * load from elsewhere on the machine hits every side alike. Then each
 * side's invariant. Slice k of every side draws from the same seeds.
 * @param {string[]} sides @param {string} keys @param {string} mix @param {number} clients
 * @param {number} seed @param {number} secs @param {number} slices @param {boolean} flip
 * @returns {Promise<Map<string, any>>}
 */
async function runGroup (sides, keys, mix, clients, seed, secs, slices, flip) {
  /** @type {Map<string, Awaited<ReturnType<typeof openSide>>>} */
  const open = new Map()
  /** @type {Map<string, any>} */
  const totals = new Map()
  try {
    for (const side of sides) {
      open.set(side, await openSide(side))
      totals.set(side, { ops: 0, reads: 0, transfers: 0, declined: 0, retries: 0, gaveUp: 0, gaveUpBy: {}, ms: 0, latencies: [] })
    }
    for (let k = 0; k < slices; k++) {
      const order = (k + (flip ? 1 : 0)) % 2 === 0 ? sides : [...sides].reverse()
      for (const side of order) {
        const { impl, sqlite } = /** @type {any} */ (open.get(side))
        const r = await drive({ side: impl, loops: sqlite ? 1 : clients, seconds: secs / slices, seed: seed + k * 10007, readShare: MIXES[mix], choose: choosers[keys] })
        const t = totals.get(side)
        for (const field of /** @type {const} */ (['ops', 'reads', 'transfers', 'declined', 'retries', 'gaveUp', 'ms'])) t[field] += r[field]
        for (const [code, n] of Object.entries(r.gaveUpBy)) t.gaveUpBy[code] = (t.gaveUpBy[code] ?? 0) + n
        for (const latency of r.latencies) t.latencies.push(latency)
      }
    }
  } finally {
    for (const [side, handle] of open) {
      const { invariant, checkOk, locks } = await handle.finish()
      const t = totals.get(side)
      Object.assign(t, { invariant, checkOk, lockTimeouts: locks.timeouts, deadlocks: locks.deadlocks, lockWaits: locks.waits, loops: handle.sqlite ? 1 : clients })
    }
  }
  for (const t of totals.values()) {
    t.opsPerSec = t.ops / (t.ms / 1000)
    t.p50Ms = quantile(t.latencies, 0.5)
    t.p99Ms = quantile(t.latencies, 0.99)
    delete t.latencies
  }
  return totals
}

/** @param {keyof typeof RT_MODES} mode @param {number} clients @param {number} seed @param {number} secs */
async function runRandomTransaction (mode, clients, seed, secs) {
  const location = backend === 'leveldb' ? `${base}-${++databases}` : null
  const db = await open(location ? { backend, location } : { backend })
  try {
    return await randomTransaction({
      db, rows: declareSets(db), mode, sets: opts.sets, keys: opts.rtKeys, clients, seconds: secs, seed, lockTimeout: RT_LOCK_TIMEOUT, maxRetries: opts.maxRetries
    })
  } finally {
    await db.close()
    remove(location)
  }
}

const run = startRun(NAME, args.out, ['classic-level', 'memory-level', 'abstract-level', 'better-sqlite3'])
const { machine, versions, loadBefore, startedAt, outDir } = run
const sqliteVersion = sqliteVersionOf()
const commit = libraryCommit()
const cellCount = opts.keys.length * opts.mixes.length * opts.clients.length * SIDES.length
console.log(`${NAME}: bank transfers on levelkit (${backend}) and better-sqlite3 (SQLite ${sqliteVersion}), ${opts.runs} run(s) of ${cellCount} cells, ${seconds} s each`)
console.log(`  ${fmt(opts.accounts)} accounts of ${fmt(INITIAL_BALANCE)}; transfers of 1..${MAX_AMOUNT} between two accounts; ${opts.keys.map(k => KEYS_TEXT[k]).join(', ')}; ${opts.mixes.map(m => `${m} (${MIX_TEXT[m]})`).join(', ')}; clients ${opts.clients.join(', ')} (async loops in this process); maxRetries ${opts.maxRetries}`)
console.log(`  levelkit: ${opts.modes.map(labelOf).join(', ')}`)
console.log('  SQLite runs one synchronous loop whatever the clients (better-sqlite3 is synchronous: its transactions run one after the other);')
console.log(`  ${backend === 'memory' ? 'in memory (synchronous has no effect there)' : 'a file in WAL mode'}, synchronous=NORMAL for the relaxed rows, FULL for the durable rows`)
printMachine(run, ['classic-level', 'better-sqlite3'])
console.log(`  levelkit ${versions.levelkit} at commit ${commit ?? 'unknown'} (where 'levelkit' resolves from bench/)`)

if (opts.warmup) {
  // Untimed: the first cell of each side would otherwise pay for the JIT.
  const warm = Math.min(0.25, seconds)
  await runGroup(SIDES, opts.keys[0], opts.mixes[opts.mixes.length - 1], Math.max(...opts.clients), opts.seed, warm, 1, false)
  console.log(`  warm-up: ${warm} s of every side, not counted`)
}
console.log()

/** @type {any[]} */
const results = []
/** @type {any[]} */
const rtResults = []
/** @type {string[]} */
const problems = []
for (let r = 1; r <= opts.runs; r++) {
  let group = 0
  for (const keys of opts.keys) {
    for (const mix of opts.mixes) {
      for (const clients of opts.clients) {
        const seed = (opts.seed * 7919 + r) * 1000003 + group * 100003
        const cellResults = await runGroup(SIDES, keys, mix, clients, seed, seconds, opts.slices, (group + r) % 2 === 1)
        for (const side of SIDES) {
          const result = cellResults.get(side)
          const { invariant } = result
          const holds = invariant.ok && result.checkOk
          results.push({ run: r, keys, mix, clients, side, ...result, invariantOk: holds })
          const where = `run ${r}, ${keys}, ${mix}, ${clients} clients, ${side}`
          if (!invariant.ok) problems.push(`${where}: invariant broken (${invariant.count} accounts, sum ${invariant.sum} instead of ${invariant.expected}, min ${invariant.min})`)
          if (!result.checkOk) problems.push(`${where}: db.check() found problems`)
          console.log(`  run ${r}/${opts.runs}  ${keys.padEnd(7)} ${mix.padEnd(11)} ${String(clients).padStart(3)} clients  ${labelOf(side).padEnd(24)} ${fmt(result.opsPerSec).padStart(8)} ops/s  p99 ${fmt(result.p99Ms, 2).padStart(7)} ms  ` +
            `invariant ${holds ? 'ok' : 'BROKEN'} (sum ${fmt(invariant.sum)}, min ${fmt(invariant.min)}${invariant.count === opts.accounts ? '' : `, ${fmt(invariant.count)} accounts`}${result.checkOk ? '' : ', check() found problems'})`)
        }
        group++
      }
    }
  }
  for (const mode of /** @type {Array<keyof typeof RT_MODES>} */ (Object.keys(RT_MODES))) {
    for (const clients of opts.clients) {
      const result = await runRandomTransaction(mode, clients, (opts.seed * 7919 + r) * 1000 + 900, seconds)
      rtResults.push({ run: r, ...result })
      if (!result.ok) problems.push(`run ${r}, randomtransaction ${mode}, ${clients} clients: the sets sum to ${result.sums.join(', ')}, not all to ${result.committed} (the committed transactions)`)
      console.log(`  run ${r}/${opts.runs}  randomtransaction ${RT_MODES[mode].padEnd(24)} ${String(clients).padStart(3)} clients  ${fmt(result.txPerSec).padStart(8)} tx/s  retries ${fmt(result.retries)}, gave up ${fmt(result.gaveUp)}; ` +
        (result.ok ? `every set sums to ${fmt(result.committed)} (the committed transactions): ok` : `sets sum to ${result.sums.map(fmt).join(', ')}, committed ${fmt(result.committed)}: BROKEN`))
    }
  }
}
const loadAfter = os.loadavg()

// Medians per cell; a levelkit row's ratio is the median of its per-run
// ratios against the SQLite side of the same run and group.
/** @type {any[]} */
const cells = []
for (const keys of opts.keys) {
  for (const mix of opts.mixes) {
    for (const clients of opts.clients) {
      for (const side of SIDES) {
        const mine = results.filter(x => x.keys === keys && x.mix === mix && x.clients === clients && x.side === side)
        /** @param {string} field */
        const med = field => median(mine.map(x => x[field]))
        /** @type {any} */
        const cell = {
          keys,
          mix,
          clients,
          side,
          label: labelOf(side),
          loops: mine[0].loops,
          opsPerSec: med('opsPerSec'),
          p50Ms: med('p50Ms'),
          p99Ms: med('p99Ms'),
          retries: med('retries'),
          declined: med('declined'),
          gaveUp: med('gaveUp'),
          lockTimeouts: med('lockTimeouts'),
          deadlocks: med('deadlocks'),
          lockWaits: med('lockWaits'),
          invariantOk: mine.every(x => x.invariantOk),
          perRun: mine.map(x => x.opsPerSec)
        }
        if (!(side in SQLITE)) {
          cell.against = sqliteFor(side)
          cell.ratioPerRun = mine.map(x => x.opsPerSec / results.find(y => y.run === x.run && y.keys === keys && y.mix === mix && y.clients === clients && y.side === cell.against).opsPerSec)
          cell.ratio = median(cell.ratioPerRun)
        }
        cells.push(cell)
      }
    }
  }
}
/** @param {string} keys @param {string} mix @param {number} clients @param {string} side */
const cellOf = (keys, mix, clients, side) => cells.find(c => c.keys === keys && c.mix === mix && c.clients === clients && c.side === side)

console.log()
console.log(`Medians of ${opts.runs} run(s), ${seconds} s per cell in ${opts.slices} alternating slices. retries: attempts > 1 (versioned: writes made again); gave up: operations that failed (conflict after maxRetries, lock timeout, ...);`)
console.log('× SQLite: levelkit ops/s / SQLite NORMAL ops/s (durable: / SQLite FULL), the median of per-run ratios. SQLite rows run one loop whatever the clients.')
for (const keys of opts.keys) {
  for (const mix of opts.mixes) {
    console.log()
    console.log(`  ${KEYS_TEXT[keys]}, ${mix} (${MIX_TEXT[mix]})`)
    const table = [['clients', 'mode', 'ops/s', 'p99 ms', 'retries', 'gave up', 'lock timeouts', 'deadlocks', 'invariant', '× SQLite']]
    for (const clients of opts.clients) {
      for (const side of SIDES) {
        const c = cellOf(keys, mix, clients, side)
        table.push([String(clients), c.label, fmt(c.opsPerSec), fmt(c.p99Ms, 2), fmt(c.retries), fmt(c.gaveUp), fmt(c.lockTimeouts), fmt(c.deadlocks), c.invariantOk ? 'ok' : 'BROKEN', c.ratio === undefined ? '' : `${c.ratio.toFixed(2)}×`])
      }
    }
    printTable(table, 2)
  }
}

/** @type {any[]} */
const rtSummary = []
for (const mode of Object.keys(RT_MODES)) {
  for (const clients of opts.clients) {
    const mine = rtResults.filter(x => x.mode === mode && x.clients === clients)
    /** @param {(x: any) => number} f */
    const med = f => median(mine.map(f))
    rtSummary.push({
      mode,
      label: RT_MODES[/** @type {keyof typeof RT_MODES} */ (mode)],
      clients,
      txPerSec: med(x => x.txPerSec),
      p99Ms: med(x => x.p99Ms),
      retries: med(x => x.retries),
      gaveUp: med(x => x.gaveUp),
      lockTimeouts: med(x => x.locks.timeouts),
      deadlocks: med(x => x.locks.deadlocks),
      ok: mine.every(x => x.ok)
    })
  }
}
console.log()
console.log(`  randomtransaction (RocksDB db_bench's, ported): ${opts.sets} sets of ${fmt(opts.rtKeys)} keys, one increment per set per transaction, lock timeout ${RT_LOCK_TIMEOUT} ms`)
const rtTable = [['mode', 'clients', 'tx/s', 'p99 ms', 'retries', 'gave up', 'lock timeouts', 'deadlocks', 'sets']]
for (const s of rtSummary) {
  rtTable.push([s.label, String(s.clients), fmt(s.txPerSec), fmt(s.p99Ms, 2), fmt(s.retries), fmt(s.gaveUp), fmt(s.lockTimeouts), fmt(s.deadlocks), s.ok ? 'ok' : 'BROKEN'])
}
printTable(rtTable, 1)
console.log('  sets: every set sums to the number of committed transactions, in every run.')

// The goals of the issue.
/** @type {Array<{ goal: string, value: number | null, target: number | null, met: boolean | null }>} */
const goals = []
/** @param {string} goal @param {number | null | undefined} value @param {number} target @param {string} [unit] */
const goalOf = (goal, value, target, unit = '×') => {
  const known = value !== null && value !== undefined && Number.isFinite(value)
  goals.push({ goal, value: known ? value : null, target, met: known ? value >= target : null })
  console.log(`  goal: ${goal} ≥ ${target}${unit}: ${known ? `${value.toFixed(2)}${unit}: ${value >= target ? 'met' : 'MISSED'}` : 'n/a'}`)
}
console.log()
for (const keys of opts.keys) {
  goalOf(`durable writes, 64 in flight, ${KEYS_TEXT[keys]}, write-heavy: durable db.write() / SQLite synchronous=FULL`, opts.modes.includes('durable') && opts.clients.includes(64) && opts.mixes.includes('write-heavy') ? cellOf(keys, 'write-heavy', 64, 'durable')?.ratio : null, 5)
}
{
  const ready = opts.keys.includes('uniform') && opts.mixes.includes('write-heavy') && opts.clients.includes(16) && opts.modes.includes('optimistic') && opts.modes.includes('plain')
  goalOf('optimistic tx at low contention (uniform keys, write-heavy, 16 clients) / plain writes', ready ? ratioOf('uniform', 'write-heavy', 16, 'optimistic', 'plain') : null, 0.8)
}
for (const mix of opts.mixes) {
  for (const clients of opts.clients.filter(c => c > 1)) {
    for (const lock of /** @type {const} */ (['soft', 'hard'])) {
      const ready = opts.keys.includes('hot') && opts.modes.includes(lock) && opts.modes.includes('optimistic')
      goalOf(`hot keys, ${mix}, ${clients} clients: ${lock}-lock tx / optimistic tx (ops/s)`, ready ? ratioOf('hot', mix, clients, lock, 'optimistic') : null, 1)
    }
  }
}
{
  const lost = results.filter(x => !x.invariantOk).length + rtResults.filter(x => !x.ok).length
  goals.push({ goal: 'no lost invariant anywhere', value: lost, target: 0, met: lost === 0 })
  console.log(`  goal: no lost invariant anywhere (${results.length} cells, ${rtResults.length} randomtransaction runs): ${lost === 0 ? 'met' : `MISSED (${lost} broken)`}`)
}
printProblems(problems)

/**
 * The median over runs of a's ops/s / b's ops/s in the same run.
 * @param {string} keys @param {string} mix @param {number} clients @param {string} a @param {string} b
 */
function ratioOf (keys, mix, clients, a, b) {
  const of = (/** @type {string} */ side) => results.filter(x => x.keys === keys && x.mix === mix && x.clients === clients && x.side === side)
  const bs = of(b)
  return median(of(a).map(x => x.opsPerSec / bs.find(y => y.run === x.run).opsPerSec))
}

writeCsv(path.join(outDir, 'results.csv'),
  ['run', 'keys', 'mix', 'clients', 'side', 'loops', 'ops', 'ms', 'ops_per_sec', 'p50_ms', 'p99_ms', 'retries', 'declined', 'gave_up', 'lock_timeouts', 'deadlocks', 'invariant_ok'],
  results.map(x => [x.run, x.keys, x.mix, x.clients, x.side, x.loops, x.ops, x.ms, x.opsPerSec, x.p50Ms, x.p99Ms, x.retries, x.declined, x.gaveUp, x.lockTimeouts, x.deadlocks, String(x.invariantOk)]))

const files = ['results.csv']
for (const mix of ['write-heavy', 'read-heavy'].filter(m => opts.mixes.includes(m))) {
  const file = mix === 'write-heavy' ? `${NAME}.svg` : `${NAME}-${mix}.svg`
  const categories = []
  for (const keys of opts.keys) for (const side of SIDES) categories.push(`${labelOf(side)}, ${keys}`)
  fs.writeFileSync(path.join(outDir, file), barSvg({
    title: `Bank transfers, ${mix} (${MIX_TEXT[mix]}): ops/s by mode and clients (higher is better)`,
    subtitle: `levelkit ${commit ?? ''} on ${backend} vs better-sqlite3 ${versions['better-sqlite3']}; ${fmt(opts.accounts)} accounts, uniform or Zipf s=${zipf}; ${seconds} s per cell, median of ${opts.runs} run(s); ${machine.cpu}, ${machine.cores} cores, node ${versions.node}, ${startedAt.toISOString().slice(0, 10)}`,
    xLabel: 'operations per second (SQLite: one loop whatever the clients)',
    xScale: 'log',
    categories,
    series: opts.clients.map(clients => ({
      name: `${clients} client${clients === 1 ? '' : 's'}`,
      values: opts.keys.flatMap(keys => SIDES.map(side => cellOf(keys, mix, clients, side).opsPerSec))
    }))
  }))
  files.push(file)
}

finishRun(outDir, { name: NAME, startedAt, machine, versions: { ...versions, levelkitCommit: commit, sqlite: sqliteVersion }, loadBefore, loadAfter }, {
  options: opts,
  csvColumns: ['run', 'keys', 'mix', 'clients', 'side', 'loops', 'ops', 'ms', 'ops_per_sec', 'p50_ms', 'p99_ms', 'retries', 'declined', 'gave_up', 'lock_timeouts', 'deadlocks', 'invariant_ok'],
  cells,
  randomTransactionSummary: rtSummary,
  randomTransaction: rtResults,
  goals,
  problems
}, files)
if (problems.length > 0) process.exitCode = 1

/**
 * The git commit of the library this run imports ('levelkit' resolves to a
 * checkout, which may not be the one this script is in), with "+changes" if
 * its lib/ has uncommitted changes; null when git cannot tell.
 */
function libraryCommit () {
  try {
    const dir = path.dirname(require.resolve('levelkit/package.json'))
    const git = (/** @type {string[]} */ ...words) => execFileSync('git', ['-C', dir, ...words], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
    const head = git('log', '-1', '--format=%h')
    return git('status', '--porcelain', '--', 'lib', 'index.js') === '' ? head : `${head}+changes`
  } catch {
    return null
  }
}

function sqliteVersionOf () {
  const Database = require('better-sqlite3')
  const db = new Database(':memory:')
  try {
    return db.prepare('SELECT sqlite_version()').pluck().get()
  } finally {
    db.close()
  }
}
