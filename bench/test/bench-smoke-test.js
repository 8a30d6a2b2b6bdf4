// Smoke test of bench/sorted-write.js: runs it on every mode and backend with
// a tiny N and checks what it writes. It never asserts a time: a benchmark
// measures, it is not a timed test.

import test from 'tape'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const script = fileURLToPath(new URL('../sorted-write.js', import.meta.url))
const ENTRIES = 3000

/** @param {string[]} args @param {number} [timeout] ms @returns {Promise<{ code: number, stdout: string, stderr: string }>} */
function run (args, timeout = 60000) {
  return new Promise(resolve => {
    execFile(process.execPath, [script, ...args], { timeout }, (err, stdout, stderr) => {
      resolve({ code: err ? /** @type {any} */ (err).code ?? 1 : 0, stdout, stderr })
    })
  })
}

/** The one output folder the script made under `out`. @param {any} t @param {string} out */
function outputOf (t, out) {
  const dirs = readdirSync(out).filter(name => name.startsWith('sorted-write-'))
  t.is(dirs.length, 1, 'one output folder')
  return join(out, dirs[0])
}

/** @param {any} t @param {string} file @param {number} entries */
function checkCsv (t, file, entries) {
  const lines = readFileSync(file, 'utf8').trimEnd().split('\n')
  t.is(lines[0], 'elapsed_ms,avg_ns_per_write,window_ms', 'CSV header')
  const rows = lines.slice(1).map(line => line.split(',').map(Number))
  t.is(rows.length, Math.ceil(entries / 1000), 'one CSV row per 1000 writes')
  t.ok(rows.every(row => row.length === 3 && row.every(Number.isFinite) && row[1] > 0), 'CSV rows are 3 finite numbers')
  t.ok(rows.every((row, i) => i === 0 || row[0] >= rows[i - 1][0]), 'elapsed time never decreases')
}

/** @param {any} t @param {string} file @param {number} series */
function checkSvg (t, file, series) {
  const svg = readFileSync(file, 'utf8')
  t.ok(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"') && svg.trimEnd().endsWith('</svg>'), 'SVG document')
  t.is((svg.match(/<path /g) || []).length, series, 'one point series per run')
  t.ok(svg.includes('>Seconds</text>') && svg.includes('Milliseconds per write'), 'axis labels')
}

const MODES = ['put', 'batch', 'raw', 'levelkit', 'levelkit-scope', 'levelkit-put']
const BACKENDS = ['leveldb', 'memory']

// Every mode on every backend in one launch: the script runs each in a child
// process of its own anyway, so one launch checks what twelve did, less
// eleven script startups. Started by the first test that needs it; the
// output is removed when the tests end.
/** @type {Promise<{ code: number, stdout: string, stderr: string, out: string }> | undefined} */
let everyMode
/** @param {any} t */
function runEveryMode (t) {
  if (!everyMode) {
    const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-smoke-'))
    test.onFinish(() => rmSync(out, { recursive: true, force: true }))
    everyMode = run(['--entries', String(ENTRIES), '--runs', '1', '--mode', MODES.join(','), '--backend', BACKENDS.join(','), '--out', out, '--db-dir', out], 12 * 60000)
      .then(result => ({ ...result, out }))
    t.comment(`one launch: --mode ${MODES.join(',')} --backend ${BACKENDS.join(',')}`)
  }
  return everyMode
}

test('bench/sorted-write.js: every mode on every backend, one launch', async t => {
  const { code, stdout, stderr, out } = await runEveryMode(t)
  t.is(code, 0, `exit 0${code ? `: ${stderr}` : ''}`)
  t.match(stdout, /writes\/s/, 'prints a summary')
  const dir = outputOf(t, out)
  const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
  t.is(summary.options.entries, ENTRIES)
  t.same(Object.keys(summary.summary).sort(), BACKENDS.flatMap(b => MODES.map(m => `${m}-${b}`)).sort(), 'one summary per mode and backend')
  checkSvg(t, join(dir, 'sorted-write.svg'), MODES.length * BACKENDS.length)
  t.same(readdirSync(out).filter(name => name.startsWith('levelkit-sorted-write-')), [], 'the databases are removed')
})

for (const backend of BACKENDS) {
  for (const mode of MODES) {
    test(`bench/sorted-write.js --mode ${mode} --backend ${backend}`, async t => {
      const { code, out } = await runEveryMode(t)
      t.is(code, 0, 'exit 0')
      const dir = outputOf(t, out)
      checkCsv(t, join(dir, `${mode}-${backend}-run1.csv`), ENTRIES)
      const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
      const s = summary.summary[`${mode}-${backend}`]
      t.is(s.runs, 1, 'JSON summary of the run')
      t.ok(s.totalMs > 0 && s.writesPerSec > 0 && s.peakRssBytes > 0, 'JSON has total time, writes/s and peak RSS')
      t.is(s.dbBytes === null, backend === 'memory', 'database size on leveldb only')
    })
  }
}

test('bench/sorted-write.js --compare --overhead with classic-level options', async t => {
  const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-smoke-'))
  try {
    const { code, stdout, stderr } = await run([
      '--entries', String(ENTRIES), '--runs', '2', '--compare', '--overhead', '--batch-size', '500',
      '--write-buffer-size', '1M', '--cache-size', '1M', '--compression', 'false', '--out', out, '--db-dir', out
    ])
    t.is(code, 0, `exit 0${code ? `: ${stderr}` : ''}`)
    t.match(stdout, /levelkit\/batch leveldb/, 'prints ratios against batch')
    t.match(stdout, /levelkit\/raw leveldb/, 'and levelkit against raw')
    t.match(stdout, /raw, levelkit on leveldb wrote the same database, byte for byte/, 'raw writes what levelkit writes')
    t.match(stdout, /Script overhead/, 'prints the overhead')
    const dir = outputOf(t, out)
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
    t.same(summary.options.levelOptions, { writeBufferSize: 1 << 20, cacheSize: 1 << 20, compression: false }, 'classic-level options pass through')
    t.same(Object.keys(summary.ratiosAgainstBatch).sort(), ['levelkit/batch leveldb', 'levelkit/raw leveldb', 'put/batch leveldb', 'raw/batch leveldb'])
    t.same(Object.keys(summary.overhead).sort(), ['batch leveldb', 'put leveldb'])
    t.match(stdout, /#1 levelkit\/raw leveldb +wall \d+\.\d\d×, CPU \d+\.\d\d×, main-thread CPU (\d+\.\d\d×|n\/a)/, 'each round prints its levelkit/raw ratios')
    const paired = summary.ratiosAgainstBatch['levelkit/raw leveldb']
    t.same(paired.perRound.map((/** @type {any} */ r) => r.round), [1, 2], 'ratios run by run')
    t.ok(paired.perRound.every((/** @type {any} */ r) => r.wall > 0 && r.cpu > 0), 'of wall and CPU time')
    t.ok(paired.cpu.median > 0 && paired.median > 0, 'and their medians')
    // raw and levelkit back to back, in alternating order.
    const pairs = summary.order.filter((/** @type {any} */ o) => o.key === 'raw-leveldb' || o.key === 'levelkit-leveldb').map((/** @type {any} */ o) => o.key)
    t.same(pairs, ['raw-leveldb', 'levelkit-leveldb', 'levelkit-leveldb', 'raw-leveldb'], 'raw and levelkit alternate which goes first')
    const at = summary.order.map((/** @type {any} */ o) => `${o.round} ${o.key}`)
    for (const round of [1, 2]) t.is(Math.abs(at.indexOf(`${round} raw-leveldb`) - at.indexOf(`${round} levelkit-leveldb`)), 1, `round ${round}: back to back`)
    for (const mode of ['put', 'batch', 'raw', 'levelkit']) {
      for (const round of [1, 2]) checkCsv(t, join(dir, `${mode}-leveldb-run${round}.csv`), ENTRIES)
    }
    checkSvg(t, join(dir, 'sorted-write.svg'), 8)
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})

test('bench/sorted-write.js --levelkit: the levelkit modes load the tree it names', async t => {
  const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-smoke-'))
  try {
    const tree = fileURLToPath(new URL('../..', import.meta.url))
    const { code, stdout, stderr } = await run(['--entries', String(ENTRIES), '--mode', 'raw,levelkit', '--levelkit', tree, '--out', out, '--db-dir', out])
    t.is(code, 0, `exit 0${code ? `: ${stderr}` : ''}`)
    t.match(stdout, /levelkit modes load /, 'says which levelkit it measures')
    const missing = await run(['--entries', String(ENTRIES), '--mode', 'levelkit', '--levelkit', join(out, 'nowhere'), '--out', out])
    t.is(missing.code, 2, 'exit 2 for a folder with no levelkit')
    t.match(missing.stderr, /--levelkit: no levelkit at/)
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})

test('bench/sorted-write.js refuses bad options', async t => {
  const { code, stderr } = await run(['--mode', 'nope'])
  t.is(code, 2, 'exit 2')
  t.match(stderr, /Unknown mode "nope"/)
})
