// Reference solution: messages keyed [room, time, seq]. The per-room seq is
// the tiebreaker for messages of the same millisecond, and the cursor is the
// [time, seq] of the last item returned: pages are ranges below a key, so
// new messages (which sort above) never shift them.
import { tupleEncoding } from 'levelkit'

const messages = (db) => db.sublevel('messages', { keyEncoding: tupleEncoding, valueEncoding: 'json' })
const seqs = (db) => db.sublevel('messageSeq', { keyEncoding: tupleEncoding, valueEncoding: 'json' })

const queues = new WeakMap()

// Run fn after every earlier post on this db has settled: two posts must not
// read the same last seq.
function serialize (db, fn) {
  const result = (queues.get(db) || Promise.resolve()).then(fn)
  queues.set(db, result.catch(() => {}))
  return result
}

export function post (db, room, text, { now = Date.now() } = {}) {
  return serialize(db, async () => {
    const seq = ((await seqs(db).get([room])) || 0) + 1
    await db.batch([
      { type: 'put', sublevel: seqs(db), key: [room], value: seq },
      { type: 'put', sublevel: messages(db), key: [room, now, seq], value: { time: now, text } }
    ])
  })
}

export async function page (db, room, { before, limit = 20 } = {}) {
  // [room] sorts before every [room, time, seq]; [room, Infinity] after them.
  const entries = await messages(db).iterator({
    gt: [room],
    lt: before ? [room, ...before] : [room, Infinity],
    reverse: true,
    limit: limit + 1 // one more than a page: is there anything older?
  }).all()
  const items = entries.slice(0, limit).map(([, value]) => value)
  const next = entries.length > limit ? entries[limit - 1][0].slice(1) : null
  return { items, next }
}
