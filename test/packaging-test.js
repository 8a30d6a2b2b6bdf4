// The repository holds three packages: the library at the root (levelkit),
// the workshop (workshop/, levelkit-workshop) and the benchmarks (bench/,
// private), plus testkit/ (private, shared by the tests and the benchmarks).
// These tests keep their boundaries: what each tarball holds, what the
// library depends on, and that the two public tarballs install and run
// together outside the repository.
import test from 'tape'
import { execFile } from 'node:child_process'
import { mkdtempSync, mkdirSync, rmSync, readFileSync, readdirSync, writeFileSync, copyFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const rootPackage = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

/**
 * @param {string} file @param {string[]} args @param {{ cwd?: string, env?: Record<string, string> }} [options]
 * @returns {Promise<{ code: number, stdout: string, stderr: string }>}
 */
function run (file, args, { cwd = root, env = {} } = {}) {
  return new Promise(resolve => {
    execFile(file, args, { cwd, env: { ...process.env, ...env }, timeout: 120000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? /** @type {any} */ (err).code ?? 1 : 0, stdout, stderr })
    })
  })
}

/** The files `npm pack` would put in a package's tarball. @param {string[]} extra */
async function packList (t, extra = []) {
  // --ignore-scripts: prepack builds the browser bundle, not needed to list.
  const packed = await run(npm, ['pack', '--dry-run', '--json', '--ignore-scripts', ...extra])
  t.is(packed.code, 0, `npm pack --dry-run ${extra.join(' ')}`.trim())
  if (packed.code !== 0) t.comment(packed.stderr)
  return JSON.parse(packed.stdout)[0].files.map((/** @type {{ path: string }} */ f) => f.path)
}

// Static imports and re-exports, side-effect imports, import() and require().
const IMPORTS = [
  /^\s*(?:import|export)\b[^'"]*?\bfrom\s*'([^']+)'/gm,
  /^\s*import\s*'([^']+)'/gm,
  /\bimport\(\s*'([^']+)'\s*\)/g,
  /\brequire\(\s*'([^']+)'\s*\)/g
]

/** @param {string} file relative to the root @returns {string[]} the specifiers it imports */
function specifiers (file) {
  const source = readFileSync(join(root, file), 'utf8')
  return IMPORTS.flatMap(re => [...source.matchAll(re)].map(m => m[1]))
}

/** The packages (bare specifiers, node: and # imports left out) the files import. @param {string[]} files */
function packagesImportedBy (files) {
  const bare = files.flatMap(specifiers).filter(s => !/^(\.|#|node:)/.test(s))
  return new Set(bare.map(s => s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0]))
}

/** @param {string} dir relative to the root */
const jsFiles = (dir) => readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' }).filter(f => f.endsWith('.js')).map(f => join(dir, f))

test('packaging: the library tarball holds the library only', async t => {
  const files = await packList(t)
  t.same(files.filter(f => /^(workshop|bench|testkit|test|examples|scripts)\//.test(f)), [], 'no workshop, bench, testkit, test, example or script file')
  t.ok(files.includes('index.js') && files.includes('lib/writer.js') && files.includes('bin/levelkit.js'), 'the library and its bin')
  t.same(Object.keys(rootPackage.bin), ['levelkit'], 'one bin: levelkit (levelkit-workshop is the workshop package\'s)')
})

test('packaging: the library depends on what lib/ imports at run time, and nothing else', t => {
  const runtime = ['index.js', 'browser.js', 'chat.js', 'bin/levelkit.js', ...jsFiles('lib')]
  const imported = packagesImportedBy(runtime)
  // abstract-level calls require('events') for its EventEmitter: a Node
  // built-in, which bundlers for browsers find only as this package.
  t.ok(packagesImportedBy(['node_modules/abstract-level/abstract-level.js']).has('events'), 'abstract-level requires events')
  imported.add('events')
  t.same(Object.keys(rootPackage.dependencies).sort(), [...imported].sort(), 'dependencies = the packages lib/, index.js, browser.js, chat.js and bin/ import (+ events)')
  t.end()
})

test('packaging: tests and benchmarks stay on their side of the boundaries', t => {
  const testImports = packagesImportedBy(jsFiles('test'))
  t.notOk(testImports.has('levelkit-bench') || testImports.has('levelkit-workshop'), 'test/ imports neither package')
  const relative = (/** @type {string[]} */ files, /** @type {RegExp} */ target) => files.filter(file =>
    specifiers(file).some(s => s.startsWith('.') && target.test(join(file, '..', s))))
  t.same(relative(jsFiles('test'), /^(bench|workshop)\//), [], 'no test/ file imports bench/ or workshop/ by path')
  t.same(relative(jsFiles('bench'), /^workshop\//), [], 'no bench/ file imports workshop/')
  t.same(relative([...jsFiles('workshop/lib'), ...jsFiles('workshop/exercises')], /^(lib|bench|index\.js|chat\.js)/), [], 'the workshop imports the library as levelkit, never by path')
  t.end()
})

test('packaging: the workshop tarball installs next to the library tarball and runs outside the repository', async t => {
  const files = await packList(t, ['--workspace', 'workshop'])
  t.ok(['bin/levelkit-workshop.js', 'lib/cli.js', 'exercises/01-hello_level/verify.js', 'README.md', 'LICENSE'].every(f => files.includes(f)), 'bin, lib, exercises, README and LICENSE')
  t.same(files.filter(f => f.startsWith('test/')), [], 'no tests or wrong-solution fixtures')

  const dir = mkdtempSync(join(tmpdir(), 'levelkit-packaging-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const packed = await run(npm, ['pack', '--ignore-scripts', '--pack-destination', dir, '--workspace', 'workshop', '--include-workspace-root'])
  t.is(packed.code, 0, 'npm pack the library and the workshop')
  const tarballs = readdirSync(dir).filter(f => f.endsWith('.tgz')).sort()
  const workshopVersion = JSON.parse(readFileSync(join(root, 'workshop', 'package.json'), 'utf8')).version
  t.same(tarballs, [`levelkit-${rootPackage.version}.tgz`, `levelkit-workshop-${workshopVersion}.tgz`], 'two tarballs')

  const project = join(dir, 'project')
  mkdirSync(project)
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'learner', private: true, allowScripts: { 'classic-level': true } }))
  // The dependencies come from npm's cache, filled by the repository's own install.
  const installed = await run(npm, ['install', '--prefer-offline', '--no-audit', '--no-fund', ...tarballs.map(f => join(dir, f))], { cwd: project })
  t.is(installed.code, 0, 'npm install of both tarballs')
  if (installed.code !== 0) return t.comment(installed.stderr)

  const env = { XDG_CONFIG_HOME: join(dir, 'config'), NO_COLOR: '1' }
  const bin = join(project, 'node_modules', '.bin', 'levelkit-workshop')
  const list = await run(bin, ['list'], { cwd: project, env })
  t.is(list.code, 0, 'levelkit-workshop list')
  t.match(list.stdout, /1\. Hello, Level/)

  // A learner's folder without node_modules: levelkit and classic-level
  // come from the workshop's dependencies (its resolve hook).
  const learner = join(dir, 'learner')
  mkdirSync(learner)
  for (const [n, id] of [[2, '02-open_and_close'], [5, '05-key_design']]) {
    copyFileSync(join(project, 'node_modules', 'levelkit-workshop', 'exercises', id, 'solution.js'), join(learner, `${id}.js`))
    const verify = await run(bin, ['verify', '--exercise', String(n), `${id}.js`], { cwd: learner, env })
    t.is(verify.code, 0, `verify ${id}.js from a folder without node_modules`)
    if (verify.code !== 0) t.comment(verify.stdout + verify.stderr)
  }
})

test('packaging: in this repository, npx levelkit-workshop runs the workshop workspace', async t => {
  const config = mkdtempSync(join(tmpdir(), 'levelkit-packaging-config-'))
  t.teardown(() => rmSync(config, { recursive: true, force: true }))
  const list = await run(npm, ['exec', '--', 'levelkit-workshop', 'list', '--json'], { cwd: join(root, 'examples'), env: { XDG_CONFIG_HOME: config } })
  t.is(list.code, 0, 'npx levelkit-workshop list, from a folder of the clone')
  t.ok(list.code === 0 && JSON.parse(list.stdout).exercises.length > 0, 'lists the exercises')
})
