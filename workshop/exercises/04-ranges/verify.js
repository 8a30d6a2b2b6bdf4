import { InstrumentedLevel, dump } from '../../lib/backends.js'
import { equal } from '../../lib/checks.js'

export const functions = ['onDay', 'countSince', 'latest', 'between']

const day = (n) => `2026-11-${String(n).padStart(2, '0')}`

export function scenario (random) {
  const posts = new Map()
  // Days 3..8 have posts; day 5 stays empty so "no posts" is exercised.
  while (posts.size < random.int(150, 220)) {
    const d = random.pick([3, 4, 6, 7, 8])
    const time = new Date(Date.UTC(2026, 10, d, random.int(0, 23), random.int(0, 59), random.int(0, 59), random.int(0, 999)))
    posts.set(time.toISOString(), random.words(random.int(2, 6)).join(' '))
  }
  const keys = [...posts.keys()].sort()
  const someKey = () => random.pick(keys)
  const [a, b] = [someKey(), someKey()].sort()
  return {
    posts: [...posts],
    days: [day(random.pick([3, 4, 6, 7, 8])), day(5), day(random.pick([3, 4, 6, 7, 8]))],
    since: [someKey(), someKey(), day(7), '2026-12-01'],
    latest: [1, random.int(3, 8), random.int(10, 20)],
    between: [[a, b], [someKey(), day(6)], [day(4), someKey()].sort(), [day(5), day(5) + 'T23']]
  }
}

export async function exec ({ mod, scenario }) {
  const db = new InstrumentedLevel()
  await db.open()
  await db.batch(scenario.posts.map(([key, value]) => ({ type: 'put', key, value })))
  db.resetCounts()
  const calls = []
  const call = async (name, args) => {
    const m = await db.measure(() => mod[name](db, ...args))
    calls.push({ name, args, ...m })
  }
  for (const d of scenario.days) await call('onDay', [d])
  for (const t of scenario.since) await call('countSince', [t])
  for (const n of scenario.latest) await call('latest', [n])
  for (const [from, to] of scenario.between) await call('between', [from, to])
  return { calls, state: await dump(db) }
}

const outcomes = (obs, name) => obs.calls.filter(c => c.name === name).map(c => ({ call: `${name}(${c.args.map(a => JSON.stringify(a)).join(', ')})`, ...(c.threw ? { threw: c.threw } : { returned: c.value }) }))

function sameAnswers (name, hint) {
  return ({ learner, reference }) => equal(outcomes(learner, name), outcomes(reference, name), hint)
}

// How many entries a call returned: an array's length, or the count itself.
const returned = (c) => Array.isArray(c.value) ? c.value.length : typeof c.value === 'number' ? c.value : 0

export const checks = [
  { id: 'on-day', kind: 'result', title: 'onDay returns that day\'s posts', check: sameAnswers('onDay', 'onDay(db, day) must return [key, value] entries of that day, oldest first') },
  { id: 'count-since', kind: 'result', title: 'countSince counts posts at or after a time', check: sameAnswers('countSince', 'countSince(db, time) counts keys >= time (gte, not gt)') },
  { id: 'latest', kind: 'result', title: 'latest returns the n newest posts, newest first', check: sameAnswers('latest', 'latest(db, n): the last n keys, highest first') },
  { id: 'between', kind: 'result', title: 'between returns from <= key < to', check: sameAnswers('between', 'between(db, from, to): from inclusive, to exclusive, oldest first') },
  {
    id: 'tight-reads',
    kind: 'behaviour',
    title: 'each call reads at most one entry more than it returns',
    check: ({ learner }) => {
      const actual = learner.calls.map(c => ({ call: `${c.name}(${c.args.map(a => JSON.stringify(a)).join(', ')})`, returned: returned(c), read: c.counts.entriesRead }))
      const expected = actual.map(a => ({ ...a, read: Math.min(a.read, a.returned + 1) }))
      return equal(actual, expected, 'some calls read more entries than they needed: pass gt/gte/lt/lte/limit/reverse to the iterator instead of filtering in JavaScript')
    }
  }
]
