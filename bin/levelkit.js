#!/usr/bin/env node
import { parseArgs } from 'node:util'
import { existsSync } from 'node:fs'
import { register } from 'node:module'
import { resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import * as levelkit from '../index.js'
import * as chat from '../chat.js'

const CHAT_SCHEMA = fileURLToPath(new URL('../lib/chat/schema.js', import.meta.url))

const USAGE = `Usage: levelkit check <location> [--schema <file> | --chat] [--repair] [--json]

Checks the LevelDB database at <location> for dangling and missing index
entries, unique violations, one-sided relation edges, orphan children and
sequences behind the highest id. --repair fixes what can be fixed.

The schema file declares the models, as your application does:
  export default function (db, levelkit) { db.collection('users', { ... }) }
It may import 'levelkit' and 'levelkit/chat' (this levelkit's, wherever the
file is), or use the second argument: levelkit's exports and ChatStore's.
If it returns an object with a check() method (a ChatStore does), that
check's problems are reported too.
Without --schema, ./levelkit.schema.js is used if it exists.

--chat checks a ChatStore database (such as the chat demo's, in
./data/chat-demo): its models, and ChatStore's own check. A database that is
not a ChatStore's is refused.

Exit status: 0 clean (or everything repaired), 1 problems left, 2 usage
error, or a database or schema that cannot be used.`

/** A failure that ends the run with exit status 2 and this message. */
class Refusal extends Error {}

/** @param {string[]} argv @returns {Promise<number>} the exit status */
async function main (argv) {
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        schema: { type: 'string' },
        chat: { type: 'boolean', default: false },
        repair: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false }
      }
    })
  } catch (err) {
    return usage(/** @type {Error} */ (err).message)
  }
  const { values, positionals } = parsed
  if (values.help) {
    console.log(USAGE)
    return 0
  }
  const [command, location, ...extra] = positionals
  if (command === undefined) return usage('No command given')
  if (command !== 'check') return usage(`Unknown command ${JSON.stringify(command)}: the command is check`)
  if (location === undefined) return usage('levelkit check needs the location of a LevelDB database (a directory), as in: levelkit check ./data --schema ./schema.js')
  if (extra.length > 0) return usage(`Unexpected argument(s) after the location: ${extra.join(' ')}`)
  if (values.chat && values.schema !== undefined) return usage('Pass either --schema <file> or --chat, not both')

  const schemaPath = values.chat ? CHAT_SCHEMA : values.schema ?? (existsSync('levelkit.schema.js') ? 'levelkit.schema.js' : undefined)
  if (!schemaPath) return usage('No schema: pass --schema <file> (a module whose default export declares the models on a db), or --chat for a ChatStore database')
  const declare = await loadSchema(schemaPath)
  if (!existsSync(location)) throw new Refusal(`No database at ${location}`)

  let db
  try {
    db = await levelkit.open({ backend: 'leveldb', location, createIfMissing: false })
  } catch (err) {
    throw new Refusal(`cannot open ${location}: ${/** @type {Error} */ (err).message}`)
  }
  try {
    let model
    try {
      model = await declare(db, { ...levelkit, ...chat })
    } catch (err) {
      throw new Refusal(values.chat ? `${location} was not checked as a ChatStore database: ${describe(err)}` : `The schema ${schemaPath} failed: ${describe(err)}`)
    }
    let report
    try {
      report = await checkAll(db, model, values.repair)
    } catch (err) {
      throw new Refusal(`The check of ${location} failed: ${describe(err)}`)
    }
    if (values.json) {
      console.log(JSON.stringify(report, null, 2))
    } else {
      for (const p of report.problems) {
        console.log(`${p.repaired ? 'repaired' : 'problem '}  ${p.type.padEnd(20)} ${p.namespace ?? ''}  ${p.message}`)
      }
      const left = report.problems.length - report.repaired
      console.log(report.problems.length === 0 ? 'ok: no problems found' : `${report.problems.length} problem(s), ${report.repaired} repaired, ${left} left`)
      const unchecked = report.unchecked ?? []
      if (unchecked.length > 0) console.log(`not checked, being built or cleared: ${unchecked.map((/** @type {any} */ u) => `${u.collection}.${u.index} (${u.state})`).join(', ')}; they build at their collection's first use, or with db.buildIndexes()`)
    }
    return report.problems.length === report.repaired ? 0 : 1
  } finally {
    await db.close()
  }
}

/**
 * The schema's declaring function. A schema outside this package cannot
 * resolve 'levelkit' by itself (it is not installed there): a resolve hook
 * falls back to this package for it (bin/schema-resolve-hook.js).
 * @param {string} path
 */
async function loadSchema (path) {
  register('./schema-resolve-hook.js', import.meta.url)
  let mod
  try {
    mod = await import(pathToFileURL(resolve(path)).href)
  } catch (err) {
    throw new Refusal(`Could not load the schema ${path}: ${/** @type {Error} */ (err).message}`)
  }
  const declare = mod.default ?? mod.schema
  if (typeof declare !== 'function') throw new Refusal(`The schema ${path} must export a function (db, levelkit) => { declare models }`)
  return declare
}

/**
 * db.check(), and the model's own check if the schema returned one with a
 * check() method. That check runs db.check() itself, so after a repair it
 * reports what is left, together with the model's invariants.
 * @param {any} db @param {any} model @param {boolean} repair
 * @returns {Promise<{ ok: boolean, problems: any[], repaired: number }>}
 */
async function checkAll (db, model, repair) {
  if (!model || typeof model.check !== 'function') return db.check({ repair })
  const repaired = repair ? (await db.check({ repair: true })).problems.filter((/** @type {any} */ p) => p.repaired) : []
  const left = (await model.check()).problems.map((/** @type {any} */ p) => ({ ...p, repaired: false }))
  const problems = [...repaired, ...left]
  return { ok: problems.length === 0, problems, repaired: repaired.length }
}

/** An error's code (if any) and message, for one line. @param {unknown} err */
function describe (err) {
  const { code, message } = /** @type {any} */ (err)
  return code ? `${code}: ${message}` : String(message ?? err)
}

/** @param {string} message */
function usage (message) {
  console.error(`levelkit: ${message}\n\n${USAGE}`)
  return 2
}

try {
  process.exitCode = await main(process.argv.slice(2))
} catch (err) {
  // A refusal is expected and says what to do; anything else is a bug here,
  // but still a failure to check, not a problem found.
  console.error(`levelkit: ${err instanceof Refusal ? err.message : describe(err)}`)
  process.exitCode = 2
}
