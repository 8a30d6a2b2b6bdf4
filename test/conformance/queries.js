// Limits that some backend cannot take as an iterator limit: classic-level
// keeps 32 bits of it (2 ** 32 reads nothing, 2 ** 32 + 2 reads 2), and
// page() asks for one more than its limit.
const LARGE_LIMITS = [2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 2 ** 32 + 2, 2 ** 40, Number.MAX_SAFE_INTEGER, 2 ** 53, 1e300, Number.MAX_VALUE, Infinity]

/**
 * A database with one of everything a Query reads, each holding the same
 * five items: every documented limit goes through each kind of source.
 * @param {any} common
 */
async function everySource (common) {
  const db = await common.open()
  const users = db.collection('users', {
    indexes: {
      username: { unique: true, key: (/** @type {any} */ u) => u.username },
      covered: { unique: true, covering: true, key: (/** @type {any} */ u) => u.username },
      byAge: { key: (/** @type {any} */ u) => [u.age] }
    }
  })
  const chats = db.collection('chats')
  const edges = db.relation('edges', { from: chats, to: users })
  const lists = db.relation('lists', { from: chats, to: users, lists: ['from', 'to'] })
  const keyed = db.children('keyed', { parent: chats })
  const blocks = db.children('blocks', { parent: chats, blockSize: 2 })
  const hits = db.counter('hits')
  const chat = await chats.insert({})
  const ids = []
  for (const name of ['a', 'b', 'c', 'd', 'e']) {
    const id = await users.insert({ username: name, age: ids.length })
    ids.push(id)
    await edges.add(chat, id)
    await lists.add(chat, id)
    await keyed.append(chat, name)
    await blocks.append(chat, name)
    await hits.add(name, ids.length)
  }
  const names = ['a', 'b', 'c', 'd', 'e']
  const usernames = (/** @type {any[]} */ records) => records.map(u => u.username)
  /** @type {Array<[string, (options: any) => any, (items: any[]) => any[], any[]]>} name, query, what to compare, expected */
  const sources = [
    ['collection.query()', options => users.query(options), usernames, names],
    ['unique index query', options => users.query({ index: 'username', ...options }), usernames, names],
    ['covering index query', options => users.query({ index: 'covered', ...options }), usernames, names],
    ['index query', options => users.query({ index: 'byAge', ...options }), usernames, names],
    ['relation.to() (edges)', options => edges.to(chat, options), x => x, ids],
    ['relation.from() (edges)', options => edges.from(ids[2], options), x => x, [chat]],
    ['relation.to() (lists)', options => lists.to(chat, options), x => x, ids],
    ['relation.to() (lists, ranged)', options => lists.to(chat, { gte: ids[0], ...options }), x => x, ids],
    ['relation.to() (edges, ranged)', options => edges.to(chat, { gte: ids[0], ...options }), x => x, ids],
    ['children.range() (keys)', options => keyed.range(chat, options), x => x, names],
    ['children.range() (blocks)', options => blocks.range(chat, options), x => x, names],
    ['counter.query()', options => hits.query(options), x => x, [1, 2, 3, 4, 5]]
  ]
  return { db, users, sources }
}

/** @param {any} test @param {any} common */
export default function (test, common) {
  test(`${common.backend}: limits beyond what a backend iterator takes still give every item`, async t => {
    const { db, users, sources } = await everySource(common)
    for (const [name, query, view, expected] of sources) {
      for (const limit of LARGE_LIMITS) {
        const what = `${name} with limit ${limit}`
        t.same(view(await query({ limit }).all()), expected, `${what}: all()`)
        t.same(view(await query({ limit, reverse: true }).all()), expected.slice().reverse(), `${what}: all(), reverse`)
        const page = await query({ limit }).page()
        t.same([view(page.items), page.cursor], [expected, null], `${what}: page() is everything, with no cursor`)
        t.is(await query({ limit }).count(), expected.length, `${what}: count()`)
        const keys = []
        for await (const key of query({ limit }).keys()) keys.push(key)
        t.is(keys.length, expected.length, `${what}: keys()`)
      }
      t.same(view(await query({ limit: 2, reverse: true }).all()), expected.slice(-2).reverse(), `${name}: a small limit still limits`)
    }
    t.is(await users.count({ limit: 2 ** 32 + 2 }), 5, 'collection.count() with a large limit')
    t.is(await users.count({ index: 'byAge', limit: 2 ** 32 }), 5, 'collection.count() over an index with a large limit')
    await db.close()
  })

  test(`${common.backend}: a limit is a non-negative integer or Infinity`, async t => {
    const { db, sources } = await everySource(common)
    for (const [name, query] of sources) {
      for (const limit of [-1, -Infinity, 1.5, NaN, '5', null, 2n, true, [5]]) {
        try {
          await query({ limit }).all()
          t.fail(`${name} accepted limit ${String(limit)}`)
        } catch (err) {
          t.is(/** @type {any} */ (err).code, 'LEVELKIT_INVALID', `${name} refuses limit ${String(limit)}`)
        }
      }
    }
    await db.close()
  })
}
