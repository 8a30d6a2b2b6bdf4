// scripts/test-suites.js: which suites run-tests.js makes of a workspace, and
// the CPU time it reads after a suite: the subreaper's (scripts/subreaper.pl) or bash's `times`.

import test from 'tape'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { postgres } from 'levelkit-testkit/postgres'
import { serverSeconds, subreaper, suiteCpu, suiteRunner, withTimes, workspaceSuites } from '../scripts/test-suites.js'

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

test('run-tests suites: CPU seconds from the subreaper\'s line, or from `times`\' children\'s line', t => {
  t.same(suiteCpu('cpu 61.25 1.50 subreaper 1 adopted 7 killed 2 after 5.3\n'), { seconds: 62.75, everyProcess: true, lingered: 5.3, killed: 2 })
  t.same(suiteCpu('cpu 1.00 0.50 subreaper 0 adopted 0 killed 0 after 0.0\n'), { seconds: 1.5, everyProcess: false, lingered: 0, killed: 0 }, 'no prctl: the processes waited for')
  t.same(suiteCpu('0m0.010s 0m0.002s\n1m2.500s 0m0.250s\n'), { seconds: 62.75, everyProcess: false, lingered: 0, killed: 0 }, 'bash')
  t.is(suiteCpu('0m0.010s 0m0.002s\n'), null, 'no children\'s line')
  t.is(suiteCpu(''), null, 'nothing written (killed)')
  t.end()
})

/**
 * Run `args` as run-tests.js runs a suite, under `runner`.
 * @param {{ command: string, args: readonly string[] }} runner
 * @param {string[]} args
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {Promise<{ code: number | null, cpu: number | null, everyProcess: boolean, report: string, stderr: string, seconds: number }>}
 */
function underRunner (runner, args, env = process.env) {
  const started = Date.now()
  return new Promise((resolve, reject) => {
    const child = spawn(runner.command, [...runner.args, ...args], { env, stdio: ['ignore', 'ignore', 'pipe', 'pipe'] })
    let report = ''
    let stderr = ''
    const times = /** @type {import('node:stream').Readable} */ (child.stdio[3])
    times.on('data', chunk => { report += chunk })
    child.stderr.on('data', chunk => { stderr += chunk })
    child.on('error', reject)
    child.on('close', code => {
      const cpu = suiteCpu(report)
      resolve({ code, cpu: cpu && cpu.seconds, everyProcess: Boolean(cpu && cpu.everyProcess), report, stderr, seconds: (Date.now() - started) / 1000 })
    })
  })
}

const bash = { command: 'bash', args: withTimes }
const runner = suiteRunner()
// 0.4 s of CPU in a process, then its exit.
const spin = 'const end = process.cpuUsage().user + 400000; while (process.cpuUsage().user < end);'
// A grandchild that outlives its parent (as Chromium's zygote and renderers
// outlive its browser process, or a server pg_ctl started): started
// detached, it spins once its parent has exited with code 3.
const orphan = `require('child_process').spawn(process.execPath, ['-e', ${JSON.stringify(`setTimeout(() => { ${spin} }, 300)`)}], { detached: true, stdio: 'ignore' }).unref(); process.exit(3)`

test('run-tests suites: with Perl, suites run under the subreaper', t => {
  t.is(runner.command, 'perl', 'Perl is there (perl-base is part of every Debian)')
  t.same(runner.args, [subreaper])
  t.same(suiteRunner('/nonexistent/perl'), bash, 'without Perl: bash\'s `times`')
  t.end()
})

for (const [name, under] of /** @type {const} */ ([['under bash', bash], ['under the subreaper', runner]])) {
  test(`run-tests suites: ${name}, a suite's exit code is kept and its CPU time counts its own children`, async t => {
    const parent = `require('child_process').spawnSync(process.execPath, ['-e', ${JSON.stringify(spin)}], { stdio: 'inherit' }); process.exit(3)`
    const busy = await underRunner(under, [process.execPath, '-e', parent])
    t.is(busy.code, 3, 'the exit code')
    t.ok(busy.cpu !== null && busy.cpu >= 0.4, `the grandchild's CPU counted (${busy.cpu} s)`)
    const idle = await underRunner(under, ['sleep', '0.5'])
    t.is(idle.code, 0)
    t.ok(idle.cpu !== null && idle.cpu < 0.3, `waiting is not CPU (${idle.cpu} s)`)
    const killed = await underRunner(under, ['bash', '-c', 'kill -TERM $$'])
    t.is(killed.code, 128 + 15, 'killed by a signal: 128 + its number')
  })
}

// What the subreaper is for: bash's `times` cannot see an orphan's CPU.
test('run-tests suites: an orphan\'s CPU counts under the subreaper, not under bash', async t => {
  const missed = await underRunner(bash, [process.execPath, '-e', orphan])
  t.is(missed.code, 3)
  t.ok(missed.cpu !== null && missed.cpu < 0.4, `bash: the orphan's 0.4 s missing (${missed.cpu} s)`)
  // The orphan's 0.4 s of CPU can take longer than the default 5 s of wall time
  // to get on a loaded machine (seen in CI at load 25): give it a minute.
  const counted = await underRunner(runner, [process.execPath, '-e', orphan], { ...process.env, LEVELKIT_SUBREAPER_LINGER: '60' })
  t.is(counted.code, 3, 'the command\'s exit code, not the orphan\'s')
  t.ok(counted.everyProcess, 'every process counted')
  t.ok(counted.cpu !== null && counted.cpu >= 0.4, `subreaper: the orphan's CPU counted (${counted.cpu} s)`)
  t.match(counted.report, /adopted 1 killed 0/, 'one orphan adopted and waited for, none killed')
})

test('run-tests suites: what a suite leaves running is killed after a moment, and named', async t => {
  const env = { ...process.env, LEVELKIT_SUBREAPER_LINGER: '0.5' }
  // Two sleepers orphaned by a shell that exits at once; one ends within the moment.
  const left = await underRunner(runner, ['bash', '-c', '(sleep 0.2 &) ; (exec -a levelkit-left-behind sleep 60 &) ; exit 0'], env)
  t.is(left.code, 0)
  t.ok(left.seconds < 20, `the run ends (${left.seconds} s), not after the sleeper's 60 s`)
  t.match(left.report, /adopted 2 killed 1 after 0\.[5-9]/, 'both adopted, the one still running killed after the 0.5 s')
  t.is(suiteCpu(left.report)?.killed, 1)
  t.match(left.stderr, /killed \d+ \(/, 'named on stderr')
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

// The postmaster pg_ctl daemonized is adopted by the subreaper: the suite's
// CPU holds the cluster's, which run-tests.js then shows as its share.
test('run-tests suites: under the subreaper, a throwaway cluster\'s CPU is part of the suite\'s', { skip: Boolean(process.env.LEVELKIT_PG_URL) }, async t => {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-pgcpu-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'cpu')
  const script = `
    const { postgres } = await import('levelkit-testkit/postgres')
    const { default: pg } = await import('pg')
    const server = await postgres()
    for (let i = 0; i < 30; i++) {
      const client = new pg.Client({ connectionString: server.connectionString })
      await client.connect()
      await client.query('SELECT count(*) FROM pg_class')
      await client.end()
    }
    await server.stop()`
  const run = await underRunner(runner, [process.execPath, '--input-type=module', '-e', script], { ...process.env, LEVELKIT_PG_CPU_FILE: file })
  t.is(run.code, 0, run.stderr)
  const server = /** @type {number} */ (serverSeconds(file))
  t.ok(server > 0, `the cluster wrote its CPU seconds (${server} s)`)
  t.ok(run.everyProcess && run.cpu !== null && run.cpu >= server, `the suite's ${run.cpu} s hold them`)
  t.match(run.report, /adopted [1-9]/, 'the postmaster adopted')
})
