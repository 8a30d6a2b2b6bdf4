import { encodeTuple as encode, decodeTuple as decode } from '../../index.js'
import { prng } from '../util/prng.js'
import { rejects, namespaceOf, onModelWrite } from './index.js'

// Every children test runs on both layouts: one key per child, and blocks
// (of 3, so that pages and ranges cross block boundaries).
const LAYOUTS = [undefined, 3]

/** @param {number | undefined} blockSize */
const layoutName = blockSize => blockSize === undefined ? 'keys' : `blocks of ${blockSize}`

/** @param {any} test @param {any} common */
export default function (test, common) {
  for (const blockSize of LAYOUTS) childrenSuite(test, { ...common, backend: `${common.backend} (${layoutName(blockSize)})` }, blockSize)
  blocksSuite(test, common)
}

/** @param {any} test @param {any} common */
export function purgeAndWatch (test, common) {
  for (const blockSize of LAYOUTS) purgeAndWatchSuite(test, { ...common, backend: `${common.backend} (${layoutName(blockSize)})` }, blockSize)
}

/** @param {any} test @param {any} common @param {number | undefined} blockSize */
function childrenSuite (test, common, blockSize) {
  /** @param {any} [onDelete] */
  async function schema (onDelete) {
    const db = await common.open()
    const chats = db.collection('chats')
    const messages = db.children('messages', { parent: chats, onDelete, blockSize })
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

  test(`${common.backend}: a stored child that does not parse fails reads with LEVELKIT_DECODE_ERROR`, async t => {
    const { db, chats, messages } = await schema()
    const c = await chats.insert({})
    // Written behind levelkit's back, before levelkit reads it (the read
    // cache assumes no other writer).
    const namespace = blockSize === undefined ? 'messages' : 'messages.blocks'
    await db.level.sublevel(namespace, { keyEncoding: 'view', valueEncoding: 'utf8' }).put(encode([c, 1]), 'oops')
    await db.level.sublevel('messages.seq', { keyEncoding: 'view', valueEncoding: 'utf8' }).put(encode(c), '1')
    for (const [what, call] of [['range()', () => messages.range(c).all()], ['get()', () => messages.get(c, 1)], ['getMany()', () => messages.getMany(c, [1])]]) {
      const err = await rejects(t, /** @type {() => Promise<unknown>} */ (call)(), 'LEVELKIT_DECODE_ERROR', `${what} fails with LEVELKIT_DECODE_ERROR`)
      t.ok(err && err.cause instanceof SyntaxError && err.message.includes(namespace), 'naming the namespace, with the SyntaxError as cause')
    }
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

/** @param {any} test @param {any} common @param {number | undefined} blockSize */
function purgeAndWatchSuite (test, common, blockSize) {
  test(`${common.backend}: onDelete 'purge' hides children at once and deletes them in bounded batches`, async t => {
    const db = await common.open()
    const chats = db.collection('chats')
    const messages = db.children('messages', { parent: chats, onDelete: 'purge', blockSize })
    const c = await chats.insert({ name: 'big' })
    const other = await chats.insert({ name: 'other' })
    await db.write(async w => {
      for (let i = 0; i < 2500; i++) await messages.in(w).append(c, { i })
    })
    await messages.append(other, 'keep')
    const batches = []
    onModelWrite(db, ops => batches.push(ops.length))
    await chats.del(c)
    t.same(await messages.range(c).all(), [], 'invisible as soon as the parent is deleted')
    t.is(await messages.range(c).count(), 0)
    t.is(await messages.get(c, 1), undefined)
    t.is(await messages.lastSeq(c), 0)
    t.ok((await db.check()).ok, 'check() treats the pending purge as consistent')
    await messages.settled()
    t.ok(batches.length >= 4, `deleted in several batches (${batches.length})`)
    t.ok(Math.max(...batches) <= 1001, `each bounded (largest ${Math.max(...batches)} ops)`)
    t.is(await db.level.sublevel(blockSize ? 'messages.blocks' : 'messages', { keyEncoding: 'view' }).keys().all().then(k => k.length), 1, 'only the other chat\'s message is left')
    t.same(await db.level.sublevel('messages.purge', { keyEncoding: 'view' }).keys().all(), [], 'marker removed')
    t.same(await messages.range(other).all(), ['keep'])
    t.ok((await db.check()).ok)
    await db.close()
  })

  test(`${common.backend}: a purged parent's id cannot be reused until the purge is done`, async t => {
    const db = await common.open()
    const chats = db.collection('chats')
    const messages = db.children('messages', { parent: chats, onDelete: 'purge', blockSize })
    const c = await chats.insert({})
    await messages.append(c, 'old')
    // Hold the write path so the purge cannot run before our put().
    await db.write(async w => {
      await chats.in(w).del(c)
      await rejects(t, chats.in(w).put(c, { again: true }), 'LEVELKIT_INVALID', 'refused while purging')
    })
    await messages.settled()
    t.is(await chats.put(c, { again: true }), true, 'allowed once purged')
    t.same(await messages.range(c).all(), [], 'no old child comes back')
    t.is(await messages.append(c, 'new'), 1)
    try {
      db.children('notes', { parent: db.collection('tags', { id: t => t.name }), onDelete: 'purge' })
      t.fail('should throw')
    } catch (err) {
      t.is(err.code, 'LEVELKIT_INVALID', 'purge needs a parent with sequence ids')
    }
    await db.close()
  })

  test(`${common.backend}: watch() delivers each new child once, in order, with no gap`, async t => {
    const db = await common.open()
    const chats = db.collection('chats')
    const messages = db.children('messages', { parent: chats, blockSize })
    const c = await chats.insert({})
    await messages.append(c, 'before-1')
    await messages.append(c, 'before-2')
    const seen = await messages.range(c).all()
    const controller = new AbortController()
    const received = []
    const watching = (async () => {
      for await (const [seq, value] of messages.watch(c, { after: seen.length, signal: controller.signal })) {
        received.push([seq, value])
        if (received.length === 30) controller.abort()
      }
    })()
    await Promise.all(Array.from({ length: 30 }, (_, i) => messages.append(c, `m${i}`)))
    await watching
    t.same(received.map(([seq]) => seq), Array.from({ length: 30 }, (_, i) => i + 3), 'seqs 3..32, each once')
    t.same(received.map(([, value]) => value), Array.from({ length: 30 }, (_, i) => `m${i}`))

    const ended = []
    for await (const entry of messages.watch(c, { after: 30 })) {
      ended.push(entry)
      await chats.del(c)
    }
    t.same(ended.map(([seq]) => seq), [31, 32], 'catches up from `after`, then ends when the parent is deleted')
    await rejects(t, messages.watch(c, { after: -1 }).next(), 'LEVELKIT_INVALID')
    await db.close()
  })

  test(`${common.backend}: getMany() reads children by sequence number`, async t => {
    const db = await common.open()
    const chats = db.collection('chats')
    const messages = db.children('messages', { parent: chats, onDelete: 'purge', blockSize })
    const c = await chats.insert({})
    const other = await chats.insert({})
    for (const text of ['a', 'b', 'c', 'd']) await messages.append(c, text)
    await messages.append(other, 'x')
    await messages.del(c, 2)
    t.same(await messages.getMany(c, [4, 3, 2, 1, 5]), ['d', 'c', undefined, 'a', undefined], 'in the order asked, undefined where there is none')
    t.same(await messages.getMany(c, []), [])
    t.same(await messages.getMany(other, [1, 2]), ['x', undefined], "another parent's children are its own")
    t.same(await db.write(async w => {
      await messages.in(w).append(c, 'e')
      return messages.in(w).getMany(c, [5, 4])
    }), ['e', 'd'], 'through a write scope, its own writes included')
    await rejects(t, messages.getMany(c, 3), 'LEVELKIT_INVALID')
    await rejects(t, messages.getMany(c, [0]), 'LEVELKIT_INVALID')
    await rejects(t, messages.getMany(c, [1.5]), 'LEVELKIT_INVALID')
    await chats.del(c)
    t.same(await messages.getMany(c, [1, 3]), [undefined, undefined], 'none once the parent is deleted, purge or not')
    await messages.settled()
    t.same(await messages.getMany(other, [1]), ['x'])
    await db.close()
  })

  test(`${common.backend}: watch() ends when the database closes`, async t => {
    const db = await common.open()
    const chats = db.collection('chats')
    const messages = db.children('messages', { parent: chats, blockSize })
    const c = await chats.insert({})
    const received = []
    const watching = (async () => {
      for await (const [seq] of messages.watch(c)) {
        received.push(seq)
        if (received.length === 2) await db.close()
      }
      return 'ended'
    })()
    await messages.append(c, 'a')
    await messages.append(c, 'b')
    const outcome = await Promise.race([watching, new Promise(resolve => setTimeout(resolve, 5000, 'still watching after 5 s'))])
    t.is(outcome, 'ended', 'the iterator ends, without an error')
    t.same(received, [1, 2])

    const idle = await common.open()
    const parents = idle.collection('chats')
    const children = idle.children('messages', { parent: parents, blockSize })
    const p = await parents.insert({})
    const waiting = children.watch(p).next().then(({ done }) => done ? 'ended' : 'delivered a child')
    await new Promise(resolve => setTimeout(resolve, 20))
    await idle.close()
    const idleOutcome = await Promise.race([waiting, new Promise(resolve => setTimeout(resolve, 5000, 'still waiting after 5 s'))])
    t.is(idleOutcome, 'ended', 'a watcher waiting for children ends when the database closes')
  })

  test(`${common.backend}: a query through a write scope sees every earlier write`, async t => {
    const db = await common.open()
    const items = db.collection('items', { indexes: { n: { key: r => r.n } } })
    const writes = Array.from({ length: 20 }, (_, i) => items.insert({ n: i }))
    const counted = await db.write(async w => items.in(w).query({ index: 'n' }).count())
    await Promise.all(writes)
    t.is(counted, 20, 'writes queued before the scope are visible to its queries')
    await db.close()
  })
}

/** What only the blocks layout has: its option, its stored shape, check() and repair. @param {any} test @param {any} common */
function blocksSuite (test, common) {
  /** The blocks as stored: [[parentId, first], pairs]. @param {any} db */
  async function storedBlocks (db) {
    const entries = await db.level.sublevel('messages.blocks', { keyEncoding: 'view', valueEncoding: 'utf8' }).iterator().all()
    return entries.map((/** @type {[Uint8Array, string]} */ [key, value]) => [decode(key), JSON.parse(value)])
  }

  test(`${common.backend}: the blockSize option is validated`, async t => {
    const db = await common.open()
    const chats = db.collection('chats')
    for (const blockSize of [0, 1, 1.5, '3', 1025, null]) {
      t.throws(() => db.children('messages', { parent: chats, blockSize }), /blockSize option/, `refuses ${JSON.stringify(blockSize)}`)
    }
    t.ok(db.children('messages', { parent: chats, blockSize: 1024 }), 'takes 1024')
    await db.close()
  })

  test(`${common.backend}: blocks hold blockSize children each, one value per block`, async t => {
    const db = await common.open()
    const chats = db.collection('chats')
    const messages = db.children('messages', { parent: chats, blockSize: 3 })
    const c = await chats.insert({})
    const batches = []
    // The stored schema's record of the layout rides with the first append (lib/schema.js).
    onModelWrite(db, (/** @type {any[]} */ ops) => batches.push(ops.map(op => namespaceOf(op.key)).filter(name => name !== ':levelkit.meta')))
    for (let i = 1; i <= 7; i++) await messages.append(c, { i })
    t.same(batches[0], ['messages.blocks', 'messages.seq'], 'an append writes its block and the sequence, in one batch')
    t.same(await storedBlocks(db), [
      [[c, 1], [[1, { i: 1 }], [2, { i: 2 }], [3, { i: 3 }]]],
      [[c, 4], [[4, { i: 4 }], [5, { i: 5 }], [6, { i: 6 }]]],
      [[c, 7], [[7, { i: 7 }]]]
    ], 'keyed by [parent, first seq], the pairs in seq order')
    await messages.del(c, 5)
    await messages.put(c, 4, 'four')
    t.same((await storedBlocks(db))[1], [[c, 4], [[4, 'four'], [6, { i: 6 }]]], 'put and del rewrite the block')
    await messages.del(c, 7)
    t.same((await storedBlocks(db)).map(([key]) => key), [[c, 1], [c, 4]], 'a block left empty is deleted')
    t.is(await messages.append(c, 'eight'), 8, 'sequence numbers are not reused')
    t.same(await messages.getMany(c, [8, 7, 6, 5, 4, 1]), ['eight', undefined, { i: 6 }, undefined, 'four', { i: 1 }])
    t.ok((await db.check()).ok)
    await db.close()
  })

  test(`${common.backend}: ranges, pages and counts over blocks agree with a plain list`, async t => {
    const db = await common.open()
    const chats = db.collection('chats')
    const messages = db.children('messages', { parent: chats, blockSize: 4 })
    const c = await chats.insert({})
    const before = await chats.insert({})
    const after = await chats.insert({})
    const random = prng(7)
    /** @type {Array<[number, any]>} */
    let model = []
    await messages.append(before, 'not mine')
    for (let i = 1; i <= 60; i++) model.push([await messages.append(c, `m${i}`), `m${i}`])
    await messages.append(after, 'not mine either')
    for (let i = 0; i < 12; i++) {
      const seq = 1 + random.int(60)
      if (await messages.del(c, seq)) model = model.filter(([s]) => s !== seq)
    }
    let mismatches = 0
    for (let round = 0; round < 150; round++) {
      /** @type {any} */
      const options = {}
      const bound = () => random.pick([random.int(64), random.int(64) + 0.5, -3])
      if (random.int(2)) options[random.pick(['gt', 'gte'])] = bound()
      if (random.int(2)) options[random.pick(['lt', 'lte'])] = bound()
      if (random.int(3) === 0) options.eq = random.int(64)
      if (random.int(2)) options.limit = random.int(20)
      if (random.int(2)) options.reverse = true
      let expected = model.filter(([s]) => (options.gt === undefined || s > options.gt) && (options.gte === undefined || s >= options.gte) &&
        (options.lt === undefined || s < options.lt) && (options.lte === undefined || s <= options.lte) && (options.eq === undefined || s === options.eq))
      if (options.reverse) expected = expected.slice().reverse()
      if (options.limit !== undefined) expected = expected.slice(0, options.limit)
      const entries = []
      for await (const entry of messages.range(c, options).entries()) entries.push(entry)
      const count = await messages.range(c, options).count()
      if (JSON.stringify(entries) !== JSON.stringify(expected) || count !== expected.length) {
        mismatches++
        if (mismatches <= 3) t.fail(`range(${JSON.stringify(options)}): ${JSON.stringify(entries)} (count ${count}), expected ${JSON.stringify(expected)}`)
      }
    }
    t.is(mismatches, 0, 'entries() and count() match a plain list for 150 random ranges')
    for (const reverse of [false, true]) {
      const seen = []
      let cursor = null
      do {
        const page = await messages.range(c, { limit: 7, reverse, cursor }).page()
        seen.push(...page.items)
        cursor = page.cursor
      } while (cursor)
      const values = model.map(([, value]) => value)
      t.same(seen, reverse ? values.reverse() : values, `pages of 7 with cursors walk every child once${reverse ? ', newest first' : ''}`)
    }
    t.same(await messages.range(c, { gt: 'a' }).all(), [], 'a bound above every number')
    t.same((await messages.range(c, { gt: null }).all()).length, model.length, 'a bound below every number')
    await db.close()
  })

  test(`${common.backend}: check() moves children between layouts and block sizes, and reports blocks it cannot read`, async t => {
    const db = await common.open()
    const chats = db.collection('chats')
    const messages = db.children('messages', { parent: chats, blockSize: 3 })
    const c = await chats.insert({})
    const gone = 99
    const keys = db.level.sublevel('messages', { keyEncoding: 'view', valueEncoding: 'utf8' })
    const blocks = db.level.sublevel('messages.blocks', { keyEncoding: 'view', valueEncoding: 'utf8' })
    const seqs = db.level.sublevel('messages.seq', { keyEncoding: 'view', valueEncoding: 'utf8' })
    // What another declaration left behind: children as keys of their own
    // (1, 2, 5), a block of 4 (6..8, and 2 again, which the key wins),
    // an orphan block and a sequence that lags behind.
    for (const seq of [1, 2, 5]) await keys.put(encode([c, seq]), JSON.stringify(`k${seq}`))
    await blocks.put(encode([c, 5]), JSON.stringify([[6, 'b6'], [7, 'b7'], [8, 'b8']]))
    await blocks.put(encode([gone, 1]), JSON.stringify([[1, 'orphan']]))
    await seqs.put(encode(c), '2')
    const report = await db.check()
    const types = report.problems.map((/** @type {any} */ p) => p.type).sort()
    t.same(types, ['child-block-mismatch', 'child-block-mismatch', 'child-block-mismatch', 'child-in-old-layout', 'child-in-old-layout',
      'child-in-old-layout', 'child-in-old-layout', 'orphan-child', 'sequence-behind'], 'every key out of place is reported')
    t.is(await messages.get(c, 1), undefined, 'a child kept in the other layout is not found before the repair')
    const repaired = await db.check({ repair: true })
    t.is(repaired.repaired, repaired.problems.length, 'all repaired')
    t.same(await db.check(), { ok: true, problems: [], repaired: 0 }, 'clean afterwards')
    t.same(await storedBlocks(db), [
      [[c, 1], [[1, 'k1'], [2, 'k2']]],
      [[c, 4], [[5, 'k5'], [6, 'b6']]],
      [[c, 7], [[7, 'b7'], [8, 'b8']]]
    ], 'in blocks of 3, nothing lost')
    t.same(await keys.keys().all(), [], 'no key of the other layout left')
    t.is(await messages.append(c, 'next'), 9, 'the sequence moved past the highest child')

    await blocks.put(encode([c, 10]), '[[10, "ok"], oops')
    const broken = await db.check({ repair: true })
    t.same(broken.problems.map((/** @type {any} */ p) => [p.type, p.repaired]), [['invalid-block', false]], 'a block that does not parse is reported, and left alone')
    t.is(await blocks.get(encode([c, 10])), '[[10, "ok"], oops')
    await db.close()
  })

  test(`${common.backend}: a repair never deletes children it cannot move: a block that does not parse keeps them where they are`, async t => {
    const db = await common.open()
    const chats = db.collection('chats')
    const messages = db.children('messages', { parent: chats, blockSize: 3 })
    const c = await chats.insert({})
    const keys = db.level.sublevel('messages', { keyEncoding: 'view', valueEncoding: 'utf8' })
    const blocks = db.level.sublevel('messages.blocks', { keyEncoding: 'view', valueEncoding: 'utf8' })
    // Children 1..4 kept one key each (another declaration's layout), and
    // the block 1..3 they belong in damaged.
    for (const seq of [1, 2, 3, 4]) await keys.put(encode([c, seq]), JSON.stringify(`k${seq}`))
    await db.level.sublevel('messages.seq', { keyEncoding: 'view', valueEncoding: 'utf8' }).put(encode(c), '4')
    const damaged = '[[1, "x"], oops'
    await blocks.put(encode([c, 1]), damaged)

    const repair = await db.check({ repair: true })
    const outcome = repair.problems.map((/** @type {any} */ p) => [p.type, Array.isArray(p.key) ? p.key : null, p.repaired])
    t.same(outcome.filter(([type]) => type === 'child-in-old-layout'), [
      ['child-in-old-layout', [c, 1], false], ['child-in-old-layout', [c, 2], false], ['child-in-old-layout', [c, 3], false],
      ['child-in-old-layout', [c, 4], true]
    ], 'only the child whose block could be written is moved')
    t.same(outcome.filter(([type]) => type !== 'child-in-old-layout'), [
      ['invalid-block', [c, 1], false], ['child-block-mismatch', [c, 1], false], ['child-block-mismatch', [c, 4], true]
    ], 'the damaged block is reported, and neither rewritten nor emptied')
    t.same((await keys.keys().all()).map((/** @type {Uint8Array} */ key) => decode(key)), [[c, 1], [c, 2], [c, 3]], 'the children bound for the damaged block are still stored')
    t.is(await blocks.get(encode([c, 1])), damaged, 'the damaged block is left as it was')
    t.same(JSON.parse(await blocks.get(encode([c, 4]))), [[4, 'k4']], 'the child bound for a sound block is moved')
    await rejects(t, messages.range(c).all(), 'LEVELKIT_DECODE_ERROR', 'range() over the damaged block fails with LEVELKIT_DECODE_ERROR')

    // Once a person has dealt with the damaged block, a repair moves the rest.
    await blocks.del(encode([c, 1]))
    t.is((await db.check({ repair: true })).problems.every((/** @type {any} */ p) => p.repaired), true)
    t.same(await messages.range(c).all(), ['k1', 'k2', 'k3', 'k4'], 'no child lost')
    t.same(await db.check(), { ok: true, problems: [], repaired: 0 })
    await db.close()
  })

  test(`${common.backend}: a repair does not rewrite a block without the children it cannot move out of it`, async t => {
    const db = await common.open()
    const chats = db.collection('chats')
    db.children('messages', { parent: chats, blockSize: 3 })
    const c = await chats.insert({})
    const blocks = db.level.sublevel('messages.blocks', { keyEncoding: 'view', valueEncoding: 'utf8' })
    // A block of 4 (from blockSize: 4) under the key of the block of 3 that
    // holds 1..3: child 4 belongs in the block from 4, which is damaged.
    const old = JSON.stringify([[1, 'a'], [2, 'b'], [3, 'c'], [4, 'd']])
    await blocks.put(encode([c, 1]), old)
    await blocks.put(encode([c, 4]), '[[4, oops')
    await db.level.sublevel('messages.seq', { keyEncoding: 'view', valueEncoding: 'utf8' }).put(encode(c), '4')
    const repair = await db.check({ repair: true })
    t.same(repair.problems.map((/** @type {any} */ p) => [p.type, p.key, p.repaired]), [
      ['invalid-block', [c, 4], false], ['child-block-mismatch', [c, 1], false], ['child-block-mismatch', [c, 4], false]
    ], 'nothing is repaired')
    t.is(await blocks.get(encode([c, 1])), old, 'the block keeps child 4')
    await db.close()
  })

  test(`${common.backend}: a repair leaves a child that is not JSON in its key rather than write it into a block`, async t => {
    const db = await common.open()
    const chats = db.collection('chats')
    const messages = db.children('messages', { parent: chats, blockSize: 3 })
    const c = await chats.insert({})
    const keys = db.level.sublevel('messages', { keyEncoding: 'view', valueEncoding: 'utf8' })
    await keys.put(encode([c, 1]), '"k1"')
    await keys.put(encode([c, 2]), 'oops')
    await keys.put(encode([c, 3]), '"k3"')
    await db.level.sublevel('messages.seq', { keyEncoding: 'view', valueEncoding: 'utf8' }).put(encode(c), '3')
    const repair = await db.check({ repair: true })
    t.same(repair.problems.filter((/** @type {any} */ p) => !p.repaired).map((/** @type {any} */ p) => [p.type, p.key]), [['child-in-old-layout', [c, 2]]], 'the child that is not JSON is reported, not moved')
    t.same(await storedBlocks(db), [[[c, 1], [[1, 'k1'], [3, 'k3']]]], 'the block holds the other two and parses')
    t.is(await keys.get(encode([c, 2])), 'oops', 'and the key is kept')
    t.same(await messages.range(c).all(), ['k1', 'k3'])
    await db.close()
  })

  test(`${common.backend}: a block that does not parse fails every read with LEVELKIT_DECODE_ERROR and is never written over`, async t => {
    const db = await common.open()
    const chats = db.collection('chats', { id: (/** @type {any} */ chat) => chat.name })
    const messages = db.children('messages', { parent: chats, blockSize: 3 })
    const other = await chats.insert({ name: 'random' })
    await messages.append(other, 'other')
    const blocks = db.level.sublevel('messages.blocks', { keyEncoding: 'view', valueEncoding: 'utf8' })
    const seqs = db.level.sublevel('messages.seq', { keyEncoding: 'view', valueEncoding: 'utf8' })
    // Each damage under a parent of its own, written behind levelkit's back
    // before levelkit reads that block (the read cache assumes no other writer).
    const damages = ['[[1,"a"],[2,"b"]', '{"1":"a","2":"b"}', '[[2,"b"],[1,"a"]]']
    for (const [i, damaged] of damages.entries()) {
      const c = await chats.insert({ name: `general${i}` })
      await blocks.put(encode([c, 1]), damaged)
      await seqs.put(encode(c), '2')
      const failures = [
        ['get()', () => messages.get(c, 1)],
        ['getMany()', () => messages.getMany(c, [2, 1])],
        ['range()', () => messages.range(c).all()],
        ['append() into it', () => messages.append(c, 'c')],
        ['put() into it', () => messages.put(c, 1, 'A')],
        ['del() from it', () => messages.del(c, 2)]
      ]
      for (const [what, call] of failures) {
        const err = await rejects(t, /** @type {() => Promise<unknown>} */ (call)(), 'LEVELKIT_DECODE_ERROR', `${damaged}: ${what} fails with LEVELKIT_DECODE_ERROR`)
        if (what === 'get()') {
          t.ok(err && err.cause instanceof SyntaxError, 'with a SyntaxError as its cause')
          t.ok(err && /messages\.blocks/.test(err.message) && err.message.includes(JSON.stringify(c)) && /block from 1\b/.test(err.message), `naming the namespace, the parent and the block: ${err && err.message}`)
        }
      }
      t.is(await blocks.get(encode([c, 1])), damaged, 'the block is left as it was')
      t.is(await messages.lastSeq(c), 2, 'the refused append took no sequence number')
    }
    t.same(await messages.range(other).all(), ['other'], 'other parents read as before')
    await db.close()
  })
}
