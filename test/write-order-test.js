// The write path decides model operations in call order, including a
// model's first use after the database is reopened, while the layout of a
// relation or children set is still being compared with the stored one
// (lib/layout-moves.js layoutWrite()): an operation called outside a scope
// is queued at once, not after that comparison. And when the comparison
// finds a move needed, a write waiting for it is still decided after every
// write called before it, and the writes of its model keep their order.
// On memory and LevelDB.
import test from 'tape'
import { open } from '../index.js'
import { memoryAndLevelDB } from './util/backends.js'

const backends = memoryAndLevelDB('levelkit-write-order-', test)

/**
 * @param {any} db
 * @param {{ lists?: Array<'from' | 'to'>, blockSize?: number }} [layout]
 */
function declare (db, layout = {}) {
  const users = db.collection('users')
  const chats = db.collection('chats')
  return {
    users,
    chats,
    members: db.relation('members', { from: chats, to: users, onDelete: 'cascade', ...(layout.lists ? { lists: layout.lists } : {}) }),
    messages: db.children('messages', { parent: chats, ...(layout.blockSize ? { blockSize: layout.blockSize } : {}) }),
    unread: db.counter('unread')
  }
}

/** Two users, two chats, an edge 1 -> 1 and a message in chat 1: the database to reopen. @param {any} db */
async function fill (db) {
  const m = declare(db)
  await m.users.insert({ name: 'ann' })
  await m.users.insert({ name: 'bob' })
  await m.chats.insert({ title: 'a' })
  await m.chats.insert({ title: 'b' })
  await m.members.add(1, 1)
  await m.messages.append(1, 'first')
  await m.unread.add(1, 5)
}

/**
 * A model operation (its first use after reopening) and a db.write()
 * callback called right after it that reads what it did: `answer` is what
 * the operation resolves with, `seen` what the callback does.
 * @typedef {{ name: string, op: (m: any) => Promise<unknown>, answer: unknown, read: (m: any, w: any) => Promise<unknown>, seen: unknown }} Case
 */
/** @type {Case[]} */
const cases = [
  { name: 'relation add', op: m => m.members.add(1, 2), answer: true, read: (m, w) => m.members.in(w).remove(1, 2), seen: true },
  { name: 'relation remove', op: m => m.members.remove(1, 1), answer: true, read: (m, w) => m.members.in(w).add(1, 1), seen: true },
  { name: 'children append', op: m => m.messages.append(1, 'second'), answer: 2, read: (m, w) => m.messages.in(w).get(1, 2), seen: 'second' },
  { name: 'children put', op: m => m.messages.put(1, 1, 'edited'), answer: undefined, read: (m, w) => m.messages.in(w).get(1, 1), seen: 'edited' },
  { name: 'children del', op: m => m.messages.del(1, 1), answer: true, read: (m, w) => m.messages.in(w).get(1, 1), seen: undefined },
  { name: 'collection insert', op: m => m.users.insert({ name: 'cy' }), answer: 3, read: (m, w) => m.users.in(w).get(3), seen: { id: 3, name: 'cy' } },
  { name: 'collection put', op: m => m.users.put(1, { name: 'ann2' }), answer: false, read: (m, w) => m.users.in(w).get(1), seen: { id: 1, name: 'ann2' } },
  { name: 'collection del', op: m => m.users.del(2), answer: true, read: (m, w) => m.users.in(w).get(2), seen: undefined },
  { name: 'counter add', op: m => m.unread.add(1), answer: 6, read: (m, w) => m.unread.in(w).get(1), seen: 6 }
]

/**
 * `base` filled by one levelkit database, closed, then opened again: every
 * model's next use is its first since the open.
 * @param {import('../lib/database.js').Database} base
 */
async function reopenFilled (base) {
  const first = await open({ db: base.level })
  await fill(first)
  await first.close()
  return open({ db: base.level })
}

for (const backend of backends) {
  test(`${backend.name}: an operation called first after reopening is decided before a db.write() called after it`, async t => {
    for (const c of cases) {
      // A database per case: each operation is the first use of its model.
      const base = await backend.base()
      try {
        const db = await reopenFilled(base)
        const m = declare(db)
        const done = c.op(m)
        const seen = db.write(w => c.read(m, w))
        t.same(await Promise.all([done, seen]), [c.answer, c.seen], `${c.name}: answered ${JSON.stringify(c.answer)}, and the db.write() called after it sees it`)
        await db.close()
      } finally {
        await base.close()
      }
    }
  })

  test(`${backend.name}: un-awaited operations of every kind, each model's first use after reopening, then db.write() callbacks: answers in call order`, async t => {
    const base = await backend.base()
    try {
      const db = await reopenFilled(base)
      const m = declare(db)
      const calls = [
        m.members.add(1, 2),
        m.messages.append(1, 'second'),
        m.users.insert({ name: 'cy' }),
        m.unread.add(1),
        m.chats.put(2, { title: 'b2' }),
        db.write(async w => [
          await m.members.in(w).has(1, 2),
          await m.messages.in(w).get(1, 2),
          await m.users.in(w).get(3),
          await m.unread.in(w).get(1),
          await m.chats.in(w).get(2)
        ]),
        m.members.remove(1, 2),
        m.messages.del(1, 2),
        m.users.del(3),
        db.write(async w => [
          await m.members.in(w).has(1, 2),
          await m.messages.in(w).get(1, 2),
          await m.users.in(w).get(3)
        ])
      ]
      const answers = await Promise.all(calls)
      t.same(answers, [true, 2, 3, 6, false, [true, 'second', { id: 3, name: 'cy' }, 6, { id: 2, title: 'b2' }], true, true, true, [false, undefined, undefined]],
        'each answer as if the calls ran one after the other')
      t.same((await db.check()).problems, [], 'check() is clean')
      await db.close()
    } finally {
      await base.close()
    }
  })

  for (const awaited of [false, true]) {
    test(`${backend.name}: writes that wait for a layout move (${awaited ? 'known to be needed when called' : 'called before the comparison'}) come after every write called before them, and those of one model keep their order`, async t => {
      const base = await backend.base()
      try {
        const db = await reopenFilled(base)
        const m = declare(db, { lists: ['from', 'to'], blockSize: 4 })
        if (awaited) {
          const status = await db.schemaStatus()
          t.same([status.members?.layout?.state, status.messages?.layout?.state], ['moving', 'moving'], 'both layouts are to be moved')
        }
        const calls = [
          m.users.insert({ name: 'cy' }),
          m.members.add(2, 3),
          m.chats.put(2, { title: 'b2' }),
          m.messages.append(2, 'one'),
          m.members.remove(2, 3),
          m.members.add(1, 2),
          m.messages.append(2, 'two'),
          m.messages.del(2, 1),
          m.members.remove(1, 1)
        ]
        const answers = await Promise.all(calls.map(call => call.catch(err => err.code)))
        t.same(answers, [3, true, false, 1, true, true, 2, true, true], 'each answer as if the calls ran one after the other: user 3 exists for the edge to it, chat 2\'s appends numbered in order')
        t.same(await m.members.to(1).all(), [2], 'the edges of chat 1')
        t.same(await m.members.to(2).all(), [], 'and of chat 2')
        t.same(await m.messages.range(2).all(), ['two'], 'the messages of chat 2')
        t.same(await db.schemaStatus().then(s => [s.members, s.messages]), [undefined, undefined], 'the moves are over')
        t.same((await db.check()).problems, [], 'check() is clean')
        await db.close()
      } finally {
        await base.close()
      }
    })
  }

  test(`${backend.name}: a db.write() callback called right after reopening, before the comparison finds a move needed, is refused (LEVELKIT_INDEX_BUILDING), not answered from the layout not yet moved`, async t => {
    const base = await backend.base()
    try {
      const db = await reopenFilled(base)
      const m = declare(db, { lists: ['from', 'to'], blockSize: 4 })
      // The first callback's critical section comes right after the comparison of the children set (declared last).
      const codes = await Promise.all([
        db.write(w => m.messages.in(w).del(1, 1)),
        db.write(w => m.members.in(w).remove(1, 1))
      ].map(p => p.then(() => 'fulfilled', err => err.code)))
      t.same(codes, ['LEVELKIT_INDEX_BUILDING', 'LEVELKIT_INDEX_BUILDING'], 'both callbacks rejected: the message and the edge are still in the old layout')
      await db.buildIndexes()
      t.same([await m.members.has(1, 1), await m.messages.get(1, 1)], [true, 'first'], 'the edge and the message, moved')
      await db.close()
    } finally {
      await base.close()
    }
  })
}
