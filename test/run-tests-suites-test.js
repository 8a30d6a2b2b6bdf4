// scripts/test-suites.js: which suites run-tests.js makes of a workspace, and
// the CPU time it reads from bash's `times` after a suite.

import test from 'tape'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { postgres } from 'levelkit-testkit/postgres'
import { cpuSeconds, serverSeconds, withTimes, workspaceSuites } from '../scripts/test-suites.js'

const bins = { tape: '/x/tape', tsc: '/x/tsc' }

/** A repository with one workspace `w` whose test script is `script`. @param {any} t @param {string | undefined} script */
function repo (t, script) {
  const root = mkdtempSync(join(tmpdir(), 'levelkit-suites-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  mkdirSync(join(root, 'w', 'test'), { recursive: true })
  writeFileSync(join(root, 'w', 'package.json'), JSON.stringify({ name: 'w', scripts: script === undefined ? {} : { test: script } }))
  for (const name of ['b-test.js', 'a-test.js', 'util.js', 'a-test.json']) writeFileSync(join(root, 'w', 'test', name), '')
  return root
}

test('run-tests suites: a workspace\'s tape glob is a suite per test file, in its folder, after its type check', t => {
  const root = repo(t, "tsc -p tsconfig.json && tape 'test/*-test.js'")
  const cwd = join(root, 'w')
  t.same(workspaceSuites(root, 'w', bins), [
    { name: 'tsc -p w/tsconfig.json', command: '/x/tsc', args: ['-p', 'tsconfig.json'], cwd },
    { name: 'w/test/a-test.js', command: process.execPath, args: ['/x/tape', join('test', 'a-test.js')], cwd },
    { name: 'w/test/b-test.js', command: process.execPath, args: ['/x/tape', join('test', 'b-test.js')], cwd }
  ])
  const plain = repo(t, "tape 'test/*-test.js'")
  t.same(workspaceSuites(plain, 'w', bins).map(suite => suite.name), ['w/test/a-test.js', 'w/test/b-test.js'], 'no type check when the script has none')
  t.end()
})

test('run-tests suites: any other test script runs whole with npm, no script runs nothing', t => {
  for (const script of ["tape 'test/*-test.js' && node extra.js", 'node test/run.js', "tsc -p other.json && tape 'test/*-test.js'"]) {
    t.same(workspaceSuites(repo(t, script), 'w', bins), [{ name: 'w/', command: 'npm', args: ['test', '-w', 'w'] }], script)
  }
  t.same(workspaceSuites(repo(t, undefined), 'w', bins), [], 'no test script')
  t.end()
})

test('run-tests suites: CPU seconds from `times`, the children\'s line', t => {
  t.is(cpuSeconds('0m0.010s 0m0.002s\n1m2.500s 0m0.250s\n'), 62.75)
  t.is(cpuSeconds('0m0.010s 0m0.002s\n'), null, 'no children\'s line')
  t.is(cpuSeconds(''), null, 'nothing written (killed)')
  t.end()
})

/**
 * Run `args` under bash as run-tests.js does.
 * @param {string[]} args
 * @returns {Promise<{ code: number | null, cpu: number | null }>}
 */
function underBash (args) {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [...withTimes, ...args], { stdio: ['ignore', 'ignore', 'inherit', 'pipe'] })
    let text = ''
    const times = /** @type {import('node:stream').Readable} */ (child.stdio[3])
    times.on('data', chunk => { text += chunk })
    child.on('error', reject)
    child.on('close', code => resolve({ code, cpu: cpuSeconds(text) }))
  })
}

test('run-tests suites: under bash, a suite\'s exit code is kept and its CPU time counts its own children', async t => {
  // 0.4 s of CPU in a grandchild: node spinning, started by another node.
  const spin = 'const end = process.cpuUsage().user + 400000; while (process.cpuUsage().user < end);'
  const parent = `require('child_process').spawnSync(process.execPath, ['-e', ${JSON.stringify(spin)}], { stdio: 'inherit' }); process.exit(3)`
  const busy = await underBash([process.execPath, '-e', parent])
  t.is(busy.code, 3, 'the exit code')
  t.ok(busy.cpu !== null && busy.cpu >= 0.4, `the grandchild's CPU counted (${busy.cpu} s)`)
  const idle = await underBash(['sleep', '0.5'])
  t.is(idle.code, 0)
  t.ok(idle.cpu !== null && idle.cpu < 0.3, `waiting is not CPU (${idle.cpu} s)`)
})

test('run-tests suites: the PostgreSQL servers\' CPU seconds, a line per cluster', t => {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-pgcpu-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'cpu')
  t.is(serverSeconds(file), null, 'no cluster, no file: none')
  writeFileSync(file, '1.5\n0.25\n')
  t.is(serverSeconds(file), 1.75, 'two clusters added up')
  t.notOk(existsSync(file), 'the file is removed')
  writeFileSync(file, '')
  t.is(serverSeconds(file), null, 'an empty file: none')
  t.end()
})

// A daemon pg_ctl starts is no child of the suite: bash's `times` leaves it out.
test('run-tests suites: a throwaway cluster tells its CPU seconds, and writes them at its stop', { skip: Boolean(process.env.LEVELKIT_PG_URL) }, async t => {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-pgcpu-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'cpu')
  const server = await postgres()
  const saved = process.env.LEVELKIT_PG_CPU_FILE
  try {
    const before = server.cpuSeconds()
    t.ok(typeof before === 'number' && before >= 0, `a number (${before} s)`)
    // Each connection is a server process forked and initialized: tens of ms of CPU each here.
    for (let i = 0; i < 30; i++) {
      const client = new pg.Client({ connectionString: server.connectionString })
      await client.connect()
      await client.query('SELECT count(*) FROM pg_class')
      await client.end()
    }
    const after = /** @type {number} */ (server.cpuSeconds())
    t.ok(after > /** @type {number} */ (before), `it grows with the work the server did (${before} → ${after} s), the ended backends' included`)
    process.env.LEVELKIT_PG_CPU_FILE = file
    await server.stop()
    const written = Number(readFileSync(file, 'utf8').trim())
    t.ok(written >= after, `written at its stop (${written} s)`)
  } finally {
    if (saved === undefined) delete process.env.LEVELKIT_PG_CPU_FILE
    else process.env.LEVELKIT_PG_CPU_FILE = saved
    await server.stop()
  }
})
