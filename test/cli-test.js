import test from 'tape'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { open, encodeTuple } from '../index.js'
import { ChatStore } from '../chat.js'
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
    // Written through levelkit first, so its indexes are stored as ready:
    // then a record without its entry is damage, not an index to build.
    await declare(db).users.insert({ username: 'bob' })
    const users = db.level.sublevel('users', { keyEncoding: 'view', valueEncoding: 'utf8' })
    await users.put(encodeTuple(2), JSON.stringify({ id: 2, username: 'ann' })) // record without its unique entry, past the sequence
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

test('levelkit check names the indexes it left out because they are still to be built', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-cli-'))
  try {
    // Records written without levelkit's stored schema (as an earlier
    // levelkit would have): their indexes are built at first use.
    const db = await open({ location: dir })
    await db.level.sublevel('users', { keyEncoding: 'view', valueEncoding: 'utf8' }).put(encodeTuple(1), JSON.stringify({ id: 1, username: 'ann' }))
    await db.level.sublevel('users.seq', { keyEncoding: 'view', valueEncoding: 'utf8' }).put(encodeTuple('last'), '1')
    await db.close()
    const { code, stdout } = await levelkit(['check', dir, '--schema', schema])
    t.is(code, 0, 'exit 0: nothing wrong was found')
    t.match(stdout, /not checked, being built or cleared: users\.username \(building\)/, 'the index left out is named')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('levelkit check: every usage error names what is wrong and exits 2', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-cli-'))
  try {
    const cases = /** @type {Array<[string[], RegExp, string]>} */ ([
      [['check'], /check needs the location of a LevelDB database/, 'no location'],
      [[], /No command given/, 'no command'],
      [['verify', dir], /Unknown command "verify"/, 'an unknown command'],
      [['check', dir, 'extra'], /Unexpected argument\(s\) after the location: extra/, 'an argument too many'],
      [['check', dir, '--chat', '--schema', schema], /either --schema <file> or --chat/, '--chat and --schema'],
      [['check', dir, '--colour'], /Unknown option '--colour'/, 'an unknown option']
    ])
    for (const [args, message, what] of cases) {
      const result = await levelkit(args)
      t.is(result.code, 2, `${what}: exit 2`)
      t.match(result.stderr, message, `${what}: ${result.stderr.split('\n')[0]}`)
      t.doesNotMatch(result.stderr, /\n\s+at /, `${what}: no stack trace`)
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('levelkit check --chat checks a ChatStore database, with ChatStore\'s own check, and refuses another program\'s', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-cli-chat-'))
  try {
    const chatDir = join(dir, 'chat')
    let db = await open({ location: chatDir })
    const store = await ChatStore.open(db, { passwordCost: { scryptN: 1024 } })
    const ann = await store.createUser({ username: 'ann', password: 'pw' })
    const bob = await store.createUser({ username: 'bob', password: 'pw' })
    await store.createChat({ name: 'c', adminId: ann, userIds: [bob] })
    await db.close()

    const clean = await levelkit(['check', chatDir, '--chat'])
    t.is(clean.code, 0, `a clean ChatStore database: exit 0 ${clean.stderr}`)
    t.match(clean.stdout, /ok: no problems found/)

    // Damage only ChatStore's own check sees: a pair count without its chat.
    db = await open({ location: chatDir })
    await db.level.sublevel('pairs', { keyEncoding: 'view', valueEncoding: 'utf8' }).put(encodeTuple([1, 9]), '1')
    await db.close()
    const damaged = await levelkit(['check', chatDir, '--chat', '--json'])
    t.is(damaged.code, 1, 'exit 1 for a problem of the chat model')
    t.same(JSON.parse(damaged.stdout).problems.map((/** @type {any} */ p) => p.type), ['pair-count-mismatch'], 'found by ChatStore.check()')
    const repair = await levelkit(['check', chatDir, '--chat', '--repair'])
    t.is(repair.code, 1, '--repair cannot fix it: still exit 1')
    t.match(repair.stdout, /problem +pair-count-mismatch/)

    const quick = join(dir, 'quick')
    db = await open({ location: quick })
    declare(db)
    await db.collection('messages').insert({ text: 'not a chat message' })
    await db.close()
    const foreign = await levelkit(['check', quick, '--chat'])
    t.is(foreign.code, 2, 'another program\'s database: exit 2')
    t.match(foreign.stderr, /LEVELKIT_FOREIGN_DATA.*not a ChatStore's/, 'saying it is not a ChatStore\'s')
    t.doesNotMatch(foreign.stderr, /\n\s+at /, 'no stack trace')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('levelkit check: a schema outside the project imports levelkit, or takes it as an argument; a failing schema exits 2', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-cli-schema-'))
  try {
    const location = join(dir, 'db')
    const db = await open({ location })
    declare(db)
    await db.close()
    const write = (/** @type {string} */ name, /** @type {string} */ code) => {
      writeFileSync(join(dir, name), code)
      return join(dir, name)
    }
    const imports = write('imports.mjs', `import { codes } from 'levelkit'
import { ChatStore } from 'levelkit/chat'
if (codes.FOREIGN_DATA !== 'LEVELKIT_FOREIGN_DATA' || typeof ChatStore !== 'function') throw new Error('not levelkit')
export default function (db) {
  const users = db.collection('users', { indexes: { username: { unique: true, key: u => u.username } } })
  db.relation('members', { from: db.collection('chats'), to: users })
}
`)
    const argument = write('argument.mjs', `export default function (db, levelkit) {
  if (typeof levelkit.open !== 'function' || typeof levelkit.ChatStore !== 'function') throw new Error('no levelkit argument')
  const users = db.collection('users', { indexes: { username: { unique: true, key: u => u.username } } })
  db.relation('members', { from: db.collection('chats'), to: users })
}
`)
    for (const file of [imports, argument]) {
      const result = await levelkit(['check', location, '--schema', file])
      t.is(result.code, 0, `${file}: exit 0 ${result.stderr}`)
      t.match(result.stdout, /ok: no problems found/)
    }
    const throws = await levelkit(['check', location, '--schema', write('throws.mjs', "export default function () { throw new Error('no such model') }\n")])
    t.is(throws.code, 2, 'a schema that throws: exit 2')
    t.match(throws.stderr, /The schema .*throws\.mjs failed: no such model/)
    t.doesNotMatch(throws.stderr, /\n\s+at /, 'no stack trace')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
