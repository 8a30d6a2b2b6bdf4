import { InstrumentedLevel, dump, attempt } from '../../lib/backends.js'
import { equal } from '../../lib/checks.js'

export const functions = ['paddedKey', 'addScore', 'top', 'inRange']

export function scenario (random) {
  // The cases string order gets wrong, plus random ones.
  const padded = random.shuffle([0, 9, 10, 99, 100, 101, 999999999, ...Array.from({ length: 12 }, () => random.int(0, 99999))])
  const users = random.words(random.int(25, 40), 3, 8)
  const score = () => random.int(-200, 200) / random.pick([1, 1, 2, 4, 10])
  const entries = users.map(user => [user, score()])
  // Ties on purpose: a few users share a score.
  for (let i = 0; i < 4; i++) entries[random.int(0, entries.length - 1)][1] = entries[0][1]
  const values = entries.map(e => e[1]).sort((a, b) => a - b)
  const ranges = [
    [values[random.int(0, 5)], values[random.int(10, 20)]], // bounds that are someone's score
    [-10.5, 10.5],
    [values[0], values[0]],
    [random.int(-50, 0) / 4, random.int(1, 50) / 4]
  ]
  return { padded, entries, tops: [1, random.int(3, 10), 1000], ranges }
}

export async function exec ({ mod, scenario }) {
  const pad = new InstrumentedLevel()
  await pad.open()
  let paddedOrder
  try {
    await pad.batch(scenario.padded.map(s => ({ type: 'put', key: mod.paddedKey(s), value: String(s) })))
    paddedOrder = { scoresInKeyOrder: (await pad.values().all()).map(Number) }
  } catch (err) {
    paddedOrder = { threw: err.message }
  }

  const db = new InstrumentedLevel()
  await db.open()
  const failed = []
  for (const [user, score] of scenario.entries) {
    const added = await attempt(() => mod.addScore(db, user, score))
    if (added.threw) failed.push({ call: `addScore(db, ${JSON.stringify(user)}, ${score})`, threw: added.threw })
  }
  // A throwing addScore shows up in the layout diff, not as a crash.
  const layout = failed.length ? { entries: await dump(db), failed: failed.slice(0, 3) } : await dump(db)
  db.resetCounts()
  const tops = []
  for (const n of scenario.tops) tops.push({ args: [n], ...await db.measure(() => mod.top(db, n)) })
  const ranges = []
  for (const [lo, hi] of scenario.ranges) ranges.push({ args: [lo, hi], ...await db.measure(() => mod.inRange(db, lo, hi)) })
  return { paddedOrder, layout, tops, ranges }
}

const answers = (name, calls) => calls.map(c => ({ call: `${name}(${c.args.join(', ')})`, ...(c.threw ? { threw: c.threw } : { returned: c.value }) }))

export const checks = [
  {
    id: 'padded-order',
    kind: 'state',
    title: 'zero-padded keys sort numerically',
    check: ({ learner, scenario }) => equal(
      learner.paddedOrder,
      { scoresInKeyOrder: scenario.padded.slice().sort((a, b) => a - b) },
      'reading the keys back in key order must give the scores in numeric order: pad every key to the same length'
    )
  },
  {
    id: 'layout',
    kind: 'state',
    title: 'scores are stored as [score, user] tuple keys in the scores sublevel',
    check: ({ learner, reference }) => equal(learner.layout, reference.layout, 'the stored keys or values differ from the reference (sublevel name, key [score, user] with tupleEncoding, value user)')
  },
  {
    id: 'top',
    kind: 'result',
    title: 'top(n) returns the n highest scores, highest first',
    check: ({ learner, reference }) => equal(answers('top', learner.tops), answers('top', reference.tops), 'top(db, n) must return the last n keys, highest first')
  },
  {
    id: 'in-range',
    kind: 'result',
    title: 'inRange(lo, hi) returns lo <= score <= hi, lowest first',
    check: ({ learner, reference }) => equal(answers('inRange', learner.ranges), answers('inRange', reference.ranges), 'inRange(db, lo, hi) must include both bounds')
  },
  {
    id: 'tight-reads',
    kind: 'behaviour',
    title: 'top and inRange read at most one entry more than they return',
    check: ({ learner }) => {
      const actual = [...answers('top', learner.tops).map((a, i) => [a, learner.tops[i]]), ...answers('inRange', learner.ranges).map((a, i) => [a, learner.ranges[i]])]
        .map(([a, c]) => ({ call: a.call, returned: Array.isArray(c.value) ? c.value.length : 0, read: c.counts.entriesRead }))
      const expected = actual.map(a => ({ ...a, read: Math.min(a.read, a.returned + 1) }))
      return equal(actual, expected, 'a range read must be bounded by gte/lte (and limit), not filtered in JavaScript')
    }
  }
]
