// Progress store: which exercise is selected and which are done, in
// $XDG_CONFIG_HOME/levelkit-workshop/progress.json (or ~/.config/...).
// Versioned, so a later format can migrate rather than misread it.
import { readFileSync, writeFileSync, mkdirSync, renameSync, rmSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { homedir } from 'node:os'

export const PROGRESS_VERSION = 1

/** @param {NodeJS.ProcessEnv} [env] */
export function progressFile (env = process.env) {
  const base = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.trim() ? env.XDG_CONFIG_HOME : join(env.HOME || homedir(), '.config')
  return join(base, 'levelkit-workshop', 'progress.json')
}

/**
 * @typedef {{ version: number, current: string | null, completed: string[] }} Progress
 */

/** @returns {Progress} */
function empty () {
  return { version: PROGRESS_VERSION, current: null, completed: [] }
}

/**
 * @param {string} [file]
 * @returns {Progress}
 */
export function readProgress (file = progressFile()) {
  let text
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    if (/** @type {NodeJS.ErrnoException} */ (err).code === 'ENOENT') return empty()
    throw err
  }
  let data
  try {
    data = JSON.parse(text)
  } catch {
    throw usageError(`The progress file ${file} is not valid JSON: fix it or run \`levelkit-workshop reset\``)
  }
  if (data == null || typeof data !== 'object' || data.version !== PROGRESS_VERSION) {
    throw usageError(`The progress file ${file} has an unknown format (version ${data && data.version}); this is version ${PROGRESS_VERSION}. Run \`levelkit-workshop reset\` to start over`)
  }
  return {
    version: PROGRESS_VERSION,
    current: typeof data.current === 'string' ? data.current : null,
    completed: Array.isArray(data.completed) ? data.completed.filter((/** @type {unknown} */ x) => typeof x === 'string') : []
  }
}

/**
 * Write atomically (temp file + rename), so an interrupted write never
 * leaves a half file.
 * @param {Progress} progress
 * @param {string} [file]
 */
export function writeProgress (progress, file = progressFile()) {
  mkdirSync(dirname(file), { recursive: true })
  const tmp = `${file}.${process.pid}.tmp`
  writeFileSync(tmp, JSON.stringify({ ...progress, version: PROGRESS_VERSION }, null, 2) + '\n')
  renameSync(tmp, file)
}

/** @param {(p: Progress) => void} change @param {string} [file] */
export function updateProgress (change, file = progressFile()) {
  const progress = readProgress(file)
  change(progress)
  writeProgress(progress, file)
  return progress
}

/** @param {string} [file] */
export function resetProgress (file = progressFile()) {
  rmSync(file, { force: true })
}

/** @param {string} message */
function usageError (message) {
  const err = /** @type {Error & { code?: string }} */ (new Error(message))
  err.code = 'WORKSHOP_USAGE'
  return err
}
