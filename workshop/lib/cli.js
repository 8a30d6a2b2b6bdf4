// The levelkit-workshop command line: parses arguments and dispatches to one
// small function per command. Returns an exit code (0 ok, 1 verify failed,
// 2 usage error) instead of exiting, so it can be tested in-process too.
import { parseArgs } from 'node:util'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { listExercises, findExercise } from './exercises.js'
import { readProgress, updateProgress, resetProgress, progressFile } from './progress.js'
import { verifyFile, runFile, defaultTimeout } from './harness.js'
import { colours, formatVerify, show, indent } from './report.js'
import { renderMarkdown } from './markdown.js'
import { NAME, invocation, withCommand } from './invocation.js'

/** @param {string} command how the learner runs the workshop, e.g. `npx levelkit-workshop` */
export const help = (command) => `${NAME}: learn data modelling on Level, verified for real.

Usage: ${command} [command] [options]

Commands:
  (none)            the menu in a terminal; a plain list otherwise
  list              list the exercises (✓ done, » selected)
  select <n|name>   select an exercise and print its problem
  print [n|name]    print the selected (or given) exercise's problem
  run <file>        run your solution on a fresh database and show what it did
  verify <file>     check your solution; on success mark the exercise done
  next              select the next exercise you have not done
  current           show the selected exercise
  completed         list the exercises you have done
  reset             forget all progress
  help              this text

Options:
  --json            machine-readable output (one JSON document on stdout)
  --seed <n>        replay a run or verify with this seed (printed by verify)
  --exercise <n>    run/verify against this exercise instead of the selected one
  --timeout <ms>    kill a solution that runs longer (default ${defaultTimeout})

Progress is kept in $XDG_CONFIG_HOME/${NAME}/progress.json (default ~/.config).
Exit status: 0 ok, 1 verify failed, 2 usage error.`

class UsageError extends Error {
  code = 'WORKSHOP_USAGE'
}

/**
 * @typedef {object} IO
 * @property {NodeJS.WriteStream | any} stdout
 * @property {NodeJS.WriteStream | any} stderr
 * @property {{ isTTY?: boolean }} stdin
 */

/** @typedef {ReturnType<typeof parse>} Options */

/**
 * What every command gets: the parsed options (json as wantJson), the
 * streams, the colours, how to print, and how the learner started us (the
 * command they run the workshop with, the folder their paths are from).
 * @typedef {Omit<Options, 'json'> & {
 *   invocation: import('./invocation.js').Invocation,
 *   wantJson: boolean,
 *   io: IO,
 *   c: ReturnType<typeof colours>,
 *   out: (text: string) => void,
 *   emit: (value: any) => void
 * }} Context
 */

/**
 * @param {string[]} argv
 * @param {IO} [io]
 * @returns {Promise<number>}
 */
export async function main (argv, io = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin }, started = invocation()) {
  const c = colours(io.stdout)
  let options
  try {
    options = parse(argv)
  } catch (err) {
    return usage(io, withCommand(/** @type {Error} */ (err).message, started.command))
  }
  const write = (/** @type {string} */ text) => io.stdout.write(text.endsWith('\n') ? text : text + '\n')
  // Texts say `levelkit-workshop ...`: shown as the learner runs it.
  const out = (/** @type {string} */ text) => write(withCommand(text, started.command))
  const emit = (/** @type {any} */ value) => write(JSON.stringify(value, jsonReplacer, 2))
  const { json: wantJson, ...rest } = options
  const ctx = { ...rest, invocation: started, wantJson, io, c, out, emit }
  try {
    const command = commands[options.command]
    if (!command) throw new UsageError(`Unknown command: ${options.command}. Run \`${NAME} help\`.`)
    return await command(ctx)
  } catch (err) {
    if (err && /** @type {any} */ (err).code === 'WORKSHOP_USAGE') return usage(io, withCommand(/** @type {Error} */ (err).message, started.command), options.json)
    throw err
  }
}

/** @param {string[]} argv */
function parse (argv) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      json: { type: 'boolean', default: false },
      seed: { type: 'string' },
      exercise: { type: 'string' },
      timeout: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false }
    }
  })
  const seed = values.seed === undefined ? undefined : Number(values.seed)
  if (seed !== undefined && !(Number.isSafeInteger(seed) && seed > 0)) throw new Error('--seed must be a positive integer')
  const timeout = values.timeout === undefined ? defaultTimeout : Number(values.timeout)
  if (!(Number.isSafeInteger(timeout) && timeout > 0)) throw new Error('--timeout must be a positive number of milliseconds')
  const command = values.help ? 'help' : (positionals[0] || 'menu')
  return { command, args: positionals.slice(1), json: values.json, seed, timeout, exerciseOption: values.exercise }
}

/** @param {IO} io @param {string} message */
function usage (io, message, asJson = false) {
  if (asJson) io.stdout.write(JSON.stringify({ error: message }) + '\n')
  io.stderr.write(`${NAME}: ${message}\n`)
  return 2
}

// Uint8Arrays and undefined are shown the way verify shows them.
/** @param {string} key @param {any} value */
function jsonReplacer (key, value) {
  if (value === undefined) return '[undefined]'
  if (value instanceof Uint8Array) return `[bytes ${Buffer.from(value).toString('hex')}]`
  return value
}

/** @param {string} query */
function requireExercise (query) {
  const exercise = findExercise(query)
  if (!exercise) throw new UsageError(`Unknown exercise: ${JSON.stringify(String(query))}. Run \`${NAME} list\` to see them.`)
  return exercise
}

/** @param {Context} ctx */
function currentExercise (ctx) {
  if (ctx.exerciseOption !== undefined) return requireExercise(ctx.exerciseOption)
  const { current } = readProgress()
  const exercise = current && findExercise(current)
  if (!exercise) throw new UsageError(`No exercise selected. Run \`${NAME} select 1\` (or \`${NAME} list\`).`)
  return exercise
}

/**
 * @param {import('./exercises.js').Exercise} exercise
 * @param {import('./progress.js').Progress} progress
 */
function describe (exercise, progress) {
  return {
    number: exercise.number,
    id: exercise.id,
    title: exercise.title,
    completed: progress.completed.includes(exercise.id),
    current: progress.current === exercise.id
  }
}

/**
 * @param {import('./progress.js').Progress} progress
 * @param {ReturnType<typeof colours>} c
 */
export function listLines (progress, c) {
  return listExercises().map((exercise) => {
    const done = progress.completed.includes(exercise.id)
    const mark = progress.current === exercise.id ? '»' : ' '
    const n = String(exercise.number).padStart(2, ' ')
    return `${mark} ${n}. ${exercise.title} ${c.dim(`(${exercise.id})`)}${done ? ' ' + c.green('✓') : ''}`
  })
}

/** @param {Context} ctx @param {import('./exercises.js').Exercise} exercise */
async function printProblem (ctx, exercise) {
  const text = readFileSync(exercise.problemFile, 'utf8')
  const total = listExercises().length
  ctx.out(ctx.c.dim(`Exercise ${exercise.number} of ${total}: ${exercise.id}`))
  // Before rendering: a terminal shows `code` without its backticks.
  ctx.out(await renderMarkdown(withCommand(text, ctx.invocation.command), { color: ctx.c.enabled, width: Math.min(100, ctx.io.stdout.columns || 80) }))
  ctx.out(ctx.c.dim(`Run your solution with \`${NAME} run <file>\`, check it with \`${NAME} verify <file>\`.`))
}

/** @param {Context} ctx @param {import('./exercises.js').Exercise} exercise */
async function select (ctx, exercise) {
  updateProgress(p => { p.current = exercise.id })
  if (ctx.wantJson) return ctx.emit({ selected: describe(exercise, readProgress()), problem: readFileSync(exercise.problemFile, 'utf8') })
  await printProblem(ctx, exercise)
}

/** @type {Record<string, (ctx: Context) => Promise<number>>} */
const commands = {
  async menu (ctx) {
    if (ctx.io.stdin.isTTY && ctx.io.stdout.isTTY && !ctx.wantJson) {
      // Imported lazily: @clack/prompts is only needed in a terminal.
      const { runMenu } = await import('./menu.js')
      return runMenu(ctx, { select, help: () => ctx.out(help(ctx.invocation.command)) })
    }
    if (ctx.wantJson) return commands.list(ctx)
    ctx.out(`${NAME}: not a terminal, so no menu. The exercises:\n`)
    ctx.out(listLines(readProgress(), ctx.c).join('\n'))
    ctx.out(`\nSelect one with \`${NAME} select <n>\`; \`${NAME} help\` lists the commands.`)
    return 0
  },

  async list (ctx) {
    const progress = readProgress()
    if (ctx.wantJson) ctx.emit({ exercises: listExercises().map(e => describe(e, progress)) })
    else ctx.out(listLines(progress, ctx.c).join('\n'))
    return 0
  },

  async select (ctx) {
    if (!ctx.args[0]) throw new UsageError(`select needs an exercise number or name, e.g. \`${NAME} select 1\``)
    await select(ctx, requireExercise(ctx.args.join(' ')))
    return 0
  },

  async print (ctx) {
    const exercise = ctx.args[0] ? requireExercise(ctx.args.join(' ')) : currentExercise(ctx)
    if (ctx.wantJson) ctx.emit({ ...describe(exercise, readProgress()), problem: readFileSync(exercise.problemFile, 'utf8') })
    else await printProblem(ctx, exercise)
    return 0
  },

  async current (ctx) {
    const exercise = currentExercise(ctx)
    if (ctx.wantJson) ctx.emit({ current: describe(exercise, readProgress()) })
    else ctx.out(`${exercise.number}. ${exercise.title} (${exercise.id})`)
    return 0
  },

  async next (ctx) {
    const progress = readProgress()
    const exercises = listExercises()
    const at = exercises.findIndex(e => e.id === progress.current)
    // The first exercise not done after the selected one, wrapping around.
    const order = [...exercises.slice(at + 1), ...exercises.slice(0, at + 1)]
    const next = order.find(e => !progress.completed.includes(e.id))
    if (!next) {
      if (ctx.wantJson) ctx.emit({ selected: null, allCompleted: true })
      else ctx.out(ctx.c.green('You have done every exercise. Well done!'))
      return 0
    }
    await select(ctx, next)
    return 0
  },

  async completed (ctx) {
    const progress = readProgress()
    const done = listExercises().filter(e => progress.completed.includes(e.id))
    if (ctx.wantJson) ctx.emit({ completed: done.map(e => describe(e, progress)), total: listExercises().length })
    else if (!done.length) ctx.out('No exercise completed yet.')
    else ctx.out(done.map(e => `${ctx.c.green('✓')} ${e.number}. ${e.title} (${e.id})`).join('\n'))
    return 0
  },

  async reset (ctx) {
    resetProgress()
    if (ctx.wantJson) ctx.emit({ reset: true, file: progressFile() })
    else ctx.out(`Progress reset (${progressFile()}).`)
    return 0
  },

  async help (ctx) {
    if (ctx.wantJson) ctx.emit({ usage: help(ctx.invocation.command) })
    else ctx.out(help(ctx.invocation.command))
    return 0
  },

  async run (ctx) {
    const { file, path } = requireFile(ctx, 'run')
    const exercise = currentExercise(ctx)
    const result = await runFile({ exercise, file: path, seed: ctx.seed, timeout: ctx.timeout })
    if (ctx.wantJson) {
      ctx.emit(result)
      return result.error ? 1 : 0
    }
    const { c } = ctx
    ctx.out(c.bold(`Running ${result.file}`) + c.dim(` (exercise ${exercise.number}: ${exercise.id}, seed ${result.seed}, ${result.ms} ms)`))
    if (result.output.trim()) ctx.out(c.dim('\nYour program printed:\n') + indent(result.output.trim(), 4))
    if (result.error) {
      ctx.out(c.red(`\nIt did not run to the end (${result.error.stage}):`) + '\n' + indent(result.error.message, 4))
      return 1
    }
    ctx.out(c.dim('\nWhat the verifier saw (results, database contents, counters; long lists cut; --json for all):\n') + indent(show(result.observation, { maxArrayLength: 12 }), 2))
    ctx.out(c.dim(`\nWhen it looks right: \`${NAME} verify ${file}\``))
    return 0
  },

  async verify (ctx) {
    const { file, path } = requireFile(ctx, 'verify')
    const exercise = currentExercise(ctx)
    const result = await verifyFile({ exercise, file: path, seed: ctx.seed, timeout: ctx.timeout })
    let progress = readProgress()
    if (result.passed) progress = updateProgress(p => { if (!p.completed.includes(exercise.id)) p.completed.push(exercise.id) })
    const left = listExercises().filter(e => !progress.completed.includes(e.id))
    if (ctx.wantJson) {
      ctx.emit({ ...result, remaining: left.map(e => e.id) })
      return result.passed ? 0 : 1
    }
    ctx.out(formatVerify(result, ctx.c))
    if (result.passed) {
      ctx.out('\n' + ctx.c.bold('The reference solution, for comparison:') + '\n')
      ctx.out(indent(readFileSync(exercise.solutionFile, 'utf8').trimEnd(), 2))
      ctx.out('\n' + (left.length
        ? `${left.length} exercise${left.length === 1 ? '' : 's'} left. Next: \`${NAME} next\`.`
        : ctx.c.green('You have done every exercise. Well done!')))
    } else {
      ctx.out(ctx.c.dim(`\nFix it and verify again; \`${NAME} run ${file}\` shows what your code did.`))
    }
    return result.passed ? 0 : 1
  }
}

/**
 * The learner's file: as typed (for the commands we print), and its path
 * from the folder they typed it in.
 * @param {Context} ctx @param {string} command
 */
function requireFile (ctx, command) {
  const file = ctx.args[0]
  if (!file) throw new UsageError(`${command} needs the file of your solution, e.g. \`${NAME} ${command} solution.js\``)
  return { file, path: resolve(ctx.invocation.cwd, file) }
}
