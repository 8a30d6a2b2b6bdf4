import { encodeTuple as encode, open } from '../../index.js'
import { usersSchema, settlesWithin, rejects } from './index.js'

/** @param {any} test @param {any} common */
export default function (test, common) {
  test(`${common.backend}: check() finds and repairs every kind of damage`, async t => {
    const db = await common.open()
    const users = usersSchema(db)
    const chats = db.collection('chats')
    const members = db.relation('members', { from: chats, to: users })
    const messages = db.children('messages', { parent: chats })
    const u1 = await users.insert({ username: 'ann', age: 3, tags: ['a'] })
    const u2 = await users.insert({ username: 'bob', age: 4 })
    const c1 = await chats.insert({})
    await members.add(c1, u1)
    await messages.append(c1, 'hi')
    t.same(await db.check(), { ok: true, problems: [], repaired: 0 }, 'clean to begin with')

    // Damage the namespaces behind levelkit's back, the way a buggy writer could.
    const level = db.level
    const sub = (/** @type {string} */ name, valueEncoding = 'utf8') => level.sublevel(name, { keyEncoding: 'view', valueEncoding })
    await sub('users.idx.tags', 'view').put(encode(['zzz', u2]), new Uint8Array(0)) // dangling
    await sub('users.idx.byAge', 'view').del(encode([[4], u2])) // missing
    await sub('users', 'utf8').put(encode(3), JSON.stringify({ id: 3, username: 'ann' })) // unique violation
    await sub('members.rev').del(encode([u1, c1])) // one-sided
    await sub('members.fwd').put(encode([c1, 77]), '') // dangling edge
    await sub('messages').put(encode([55, 1]), '"orphan"') // orphan child
    await sub('messages.seq').put(encode(c1), '0') // sequence behind
    await sub('users.seq').put(encode('last'), '1') // sequence behind

    const report = await db.check()
    t.is(report.ok, false)
    const types = report.problems.map(p => p.type).sort()
    // On IndexedDB a collection's sequence behind its records is how it is
    // kept (Collection#settleSequence()): only the children's is reported.
    const behind = common.backend === 'indexeddb' ? ['sequence-behind'] : ['sequence-behind', 'sequence-behind']
    t.same(types, [
      'dangling-edge', 'dangling-index-entry', 'missing-index-entry',
      'one-sided-edge', 'orphan-child', ...behind, 'unique-violation'
    ], 'every problem reported once')
    t.ok(report.problems.every(p => typeof p.message === 'string' && typeof p.namespace === 'string' && p.repaired === false))

    const repair = await db.check({ repair: true })
    t.is(repair.problems.filter(p => !p.repaired).map(p => p.type).join(), 'unique-violation', 'all but the unique violation repaired')
    const after = await db.check()
    t.same(after.problems.map(p => p.type), ['unique-violation'], 'only the unrepairable problem is left')
    await users.del(3)
    t.same(await db.check(), { ok: true, problems: [], repaired: 0 }, 'clean once the duplicate record is gone')
    t.same(await members.from(u1).all(), [c1], 'one-sided edge completed')
    t.same(await members.to(c1).all(), [u1], 'dangling edge removed')
    t.is(await messages.append(c1, 'next'), 2, 'sequence repaired')
    t.is(await users.insert({ username: 'cat' }), 4, 'collection sequence repaired')
    await db.close()
  })

  test(`${common.backend}: a sequence that lags its records never hands out an id in use`, async t => {
    const first = await common.open()
    const users = usersSchema(first)
    for (const username of ['a', 'b', 'c']) await users.insert({ username })
    // The damage check() calls sequence-behind, made behind levelkit's back.
    await first.level.sublevel('users.seq', { keyEncoding: 'view' }).put(encode('last'), '1')
    // (On IndexedDB how it is kept: see Collection#settleSequence().)
    t.same((await first.check()).problems.map(p => p.type), common.backend === 'indexeddb' ? [] : ['sequence-behind'])

    // A new process (here: a new levelkit database over the same store).
    const second = await open({ db: first.level })
    const again = usersSchema(second)
    t.is(await again.insert({ username: 'd' }), 4, 'the next id is past the highest stored id')
    t.same((await again.query().all()).map(u => u.username), ['a', 'b', 'c', 'd'], 'no record overwritten')
    t.ok((await second.check()).ok, 'and the sequence is back in step')
    await second.close()
    await first.close()
  })

  test(`${common.backend}: check() reports a record and a sequence at a placeholder id, and sets the sequence back to the highest id in use`, async t => {
    const db = await common.open()
    const users = usersSchema(db)
    for (const username of ['a', 'b']) await users.insert({ username })
    // What a deferred insert's batch written as taken would leave (a bug: lib/deferred-ids.js).
    const placeholder = 2 ** 53 - 2 ** 24 + 1
    const sequence = db.level.sublevel('users.seq', { keyEncoding: 'view', valueEncoding: 'utf8' })
    await db.level.sublevel('users', { keyEncoding: 'view', valueEncoding: 'utf8' }).put(encode(placeholder), JSON.stringify({ id: placeholder, username: 'p' }))
    await sequence.put(encode('last'), String(placeholder))
    const placeholders = (/** @type {any} */ report) => report.problems.filter((/** @type {any} */ p) => p.type === 'placeholder-id')
    const found = placeholders(await db.check())
    t.same(found.map((/** @type {any} */ p) => p.namespace).sort(), ['users', 'users.seq'], 'the record and the sequence, each once')
    t.notOk((await db.check()).problems.some((/** @type {any} */ p) => p.type === 'sequence-behind'), 'the placeholder is not taken for the highest id')
    const repaired = placeholders(await db.check({ repair: true }))
    t.same(repaired.map((/** @type {any} */ p) => [p.namespace, p.repaired]).sort(), [['users', false], ['users.seq', true]], 'the sequence repaired, the record left to look at')
    t.is(await sequence.get(encode('last')), '2', 'the sequence is at the highest id in use')
    // A new process (here: a new levelkit database over the same store) takes the next id below the placeholders.
    const again = await open({ db: db.level })
    t.is(await usersSchema(again).insert({ username: 'c' }), 3, 'the next insert takes id 3, not one past the placeholder')
    await again.close()
    await db.close()
  })

  test(`${common.backend}: the first put() of a new process past the sequence raises it`, async t => {
    const first = await common.open()
    const users = usersSchema(first)
    await users.insert({ username: 'a' })
    await users.insert({ username: 'b' })
    const second = await open({ db: first.level })
    const again = usersSchema(second)
    t.is(await again.put(3, { username: 'c' }), true)
    t.same(await second.check(), { ok: true, problems: [], repaired: 0 }, 'the sequence moved to 3 with the record')
    t.is(await again.insert({ username: 'd' }), 4)
    await second.close()
    await first.close()
  })

  test(`${common.backend}: check() inside a db.write() callback answers, with what is written`, async t => {
    const db = await common.open()
    const users = usersSchema(db)
    await users.insert({ username: 'ann' })
    const outcome = await settlesWithin(db.write(async w => {
      await users.in(w).insert({ username: 'bob' })
      const report = await db.check()
      return { report, seen: (await users.query().all()).map(u => u.username) }
    }), 5000)
    if (outcome === 'hung') {
      t.fail('check() inside db.write() waits for the callback that waits for it')
      return
    }
    t.same(outcome.report, { ok: true, problems: [], repaired: 0 }, 'it answers')
    t.same(outcome.seen, ['ann'], 'reads outside in(w) see what is written, not the callback\'s own writes')
    t.same((await users.query().all()).map(u => u.username), ['ann', 'bob'], 'and the callback\'s writes are written')
    await db.close()
  })

  test(`${common.backend}: check({ repair: true }) inside a db.write() callback is refused, never waits for it`, async t => {
    const db = await common.open()
    const users = usersSchema(db)
    await users.insert({ username: 'ann' })
    const outcome = await settlesWithin(db.write(async w => {
      await users.in(w).insert({ username: 'bob' })
      try {
        await db.check({ repair: true })
        return 'answered'
      } catch (err) {
        return err.code
      }
    }), 5000)
    t.is(outcome, 'LEVELKIT_INVALID', 'refused at once')
    t.same((await users.query().all()).map(u => u.username), ['ann', 'bob'], 'and the callback\'s writes are written')
    t.same((await db.check({ repair: true })).problems, [], 'a repair after the write runs')
    await db.close()
  })

  test(`${common.backend}: a repair leaves the index entries of a record it cannot read`, async t => {
    const db = await common.open()
    const users = usersSchema(db)
    const people = db.collection('people', {
      id: p => p.name,
      indexes: { email: { unique: true, covering: true, key: p => p.email } }
    })
    const ann = await users.insert({ username: 'ann', age: 30, tags: ['x'] })
    await people.insert({ name: 'cat', email: 'cat@example.org' })
    // Damage behind levelkit's back: the records no longer parse.
    await db.level.sublevel('users', { keyEncoding: 'view', valueEncoding: 'utf8' }).put(encode(ann), '{"id":1,"usern')
    await db.level.sublevel('people', { keyEncoding: 'view', valueEncoding: 'utf8' }).put(encode('cat'), 'not json')

    const repair = await db.check({ repair: true })
    const types = repair.problems.map(p => `${p.type}:${p.namespace}:${p.repaired}`).sort()
    t.same(types, [
      'dangling-index-entry:people.idx.email:false',
      'dangling-index-entry:users.idx.byAge:false',
      'dangling-index-entry:users.idx.tags:false',
      'dangling-index-entry:users.idx.username:false',
      'invalid-record:people:false',
      'invalid-record:users:false'
    ], 'the entries of unreadable records are reported, not repaired')
    await rejects(t, users.insert({ username: 'ann' }), 'LEVELKIT_UNIQUE', 'the unreadable record keeps its unique value')
    await rejects(t, people.insert({ name: 'dan', email: 'cat@example.org' }), 'LEVELKIT_UNIQUE', 'and so does a covering entry')
    await db.close()
  })

  test(`${common.backend}: check() finds sequences, children, counters and purge markers that do not parse`, async t => {
    const db = await common.open()
    const users = usersSchema(db)
    const chats = db.collection('chats')
    const notes = db.children('notes', { parent: chats })
    db.children('posts', { parent: chats, onDelete: 'purge' })
    const hits = db.counter('hits')
    const c1 = await chats.insert({})
    await users.insert({ username: 'ann' })
    await notes.append(c1, 'a')
    await notes.append(c1, 'b')
    await hits.add('x', 2)
    const sub = (/** @type {string} */ name) => db.level.sublevel(name, { keyEncoding: 'view', valueEncoding: 'utf8' })
    // Damage behind levelkit's back.
    await sub('users.seq').put(encode('last'), 'one')
    await sub('notes.seq').put(encode(c1), '2.5')
    await sub('notes').put(encode([c1, 2]), '{"not json')
    await sub('posts.purge').put(new Uint8Array([0xff, 0x01]), '')
    await sub('hits').put(encode('y'), 'NaN')
    await sub('hits').put(new Uint8Array([0xff]), '3')

    const report = await db.check()
    t.same(report.problems.map(p => `${p.type}:${p.namespace}`).sort(), [
      'invalid-child:notes', 'invalid-counter:hits', 'invalid-key:hits', 'invalid-key:posts.purge',
      'invalid-sequence:notes.seq', 'invalid-sequence:users.seq'
    ], 'each is reported once')
    const repair = await db.check({ repair: true })
    t.same(repair.problems.filter(p => !p.repaired).map(p => p.type).sort(), ['invalid-child', 'invalid-counter'], 'what has no right answer is left for you')
    t.is(await users.insert({ username: 'bob' }), 2, 'the collection sequence was raised to the highest id')
    t.is(await notes.append(c1, 'c'), 3, 'the children sequence was raised to the highest seq')
    t.same((await db.check()).problems.map(p => p.type).sort(), ['invalid-child', 'invalid-counter'])
    await db.close()
  })

  test(`${common.backend}: check() validates its options`, async t => {
    const db = await common.open()
    try {
      await db.check({ repair: 'yes' })
      t.fail('should throw')
    } catch (err) {
      t.is(err.code, 'LEVELKIT_INVALID')
    }
    await db.close()
  })
}
