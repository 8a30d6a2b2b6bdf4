// ChatStore's writes run their callbacks untracked (lib/database.js
// writeUntracked): no frame of lib/context-node.js, so no AsyncLocalStorage
// is enabled for them (while one is, every promise of the process pays its
// hook: about a third of the JavaScript calls of a createChat over
// PostgreSQL with key locks, session 23). A user's db.write() callback is
// still tracked, and a ChatStore method called inside one is still refused.
import test from 'tape'
import { open } from '../index.js'
import { ChatStore } from '../chat.js'
import { WriteScope } from '../lib/write-scope.js'
import { currentScope } from '../lib/context-node.js'

const OPTIONS = { passwordCost: { scryptN: 1024, pbkdf2Iterations: 1000 } }

/**
 * Record what currentScope() answers at each WriteScope#atomic() call (every
 * model operation made through in(w), and createChat's own).
 * @param {import('tape').Test} t
 */
function watchScopes (t) {
  const atomic = WriteScope.prototype.atomic
  /** @type {Array<{ scope: WriteScope, current: unknown }>} */
  const seen = []
  WriteScope.prototype.atomic = function (fn) {
    seen.push({ scope: this, current: currentScope() })
    return atomic.call(this, fn)
  }
  t.teardown(() => { WriteScope.prototype.atomic = atomic })
  return seen
}

test('ChatStore\'s writes are untracked: no async context frame in their callbacks; a db.write() callback\'s is its w', async t => {
  const db = await open({ backend: 'memory' })
  t.teardown(() => db.close())
  const store = await ChatStore.open(db, OPTIONS)
  const seen = watchScopes(t)
  const a = await store.createUser({ username: 'ann', password: 'a-password' })
  const b = await store.createUser({ username: 'bob', password: 'b-password' })
  const chat = await store.createChat({ name: 'room', adminId: a, userIds: [b] })
  await store.addChatMessage({ chatId: chat, senderId: b, text: 'hi' })
  const c = await store.createUser({ username: 'cat', password: 'c-password' })
  await store.addChatMember(chat, c)
  await store.removeChatMember(chat, c)
  t.ok(seen.length >= 4, `model operations inside ChatStore's callbacks were watched (${seen.length})`)
  t.same(seen.filter(s => s.current !== undefined).length, 0, 'none of them ran in a tracked frame')

  seen.length = 0
  const notes = db.collection('notes')
  let inside
  await db.write(async w => {
    inside = currentScope()
    await notes.in(w).insert({ text: 'x' })
  })
  t.is(inside, seen[0]?.scope, 'a db.write() callback runs in its scope\'s frame')
  t.is(seen[0]?.current, seen[0]?.scope, 'and its model operations see it')
})

test('a ChatStore method called inside a db.write() callback is still refused (not left waiting for it)', async t => {
  const db = await open({ backend: 'memory' })
  t.teardown(() => db.close())
  const store = await ChatStore.open(db, OPTIONS)
  const a = await store.createUser({ username: 'ann', password: 'a-password' })
  await db.write(async () => {
    const err = await store.createChat({ name: 'room', adminId: a }).then(() => null, e => e)
    t.is(err?.code, 'LEVELKIT_INVALID', 'createChat inside a callback: LEVELKIT_INVALID')
  })
  t.is(await store.createChat({ name: 'room', adminId: a }), 1, 'nothing of it was written: the next chat is the first')
})
