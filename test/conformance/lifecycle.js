import { rejects, usersSchema } from './index.js'

/** @param {any} test @param {any} common */
export default function (test, common) {
  test(`${common.backend}: close() waits for pending writes`, async t => {
    const db = await common.open()
    const users = usersSchema(db)
    const pending = Array.from({ length: 50 }, (_, i) => users.insert({ username: `u${i}` }))
    await db.close()
    const ids = await Promise.all(pending)
    t.same(ids, Array.from({ length: 50 }, (_, i) => i + 1), 'every write queued before close() was written')
    t.is(db.status, 'closed')
  })

  test(`${common.backend}: a closed database refuses reads and writes with LEVELKIT_NOT_OPEN`, async t => {
    const db = await common.open()
    const users = usersSchema(db)
    const chats = db.collection('chats')
    const members = db.relation('members', { from: chats, to: users })
    const messages = db.children('messages', { parent: chats })
    const hits = db.counter('hits')
    await users.insert({ username: 'ann' })
    await db.close()
    await rejects(t, users.insert({ username: 'bob' }), 'LEVELKIT_NOT_OPEN', 'insert')
    await rejects(t, users.update(1, { age: 1 }), 'LEVELKIT_NOT_OPEN', 'update')
    await rejects(t, users.get(1), 'LEVELKIT_NOT_OPEN', 'get')
    await rejects(t, users.getBy('username', 'ann'), 'LEVELKIT_NOT_OPEN', 'getBy')
    await rejects(t, users.query().all(), 'LEVELKIT_NOT_OPEN', 'query')
    await rejects(t, users.count(), 'LEVELKIT_NOT_OPEN', 'count')
    await rejects(t, members.has(1, 1), 'LEVELKIT_NOT_OPEN', 'relation has')
    await rejects(t, messages.append(1, 'x'), 'LEVELKIT_NOT_OPEN', 'append')
    await rejects(t, hits.get('x'), 'LEVELKIT_NOT_OPEN', 'counter get')
    await rejects(t, db.write(async () => {}), 'LEVELKIT_NOT_OPEN', 'write')
    await rejects(t, db.check(), 'LEVELKIT_NOT_OPEN', 'check')
    await db.close()
    t.pass('close() twice is fine')
  })
}
