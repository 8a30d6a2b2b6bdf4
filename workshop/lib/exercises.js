// The exercise registry: every directory workshop/exercises/<nn>-<id>/ is an
// exercise, numbered and ordered by its <nn> prefix. Its title is the first
// heading of its problem.md, so listing needs no verifier import.
import { readdirSync, readFileSync, existsSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { validateVerifier } from './checks.js'

export const exercisesDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'exercises')

/**
 * @typedef {object} Exercise
 * @property {number} number 1-based position
 * @property {string} id e.g. 'hello_level'
 * @property {string} title
 * @property {string} dir
 * @property {string} problemFile
 * @property {string} solutionFile
 * @property {string} verifyFile
 */

/** @type {Exercise[] | null} */
let cache = null

/** @returns {Exercise[]} */
export function listExercises () {
  if (cache) return cache
  cache = readdirSync(exercisesDir, { withFileTypes: true })
    .filter(entry => entry.isDirectory() && /^\d+-[a-z0-9_]+$/.test(entry.name))
    .map(entry => {
      // The filter above matched this name.
      const [, nn, id] = /** @type {RegExpExecArray} */ (/^(\d+)-(.+)$/.exec(entry.name))
      const dir = join(exercisesDir, entry.name)
      const problemFile = join(dir, 'problem.md')
      const heading = existsSync(problemFile) ? /^#\s+(.+)$/m.exec(readFileSync(problemFile, 'utf8')) : null
      return {
        number: Number(nn),
        id,
        title: heading ? heading[1].trim() : id,
        dir,
        problemFile,
        solutionFile: join(dir, 'solution.js'),
        verifyFile: join(dir, 'verify.js')
      }
    })
    .sort((a, b) => a.number - b.number)
  return cache
}

/**
 * Find an exercise by number ("3"), id ("batch_atomic"), or title, loosely:
 * case, spaces, dashes and underscores do not matter.
 * @param {string | number} query
 * @returns {Exercise | undefined}
 */
export function findExercise (query) {
  const text = String(query).trim()
  const exercises = listExercises()
  if (/^\d+$/.test(text)) return exercises.find(e => e.number === Number(text))
  const norm = (/** @type {string} */ s) => s.toLowerCase().replace(/[\s_-]+/g, '')
  return exercises.find(e => norm(e.id) === norm(text) || norm(e.title) === norm(text) || norm(`${String(e.number).padStart(2, '0')}-${e.id}`) === norm(text))
}

/**
 * Import and validate an exercise's verifier.
 * @param {Exercise} exercise
 */
export async function loadVerifier (exercise) {
  const verifier = await import(pathToFileURL(exercise.verifyFile).href)
  validateVerifier(exercise.id, verifier)
  return verifier
}
