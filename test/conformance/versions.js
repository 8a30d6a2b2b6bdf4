import { encodeTuple as encode, decodeTuple, open } from '../../index.js'
import { rejects, onModelWrite } from './index.js'

/**
 * A versioned collection with a unique index, so a refused write would
 * have index entries to leave behind.
 * @param {any} db
 */
function itemsSchema (db) {
  return db.collection('items', {
    versioned: true,
    indexes: { name: { unique: true, key: (/** @type {any} */ r) => r.name } }
  })
}

/** Everything stored, to compare before and after a refused write. @param {any} db */
function everything (db) {
  return db.level.iterator({ keyEncoding: 'view', valueEncoding: 'view' }).all()
}

/** The keys of one namespace, decoded. @param {any} db @param {string} name */
async function keysOf (db, name) {
  return (await db.level.sublevel(name, { keyEncoding: 'view' }).keys().all()).map((/** @type {Uint8Array} */ key) => decodeTuple(key))
}

/** @param {any} test @param {any} common */
export default function (test, common) {
  test(`${common.backend}: versions increase with every write, and a delete takes one too`, async t => {
    const db = await common.open()
    const items = itemsSchema(db)
    const a = await items.insert({ name: 'a' })
    const b = await items.insert({ name: 'b' })
    t.same([await items.version(a), await items.version(b)], [1, 2], 'each insert takes the next version')
    await items.update(a, { x: 1 })
    t.is(await items.version(a), 3, 'update')
    t.is(await items.put(b, { name: 'b', y: 2 }), false)
    t.is(await items.version(b), 4, 'put over a record')
    t.is(await items.version(99), undefined, 'no record, no version')
    t.is(await items.del(b), true)
    t.is(await items.version(b), undefined, 'a deleted record has none')
    t.is(await items.put(b, { name: 'b' }), true)
    t.is(await items.version(b), 6, 'created again: past the version the delete took')
    t.is(await items.del(99), false, 'deleting nothing')
    await rejects(t, items.insert({ name: 'a' }), 'LEVELKIT_UNIQUE')
    t.is(await items.version(await items.insert({ name: 'c' })), 7, 'neither a delete of nothing nor a refused write takes a version')
    await rejects(t, items.version('a'), 'LEVELKIT_INVALID', 'ids are checked as get() checks them')
    await db.close()
  })

  test(`${common.backend}: a record deleted and created again never gets a version it had`, async t => {
    const db = await common.open()
    const docs = db.collection('docs', { id: (/** @type {any} */ d) => d.key, versioned: true })
    const seen = []
    for (let round = 0; round < 4; round++) {
      await docs.put('k', { key: 'k', round })
      seen.push(await docs.version('k'))
      await docs.update('k', { touched: true })
      seen.push(await docs.version('k'))
      t.same(await keysOf(db, 'docs.versions'), ['k'], `round ${round}: one version entry`)
      await docs.del('k')
    }
    t.same(seen, [1, 2, 4, 5, 7, 8, 10, 11], 'strictly increasing, none repeated')
    t.same(await keysOf(db, 'docs.versions'), [], 'a delete removes the version entry')
    await db.close()
  })

  test(`${common.backend}: concurrent writes, and writes in one db.write(), each take their own version`, async t => {
    const db = await common.open()
    const items = itemsSchema(db)
    const ids = await Promise.all(Array.from({ length: 10 }, (_, i) => items.insert({ name: `n${i}` })))
    const versions = await Promise.all(ids.map(id => items.version(id)))
    t.same(versions.slice().sort((x, y) => x - y), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 'all distinct, none skipped')
    const inScope = await db.write(async w => {
      const scoped = items.in(w)
      const id = await scoped.insert({ name: 'w' })
      const seen = [await scoped.version(id)]
      await scoped.update(id, { n: 1 })
      seen.push(await scoped.version(id))
      await scoped.update(id, { n: 2 }, { ifVersion: seen[1] })
      seen.push(await scoped.version(id))
      seen.push(await items.version(id))
      await scoped.del(id, { ifVersion: seen[2] })
      seen.push(await scoped.version(id))
      return seen
    })
    t.same(inScope, [11, 12, 13, undefined, undefined], 'version() through the scope sees its own writes; outside it, nothing yet')
    t.is(await items.version(await items.insert({ name: 'after' })), 15, 'the scope\'s delete took 14')
    await db.close()
  })

  test(`${common.backend}: version() racing a delete answers the version or undefined, never 0`, async t => {
    const db = await common.open()
    const items = db.collection('items', { versioned: true })
    /** @type {Set<unknown>} */
    const answers = new Set()
    // Call version() at every point of the delete's way to the disk, so
    // that in some call the batch lands between its reads.
    // (Microtask ticks on memory and LevelDB, timers for IndexedDB.)
    /** @type {Array<() => Promise<unknown>>} */
    const delays = []
    for (let ticks = 0; ticks < 40; ticks++) {
      delays.push(() => { let p = Promise.resolve(); for (let i = 0; i < ticks; i++) p = p.then(() => {}); return p })
    }
    for (const ms of [0, 1, 2, 4, 8, 16]) delays.push(() => new Promise(resolve => setTimeout(resolve, ms)))
    for (const delay of delays) {
      const id = await items.insert({})
      const version = await items.version(id)
      const deleted = items.del(id)
      await delay()
      const answer = await items.version(id)
      await deleted
      answers.add(answer === version ? 'its version' : String(answer))
    }
    t.same([...answers].filter(answer => answer !== 'its version' && answer !== 'undefined'), [], `only its version or undefined (seen: ${[...answers].join(', ')})`)
    await db.close()
  })

  test(`${common.backend}: the version counter costs one op per batch`, async t => {
    const db = await common.open()
    const plain = db.collection('plain')
    const items = db.collection('items', { versioned: true })
    /** @type {number[]} */
    const batches = []
    onModelWrite(db, (/** @type {any[]} */ ops) => batches.push(ops.length))
    await db.write(async w => {
      for (let i = 0; i < 3; i++) await plain.in(w).insert({ i })
    })
    await db.write(async w => {
      for (let i = 0; i < 3; i++) await items.in(w).insert({ i })
    })
    t.same(batches, [3 + 1, 3 + 1 + 3 + 1], 'plain: records and the id sequence; versioned: also a version per record and the counter once')
    await db.close()
  })

  test(`${common.backend}: ifVersion writes when the version matches`, async t => {
    const db = await common.open()
    const items = itemsSchema(db)
    const a = await items.insert({ name: 'a' })
    t.same(await items.update(a, { x: 1 }, { ifVersion: 1 }), { id: a, name: 'a', x: 1 }, 'update (patch)')
    t.same(await items.update(a, old => ({ ...old, x: old.x + 1 }), { ifVersion: 2 }), { id: a, name: 'a', x: 2 }, 'update (function)')
    t.is(await items.put(a, { name: 'A' }, { ifVersion: 3 }), false, 'put')
    t.is(await items.version(a), 4)
    t.same(await items.getBy('name', 'A'), { id: a, name: 'A' })
    t.is(await items.del(a, { ifVersion: 4 }), true, 'del')
    t.is(await items.get(a), undefined)
    t.is(await items.update(await items.insert({ name: 'b' }), { x: 1 }, undefined).then(r => r.x), 1, 'options may be undefined')
    await db.close()
  })

  test(`${common.backend}: ifVersion refuses a write at another version with LEVELKIT_CONFLICT, writing nothing`, async t => {
    const db = await common.open()
    const items = itemsSchema(db)
    const a = await items.insert({ name: 'a' })
    await items.update(a, { x: 1 })
    const before = await everything(db)
    const attempts = [
      ['update', () => items.update(a, { name: 'z' }, { ifVersion: 1 }), 1, 2],
      ['update (function)', () => items.update(a, old => ({ ...old, name: 'z' }), { ifVersion: 3 }), 3, 2],
      ['put', () => items.put(a, { name: 'z' }, { ifVersion: 0 }), 0, 2],
      ['del', () => items.del(a, { ifVersion: 1 }), 1, 2],
      ['update of no record', () => items.update(99, { name: 'z' }, { ifVersion: 2 }), 2, undefined],
      ['put of no record', () => items.put(99, { name: 'z' }, { ifVersion: 0 }), 0, undefined],
      ['del of no record', () => items.del(99, { ifVersion: 0 }), 0, undefined]
    ]
    for (const [what, attempt, expected, actual] of /** @type {Array<[string, () => Promise<any>, number, number | undefined]>} */ (attempts)) {
      const err = await rejects(t, attempt(), 'LEVELKIT_CONFLICT', `${what}: refused`)
      t.same(err && { collection: err.collection, id: err.id, expected: err.expected, actual: err.actual },
        { collection: 'items', id: what.endsWith('no record') ? 99 : a, expected, actual }, `${what}: the error says what was expected and what is`)
    }
    t.same(await everything(db), before, 'records, index entries, versions and the counter unchanged')
    t.is(await items.version(await items.insert({ name: 'b' })), 3, 'no refused write took a version')
    await rejects(t, items.update(98, { x: 1 }), 'LEVELKIT_NOT_FOUND', 'without ifVersion, updating no record is still LEVELKIT_NOT_FOUND')
    const refused = await db.write(async w => {
      await items.in(w).update(a, { x: 2 })
      const err = await rejects(t, items.in(w).update(a, { x: 3 }, { ifVersion: 2 }), 'LEVELKIT_CONFLICT', 'in a scope, against its own writes')
      return err?.actual
    })
    t.is(refused, 4, 'the version the scope wrote')
    t.is((await items.get(a)).x, 2, 'the refused operation left nothing; the rest of the scope was written')
    await db.close()
  })

  test(`${common.backend}: ifVersion with retries loses no update of two racing read-modify-write loops`, async t => {
    const db = await common.open()
    const items = itemsSchema(db)
    const id = await items.insert({ name: 'counter', n: 0 })
    const rounds = 20
    let conflicts = 0
    async function increment () {
      for (let i = 0; i < rounds; i++) {
        for (;;) {
          // The version first: a write landing before the record is read
          // changes it, and the update is refused.
          const version = await items.version(id)
          const { n } = await items.get(id)
          try {
            await items.update(id, { n: n + 1 }, { ifVersion: version })
            break
          } catch (err) {
            if (/** @type {any} */ (err).code !== 'LEVELKIT_CONFLICT') throw err
            conflicts++
          }
        }
      }
    }
    await Promise.all([increment(), increment()])
    t.is((await items.get(id)).n, 2 * rounds, 'every increment counted')
    t.ok(conflicts > 0, `the loops did race (${conflicts} conflicts, retried)`)
    t.is(await items.version(id), 1 + 2 * rounds, 'one version per write that went through')
    await db.close()
  })

  test(`${common.backend}: ifVersion and version() need a versioned collection; bad values are refused`, async t => {
    const db = await common.open()
    const plain = db.collection('plain')
    const items = itemsSchema(db)
    const p = await plain.insert({})
    const a = await items.insert({ name: 'a' })
    await rejects(t, plain.update(p, { x: 1 }, { ifVersion: 1 }), 'LEVELKIT_INVALID', 'update on a collection that is not versioned')
    await rejects(t, plain.put(p, {}, { ifVersion: 1 }), 'LEVELKIT_INVALID', 'put')
    await rejects(t, plain.del(p, { ifVersion: 1 }), 'LEVELKIT_INVALID', 'del')
    await rejects(t, plain.version(p), 'LEVELKIT_INVALID', 'version()')
    t.is(await plain.del(p, { ifVersion: undefined }), true, 'ifVersion: undefined is no condition')
    for (const bad of [1.5, -1, '1', null, NaN, Infinity, 2 ** 53, true, [1]]) {
      await rejects(t, items.update(a, { x: 1 }, { ifVersion: bad }), 'LEVELKIT_INVALID', `ifVersion ${JSON.stringify(bad)} refused`)
    }
    for (const bad of [null, [], 'x', 5]) {
      await rejects(t, items.del(a, /** @type {any} */ (bad)), 'LEVELKIT_INVALID', `options ${JSON.stringify(bad)} refused`)
    }
    const unknown = await rejects(t, items.update(a, { x: 1 }, /** @type {any} */ ({ ifVersoin: 1 })), 'LEVELKIT_INVALID', 'an unknown option')
    t.match(String(unknown?.message), /"ifVersoin"/, 'named')
    t.same(await items.get(a), { id: a, name: 'a' }, 'nothing written')
    for (const bad of ['yes', 1, null]) {
      let code
      try {
        db.collection(`c${String(bad)}`, { versioned: bad })
      } catch (err) {
        code = /** @type {any} */ (err).code
      }
      t.is(code, 'LEVELKIT_INVALID', `versioned: ${JSON.stringify(bad)} refused`)
    }
    t.ok(db.collection('off', { versioned: false }), 'versioned: false is fine')
    await db.close()
  })

  test(`${common.backend}: a collection declared versioned over existing records reads them as version 0`, async t => {
    const first = await common.open()
    const before = first.collection('items', { indexes: { name: { unique: true, key: (/** @type {any} */ r) => r.name } } })
    const a = await before.insert({ name: 'a' })
    const b = await before.insert({ name: 'b' })
    // A new process declaring the collection versioned.
    const second = await open({ db: first.level })
    const items = itemsSchema(second)
    t.same([await items.version(a), await items.version(b), await items.version(3)], [0, 0, undefined])
    t.same(await second.check(), { ok: true, problems: [], repaired: 0 }, 'records without versions are no problem')
    const err = await rejects(t, items.update(a, { x: 1 }, { ifVersion: 1 }), 'LEVELKIT_CONFLICT')
    t.is(err?.actual, 0, 'it is at version 0')
    await items.update(a, { x: 1 }, { ifVersion: 0 })
    t.same([await items.version(a), await items.version(b)], [1, 0], 'written once, it has a version')
    const seen = await second.write(async w => [await items.in(w).version(a), await items.in(w).version(b)])
    t.same(seen, [1, 0], 'and through a scope')
    await second.close()
    await first.close()
  })

  test(`${common.backend}: check() finds version entries without records or that do not parse, and repairs them`, async t => {
    const db = await common.open()
    const items = itemsSchema(db)
    const a = await items.insert({ name: 'a' })
    const b = await items.insert({ name: 'b' })
    const c = await items.insert({ name: 'c' })
    t.same(await db.check(), { ok: true, problems: [], repaired: 0 }, 'clean to begin with')
    const versions = db.level.sublevel('items.versions', { keyEncoding: 'view', valueEncoding: 'utf8' })
    // Damage behind levelkit's back.
    await versions.put(encode(99), '2') // no record 99
    await versions.put(encode(a), 'abc') // not an integer
    await versions.put(encode(b), '0') // not a version levelkit writes
    await versions.put(encode(c), '999') // past the counter (3)
    await versions.put(new Uint8Array([0xff]), '1') // a key that does not decode

    const report = await db.check()
    t.same(report.problems.map(p => `${p.type}:${p.namespace}`).sort(), [
      'invalid-key:items.versions', 'invalid-version:items.versions', 'invalid-version:items.versions',
      'invalid-version:items.versions', 'orphan-version:items.versions'
    ], 'each is reported once')
    t.same(report.problems.filter(p => p.type === 'orphan-version').map(p => p.key), [99], 'the orphan names its id')
    const repair = await db.check({ repair: true })
    t.same(repair.problems.filter(p => !p.repaired), [], 'all repaired')
    t.same(await db.check(), { ok: true, problems: [], repaired: 0 }, 'clean after the repair')
    t.same([await items.version(a), await items.version(b), await items.version(c), await items.version(99)], [0, 0, 999, undefined],
      'entries that do not parse are deleted; one past the counter stays')
    t.is(await items.version(await items.insert({ name: 'd' })), 1000, 'the counter was raised past it')

    await db.level.sublevel('items.seq', { keyEncoding: 'view', valueEncoding: 'utf8' }).put(encode('version'), 'nope')
    t.same((await db.check()).problems.map(p => `${p.type}:${p.namespace}`), ['invalid-sequence:items.seq'], 'a version counter that does not parse')
    t.is((await db.check({ repair: true })).repaired, 1)
    t.is(await items.version(await items.insert({ name: 'e' })), 1001, 'set to the highest version in use')
    await db.close()
  })
}
