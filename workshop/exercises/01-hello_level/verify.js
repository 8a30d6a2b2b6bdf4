import { InstrumentedLevel, attempt, dump } from '../../lib/backends.js'
import { equal, project } from '../../lib/checks.js'

export const functions = ['hello']

export function scenario (random) {
  const [key, missingKey] = random.words(2, 4, 10)
  return { key, missingKey, value: random.words(4).join(' ') }
}

export async function exec ({ mod, scenario }) {
  const db = new InstrumentedLevel()
  await db.open()
  const result = await attempt(() => mod.hello(db, scenario.key, scenario.value, scenario.missingKey))
  return { result, state: await dump(db) }
}

export const checks = [
  {
    id: 'round-trip',
    kind: 'result',
    title: 'get() returns the value that was put',
    check: ({ learner, scenario }) => equal(
      project(learner.result, r => r?.value),
      scenario.value,
      'the value you read back is not the value you stored'
    )
  },
  {
    id: 'missing-is-undefined',
    kind: 'result',
    title: 'a missing key reads as undefined',
    check: ({ learner }) => equal(
      project(learner.result, r => ({ hasMissing: r != null && 'missing' in r, missing: r?.missing })),
      { hasMissing: true, missing: undefined },
      'return { missing: await db.get(missingKey) }: abstract-level resolves a missing key with undefined'
    )
  },
  {
    id: 'one-entry',
    kind: 'state',
    title: 'the database holds exactly key → value',
    check: ({ learner, reference }) => equal(learner.state, reference.state, 'the database contents differ from the reference run')
  }
]
