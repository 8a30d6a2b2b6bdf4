// The levelkit-workshop command line end to end, in child processes with a
// scratch XDG_CONFIG_HOME (never the real ~/.config) and no TTY.
import test from 'tape'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, readFileSync, writeFileSync, copyFileSync, existsSync, mkdirSync, symlinkSync } from 'node:fs'
import { tmpdir, homedir } from 'node:os'
import { join, dirname, delimiter } from 'node:path'
import { fileURLToPath } from 'node:url'
import { listExercises } from '../lib/exercises.js'
import { progressFile } from '../lib/progress.js'

const bin = fileURLToPath(new URL('../bin/levelkit-workshop.js', import.meta.url))
const solutionTimeout = 60000
const fixture = (p) => fileURLToPath(new URL(`./fixtures/${p}`, import.meta.url))

/**
 * Run the CLI with stdin from /dev/null and stdout/stderr piped (no TTY).
 * @param {string} config XDG_CONFIG_HOME
 * @param {string[]} args
 */
function workshop (config, args, { env = {}, cwd } = {}) {
  // The learner's 10 s default is for a learner's machine: on a loaded CI
  // machine the solutions these tests verify (all known to end) took longer.
  // A test of the timeout itself gives its own.
  if ((args[0] === 'verify' || args[0] === 'run') && !args.includes('--timeout')) args = [...args, '--timeout', String(solutionTimeout)]
  return collect(process.execPath, [bin, ...args], { cwd, env: { ...process.env, XDG_CONFIG_HOME: config, NO_COLOR: '1', FORCE_COLOR: '', ...env } })
}

/**
 * @param {string} command @param {string[]} args
 * @param {{ cwd?: string, env: Record<string, string | undefined> }} options
 * @returns {Promise<{ code: number, stdout: string, stderr: string }>}
 */
function collect (command, args, { cwd, env }) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', d => { stdout += d })
    child.stderr.on('data', d => { stderr += d })
    child.on('error', reject)
    child.on('close', code => resolve({ code, stdout, stderr }))
  })
}

/**
 * The environment of a learner's shell: none of the variables npm sets for
 * the script it runs (this test may run under npm test), only node's folder
 * on PATH (and so no levelkit-workshop), unless `path` says otherwise.
 * @param {string} config XDG_CONFIG_HOME @param {string[]} [path]
 */
function learnerEnv (config, path = []) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name) && name !== 'INIT_CWD'))
  return { ...env, PATH: [...path, dirname(process.execPath)].join(delimiter), XDG_CONFIG_HOME: config, NO_COLOR: '1', FORCE_COLOR: '' }
}

function scratch (t) {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-workshop-cli-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

const exercises = listExercises()

test('workshop cli: without a TTY, no menu but a plain list', async t => {
  const config = scratch(t)
  const bare = await workshop(config, [])
  t.is(bare.code, 0, 'exit 0')
  t.match(bare.stdout, /not a terminal, so no menu/)
  for (const e of exercises) t.ok(bare.stdout.includes(`${e.number}. ${e.title} (${e.id})`), `lists ${e.id}`)
  t.match(bare.stdout, /levelkit-workshop select <n>/, 'says how to go on')

  const list = await workshop(config, ['list'])
  t.is(list.code, 0)
  t.is(list.stdout.trim().split('\n').length, exercises.length, 'one line per exercise')

  const json = await workshop(config, ['list', '--json'])
  const parsed = JSON.parse(json.stdout)
  t.same(parsed.exercises.map(e => e.id), exercises.map(e => e.id), '--json lists ids in order')
  t.same(Object.keys(parsed.exercises[0]).sort(), ['completed', 'current', 'id', 'number', 'title'])

  const help = await workshop(config, ['help'])
  t.is(help.code, 0)
  for (const cmd of ['list', 'select', 'print', 'run', 'verify', 'next', 'reset', 'completed', 'help', '--json', '--seed']) t.ok(help.stdout.includes(cmd), `help mentions ${cmd}`)
})

test('workshop cli: select, print, current, next, completed, reset and the progress file', async t => {
  const config = scratch(t)
  const byNumber = await workshop(config, ['select', '3'])
  t.is(byNumber.code, 0)
  t.match(byNumber.stdout, /Exercise 3 of \d+: batch_atomic/)
  t.match(byNumber.stdout, /# Atomic batches/, 'prints the problem (raw markdown when not a terminal)')

  const file = join(config, 'levelkit-workshop', 'progress.json')
  t.same(JSON.parse(readFileSync(file, 'utf8')), { version: 1, current: 'batch_atomic', completed: [] }, 'progress at $XDG_CONFIG_HOME/levelkit-workshop/progress.json')

  const byName = await workshop(config, ['select', 'Key design'])
  t.is(byName.code, 0, 'select by title')
  const byId = await workshop(config, ['select', 'sublevels', '--json'])
  const selected = JSON.parse(byId.stdout)
  t.is(selected.selected.id, 'sublevels', 'select by id, --json')
  t.match(selected.problem, /^# Sublevels/)

  const print = await workshop(config, ['print'])
  t.match(print.stdout, /# Sublevels/, 'print shows the selected exercise')
  const printOther = await workshop(config, ['print', '1', '--json'])
  t.is(JSON.parse(printOther.stdout).id, 'hello_level', 'print <n> --json')
  const current = await workshop(config, ['current'])
  t.match(current.stdout, /6\. Sublevels \(sublevels\)/)

  const verify = await workshop(config, ['verify', '--exercise', '1', exercises[0].solutionFile])
  t.is(verify.code, 0, 'verify --exercise passes the reference')
  const next = await workshop(config, ['next', '--json'])
  t.is(JSON.parse(next.stdout).selected.id, 'secondary_index', 'next: the first exercise not done after the selected one')

  const completed = await workshop(config, ['completed', '--json'])
  t.same(JSON.parse(completed.stdout).completed.map(e => e.id), ['hello_level'])
  const completedText = await workshop(config, ['completed'])
  t.match(completedText.stdout, /✓ 1\. Hello, Level/)

  const reset = await workshop(config, ['reset'])
  t.is(reset.code, 0)
  t.notOk(existsSync(file), 'reset removes the progress file')
  const after = await workshop(config, ['completed'])
  t.match(after.stdout, /No exercise completed yet/)
})

test('workshop cli: errors are clear and exit 2', async t => {
  const config = scratch(t)
  const unknown = await workshop(config, ['select', 'no-such-thing'])
  t.is(unknown.code, 2, 'unknown exercise: exit 2')
  t.match(unknown.stderr, /Unknown exercise: "no-such-thing".*levelkit-workshop list/)
  const unknownNumber = await workshop(config, ['select', '99', '--json'])
  t.is(unknownNumber.code, 2)
  t.match(JSON.parse(unknownNumber.stdout).error, /Unknown exercise/, '--json errors are JSON too')
  const noSelection = await workshop(config, ['verify', 'x.js'])
  t.is(noSelection.code, 2)
  t.match(noSelection.stderr, /No exercise selected/)
  const noFile = await workshop(config, ['verify', '--exercise', '1'])
  t.is(noFile.code, 2)
  t.match(noFile.stderr, /verify needs the file/)
  const missingFile = await workshop(config, ['verify', '--exercise', '1', join(config, 'nope.js')])
  t.is(missingFile.code, 2)
  t.match(missingFile.stderr, /No such file/)
  const badCommand = await workshop(config, ['frobnicate'])
  t.is(badCommand.code, 2)
  t.match(badCommand.stderr, /Unknown command: frobnicate/)
  const badOption = await workshop(config, ['list', '--bogus'])
  t.is(badOption.code, 2)
  const badSeed = await workshop(config, ['verify', '--seed', 'abc', 'x.js'])
  t.is(badSeed.code, 2)
  t.match(badSeed.stderr, /--seed must be a positive integer/)

  mkdirSync(join(config, 'levelkit-workshop'), { recursive: true })
  writeFileSync(join(config, 'levelkit-workshop', 'progress.json'), JSON.stringify({ version: 99 }))
  const future = await workshop(config, ['list'])
  t.is(future.code, 2, 'a progress file of an unknown version is refused, not misread')
  t.match(future.stderr, /unknown format \(version 99\).*reset/)
})

test('workshop cli: reference solutions pass select + verify', async t => {
  // The first, a middle and the last exercise (the one on levelkit): what
  // select + verify do is the same for each. That every reference passes
  // its verifier (the function verify calls) is workshop-exercises-test.js's,
  // for every exercise; three verifies here, not 13, each of three processes.
  const picked = [...new Set([0, Math.floor(exercises.length / 2), exercises.length - 1])].map(i => exercises[i])
  // Two exercises at a time, each with its own scratch config.
  const queue = picked.slice()
  await Promise.all([0, 1].map(async () => {
    for (let e = queue.shift(); e; e = queue.shift()) {
      const config = scratch(t)
      await workshop(config, ['select', String(e.number)])
      const verify = await workshop(config, ['verify', e.solutionFile])
      t.is(verify.code, 0, `${e.id}: exit 0`)
      t.match(verify.stdout, /PASS: all \d+ checks passed/, `${e.id}: PASS`)
      t.match(verify.stdout, /The reference solution, for comparison/, `${e.id}: shows the reference solution`)
      if (verify.code !== 0) t.comment(verify.stdout + verify.stderr)
      // The progress file, which `completed --json` prints (tested above): one
      // read rather than a 14th process per exercise.
      const progress = JSON.parse(readFileSync(progressFile({ XDG_CONFIG_HOME: config }), 'utf8'))
      t.same(progress.completed, [e.id], `${e.id}: marked done`)
    }
  }))
})

test('workshop cli: next when every exercise is done', async t => {
  const config = scratch(t)
  mkdirSync(join(config, 'levelkit-workshop'), { recursive: true })
  writeFileSync(join(config, 'levelkit-workshop', 'progress.json'), JSON.stringify({ version: 1, current: 'hello_level', completed: exercises.map(e => e.id) }))
  const next = await workshop(config, ['next'])
  t.is(next.code, 0)
  t.match(next.stdout, /every exercise/)
  const list = await workshop(config, ['list'])
  t.is(list.stdout.split('\n').filter(l => l.includes('✓')).length, exercises.length, 'list marks them all done')
})

test('workshop cli: a failing verify shows each check, a diff and the seed; --seed replays', async t => {
  const config = scratch(t)
  await workshop(config, ['select', 'hello_level'])
  const wrong = fixture('01-hello_level/wrong-one-entry.js')
  const fail = await workshop(config, ['verify', wrong])
  t.is(fail.code, 1, 'exit 1')
  t.match(fail.stdout, /✓ round-trip \[result\]/)
  t.match(fail.stdout, /✗ one-entry \[state\]/)
  t.match(fail.stdout, /- expected {2}\+ actual/, 'a diff header')
  t.match(fail.stdout, /\+ .*'"/, 'the actual, JSON-quoted value')
  t.match(fail.stdout, /FAIL: 1 of 3 checks failed/)
  const seed = /seed (\d+);/.exec(fail.stdout)[1]
  const replay = await workshop(config, ['verify', wrong, '--seed', seed, '--json'])
  const result = JSON.parse(replay.stdout)
  t.is(result.seed, Number(seed), 'the printed seed replays')
  t.is(result.passed, false)
  t.same(result.checks.filter(c => !c.ok).map(c => c.id), ['one-entry'])
  const again = JSON.parse((await workshop(config, ['verify', wrong, '--seed', seed, '--json'])).stdout)
  t.same(again.checks.find(c => c.id === 'one-entry').actual, result.checks.find(c => c.id === 'one-entry').actual, 'same seed, same data')
  t.same(JSON.parse((await workshop(config, ['completed', '--json'])).stdout).completed, [], 'a failed verify marks nothing done')
})

test('workshop cli: run shows what the code did; broken modules are reported, not crashed on', async t => {
  const config = scratch(t)
  await workshop(config, ['select', '1'])
  const run = await workshop(config, ['run', exercises[0].solutionFile])
  t.is(run.code, 0)
  t.match(run.stdout, /What the verifier saw/)
  t.match(run.stdout, /state: \[/)

  const dir = scratch(t)
  const noExport = join(dir, 'no-export.js')
  writeFileSync(noExport, 'export const x = 1\n')
  const missing = await workshop(config, ['verify', noExport])
  t.is(missing.code, 1)
  t.match(missing.stdout, /must export a function named hello/)

  const syntax = join(dir, 'syntax.js')
  writeFileSync(syntax, 'export async function hello (db {\n')
  const broken = await workshop(config, ['verify', syntax])
  t.is(broken.code, 1)
  t.match(broken.stdout, /did not run to the end \(load\)/)

  const hang = join(dir, 'hang.js')
  writeFileSync(hang, 'export function hello () { return new Promise(() => setInterval(() => {}, 1000)) }\n')
  const started = Date.now()
  const timeout = await workshop(config, ['verify', hang, '--timeout', '1500'])
  t.is(timeout.code, 1)
  t.match(timeout.stdout, /Did not finish within 1500 ms \(killed\)/)
  t.ok(Date.now() - started < 8000, 'killed on time')

  const noisy = join(dir, 'noisy.js')
  writeFileSync(noisy, "export async function hello (db, key, value, missingKey) { console.log('debug: hi'); await db.put(key, value); return { value: await db.get(key) } }\n")
  const printed = await workshop(config, ['verify', noisy])
  t.match(printed.stdout, /Your program printed:\n\s+debug: hi/, 'the learner\'s console output is shown on failure')
})

test('workshop cli: a solution outside the project imports classic-level and levelkit from the workshop', async t => {
  const config = scratch(t)
  const dir = scratch(t)
  for (const [n, name] of [[2, 'open.js'], [5, 'keys.js']]) {
    const file = join(dir, name)
    copyFileSync(exercises[n - 1].solutionFile, file)
    const verify = await workshop(config, ['verify', '--exercise', String(n), file], { cwd: dir })
    t.is(verify.code, 0, `exercise ${n} from ${dir}`)
    if (verify.code !== 0) t.comment(verify.stdout + verify.stderr)
  }
})

test('workshop cli: the commands it prints work where the learner typed theirs', async t => {
  const config = scratch(t)
  // Run as a file, with no levelkit-workshop on PATH: only npx finds it.
  const plain = await collect(process.execPath, [bin], { env: learnerEnv(config) })
  t.match(plain.stdout, /Select one with `npx levelkit-workshop select <n>`; `npx levelkit-workshop help` lists the commands/, 'not on PATH: the npx form')
  const help = await collect(process.execPath, [bin, 'help'], { env: learnerEnv(config) })
  t.match(help.stdout, /^Usage: npx levelkit-workshop \[command\]/m, 'help shows the npx form too')

  // Installed globally (on PATH): the bare name.
  const global = scratch(t)
  symlinkSync(bin, join(global, 'levelkit-workshop'))
  const onPath = await collect('levelkit-workshop', ['select', '1'], { env: learnerEnv(config, [global]) })
  t.is(onPath.code, 0, 'runs from PATH')
  t.match(onPath.stdout, /Run your solution with `levelkit-workshop run <file>`, check it with `levelkit-workshop verify <file>`/, 'on PATH: the bare name')
  t.match(onPath.stdout, /Try it with `levelkit-workshop run hello\.js`/, 'in the problem text too')

  // npx in this repository (after npm install): the npx form.
  const npx = await collect('npm', ['exec', '--', 'levelkit-workshop', 'select', '1'], { cwd: join(dirname(bin), '..'), env: { ...learnerEnv(config), PATH: process.env.PATH } })
  t.is(npx.code, 0, 'npx levelkit-workshop select 1')
  t.match(npx.stdout, /Run your solution with `npx levelkit-workshop run <file>`/, 'npx: the npx form')
  t.match(npx.stdout, /Try it with `npx levelkit-workshop run hello\.js`, then `npx levelkit-workshop verify hello\.js`/, 'in the problem text too')

  const bad = await collect(process.execPath, [bin, 'select', 'nope'], { env: learnerEnv(config) })
  t.match(bad.stderr, /Run `npx levelkit-workshop list` to see them/, 'and in error messages')
})

test('workshop cli: npm run from a subfolder reads the learner\'s paths from there, and prints npm run commands', async t => {
  const config = scratch(t)
  // A project with the workshop as an npm script, run from a folder inside
  // it: npm runs the script in the project's root, where hello.js is not.
  const project = scratch(t)
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'learning', private: true, scripts: { learn: `node ${JSON.stringify(bin)}` } }))
  const mine = join(project, 'mine')
  mkdirSync(mine)
  copyFileSync(exercises[0].solutionFile, join(mine, 'hello.js'))
  const npm = (/** @type {string[]} */ args) => collect('npm', ['run', '--silent', 'learn', '--', ...args], { cwd: mine, env: { ...learnerEnv(config), PATH: process.env.PATH } })

  const select = await npm(['select', '1'])
  t.is(select.code, 0, 'npm run learn -- select 1')
  t.match(select.stdout, /Run your solution with `npm run learn -- run <file>`, check it with `npm run learn -- verify <file>`/, 'the npm run form')

  const run = await npm(['run', 'hello.js', '--timeout', String(solutionTimeout)])
  t.is(run.code, 0, 'run hello.js finds ./hello.js in the folder it was typed in')
  if (run.code !== 0) t.comment(run.stdout + run.stderr)
  t.match(run.stdout, /When it looks right: `npm run learn -- verify hello\.js`/)

  const verify = await npm(['verify', 'hello.js', '--timeout', String(solutionTimeout)])
  t.is(verify.code, 0, 'verify hello.js too')
  if (verify.code !== 0) t.comment(verify.stdout + verify.stderr)
  t.match(verify.stdout, new RegExp(`Verifying ${join(mine, 'hello.js').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`), 'the file in that folder')

  // Run directly from another folder, a relative path is read from there too.
  const direct = await collect(process.execPath, [bin, 'verify', 'hello.js', '--timeout', String(solutionTimeout)], { cwd: mine, env: learnerEnv(config) })
  t.is(direct.code, 0, 'levelkit-workshop verify hello.js, from the folder of hello.js')
})

test('workshop cli: a syntax error shows the file, line and column, the message and the line', async t => {
  const config = scratch(t)
  await workshop(config, ['select', '1'])
  const dir = scratch(t)
  const file = join(dir, 'broken.js')
  writeFileSync(file, 'export async function hello (db, key, value) {\n  await db.put(key, value)\n  return await db.get(key) +* 2\n}\n')
  for (const command of ['verify', 'run']) {
    const result = await workshop(config, [command, file])
    t.is(result.code, 1, `${command}: exit 1`)
    t.ok(result.stdout.includes(`${file}:3:29`), `${command}: file:line:column`)
    t.match(result.stdout, /SyntaxError: Unexpected token '\*'/, `${command}: the message`)
    t.match(result.stdout, /return await db\.get\(key\) \+\* 2\n\s+\^/, `${command}: the line, and a caret under the column`)
    if (!result.stdout.includes(`${file}:3:29`)) t.comment(result.stdout)
  }
  // A syntax error in a module the solution imports is reported where it is.
  const helper = join(dir, 'helper.js')
  writeFileSync(helper, 'export const x = {\n  a: 1,,\n}\n')
  const importing = join(dir, 'importing.js')
  writeFileSync(importing, "import { x } from './helper.js'\nexport async function hello () { return x }\n")
  const nested = await workshop(config, ['verify', importing])
  t.ok(nested.stdout.includes(`${helper}:2:8`), 'in an imported module: that module\'s file:line:column')
})

test('workshop progress: $XDG_CONFIG_HOME, else ~/.config', t => {
  const config = join(tmpdir(), 'cfg')
  const home = join(tmpdir(), 'ann')
  t.is(progressFile({ XDG_CONFIG_HOME: config }), join(config, 'levelkit-workshop', 'progress.json'))
  t.is(progressFile({ HOME: home }), join(home, '.config', 'levelkit-workshop', 'progress.json'))
  t.is(progressFile({ XDG_CONFIG_HOME: '' }), join(homedir(), '.config', 'levelkit-workshop', 'progress.json'))
  t.end()
})
