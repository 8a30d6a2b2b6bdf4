import { rejects } from './index.js'

/** @param {any} test @param {any} common */
export default function (test, common) {
  async function schema (onDelete) {
    const db = await common.open()
    const chats = db.collection('chats')
    const messages = db.children('messages', { parent: chats, onDelete })
    return { db, chats, messages }
  }

  test(`${common.backend}: children get per-parent sequence numbers from 1`, async t => {
    const { db, chats, messages } = await schema()
    const c1 = await chats.insert({ name: 'one' })
    const c2 = await chats.insert({ name: 'two' })
    t.same([await messages.append(c1, { text: 'a' }), await messages.append(c1, { text: 'b' }), await messages.append(c2, 'x')], [1, 2, 1])
    t.same(await messages.get(c1, 2), { text: 'b' })
    t.is(await messages.get(c1, 3), undefined)
    t.is(await messages.lastSeq(c1), 2)
    await rejects(t, messages.append(99, 'x'), 'LEVELKIT_NOT_FOUND', 'parent must exist')
    await rejects(t, messages.append(c1, { bad: NaN }), 'LEVELKIT_INVALID')
    await rejects(t, messages.get(c1, 0), 'LEVELKIT_INVALID')
    t.is(await messages.lastSeq(c1), 2, 'failed appends used no sequence number')
    await db.close()
  })

  test(`${common.backend}: children ranges`, async t => {
    const { db, chats, messages } = await schema()
    const c = await chats.insert({})
    const other = await chats.insert({})
    for (let i = 1; i <= 10; i++) await messages.append(c, i)
    await messages.append(other, 'not mine')
    t.same(await messages.range(c).all(), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    t.same(await messages.range(c, { gte: 3, lt: 6 }).all(), [3, 4, 5])
    t.same(await messages.range(c, { lt: 8, limit: 3, reverse: true }).all(), [7, 6, 5], 'the n just below `lt`')
    t.same(await messages.range(c, { gt: 9 }).all(), [10])
    const entries = []
    for await (const entry of messages.range(c, { gte: 9 }).entries()) entries.push(entry)
    t.same(entries, [[9, 9], [10, 10]], 'entries() yields [seq, value]')
    t.is(await messages.range(c).count(), 10)
    const page = await messages.range(c, { limit: 4 }).page()
    t.same((await messages.range(c, { limit: 4, cursor: page.cursor }).page()).items, [5, 6, 7, 8])
    await db.close()
  })

  test(`${common.backend}: put and del on children`, async t => {
    const { db, chats, messages } = await schema()
    const c = await chats.insert({})
    await messages.append(c, 'a')
    await messages.put(c, 1, 'A')
    t.is(await messages.get(c, 1), 'A')
    await rejects(t, messages.put(c, 2, 'B'), 'LEVELKIT_NOT_FOUND', 'put only replaces')
    t.is(await messages.del(c, 1), true)
    t.is(await messages.del(c, 1), false)
    t.is(await messages.append(c, 'b'), 2, 'sequence numbers are not reused')
    await db.close()
  })

  test(`${common.backend}: deleting a parent cascades to its children, or is restricted`, async t => {
    const { db, chats, messages } = await schema('cascade')
    const c = await chats.insert({})
    await messages.append(c, 'a')
    await messages.append(c, 'b')
    await chats.del(c)
    t.same(await messages.range(c).all(), [])
    t.is(await messages.lastSeq(c), 0)
    t.ok((await db.check()).ok)
    await db.close()

    const r = await schema('restrict')
    const c2 = await r.chats.insert({})
    await r.messages.append(c2, 'a')
    await rejects(t, r.chats.del(c2), 'LEVELKIT_RESTRICT')
    t.same(await r.messages.range(c2).all(), ['a'])
    await r.db.close()
  })
}
