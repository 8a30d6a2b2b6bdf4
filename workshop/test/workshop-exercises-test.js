// Every exercise: its verifier is well-formed, its reference solution passes,
// and every check is shown to bite: a wrong solution fails exactly that check.
import test from 'tape'
import { readdirSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { listExercises, loadVerifier } from '../lib/exercises.js'
import { verifyFile } from '../lib/harness.js'
import { expectedFailures } from '../lib/fixtures.js'
import { freshSeed } from '../lib/random.js'

const fixturesDir = fileURLToPath(new URL('./fixtures/', import.meta.url))
// One seed per test run, printed, so a failure can be replayed with WORKSHOP_SEED.
const seed = Number(process.env.WORKSHOP_SEED) || freshSeed()

const exercises = listExercises()
const referenceCache = new Map()
// The learner's 10 s default is for a learner's machine; every file verified
// here runs to its end (a test below says so), and a loaded CI machine took
// longer than 10 s. The reference already gets 60 s (harness.js).
const timeout = 60000
const dirName = (e) => `${String(e.number).padStart(2, '0')}-${e.id}`

// Two verifies at a time: each runs two child processes, on two vCPUs.
async function pool (items, size, fn) {
  const results = new Array(items.length)
  let next = 0
  await Promise.all(Array.from({ length: size }, async () => {
    while (next < items.length) {
      const i = next++
      results[i] = await fn(items[i])
    }
  }))
  return results
}

test(`workshop: exercises are numbered 1..n with problem, solution and verifier (seed ${seed})`, async t => {
  t.ok(exercises.length >= 7, `${exercises.length} exercises`)
  t.same(exercises.map(e => e.number), exercises.map((e, i) => i + 1), 'numbered without gaps')
  for (const e of exercises) {
    for (const f of [e.problemFile, e.solutionFile, e.verifyFile]) t.ok(existsSync(f), `${dirName(e)}: ${f.split('/').pop()}`)
    t.notEqual(e.title, e.id, `${e.id}: problem.md starts with a # title`)
    await loadVerifier(e) // throws on a malformed verifier
  }
  for (const name of readdirSync(fixturesDir)) {
    t.ok(exercises.some(e => dirName(e) === name), `fixture folder ${name} belongs to an exercise`)
  }
})

for (const exercise of exercises) {
  test(`workshop ${dirName(exercise)}: the reference passes and every check has a wrong solution failing exactly it (seed ${seed})`, async t => {
    const verifier = await loadVerifier(exercise)
    const ids = verifier.checks.map(c => c.id).sort()

    const reference = await verifyFile({ exercise, file: exercise.solutionFile, seed, timeout, referenceCache })
    t.ok(reference.passed, `reference passes (${reference.checks.filter(c => !c.ok).map(c => c.id).join(', ') || 'all checks'})`)
    if (!reference.passed) t.comment(JSON.stringify(reference.checks.filter(c => !c.ok), null, 2))

    const dir = join(fixturesDir, dirName(exercise))
    const files = existsSync(dir) ? readdirSync(dir).filter(f => f.endsWith('.js')).sort() : []
    const onlyFailure = new Set()
    await pool(files, 2, async (name) => {
      const file = join(dir, name)
      const expected = expectedFailures(file)
      for (const id of expected) t.ok(ids.includes(id), `${name}: declares a real check (${id})`)
      const result = await verifyFile({ exercise, file, seed, timeout, referenceCache })
      t.is(result.error, null, `${name}: runs to the end`)
      const failed = result.checks.filter(c => !c.ok).map(c => c.id).sort()
      t.same(failed, expected, `${name}: fails exactly ${expected.join(', ')}`)
      if (failed.length === 1 && failed[0] === expected[0] && expected.length === 1) onlyFailure.add(failed[0])
    })
    for (const id of ids) t.ok(onlyFailure.has(id), `check ${id} has a wrong solution that fails only it`)
  })
}
