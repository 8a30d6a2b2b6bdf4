// Tests of bench/transactions.js: its key choosers and invariant checks on
// their own (each must catch what it is there to catch), then the script
// once per backend with tiny sizes, checking the shape of what it prints and
// writes. It never asserts a time: a benchmark measures, it is not a timed
// test.

import test from 'tape'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { open } from 'levelkit'
import { prng } from 'levelkit-testkit/prng'
import { keyChooser } from '../lib/transactions-keys.js'
import { populateAccounts, accountsInvariant, openSqliteSide, INITIAL_BALANCE } from '../lib/transactions-sides.js'
import { declareSets, verifySets } from '../lib/random-transaction.js'

const script = fileURLToPath(new URL('../transactions.js', import.meta.url))
const MODES = ['plain', 'versioned', 'optimistic', 'soft', 'hard', 'write', 'durable']
const SIDES = [...MODES, 'sqlite-normal', 'sqlite-full']

/** @param {string[]} args @returns {Promise<{ code: number, stdout: string, stderr: string }>} */
function run (args) {
  return new Promise(resolve => {
    execFile(process.execPath, [script, ...args], { timeout: 120000 }, (err, stdout, stderr) => {
      resolve({ code: err ? /** @type {any} */ (err).code ?? 1 : 0, stdout, stderr })
    })
  })
}

test('keyChooser: uniform and Zipf ids, seeded', t => {
  const n = 1000
  for (const distribution of /** @type {const} */ (['uniform', 'hot'])) {
    const choose = keyChooser(distribution, n, 1.1)
    const a = prng(7)
    const b = prng(7)
    const ids = Array.from({ length: 20000 }, () => choose(a))
    t.ok(ids.every(id => Number.isInteger(id) && id >= 1 && id <= n), `${distribution}: ids 1..${n}`)
    t.same(ids.slice(0, 50), Array.from({ length: 50 }, () => choose(b)), `${distribution}: the same seed gives the same ids`)
    const first = ids.filter(id => id === 1).length / ids.length
    let h = 0
    for (let k = 1; k <= n; k++) h += k ** -1.1
    const expected = distribution === 'hot' ? 1 / h : 1 / n
    t.ok(Math.abs(first - expected) < expected * 0.2 + 0.002, `${distribution}: id 1 is chosen ${(first * 100).toFixed(2)}% of the time (expected ${(expected * 100).toFixed(2)}%)`)
  }
  t.throws(() => keyChooser(/** @type {any} */ ('nope'), n, 1.1), /Unknown key distribution/)
  t.end()
})

test('accountsInvariant: the sum and the smallest balance', async t => {
  const db = await open({ backend: 'memory' })
  const accounts = db.collection('accounts')
  await populateAccounts(db, accounts, 50)
  let check = await accountsInvariant(accounts, 50)
  t.same(check, { ok: true, count: 50, sum: 50 * INITIAL_BALANCE, min: INITIAL_BALANCE, expected: 50 * INITIAL_BALANCE }, 'fresh accounts hold the invariant')

  await accounts.update(3, { balance: INITIAL_BALANCE - 5 })
  check = await accountsInvariant(accounts, 50)
  t.is(check.ok, false, 'money that vanished breaks it')
  t.is(check.sum, 50 * INITIAL_BALANCE - 5)

  await accounts.update(4, { balance: INITIAL_BALANCE + 5 })
  t.is((await accountsInvariant(accounts, 50)).ok, true, 'a transfer keeps it')

  await accounts.update(5, { balance: -1 })
  await accounts.update(6, { balance: 2 * INITIAL_BALANCE + 1 })
  check = await accountsInvariant(accounts, 50)
  t.is(check.ok, false, 'a negative balance breaks it, even when the sum holds')
  t.is(check.min, -1)

  await accounts.update(5, { balance: 0 })
  await accounts.update(6, { balance: 2 * INITIAL_BALANCE })
  await accounts.del(7)
  t.is((await accountsInvariant(accounts, 50)).ok, false, 'a missing account breaks it')
  await db.close()
})

test('openSqliteSide: transfers keep the invariant, a broken table does not', async t => {
  const side = openSqliteSide(':memory:', 'NORMAL', 20)
  t.ok(side.transfer(1, 2, 10), 'a transfer')
  t.is(side.transfer(3, 4, INITIAL_BALANCE + 1), false, 'declined: not enough money')
  t.same(side.read(1, 2), [INITIAL_BALANCE - 10, INITIAL_BALANCE + 10], 'reads both balances')
  t.is(side.invariant().ok, true, 'the invariant holds')
  side.sql.prepare('UPDATE accounts SET balance = balance - 1 WHERE id = 5').run()
  t.is(side.invariant().ok, false, 'money that vanished breaks it')
  side.close()
})

test('verifySets: every set sums to the committed count', async t => {
  const db = await open({ backend: 'memory' })
  const rows = declareSets(db)
  for (const [set, key, value] of [[0, 1, 2], [0, 5, 1], [1, 9, 3]]) await rows.put([set, key], { set, key, value })
  t.same(await verifySets(rows, 2, 3), { ok: true, sums: [3, 3] }, 'both sets sum to 3')
  t.same(await verifySets(rows, 2, 4), { ok: false, sums: [3, 3] }, 'a lost increment is caught')
  await rows.put([1, 2], { set: 1, key: 2, value: 1 })
  t.same(await verifySets(rows, 2, 3), { ok: false, sums: [3, 4] }, 'sets that differ are caught')
  t.same(await verifySets(rows, 3, 3), { ok: false, sums: [3, 4, 0] }, 'an empty set is caught')
  await db.close()
})

for (const backend of ['memory', 'leveldb']) {
  test(`bench/transactions.js --backend ${backend} with tiny sizes`, async t => {
    const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-tx-'))
    try {
      const { code, stdout, stderr } = await run([
        '--seconds', '0.1', '--slices', '2', '--accounts', '100', '--clients', '1,4', '--rt-keys', '20', '--sets', '3',
        '--backend', backend, '--no-warmup', '--out', out, '--db-dir', out
      ])
      t.is(code, 0, `exit 0${code ? `: ${stderr}` : ''}`)
      t.match(stdout, /SQLite runs one synchronous loop whatever the clients/, 'says SQLite runs one loop')
      const cellLines = stdout.split('\n').filter(line => /^ {2}run 1\/1 /.test(line) && !line.includes('randomtransaction'))
      t.is(cellLines.length, 2 * 2 * 2 * SIDES.length, 'a line per cell')
      t.ok(cellLines.every(line => /invariant ok \(sum [\d,]+, min -?[\d,]+\)/.test(line)), 'each cell prints its invariant, and it holds')
      for (const heading of ['uniform keys, read-heavy', 'uniform keys, write-heavy', 'hot keys (Zipf s=1.1), read-heavy', 'hot keys (Zipf s=1.1), write-heavy']) {
        t.ok(stdout.includes(heading), `a table for ${heading}`)
      }
      t.match(stdout, /ops\/s\s+p99 ms\s+retries\s+gave up\s+lock timeouts\s+deadlocks/, 'the table columns')
      t.match(stdout, /randomtransaction/, 'the randomtransaction table')
      t.is(stdout.split('\n').filter(line => /^ {2}run 1\/1 {2}randomtransaction .*every set sums to [\d,]+ \(the committed transactions\): ok$/.test(line)).length, 2 * 2, 'a randomtransaction line per mode and clients, and its check')
      const goals = stdout.split('\n').filter(line => /^ {2}goal: /.test(line))
      t.ok(goals.length >= 3, 'goal lines')
      t.ok(goals.every(line => /: (met|MISSED|n\/a)/.test(line)), 'each goal is met, missed or n/a')
      t.ok(goals.some(line => /no lost invariant.*: met/.test(line)), 'no invariant lost')
      t.ok(goals.some(line => /durable writes, 64 in flight/.test(line)), 'the durable goal (n/a without 64 clients)')

      const dirs = readdirSync(out).filter(name => name.startsWith('transactions-'))
      t.is(dirs.length, 1, 'one output folder')
      const dir = join(out, dirs[0])
      const lines = readFileSync(join(dir, 'results.csv'), 'utf8').trimEnd().split('\n')
      t.is(lines[0], 'run,keys,mix,clients,side,loops,ops,ms,ops_per_sec,p50_ms,p99_ms,retries,declined,gave_up,lock_timeouts,deadlocks,invariant_ok', 'CSV header')
      const rows = lines.slice(1).map(line => line.split(','))
      t.is(rows.length, 2 * 2 * 2 * SIDES.length, 'one CSV row per cell')
      t.ok(rows.every(row => row.length === 17 && Number(row[6]) > 0 && Number(row[8]) > 0 && row[16] === 'true'), 'ops, rate and invariant of every row')
      t.ok(rows.filter(row => row[4].startsWith('sqlite')).every(row => row[5] === '1'), 'SQLite: one loop')
      t.ok(rows.filter(row => !row[4].startsWith('sqlite')).every(row => row[5] === row[3]), 'levelkit: one loop per client')

      const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
      t.is(summary.benchmark, 'transactions')
      t.is(summary.options.accounts, 100, 'options recorded')
      t.is(summary.options.slices, 2, 'slices recorded')
      t.match(stdout, /levelkit [\d.]+ at commit ([0-9a-f]{7,}(\+changes)?|unknown) /, 'prints the library\'s commit')
      t.ok(summary.versions.levelkitCommit === null || /^[0-9a-f]{7,}/.test(summary.versions.levelkitCommit), 'records it')
      t.match(stdout, /in 2 alternating slices/, 'says the sides take turns')
      t.is(summary.cells.length, 2 * 2 * 2 * SIDES.length, 'a summary per cell')
      t.same([...new Set(summary.cells.map((/** @type {any} */ c) => c.side))].sort(), [...SIDES].sort(), 'every side')
      for (const cell of summary.cells) {
        if (cell.side.startsWith('sqlite')) continue
        const sqlite = summary.cells.find((/** @type {any} */ c) => c.keys === cell.keys && c.mix === cell.mix && c.clients === cell.clients && c.side === (cell.side === 'durable' ? 'sqlite-full' : 'sqlite-normal'))
        t.ok(Math.abs(cell.ratio / (cell.opsPerSec / sqlite.opsPerSec) - 1) < 1e-9, `${cell.keys} ${cell.mix} ${cell.clients} ${cell.side}: the ratio against ${sqlite.side}`)
      }
      t.is(summary.randomTransaction.length, 2 * 2, 'randomtransaction: a result per mode and clients')
      for (const r of summary.randomTransaction) {
        t.ok(r.ok && r.committed > 0 && r.sums.length === 3 && r.sums.every((/** @type {number} */ s) => s === r.committed), `randomtransaction ${r.mode} ${r.clients}: every set sums to the committed transactions`)
      }
      t.ok(Array.isArray(summary.goals) && summary.goals.length === goals.length, 'the goals recorded')
      t.same(summary.problems, [], 'no problems')

      for (const name of ['transactions.svg', 'transactions-read-heavy.svg']) {
        const svg = readFileSync(join(dir, name), 'utf8')
        t.ok(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"') && svg.trimEnd().endsWith('</svg>'), `${name} is an SVG document`)
        t.is((svg.match(/<rect x="[\d.]+" y="[\d.]+" width="[\d.]+" height="[\d.]+" fill="[^"]+" fill-opacity/g) || []).length, 2 * SIDES.length * 2, `${name}: a bar per keys, side and clients`)
      }
      t.same(readdirSync(out).filter(name => name.startsWith('levelkit-')), [], 'the databases are removed')
    } finally {
      rmSync(out, { recursive: true, force: true })
    }
  })
}

test('bench/transactions.js fails the run when an invariant breaks', async t => {
  const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-tx-'))
  try {
    // Unsafe transfers (read, then write back what was read) on hot keys
    // lose updates as soon as two clients meet.
    const { code, stdout } = await run([
      '--seconds', '0.3', '--accounts', '100', '--clients', '16', '--modes', 'unsafe', '--keys', 'hot', '--mixes', 'write-heavy',
      '--rt-keys', '20', '--backend', 'memory', '--no-warmup', '--out', out, '--db-dir', out
    ])
    t.is(code, 1, 'exit 1')
    t.match(stdout, /unsafe \(no tx\) .* invariant BROKEN \(sum [\d,]+, min -?[\d,]+\)/, 'the cell prints its broken invariant')
    t.match(stdout, /PROBLEM: run 1, hot, write-heavy, 16 clients, unsafe: invariant broken/, 'and a problem')
    t.match(stdout, /goal: no lost invariant anywhere .*: MISSED/, 'the goal is missed')
    t.doesNotMatch(stdout, /SQLite (NORMAL|FULL) \(1 loop\) .* invariant BROKEN/, 'SQLite holds it')
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})

test('bench/transactions.js refuses bad options', async t => {
  /** @type {Array<[string[], RegExp]>} */
  const cases = [[['--modes', 'nope'], /Unknown mode "nope"/], [['--seconds', '0'], /--seconds/], [['--backend', 'x'], /Unknown backend "x"/]]
  for (const [args, message] of cases) {
    const { code, stderr } = await run(args)
    t.is(code, 2, `${args.join(' ')}: exit 2`)
    t.match(stderr, message)
  }
})
