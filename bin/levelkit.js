#!/usr/bin/env node
import { parseArgs } from 'node:util'
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { open } from '../index.js'

const USAGE = `Usage: levelkit check <location> [--schema <file>] [--repair] [--json]

Checks the LevelDB database at <location> for dangling and missing index
entries, unique violations, one-sided relation edges, orphan children and
sequences behind the highest id. --repair fixes what can be fixed.

The schema file declares the models, as your application does:
  export default function (db) { db.collection('users', { ... }) }
Without --schema, ./levelkit.schema.js is used if it exists.

Exit status: 0 clean (or everything repaired), 1 problems left, 2 usage or open error.`

async function main (argv) {
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        schema: { type: 'string' },
        repair: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false }
      }
    })
  } catch (err) {
    return usage(err.message)
  }
  const { values, positionals } = parsed
  if (values.help) {
    console.log(USAGE)
    return 0
  }
  const [command, location, ...extra] = positionals
  if (command !== 'check' || !location || extra.length > 0) return usage(command ? `Unknown arguments: ${positionals.join(' ')}` : 'No command given')

  const schemaPath = values.schema ?? (existsSync('levelkit.schema.js') ? 'levelkit.schema.js' : undefined)
  if (!schemaPath) return usage('No schema: pass --schema <file> (a module whose default export declares the models on a db)')
  let declare
  try {
    const mod = await import(pathToFileURL(resolve(schemaPath)).href)
    declare = mod.default ?? mod.schema
  } catch (err) {
    return usage(`Could not load the schema ${schemaPath}: ${err.message}`)
  }
  if (typeof declare !== 'function') return usage(`The schema ${schemaPath} must export a function (db) => { declare models }`)
  if (!existsSync(location)) return usage(`No database at ${location}`)

  let db
  try {
    db = await open({ backend: 'leveldb', location, createIfMissing: false })
  } catch (err) {
    console.error(`levelkit: cannot open ${location}: ${err.message}`)
    return 2
  }
  try {
    await declare(db)
    const report = await db.check({ repair: values.repair })
    if (values.json) {
      console.log(JSON.stringify(report, null, 2))
    } else {
      for (const p of report.problems) {
        console.log(`${p.repaired ? 'repaired' : 'problem '}  ${p.type.padEnd(20)} ${p.namespace}  ${p.message}`)
      }
      const left = report.problems.length - report.repaired
      console.log(report.ok ? 'ok: no problems found' : `${report.problems.length} problem(s), ${report.repaired} repaired, ${left} left`)
    }
    return report.problems.length === report.repaired ? 0 : 1
  } finally {
    await db.close()
  }
}

function usage (message) {
  console.error(`levelkit: ${message}\n\n${USAGE}`)
  return 2
}

process.exitCode = await main(process.argv.slice(2))
