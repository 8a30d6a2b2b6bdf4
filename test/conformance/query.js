import { rejects, usersSchema } from './index.js'

/** @param {any} test @param {any} common */
export default function (test, common) {
  async function seeded () {
    const db = await common.open()
    const users = usersSchema(db)
    const people = [
      ['ann', 31, 'Oslo'], ['bob', 25, 'Rome'], ['cat', 31, 'Bern'], ['dan', 40, 'Oslo'],
      ['eve', -2.5, 'Lima'], ['fay', 31.5, 'Kyiv'], ['gus', 39, 'Rome'], ['hal', 100, 'Oslo']
    ]
    for (const [username, age, city] of people) await users.insert({ username, age, city, tags: [city] })
    return { db, users }
  }
  const names = (/** @type {any[]} */ list) => list.map(u => u.username)

  test(`${common.backend}: query by id range, limit and reverse`, async t => {
    const { db, users } = await seeded()
    t.same(names(await users.query().all()), ['ann', 'bob', 'cat', 'dan', 'eve', 'fay', 'gus', 'hal'])
    t.same(names(await users.query({ gte: 3, lt: 6 }).all()), ['cat', 'dan', 'eve'])
    t.same(names(await users.query({ gt: 3, lte: 6 }).all()), ['dan', 'eve', 'fay'])
    t.same(names(await users.query({ reverse: true, limit: 2 }).all()), ['hal', 'gus'])
    t.same(names(await users.query({ limit: 0 }).all()), [])
    const seen = []
    for await (const u of users.query({ lt: 3 })) seen.push(u.username)
    t.same(seen, ['ann', 'bob'], 'async iteration')
    const entries = []
    for await (const [id, u] of users.query({ gte: 7 }).entries()) entries.push([id, u.username])
    t.same(entries, [[7, 'gus'], [8, 'hal']], 'entries() yields [id, record]')
    t.is(await users.count(), 8)
    t.is(await users.count({ gte: 5 }), 4)
    await db.close()
  })

  test(`${common.backend}: query by compound index with numeric order (negative, fractional)`, async t => {
    const { db, users } = await seeded()
    t.same(names(await users.query({ index: 'byAge' }).all()), ['eve', 'bob', 'cat', 'ann', 'fay', 'gus', 'dan', 'hal'],
      'ordered by [age, city]: -2.5 < 25 < 31 Bern < 31 Oslo < 31.5 < 39 < 40 < 100')
    t.same(names(await users.query({ index: 'byAge', gte: [30], lt: [40] }).all()), ['cat', 'ann', 'fay', 'gus'])
    t.same(names(await users.query({ index: 'byAge', gte: [30], lt: [40], limit: 2, reverse: true }).all()), ['gus', 'fay'])
    t.same(names(await users.query({ index: 'byAge', prefix: [31] }).all()), ['cat', 'ann'], 'prefix matches leading elements')
    t.same(names(await users.query({ index: 'byAge', gt: [31, 'Bern'], lte: [39, 'Rome'] }).all()), ['ann', 'fay', 'gus'])
    t.same(names(await users.query({ index: 'tags', eq: 'Oslo' }).all()), ['ann', 'dan', 'hal'], 'equal index values in id order')
    t.same(names(await users.query({ index: 'username', gte: 'c', lt: 'f' }).all()), ['cat', 'dan', 'eve'], 'unique index range')
    t.is(await users.count({ index: 'byAge', prefix: [31] }), 2)
    await db.close()
  })

  test(`${common.backend}: page() returns a cursor that resumes exactly after the page`, async t => {
    const { db, users } = await seeded()
    for (const reverse of [false, true]) {
      const all = names(await users.query({ index: 'byAge', reverse }).all())
      const collected = []
      let cursor = null
      let pages = 0
      do {
        const page = await users.query({ index: 'byAge', limit: 3, reverse, cursor }).page()
        collected.push(...names(page.items))
        cursor = page.cursor
        pages++
      } while (cursor)
      t.same(collected, all, `pages concatenate to the whole result (reverse: ${reverse})`)
      t.is(pages, 3, '8 items in pages of 3')
    }
    const first = await users.query({ index: 'byAge', limit: 8 }).page()
    t.is(first.cursor, null, 'no cursor when nothing follows')
    const bounded = await users.query({ index: 'byAge', gte: [30], lt: [40], limit: 3 }).page()
    const rest = await users.query({ index: 'byAge', gte: [30], lt: [40], limit: 3, cursor: bounded.cursor }).page()
    t.same(names(rest.items), ['gus'], 'the cursor keeps the original upper bound')
    t.throws(() => users.query({ index: 'tags', cursor: bounded.cursor }), /different query/, 'cursor of another index is refused')
    t.throws(() => users.query({ cursor: 'garbage!' }), /cursor/, 'garbage cursor is refused')
    await db.close()
  })

  test(`${common.backend}: pages stay correct while records are inserted between them`, async t => {
    const { db, users } = await seeded()
    const page1 = await users.query({ limit: 4 }).page()
    await users.insert({ username: 'new', age: 1 })
    const page2 = await users.query({ limit: 10, cursor: page1.cursor }).page()
    t.same(names(page2.items), ['eve', 'fay', 'gus', 'hal', 'new'], 'no item repeated or skipped')
    await db.close()
  })

  test(`${common.backend}: bad query options throw LEVELKIT_INVALID`, async t => {
    const { db, users } = await seeded()
    for (const options of [{ limit: -1 }, { limit: 1.5 }, { reverse: 'yes' }, { index: 'nope' }, { prefix: 3, index: 'byAge' }, { gte: {} }, { gte: NaN }]) {
      try {
        await users.query(options).all()
        t.fail(`accepted ${JSON.stringify(options)}`)
      } catch (err) {
        t.is(err.code, 'LEVELKIT_INVALID', `refuses ${JSON.stringify(options)}`)
      }
    }
    await rejects(t, users.getMany('1'), 'LEVELKIT_INVALID')
    await db.close()
  })
}
