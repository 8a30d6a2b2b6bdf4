import { rejects, usersSchema, onModelWrite } from './index.js'

/** @param {any} test @param {any} common */
export default function (test, common) {
  async function schema () {
    const db = await common.open()
    const users = usersSchema(db)
    const chats = db.collection('chats')
    const members = db.relation('members', { from: chats, to: users })
    const messages = db.children('messages', { parent: chats })
    return { db, users, chats, members, messages }
  }

  test(`${common.backend}: db.write commits several operations as one batch`, async t => {
    const { db, users, chats, members, messages } = await schema()
    const batches = []
    onModelWrite(db, ops => batches.push(ops.length))
    const result = await db.write(async w => {
      const u = await users.in(w).insert({ username: 'ann' })
      const c = await chats.in(w).insert({ name: 'general' })
      t.same(await users.in(w).get(u), { id: u, username: 'ann' }, 'reads its own writes')
      t.is(await users.get(u), undefined, 'outside the scope nothing is visible yet')
      await members.in(w).add(c, u)
      await messages.in(w).append(c, { text: 'hello' })
      return { u, c }
    })
    t.same(batches.length, 1, 'one batch')
    t.same(await members.to(result.c).all(), [result.u])
    t.same(await messages.range(result.c).all(), [{ text: 'hello' }])
    await db.close()
  })

  test(`${common.backend}: if the callback throws, nothing is written`, async t => {
    const { db, users, chats } = await schema()
    await users.insert({ username: 'ann' })
    const before = await db.level.iterator().all()
    try {
      await db.write(async w => {
        await chats.in(w).insert({ name: 'x' })
        await users.in(w).update(1, { age: 3 })
        throw new Error('boom')
      })
      t.fail('should throw')
    } catch (err) {
      t.is(err.message, 'boom', 'the callback error is passed through')
    }
    t.same(await db.level.iterator().all(), before, 'database unchanged')
    t.is(await chats.insert({ name: 'y' }), 1, 'sequence not consumed')
    await db.close()
  })

  test(`${common.backend}: a failed operation caught inside db.write leaves nothing of itself`, async t => {
    const { db, users } = await schema()
    await users.insert({ username: 'ann' })
    await db.write(async w => {
      await users.in(w).insert({ username: 'bob' })
      await rejects(t, users.in(w).insert({ username: 'ann' }), 'LEVELKIT_UNIQUE')
      await users.in(w).insert({ username: 'cat' })
    })
    t.same((await users.query().all()).map(u => [u.id, u.username]), [[1, 'ann'], [2, 'bob'], [3, 'cat']])
    t.ok((await db.check()).ok)
    await db.close()
  })

  test(`${common.backend}: a write scope cannot be used after its callback`, async t => {
    const { db, users } = await schema()
    let leaked
    await db.write(async w => { leaked = w })
    try {
      await users.in(leaked).insert({ username: 'x' })
      t.fail('should throw')
    } catch (err) {
      t.is(err.code, 'LEVELKIT_INVALID')
    }
    try {
      users.in({})
      t.fail('should throw')
    } catch (err) {
      t.is(err.code, 'LEVELKIT_INVALID', 'in() needs a write scope')
    }
    await rejects(t, db.write('nope'), 'LEVELKIT_INVALID')
    await db.close()
  })

  test(`${common.backend}: an operation started as the callback returns is written or refused, never lost`, async t => {
    const { db, users } = await schema()
    const outcomes = { written: 0, refused: 0, lost: 0 }
    // Where the scope ends depends on the backend: a few microtask ticks on
    // memory and LevelDB (reads with getSync), a few IndexedDB round trips
    // in a browser. Step through longer delays until both sides were seen.
    /** @type {Array<() => Promise<void>>} */
    const delays = []
    for (let ticks = 0; ticks < 12; ticks++) {
      delays.push(() => { let p = Promise.resolve(); for (let i = 0; i < ticks; i++) p = p.then(() => {}); return p })
    }
    for (const ms of [0, 1, 2, 4, 8, 16, 32, 64]) delays.push(() => new Promise(resolve => setTimeout(resolve, ms)))
    for (const [i, delay] of delays.entries()) {
      if (outcomes.written > 0 && outcomes.refused > 0) break
      /** @type {Promise<{ id?: any, err?: any }> | null} */
      let late = null
      /** @type {Promise<void> | null} */
      let started = null
      await db.write(async w => {
        users.in(w).insert({ username: `early${i}` })
        started = delay().then(() => {
          late = (async () => users.in(w).insert({ username: `late${i}` }))().then(id => ({ id }), err => ({ err }))
        })
      })
      await started
      const { id, err } = await /** @type {any} */ (late)
      if (err) {
        t.is(err.code, 'LEVELKIT_INVALID', 'refused with LEVELKIT_INVALID')
        outcomes.refused++
      } else if (await users.get(id)) {
        outcomes.written++
      } else {
        outcomes.lost++
      }
    }
    t.is(outcomes.lost, 0, 'no operation resolved without being written')
    t.ok(outcomes.written > 0 && outcomes.refused > 0, `both outcomes happen (${JSON.stringify(outcomes)})`)
    await db.close()
  })

  test(`${common.backend}: concurrent writes and operations inside one scope are serialized`, async t => {
    const { db, users } = await schema()
    const ids = await db.write(w => Promise.all([1, 2, 3].map(i => users.in(w).insert({ username: `u${i}` }))))
    t.same(ids, [1, 2, 3])
    const results = await Promise.allSettled([
      db.write(async w => { await users.in(w).update(1, { username: 'taken' }) }),
      users.update(2, { username: 'taken' })
    ])
    t.same(results.map(r => r.status).sort(), ['fulfilled', 'rejected'], 'exactly one of two racing writers wins the unique value')
    t.ok((await db.check()).ok)
    await db.close()
  })
}
