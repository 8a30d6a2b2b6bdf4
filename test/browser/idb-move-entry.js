// The move of a relation's reverse direction from stored lists into
// IndexedDB's own index (lib/relation.js, moveLayoutBatch() and
// moveIntoIndex()): a database whose reverse lists are stored (made with
// open({ relationIndexes: false }), or before levelkit kept the index) is
// moved when a levelkit that keeps the index first uses the relation: every
// forward list mirrored, the reverse lists dropped, the layout stored. Its
// answers stay the same, check() is clean, and createChat writes no reverse
// lists after. test/browser-idb-move-test.js bundles this file, opens it in
// Chromium and calls window.levelkitTests.run().

import { test, run } from './harness.js'
import { open } from '../../browser.js'
import { BrowserLevel } from 'browser-level'
import { ChatStore } from '../../chat.js'
import { decode } from '../../lib/tuple.js'
import { countRequests } from './count-requests.js'

const COST = { passwordCost: { scryptN: 1024, pbkdf2Iterations: 1 } }
const run_ = Math.random().toString(36).slice(2)
let opened = 0
const fresh = () => `levelkit-idb-move-${run_}-${++opened}`

/** The members relation's model of a ChatStore's database. @param {any} db */
function membersOf (db) {
  return db.models().find((/** @type {any} */ m) => m.kind === 'relation' && m.model.name === 'members').model
}

/**
 * Users and chats of 3 to 19 members each, on `store`.
 * @param {any} store @param {number} userCount @param {number} chatCount
 */
async function seed (store, userCount, chatCount) {
  const users = []
  for (let i = 0; i < userCount; i++) users.push(await store.createUser({ username: `user${i}`, password: 'secret-password' }))
  const chats = []
  for (let c = 0; c < chatCount; c++) {
    const members = users.filter((_, i) => (i + c) % 3 !== 0).slice(c % 5, 3 + (c * 7) % 17)
    chats.push(await store.createChat({ name: `chat${c}`, adminId: users[c % users.length], userIds: members }))
  }
  return { users, chats }
}

/**
 * Each user's chats by members.from() and by getChats() (ids in order).
 * @param {any} store @param {number[]} users
 */
async function answers (store, users) {
  const found = []
  for (const user of users) {
    const byFrom = await store.members.from(user).all()
    const byGetChats = (await store.getChats(user)).map((/** @type {any} */ c) => c.id).sort((/** @type {number} */ a, /** @type {number} */ b) => a - b)
    found.push({ user, byFrom, byGetChats })
  }
  return found
}

/**
 * The IndexedDB requests of one createChat of 20 members, after one not
 * counted (the first after open reads what the lease cache then keeps).
 * @param {any} store @param {number[]} users
 */
async function countCreateChat (store, users) {
  await store.createChat({ name: 'warm', adminId: users[1], userIds: users.slice(2, 21) })
  const { made, answer } = await countRequests(() => store.createChat({ name: 'twenty', adminId: users[0], userIds: users.slice(1, 20) }))
  return { puts: made.put, deletes: made.delete, transactions: made.transactions, id: answer }
}

/**
 * Whether the members' reverse direction is the index kind with an exact
 * mirror and no reverse lists left.
 * @param {any} t @param {any} db @param {string} when
 */
async function assertIndexKind (t, db, when) {
  const members = membersOf(db)
  t.is(members.reverse.kind, 'index', `${when}: the reverse direction is the index kind`)
  t.same(members.declaredLayout(), { lists: ['from', 'to'], native: ['from'] }, `${when}: its layout says so`)
  t.is((await members.reverseLists.namespace.sublevel.keys().all()).length, 0, `${when}: no reverse lists stored`)
  const forward = members.forward.namespace
  const lists = (await forward.sublevel.iterator().all()).map((/** @type {any} */ [key, value]) => [decode(key), decode(value)])
  const mirrored = (await db.writer.idb.mirrored(forward, false)).map((/** @type {any} */ [key, ids]) => [decode(key), ids])
  t.same(mirrored, lists, `${when}: the mirror holds every forward list (${lists.length})`)
}

test('idb-move: a ChatStore database with reverse lists (relationIndexes: false) moves into the index kind at first use; answers, check() and createChat after', async (/** @type {any} */ t) => {
  const name = fresh()
  const before = await open({ location: name, relationIndexes: false })
  const old = await ChatStore.open(before, COST)
  const { users, chats } = await seed(old, 30, 12)
  t.is(membersOf(before).reverse.kind, 'lists', 'made with relationIndexes: false: reverse lists')
  const oldCount = await countCreateChat(old, users)
  chats.push(oldCount.id)
  t.ok(oldCount.puts >= 20, `createChat of 20 members on the old layout: ${oldCount.puts} puts (a reverse list per member)`)
  const expected = await answers(old, users)
  await before.close()

  const db = await open({ location: name })
  const store = await ChatStore.open(db, COST)
  const after = await answers(store, users)
  t.same(after, expected, 'from() and getChats() answer as before the move')
  t.ok(after.every(({ byFrom, byGetChats }) => JSON.stringify(byFrom) === JSON.stringify(byGetChats)), 'and agree with each other')
  await assertIndexKind(t, db, 'after the move')
  t.is((await db.check()).problems.length, 0, 'check() is clean')
  const count = await countCreateChat(store, users)
  chats.push(count.id)
  t.ok(count.puts <= 4 && count.deletes === 0, `createChat of 20 members after the move: ${count.puts} puts, ${count.deletes} deletes (no reverse list written)`)
  t.is(count.transactions, 1, 'in one transaction')
  const status = await db.schemaStatus()
  t.is(status.members, undefined, 'no move left (schemaStatus)')
  await db.close()

  const again = await open({ location: name })
  const reopened = await ChatStore.open(again, COST)
  const last = await answers(reopened, users)
  t.same(last.map(({ byFrom }) => byFrom), last.map(({ byGetChats }) => byGetChats), 'reopened: from() and getChats() agree')
  t.ok(last.some(({ byFrom }) => byFrom.includes(count.id)), 'and list the chat made after the move')
  t.is(membersOf(again).reverse.kind, 'index', 'reopened: the index kind, stored')
  t.is((await again.check()).problems.length, 0, 'reopened: check() is clean')
  await again.close()
})

test('idb-move: a database made before levelkit kept the index (browser-level, no lists store) is moved once levelkit opens it', async (/** @type {any} */ t) => {
  const name = fresh()
  const level = new BrowserLevel(name, { prefix: '' })
  await level.open()
  const before = await open({ db: level })
  const old = await ChatStore.open(before, COST)
  const { users } = await seed(old, 12, 6)
  t.is(membersOf(before).reverse.kind, 'lists', 'a database a user brings: reverse lists')
  const expected = await answers(old, users)
  await before.close()
  await level.close()

  const db = await open({ location: name })
  const store = await ChatStore.open(db, COST)
  t.same(await answers(store, users), expected, 'answers as before')
  await assertIndexKind(t, db, 'upgraded and moved')
  t.is((await db.check()).problems.length, 0, 'check() is clean')
  const count = await countCreateChat(store, users)
  t.ok(count.puts <= 4, `createChat: ${count.puts} puts`)
  await db.close()
})

/**
 * Groups and people, a relation from groups to people with lists both ways
 * (cascade from groups, restrict to people), on `db`.
 * @param {any} db
 */
function groupsOn (db) {
  const groups = db.collection('groups')
  const people = db.collection('people')
  const members = db.relation('members', { from: groups, to: people, lists: ['from', 'to'], onDelete: { from: 'cascade', to: 'restrict' } })
  return { groups, people, members }
}

test('idb-move: before the move runs, deleting a record keeps the reverse lists right (restrict and cascade read them, not the index)', async (/** @type {any} */ t) => {
  const name = fresh()
  const before = await open({ location: name, relationIndexes: false })
  const old = groupsOn(before)
  const people = []
  for (let i = 0; i < 6; i++) people.push(await old.people.insert({ n: i }))
  const groups = []
  for (let g = 0; g < 3; g++) {
    const group = await old.groups.insert({ g })
    groups.push(group)
    await old.members.addMany(group, people.slice(g, g + 3))
  }
  await before.close()

  const db = await open({ location: name })
  const { groups: groupsNow, people: peopleNow, members } = groupsOn(db)
  const status = await db.schemaStatus()
  t.is(status.members?.layout?.state, 'moving', 'the move waits for the relation\'s first use')
  let refused = null
  try {
    await peopleNow.del(people[1])
  } catch (err) {
    refused = err
  }
  t.is(/** @type {any} */ (refused)?.code, 'LEVELKIT_RESTRICT', 'a person in groups is not deleted (restrict, by the reverse lists)')
  t.ok(await groupsNow.del(groups[0]), 'a group deleted (cascade)')
  t.is(await peopleNow.del(people[0]), true, 'then the person in no group left is deleted')
  const found = []
  for (const person of people.slice(1)) found.push(await members.from(person).all())
  t.same(found, [[groups[1]], [groups[1], groups[2]], [groups[1], groups[2]], [groups[2]], []], 'after the move each person\'s groups, without the deleted one')
  const model = membersOf(db)
  t.is(model.reverse.kind, 'index', 'the index kind')
  t.is((await model.reverseLists.namespace.sublevel.keys().all()).length, 0, 'no reverse lists left')
  t.is((await db.check()).problems.length, 0, 'check() is clean')
  await db.close()
})

// @ts-ignore
window.levelkitTests = { run }
