// Runs a module in a child process and turns two runs (learner, reference) on
// identically seeded fresh databases into named check results.
import { fork } from 'node:child_process'
import { resolve as resolvePath } from 'node:path'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { loadVerifier } from './exercises.js'
import { freshSeed, createRandom, deriveSeed } from './random.js'

const childFile = fileURLToPath(new URL('./child.js', import.meta.url))

export const defaultTimeout = 10000
// The reference solution's own limit, whatever --timeout the learner gave.
const referenceTimeout = 60000

/**
 * Run one module through the exercise's exec() in a child process.
 * @param {{ exercise: import('./exercises.js').Exercise, file: string, seed: number, timeout?: number }} options
 * @returns {Promise<{ observation?: any, error?: any, output: string, ms: number }>}
 */
export function runModule ({ exercise, file, seed, timeout = defaultTimeout }) {
  const started = Date.now()
  return new Promise((resolve) => {
    // Typed by the stdio below: stdout and stderr are pipes, never null.
    const child = /** @type {import('node:child_process').ChildProcessByStdio<null, import('node:stream').Readable, import('node:stream').Readable>} */ (fork(childFile, [exercise.verifyFile, resolvePath(file), String(seed)], {
      // 'advanced' keeps undefined, Uint8Array, Map... intact across IPC.
      serialization: 'advanced',
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      // The learner's own warnings are theirs to see; only the experimental
      // notice for module hooks (used to resolve their imports) is noise.
      execArgv: ['--disable-warning=ExperimentalWarning'],
      env: { ...process.env, NODE_OPTIONS: '' }
    }))
    let output = ''
    /** @type {any} the child's one message: { observation } or { error } */
    let message = null
    let settled = false
    child.stdout.on('data', (chunk) => { output += chunk })
    child.stderr.on('data', (chunk) => { output += chunk })
    child.on('message', (m) => { message = m })
    const timer = setTimeout(() => {
      finish({ error: { stage: 'timeout', name: 'Timeout', message: `Did not finish within ${timeout} ms (killed). Did a promise never settle, or a function never return?` } })
      child.kill('SIGKILL')
    }, timeout)
    /** @param {{ observation?: any, error?: any }} result */
    function finish (result) {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve({ ...result, output, ms: Date.now() - started })
    }
    child.on('error', (err) => finish({ error: { stage: 'runner', name: err.name, message: err.message } }))
    child.on('exit', (code, signal) => {
      if (message && message.error && message.error.nodeReport) {
        // Node's report of the syntax error: the child's last words on stderr.
        const read = () => {
          const located = locateSyntaxError(message.error, output)
          output = located.output
          finish({ error: located.error })
        }
        if (child.stderr.closed) read()
        else child.stderr.once('close', read)
        return
      }
      if (message) return finish(message)
      const tail = output.trim().split('\n').slice(-12).join('\n')
      finish({ error: { stage: 'crash', name: 'Crash', message: `The process exited (${signal || 'code ' + code}) before finishing${tail ? ':\n' + tail : ''}` } })
    })
  })
}

// What Node prints for an uncaught syntax error (the child leaves one
// uncaught for this): where, the line, carets under the token, the error,
// its stack, Node's version.
//   file:///path/to/hello.js:3
//     return x +* 2
//               ^
//
//   SyntaxError: Unexpected token '*'
//       at compileSourceTextModule (node:internal/modules/esm/utils:346:16)
//
//   Node.js v20.20.2
const NODE_SYNTAX_REPORT = /^(\S+):(\d+)\n(.*)\n( *)(\^+)\n\n(SyntaxError: .*)\n(?:\s+at .*\n)*\n?(?:Node\.js v\S+\n?)?/m

/**
 * Turn Node's report of a syntax error, found in the child's output, into
 * the error's message: file:line:column, the error, the line and the carets.
 * Without a report the output keeps whatever Node printed.
 * @param {any} error the child's { stage, name, message }
 * @param {string} output
 */
function locateSyntaxError (error, output) {
  const { nodeReport, ...rest } = error
  const match = NODE_SYNTAX_REPORT.exec(output)
  if (!match) return { error: rest, output }
  const [report, where, line, source, pad, carets, text] = match
  const file = where.startsWith('file:') ? fileURLToPath(where) : where
  const location = { file, line: Number(line), column: pad.length + 1 }
  return {
    error: { ...rest, location, message: `${file}:${line}:${location.column}\n${text}\n\n${source}\n${pad}${carets}` },
    output: output.replace(report, '')
  }
}

/**
 * Verify a learner's file against an exercise: run it and the reference
 * solution in two child processes on identically seeded fresh databases,
 * then evaluate every named check.
 * `referenceCache` (a Map) lets many verifies with one seed share the
 * reference run (the tests verify dozens of wrong solutions per exercise).
 * @param {{ exercise: import('./exercises.js').Exercise, file: string, seed?: number, timeout?: number, referenceCache?: Map<string, any> }} options
 */
export async function verifyFile ({ exercise, file, seed = freshSeed(), timeout = defaultTimeout, referenceCache }) {
  const path = resolvePath(file)
  if (!existsSync(path)) {
    // A usage error, not a failed verify.
    const err = /** @type {Error & { code?: string }} */ (new Error(`No such file: ${file}`))
    err.code = 'WORKSHOP_USAGE'
    throw err
  }
  const verifier = await loadVerifier(exercise)
  const cacheKey = `${exercise.id}:${seed}`
  let referenceRun = referenceCache && referenceCache.get(cacheKey)
  if (!referenceRun) {
    // The learner's --timeout is for their code: the reference, known to
    // end, gets as long as a loaded machine needs.
    referenceRun = runModule({ exercise, file: exercise.solutionFile, seed, timeout: Math.max(timeout, referenceTimeout) })
    if (referenceCache) referenceCache.set(cacheKey, referenceRun)
  }
  const [learner, reference] = await Promise.all([
    runModule({ exercise, file: path, seed, timeout }),
    referenceRun
  ])
  if (reference.error) {
    throw new Error(`The reference solution of ${exercise.id} failed (a bug in the workshop, seed ${seed}): ${reference.error.message}\n${reference.output}`)
  }
  const scenario = scenarioFor(verifier, seed)
  /** @type {Array<import('./checks.js').CheckResult & { id: string, kind: string, title: string, skipped?: boolean }>} */
  const checks = verifier.checks.map((/** @type {any} */ check) => {
    const base = { id: check.id, kind: check.kind, title: check.title }
    if (learner.error) return { ...base, ok: false, skipped: true, message: 'not checked: your module did not run to the end (see above)' }
    try {
      const result = check.check({ learner: learner.observation, reference: reference.observation, scenario }) || { ok: true }
      return { ...base, ...result }
    } catch (err) {
      return { ...base, ok: false, message: `could not evaluate this check on your results: ${/** @type {any} */ (err).message}` }
    }
  })
  return {
    exercise: exercise.id,
    number: exercise.number,
    file: path,
    seed,
    passed: !learner.error && checks.every(c => c.ok),
    error: learner.error || null,
    output: learner.output,
    checks
  }
}

/**
 * Run only the learner's module and return what exec() observed, for `run`.
 * @param {{ exercise: import('./exercises.js').Exercise, file: string, seed?: number, timeout?: number }} options
 */
export async function runFile ({ exercise, file, seed = freshSeed(), timeout = defaultTimeout }) {
  const path = resolvePath(file)
  if (!existsSync(path)) {
    const err = /** @type {Error & { code?: string }} */ (new Error(`No such file: ${file}`))
    err.code = 'WORKSHOP_USAGE'
    throw err
  }
  await loadVerifier(exercise)
  const result = await runModule({ exercise, file: path, seed, timeout })
  return { exercise: exercise.id, number: exercise.number, file: path, seed, ...result }
}

// The same derivation as the child's, so checks see the scenario both ran on.
/** @param {any} verifier @param {number} seed */
function scenarioFor (verifier, seed) {
  return verifier.scenario(createRandom(deriveSeed(seed, 'scenario')))
}
