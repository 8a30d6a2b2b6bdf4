// The section transactions' timeline (LEVELKIT_PG_TRACE,
// lib/backends/postgres-trace.js) and the sections the write path counts in
// the lock's stats, which bench/pg-turns.js reads to split a turn of the
// serializable sequence lock into round trips and the process's own work.
import test from 'tape'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { open } from '../index.js'
import { postgresForTests } from './util/postgres.js'

const server = await postgresForTests(test)
const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const run = promisify(execFile)

/** @param {string} table */
const options = table => ({ backend: 'postgres', connectionString: server.connectionString, table, shared: true, locking: 'serializable', poolSize: 2 })

test('postgres trace: the write path counts the critical sections it runs in the section lock\'s stats', async t => {
  const db = await open(options(server.table()))
  try {
    const lock = /** @type {any} */ (db).level.sharedWriterLock()
    const items = db.collection('items')
    await items.insert({ n: 0 })
    const before = lock.stats.sections
    await Promise.all([1, 2, 3].map(n => items.insert({ n })))
    t.is(lock.stats.sections - before, 3, 'three inserts: three sections')
  } finally {
    await db.close()
  }
})

test('postgres trace: LEVELKIT_PG_TRACE writes each section transaction\'s events as the process exits, and bench/pg-turns.js splits them', async t => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'levelkit-trace-'))
  try {
    const prefix = path.join(dir, 'trace')
    const child = `
      import { open } from ${JSON.stringify(path.join(root, 'index.js'))}
      const db = await open(${JSON.stringify(options(server.table()))})
      const items = db.collection('items')
      await items.insert({ n: 0 })
      await Promise.all([1, 2, 3].map(n => items.insert({ n })))
      await db.close()
    `
    await run(process.execPath, ['--input-type=module', '-e', child], { env: { ...process.env, LEVELKIT_PG_TRACE: prefix } })
    const files = fs.readdirSync(dir)
    t.is(files.length, 1, 'one file, the process\'s')
    t.match(files[0], /^trace\.\d+\.json$/, 'named <prefix>.<pid>.json')
    const { events } = JSON.parse(fs.readFileSync(path.join(dir, files[0]), 'utf8'))
    const kinds = new Set(events.map((/** @type {any[]} */ e) => e[1]))
    for (const kind of ['open', 'sent', 'answered', 'ended', 'sections']) t.ok(kinds.has(kind), `it holds ${kind} events`)
    const sections = events.filter((/** @type {any[]} */ e) => e[1] === 'sections').reduce((/** @type {number} */ sum, /** @type {any[]} */ e) => sum + e[3], 0)
    t.ok(sections >= 4, `the sections its transactions ran add up to the inserts' at least (${sections}; the schema's own too)`)
    const { stdout } = await run(process.execPath, [path.join(root, 'bench', 'pg-turns.js'), path.join(dir, files[0])])
    t.match(stdout, /inserting transactions from 1 processes/, 'pg-turns reads it')
    t.match(stdout, /ms: held \(first answer to end\)\s+median\s+\d/, 'and tells the time held')
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
