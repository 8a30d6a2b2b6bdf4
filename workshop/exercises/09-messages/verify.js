import { attempt } from '../../lib/backends.js'
import { RecordingLevel } from '../../lib/probes.js'
import { equal } from '../../lib/checks.js'

export const functions = ['post', 'page']

// Three rooms of one length (so no room name is a prefix of another); the
// pages are read from the middle one, so a range without a lower or an upper
// bound runs into a neighbour.
export function scenario (random) {
  const rooms = random.words(3, 5, 5).sort().map(w => 'room-' + w)
  const [before, room, after] = rooms
  let n = 0
  const text = () => `${random.words(random.int(2, 4)).join(' ')} (${++n})`
  let now = Date.UTC(2026, 10, 21, 9, 0, 0)
  // The history: a clock that often does not move (same millisecond).
  const history = []
  for (let i = 0; i < random.int(40, 55); i++) {
    now += random.pick([0, 0, 0, 1, 7, 1000, 60000])
    history.push({ room: random.next() < 0.6 ? room : random.pick([before, after]), text: text(), now })
  }
  // The live room: distinct times, then more posts between page fetches.
  const live = []
  for (let i = 0; i < random.int(25, 35); i++) {
    now += random.int(1, 5000)
    live.push({ room: random.next() < 0.6 ? room : random.pick([before, after]), text: text(), now })
  }
  const arriving = []
  for (let i = 0; i < 20; i++) {
    now += random.int(1, 5000)
    arriving.push({ room, text: text(), now })
  }
  return {
    rooms,
    room,
    nobody: 'room-zzzzzz',
    history,
    live,
    arriving,
    limits: [random.int(3, 6), 1000],
    liveLimit: random.int(4, 7)
  }
}

const newestFirst = (posts, room) => posts.filter(p => p.room === room).map(p => ({ time: p.now, text: p.text })).reverse()

async function fresh () {
  const db = new RecordingLevel()
  await db.open()
  return db
}

export async function exec ({ mod, scenario }) {
  const { room, rooms } = scenario
  const calls = []
  // Page through a room; between fetches, maybe post more.
  const pageAll = async (db, label, pageRoom, limit, between) => {
    const pages = []
    let before
    for (let i = 0; i < 200; i++) {
      const others = new Set([...rooms, scenario.nobody].filter(r => r !== pageRoom))
      const otherTexts = [...scenario.history, ...scenario.live].filter(p => p.room !== pageRoom).map(p => p.text) // unique: each ends with its own number
      db.log = []
      const m = await db.measure(() => mod.page(db, pageRoom, { before, limit }))
      const foreign = db.log.filter(e => (e.key && [...others].some(r => e.key.includes(r))) || (e.value && otherTexts.some(t => e.value.includes(t)))).length
      db.log = null
      calls.push({ call: `${label}: page(${pageRoom}, { limit: ${limit} }) #${i + 1}`, limit, read: m.counts.entriesRead, foreign })
      if (m.threw) return { threw: m.threw }
      const { items, next } = m.value || {}
      if (!Array.isArray(items)) return { returned: m.value, problem: 'page() must resolve with { items, next }' }
      pages.push(items)
      if (next === null) break
      if (next === undefined) return { pages, problem: 'next must be null when there is nothing older, not undefined' }
      before = next
      if (between) await between(i)
    }
    return { items: pages.flat(), oversized: pages.map((p, i) => ({ page: i + 1, items: p.length })).filter(p => p.items > limit) }
  }

  // 1. History with duplicate timestamps.
  const h = await fresh()
  const posted = []
  for (const p of scenario.history) posted.push(await attempt(() => mod.post(h, p.room, p.text, { now: p.now })))
  const history = []
  for (const limit of scenario.limits) history.push({ room, limit, ...await pageAll(h, 'history', room, limit) })
  history.push({ room: scenario.nobody, limit: scenario.limits[0], ...await pageAll(h, 'history', scenario.nobody, scenario.limits[0]) })

  // 2. New messages arrive between page fetches.
  const l = await fresh()
  for (const p of scenario.live) posted.push(await attempt(() => mod.post(l, p.room, p.text, { now: p.now })))
  let k = 0
  const live = await pageAll(l, 'live', room, scenario.liveLimit, async (i) => {
    for (const p of scenario.arriving.slice(k, k + 1 + (i % 2))) await attempt(() => mod.post(l, p.room, p.text, { now: p.now }))
    k += 1 + (i % 2)
  })
  return { posted: posted.filter(p => p.threw), history, live: { room, limit: scenario.liveLimit, ...live }, calls }
}

export const checks = [
  {
    id: 'history',
    kind: 'result',
    title: 'the pages of a room are its whole history, newest first, with no duplicate or gap',
    check: ({ learner, scenario }) => {
      const expected = [
        ...scenario.limits.map(limit => ({ room: scenario.room, limit, items: newestFirst(scenario.history, scenario.room), oversized: [] })),
        { room: scenario.nobody, limit: scenario.limits[0], items: [], oversized: [] }
      ]
      return equal({ postErrors: learner.posted, pages: learner.history }, { postErrors: [], pages: expected }, 'paging with { before: next } until next is null must give every message of the room exactly once, newest first (same-millisecond messages included: they need a tiebreaker in the key, and in the cursor)')
    }
  },
  {
    id: 'live-pages',
    kind: 'result',
    title: 'paging stays exact while new messages arrive',
    check: ({ learner, scenario }) => equal(learner.live, { room: scenario.room, limit: scenario.liveLimit, items: newestFirst(scenario.live, scenario.room), oversized: [] }, 'messages posted between page fetches must not shift the older pages: the cursor must be a key (where the last page ended), not a position counted from the newest')
  },
  {
    id: 'reads-per-page',
    kind: 'behaviour',
    title: 'each page reads at most limit + 1 entries',
    check: ({ learner }) => {
      const actual = learner.calls.map(c => ({ call: c.call, read: c.read }))
      return equal(actual, learner.calls.map(c => ({ call: c.call, read: Math.min(c.read, c.limit + 1) })), 'read one page (plus one entry to know whether more follow) with limit and a bound at the cursor, not the rest of the room')
    }
  },
  {
    id: 'other-rooms',
    kind: 'behaviour',
    title: 'a page never reads another room\'s messages',
    check: ({ learner }) => {
      const actual = learner.calls.map(c => ({ call: c.call, otherRoomEntriesRead: c.foreign }))
      return equal(actual, actual.map(a => ({ ...a, otherRoomEntriesRead: 0 })), 'bound the range on both sides to the room ([room] .. [room, Infinity] with tuple keys): filtering other rooms out in JavaScript still reads them')
    }
  }
]
