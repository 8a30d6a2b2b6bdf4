// Smoke test of bench/chat-workload.js: one run with a tiny data set and a
// few ops per measurement, then the shape of what it writes (CSV, JSON,
// SVG). It never asserts a time: a benchmark measures, it is not a timed test.

import test from 'tape'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const script = fileURLToPath(new URL('../chat-workload.js', import.meta.url))
const OPS = ['getUser', 'last50', 'getChats', 'checkChatMember', 'existsChat', 'createUser', 'createUserC', 'createChat', 'createChatC', 'addChatMessage', 'addChatMessageC']
const N = 40

/** @param {string[]} args @returns {Promise<{ code: number, stdout: string, stderr: string }>} */
function run (args) {
  return new Promise(resolve => {
    execFile(process.execPath, [script, ...args], { timeout: 60000 }, (err, stdout, stderr) => {
      resolve({ code: err ? /** @type {any} */ (err).code ?? 1 : 0, stdout, stderr })
    })
  })
}

test('bench/chat-workload.js with a tiny data set', async t => {
  const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-chat-'))
  try {
    const { code, stdout, stderr } = await run([
      '--runs', '1', '--users', '200', '--chats', '20', '--pair-chats', '10', '--messages', '500',
      '--n', String(N), '--slices', '4', '--concurrency', '8', '--zipf', '1', '--read-cache', 'arc:50', '--out', out, '--db-dir', out
    ])
    t.is(code, 0, `exit 0${code ? `: ${stderr}` : ''}`)
    t.match(stdout, /read rows: users and chats picked with Zipf skew 1; levelkit's read caches arc, 50 entries per namespace/, 'the skew and the read caches')
    t.match(stdout, /levelkit\/SQLite/, 'prints the ratio column')
    for (const label of ['getUser by username', 'last 50 messages', 'getChats of a user', 'checkChatMember', 'existsChat', 'createUser, 8 in flight', 'createChat, 20 members', 'addChatMessage, 8 in flight']) {
      t.ok(stdout.includes(label), `summary row: ${label}`)
    }

    const dirs = readdirSync(out).filter(name => name.startsWith('chat-workload-'))
    t.is(dirs.length, 1, 'one output folder')
    const dir = join(out, dirs[0])

    const lines = readFileSync(join(dir, 'results.csv'), 'utf8').trimEnd().split('\n')
    t.is(lines[0], 'run,operation,label,side,concurrency,ops,ms,ops_per_sec', 'CSV header')
    const rows = lines.slice(1).map(line => {
      const match = /^(\d+),(\w+),"([^"]*)",(levelkit|sqlite),(\d+),(\d+),([\d.]+),([\d.]+)$/.exec(line)
      return match ? { run: Number(match[1]), op: match[2], side: match[4], ops: Number(match[6]), ms: Number(match[7]), rate: Number(match[8]) } : null
    })
    t.ok(rows.every(row => row !== null), 'every CSV row has the 8 columns')
    t.is(rows.length, OPS.length * 2, 'one row per operation and side')
    for (const op of OPS) {
      t.same(rows.filter(row => row && row.op === op).map(row => row && row.side).sort(), ['levelkit', 'sqlite'], `${op}: both sides`)
    }
    t.ok(rows.every(row => row && row.run === 1 && row.ops === N && row.ms > 0 && row.rate > 0), 'ops, time and rate of every row')

    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
    t.is(summary.benchmark, 'chat-workload')
    t.same(Object.keys(summary.summary), OPS, 'a summary per operation, in order')
    for (const op of OPS) {
      const s = summary.summary[op]
      t.ok(s.levelkitOpsPerSec > 0 && s.sqliteOpsPerSec > 0 && s.ratio > 0, `${op}: ops/s of both sides and a ratio`)
      t.is(s.goal, s.write ? 2 : 1, `${op}: goal`)
      t.is(s.ratioPerRun.length, 1, `${op}: one ratio per run`)
    }
    t.ok(['getUs', 'batch3Us', 'batch43Us'].every(key => summary.floor[key] > 0), 'the floor: µs per awaited classic-level call')
    t.ok(summary.runs[0].floor.batch3Us > 0, 'the floor of each run')
    for (const op of ['createUser', 'createChat', 'addChatMessage']) t.ok(summary.summary[op].ceiling > 0, `${op}: the best ratio one batch per operation allows`)
    t.match(stdout, /Floor, one awaited classic-level call/, 'prints the floor')
    t.is(summary.options.users, 200, 'options recorded')
    t.is(summary.runs.length, 1, 'one run recorded')
    t.ok(summary.machine.cores > 0 && typeof summary.versions['better-sqlite3'] === 'string', 'machine and versions recorded')
    t.is(summary.loadAverage.before.length, 3, 'load average recorded')

    const svg = readFileSync(join(dir, 'chat-workload.svg'), 'utf8')
    t.ok(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"') && svg.trimEnd().endsWith('</svg>'), 'SVG document')
    t.is((svg.match(/<rect class="bar"/g) || []).length, OPS.length * 2, 'one bar per operation and side')
    t.ok(svg.includes('levelkit (classic-level)') && svg.includes('SQLite (better-sqlite3)'), 'legend')

    t.same(readdirSync(out).filter(name => name.startsWith('levelkit-chat-workload-')), [], 'the databases are removed')
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})

test('bench/chat-workload.js refuses bad options', async t => {
  const { code, stderr } = await run(['--ops', 'nope'])
  t.is(code, 2, 'exit 2')
  t.match(stderr, /Unknown operation "nope"/)
  for (const [args, message] of /** @type {Array<[string[], RegExp]>} */ ([[['--read-cache', 'fifo'], /unknown policy "fifo"/], [['--zipf', 'x'], /--zipf is a number from 0 to 5/]])) {
    const refused = await run(args)
    t.is(refused.code, 2, `${args.join(' ')}: exit 2`)
    t.match(refused.stderr, message)
  }
})
