// Smoke test of bench/scale-out.js: one run with a tiny data set (--turns
// cells: every cell once), both SQL
// variants (serial and gap-free ids), 1 and 2
// processes of each store on PostgreSQL (the tests' server, passed on as
// LEVELKIT_PG_URL: one throwaway cluster for every test file of the tape
// process) and one on LevelDB, in the steady state (--warm-ops), then the
// shape of what it writes (table, CSV, JSON, SVG) and that every cell
// agreed; the cold default with --turns pairs and --base-library, and a
// base library with its own `pg`. It never asserts a time: a benchmark
// measures, it is not a timed test.

import test from 'tape'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, readdirSync, readFileSync, cpSync, mkdirSync, symlinkSync, realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { postgresForTests } from '../../test/util/postgres.js'

const script = fileURLToPath(new URL('../scale-out.js', import.meta.url))
const OPS = ['createUser', 'createChat', 'addChatMessage', 'last50', 'getChats']
const CELLS = ['sql-1', 'sql-2', 'sql-gapfree-1', 'sql-gapfree-2', 'levelkit-pg-1', 'levelkit-pg-2', 'levelkit-leveldb-1']
const N = 16
// --warm-ops of the tiny launch: each process's own untimed inputs of each operation.
const WARM = 3
const server = await postgresForTests(test)

/**
 * @param {string[]} args @param {number} [timeout] ms @param {Record<string, string>} [env] over this test's (LEVELKIT_PG_URL: the test's server)
 * @returns {Promise<{ code: number, stdout: string, stderr: string }>}
 */
function run (args, timeout = 55000, env = {}) {
  return new Promise(resolve => {
    execFile(process.execPath, [script, ...args], { timeout, env: { ...process.env, LEVELKIT_PG_URL: server.connectionString, ...env } }, (err, stdout, stderr) => {
      resolve({ code: err ? /** @type {any} */ (err).code ?? 1 : 0, stdout, stderr })
    })
  })
}

// One launch for both tests below (both SQL variants, 1 and 2 processes of
// each store, and LevelDB): each launch fills and checks every cell it runs,
// so two launches ran the serial SQL and levelkit-on-PostgreSQL cells twice.
// Started by the first test that needs it; the output is removed at the end.
/** @type {Promise<{ code: number, stdout: string, stderr: string, out: string }> | undefined} */
let tiny
function runTiny () {
  if (!tiny) {
    const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-scale-out-'))
    test.onFinish(() => rmSync(out, { recursive: true, force: true }))
    tiny = run([
      '--runs', '1', '--writers', '1,2', '--processes', '1,2', '--users', '40', '--chats', '4', '--members', '4', '--messages', '80',
      '--n', String(N), '--concurrency', '3', '--slices', '2', '--sql-ids', 'serial,gapfree', '--turns', 'cells', '--warm-ops', String(WARM), '--out', out, '--db-dir', out
    // (its seven cells took over 110 s on 2 vCPUs at load 35: a smoke test should not fail on load)
    ], 240000).then(result => ({ ...result, out }))
  }
  return tiny
}

test('bench/scale-out.js with a tiny data set', async t => {
  const { code, stdout, stderr, out } = await runTiny()
  t.is(code, 0, `exit 0${code ? `: ${stderr}\n${stdout}` : ''}`)
  for (const label of ['createUser', 'createChat, 20 members', 'addChatMessage', 'last 50 messages', 'getChats of a user']) {
    for (const cell of ['SQL (pg) ×1', 'SQL (pg) ×2', 'SQL (pg), gap-free ids ×1', 'SQL (pg), gap-free ids ×2', 'levelkit on PostgreSQL ×1', 'levelkit on PostgreSQL ×2', 'levelkit on LevelDB ×1']) {
      t.match(stdout, new RegExp(`\\n  ${label.replace(/[(),]/g, '\\$&')} +${cell.replace(/[()]/g, '\\$&')} +(n/a \\(one process per table until multi-process lands\\)|[\\d,]+ )`), `table row: ${label}, ${cell}`)
    }
  }
  t.match(stdout, /Every cell answered the sample reads alike after being filled, and its final state checked out/, 'the cells agreed')
  t.doesNotMatch(stdout, /PROBLEM/, 'no problem reported')

  const dirs = readdirSync(out).filter(name => name.startsWith('scale-out-'))
  t.is(dirs.length, 1, 'one output folder')
  const dir = join(out, dirs[0])
  const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
  t.is(summary.benchmark, 'scale-out')
  t.same(summary.problems, [], 'no problems recorded')
  t.same(summary.cells.map((/** @type {any} */ c) => c.key), CELLS, 'the cells, in order')
  t.same(Object.keys(summary.summary), OPS, 'a summary per operation, in order')
  const lockedOut = summary.summary.createUser['levelkit-pg-2'].na !== undefined
  for (const op of OPS) {
    for (const key of CELLS) {
      const s = summary.summary[op][key]
      if (key === 'levelkit-pg-2' && lockedOut) {
        t.is(s.na, 'n/a (one process per table until multi-process lands)', `${op}, ${key}: n/a while one process owns a table`)
        continue
      }
      t.ok(s.opsPerSec > 0 && s.p99Ms >= s.p50Ms && s.p50Ms > 0 && s.ops === N, `${op}, ${key}: ops/s, p50 <= p99, ops`)
      if (key.startsWith('sql')) t.ok(Number.isSafeInteger(s.retries), `${op}, ${key}: retries counted`)
      if (!key.startsWith('sql')) t.ok(s.ratio > 0, `${op}, ${key}: a ratio against SQL`)
      if (key.endsWith('-2')) t.ok(s.scaling > 0, `${op}, ${key}: against one process`)
    }
  }
  t.is(summary.runs.length, 1, 'one run recorded')
  t.same(summary.runs[0].cells['sql-2'].check.problems, [], 'the final check ran and found nothing')
  t.is(summary.options.users, 40, 'options recorded')
  // --warm-ops: every process of every cell ran its own WARM of each
  // operation before the slices (SQL, levelkit and LevelDB alike), through
  // the store (statements counted on PostgreSQL), and the final check above,
  // which counts those writes, agreed.
  t.is(summary.options.warmOps, WARM, '--warm-ops recorded')
  t.match(stdout, /processes: steady state \(--warm-ops 3: each process ran 3 of each measured operation/, 'the steady state said')
  for (const key of CELLS) {
    const cell = summary.runs[0].cells[key]
    if (cell.na) continue
    const processes = Number(key.at(-1))
    t.is(cell.warmedUp?.ops, WARM * OPS.length * processes, `${key}: ${WARM} of each operation per process, untimed`)
    if (key !== 'levelkit-leveldb-1') t.ok(cell.warmedUp.queries >= WARM * 3 * processes, `${key}: the warm-up's writes reached PostgreSQL`)
  }
  t.ok(typeof summary.versions.postgresql === 'string' && typeof summary.versions.pg === 'string', 'versions recorded')
  t.is(summary.loadAverage.before.length, 3, 'load average recorded')

  const lines = readFileSync(join(dir, 'results.csv'), 'utf8').trimEnd().split('\n')
  t.is(lines[0], 'run,operation,cell,kind,processes,ops,ms,ops_per_sec,p50_ms,p99_ms,retries,round_trips_per_op,connects_per_op,node_cores,pg_cores,machine_cores,node_cpu_ms_per_op,pg_cpu_ms_per_op,ratio_vs_sql', 'CSV header')
  t.is(lines.length - 1, OPS.length * (lockedOut ? CELLS.length - 1 : CELLS.length), 'one row per operation and measured cell')

  const svg = readFileSync(join(dir, 'scale-out.svg'), 'utf8')
  t.ok(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"') && svg.trimEnd().endsWith('</svg>'), 'SVG document')
  t.same(readdirSync(out).filter(name => name.startsWith('levelkit-scale-out-')), [], 'the LevelDB databases are removed')
})

// Both SQL variants (identity ids with gaps, gap-free ids as levelkit's):
// cells of each, one ratio column per variant, and the same final state.
test('bench/scale-out.js --sql-ids serial,gapfree', async t => {
  const { code, stdout, stderr, out } = await runTiny()
  t.is(code, 0, `exit 0${code ? `: ${stderr}\n${stdout}` : ''}`)
  t.match(stdout, /× SQL serial ids +× SQL gap-free ids/, 'a ratio column per SQL variant')
  t.match(stdout, /\n {2}createChat, 20 members +SQL \(pg\), gap-free ids ×2 +[\d,]+ /, 'a row of the gap-free variant')
  t.match(stdout, /final state checked out/, 'every cell, both variants, has the same final state')
  const dir = join(out, readdirSync(out).filter(name => name.startsWith('scale-out-'))[0])
  const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
  t.same(summary.cells.map((/** @type {any} */ c) => c.key), CELLS, 'the cells, serial ids keeping their names')
  t.same(summary.options.sqlIds, ['serial', 'gapfree'], 'the variants recorded')
  for (const op of OPS) {
    const each = summary.summary[op]['levelkit-pg-1'].ratioEach
    t.ok(each['sql-1'] > 0 && each['sql-gapfree-1'] > 0, `${op}: levelkit against each variant`)
    t.is(summary.summary[op]['levelkit-pg-1'].ratio, each['sql-1'], `${op}: the ratio is against the first variant`)
    t.ok(summary.summary[op]['sql-gapfree-2'].ratioEach['sql-2'] > 0, `${op}: gap-free against serial ids`)
  }
})

// --turns pairs (the default) with --base-library: SQL, levelkit, SQL,
// levelkit over the base library, SQL; each levelkit cell's ratio against
// the SQL measurements next to it. The base library is this checkout.
test('bench/scale-out.js --turns pairs --base-library', async t => {
  const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-scale-out-'))
  try {
    const root = fileURLToPath(new URL('../..', import.meta.url))
    const { code, stdout, stderr } = await run([
      '--runs', '1', '--writers', '1', '--processes', '1', '--users', '40', '--chats', '4', '--members', '4', '--messages', '80',
      '--n', String(N), '--concurrency', '3', '--slices', '1', '--ops', 'createUser', '--no-leveldb', '--base-library', root, '--out', out, '--db-dir', out
    ], 110000)
    t.is(code, 0, `exit 0${code ? `: ${stderr}\n${stdout}` : ''}`)
    t.match(stdout, /× base library/, 'a column against the base library')
    t.match(stdout, /\n {2}createUser +levelkit on PostgreSQL, base library ×1 +[\d,]+ /, 'a row of the base library\'s cell')
    const dir = join(out, readdirSync(out).filter(name => name.startsWith('scale-out-'))[0])
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
    t.same(summary.cells.map((/** @type {any} */ c) => c.key), ['sql-1', 'levelkit-pg-1', 'levelkit-pg-base-1'], 'the cells')
    t.is(summary.options.turns, 'pairs', 'pairs by default')
    const cells = summary.runs[0].cells
    t.is(cells['sql-1'].measured, 3, 'the SQL cell measured before, between and after the two others')
    for (const key of ['levelkit-pg-1', 'levelkit-pg-base-1']) {
      const paired = cells[key].paired['sql-1'].createUser
      t.ok(paired > 0, `${key}: paired with the SQL measurements next to it`)
      t.ok(Math.abs(summary.summary.createUser[key].ratio - cells[key].results.createUser.opsPerSec / paired) < 1e-9, `${key}: its ratio is against them`)
    }
    t.ok(summary.summary.createUser['levelkit-pg-1'].againstBase > 0, 'a ratio against the base library')
    const lines = readFileSync(join(dir, 'results.csv'), 'utf8').trimEnd().split('\n')
    t.ok(lines.slice(1).every(line => line.includes(',sql,') ? line.endsWith(',') : Number(line.split(',').at(-1)) > 0), 'the CSV\'s ratio_vs_sql, empty for SQL')
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})

// --shard-chats: each process sends to its own chats; the final check
// (every chat's ids 1..N, holding what was sent to it) and the digest both
// sides share hold as without, warm-up included.
test('bench/scale-out.js --shard-chats', async t => {
  const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-scale-out-'))
  try {
    const { code, stdout, stderr } = await run([
      '--runs', '1', '--writers', '2', '--processes', '2', '--users', '40', '--chats', '4', '--members', '4', '--messages', '80',
      '--n', String(N), '--concurrency', '3', '--slices', '1', '--no-leveldb', '--turns', 'cells',
      '--locking', 'serializable', '--sql-ids', 'gapfree', '--warm-ops', String(WARM), '--shard-chats', '--out', out, '--db-dir', out
    ], 110000)
    t.is(code, 0, `exit 0${code ? `: ${stderr}\n${stdout}` : ''}`)
    t.match(stdout, /messages sharded: each process sends to its own chats/, 'said in the header')
    t.match(stdout, /final state checked out/, 'both cells have the same final state, every chat\'s ids 1..N')
    const dir = join(out, readdirSync(out).filter(name => name.startsWith('scale-out-'))[0])
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
    t.is(summary.options.shardChats, true, 'recorded')
    t.ok(summary.summary.addChatMessage['levelkit-pg-serializable-2'].ratio > 0, 'levelkit\'s appends measured against the SQL store\'s')
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})

// --pg-set changes a throwaway cluster's settings before the run, never a
// server LEVELKIT_PG_URL names.
test('bench/scale-out.js --pg-set', async t => {
  const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-scale-out-'))
  try {
    const args = [
      '--runs', '1', '--writers', '1', '--processes', '1', '--users', '40', '--chats', '4', '--members', '4', '--messages', '80',
      '--n', String(N), '--concurrency', '3', '--slices', '1', '--ops', 'createUser', '--no-leveldb', '--turns', 'cells',
      '--pg-set', 'max_pred_locks_per_page=8', '--out', out, '--db-dir', out
    ]
    const refused = await run(args)
    t.ok(refused.code !== 0 && /--pg-set changes only a throwaway cluster/.test(refused.stderr), 'refused on the server LEVELKIT_PG_URL names')
    const { code, stdout, stderr } = await run(args, 110000, { LEVELKIT_PG_URL: '' })
    t.is(code, 0, `exit 0 on a throwaway cluster${code ? `: ${stderr}\n${stdout}` : ''}`)
    t.match(stdout, /PostgreSQL: a throwaway cluster;.*, max_pred_locks_per_page 8/, 'the setting printed as the server has it')
    const dir = join(out, readdirSync(out).filter(name => name.startsWith('scale-out-'))[0])
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
    t.is(summary.postgres.settings.max_pred_locks_per_page, '8', 'and recorded')
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})

// A copy of levelkit with its own `pg` (a checkout with its own
// node_modules, as session 20's base was): the statements it sends are
// counted all the same, and the ratio of round trips is the copy's, not 0.
// Its sources are this checkout's, so it sends as many statements.
test('bench/scale-out.js --base-library with its own pg', async t => {
  const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-scale-out-'))
  try {
    const root = fileURLToPath(new URL('../..', import.meta.url))
    const base = join(out, 'base')
    mkdirSync(join(base, 'node_modules'), { recursive: true })
    for (const file of ['index.js', 'chat.js', 'package.json']) cpSync(join(root, file), join(base, file))
    cpSync(join(root, 'lib'), join(base, 'lib'), { recursive: true })
    // Every dependency linked to this checkout's, but pg: a copy, another module to Node.
    for (const name of readdirSync(join(root, 'node_modules'))) {
      if (name === 'pg') cpSync(realpathSync(join(root, 'node_modules', name)), join(base, 'node_modules', name), { recursive: true, dereference: true })
      else symlinkSync(join(root, 'node_modules', name), join(base, 'node_modules', name))
    }
    const { code, stdout, stderr } = await run([
      '--runs', '1', '--writers', '1', '--processes', '1', '--users', '40', '--chats', '4', '--members', '4', '--messages', '80',
      '--n', String(N), '--concurrency', '3', '--slices', '1', '--ops', 'createChat', '--no-leveldb', '--turns', 'cells', '--base-library', base, '--out', out, '--db-dir', out
    ], 110000)
    t.is(code, 0, `exit 0${code ? `: ${stderr}\n${stdout}` : ''}`)
    const dir = join(out, readdirSync(out).filter(name => name.startsWith('scale-out-'))[0])
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
    const mine = summary.summary.createChat['levelkit-pg-1']
    const theirs = summary.summary.createChat['levelkit-pg-base-1']
    t.ok(mine.roundTrips > 0, `this checkout's round trips counted (${mine.roundTrips}/op)`)
    t.ok(theirs.roundTrips > 0, `the base library's round trips counted (${theirs.roundTrips}/op)`)
    t.ok(Math.abs(theirs.roundTrips - mine.roundTrips) <= 0.25 * mine.roundTrips, 'as many as this checkout\'s, the same sources')
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})

test('bench/scale-out.js refuses bad options', async t => {
  for (const [options, message] of /** @type {Array<[string[], RegExp]>} */ ([
    [['--ops', 'nope'], /Unknown operation "nope"/],
    [['--writers', '2,4'], /--writers must include 1/],
    [['--processes', '1,1'], /--processes lists a count twice/],
    [['--sql-ids', 'serial,uuid'], /--sql-ids lists serial and\/or gapfree/],
    [['--turns', 'slice'], /--turns is pairs, cells or slices/],
    [['--base-library', '/nonexistent'], /--base-library: no levelkit at/],
    [['--warm-ops', '1.5'], /--warm-ops is a count, 0 or more/],
    [['--warm-ops', 'many'], /--warm-ops is a count, 0 or more/],
    [['--pg-set', 'max_pred_locks_per_page'], /--pg-set is name=value/],
    [['--pg-set', 'x=1;DROP'], /--pg-set is name=value/]
  ])) {
    const { code, stderr } = await run(options)
    t.is(code, 2, `${options.join(' ')}: exit 2`)
    t.match(stderr, message)
  }
})
