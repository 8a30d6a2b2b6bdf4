// What run-tests.js runs for a workspace, and how it learns a suite's CPU
// time. Apart from run-tests.js so that both can be tested without running
// every suite.

import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** @typedef {{ name: string, command: string, args: string[], cwd?: string }} Suite */

// A workspace's usual test script: the tape glob, maybe after a type check.
const USUAL = /^(tsc -p tsconfig\.json && )?tape 'test\/\*-test\.js'$/

/**
 * The suites of a workspace: with the usual test script, each test file a
 * suite of its own, run in the workspace's folder (and its type check one
 * more), so that the longest start first and fill both jobs instead of one
 * job spending minutes on a whole workspace, and the summary names the file
 * that took the time; with any other script, `npm test -w <workspace>` as
 * one suite; none without a test script.
 * @param {string} root the repository @param {string} workspace its folder, relative to `root`
 * @param {{ tape: string, tsc: string }} bins the paths of tape's and tsc's executables
 * @returns {Suite[]}
 */
export function workspaceSuites (root, workspace, bins) {
  const cwd = join(root, workspace)
  const manifest = JSON.parse(readFileSync(join(cwd, 'package.json'), 'utf8'))
  const script = manifest.scripts && manifest.scripts.test
  if (!script) return []
  const usual = USUAL.exec(script)
  if (!usual) return [{ name: `${workspace}/`, command: 'npm', args: ['test', '-w', workspace] }]
  /** @type {Suite[]} */
  const suites = []
  if (usual[1]) suites.push({ name: `tsc -p ${workspace}/tsconfig.json`, command: bins.tsc, args: ['-p', 'tsconfig.json'], cwd })
  for (const name of readdirSync(join(cwd, 'test')).filter(name => name.endsWith('-test.js')).sort()) {
    suites.push({ name: `${workspace}/test/${name}`, command: process.execPath, args: [bins.tape, join('test', name)], cwd })
  }
  return suites
}

/**
 * bash's arguments to run a command (appended) and write to fd 3, when it
 * ends, what `times` says of its children: the CPU time (user, system) of
 * every process that was waited for, grandchildren included, not a process
 * that outlived its parent (Chromium's zygote and renderers, a PostgreSQL
 * server started with pg_ctl: init waits for those). The fallback of
 * `suiteRunner()` where Perl is missing. The command's exit code is bash's.
 */
export const withTimes = Object.freeze(['-c', '"$@"; status=$?; times >&3; exit $status', 'bash'])

/** The subreaper (scripts/subreaper.pl), which counts every process of a suite. */
export const subreaper = fileURLToPath(new URL('subreaper.pl', import.meta.url))

/**
 * How to run a suite's command so that its CPU time is written to fd 3 at
 * its end: under scripts/subreaper.pl (a child subreaper: every process the
 * suite started counts, orphans included, and what it leaves running is
 * killed after a moment), or under bash's `times` where there is no Perl.
 * On a loaded machine a suite's seconds grow with the load; its CPU seconds
 * hardly do, and on CI's two cores they are what the run's wall time is
 * made of. The command's exit code is the runner's.
 * @param {string} [perl] the Perl to try
 * @returns {{ command: string, args: readonly string[] }} the runner, the command and its arguments to append
 */
export function suiteRunner (perl = 'perl') {
  const probe = spawnSync(perl, ['-MPOSIX', '-MTime::HiRes', '-e', '1'], { stdio: 'ignore' })
  return probe.status === 0 ? { command: perl, args: [subreaper] } : { command: 'bash', args: withTimes }
}

/**
 * A suite's CPU seconds from what its runner wrote to fd 3: the subreaper's
 * line ("cpu <user> <system> subreaper 1 ..."), every process of the suite
 * counted when it is a subreaper (`everyProcess`: PostgreSQL's clusters
 * included), or bash's `times` (the children's line, "0m1.250s 0m0.310s",
 * the second: only the processes waited for). Null when nothing was written
 * (the suite was killed with its runner). `lingered`: the seconds the
 * subreaper waited, after the suite's command ended, for processes it left
 * running, and `killed` how many it then killed (0 under bash).
 * @param {string} text
 * @returns {{ seconds: number, everyProcess: boolean, lingered: number, killed: number } | null}
 */
export function suiteCpu (text) {
  const reaper = /^cpu ([\d.]+) ([\d.]+) subreaper ([01]) adopted \d+ killed (\d+)(?: after ([\d.]+))?/m.exec(text)
  if (reaper) return { seconds: Number(reaper[1]) + Number(reaper[2]), everyProcess: reaper[3] === '1', lingered: Number(reaper[5] ?? 0), killed: Number(reaper[4]) }
  const line = text.trim().split('\n')[1] ?? ''
  const parts = [...line.matchAll(/(\d+)m([\d.]+)s/g)].map(match => Number(match[1]) * 60 + Number(match[2]))
  return parts.length === 2 ? { seconds: parts[0] + parts[1], everyProcess: false, lingered: 0, killed: 0 } : null
}

/**
 * The CPU seconds a suite's PostgreSQL clusters reported at their stop (a
 * line each in the file LEVELKIT_PG_CPU_FILE names: levelkit-testkit/postgres),
 * added up; null when none did (a suite without PostgreSQL, or one killed).
 * The file is removed.
 * @param {string} file
 * @returns {number | null}
 */
export function serverSeconds (file) {
  let text
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    return null
  }
  rmSync(file, { force: true })
  const values = text.split('\n').filter(Boolean).map(Number).filter(Number.isFinite)
  return values.length === 0 ? null : values.reduce((sum, value) => sum + value, 0)
}
