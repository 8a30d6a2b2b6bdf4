// Child process entry: runs one module (the learner's or the reference) through
// an exercise's exec() and sends the observation back over IPC. One module per
// process: a clean module cache, and a hang or crash cannot take the runner
// down with it (the parent kills us on timeout).
import { register } from 'node:module'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative, isAbsolute } from 'node:path'
import { pathToFileURL, fileURLToPath } from 'node:url'
import { createRandom, deriveSeed } from './random.js'
import { describeError } from './backends.js'

const [verifyFile, moduleFile, seedText] = process.argv.slice(2)

// Only a file outside this package needs the fallback resolution (and the
// hooks thread costs start-up time, which adds up over the test suite).
const packageRoot = fileURLToPath(new URL('../', import.meta.url))
const inside = relative(packageRoot, moduleFile)
if (inside.startsWith('..') || isAbsolute(inside)) register('./resolve-hook.js', import.meta.url)
const seed = Number(seedText)
/** @type {string[]} */
const tempDirs = []

/**
 * The child is always forked with an IPC channel, so process.send exists.
 * @param {any} message
 * @param {() => void} [then] once the message is out and the temp dirs gone
 */
function send (message, then = () => process.exit(0)) {
  // Exit as soon as the message is out: the learner may have left a database
  // or a timer open, and that must not turn into a timeout.
  /** @type {NonNullable<typeof process.send>} */ (process.send)(message, () => cleanup().finally(then))
}

/**
 * Where a syntax error is (the file, its line, a caret under the column) is
 * not in the error: Node prints it only when it reports the error itself, as
 * uncaught. So send the error, then leave it uncaught: the parent reads
 * Node's report on our stderr (see harness.js).
 * @param {SyntaxError} err
 */
function sendUncaught (err) {
  send({ error: { stage: 'load', ...describeError(err), nodeReport: true } }, () => setImmediate(() => { throw err }))
}

async function cleanup () {
  for (const dir of tempDirs) await rm(dir, { recursive: true, force: true }).catch(() => {})
}

async function main () {
  const verifier = await import(pathToFileURL(verifyFile).href)
  let mod
  try {
    mod = await import(pathToFileURL(moduleFile).href)
  } catch (err) {
    if (err instanceof SyntaxError) return sendUncaught(err)
    return send({ error: { stage: 'load', ...describeError(err), stack: err && /** @type {any} */ (err).stack } })
  }
  const missing = verifier.functions.filter((/** @type {string} */ name) => typeof mod[name] !== 'function')
  if (missing.length) {
    const message = `The module must export ${missing.map((/** @type {string} */ n) => `a function named ${n}`).join(', ')} (e.g. export async function ${missing[0]} (...) {})`
    return send({ error: { stage: 'exports', name: 'Error', message } })
  }
  const scenario = verifier.scenario(createRandom(deriveSeed(seed, 'scenario')))
  const context = {
    mod,
    moduleFile,
    scenario,
    seed,
    random: createRandom(deriveSeed(seed, 'exec')),
    async tempDir () {
      const dir = await mkdtemp(join(tmpdir(), 'levelkit-workshop-'))
      tempDirs.push(dir)
      return dir
    }
  }
  try {
    const observation = await verifier.exec(context)
    send({ observation })
  } catch (err) {
    send({ error: { stage: 'exec', ...describeError(err), stack: err && /** @type {any} */ (err).stack } })
  }
}

main().catch(err => send({ error: { stage: 'runner', ...describeError(err), stack: err && err.stack } }))
