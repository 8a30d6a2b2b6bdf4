// Unique claims on IndexedDB (lib/writer.js run(), WriteScope#mayClaim(),
// lib/idb-direct.js write()), in a browser page:
// test/browser-idb-claims-test.js bundles this file, opens it in Chromium and
// calls window.levelkitTests.run().

import { test, run } from './harness.js'
import { open } from '../../browser.js'
import { ChatStore } from '../../chat.js'
import { countRequests } from './count-requests.js'

const run_ = Math.random().toString(36).slice(2)
let opened = 0
const fresh = () => `levelkit-idb-claims-${run_}-${++opened}`

/** @param {any} db */
const usersOf = db => db.collection('users', { indexes: { username: { unique: true, key: (/** @type {any} */ u) => u.username } } })

/**
 * Forget what this tab's lease cache knows: the next reads and claims go to
 * IndexedDB, as for values another tab wrote.
 * @param {any} db
 */
const forgetCache = db => db.writer.idb?.clearCache()

/** @param {Promise<unknown>} promise */
const settled = promise => promise.then(value => ({ value }), err => ({ code: err?.code ?? err?.name }))

test('idb-claims: createUser claims the username instead of reading it: no get of the entry, one add()', async (/** @type {any} */ t) => {
  const db = await open({ location: fresh() })
  const store = await ChatStore.open(db, { passwordCost: { scryptN: 1024, pbkdf2Iterations: 1 } })
  await store.createUser({ username: 'warm', password: 'secret-password' })
  const { made, answer } = await countRequests(() => store.createUser({ username: 'ann', password: 'secret-password' }))
  t.is(made.get, 0, `no read (${JSON.stringify(made)})`)
  t.is(made.add, 1, 'the username entry is add()ed')
  t.is(made.readwrite, 1, 'one readwrite transaction')
  t.ok((await store.getUserById(/** @type {number} */ (answer)))?.username === 'ann', 'the user is written')
  // A username another tab wrote (not in this tab's cache) is refused, and nothing of the write lands.
  forgetCache(db)
  const refused = await countRequests(() => settled(store.createUser({ username: 'ann', password: 'secret-password' })))
  t.is(/** @type {any} */ (refused.answer).code, 'LEVELKIT_UNIQUE', 'a taken username is refused with LEVELKIT_UNIQUE')
  t.is(refused.made.aborted, 1, 'the claim was made and refused: its transaction aborted')
  const next = await store.createUser({ username: 'bob', password: 'secret-password' })
  t.is(next, /** @type {number} */ (answer) + 1, 'the refused write took no id: the next user gets the next one')
  t.is((await store.check()).problems.length, 0, 'check() is clean')
  await db.close()
})

test('idb-claims: a claim refused in a group: the other writes of its IndexedDB transaction commit, the refused one writes nothing', async (/** @type {any} */ t) => {
  const db = await open({ location: fresh() })
  const users = usersOf(db)
  const tags = db.collection('tags')
  const taken = await users.insert({ username: 'taken', n: 0 })
  forgetCache(db)
  // A db.write() callback that may not run again, called while the claims
  // are in flight: it waits for them instead of sharing their group.
  let plainRuns = 0
  const { made, answer } = await countRequests(() => Promise.all([
    ...Array.from({ length: 6 }, (_, i) => settled(users.insert({ username: `u${i}`, n: i + 1 }))),
    settled(users.insert({ username: 'taken', n: 99 })),
    settled(db.write(async (/** @type {any} */ w) => { plainRuns++; return tags.in(w).insert({ name: 'plain' }) })),
    ...Array.from({ length: 6 }, (_, i) => settled(users.insert({ username: `v${i}`, n: i + 7 })))
  ]))
  const results = /** @type {any[]} */ (answer)
  t.ok(made.add >= 13 && made.aborted >= 1, `the usernames were claimed, and a transaction aborted (${JSON.stringify(made)})`)
  t.is(results[6].code, 'LEVELKIT_UNIQUE', 'the taken username is refused')
  const ids = results.filter((_, i) => i !== 6 && i !== 7).map(r => r.value)
  t.ok(ids.every(id => typeof id === 'number'), `every other insert is written (${JSON.stringify(results)})`)
  t.same([...ids].sort((a, b) => a - b), Array.from({ length: 12 }, (_, i) => taken + 1 + i), 'their ids follow each other from the stored one, none skipped')
  t.is(plainRuns, 1, 'the callback that may not run again ran once')
  t.ok(typeof results[7].value === 'number', 'and its write is written')
  t.is((await tags.query().all()).length, 1, 'one tag')
  t.is((await users.getBy('username', 'taken'))?.n, 0, 'the taken username still names its record')
  t.is((await users.query().all()).length, 13, 'no record of the refused insert')
  t.is((await db.check()).problems.length, 0, 'check() is clean')
  await db.close()
})

// Found by test/browser-model-property-test.js: a db.write() callback
// called behind a group holding claims waits for that group holding the
// write lock; when a claim was refused, the group's sections ran again only
// after the callback, which then did not see an insert called before it.
test('idb-claims: writes called after a group whose claim is refused run after its sections ran again (call order)', async (/** @type {any} */ t) => {
  const db = await open({ location: fresh() })
  const users = usersOf(db)
  await users.insert({ username: 'ann' })
  forgetCache(db)
  const answers = await Promise.all([
    settled(users.insert({ username: 'ann' })),
    settled(users.insert({ n: 2 })),
    settled(db.write(async (/** @type {any} */ w) => users.in(w).update(2, { n: 3 }))),
    settled(users.update(2, { n: 4 }))
  ])
  t.same(answers, [{ code: 'LEVELKIT_UNIQUE' }, { value: 2 }, { value: { id: 2, n: 3 } }, { value: { id: 2, n: 4 } }], 'the taken name refused; the insert, then the db.write() callback and the update after it, in call order')
  t.same(await users.get(2), { id: 2, n: 4 }, 'the last write is stored')
  t.is((await db.check()).problems.length, 0, 'check() is clean')
  await db.close()
})

test('idb-claims: a claim a later op of its group replaces is still made (an insert, then a rename, of a taken value)', async (/** @type {any} */ t) => {
  const db = await open({ location: fresh() })
  const users = usersOf(db)
  const first = await users.insert({ username: 'taken' })
  forgetCache(db)
  const { made, answer } = await countRequests(() => settled(db.write(async (/** @type {any} */ w) => {
    const id = await users.in(w).insert({ username: 'taken' })
    await users.in(w).update(id, { username: 'renamed' })
    return id
  }, { rerunnable: true })))
  t.is(/** @type {any} */ (answer).code, 'LEVELKIT_UNIQUE', 'refused: the value was taken when it was inserted')
  t.ok(made.add >= 1, `a claim was made (${JSON.stringify(made)})`)
  t.is((await users.getBy('username', 'taken'))?.id, first, 'the stored entry still names its record')
  t.is(await users.getBy('username', 'renamed'), undefined, 'nothing of the write landed')
  t.is((await db.check()).problems.length, 0, 'check() is clean')
  await db.close()
})

test('idb-claims: two databases on one IndexedDB (as two tabs) claiming the same usernames: one winner each', async (/** @type {any} */ t) => {
  const location = fresh()
  const a = await open({ location })
  const b = await open({ location })
  const sides = [usersOf(a), usersOf(b)]
  const names = Array.from({ length: 12 }, (_, i) => `name${i}`)
  const { made, answer } = await countRequests(() => Promise.all(names.flatMap((name, i) => [0, 1].map(side =>
    settled(sides[(i + side) % 2].insert({ username: name, from: (i + side) % 2 }))))))
  const results = /** @type {any[]} */ (answer)
  t.ok(made.add > 0, `claims were made (${JSON.stringify(made)})`)
  let winners = 0
  for (let i = 0; i < names.length; i++) {
    const pair = [results[2 * i], results[2 * i + 1]]
    const won = pair.filter(r => typeof r.value === 'number').length
    const lost = pair.filter(r => r.code === 'LEVELKIT_UNIQUE').length
    if (won === 1 && lost === 1) winners++
  }
  t.is(winners, names.length, 'every name has one winner and one LEVELKIT_UNIQUE')
  const ids = results.filter(r => typeof r.value === 'number').map(r => r.value).sort((x, y) => x - y)
  t.same(ids, Array.from({ length: names.length }, (_, i) => i + 1), 'the ids are 1..n: none reused, none skipped')
  for (const [i, name] of names.entries()) {
    const user = await sides[i % 2].getBy('username', name)
    t.ok(user && ids.includes(user.id), `${name} names a written record`)
  }
  t.is((await a.check()).problems.length, 0, 'check() is clean')
  await a.close()
  await b.close()
})

test('idb-claims: where batches do not go to IndexedDB directly (a write listener on the root) nothing is claimed, and no insert runs twice', async (/** @type {any} */ t) => {
  const db = await open({ location: fresh() })
  let validated = 0
  const users = db.collection('users', {
    indexes: { username: { unique: true, key: (/** @type {any} */ u) => u.username } },
    validate: () => { validated++ }
  })
  await users.insert({ username: 'a' })
  let batches = 0
  const listener = () => { batches++ }
  db.level.on('write', listener)
  validated = 0
  try {
    const { made, answer } = await countRequests(() => Promise.all(['b', 'c', 'a'].map(username => settled(users.insert({ username })))))
    t.is(made.add, 0, `no add() (${JSON.stringify(made)})`)
    t.same(answer, [{ value: 2 }, { value: 3 }, { code: 'LEVELKIT_UNIQUE' }], 'two written, the taken one refused')
    t.is(validated, 3, 'each insert ran once')
    t.ok(batches > 0, 'the listener saw the batches')
  } finally {
    db.level.off('write', listener)
  }
  t.is((await db.check()).problems.length, 0, 'check() is clean')
  await db.close()
})

/**
 * Count JSON.parse() calls while `fn` runs (restored whatever it does).
 * @template T @param {() => Promise<T>} fn @returns {Promise<{ parses: number, answer: T }>}
 */
async function countParses (fn) {
  const parse = JSON.parse
  let parses = 0
  JSON.parse = function (/** @type {any[]} */ ...args) {
    parses++
    return parse.apply(this, /** @type {any} */ (args))
  }
  try {
    const answer = await fn()
    return { parses, answer }
  } finally {
    JSON.parse = parse
  }
}

test('idb-claims: an insert takes the serializer\'s copy of its record, not a parse of its JSON; one that runs again after a refused claim parses it, and is refused', async (/** @type {any} */ t) => {
  const db = await open({ location: fresh() })
  const users = usersOf(db)
  const keyed = db.collection('keyed', { id: (/** @type {any} */ r) => r.name, indexes: { n: { unique: true, key: (/** @type {any} */ r) => r.n } } })
  await users.insert({ username: 'warm' })
  await keyed.insert({ name: 'warm', n: 0 })
  const first = await countParses(() => users.insert({ username: 'ann', tags: ['a', 'b'], profile: { age: 30 } }))
  t.is(first.parses, 0, 'no JSON.parse() in an insert whose username is claimed')
  const stored = await users.get(/** @type {number} */ (first.answer))
  t.same(stored, { username: 'ann', tags: ['a', 'b'], profile: { age: 30 }, id: first.answer }, 'the record as given, with its id')
  // An id function gets the copy frozen, as from a parse.
  const byName = await countParses(() => keyed.insert({ name: 'k1', n: 1, deep: { x: [1] } }))
  t.is(byName.parses, 0, 'none with an id function either')
  t.same(await keyed.get('k1'), { name: 'k1', n: 1, deep: { x: [1] } }, 'that record is stored')
  // Taken in another tab: the claim is refused and the insert runs again, reading; its copy went to the first run.
  forgetCache(db)
  const again = await countParses(() => settled(users.insert({ username: 'ann', n: 2 })))
  t.is(/** @type {any} */ (again.answer).code, 'LEVELKIT_UNIQUE', 'the taken username is refused')
  t.ok(again.parses >= 1, `the run again parsed the record's JSON (${again.parses} parses)`)
  t.is((await users.query().all()).length, 2, 'nothing of it is written')
  const next = await users.insert({ username: 'bob' })
  t.is(next, /** @type {number} */ (first.answer) + 1, 'the next insert takes the next id')
  t.is((await db.check()).problems.length, 0, 'check() is clean')
  await db.close()
})

// @ts-ignore
window.levelkitTests = { run }
