// relation.addMany()'s bulk path on IndexedDB (lib/relation.js #addToList(),
// WriteScope#getMany(), ListDirection#addAll()), in a browser page, on a
// database levelkit opened (members kept as forward lists, the reverse in
// IndexedDB's index, as ChatStore declares them): a bulk load of chats in
// one db.write() writes every edge both ways with at most one read of each
// member's record; the members' checks see the write's own ops (a user
// inserted earlier is there, one deleted earlier is not, nor one an earlier
// section deleted and not yet written); the first missing member in order
// is refused, nothing of the call written; addMany() into a stored list
// merges; a second tab deleting members while chats are loaded: every
// stored edge has both endpoints. test/browser-idb-add-many-test.js
// bundles this file, opens it in Chromium and calls window.levelkitTests.run().

import { test, run } from './harness.js'
import { openChats, people, edges, memberRows, loadChats } from './chat-members.js'
import { countRequests } from './count-requests.js'

const run_ = Math.random().toString(36).slice(2)
let opened = 0
const fresh = () => `levelkit-idb-add-many-${run_}-${++opened}`

/** @param {Promise<unknown>} promise */
const settled = promise => promise.then(value => ({ value }), err => ({ code: err?.code ?? err?.name, id: err?.id, written: err?.written }))

test('idb-add-many: a bulk load of chats in one db.write(): every edge both ways, each member\'s record read at most once, check() clean', async (/** @type {any} */ t) => {
  const s = await openChats(fresh())
  await s.users.insertMany(people(60))
  // The schema's first write of chats and members done before counting.
  await s.members.addMany(await s.chats.insert({ title: 'warm' }), [1])
  s.db.writer.idb?.clearCache()
  const rows = memberRows()
  const { made, answer } = await countRequests(() => loadChats(s, rows))
  const expected = rows.flatMap((members, c) => members.map(u => `${answer[c]}>${u}`)).sort()
  const found = await edges(s, answer, 60)
  t.same(found.forward, expected, 'every chat lists its members')
  t.same(found.reverse, expected, 'every member lists its chats (the index)')
  t.ok(made.get <= 60, `each member's record read at most once (${JSON.stringify(made)})`)
  t.is(made.readwrite, 1, 'one readwrite transaction')
  t.is((await s.db.check()).problems.length, 0, 'check() is clean')
  await s.db.close()
})

test('idb-add-many: the members\' checks see the write\'s own ops and an earlier section\'s unwritten ones; the first missing member in order is refused, nothing of the call written', async (/** @type {any} */ t) => {
  const s = await openChats(fresh())
  await s.users.insertMany(people(10))
  const chat = await s.chats.insert({ title: 'c' })
  await s.members.addMany(chat, [2, 4])
  // Users 1..10 are in this tab's lease cache: a deleted one found there would be taken as existing.
  await s.users.getMany([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
  t.same(await settled(s.members.addMany(chat, [1, 30, 3, 20])), { code: 'LEVELKIT_NOT_FOUND', id: 30, written: 0 }, 'the first missing id in order')
  const result = await s.db.write(async (/** @type {any} */ w) => {
    const fresh = await s.users.in(w).insert({ name: 'new' })
    await s.users.in(w).del(5)
    const refused = await settled(s.members.in(w).addMany(chat, [1, 5, fresh]))
    const added = await s.members.in(w).addMany(chat, [fresh, 1, 3])
    return { fresh, refused, added }
  })
  t.same(result.refused, { code: 'LEVELKIT_NOT_FOUND', id: 5, written: 0 }, 'a user deleted earlier in the write is missing')
  t.is(result.added, 3, 'a user inserted earlier in the write exists')
  t.same(await s.members.to(chat).all(), [1, 2, 3, 4, result.fresh], 'the list: what was added, in order')
  // Two sections, the second decided while the first's batch may still be unwritten.
  const [deleted, refused] = await Promise.all([
    s.db.write(async (/** @type {any} */ w) => { await s.users.in(w).del(7); return true }),
    s.db.write(async (/** @type {any} */ w) => settled(s.members.in(w).addMany(chat, [6, 7])))
  ])
  t.ok(deleted, 'user 7 deleted')
  t.same(refused, { code: 'LEVELKIT_NOT_FOUND', id: 7, written: 0 }, 'a user an earlier section deleted is missing')
  t.same(await s.members.from(6).all(), [], 'nothing of the refused call')
  t.is((await s.db.check()).problems.length, 0, 'check() is clean')
  await s.db.close()
})

test('idb-add-many: addMany() into a stored list merges, repeats and ids out of order included', async (/** @type {any} */ t) => {
  const s = await openChats(fresh())
  await s.users.insertMany(people(12))
  const chat = await s.chats.insert({ title: 'c' })
  t.is(await s.members.addMany(chat, [5, 9]), 2)
  t.is(await s.members.addMany(chat, [7, 3, 9, 3, 12, 1]), 4, 'four new edges')
  t.same(await s.members.to(chat).all(), [1, 3, 5, 7, 9, 12], 'in id order')
  for (const user of [1, 3, 5, 7, 9, 12]) t.same(await s.members.from(user).all(), [chat], `user ${user} lists the chat`)
  t.is(await s.members.addMany(chat, [12, 1]), 0, 'all there: none new')
  t.is(await s.members.addMany(chat, [4, 2]), 2, 'below stored ids')
  t.same(await s.members.to(chat).all(), [1, 2, 3, 4, 5, 7, 9, 12], 'the stored ids after them kept')
  t.same(await s.members.from(4).all(), [chat], 'user 4 lists the chat')
  t.is((await s.db.check()).problems.length, 0, 'check() is clean')
  await s.db.close()
})

test('idb-add-many: a second tab deleting users while chats are loaded: every stored edge has both endpoints, check() clean', async (/** @type {any} */ t) => {
  const location = fresh()
  const a = await openChats(location)
  const b = await openChats(location)
  await a.users.insertMany(people(40))
  await b.users.getMany([1, 2, 3])
  const loads = []
  for (let c = 0; c < 8; c++) {
    const members = Array.from({ length: 10 }, (_, k) => 1 + ((c * 5 + k * 4) % 40)).filter((u, i, all) => all.indexOf(u) === i)
    loads.push(settled(a.db.write(async (/** @type {any} */ w) => {
      const id = await a.chats.in(w).insert({ title: `c${c}` })
      await a.members.in(w).addMany(id, members)
      return id
    })))
  }
  const deletions = [3, 11, 19, 27, 35].map(id => settled(b.users.del(id)))
  const results = await Promise.all([...loads, ...deletions])
  t.ok(results.every(r => r.code === undefined || r.code === 'LEVELKIT_NOT_FOUND'), `each load written or refused for a deleted member (${JSON.stringify(results)})`)
  const chatIds = results.slice(0, 8).filter(r => r.code === undefined).map(r => /** @type {number} */ (r.value))
  const found = await edges(a, chatIds, 40)
  t.same(found.forward, found.reverse, 'both directions agree')
  const users = new Set((await a.users.query().all()).map((/** @type {any} */ u) => u.id))
  t.ok(found.forward.every(edge => users.has(Number(edge.split('>')[1]))), 'no edge to a deleted user')
  t.is((await a.db.check()).problems.length, 0, 'check() is clean')
  await b.db.close()
  await a.db.close()
})

// @ts-ignore
window.levelkitTests = { run }
