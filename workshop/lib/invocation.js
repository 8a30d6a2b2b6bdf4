// How the learner started the workshop, so that the commands it prints work
// where they typed theirs, and the paths they give are read from the folder
// they typed them in.
import { existsSync, realpathSync } from 'node:fs'
import { delimiter, dirname, join } from 'node:path'

export const NAME = 'levelkit-workshop'

/**
 * @typedef {object} Invocation
 * @property {string} command what to type to run the workshop again, e.g. `npx levelkit-workshop`
 * @property {string} cwd the folder the learner's paths are relative to
 */

/**
 * @param {{ env?: NodeJS.ProcessEnv, cwd?: string, script?: string }} [started]
 *   the environment, working directory and script path of this process
 * @returns {Invocation}
 */
export function invocation ({ env = process.env, cwd = process.cwd(), script = process.argv[1] } = {}) {
  // npm describes the script it runs in these variables, and every process
  // below it inherits them: they are about us only if that script is ours.
  const byNpm = (env.npm_lifecycle_script || '').includes(NAME)
  if (byNpm && env.npm_command === 'exec') return { command: `npx ${NAME}`, cwd }
  if (byNpm && env.npm_lifecycle_event && env.npm_package_json && sameFile(dirname(env.npm_package_json), cwd)) {
    // `npm run` runs a script in its package's folder; INIT_CWD is the
    // folder the learner typed it in (and npm run works from there too).
    return { command: `npm run ${env.npm_lifecycle_event} --`, cwd: env.INIT_CWD || cwd }
  }
  return { command: onPath(env.PATH, script) ? NAME : `npx ${NAME}`, cwd }
}

/**
 * Put the command the learner uses in texts written with `levelkit-workshop ...`
 * (problem texts, messages of other modules).
 * @param {string} text @param {string} command
 */
export function withCommand (text, command) {
  return command === NAME ? text : text.replaceAll('`' + NAME + ' ', '`' + command + ' ')
}

/** Is `script` what the learner's shell runs for levelkit-workshop? @param {string | undefined} PATH @param {string | undefined} script */
function onPath (PATH, script) {
  if (!PATH || !script) return false
  const first = PATH.split(delimiter).filter(Boolean).map(dir => join(dir, NAME)).find(file => existsSync(file))
  return first !== undefined && sameFile(first, script)
}

/** @param {string} a @param {string} b */
function sameFile (a, b) {
  const real = (/** @type {string} */ path) => { try { return realpathSync(path) } catch { return null } }
  const ra = real(a)
  return ra !== null && ra === real(b)
}
