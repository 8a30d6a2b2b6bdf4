#!/usr/bin/env node
// Run one test suite (or one test of it) again and again, each run a fresh
// process, and say which runs failed: for a failure seen once in CI, to
// tell a rare one from a fixed one (a fix is shown by many runs without it
// failing, beside many runs of the code before failing at some rate).
//
// Usage: node scripts/repeat-test.js <test file> [--match <text>] [--runs 20] [--minutes M] [--until-fail]
//   --match    only the tests whose name holds <text> (scripts/tape-match.js)
//   --runs     how many runs (default 20); --minutes stops earlier at that time
//   --until-fail  stop at the first failed run (its output is printed whole)
// One line per run: its number, the time (UTC), the load, how many
// assertions failed and the first of them. The exit code is 1 if any run failed.
import { spawn } from 'node:child_process'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

const root = fileURLToPath(new URL('..', import.meta.url))
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { match: { type: 'string' }, runs: { type: 'string', default: '20' }, minutes: { type: 'string' }, 'until-fail': { type: 'boolean', default: false } }
})
const runs = Number(values.runs)
const minutes = values.minutes === undefined ? Infinity : Number(values.minutes)
if (positionals.length !== 1 || !Number.isSafeInteger(runs) || runs < 1 || !(minutes > 0)) {
  console.error('Usage: node scripts/repeat-test.js <test file> [--match <text>] [--runs 20] [--minutes M] [--until-fail]')
  process.exit(2)
}
const [file] = positionals
const tape = join(root, 'node_modules', 'tape', 'bin', 'tape')
const env = { ...process.env, ...(values.match === undefined ? {} : { LEVELKIT_TEST_MATCH: values.match }) }
const deadline = Date.now() + minutes * 60_000

/** @returns {Promise<{ code: number | null, output: string }>} */
function runOnce () {
  return new Promise(resolve => {
    const child = spawn(process.execPath, ['--import', join(root, 'scripts', 'tape-match.js'), tape, file], { cwd: process.cwd(), env })
    let output = ''
    child.stdout.on('data', chunk => { output += chunk })
    child.stderr.on('data', chunk => { output += chunk })
    child.on('close', code => resolve({ code, output }))
  })
}

let failed = 0
let ran = 0
for (let run = 1; run <= runs && Date.now() < deadline; run++) {
  const { code, output } = await runOnce()
  ran++
  const notOk = output.split('\n').filter(line => line.startsWith('not ok'))
  const passed = /^# pass +(\d+)/m.exec(output)?.[1] ?? '0'
  const bad = code !== 0 || notOk.length > 0
  if (bad) failed++
  const time = new Date().toISOString().slice(11, 19)
  console.log(`${run} ${time} load ${loadavg()[0].toFixed(1)} ${bad ? 'FAILED' : 'passed'} (${passed} passed, ${notOk.length} failed${code !== 0 && notOk.length === 0 ? `, exit code ${code}` : ''})${notOk.length > 0 ? ` ${notOk[0]}` : ''}`)
  if (passed === '0' && !bad) console.log('  (nothing ran: does --match name a test?)')
  if (bad && values['until-fail']) {
    console.log(output)
    break
  }
}
console.log(`${failed} of ${ran} runs failed`)
process.exitCode = failed > 0 ? 1 : 0
