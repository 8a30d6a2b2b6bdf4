import { ClassicLevel } from 'classic-level'
import { attemptTrackingOpens } from '../../lib/backends.js'
import { equal, project } from '../../lib/checks.js'

export const functions = ['readValue']

export function scenario (random) {
  const keys = random.words(6, 4, 9)
  const entries = keys.slice(0, 5).map(key => [key, random.words(3).join(' ')])
  return { entries, key: random.pick(entries)[0], missingKey: keys[5] }
}

async function seeded (tempDir, entries) {
  const dir = await tempDir()
  const db = new ClassicLevel(dir)
  await db.batch(entries.map(([key, value]) => ({ type: 'put', key, value })))
  await db.close()
  return dir
}

// Can the verifier open the directory now? An open handle left by the
// learner holds the LOCK, and this open then fails.
async function reopen (dir) {
  const db = new ClassicLevel(dir)
  try {
    await db.open()
    await db.close()
    return { opened: true }
  } catch (err) {
    return { opened: false, code: err.code, cause: err.cause && err.cause.code }
  }
}

// Call readValue, then see whether the databases it opened were closed by
// the time it returned (a close() not awaited is still closing then) and
// whether the directory can be opened again.
async function readAndReopen (mod, dir, key) {
  const { statuses, ...outcome } = await attemptTrackingOpens(ClassicLevel, () => mod.readValue(dir, key))
  const notClosedWhenReturned = statuses.filter(status => status !== 'closed')
  return { outcome, closed: { notClosedWhenReturned, ...await reopen(dir) } }
}

export async function exec ({ mod, scenario, tempDir }) {
  const present = await seeded(tempDir, scenario.entries)
  const absent = await seeded(tempDir, scenario.entries)
  const read = await readAndReopen(mod, present, scenario.key)
  const readMissing = await readAndReopen(mod, absent, scenario.missingKey)
  return {
    value: read.outcome,
    missing: readMissing.outcome,
    closed: { afterReadingAKey: read.closed, afterReadingAMissingKey: readMissing.closed }
  }
}

export const checks = [
  {
    id: 'value',
    kind: 'result',
    title: 'returns the stored value',
    check: ({ learner, scenario }) => equal(
      project(learner.value, v => v),
      new Map(scenario.entries).get(scenario.key),
      'readValue(dir, key) should resolve with the string stored under key'
    )
  },
  {
    id: 'missing',
    kind: 'result',
    title: 'a missing key gives undefined',
    check: ({ learner }) => equal(project(learner.missing, v => ({ value: v })), { value: undefined }, 'readValue(dir, missingKey) should resolve with undefined')
  },
  {
    id: 'closed',
    kind: 'state',
    title: 'the database is closed when the function returns (its LOCK is released)',
    check: ({ learner }) => equal(
      learner.closed,
      { afterReadingAKey: { notClosedWhenReturned: [], opened: true }, afterReadingAMissingKey: { notClosedWhenReturned: [], opened: true } },
      "Your function returned before its database was closed ('closing': close() was called but not awaited; 'open': it was never closed), so the directory may still be locked: `await db.close()` before returning (in a finally block, so it also happens on errors)"
    )
  }
]
