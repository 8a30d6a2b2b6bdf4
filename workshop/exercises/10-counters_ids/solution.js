// Reference solution: Level has no compare-and-swap, so every
// read-modify-write on a database runs through one promise queue: the next
// one starts only when the previous one has written.
const ids = (db) => db.sublevel('ids', { valueEncoding: 'json' })
const counters = (db) => db.sublevel('counters', { valueEncoding: 'json' })

const queues = new WeakMap()

function serialize (db, fn) {
  const result = (queues.get(db) || Promise.resolve()).then(fn)
  queues.set(db, result.catch(() => {})) // a failed call must not block the ones after it
  return result
}

export function nextId (db, kind) {
  return serialize(db, async () => {
    const id = ((await ids(db).get(kind)) || 0) + 1
    await ids(db).put(kind, id)
    return id
  })
}

export function incr (db, key, by = 1) {
  return serialize(db, async () => {
    const value = ((await counters(db).get(key)) || 0) + by
    await counters(db).put(key, value)
    return value
  })
}

export async function getCounter (db, key) {
  return (await counters(db).get(key)) || 0
}
