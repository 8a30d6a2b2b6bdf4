import { rejects, usersSchema } from './index.js'

/** @param {any} test @param {any} common */
export default function (test, common) {
  async function schema (onDelete) {
    const db = await common.open()
    const users = usersSchema(db)
    const chats = db.collection('chats')
    const members = db.relation('members', { from: chats, to: users, onDelete })
    return { db, users, chats, members }
  }

  test(`${common.backend}: relation edges in both directions`, async t => {
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

  test(`${common.backend}: onDelete cascade removes edges in the same batch`, async t => {
    const { db, users, chats, members } = await schema('cascade')
    const u1 = await users.insert({ username: 'a' })
    const u2 = await users.insert({ username: 'b' })
    const c1 = await chats.insert({ name: 'one' })
    const c2 = await chats.insert({ name: 'two' })
    await members.add(c1, u1)
    await members.add(c1, u2)
    await members.add(c2, u1)
    const writes = []
    db.level.on('write', ops => writes.push(ops.length))
    await chats.del(c1)
    t.same(writes, [5], 'record + 2 edges x 2 directions in one batch')
    t.same(await members.from(u1).all(), [c2])
    t.same(await members.from(u2).all(), [])
    await users.del(u1)
    t.same(await members.to(c2).all(), [], 'deleting the to-side cascades too')
    t.ok((await db.check()).ok)
    await db.close()
  })

  test(`${common.backend}: onDelete restrict refuses and writes nothing`, async t => {
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

  test(`${common.backend}: onDelete per side, and self relations`, async t => {
    const db = await common.open()
    const people = db.collection('people')
    const chats = db.collection('chats')
    const owners = db.relation('owners', { from: chats, to: people, onDelete: { from: 'cascade', to: 'restrict' } })
    const follows = db.relation('follows', { from: people, to: people })
    const [p1, p2] = [await people.insert({ n: 1 }), await people.insert({ n: 2 })]
    const c = await chats.insert({})
    await owners.add(c, p1)
    await rejects(t, people.del(p1), 'LEVELKIT_RESTRICT', 'to side restricts')
    await chats.del(c)
    t.same(await owners.from(p1).all(), [], 'from side cascades')
    await follows.add(p1, p2)
    await follows.add(p2, p1)
    await people.del(p1)
    t.same(await follows.to(p2).all(), [], 'self relation: both roles cleaned')
    t.same(await follows.from(p2).all(), [])
    t.ok((await db.check()).ok)
    await db.close()
  })
}
