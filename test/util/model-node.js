// The model property tests' tape side in Node: the environment variables
// every model test file reads, and one tape test per target that checks the
// property and prints a replay command on failure.
//   LEVELKIT_MODEL_SEED   the seed of a run (each target adds its offset)
//   LEVELKIT_MODEL_PATH   the counterexample path fast-check printed (replays only that)
//   LEVELKIT_MODEL_ONLY   run only the target of that name
//   LEVELKIT_MODEL_RUNS   the number of runs (each file scales it per target)
//   LEVELKIT_MODEL_TRACE  print each run's steps (commands) to stderr as they start

import { checkModel } from './model-run.js'
import { MAX_COMMANDS } from './model-commands.js'

const env = process.env
export const MODEL_SEED = env.LEVELKIT_MODEL_SEED === undefined ? (Date.now() ^ (Math.random() * 0x100000000)) | 0 : Number(env.LEVELKIT_MODEL_SEED)
export const MODEL_PATH = env.LEVELKIT_MODEL_PATH
export const MODEL_ONLY = env.LEVELKIT_MODEL_ONLY
/** @type {number | null} */
export const MODEL_RUNS = env.LEVELKIT_MODEL_RUNS === undefined ? null : Number(env.LEVELKIT_MODEL_RUNS)

/** Whether the target `name` is skipped (LEVELKIT_MODEL_ONLY names another). @param {string} name */
export const skipped = name => MODEL_ONLY !== undefined && MODEL_ONLY !== name

/**
 * Report a checkModel() result (or one the browser sent back) to tape.
 * @param {any} t
 * @param {{ name: string, file: string, seed: number }} target
 * @param {{ failed: boolean, numRuns: number, report: string, counterexamplePath: string | null, ms: number }} result
 */
export function reportModel (t, { name, file }, result) {
  if (result.failed) {
    t.fail(result.report)
    t.comment(`replay: LEVELKIT_MODEL_ONLY=${name} LEVELKIT_MODEL_SEED=${MODEL_SEED} LEVELKIT_MODEL_PATH=${result.counterexamplePath} npx tape ${file}`)
  } else {
    t.pass(`${result.numRuns} random runs of up to ${MAX_COMMANDS} commands agree with the reference model (${result.ms} ms)`)
  }
}

/**
 * A tape test checking the property on one target.
 * @param {typeof import('tape')} test
 * @param {{ name: string, title: string, file: string, numRuns: number, seedOffset: number, timeout?: number,
 *   makeTarget: () => Promise<import('./model-run.js').ModelTarget> }} options
 */
export function modelProperty (test, { name, title, file, numRuns, seedOffset, timeout, makeTarget }) {
  test(title, { skip: skipped(name) }, async t => {
    const seed = MODEL_SEED + seedOffset
    t.comment(`fast-check seed ${seed}, ${numRuns} runs (rerun with LEVELKIT_MODEL_SEED=${MODEL_SEED})`)
    const trace = env.LEVELKIT_MODEL_TRACE ? (/** @type {string} */ step) => console.error(`[${new Date().toISOString()}] ${name} ${step}`) : null
    const result = await checkModel(makeTarget, { numRuns, seed, path: MODEL_PATH, timeout, trace })
    reportModel(t, { name, file, seed }, result)
  })
}
