import { countReads } from './reads.js'
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
  test(`${common.backend}: a small limit on a relation reads a small number of entries`, async t => {
    const db = await common.open()
    const users = db.collection('users')
    const chats = db.collection('chats')
    const members = db.relation('members', { from: chats, to: users })
    const chat = await chats.insert({})
    const ids = []
    for (let i = 0; i < 300; i++) ids.push(await users.insert({}))
    await members.addMany(chat, ids)
    const reads = countReads(db.level)
    const first = await reads.measure(() => members.to(chat, { limit: 10 }).all())
    t.same(first.result, ids.slice(0, 10), 'the first 10')
    t.ok(first.counts.entries <= 10, `read ${first.counts.entries} entries for a limit of 10`)
    const last = await reads.measure(() => members.to(chat, { limit: 10, reverse: true }).all())
    t.same(last.result, ids.slice(-10).reverse(), 'the last 10')
    t.ok(last.counts.entries <= 10, `read ${last.counts.entries} entries for a limit of 10, reverse`)
    const again = await reads.measure(() => members.to(chat, { limit: 10 }).all())
    t.ok(again.counts.entries <= 10, `a limited read kept no whole list it would have to read: ${again.counts.entries} entries the second time`)
    const whole = await reads.measure(() => members.to(chat).all())
    t.same(whole.result, ids, 'a whole read still lists every id')
    t.same((await members.from(ids[7], { limit: 1 }).all()), [chat])
    await db.close()
  })

  test(`${common.backend}: ranges, limits, reverse, pages and counts over relation lists agree with edges`, async t => {
    const db = await common.open()
    const people = db.collection('people')
    const tags = db.collection('tags', { id: (/** @type {any} */ tag) => tag.name })
    const edges = db.relation('edges', { from: people, to: people })
    const lists = db.relation('lists', { from: people, to: people, lists: ['from', 'to'] })
    const tagEdges = db.relation('tagEdges', { from: people, to: tags })
    const tagLists = db.relation('tagLists', { from: people, to: tags, lists: ['to'] })
    const ids = []
    for (let i = 0; i < 120; i++) ids.push(await people.insert({}))
    const names = []
    for (let i = 0; i < 60; i++) names.push((await tags.insert({ name: `t${String(i * 7 % 60).padStart(2, '0')}${'x'.repeat(i % 3)}` })))
    let seed = 4242
    const random = (/** @type {number} */ n) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n }
    const linked = ids.filter(() => random(3) > 0)
    const tagged = names.filter(() => random(3) > 0)
    await edges.addMany(ids[0], linked)
    await lists.addMany(ids[0], linked)
    await tagEdges.addMany(ids[0], tagged)
    await tagLists.addMany(ids[0], tagged)
    /** @type {Array<[string, any, any, any[]]>} */
    const pairs = [['sequence ids', edges, lists, ids], ['string ids', tagEdges, tagLists, names]]
    let compared = 0
    const differences = []
    for (const [kind, byEdges, byLists, pool] of pairs) {
      for (let i = 0; i < 150; i++) {
        /** @type {any} */
        const options = {}
        const pick = () => random(5) === 0 ? (kind === 'sequence ids' ? 1000 : 'zz') : pool[random(pool.length)]
        if (random(2)) options[random(2) ? 'gt' : 'gte'] = pick()
        if (random(2)) options[random(2) ? 'lt' : 'lte'] = pick()
        if (random(8) === 0) options.eq = pick()
        if (random(2)) options.limit = random(10)
        if (random(2)) options.reverse = true
        const want = await byEdges.to(ids[0], options).all()
        const got = await byLists.to(ids[0], options).all()
        const wantCount = await byEdges.to(ids[0], options).count()
        const gotCount = await byLists.to(ids[0], options).count()
        const pages = []
        let cursor = null
        do {
          const page = await byLists.to(ids[0], { ...options, limit: 1 + random(4), cursor }).page()
          pages.push(...page.items)
          cursor = page.cursor
        } while (cursor !== null)
        const wantAll = await byEdges.to(ids[0], { ...options, limit: undefined }).all()
        compared++
        if (JSON.stringify([got, gotCount, pages]) !== JSON.stringify([want, wantCount, wantAll])) {
          differences.push(`${kind} ${JSON.stringify(options)}: ${JSON.stringify([got, gotCount, pages])} != ${JSON.stringify([want, wantCount, wantAll])}`)
        }
      }
    }
    t.same(differences.slice(0, 3), [], `${compared} random queries answer the same on both layouts`)
    t.same(await lists.from(linked[0], { limit: 1 }).all(), [ids[0]], 'from() over a list')
    await db.close()
  })
}

/**
 * The error `fn` throws or rejects with, or null.
 * @param {() => any} fn
 */
async function failure (fn) {
  try {
    await fn()
    return null
  } catch (err) {
    return /** @type {any} */ (err)
  }
}

/** @param {any} test @param {any} common */
export function options (test, common) {
  test(`${common.backend}: every call that takes options refuses unknown ones and non-objects`, async t => {
    const db = await common.open()
    const { users, chats, members, messages, hits } = oneOfEachModel(db)
    const chat = await chats.insert({})
    const user = await users.insert({ name: 'a' })
    await members.add(chat, user)
    await messages.append(chat, 'm')
    await hits.add('x')
    /** @type {Array<[string, (options: any) => any]>} */
    const calls = [
      ['collection.query()', options => users.query(options).all()],
      ['collection.count()', options => users.count(options)],
      ['collection.put()', options => users.put(user, { name: 'b' }, options)],
      ['collection.update()', options => users.update(user, { name: 'b' }, options)],
      ['collection.del()', options => users.del(user, options)],
      ['relation.to()', options => members.to(chat, options).all()],
      ['relation.from()', options => members.from(user, options).all()],
      ['children.range()', options => messages.range(chat, options).all()],
      // Accepting an option, it waits for a child: give up after a moment.
      ['children.watch()', options => Promise.race([messages.watch(chat, options).next(), new Promise(resolve => setTimeout(resolve, 100))])],
      ['counter.query()', options => hits.query(options).all()],
      ['db.check()', options => db.check(options)]
    ]
    for (const [name, call] of calls) {
      const err = await failure(() => call({ lmit: 5, reverse: undefined }))
      t.is(err?.code, 'LEVELKIT_INVALID', `${name} refuses an unknown option`)
      t.match(String(err?.message), /"lmit"/, `${name} names it: ${err?.message}`)
      for (const bad of [null, [], 'limit', 5, true]) {
        const refused = await failure(() => call(bad))
        t.is(refused?.code, 'LEVELKIT_INVALID', `${name} refuses ${JSON.stringify(bad)} as options`)
      }
    }
    const unknownIndexOption = await failure(() => users.query({ index: 'name', eq: 'a', limt: 1 }).all())
    t.match(String(unknownIndexOption?.message), /"limt"/, 'with other options that are fine')
    let threw = false
    try {
      users.query({ lmit: 5 })
    } catch {
      threw = true
    }
    t.ok(threw, 'query() throws at once, as for its other bad options')
    t.same(await users.query({ limit: 1, reverse: false, cursor: null, index: undefined }).all(), [{ id: user, name: 'a' }], 'known options work')
    for (const declare of [() => db.collection('c1', []), () => db.collection('c2', 'x'), () => db.relation('r1', []), () => db.children('k1', [])]) {
      t.is((await failure(declare))?.code, 'LEVELKIT_INVALID', 'declarations refuse arrays and strings as options')
    }
    t.is((await failure(() => db.sublevel('s1', [])))?.code, 'LEVELKIT_INVALID', 'db.sublevel() refuses an array')
    t.ok(db.sublevel('s2', { keyEncoding: 'tuple', separator: '!' }), 'and passes its options through to abstract-level')
    await db.close()
  })
}

/**
 * A model of each kind, small: users with a `name` index, chats, a relation
 * and children between them, a counter.
 * @param {any} db
 */
export function oneOfEachModel (db) {
  const users = db.collection('users', { indexes: { name: { key: (/** @type {any} */ u) => u.name } } })
  const chats = db.collection('chats')
  return {
    users,
    chats,
    members: db.relation('members', { from: chats, to: users }),
    messages: db.children('messages', { parent: chats }),
    hits: db.counter('hits')
  }
}
