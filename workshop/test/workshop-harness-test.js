// Unit tests of the workshop's building blocks that verifiers rely on: the
// instrumented backend's counters, fault injection, dumps, seeded data and
// the exercise registry. In-process and fast.
import test from 'tape'
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { InstrumentedLevel, failWritesTo, dump, attempt } from '../lib/backends.js'
import { createRandom, deriveSeed } from '../lib/random.js'
import { findExercise, listExercises } from '../lib/exercises.js'
import { validateVerifier, equal, project } from '../lib/checks.js'
import { expectedFailures } from '../lib/fixtures.js'
import { formatDiff, colours } from '../lib/report.js'
import { invocation, withCommand } from '../lib/invocation.js'
import { tupleEncoding } from 'levelkit'

async function seeded (n = 20) {
  const db = new InstrumentedLevel()
  await db.open()
  const sub = db.sublevel('s')
  await db.batch(Array.from({ length: n }, (_, i) => ({ type: 'put', sublevel: sub, key: String(i).padStart(2, '0'), value: 'v' + i })))
  db.resetCounts()
  return { db, sub }
}

test('workshop backends: entries read are counted through sublevels, exactly', async t => {
  const { db, sub } = await seeded(20)
  const tight = await db.measure(() => sub.iterator({ gte: '05', lt: '08' }).all())
  t.is(tight.value.length, 3)
  t.is(tight.counts.entriesRead, 3, 'a tight range reads what it returns')
  const limited = await db.measure(() => sub.keys({ reverse: true, limit: 2 }).all())
  t.is(limited.counts.entriesRead, 2, 'reverse + limit reads limit')
  const scan = await db.measure(async () => (await sub.values().all()).filter(v => v === 'v3'))
  t.is(scan.counts.entriesRead, 20, 'a full scan reads everything')
  const loop = await db.measure(async () => {
    for await (const [key] of sub.iterator()) if (key === '01') break
  })
  t.is(loop.counts.entriesRead, 2, 'for await with break reads up to the break')
})

test('workshop backends: writes, batches and root write events', async t => {
  const { db, sub } = await seeded(0)
  const put = await db.measure(() => sub.put('a', '1'))
  t.same([put.counts.puts, put.counts.batches, put.counts.writeEvents], [1, 0, 1], 'a sublevel put is one physical put, one root write event')
  const batch = await db.measure(() => db.batch([{ type: 'put', key: 'x', value: '1' }, { type: 'del', sublevel: sub, key: 'a' }]))
  t.same([batch.counts.puts, batch.counts.dels, batch.counts.batches, batch.counts.writeEvents], [0, 0, 1, 1], 'a root batch across sublevels: one batch, one event')
  const chained = await db.measure(() => sub.batch().put('b', '2').put('c', '3').write())
  t.same([chained.counts.batches, chained.counts.writeEvents], [1, 1], 'a chained batch counts once')
  const gets = await db.measure(async () => { await sub.get('b'); await sub.getMany(['b', 'c', 'z']) })
  t.is(gets.counts.gets, 4, 'point reads: one per key')
})

test('workshop backends: injected faults refuse the whole write', async t => {
  const { db, sub } = await seeded(0)
  const remove = failWritesTo(db, '!s!bad')
  const failed = await attempt(() => db.batch([{ type: 'put', sublevel: sub, key: 'good', value: '1' }, { type: 'put', sublevel: sub, key: 'bad', value: '2' }]))
  t.ok(failed.threw, 'the batch rejects')
  t.same(await dump(db), [], 'nothing of it is written')
  const direct = await attempt(() => sub.put('bad', '3'))
  t.ok(direct.threw, 'a prefixed sublevel put is matched too')
  remove()
  await sub.put('bad', '4')
  t.same(await dump(db), [['!s!bad', '4']], 'removing the fault restores writes')

  db.failBatch = (op) => String(op.key).includes('boom')
  const batchFault = await attempt(() => db.batch([{ type: 'put', key: 'boom', value: '1' }]))
  t.match(batchFault.threw.message, /Injected batch failure/)
  t.same((await dump(db)).length, 1)
})

test('workshop backends: slow reads answer with the value at request time', async t => {
  const { db, sub } = await seeded(0)
  await sub.put('k', 'old')
  db.getLatency = () => 5
  const read = sub.get('k')
  await sub.put('k', 'new')
  t.is(await read, 'old', 'a read-then-write race is reproducible')
})

test('workshop backends: dump shows prefixes, text and binary keys', async t => {
  const db = new InstrumentedLevel()
  await db.open()
  await db.sublevel('t', { keyEncoding: tupleEncoding }).put([1, 'a'], 'x')
  await db.put('plain', JSON.stringify({ a: 1 }))
  const entries = await dump(db)
  t.is(entries[0][0].slice(0, 7), 'hex:217', 'a binary key is hex (starting with the !t! prefix)')
  t.same(entries[1], ['plain', '{"a":1}'])
})

test('workshop random: seeded and reproducible', t => {
  const a = createRandom(42)
  const b = createRandom(42)
  t.same([a.int(0, 1000), a.words(3), a.shuffle([1, 2, 3, 4])], [b.int(0, 1000), b.words(3), b.shuffle([1, 2, 3, 4])])
  t.notEqual(deriveSeed(42, 'scenario'), deriveSeed(42, 'exec'))
  t.end()
})

test('workshop registry and checks helpers', t => {
  const first = listExercises()[0]
  for (const q of ['1', '01', 'hello_level', 'Hello, Level', 'hello-level', 'HELLO LEVEL', '01-hello_level']) t.is(findExercise(q)?.id, first.id, `finds ${q}`)
  t.is(findExercise('0'), undefined)
  t.is(findExercise('nope'), undefined)
  t.throws(() => validateVerifier('x', { functions: ['f'], scenario () {}, exec () {}, checks: [{ id: 'Bad Id', kind: 'vibes', title: 't', check () {} }] }), /kebab-case.*kind must be one of/)
  t.throws(() => validateVerifier('x', { functions: [], checks: [] }), /functions.*scenario.*exec.*checks/)
  t.same(equal(undefined, null, 'm'), { ok: false, message: 'm', expected: null, actual: undefined }, 'undefined is not null')
  t.same(project({ threw: { message: 'x' } }, v => v.a), { threw: { message: 'x' } })
  const diff = formatDiff({ a: 1 }, { a: 2 }, colours({ isTTY: false }))
  t.match(diff, /^- \{ a: 1 \}$/m, 'expected, marked -')
  t.match(diff, /^\+ \{ a: 2 \}$/m, 'actual, marked +')
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-workshop-fixture-'))
  const file = join(dir, 'f.js')
  writeFileSync(file, '// expect-fail: b-check, a-check\nexport {}\n')
  t.same(expectedFailures(file), ['a-check', 'b-check'])
  writeFileSync(file, 'export {}\n')
  t.throws(() => expectedFailures(file), /no "\/\/ expect-fail/)
  rmSync(dir, { recursive: true })
  t.end()
})

test('workshop invocation: npm\'s variables count only when npm ran the workshop', t => {
  const project = mkdtempSync(join(tmpdir(), 'levelkit-workshop-invocation-'))
  const learner = join(project, 'mine')
  const script = join(project, 'levelkit-workshop.js')
  const byRun = { npm_command: 'run', npm_lifecycle_event: 'learn', npm_lifecycle_script: 'node levelkit-workshop.js', npm_package_json: join(project, 'package.json'), INIT_CWD: learner, PATH: '' }
  t.same(invocation({ env: byRun, cwd: project, script }), { command: 'npm run learn --', cwd: learner }, 'npm run: paths from INIT_CWD, commands through npm run')
  t.same(invocation({ env: { ...byRun, npm_lifecycle_script: "tape 'test/*-test.js'" }, cwd: project, script }), { command: 'npx levelkit-workshop', cwd: project }, 'inherited from another script (npm test): ignored')
  t.same(invocation({ env: byRun, cwd: learner, script }), { command: 'npx levelkit-workshop', cwd: learner }, 'started from another folder than the script\'s package: ignored')
  t.same(invocation({ env: { npm_command: 'exec', npm_lifecycle_script: "'levelkit-workshop'", INIT_CWD: learner, PATH: '' }, cwd: learner, script }), { command: 'npx levelkit-workshop', cwd: learner }, 'npx')
  t.is(withCommand('Run `levelkit-workshop verify x.js`, or `levelkit-workshop help`.', 'npx levelkit-workshop'), 'Run `npx levelkit-workshop verify x.js`, or `npx levelkit-workshop help`.')
  t.is(withCommand('`npx levelkit-workshop list`', 'npx levelkit-workshop'), '`npx levelkit-workshop list`', 'already rewritten: unchanged')
  rmSync(project, { recursive: true })
  t.end()
})
