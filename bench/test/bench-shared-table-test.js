// Smoke test of bench/shared-table.js: one tiny run (one process, two on
// one table, two on a table each) on the tests' PostgreSQL server, with
// --shard-chats, then the shape of what it prints and writes, and that every
// table checked out; bad options exit 2. It never asserts a time.
import test from 'tape'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { postgresForTests } from '../../test/util/postgres.js'

const script = fileURLToPath(new URL('../shared-table.js', import.meta.url))
const server = await postgresForTests(test)

/** @param {string[]} args @returns {Promise<{ code: number, stdout: string, stderr: string }>} */
function run (args) {
  return new Promise(resolve => {
    execFile(process.execPath, [script, ...args], { timeout: 110000, env: { ...process.env, LEVELKIT_PG_URL: server.connectionString } }, (err, stdout, stderr) => {
      resolve({ code: err ? /** @type {any} */ (err).code ?? 1 : 0, stdout, stderr })
    })
  })
}

test('bench/shared-table.js with a tiny run', async t => {
  const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-shared-table-'))
  try {
    const { code, stdout, stderr } = await run(['--processes', '2', '--chats', '6', '--seconds', '0.3', '--runs', '1', '--concurrency', '3', '--shard-chats', '--out', out])
    t.is(code, 0, `exit 0${code ? `: ${stderr}\n${stdout}` : ''}`)
    t.match(stdout, /each process appends to its own chats \(--shard-chats\)/, 'the sharding said in the header')
    for (const label of ['one process', '×2 on one table', '×2, a table each']) t.match(stdout, new RegExp(`\\n {2}${label} +[\\d,]+ `), `a row for ${label}`)
    t.match(stdout, /Every table checked out/, 'every table checked out after its cell')
    const dir = join(out, readdirSync(out).filter(name => name.startsWith('shared-table-'))[0])
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
    t.same(summary.cells.map((/** @type {any} */ c) => c.key), ['one', 'shared-2', 'own-2'], 'the cells')
    t.ok(summary.summary['shared-2'].opsPerSec > 0 && summary.summary['shared-2'].sharedOverOwn > 0, 'the shared cell measured against the tables of their own')
    t.same(summary.options.processes, [1, 2], 'one process always runs')
    t.is(summary.options.shardChats, true, '--shard-chats recorded')
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})

test('bench/shared-table.js refuses bad options', async t => {
  for (const [args, message] of /** @type {Array<[string[], RegExp]>} */ ([
    [['--locking', 'snapshot'], /--locking is table, keys or serializable/],
    [['--seconds', '0'], /--seconds is a number of seconds/],
    [['--processes', '4,x'], /Not a positive count: "x"/],
    [['--processes', '4', '--chats', '2', '--shard-chats'], /--shard-chats needs at least as many --chats as processes/]
  ])) {
    const { code, stderr } = await run(args)
    t.is(code, 2, `${args.join(' ')}: exit 2`)
    t.match(stderr, message, `${args.join(' ')}: says why`)
  }
})
