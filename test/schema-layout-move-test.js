// A layout move (a relation's `lists`, a children set's `blockSize` changed
// on existing data, lib/schema.js) while writes go on: the move runs in many
// small batches, and writes made while it runs (edges added and removed,
// records deleted with their edges and children, children appended and
// deleted) are all kept: none is undone by the move, none lost, none
// doubled; db.schemaStatus() reports the move while it runs. A read or write
// inside a db.write() callback during the move rejects with
// LEVELKIT_INDEX_BUILDING (it cannot wait: the move needs the write path).
// On memory and LevelDB.
import test from 'tape'
import { open } from '../index.js'
import { memoryAndLevelDB } from './util/backends.js'
import { setBuildBatchSize } from '../lib/schema.js'

const PEOPLE = 200
const BATCH = 8

const backends = memoryAndLevelDB('levelkit-layout-move-', test)

/** @param {number} i */
const follows = i => [...new Set([1, 7, 31].map(d => 1 + (i - 1 + d) % PEOPLE))]

for (const backend of backends) {
  test(`${backend.name}: writes made while a relation's edges and a children set's children move between layouts are kept`, async t => {
    const base = await backend.base()
    setBuildBatchSize(BATCH)
    try {
      const first = await open({ db: base.level })
      const people = first.collection('people')
      const rel = first.relation('follows', { from: people, to: people })
      const notes = first.children('notes', { parent: people })
      await people.insertMany(Array.from({ length: PEOPLE }, (_, i) => ({ n: i + 1 })))
      /** @type {Set<string>} the edges "from>to" there should be */
      const edges = new Set()
      /** @type {Map<number, Array<[number, string]>>} the notes there should be */
      const expected = new Map()
      for (let i = 1; i <= PEOPLE; i++) {
        for (const j of follows(i)) {
          await rel.add(i, j)
          edges.add(`${i}>${j}`)
        }
        const kept = []
        for (let k = 1; k <= 5; k++) {
          await notes.append(i, `${i}:${k}`)
          kept.push(/** @type {[number, string]} */ ([k, `${i}:${k}`]))
        }
        expected.set(i, kept)
      }
      await first.close()

      const db = await open({ db: base.level })
      const people2 = db.collection('people')
      const rel2 = db.relation('follows', { from: people2, to: people2, lists: ['from', 'to'] })
      const notes2 = db.children('notes', { parent: people2, blockSize: 4 })
      const status = await db.schemaStatus()
      t.is(status.follows?.layout?.state, 'moving', 'the relation\'s move is reported while it runs')
      t.is(status.notes?.layout?.state, 'moving', 'and the children\'s')
      const refused = await db.write(w => rel2.in(w).to(1).all()).then(() => null, err => err)
      t.is(refused?.code, 'LEVELKIT_INDEX_BUILDING', 'a read inside a db.write() callback during the move rejects with LEVELKIT_INDEX_BUILDING')

      // Writes while the move runs, none awaited before the next.
      const writes = []
      for (let i = 1; i <= PEOPLE; i += 10) {
        const j = 1 + (i + 50) % PEOPLE
        writes.push(rel2.add(i, j))
        edges.add(`${i}>${j}`)
        const gone = follows(i)[0]
        writes.push(rel2.remove(i, gone))
        edges.delete(`${i}>${gone}`)
        writes.push(notes2.append(i, `${i}:new`))
        expected.get(i)?.push([6, `${i}:new`])
        writes.push(notes2.del(i, 2))
        expected.set(i, /** @type {Array<[number, string]>} */ (expected.get(i)).filter(([seq]) => seq !== 2))
      }
      // Records deleted while edges to them may still be in the old layout: their edges and notes go with them.
      for (const gone of [3, 77, 150]) {
        writes.push(people2.del(gone))
        for (const edge of [...edges]) if (edge.startsWith(`${gone}>`) || edge.endsWith(`>${gone}`)) edges.delete(edge)
        expected.delete(gone)
      }
      await Promise.all(writes)
      await db.buildIndexes()
      t.same(await db.schemaStatus().then(s => [s.follows, s.notes]), [undefined, undefined], 'the moves are over')

      let wrong = 0
      for (let i = 1; i <= PEOPLE; i++) {
        const to = [...edges].filter(edge => edge.startsWith(`${i}>`)).map(edge => Number(edge.split('>')[1])).sort((a, b) => a - b)
        const from = [...edges].filter(edge => edge.endsWith(`>${i}`)).map(edge => Number(edge.split('>')[0])).sort((a, b) => a - b)
        if (JSON.stringify(await rel2.to(i).all()) !== JSON.stringify(to)) wrong++
        if (JSON.stringify(await rel2.from(i).all()) !== JSON.stringify(from)) wrong++
        const entries = []
        for await (const entry of notes2.range(i).entries()) entries.push(entry)
        if (JSON.stringify(entries) !== JSON.stringify(expected.get(i) ?? [])) wrong++
      }
      t.is(wrong, 0, `every edge and note of each of the ${PEOPLE} people: the writes made during the move kept, nothing undone or doubled`)
      t.same((await db.check()).problems, [], 'check() is clean without a repair')
      await db.close()
    } finally {
      setBuildBatchSize(256)
      await base.close()
    }
  })
}

for (const backend of backends) {
  test(`${backend.name}: a database without stored layouts (written by an earlier levelkit) is taken as it is when its data is in the declared layout, and moved when not`, async t => {
    const base = await backend.base()
    /** @param {any} db @param {Array<'from' | 'to'>} lists @param {number} blockSize */
    const declare = (db, lists, blockSize) => {
      const people = db.collection('people')
      return { people, rel: db.relation('follows', { from: people, to: people, lists }), notes: db.children('notes', { parent: people, blockSize }) }
    }
    const forget = () => base.level.sublevel(':levelkit.meta', { keyEncoding: 'view' }).clear()
    /** @param {any} db @param {any} m */
    const wrongReads = async (db, { rel, notes }) => {
      let wrong = 0
      for (let i = 1; i <= 40; i++) {
        if (JSON.stringify(await rel.to(i).all()) !== JSON.stringify([...follows(i)].sort((a, b) => a - b))) wrong++
        if (JSON.stringify(await notes.getMany(i, [1, 6, 9])) !== JSON.stringify([`${i}:1`, `${i}:6`, `${i}:9`])) wrong++
      }
      return wrong
    }
    try {
      const first = await open({ db: base.level })
      const a = declare(first, ['to'], 4)
      await a.people.insertMany(Array.from({ length: PEOPLE }, (_, i) => ({ n: i + 1 })))
      for (let i = 1; i <= PEOPLE; i++) {
        await a.rel.addMany(i, follows(i))
        await a.notes.appendMany(i, Array.from({ length: 9 }, (_, k) => `${i}:${k + 1}`))
      }
      await first.close()

      await forget()
      const same = await open({ db: base.level })
      const b = declare(same, ['to'], 4)
      t.same(await same.schemaStatus().then(s => [s.follows, s.notes]), [undefined, undefined], 'the same layouts: nothing to move')
      t.is(await wrongReads(same, b), 0, 'and reads answer')
      await same.close()

      await forget()
      const other = await open({ db: base.level })
      const c = declare(other, ['from'], 8)
      t.same(await other.schemaStatus().then(s => [s.follows?.layout?.state, s.notes?.layout?.state]), ['moving', 'moving'], 'other layouts: both moved (blocks of 4 told from blocks of 8 by their keys)')
      t.is(await wrongReads(other, c), 0, 'reads wait for the moves, then answer')
      t.same((await other.check()).problems, [], 'check() is clean')
      await other.close()
    } finally {
      await base.close()
    }
  })
}
