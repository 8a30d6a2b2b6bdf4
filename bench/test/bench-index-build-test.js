// Smoke test of bench/index-build.js: runs it once with a tiny N and checks
// what it prints and writes (the script itself checks that the index it
// built answers and that check() is clean after a build under writes). It
// never asserts a time: a benchmark measures, it is not a timed test.

import test from 'tape'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const script = fileURLToPath(new URL('../index-build.js', import.meta.url))

/** @param {string[]} args @returns {Promise<{ code: number, stdout: string, stderr: string }>} */
function run (args) {
  return new Promise(resolve => {
    execFile(process.execPath, [script, ...args], { timeout: 120000 }, (err, stdout, stderr) => {
      resolve({ code: err ? /** @type {any} */ (err).code ?? 1 : 0, stdout, stderr })
    })
  })
}

test('bench/index-build.js --floor --skip-writes: the raw classic-level floor beside the build, no writes', async t => {
  const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-index-build-'))
  try {
    const { code, stdout, stderr } = await run(['--records', '3000', '--runs', '1', '--floor', '--skip-writes', '--out', out, '--db-dir', out])
    t.is(code, 0, `exit 0${code ? `: ${stderr}` : ''}`)
    t.match(stdout, /^ {2}run 1: raw insert in /m, 'the raw insert')
    t.match(stdout, /^ {2}run 1: raw build in /m, 'the raw build')
    t.match(stdout, /levelkit build \/ raw build/, 'what levelkit adds to the build')
    t.match(stdout, /At the floor \(a raw build against levelkit's insert\): (within|beyond) the goal/, 'whether the goal is within reach')
    t.doesNotMatch(stdout, /slowdown of writes/, 'no writes during a build')
    const dirs = readdirSync(out).filter(name => name.startsWith('index-build-'))
    const summary = JSON.parse(readFileSync(join(out, dirs[0], 'summary.json'), 'utf8'))
    t.ok(['rawInsertMs', 'rawBuildMs', 'buildOverRaw', 'rawOverInsert', 'rawOverRaw'].every(field => Number.isFinite(summary.summary[field]) && summary.summary[field] > 0), 'finite positive floor medians')
    t.is(summary.goals.length, 3, 'the floor as a third goal line')
    t.is(readdirSync(out).filter(name => name.startsWith('levelkit-index-build-')).length, 0, 'the databases are removed')
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})

test('bench/index-build.js with 3000 records, 2 runs', async t => {
  const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-index-build-'))
  try {
    const { code, stdout, stderr } = await run(['--records', '3000', '--runs', '2', '--seconds', '0.3', '--writers', '4', '--out', out, '--db-dir', out])
    t.is(code, 0, `exit 0${code ? `: ${stderr}` : ''}`)
    t.is((stdout.match(/^ {2}run \d: insert with the index/gm) || []).length, 2, 'a line per run')
    t.match(stdout, /build \/ insert/, 'the ratio')
    t.match(stdout, /slowdown of writes/, 'the slowdown of writes')
    t.match(stdout, /Goal: build <= 0\.5 x insert with the index: (met|missed)/, 'the goal, met or missed')
    const dirs = readdirSync(out).filter(name => name.startsWith('index-build-'))
    t.is(dirs.length, 1, 'one output folder')
    const summary = JSON.parse(readFileSync(join(out, dirs[0], 'summary.json'), 'utf8'))
    t.is(summary.benchmark, 'index-build')
    t.is(summary.runs.length, 2, 'both runs in summary.json')
    t.ok(['insertMs', 'buildMs', 'ratio', 'quietWritesPerSec', 'duringWritesPerSec', 'slowdown'].every(field => Number.isFinite(summary.summary[field]) && summary.summary[field] > 0), 'finite positive medians')
    const csv = readFileSync(join(out, dirs[0], 'results.csv'), 'utf8').trimEnd().split('\n')
    t.is(csv.length, 3, 'results.csv: a header and a row per run')
    t.is(readdirSync(out).filter(name => name.startsWith('levelkit-index-build-')).length, 0, 'the databases are removed')
    const bad = await run(['--records', 'many'])
    t.is(bad.code, 2, 'a bad option: exit 2')
    t.match(bad.stderr, /Usage/, 'with the usage')
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})
