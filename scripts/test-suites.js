// What run-tests.js runs for a workspace, and how it learns a suite's CPU
// time. Apart from run-tests.js so that both can be tested without running
// every suite.

import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'

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
 * every process that was waited for, grandchildren included (Chromium's, the
 * child processes' a test starts), not a daemon's (a PostgreSQL server
 * started with pg_ctl). On a loaded machine a suite's seconds grow with the
 * load; its CPU seconds hardly do, and on CI's two cores they are what the
 * run's wall time is made of. The command's exit code is bash's.
 */
export const withTimes = Object.freeze(['-c', '"$@"; status=$?; times >&3; exit $status', 'bash'])

/**
 * The children's line of `times` ("0m1.250s 0m0.310s", the second line) in
 * seconds, user and system added; null when it is not there (the suite was
 * killed with its bash).
 * @param {string} text
 * @returns {number | null}
 */
export function cpuSeconds (text) {
  const line = text.trim().split('\n')[1] ?? ''
  const parts = [...line.matchAll(/(\d+)m([\d.]+)s/g)].map(match => Number(match[1]) * 60 + Number(match[2]))
  return parts.length === 2 ? parts[0] + parts[1] : null
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
