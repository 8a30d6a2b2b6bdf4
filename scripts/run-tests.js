#!/usr/bin/env node
// The test suites of `npm test`, two at a time: each root test file in a
// tape process of its own (many files in one process sometimes hung there,
// while each passes alone: an interaction not found yet) and each
// workspace's test files the same way (below). Most of
// the time goes to waiting (Chromium, child processes killed and reopened,
// PostgreSQL, timers) on a disk, but with the files on RAM (below) the run
// is nearly CPU-bound: on a 2-core CI machine three at a time took 830 s
// (their seconds adding up to 2,486), two the session before 838 s (1,673;
// files on disk, three suites fewer): the third buys little time, but keeps
// the cores busy while a suite waits. It also raised the load enough for
// timing-dependent tests to fail in two CI runs of three, so two it is.
// Each suite's output is printed whole
// when it ends, so logs stay readable; the exit code is 1 if any failed.
// The longest suites start first (their seconds from the last recorded run,
// scripts/test-durations.json; a suite not in it counts as long), so the
// short ones fill in at the end and the jobs end together instead of one
// job running a long suite alone after the others are done.
// The lint (standard) and type checks (tsc) run as suites among the others.
// The suites that need PostgreSQL each start a throwaway cluster of their
// own (so none sees another's sessions and locks), all copies of one
// initdb made here (levelkit-testkit/postgres: LEVELKIT_PG_TEMPLATE).
// Temporary files go to a directory of this run on /dev/shm when it is a
// RAM file system with room (scripts/test-tmpdir.js: LevelDB's syncs were
// waits on the disk that prove nothing here), unless TMPDIR is set; it is
// removed at the end, with whatever a suite left in it.
//
// Usage: node scripts/run-tests.js [--jobs 2] [--serial] [--suite-timeout 900] [--record]
// --record writes this run's seconds of each passed suite to scripts/test-durations.json.

import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import { availableParallelism, tmpdir } from 'node:os'
import { parseArgs } from 'node:util'
import { postgresTemplate } from 'levelkit-testkit/postgres'
import { ramTmpdir } from './test-tmpdir.js'
import { serverSeconds, suiteCpu, suiteRunner, workspaceSuites } from './test-suites.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const { values } = parseArgs({ options: { jobs: { type: 'string', default: '2' }, serial: { type: 'boolean', default: false }, 'suite-timeout': { type: 'string', default: '900' }, record: { type: 'boolean', default: false } } })
const jobs = values.serial ? 1 : Number(values.jobs)
const suiteTimeout = Number(values['suite-timeout'])
if (!Number.isSafeInteger(jobs) || jobs < 1 || !(suiteTimeout > 0)) {
  console.error('run-tests: --jobs is a positive integer, --suite-timeout a number of seconds')
  process.exit(2)
}

const tape = join(root, 'node_modules', 'tape', 'bin', 'tape')
const files = readdirSync(join(root, 'test')).filter(name => name.endsWith('-test.js')).sort()

/** @type {Array<{ name: string, command: string, args: string[], cwd?: string }>} */
const suites = files.map(name => ({ name: `test/${name}`, command: process.execPath, args: [tape, join('test', name)] }))
// The lint and type checks are suites too, run beside the others rather than
// before them: they are ~1 min of CPU on a loaded 2-core CI machine, and the
// suites do not depend on them. A check that fails fails the run, its output
// printed like a failed suite's.
const bin = (/** @type {string} */ name) => join(root, 'node_modules', '.bin', name)
suites.push(
  { name: 'standard', command: bin('standard'), args: [] },
  { name: 'tsc -p tsconfig.json', command: bin('tsc'), args: ['-p', 'tsconfig.json'] },
  { name: 'tsc -p tsconfig.lib.json', command: bin('tsc'), args: ['-p', 'tsconfig.lib.json'] }
)
// Each workspace's test files, as suites of their own (scripts/test-suites.js).
const { workspaces = [] } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
for (const workspace of workspaces) suites.push(...workspaceSuites(root, workspace, { tape, tsc: bin('tsc') }))

// Longest first. A suite with no recorded time (a new file) counts as the
// longest: it may be, and starting it early costs little if it is not.
const durationsPath = join(root, 'scripts', 'test-durations.json')
/** @type {Record<string, number>} */
const expected = existsSync(durationsPath) ? JSON.parse(readFileSync(durationsPath, 'utf8')) : {}
const expectedSeconds = (/** @type {{ name: string }} */ suite) => expected[suite.name] ?? Infinity
suites.sort((a, b) => expectedSeconds(b) - expectedSeconds(a) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))

// Set before the template is made: its cluster is under os.tmpdir() too,
// like every suite's files (they inherit TMPDIR).
const tmp = process.env.TMPDIR ? null : ramTmpdir()
if (tmp) process.env.TMPDIR = tmp.dir
console.log(`run-tests: temporary files in ${tmp ? `${tmp.dir} (RAM)` : tmpdir()}`)

// Each suite runs in a process group of its own (so a hung one is killed
// whole); an interrupted run takes its groups with it.
/** @type {Set<number>} */
const running = new Set()
for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM'])) {
  process.on(signal, () => {
    for (const pid of running) try { process.kill(-pid, 'SIGKILL') } catch {}
    tmp?.remove()
    process.exit(130)
  })
}

// Each suite runs under a child subreaper (scripts/subreaper.pl), which
// writes to fd 3 at the end the CPU time of every process the suite started:
// Chromium's processes and the PostgreSQL clusters pg_ctl daemonizes
// included, which bash's `times` (the fallback without Perl) left out.
// Each cluster also writes its own CPU seconds at its stop to the suite's
// LEVELKIT_PG_CPU_FILE (levelkit-testkit/postgres): PostgreSQL's share of
// the suite's CPU, or, under bash, added to it.
const runner = suiteRunner()
if (runner.command === 'bash') console.log('run-tests: no Perl: a suite\'s CPU time counts only the processes waited for (not Chromium\'s orphans)')
let suiteNumber = 0
/** @param {{ name: string, command: string, args: string[], cwd?: string }} suite */
function run (suite) {
  const started = Date.now()
  const pgCpuFile = join(tmpdir(), `levelkit-pg-cpu-${process.pid}-${suiteNumber++}`)
  return new Promise(resolve => {
    const child = spawn(runner.command, [...runner.args, suite.command, ...suite.args], { cwd: suite.cwd ?? root, env: { ...env, LEVELKIT_PG_CPU_FILE: pgCpuFile }, stdio: ['ignore', 'pipe', 'pipe', 'pipe'], detached: true })
    running.add(/** @type {number} */ (child.pid))
    /** @type {Buffer[]} */
    const usage = []
    const times = /** @type {import('node:stream').Readable} */ (child.stdio[3])
    times.on('data', chunk => usage.push(chunk))
    /** @type {Buffer[]} */
    const output = []
    /** @type {Buffer[]} */
    const errors = []
    let timedOut = false
    // A suite that stops making progress is killed with its children, so a
    // hang is a failure with its output rather than a CI run that never ends.
    const timer = setTimeout(() => {
      timedOut = true
      try { process.kill(-(/** @type {number} */ (child.pid)), 'SIGKILL') } catch {}
    }, suiteTimeout * 1000)
    child.stdout.on('data', chunk => output.push(chunk))
    child.stderr.on('data', chunk => { output.push(chunk); errors.push(chunk) })
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      running.delete(/** @type {number} */ (child.pid))
      const seconds = (Date.now() - started) / 1000
      const ok = code === 0 && !timedOut
      const why = timedOut ? `killed after ${suiteTimeout} s` : signal || `exit ${code}`
      const measured = suiteCpu(Buffer.concat(usage).toString())
      const pgCpu = serverSeconds(pgCpuFile)
      // One number for every process of the suite, PostgreSQL's included.
      const cpu = measured === null ? null : measured.seconds + (measured.everyProcess ? 0 : pgCpu ?? 0)
      const result = { name: suite.name, ok, seconds, cpu, pgCpu, why, failures: '' }
      // Processes a suite left running cost the run their wait (and are bugs of the suite).
      const left = measured !== null && (measured.lingered >= 1 || measured.killed > 0) ? `, ${measured.lingered.toFixed(0)} s waiting for processes it left running${measured.killed > 0 ? `, ${measured.killed} killed` : ''}` : ''
      process.stdout.write(`\n=== ${suite.name}: ${ok ? 'passed' : `FAILED (${why})`} in ${seconds.toFixed(0)} s${result.cpu === null ? '' : `, ${cpuText(result)}`}${left} ===\n`)
      const text = Buffer.concat(output).toString()
      process.stdout.write(text)
      result.failures = ok ? '' : failures(text, Buffer.concat(errors).toString())
      resolve(result)
    })
  })
}

/**
 * A suite's CPU seconds as the log shows them: every process's, and how
 * much of it its PostgreSQL clusters used; '' when unknown (killed).
 * @param {{ cpu: number | null, pgCpu: number | null }} result
 */
function cpuText (result) {
  if (result.cpu === null) return ''
  return `CPU ${result.cpu.toFixed(1)} s${result.pgCpu === null ? '' : `, PostgreSQL ${result.pgCpu.toFixed(1)} s of it`}`
}

/**
 * What a failed suite said about its failure, printed again after the
 * summary, where a reader of the log's tail sees it: each `not ok` with the
 * test it belongs to and its diagnostics, then the end of its stderr and of
 * its output.
 * @param {string} text @param {string} stderr
 */
function failures (text, stderr) {
  const lines = text.split('\n')
  /** @type {string[]} */
  const picked = []
  let heading = ''
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].startsWith('# ')) heading = lines[i]
    if (!lines[i].startsWith('not ok')) continue
    if (heading) picked.push(heading)
    picked.push(lines[i])
    for (let j = i + 1; j < lines.length && /^\s/.test(lines[j]); j++) picked.push(lines[j])
  }
  const tail = (/** @type {string} */ s, /** @type {number} */ n) => s.trimEnd().split('\n').slice(-n).join('\n')
  return [...picked.slice(0, 200), '--- end of stderr ---', tail(stderr, 30), '--- end of output ---', tail(text, 15)].join('\n')
}

const runStarted = Date.now()
// Without PostgreSQL's binaries the pg suites fail as they would alone.
const template = await postgresTemplate().catch(err => {
  console.error(`run-tests: no PostgreSQL template cluster (${err.message.split('\n')[0]}); each suite runs initdb`)
  return null
})
/** @type {NodeJS.ProcessEnv} */
const env = template ? { ...process.env, LEVELKIT_PG_TEMPLATE: template.data } : process.env
const queue = suites.slice()
/** @type {Array<{ name: string, ok: boolean, seconds: number, cpu: number | null, pgCpu: number | null, why: string, failures: string }>} */
const results = []
await Promise.all(Array.from({ length: Math.min(jobs, queue.length) }, async () => {
  while (queue.length > 0) results.push(await run(/** @type {any} */ (queue.shift())))
}))

template?.remove()
tmp?.remove()
console.log('\n=== summary ===')
for (const result of results) console.log(`${result.ok ? 'passed' : 'FAILED'}  ${result.name} (${result.seconds.toFixed(0)} s${result.cpu === null ? '' : `, ${cpuText(result)}`}${result.ok ? '' : `, ${result.why}`})`)
// The wall time beside its floor (the suites' seconds shared evenly among
// the jobs, or the longest suite if longer), and the suites to trim first.
const wall = (Date.now() - runStarted) / 1000
const total = results.reduce((sum, result) => sum + result.seconds, 0)
const slowest = results.slice().sort((a, b) => b.seconds - a.seconds)
const floor = Math.max(total / Math.min(jobs, results.length), slowest[0]?.seconds ?? 0)
console.log(`\n${results.length} suites in ${wall.toFixed(0)} s (${jobs} at a time; their seconds add up to ${total.toFixed(0)}, so no order ends before ${floor.toFixed(0)} s)`)
console.log(`slowest: ${slowest.slice(0, 3).map(result => `${result.name} ${result.seconds.toFixed(0)} s`).join(', ')}`)
// CPU time is what the two jobs share on a 2-core CI machine: its sum over
// the cores is the floor of the wall time whatever the load, and the suites
// using most of it are the ones worth trimming.
// The PostgreSQL servers' CPU counts: on the same cores, and for the
// postgres suites it is most of their CPU time.
const allCpu = (/** @type {{ cpu: number | null }} */ result) => result.cpu ?? 0
const cpuTotal = results.reduce((sum, result) => sum + allCpu(result), 0)
const pgTotal = results.reduce((sum, result) => sum + (result.pgCpu ?? 0), 0)
const busiest = results.filter(result => result.cpu !== null).sort((a, b) => allCpu(b) - allCpu(a))
console.log(`CPU: ${cpuTotal.toFixed(0)} s over the suites, ${pgTotal.toFixed(0)} s of it their PostgreSQL servers' (${(cpuTotal / availableParallelism()).toFixed(0)} s on ${availableParallelism()} cores); most: ${busiest.slice(0, 3).map(result => `${result.name} ${allCpu(result).toFixed(0)} s`).join(', ')}`)
if (values.record) {
  // Failed suites keep their recorded time (a failure may end early); suites
  // gone from the tree drop out.
  /** @type {Record<string, number>} */
  const recorded = {}
  for (const suite of suites.slice().sort((a, b) => a.name < b.name ? -1 : 1)) {
    const result = results.find(result => result.name === suite.name)
    const seconds = result?.ok ? Math.round(result.seconds) : expected[suite.name]
    if (seconds !== undefined) recorded[suite.name] = seconds
  }
  writeFileSync(durationsPath, JSON.stringify(recorded, null, 2) + '\n')
  console.log(`recorded each suite's seconds in ${join('scripts', 'test-durations.json')}`)
}
for (const result of results.filter(result => !result.ok)) console.log(`\n=== why ${result.name} failed ===\n${result.failures}`)
process.exit(results.every(result => result.ok) ? 0 : 1)
