// Smoke test of bench/chat-server-processes.js: one short run with a tiny
// data set, 1 and 2 levelkit-chat processes on one PostgreSQL table (the
// tests' server, passed on as LEVELKIT_PG_URL) and one on LevelDB, then the
// shape of what it prints and writes and that every cell's check passed.
// It never asserts a time: a benchmark measures, it is not a timed test.

import test from 'tape'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { postgresForTests } from '../../test/util/postgres.js'

const script = fileURLToPath(new URL('../chat-server-processes.js', import.meta.url))
const CELLS = ['pg-1', 'pg-2', 'leveldb-1']
const server = await postgresForTests(test)

/** @param {string[]} args @returns {Promise<{ code: number, stdout: string, stderr: string }>} */
function run (args) {
  return new Promise(resolve => {
    execFile(process.execPath, [script, ...args], { timeout: 55000, env: { ...process.env, LEVELKIT_PG_URL: server.connectionString } }, (err, stdout, stderr) => {
      resolve({ code: err ? /** @type {any} */ (err).code ?? 1 : 0, stdout, stderr })
    })
  })
}

test('bench/chat-server-processes.js with a tiny data set', async t => {
  const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-chat-server-processes-'))
  try {
    const { code, stdout, stderr } = await run([
      '--processes', '1,2', '--runs', '1', '--duration', '1', '--warmup', '0', '--connections', '4',
      '--users', '12', '--chats', '3', '--members', '3', '--out', out, '--db-dir', out
    ])
    t.is(code, 0, `exit 0${code ? `: ${stderr}\n${stdout}` : ''}`)
    for (const label of ['PostgreSQL ×1', 'PostgreSQL ×2', 'LevelDB ×1']) {
      t.match(stdout, new RegExp(`\\n  ${label} +[\\d,]+ +[\\d.]+ +[\\d.]+ `), `table row: ${label}`)
    }
    t.doesNotMatch(stdout, /PROBLEM|FAILED/, 'no problem reported')

    const dirs = readdirSync(out).filter(name => name.startsWith('chat-server-processes-'))
    t.is(dirs.length, 1, 'one output folder')
    const dir = join(out, dirs[0])
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
    t.is(summary.benchmark, 'chat-server-processes')
    t.same(summary.problems, [], 'no problems recorded')
    t.same(summary.summary.map((/** @type {any} */ s) => s.cell), CELLS, 'a summary per cell, in order')
    for (const s of summary.summary) {
      t.ok(s.messagesPerSec > 0, `${s.cell}: messages/s`)
      t.ok(s.p50 > 0 && s.p99 >= s.p50, `${s.cell}: p50 and p99`)
      t.ok(s.acknowledged > 0, `${s.cell}: messages acknowledged`)
      t.is(s.checked, true, `${s.cell}: every acknowledged message there, ids gap-free`)
      t.is(s.errors, 0, `${s.cell}: no errors`)
    }
    t.is(summary.summary[0].overFirst, 1, 'PostgreSQL ×1 is its own baseline')
    t.ok(summary.summary[1].overFirst > 0, 'PostgreSQL ×2 against ×1')
    t.ok(summary.summary.every((/** @type {any} */ s) => s.overLevelDB > 0), 'every cell against LevelDB')
    for (const row of summary.runs) {
      t.is(row.check.stored >= row.check.acknowledged, true, `${row.cell}: stored ≥ acknowledged`)
    }
    const csv = readFileSync(join(dir, 'results.csv'), 'utf8').trim().split('\n')
    t.is(csv.length, 1 + CELLS.length, 'a CSV row per cell and run')
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})
