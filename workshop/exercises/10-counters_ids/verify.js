import { pathToFileURL } from 'node:url'
import { InstrumentedLevel, attempt } from '../../lib/backends.js'
import { equal, all } from '../../lib/checks.js'

export const functions = ['nextId', 'incr', 'getCounter']

export function scenario (random) {
  const kinds = random.words(3, 4, 7)
  const keys = random.words(3, 4, 7).map(w => 'hits:' + w)
  return {
    kinds,
    keys,
    untouched: 'hits:zzz' + random.word(),
    idCalls: Array.from({ length: 200 }, () => random.pick(kinds)),
    incrCalls: Array.from({ length: 200 }, () => [random.pick(keys), random.pick([1, 1, 1, 2, 5, 10, -1, -3])])
  }
}

// Expected totals and id counts, from the scenario.
function model (scenario) {
  const count = Object.fromEntries(scenario.kinds.map(k => [k, scenario.idCalls.filter(c => c === k).length]))
  const totals = Object.fromEntries([...scenario.keys, scenario.untouched].map(k => [k, 0]))
  for (const [key, by] of scenario.incrCalls) totals[key] += by
  return { count, totals }
}

async function counterValues (mod, db, keys) {
  const values = {}
  for (const key of keys) {
    const outcome = await attempt(() => mod.getCounter(db, key))
    values[key] = outcome.threw ? { threw: outcome.threw } : outcome.value
  }
  return values
}

export async function exec ({ mod, scenario, random, moduleFile }) {
  const db = new InstrumentedLevel()
  await db.open()
  // Slow reads: every read-then-write overlaps with dozens of others.
  db.getLatency = () => random.int(0, 2)

  // 1. 200 concurrent nextId calls over a few kinds.
  const idOutcomes = await Promise.all(scenario.idCalls.map(kind => attempt(() => mod.nextId(db, kind))))
  const ids = {}
  for (const kind of scenario.kinds) {
    ids[kind] = idOutcomes.filter((o, i) => scenario.idCalls[i] === kind).map(o => o.threw ? { threw: o.threw } : o.value)
  }

  // 2. 200 concurrent incr calls over a few keys.
  const incrOutcomes = await Promise.all(scenario.incrCalls.map(([key, by]) => attempt(() => mod.incr(db, key, by))))
  const incrErrors = incrOutcomes.filter(o => o.threw).map(o => o.threw)
  db.getLatency = null
  const counters = await counterValues(mod, db, [...scenario.keys, scenario.untouched])

  // 3. A fresh copy of the module (as after a restart) on the same database.
  const file = moduleFile
  const again = await import(pathToFileURL(file).href + '?restart=' + Date.now())
  const afterRestart = { nextIds: {}, counters: await counterValues(again, db, scenario.keys) }
  for (const kind of scenario.kinds) {
    const outcome = await attempt(() => again.nextId(db, kind))
    afterRestart.nextIds[kind] = outcome.threw ? { threw: outcome.threw } : outcome.value
  }
  return { ids, incrErrors, counters, afterRestart }
}

// What n calls handed out, in short: ids given more than once, ids of
// 1..n never given, and the first few errors.
function summary (values) {
  const ids = values.filter(v => typeof v === 'number')
  const seen = new Map()
  for (const id of ids) seen.set(id, (seen.get(id) || 0) + 1)
  const missing = []
  for (let i = 1; i <= values.length; i++) if (!seen.has(i)) missing.push(i)
  return {
    calls: values.length,
    distinctIds: seen.size,
    duplicated: [...seen].filter(([, times]) => times > 1).map(([id, times]) => `${id} (${times} times)`).slice(0, 8),
    missing: missing.length > 8 ? [...missing.slice(0, 8), `... ${missing.length - 8} more`] : missing,
    errors: values.filter(v => typeof v !== 'number').slice(0, 3)
  }
}

export const checks = [
  {
    id: 'ids-unique',
    kind: 'result',
    title: '200 concurrent nextId calls: unique, gap-free ids from 1 per kind',
    check: ({ learner, scenario }) => {
      const { count } = model(scenario)
      const actual = Object.fromEntries(scenario.kinds.map(k => [k, summary(learner.ids[k])]))
      const expected = Object.fromEntries(scenario.kinds.map(k => [k, { calls: count[k], distinctIds: count[k], duplicated: [], missing: [], errors: [] }]))
      return equal(actual, expected, 'the ids each kind handed out must be exactly 1, 2, ..., n (in any order): concurrent calls that read the same last id hand it out twice. Serialize read-then-write (a promise queue per database)')
    }
  },
  {
    id: 'counter-exact',
    kind: 'result',
    title: '200 concurrent incr calls: every increment counted',
    check: ({ learner, scenario }) => all(
      equal(learner.incrErrors, [], 'some incr calls rejected'),
      equal(learner.counters, model(scenario).totals, 'getCounter must give the sum of every increment (0 for a key never incremented): lost updates mean two calls read the same value and both wrote their own sum')
    )
  },
  {
    id: 'persisted',
    kind: 'state',
    title: 'ids and counters live in the database: a restart continues where it left off',
    check: ({ learner, scenario }) => {
      // Compared with what this same run saw before the restart, so a race
      // (checked above) does not fail this check too.
      const last = (values) => Math.max(0, ...values.filter(v => typeof v === 'number'))
      const expected = {
        nextIds: Object.fromEntries(scenario.kinds.map(k => [k, last(learner.ids[k]) + 1])),
        counters: Object.fromEntries(scenario.keys.map(k => [k, learner.counters[k]]))
      }
      return equal(learner.afterRestart, expected, 'a fresh copy of your module (as after a restart) on the same database must continue after the last id handed out and see the same counters: keep them in the database, not only in memory')
    }
  }
]
