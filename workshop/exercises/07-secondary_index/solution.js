// Reference solution: read the old record, then write record and index
// entries in one batch, with writes on one database queued one at a time so
// no two read the same old record.
const users = (db) => db.sublevel('users', { valueEncoding: 'json' })
const index = (db) => db.sublevel('byEmail')

const queues = new WeakMap()

// Run fn after every earlier write on this db has settled (failed or not).
function serialize (db, fn) {
  const result = (queues.get(db) || Promise.resolve()).then(fn)
  queues.set(db, result.catch(() => {}))
  return result
}

function writeUser (db, old, user) {
  const ops = []
  if (old && old.email !== user.email) ops.push({ type: 'del', sublevel: index(db), key: old.email })
  ops.push({ type: 'put', sublevel: index(db), key: user.email, value: user.id })
  ops.push({ type: 'put', sublevel: users(db), key: user.id, value: user })
  return db.batch(ops)
}

export function putUser (db, user) {
  return serialize(db, async () => writeUser(db, await users(db).get(user.id), user))
}

export function updateEmail (db, id, email) {
  return serialize(db, async () => {
    const old = await users(db).get(id)
    if (!old) throw new Error(`No user ${id}`)
    await writeUser(db, old, { ...old, email })
  })
}

export function delUser (db, id) {
  return serialize(db, async () => {
    const old = await users(db).get(id)
    if (!old) return
    await db.batch([
      { type: 'del', sublevel: users(db), key: id },
      { type: 'del', sublevel: index(db), key: old.email }
    ])
  })
}

export async function byEmail (db, email) {
  const id = await index(db).get(email)
  return id === undefined ? undefined : users(db).get(id)
}
