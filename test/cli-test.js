import test from 'tape'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { open, encodeTuple } from '../index.js'
import declare from './fixtures/cli-schema.js'
import { runScript } from './util/worker.js'

const bin = fileURLToPath(new URL('../bin/levelkit.js', import.meta.url))
const schema = fileURLToPath(new URL('./fixtures/cli-schema.js', import.meta.url))

/** @param {string[]} args */
const levelkit = args => runScript(bin, args)

test('levelkit check reports, repairs, and exits with a meaningful status', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-cli-'))
  try {
    const db = await open({ location: dir })
    declare(db)
    const users = db.level.sublevel('users', { keyEncoding: 'view', valueEncoding: 'utf8' })
    await users.put(encodeTuple(1), JSON.stringify({ id: 1, username: 'ann' })) // record without its unique entry or sequence
    await db.level.sublevel('members.fwd', { keyEncoding: 'view' }).put(encodeTuple([9, 1]), '')
    await db.close()

    const clean = await levelkit(['check', dir, '--schema', schema, '--json'])
    t.is(clean.code, 1, 'exit 1 when problems are found')
    const report = JSON.parse(clean.stdout)
    t.same(report.problems.map(p => p.type).sort(), ['dangling-edge', 'missing-index-entry', 'sequence-behind'])

    const repaired = await levelkit(['check', dir, '--schema', schema, '--repair'])
    t.is(repaired.code, 0, 'exit 0 once everything is repaired')
    t.match(repaired.stdout, /3 problem\(s\), 3 repaired, 0 left/)

    const again = await levelkit(['check', dir, '--schema', schema])
    t.is(again.code, 0)
    t.match(again.stdout, /ok: no problems found/)

    const missing = await levelkit(['check', join(dir, 'nope'), '--schema', schema])
    t.is(missing.code, 2, 'exit 2 for a missing database')
    const noSchema = await levelkit(['check', dir])
    t.is(noSchema.code, 2, 'exit 2 without a schema')
    t.match(noSchema.stderr, /--schema/)

    const held = await open({ location: dir })
    const locked = await levelkit(['check', dir, '--schema', schema])
    t.is(locked.code, 2, 'exit 2 when another process holds the database')
    t.match(locked.stderr, /in use by another process/)
    await held.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
