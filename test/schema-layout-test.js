// Issue 17: a layout change (a relation's `lists`, a children set's
// `blockSize`) is moved online like an index build (lib/schema.js): existing
// data moved in bounded batches, reads and writes of the model waiting for
// it (never a silently incomplete answer), check() clean afterwards, with no
// check({ repair: true }) by hand. See also test/schema-layout-move-test.js
// (writes during a move) and test/schema-layout-crash-test.js (SIGKILL).
// On memory and LevelDB.
import test from 'tape'
import { open } from '../index.js'
import { memoryAndLevelDB } from './util/backends.js'

const PEOPLE = 300

const backends = memoryAndLevelDB('levelkit-schema-layout-', test)

/** The edges of person i: i follows i+1, i+7 and i+31 (wrapping). @param {number} i */
const follows = i => [...new Set([1, 7, 31].map(d => 1 + (i - 1 + d) % PEOPLE))].sort((a, b) => a - b)

for (const backend of backends) {
  test(`${backend.name}: a relation's lists changed on existing edges: reads answer with every edge, writes go on, no repair by hand`, async t => {
    const base = await backend.base()
    try {
      const first = await open({ db: base.level })
      const people = first.collection('people')
      const rel = first.relation('follows', { from: people, to: people })
      await people.insertMany(Array.from({ length: PEOPLE }, (_, i) => ({ n: i + 1 })))
      for (let i = 1; i <= PEOPLE; i++) for (const j of follows(i)) await rel.add(i, j)
      await first.close()

      const db = await open({ db: base.level })
      const people2 = db.collection('people')
      const rel2 = db.relation('follows', { from: people2, to: people2, lists: ['to', 'from'] })
      // Writes while the edges are moved: an edge added, one removed.
      await rel2.add(1, 100)
      await rel2.remove(2, 3)
      await db.buildIndexes()
      const expected = new Map(Array.from({ length: PEOPLE }, (_, k) => [k + 1, follows(k + 1)]))
      expected.set(1, [...new Set([...follows(1), 100])].sort((a, b) => a - b))
      expected.set(2, follows(2).filter(j => j !== 3))
      let wrong = 0
      for (const [i, to] of expected) if (JSON.stringify(await rel2.to(i).all()) !== JSON.stringify(to)) wrong++
      t.is(wrong, 0, `to(id) lists every edge of each of the ${PEOPLE} people`)
      t.same(await rel2.from(3).all(), [...expected].filter(([, to]) => to.includes(3)).map(([i]) => i), 'from(id) too')
      t.same((await db.check()).problems, [], 'check() is clean without a repair')
      await db.close()
    } finally {
      await base.close()
    }
  })

  test(`${backend.name}: a children set's blockSize changed on existing children: reads answer with every child, no repair by hand`, async t => {
    const base = await backend.base()
    try {
      const first = await open({ db: base.level })
      const chats = first.collection('chats')
      const messages = first.children('messages', { parent: chats })
      const ids = []
      for (let k = 0; k < 20; k++) ids.push(await chats.insert({}))
      for (const id of ids) for (let k = 0; k < 15; k++) await messages.append(id, `${id}:${k}`)
      await first.close()

      const db = await open({ db: base.level })
      const chats2 = db.collection('chats')
      const messages2 = db.children('messages', { parent: chats2, blockSize: 4 })
      await messages2.append(ids[0], 'new')
      await db.buildIndexes()
      t.same(await messages2.range(ids[0]).all(), [...Array.from({ length: 15 }, (_, k) => `${ids[0]}:${k}`), 'new'], 'every child, old and new, in order')
      t.same(await messages2.range(ids[19]).all(), Array.from({ length: 15 }, (_, k) => `${ids[19]}:${k}`), 'another parent')
      t.same((await db.check()).problems, [], 'check() is clean without a repair')
      await db.close()
    } finally {
      await base.close()
    }
  })
}

test('schema layout: db.buildIndexes() resolves with a counter declared beside a relation (a model without a layout)', async t => {
  const db = await open({ backend: 'memory' })
  try {
    const users = db.collection('users')
    db.relation('follows', { from: users, to: users, lists: ['from'] })
    const counter = db.counter('likes')
    await counter.add('x', 1)
    await db.buildIndexes()
    t.pass('built')
    t.is(await counter.get('x'), 1)
  } finally {
    await db.close()
  }
})
