#!/usr/bin/env node
// The test suites of `npm test`, two at a time: each root test file in a
// tape process of its own (many files in one process sometimes hung there,
// while each passes alone: an interaction not found yet) and each
// workspace's own tests. Most of
// the time goes to waiting (Chromium, child processes killed and reopened,
// PostgreSQL, timers), so two suites side by side take about half the time
// of one after the other on two cores. Each suite's output is printed whole
// when it ends, so logs stay readable; the exit code is 1 if any failed.
//
// Usage: node scripts/run-tests.js [--jobs 2] [--serial]

import { spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'
import { parseArgs } from 'node:util'

const root = fileURLToPath(new URL('..', import.meta.url))
const { values } = parseArgs({ options: { jobs: { type: 'string', default: '2' }, serial: { type: 'boolean', default: false } } })
const jobs = values.serial ? 1 : Number(values.jobs)
if (!Number.isSafeInteger(jobs) || jobs < 1) {
  console.error('run-tests: --jobs is a positive integer')
  process.exit(2)
}

const tape = join(root, 'node_modules', 'tape', 'bin', 'tape')
const files = readdirSync(join(root, 'test')).filter(name => name.endsWith('-test.js')).sort()

/** @type {Array<{ name: string, command: string, args: string[] }>} */
const suites = files.map(name => ({ name: `test/${name}`, command: process.execPath, args: [tape, join('test', name)] }))
const { workspaces = [] } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
for (const workspace of workspaces) {
  const manifest = JSON.parse(readFileSync(join(root, workspace, 'package.json'), 'utf8'))
  if (manifest.scripts && manifest.scripts.test) suites.push({ name: `${workspace}/`, command: 'npm', args: ['test', '-w', workspace] })
}

/** @param {{ name: string, command: string, args: string[] }} suite */
function run (suite) {
  const started = Date.now()
  return new Promise(resolve => {
    const child = spawn(suite.command, suite.args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
    /** @type {Buffer[]} */
    const output = []
    child.stdout.on('data', chunk => output.push(chunk))
    child.stderr.on('data', chunk => output.push(chunk))
    child.on('close', (code, signal) => {
      const seconds = ((Date.now() - started) / 1000).toFixed(0)
      process.stdout.write(`\n=== ${suite.name}: ${code === 0 ? 'passed' : `FAILED (${signal || `exit ${code}`})`} in ${seconds} s ===\n`)
      process.stdout.write(Buffer.concat(output))
      resolve({ name: suite.name, ok: code === 0, seconds })
    })
  })
}

const queue = suites.slice()
/** @type {Array<{ name: string, ok: boolean, seconds: string }>} */
const results = []
await Promise.all(Array.from({ length: Math.min(jobs, queue.length) }, async () => {
  while (queue.length > 0) results.push(await run(/** @type {any} */ (queue.shift())))
}))

console.log('\n=== summary ===')
for (const result of results) console.log(`${result.ok ? 'passed' : 'FAILED'}  ${result.name} (${result.seconds} s)`)
process.exit(results.every(result => result.ok) ? 0 : 1)
