import { encodeTuple as encode, decodeTuple as decode } from '../../index.js'
import { rejects, usersSchema, namespaceOf, onModelWrite } from './index.js'

/** @param {any} test @param {any} common */
export default function (test, common) {
  // Every behaviour holds with edges only and with both directions also kept
  // as lists (one value per id).
  for (const lists of [[], ['from', 'to']]) relationSuite(test, common, lists)
  listSuite(test, common)
}

/** @param {any} test @param {any} common @param {string[]} lists */
function relationSuite (test, common, lists) {
  const layout = lists.length === 0 ? 'edges' : 'lists'
  /** @param {any} onDelete */
  async function schema (onDelete) {
    const db = await common.open()
    const users = usersSchema(db)
    const chats = db.collection('chats')
    const members = db.relation('members', { from: chats, to: users, onDelete, lists })
    return { db, users, chats, members }
  }

  test(`${common.backend} (${layout}): relation edges in both directions`, async t => {
    const { db, users, chats, members } = await schema('cascade')
    const [u1, u2, u3] = [await users.insert({ username: 'a' }), await users.insert({ username: 'b' }), await users.insert({ username: 'c' })]
    const [c1, c2] = [await chats.insert({ name: 'one' }), await chats.insert({ name: 'two' })]
    t.is(await members.add(c1, u1), true)
    t.is(await members.add(c1, u1), false, 'adding twice answers false')
    await members.add(c1, u3)
    await members.add(c1, u2)
    await members.add(c2, u2)
    t.same(await members.to(c1).all(), [u1, u2, u3], 'to() lists the to-side ids in order')
    t.same(await members.from(u2).all(), [c1, c2], 'from() lists the from-side ids')
    t.same(await members.to(c1, { gt: u1, limit: 1 }).all(), [u2], 'range-able')
    t.same(await members.to(c1, { reverse: true }).all(), [u3, u2, u1])
    t.is(await members.to(c1).count(), 3, 'countable')
    t.is(await members.has(c1, u2), true)
    t.is(await members.has(c2, u1), false)
    t.is(await members.remove(c1, u2), true)
    t.is(await members.remove(c1, u2), false)
    t.same(await members.from(u2).all(), [c2], 'removed from both directions')
    await rejects(t, members.add(c1, 99), 'LEVELKIT_NOT_FOUND', 'unknown user')
    await rejects(t, members.add(99, u1), 'LEVELKIT_NOT_FOUND', 'unknown chat')
    await rejects(t, members.add(c1, 'x'), 'LEVELKIT_INVALID', 'bad id')
    t.ok((await db.check()).ok)
    await db.close()
  })

  test(`${common.backend} (${layout}): addMany adds several edges as one operation, all or none`, async t => {
    const { db, users, chats, members } = await schema('cascade')
    const [u1, u2, u3] = [await users.insert({ username: 'a' }), await users.insert({ username: 'b' }), await users.insert({ username: 'c' })]
    const c1 = await chats.insert({ name: 'one' })
    await members.add(c1, u2)
    const writes = []
    onModelWrite(db, (/** @type {any[]} */ ops) => writes.push(ops.length))
    t.is(await members.addMany(c1, [u3, u1, u2, u3]), 2, 'counts the new edges only')
    t.is(writes.length, 1, 'one batch')
    t.same(await members.to(c1).all(), [u1, u2, u3])
    t.same(await members.from(u3).all(), [c1])
    const err = await rejects(t, members.addMany(c1, [u1, 99, u2]), 'LEVELKIT_NOT_FOUND', 'a missing endpoint')
    t.is(/** @type {any} */ (err).id, 99, 'names it')
    const c2 = await chats.insert({ name: 'two' })
    await rejects(t, members.addMany(c2, [u1, 99]), 'LEVELKIT_NOT_FOUND')
    t.same(await members.to(c2).all(), [], 'and writes none of the edges')
    await rejects(t, members.addMany(c2, /** @type {any} */ (u1)), 'LEVELKIT_INVALID', 'not an array')
    await rejects(t, members.addMany(c2, [u1, 'x']), 'LEVELKIT_INVALID', 'a bad id')
    t.same(await members.from(u1).all(), [c1], 'nothing written by the refused calls')
    await db.write(async (w) => {
      await members.in(w).addMany(c2, [u1])
      try {
        await members.in(w).addMany(c2, [u2, 99])
      } catch {}
    })
    t.same(await members.to(c2).all(), [u1], 'in a write scope, a failed addMany leaves nothing of itself')
    t.is(await members.addMany(c2, []), 0, 'an empty array adds nothing')
    t.ok((await db.check()).ok)
    await db.close()
  })

  test(`${common.backend} (${layout}): onDelete cascade removes edges in the same batch`, async t => {
    const { db, users, chats, members } = await schema('cascade')
    const u1 = await users.insert({ username: 'a' })
    const u2 = await users.insert({ username: 'b' })
    const c1 = await chats.insert({ name: 'one' })
    const c2 = await chats.insert({ name: 'two' })
    await members.add(c1, u1)
    await members.add(c1, u2)
    await members.add(c2, u1)
    const writes = []
    onModelWrite(db, ops => writes.push(ops.length))
    await chats.del(c1)
    // Lists: c1's to-list deleted, u1's and u2's from-lists rewritten.
    t.same(writes, [lists.length === 0 ? 5 : 4], 'the record and its edges in both directions, in one batch')
    t.same(await members.from(u1).all(), [c2])
    t.same(await members.from(u2).all(), [])
    await users.del(u1)
    t.same(await members.to(c2).all(), [], 'deleting the to-side cascades too')
    t.ok((await db.check()).ok)
    await db.close()
  })

  test(`${common.backend} (${layout}): onDelete restrict refuses and writes nothing`, async t => {
    const { db, users, chats, members } = await schema('restrict')
    const u1 = await users.insert({ username: 'a' })
    const c1 = await chats.insert({ name: 'one' })
    await members.add(c1, u1)
    await rejects(t, users.del(u1), 'LEVELKIT_RESTRICT')
    await rejects(t, chats.del(c1), 'LEVELKIT_RESTRICT')
    t.ok(await users.get(u1), 'user still there')
    await members.remove(c1, u1)
    t.is(await users.del(u1), true, 'deletable once unlinked')
    await db.close()
  })

  test(`${common.backend} (${layout}): onDelete per side, and self relations`, async t => {
    const db = await common.open()
    const people = db.collection('people')
    const chats = db.collection('chats')
    const owners = db.relation('owners', { from: chats, to: people, onDelete: { from: 'cascade', to: 'restrict' }, lists })
    const follows = db.relation('follows', { from: people, to: people, lists })
    const [p1, p2] = [await people.insert({ n: 1 }), await people.insert({ n: 2 })]
    const c = await chats.insert({})
    await owners.add(c, p1)
    await rejects(t, people.del(p1), 'LEVELKIT_RESTRICT', 'to side restricts')
    await chats.del(c)
    t.same(await owners.from(p1).all(), [], 'from side cascades')
    await follows.add(p1, p2)
    await follows.add(p2, p1)
    await follows.add(p1, p1)
    t.same(await follows.from(p1).all(), [p1, p2], 'a record may follow itself')
    await people.del(p1)
    t.same(await follows.to(p2).all(), [], 'self relation: both roles cleaned')
    t.same(await follows.from(p2).all(), [])
    t.ok((await db.check()).ok)
    await db.close()
  })
}

/** The lists option itself: its validation, what it stores, and check(). @param {any} test @param {any} common */
function listSuite (test, common) {
  test(`${common.backend}: the lists option is validated`, async t => {
    const db = await common.open()
    const users = usersSchema(db)
    const chats = db.collection('chats')
    for (const lists of ['from', ['sideways'], ['from', 'from'], null]) {
      t.throws(() => db.relation('members', { from: chats, to: users, lists }), /lists option/, `refuses ${JSON.stringify(lists)}`)
    }
    const members = db.relation('members', { from: chats, to: users, lists: ['to'] })
    const u1 = await users.insert({ username: 'a' })
    const c1 = await chats.insert({})
    await members.add(c1, u1)
    t.same(await members.to(c1).all(), [u1])
    t.same(await members.from(u1).all(), [c1], 'the direction without lists reads its edges')
    await db.close()
  })

  test(`${common.backend}: lists hold each id's ids in id order, one value per id`, async t => {
    const db = await common.open()
    const people = db.collection('people', { id: p => p.name })
    const follows = db.relation('follows', { from: people, to: people, lists: ['from'] })
    for (const name of ['bo', 'al', 'cy', 'é', '𝄞', 'z', 'ab']) await people.insert({ name })
    // In key order, which differs from JS string order for astral characters.
    for (const name of ['𝄞', 'z', 'cy', 'ab', 'é', 'al']) await follows.add(name, 'bo')
    const stored = await db.level.sublevel('follows.list.from', { keyEncoding: 'view', valueEncoding: 'view' }).iterator().all()
    t.is(stored.length, 1, 'one value for bo')
    t.same(decode(stored[0][0]), 'bo')
    t.same(decode(stored[0][1]), ['ab', 'al', 'cy', 'z', 'é', '𝄞'], 'ids in tuple (UTF-8 byte) order')
    t.same(await follows.from('bo').all(), ['ab', 'al', 'cy', 'z', 'é', '𝄞'])
    t.same(await follows.from('bo', { limit: 2 }).all(), ['ab', 'al'], 'limit')
    t.same(await follows.from('bo', { reverse: true, limit: 2 }).all(), ['𝄞', 'é'], 'reverse')
    t.same(await follows.from('bo', { gt: 'cy' }).all(), ['z', 'é', '𝄞'], 'a range reads the edges')
    const first = await follows.from('bo', { limit: 3 }).page()
    t.same((await follows.from('bo', { limit: 3, cursor: first.cursor }).all()), ['z', 'é', '𝄞'], 'a cursor resumes')
    const all = await follows.from('bo').all()
    all.push('mutated')
    t.is((await follows.from('bo').all()).length, 6, 'callers get their own array')
    await follows.remove('𝄞', 'bo')
    t.same(await follows.from('bo').all(), ['ab', 'al', 'cy', 'z', 'é'], 'remove updates the list')
    for (const name of ['z', 'cy', 'ab', 'é', 'al']) await follows.remove(name, 'bo')
    t.same(await db.level.sublevel('follows.list.from', { keyEncoding: 'view', valueEncoding: 'view' }).keys().all(), [], 'an empty list is deleted')
    t.same(await follows.from('bo').all(), [])
    t.ok((await db.check()).ok)
    await db.close()
  })

  test(`${common.backend}: lists of sequence ids, changed as bytes, stay sorted and exact`, async t => {
    const db = await common.open()
    const people = db.collection('people')
    const follows = db.relation('follows', { from: people, to: people, lists: ['from', 'to'] })
    for (let i = 0; i < 40; i++) await people.insert({ n: i })
    const raw = db.level.sublevel('follows.list.to', { keyEncoding: 'view', valueEncoding: 'view' })
    /** @type {Set<number>} */
    const model = new Set()
    let seed = 12345
    const random = (/** @type {number} */ n) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n }
    let mismatches = 0
    for (let step = 1; step <= 300; step++) {
      const other = 1 + random(40)
      const adding = random(3) > 0
      const changed = adding ? await follows.add(7, other) : await follows.remove(7, other)
      if (changed !== (adding ? !model.has(other) : model.has(other))) mismatches++
      if (adding) model.add(other)
      else model.delete(other)
      if (await follows.has(7, other) !== adding) mismatches++
      if (step % 25 === 0) {
        const want = [...model].sort((a, b) => a - b)
        const stored = await raw.get(encode(7))
        if (JSON.stringify(await follows.to(7).all()) !== JSON.stringify(want)) mismatches++
        if (want.length === 0 ? stored !== undefined : JSON.stringify([...stored]) !== JSON.stringify([...encode(want)])) mismatches++
      }
    }
    t.is(mismatches, 0, 'every answer, list and stored value matches a plain set after 300 random adds and removes')
    t.ok((await db.check()).ok)
    await db.close()
  })

  test(`${common.backend}: a list is written in the same batch as its edge, in a write scope too`, async t => {
    const db = await common.open()
    const users = usersSchema(db)
    const chats = db.collection('chats')
    const members = db.relation('members', { from: chats, to: users, lists: ['from', 'to'] })
    const u1 = await users.insert({ username: 'a' })
    const u2 = await users.insert({ username: 'b' })
    /** @type {string[][]} */
    const batches = []
    // The stored schema's record of the relation's layout rides with its first write (lib/schema.js).
    onModelWrite(db, (/** @type {any[]} */ ops) => batches.push(ops.map(op => namespaceOf(op.key)).filter(name => name !== ':levelkit.meta').sort()))
    const chat = await db.write(async (w) => {
      const id = await chats.in(w).insert({})
      await members.in(w).add(id, u1)
      await members.in(w).add(id, u2)
      t.same(await members.in(w).to(id).all(), [], 'a scoped query does not see the scope\'s own edges')
      return id
    })
    t.same(batches, [['chats', 'chats.seq', 'members.list.from', 'members.list.from', 'members.list.to']],
      'one batch: one from-list per user, the chat\'s to-list once (each add rewrote it), no edge keys')
    t.same(await members.to(chat).all(), [u1, u2])
    await rejects(t, db.write(async (w) => {
      await members.in(w).remove(chat, u1)
      throw new Error('changed my mind')
    }), undefined, 'a failed scope')
    t.same(await members.to(chat).all(), [u1, u2], 'writes nothing, lists included')
    t.same(await members.from(u1).all(), [chat])
    t.ok((await db.check()).ok)
    await db.close()
  })

  test(`${common.backend}: check() compares every list with the edges, and repairs it`, async t => {
    const db = await common.open()
    const users = usersSchema(db)
    const chats = db.collection('chats')
    const members = db.relation('members', { from: chats, to: users, lists: ['from'] })
    const [u1, u2, u3] = [await users.insert({ username: 'a' }), await users.insert({ username: 'b' }), await users.insert({ username: 'c' })]
    const [c1, c2] = [await chats.insert({}), await chats.insert({})]
    await members.add(c1, u1)
    await members.add(c2, u1)
    await members.add(c1, u2)
    await members.add(c2, u3)
    t.ok((await db.check()).ok)

    // Damage behind levelkit's back: a wrong list, a list naming an edge the
    // other direction lacks, a missing list (as when lists are turned on for
    // a relation that already has edges), a list for a record that does not
    // exist, and a key that does not decode.
    const lists = db.level.sublevel('members.list.from', { keyEncoding: 'view', valueEncoding: 'view' })
    await lists.put(encode(u1), encode([c2]))
    await lists.put(encode(u2), encode([c1, c2]))
    await lists.del(encode(u3))
    await lists.put(encode(99), encode([c1]))
    await lists.put(new Uint8Array([0xff, 0xff]), encode([c1]))
    const report = await db.check()
    t.same(report.problems.map(p => p.type).sort(), ['edge-list-mismatch', 'edge-list-mismatch', 'edge-list-mismatch', 'invalid-key', 'one-sided-edge'])
    t.same(report.problems.map(p => p.namespace).sort(), ['members.list.from', 'members.list.from', 'members.list.from', 'members.list.from', 'members.list.from'])
    t.ok(report.problems.some(p => /lists \[2\] as from\(1\), but its edges give \[1,2\]/.test(p.message)), 'says what differs')
    t.ok(report.problems.some(p => /2 -> 2 without its forward entry/.test(p.message)), 'names the one-sided edge')
    const repaired = await db.check({ repair: true })
    t.is(repaired.repaired, 5, 'every one repaired')
    t.ok((await db.check()).ok, 'clean after the repair')
    t.same(await members.from(u1).all(), [c1, c2])
    t.same(await members.from(u2).all(), [c1, c2])
    t.same(await members.to(c2).all(), [u1, u2, u3], 'the one-sided edge completed')
    t.same(await members.from(u3).all(), [c2], 'the missing list rebuilt')
    t.is(await lists.get(encode(99)), undefined, 'the list of a missing record deleted')
    await db.close()
  })

  test(`${common.backend}: a repair moves the lists of a layout no longer in use, and never deletes one it cannot read`, async t => {
    const db = await common.open()
    const users = usersSchema(db)
    const chats = db.collection('chats')
    const members = db.relation('members', { from: chats, to: users })
    const [u1, u2, u3] = [await users.insert({ username: 'a' }), await users.insert({ username: 'b' }), await users.insert({ username: 'c' })]
    const [c1, c2] = [await chats.insert({}), await chats.insert({})]
    await members.add(c1, u1)
    // What a declaration with lists: ['to'] left: a list to move, and one
    // that does not decode, whose edges nobody can tell.
    const old = db.level.sublevel('members.list.to', { keyEncoding: 'view', valueEncoding: 'view' })
    const unreadable = new Uint8Array([0xff, 0x01])
    await old.put(encode(c2), encode([u2, u3]))
    await old.put(encode(c1), unreadable)
    const repair = await db.check({ repair: true })
    const moved = repair.problems.filter(p => p.type === 'edge-in-old-layout')
    t.same(moved.map(p => [p.key, p.repaired]), [[c1, false], [c2, true]], 'the readable list is moved, the other is not')
    t.ok(/does not decode/.test(moved[0].message), `and says why: ${moved[0].message}`)
    t.same(await members.to(c2).all(), [u2, u3], 'the moved edges are in the layout in use')
    t.same(await members.from(u3).all(), [c2])
    t.same(Array.from(await old.get(encode(c1)) || []), Array.from(unreadable), 'the list it cannot read is left as it was')
    t.is(await old.get(encode(c2)), undefined, 'the moved list is deleted')
    await db.close()
  })
}
