import { ChatStore } from '../../chat.js'
import { modelOps } from '../conformance/index.js'

// The chat reference model suite. It imports nothing environment-specific:
// the runner passes tape's `test` and `common = { backend, open }`, where
// open() resolves to a fresh, empty levelkit database on the backend under
// test. Hashing is made cheap so the suite stays fast.

const OPTIONS = { passwordCost: { scryptN: 1024, pbkdf2Iterations: 1000 } }
const HASH_FORMAT = /^(scrypt|pbkdf2-sha256)\$/
const INVALID = 'LEVELKIT_INVALID'
const NOT_FOUND = 'LEVELKIT_NOT_FOUND'
const FORBIDDEN = 'LEVELKIT_FORBIDDEN'
const LIMIT = 'LEVELKIT_LIMIT'
const UNIQUE = 'LEVELKIT_UNIQUE'
const FOREIGN = 'LEVELKIT_FOREIGN_DATA'
const MARKER = { kind: 'levelkit/chat', version: 1 }

/**
 * @param {typeof import('tape')} test
 * @param {{ backend: string, open: () => Promise<import('../../index.js').Database> }} common
 */
export function chatSuite (test, common) {
  const name = (/** @type {string} */ what) => `${common.backend}: chat: ${what}`

  /** A fresh store with one user per name (ids 1, 2, ... in order; password `pw-<name>`). */
  async function setup (/** @type {string[]} */ usernames = []) {
    const db = await common.open()
    const store = new ChatStore(db, OPTIONS)
    /** @type {number[]} */
    const ids = []
    for (const username of usernames) ids.push(await store.createUser({ username, password: `pw-${username}` }))
    return { db, store, ids }
  }

  /** store.check() is clean, then close. @param {any} t @param {any} db @param {ChatStore} store */
  async function finish (t, db, store) {
    await store.messages.settled()
    t.same(await store.check(), { ok: true, problems: [] }, 'store.check() finds nothing wrong')
    await db.close()
  }

  test(name('ChatStore options are validated before anything is declared'), async t => {
    const db = await common.open()
    for (const [options, what] of /** @type {Array<[any, string]>} */ ([
      [null, 'null options'],
      ['fast', 'a string'],
      [{ maxMembrs: 5 }, 'an unknown option'],
      [{ maxMembers: 1 }, 'maxMembers below 2'],
      [{ maxMessageLength: 2.5 }, 'a fractional maxMessageLength'],
      [{ maxUsernameLength: '64' }, 'a string maxUsernameLength'],
      [{ passwordCost: { scryptN: 1000 } }, 'a scryptN that is not a power of 2'],
      [{ passwordCost: { pbkdf2Iterations: 0 } }, 'zero PBKDF2 iterations'],
      [{ passwordCost: { scryptN: 1024, rounds: 3 } }, 'an unknown passwordCost field'],
      [{ passwordCost: 'high' }, 'a string passwordCost'],
      [{ adopt: 'yes' }, 'a string adopt']
    ])) {
      try {
        const store = new ChatStore(db, options)
        t.fail(`${what}: constructed ${typeof store}`)
      } catch (err) {
        t.is(/** @type {any} */ (err).code, INVALID, `${what} -> ${INVALID}`)
      }
    }
    t.same(db.models(), [], 'no model was declared by a refused constructor')
    const store = new ChatStore(db, OPTIONS)
    t.is(store.options.maxMembers, 30, 'at most 30 members by default')
    t.is(store.options.maxMessageLength, 200, 'at most 200 characters per message by default')
    t.is(store.options.maxUsernameLength, 64)
    await finish(t, db, store)
  })

  // Ownership: a ChatStore works on its own data only

  test(name('ChatStore.open() adopts an empty database: it marks it as a ChatStore\'s'), async t => {
    const db = await common.open()
    const store = await ChatStore.open(db, OPTIONS)
    t.same(await marker(db), MARKER, 'the marker is written in chat.meta')
    t.is(await store.createUser({ username: 'ann', password: 'pw-ann' }), 1, 'and the store works')
    await finish(t, db, store)
  })

  test(name('new ChatStore() checks the database before its first operation, and marks an empty one'), async t => {
    const db = await common.open()
    const store = new ChatStore(db, OPTIONS)
    t.is(await marker(db), undefined, 'the constructor reads and writes nothing')
    t.is(await store.getUser('ann'), null, 'the first operation runs')
    t.same(await marker(db), MARKER, 'after marking the database')
    await finish(t, db, store)
  })

  test(name('data of models named like ChatStore\'s, without its marker, is refused with LEVELKIT_FOREIGN_DATA: every operation, nothing written'), async t => {
    const db = await common.open()
    // What another program (the quick start) keeps under the same names.
    await db.level.sublevel('users').put('1', '{"id":1,"username":"ann","age":31}')
    await db.level.sublevel('users.idx.byAge').put('31', '')
    await db.level.sublevel('members.fwd').put('1', '')
    await db.level.sublevel('notes').put('1', 'a model of another name: not a reason to refuse')
    const before = await dump(db)
    const store = new ChatStore(db, OPTIONS)
    const err = await rejects(t, store.createUser({ username: 'ann', password: 'pw-ann' }), FOREIGN, 'createUser')
    t.same(err.found, ['members.fwd', 'users', 'users.idx.byAge'], 'the error names the namespaces it found')
    t.match(err.message, /members\.fwd, users, users\.idx\.byAge/, 'so does the message')
    t.is(err.marker, null, 'and that there is no marker')
    await rejects(t, store.getUser('ann'), FOREIGN, 'getUser')
    await rejects(t, store.verifyPassword('ann', 'x'), FOREIGN, 'verifyPassword')
    await rejects(t, store.getChats(1), FOREIGN, 'getChats')
    await rejects(t, store.check(), FOREIGN, 'check')
    await rejects(t, store.watch(1).next(), FOREIGN, 'watch')
    t.is(await dump(db), before, 'nothing was written')
    await db.close()
  })

  test(name('ChatStore.open() refuses data it does not own: another program\'s, another kind\'s marker, a newer layout'), async t => {
    const cases = /** @type {Array<[string, (db: any) => Promise<void>, (err: any) => void]>} */ ([
      ['a message under messages, without a marker', db => db.level.sublevel('messages').put('1', '"hi"'), err => t.same(err.found, ['messages'])],
      ['a marker of another kind', db => db.level.sublevel('chat.meta').put('store', '{"kind":"shop","version":1}'), err => t.same(err.marker, { kind: 'shop', version: 1 })],
      ['a marker that is not JSON', db => db.level.sublevel('chat.meta').put('store', 'ours'), err => t.is(err.marker, 'ours')],
      ['a marker of a newer ChatStore', db => db.level.sublevel('chat.meta').put('store', '{"kind":"levelkit/chat","version":2}'), err => t.match(err.message, /newer/)]
    ])
    for (const [what, write, inspect] of cases) {
      const db = await common.open()
      await write(db)
      const before = await dump(db)
      const err = await rejects(t, ChatStore.open(db, OPTIONS), FOREIGN, what)
      if (err) inspect(err)
      t.is(await dump(db), before, `${what}: nothing written`)
      await db.close()
    }
  })

  test(name('{ adopt: true } takes unmarked data as a ChatStore\'s (one written before stores were marked)'), async t => {
    const db = await common.open()
    await db.level.sublevel('members.fwd').put('1', '')
    const store = await ChatStore.open(db, { ...OPTIONS, adopt: true })
    t.same(await marker(db), MARKER, 'marked')
    t.is(await store.getUser('ann'), null)
    await db.close()
  })

  // Users

  test(name('createUser, getUser, getUserById, verifyPassword'), async t => {
    const { db, store } = await setup()
    t.is(await store.createUser({ username: ' alice ', password: 'pw-alice' }), 1, 'the first user id is 1')
    t.is(await store.createUser({ username: 'bob', password: 'pw-bob' }), 2)
    t.is(await store.createUser({ username: 'Alice', password: 'pw-Alice' }), 3, 'usernames are case-sensitive')

    const alice = await store.getUser('alice')
    t.same(alice, { id: 1, username: 'alice', createdAt: alice?.createdAt }, 'the username is stored trimmed; only public fields')
    t.is(typeof alice?.createdAt, 'number')
    t.same(await store.getUser('  alice\t'), alice, 'the looked-up username is trimmed too')
    t.is((await store.getUser('Alice'))?.id, 3)
    t.is(await store.getUser('ALICE'), null, 'unknown username -> null')
    t.is(await store.getUser('carol'), null)
    t.same(await store.getUserById(1), alice)
    t.is((await store.getUserById(2))?.username, 'bob')
    t.is(await store.getUserById(4), null, 'unknown id -> null')
    t.is(await store.getUserById(9007199254740991), null)

    t.same(await store.verifyPassword('alice', 'pw-alice'), alice, 'right password -> the user')
    t.same(await store.verifyPassword(' alice ', 'pw-alice'), alice)
    t.is(await store.verifyPassword('alice', 'pw-Alice'), null, 'another user\'s password -> null')
    t.is(await store.verifyPassword('alice', 'pw-alice '), null, 'passwords are not trimmed')
    t.is(await store.verifyPassword('alice', 'PW-ALICE'), null)
    t.is(await store.verifyPassword('Alice', 'pw-alice'), null)
    t.is(await store.verifyPassword('carol', 'pw-alice'), null, 'unknown username -> null')
    t.is((await store.verifyPassword('Alice', 'pw-Alice'))?.id, 3)
    await finish(t, db, store)
  })

  test(name('usernames are unique (trimmed, case-sensitive), 1 to 64 characters'), async t => {
    const { db, store } = await setup(['alice'])
    let before = await dump(db)
    const err = await rejects(t, store.createUser({ username: 'alice', password: 'other' }), UNIQUE, 'a taken username')
    t.is(err?.username, 'alice', 'the error names the username')
    await rejects(t, store.createUser({ username: '  alice  ', password: 'other' }), UNIQUE, 'taken once trimmed')
    t.is(await dump(db), before, 'nothing written')
    t.is(await store.createUser({ username: 'a'.repeat(64), password: 'x' }), 2, '64 characters is allowed')
    t.is(await store.createUser({ username: `  ${'b'.repeat(64)}  `, password: 'x' }), 3, 'length counts after trimming')
    t.is((await store.getUserById(3))?.username, 'b'.repeat(64))
    // Characters are code points: 64 emoji (128 UTF-16 units) are 64.
    t.is(await store.createUser({ username: '😀'.repeat(64), password: 'x' }), 4, '64 emoji are 64 characters: allowed')
    t.is((await store.getUser('😀'.repeat(64)))?.id, 4, 'and found by getUser()')
    await rejects(t, store.createUser({ username: '😀'.repeat(65), password: 'x' }), INVALID, '65 emoji are refused')

    before = await dump(db)
    for (const [username, what] of /** @type {Array<[any, string]>} */ ([
      ['', 'empty'], ['   ', 'blank'], ['c'.repeat(65), '65 characters'], [` ${'c'.repeat(65)} `, '65 after trimming'],
      [undefined, 'missing'], [null, 'null'], [42, 'a number'], [['alice'], 'an array']
    ])) {
      await rejects(t, store.createUser({ username, password: 'x' }), INVALID, `username ${what}`)
    }
    for (const [password, what] of /** @type {Array<[any, string]>} */ ([
      ['', 'empty'], [undefined, 'missing'], [null, 'null'], [12345, 'a number'], ['p'.repeat(1025), 'over 1024 characters']
    ])) {
      await rejects(t, store.createUser({ username: 'dave', password }), INVALID, `password ${what}`)
    }
    await rejects(t, store.createUser(), INVALID, 'no argument')
    await rejects(t, store.createUser(/** @type {any} */ ({})), INVALID, 'empty object')
    for (const bad of ['', '   ', 'c'.repeat(65), 7, undefined]) {
      await rejects(t, store.getUser(/** @type {any} */ (bad)), INVALID, `getUser(${JSON.stringify(bad)})`)
      await rejects(t, store.verifyPassword(/** @type {any} */ (bad), 'x'), INVALID, `verifyPassword(${JSON.stringify(bad)}, ...)`)
    }
    await rejects(t, store.verifyPassword('alice', ''), INVALID, 'verifyPassword with an empty password')
    await rejects(t, store.verifyPassword('alice', /** @type {any} */ (undefined)), INVALID, 'verifyPassword without a password')
    for (const bad of [0, -1, 1.5, '1', NaN, null, undefined, Infinity]) {
      await rejects(t, store.getUserById(/** @type {any} */ (bad)), INVALID, `getUserById(${String(bad)})`)
    }
    t.is(await dump(db), before, 'no bad input wrote anything')
    t.is(await store.createUser({ username: 'dave', password: 'x' }), 5, 'refused inputs used no user id')
    await finish(t, db, store)
  })

  test(name('concurrent createUser with one username: exactly one wins'), async t => {
    const { db, store } = await setup()
    const results = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => store.createUser({ username: 'same', password: `pw${i}` })))
    const won = results.filter(r => r.status === 'fulfilled')
    const lost = results.filter(r => r.status === 'rejected')
    t.is(won.length, 1, 'one created')
    t.same(lost.map(r => /** @type {any} */ (r).reason.code), Array(5).fill(UNIQUE), 'five refused as taken')
    const id = /** @type {PromiseFulfilledResult<number>} */ (won[0]).value
    t.is((await store.getUser('same'))?.id, id)
    const i = results.indexOf(won[0])
    t.ok(await store.verifyPassword('same', `pw${i}`), 'the winner\'s password is the stored one')
    t.is(await store.users.query().count(), 1, 'one user record')
    await finish(t, db, store)
  })

  test(name('passwords are stored only as salted slow hashes and never returned'), async t => {
    const { db, store } = await setup()
    const secret = 'correct horse battery staple'
    const a = await store.createUser({ username: 'alice', password: secret })
    const b = await store.createUser({ username: 'bob', password: secret })
    const c = await store.createUser({ username: 'carol', password: 'room-secret-pw' })
    const ha = (await store.users.get(a)).passwordHash
    const hb = (await store.users.get(b)).passwordHash
    t.match(ha, HASH_FORMAT, 'a scrypt (Node) or PBKDF2 (browser) hash')
    t.ok(ha.startsWith('scrypt$1024$') || ha.startsWith('pbkdf2-sha256$1000$'), 'made with the configured cost')
    t.isNot(ha, hb, 'salted: the same password hashes differently')
    t.notOk(ha.includes(secret), 'the hash does not contain the password')

    const chat = await store.createChat({ name: 'room', adminId: a, userIds: [b], password: 'room-secret-pw' })
    const hc = (await store.chats.get(chat)).passwordHash
    t.match(hc, HASH_FORMAT, 'a private chat\'s password is hashed too')

    const raw = await dump(db)
    t.notOk(raw.includes(secret), 'no stored key or value holds a user password in clear')
    t.notOk(raw.includes('room-secret-pw'), 'no stored key or value holds a chat password in clear')

    const seen = [
      await store.getUser('alice'), await store.getUserById(a), await store.verifyPassword('alice', secret),
      await store.getUser('carol'), await store.getUserById(c),
      await store.getChat(chat), ...(await store.getChats(a)), ...(await store.getChats(b))
    ]
    t.is(seen.length, 8)
    for (const value of seen) {
      t.ok(value && !('passwordHash' in value), `${JSON.stringify(value)} has no passwordHash`)
      t.notOk(/scrypt\$|pbkdf2-sha256\$/.test(JSON.stringify(value)), 'and no hash in any field')
    }
    await finish(t, db, store)
  })

  // Sessions

  test(name('setUserSession, getUserFromSession, removeSession'), async t => {
    const { db, store, ids: [a, b] } = await setup(['alice', 'bob'])
    const later = Date.now() + 3600000
    const sid = await store.setUserSession({ userId: a, expiry: later })
    t.match(sid, /^[0-9a-f]{32}$/, 'a random 128-bit hex id when none is given')
    const more = await Promise.all(Array.from({ length: 20 }, () => store.setUserSession({ userId: b, expiry: later })))
    t.is(new Set([sid, ...more]).size, 21, 'random ids differ')
    t.is(await store.getUserFromSession(sid), a)
    t.is(await store.getUserFromSession(more[7]), b)

    t.is(await store.setUserSession({ sessionId: 'mine', userId: b, expiry: later }), 'mine', 'a given id is used')
    t.is(await store.getUserFromSession('mine'), b)
    t.is(await store.setUserSession({ sessionId: 'mine', userId: a, expiry: later }), 'mine', 'setting it again replaces it')
    t.is(await store.getUserFromSession('mine'), a)
    t.is(await store.getUserFromSession('x'.repeat(256)), null, 'a missing session -> null')

    const expired = await store.setUserSession({ sessionId: 'old', userId: a, expiry: Date.now() - 1 })
    t.is(await store.getUserFromSession(expired), null, 'an expired session -> null')
    t.is(await store.getUserFromSession('mine', later - 1), a, 'valid until its expiry')
    t.is(await store.getUserFromSession('mine', later), null, 'expired at its expiry')
    t.is(await store.setUserSession({ sessionId: 'old', userId: a, expiry: later }), 'old', 'an expired session can be renewed')
    t.is(await store.getUserFromSession('old'), a)

    t.is(await store.removeSession('mine'), true)
    t.is(await store.getUserFromSession('mine'), null, 'gone once removed')
    t.is(await store.removeSession('mine'), false, 'removing it again -> false')
    t.is(await store.removeSession('never'), false)
    t.is(await store.sessions.query().count(), 22, 'one record per live session id')
    await finish(t, db, store)
  })

  test(name('purgeExpiredSessions removes exactly the expired sessions, over any number'), async t => {
    const { db, store, ids: [a, b] } = await setup(['alice', 'bob'])
    const now = 1700000000000
    await store.setUserSession({ sessionId: 'before', userId: a, expiry: now - 1 })
    await store.setUserSession({ sessionId: 'at', userId: a, expiry: now })
    await store.setUserSession({ sessionId: 'after', userId: b, expiry: now + 1 })
    await store.setUserSession({ sessionId: 'moved', userId: b, expiry: now - 5 })
    await store.setUserSession({ sessionId: 'moved', userId: b, expiry: now + 5 }) // re-indexed
    t.is(await store.purgeExpiredSessions(now - 2), 0, 'nothing expired yet')
    t.same(
      await Promise.all(['before', 'at', 'after', 'moved'].map(id => store.getUserFromSession(id, now))),
      [null, null, b, b], 'at `now`: "before" and "at" are expired')
    t.is(await store.purgeExpiredSessions(now), 2, 'removes the two sessions expired at `now`')
    t.is(await store.removeSession('before'), false, 'removed')
    t.is(await store.removeSession('at'), false, 'removed')
    t.is(await store.getUserFromSession('after', now), b, 'others kept')
    t.is(await store.getUserFromSession('moved', now), b, 'a replaced session is judged by its new expiry')
    t.is(await store.purgeExpiredSessions(now), 0, 'idempotent')

    // More than one bounded batch of expired sessions.
    for (let i = 0; i < 2500; i += 500) {
      await Promise.all(Array.from({ length: 500 }, (_, j) => store.setUserSession({ sessionId: `s${i + j}`, userId: a, expiry: i + j })))
    }
    t.is(await store.purgeExpiredSessions(999), 1000, 'expiry 0..999')
    t.is(await store.getUserFromSession('s1000', 999), a)
    t.is(await store.purgeExpiredSessions(2499), 1500, 'expiry 1000..2499')
    t.is(await store.getUserFromSession('s2499', 0), null)
    t.is(await store.sessions.query().count(), 2, '"after" and "moved" are all that is left')
    t.is(await store.purgeExpiredSessions(now + 100), 2)
    t.is(await store.sessions.query().count(), 0)
    const rest = await store.setUserSession({ userId: a, expiry: Date.now() + 60000 })
    t.is(await store.purgeExpiredSessions(), 0, '`now` defaults to the current time')
    t.is(await store.getUserFromSession(rest), a)
    await finish(t, db, store)
  })

  test(name('bad session input throws and writes nothing'), async t => {
    const { db, store, ids: [a] } = await setup(['alice'])
    const later = Date.now() + 60000
    await store.setUserSession({ sessionId: 'live', userId: a, expiry: later })
    const before = await dump(db)
    for (const [session, what] of /** @type {Array<[any, string]>} */ ([
      [{ sessionId: '', userId: a, expiry: later }, 'empty sessionId'],
      [{ sessionId: 'x'.repeat(257), userId: a, expiry: later }, 'sessionId of 257 characters'],
      [{ sessionId: 17, userId: a, expiry: later }, 'numeric sessionId'],
      [{ sessionId: null, userId: a, expiry: later }, 'null sessionId'],
      [{ userId: 0, expiry: later }, 'userId 0'],
      [{ userId: '1', expiry: later }, 'string userId'],
      [{ expiry: later }, 'no userId'],
      [{ userId: a }, 'no expiry'],
      [{ userId: a, expiry: NaN }, 'NaN expiry'],
      [{ userId: a, expiry: Infinity }, 'infinite expiry'],
      [{ userId: a, expiry: String(later) }, 'string expiry'],
      [{ sessionId: 'live', userId: a, expiry: null }, 'null expiry on an existing session']
    ])) {
      await rejects(t, store.setUserSession(session), INVALID, what)
    }
    await rejects(t, store.setUserSession(), INVALID, 'no argument')
    await rejects(t, store.setUserSession({ sessionId: 'ghost', userId: 99, expiry: later }), NOT_FOUND, 'an unknown user')
    for (const bad of [17, null, undefined, {}]) {
      await rejects(t, store.getUserFromSession(/** @type {any} */ (bad)), INVALID, `getUserFromSession(${String(bad)})`)
      await rejects(t, store.removeSession(/** @type {any} */ (bad)), INVALID, `removeSession(${String(bad)})`)
    }
    for (const bad of ['now', NaN, Infinity, null]) {
      await rejects(t, store.purgeExpiredSessions(/** @type {any} */ (bad)), INVALID, `purgeExpiredSessions(${String(bad)})`)
    }
    t.is(await dump(db), before, 'nothing written')
    t.is(await store.getUserFromSession('live'), a)
    t.is(await store.setUserSession({ sessionId: 'x'.repeat(256), userId: a, expiry: later }), 'x'.repeat(256), '256 characters is allowed')
    await finish(t, db, store)
  })

  // Chats and members

  test(name('createChat and getChat: the admin is a member; chat and edges in one batch'), async t => {
    const { db, store, ids: [a, b, c, d] } = await setup(['alice', 'bob', 'carol', 'dave'])
    const writes = recordWrites(db)
    const before = Date.now()
    const chat = await store.createChat({ name: ' general ', adminId: b, userIds: [d, a] })
    writes.stop()
    t.is(chat, 1, 'the first chat id is 1')
    t.is(writes.batches.length, 1, 'one batch')
    // The stored schema's record of the relation's layout rides with its first write (lib/schema.js).
    t.same(withoutSchema(countOps(writes.batches[0])), { 'chats:put': 1, 'chats.seq:put': 1, 'members.list.to:put': 1, 'members.list.from:put': 3 },
      'holding the chat, its list of members and each member\'s list of chats')

    const got = await store.getChat(chat)
    t.same(got, {
      id: 1, name: 'general', adminId: b, members: [a, b, d], lastActivity: got?.lastActivity, createdAt: got?.createdAt, private: false
    }, 'name trimmed, members sorted, admin included')
    t.ok(got && got.lastActivity >= before && got.lastActivity <= Date.now(), 'lastActivity starts at creation time')
    t.is(got?.lastActivity, got?.createdAt)
    t.same(await Promise.all([a, b, c, d].map(u => store.checkChatMember(chat, u))), [true, true, false, true])
    t.same((await store.getChats(a)).map(x => x.id), [chat])
    t.same(await store.getChats(c), [], 'a user in no chat')

    t.is(await store.createChat({ name: 'solo', adminId: c }), 2, 'userIds is optional')
    t.same((await store.getChat(2))?.members, [c])
    t.is(await store.createChat({ name: 'dupes', adminId: a, userIds: [b, b, a, b] }), 3)
    t.same((await store.getChat(3))?.members, [a, b], 'duplicates and the admin listed again count once')
    t.is(await store.createChat({ name: 'x'.repeat(100), adminId: a, userIds: [] }), 4, 'a 100-character name')
    t.is(await store.getChat(5), null, 'unknown chat -> null')
    t.is(await store.getChat(9007199254740991), null)
    await finish(t, db, store)
  })

  test(name('createChat refuses bad input, unknown users and too many members, writing nothing'), async t => {
    const { db, store, ids } = await setup(Array.from({ length: 31 }, (_, i) => `u${i + 1}`))
    const [a, b] = ids
    const before = await dump(db)
    for (const [chat, what] of /** @type {Array<[any, string]>} */ ([
      [{ name: '', adminId: a }, 'empty name'],
      [{ name: '   ', adminId: a }, 'blank name'],
      [{ name: 'x'.repeat(101), adminId: a }, '101-character name'],
      [{ name: 5, adminId: a }, 'numeric name'],
      [{ adminId: a }, 'no name'],
      [{ name: 'r' }, 'no adminId'],
      [{ name: 'r', adminId: 0 }, 'adminId 0'],
      [{ name: 'r', adminId: '1' }, 'string adminId'],
      [{ name: 'r', adminId: a, userIds: b }, 'userIds not an array'],
      [{ name: 'r', adminId: a, userIds: [b, 0] }, 'a user id 0'],
      [{ name: 'r', adminId: a, userIds: [2.5] }, 'a fractional user id'],
      [{ name: 'r', adminId: a, userIds: [String(b)] }, 'a string user id'],
      [{ name: 'r', adminId: a, userIds: [null] }, 'a null user id'],
      [{ name: 'r', adminId: a, password: '' }, 'an empty password'],
      [{ name: 'r', adminId: a, password: 1234 }, 'a numeric password']
    ])) {
      await rejects(t, store.createChat(chat), INVALID, what)
    }
    await rejects(t, store.createChat(), INVALID, 'no argument')
    await rejects(t, store.createChat({ name: 'r', adminId: 99 }), NOT_FOUND, 'an unknown admin')
    await rejects(t, store.createChat({ name: 'r', adminId: a, userIds: [b, 99] }), NOT_FOUND, 'an unknown member')
    await rejects(t, store.createChat({ name: 'r', adminId: a, userIds: ids }), LIMIT, '31 members')
    t.is(await dump(db), before, 'nothing written')
    t.same(await store.getChats(a), [])
    t.is(await store.existsChat(a, b), false)

    const full = await store.createChat({ name: 'full', adminId: a, userIds: [...ids.slice(1, 30), b, a] })
    t.is((await store.getChat(full))?.members.length, 30, '30 members, duplicates not counted')
    await finish(t, db, store)
  })

  test(name('addChatMember, removeChatMember, checkChatMember'), async t => {
    const { db, store, ids: [a, b, c] } = await setup(['alice', 'bob', 'carol'])
    const chat = await store.createChat({ name: 'room', adminId: a })
    t.is(await store.checkChatMember(chat, b), false)
    t.is(await store.addChatMember(chat, b), true, 'added')
    t.is(await store.addChatMember(chat, b), false, 'already a member -> false')
    t.is(await store.addChatMember(chat, a), false, 'the admin is already a member')
    t.is(await store.checkChatMember(chat, b), true)
    t.same((await store.getChat(chat))?.members, [a, b])
    t.same((await store.getChats(b)).map(x => x.id), [chat], 'the chat is listed for the new member')
    t.is(await store.addChatMember(chat, 99), false, 'an unknown user -> false')
    t.is(await store.addChatMember(99, b), false, 'an unknown chat -> false')
    t.is(await store.checkChatMember(chat, 99), false)
    t.is(await store.checkChatMember(99, a), false, 'an unknown chat -> false')

    t.is(await store.removeChatMember(chat, b), true, 'removed')
    t.is(await store.removeChatMember(chat, b), false, 'not a member any more -> false')
    t.is(await store.removeChatMember(chat, c), false, 'never a member -> false')
    t.is(await store.removeChatMember(99, a), false, 'an unknown chat -> false')
    t.is(await store.checkChatMember(chat, b), false)
    t.same((await store.getChat(chat))?.members, [a])
    t.same(await store.getChats(b), [], 'no longer listed for the removed member')
    t.is(await store.addChatMember(chat, b), true, 'can be added back')
    t.same((await store.getChat(chat))?.members, [a, b])

    const before = await dump(db)
    for (const [args, what] of /** @type {Array<[any[], string]>} */ ([
      [[0, b], 'chat id 0'], [[chat, 0], 'user id 0'], [['1', b], 'string chat id'], [[chat, 1.5], 'fractional user id'],
      [[undefined, b], 'no chat id'], [[chat, undefined], 'no user id'], [[chat, -b], 'negative user id']
    ])) {
      await rejects(t, store.addChatMember(args[0], args[1]), INVALID, `addChatMember: ${what}`)
      await rejects(t, store.removeChatMember(args[0], args[1]), INVALID, `removeChatMember: ${what}`)
      await rejects(t, store.checkChatMember(args[0], args[1]), INVALID, `checkChatMember: ${what}`)
    }
    t.is(await dump(db), before, 'nothing written')
    await finish(t, db, store)
  })

  test(name('at most 30 members: LIMIT beyond, also under concurrency'), async t => {
    const { db, store, ids } = await setup(Array.from({ length: 34 }, (_, i) => `u${i + 1}`))
    const chat = await store.createChat({ name: 'big', adminId: ids[0], userIds: ids.slice(1, 30) })
    t.is((await store.getChat(chat))?.members.length, 30)
    const before = await dump(db)
    await rejects(t, store.addChatMember(chat, ids[30]), LIMIT, 'a 31st member')
    t.is(await dump(db), before, 'nothing written')
    t.is(await store.checkChatMember(chat, ids[30]), false)
    t.is(await store.addChatMember(chat, ids[5]), false, 'adding an existing member of a full chat is a no-op, not an error')
    t.is(await store.removeChatMember(chat, ids[29]), true)
    t.is(await store.addChatMember(chat, ids[30]), true, 'room again after a removal')

    for (const id of ids.slice(27, 31)) await store.removeChatMember(chat, id)
    t.is((await store.getChat(chat))?.members.length, 27)
    const results = await Promise.allSettled(ids.slice(30, 34).map(id => store.addChatMember(chat, id)))
    t.is(results.filter(r => r.status === 'fulfilled' && r.value === true).length, 3, 'three of four concurrent adds fit')
    t.same(results.filter(r => r.status === 'rejected').map(r => /** @type {any} */ (r).reason.code), [LIMIT], 'the fourth is refused')
    const members = (await store.getChat(chat))?.members
    t.is(members?.length, 30)
    t.same(await store.members.to(chat).all(), members, 'edges match the member list')
    await finish(t, db, store)
  })

  test(name('a private chat needs its password to join'), async t => {
    const { db, store, ids: [a, b, c, d] } = await setup(['alice', 'bob', 'carol', 'dave'])
    const chat = await store.createChat({ name: 'secret', adminId: a, userIds: [b], password: 'open sesame' })
    const got = await store.getChat(chat)
    t.is(got?.private, true)
    t.same(got?.members, [a, b], 'members given at creation need no password')
    const before = await dump(db)
    await rejects(t, store.addChatMember(chat, c), FORBIDDEN, 'no password')
    await rejects(t, store.addChatMember(chat, c, {}), FORBIDDEN, 'no password in the options')
    await rejects(t, store.addChatMember(chat, c, { password: 'open sesame!' }), FORBIDDEN, 'a wrong password')
    await rejects(t, store.addChatMember(chat, c, { password: 'OPEN SESAME' }), FORBIDDEN, 'passwords are case-sensitive')
    await rejects(t, store.addChatMember(chat, c, /** @type {any} */ ({ password: 42 })), FORBIDDEN, 'a non-string password')
    t.is(await dump(db), before, 'nothing written')
    t.is(await store.checkChatMember(chat, c), false)
    t.is(await store.addChatMember(chat, c, { password: 'open sesame' }), true, 'the right password')
    t.is(await store.checkChatMember(chat, c), true)
    t.is(await store.addChatMember(chat, 99, { password: 'open sesame' }), false, 'an unknown user, right password -> false')
    t.is(await store.addChatMessage({ chatId: chat, senderId: c, text: 'in' }), 1, 'the new member may send')

    const open = await store.createChat({ name: 'open', adminId: a })
    t.is((await store.getChat(open))?.private, false)
    t.is(await store.addChatMember(open, d, { password: 'whatever' }), true, 'a public chat ignores a password')
    await finish(t, db, store)
  })

  test(name('existsChat: a chat whose members are exactly these two users'), async t => {
    const { db, store, ids: [a, b, c, d] } = await setup(['alice', 'bob', 'carol', 'dave'])
    t.is(await store.existsChat(a, b), false, 'no chat yet')
    const ab = await store.createChat({ name: 'ab', adminId: a, userIds: [b] })
    t.is(await store.existsChat(a, b), true, 'after createChat')
    t.is(await store.existsChat(b, a), true, 'either order')
    t.is(await store.existsChat(a, c), false)
    t.is(await store.existsChat(a, a), false, 'one user is not a pair')
    t.is(await store.existsChat(a, 99), false)

    await store.addChatMember(ab, c)
    t.is(await store.existsChat(a, b), false, 'the pair became a trio')
    t.is(await store.existsChat(a, c), false)
    t.is(await store.existsChat(b, c), false)
    await store.removeChatMember(ab, a)
    t.is(await store.existsChat(b, c), true, 'the trio became the pair b, c')
    t.is(await store.existsChat(a, b), false)
    await store.removeChatMember(ab, c)
    t.is(await store.existsChat(b, c), false, 'down to one member')
    await store.addChatMember(ab, a)
    t.is(await store.existsChat(a, b), true, 'a pair again')
    t.is(await store.deleteChat(ab), true)
    t.is(await store.existsChat(a, b), false, 'after deleteChat')

    const ad1 = await store.createChat({ name: 'ad1', adminId: a, userIds: [d] })
    const ad2 = await store.createChat({ name: 'ad2', adminId: d, userIds: [a] })
    t.is(await store.existsChat(d, a), true, 'two chats with the same pair')
    await store.deleteChat(ad1)
    t.is(await store.existsChat(a, d), true, 'still true with one of them deleted')
    await store.addChatMember(ad2, b)
    t.is(await store.existsChat(a, d), false, 'the other one grew')
    await store.removeChatMember(ad2, b)
    t.is(await store.existsChat(a, d), true)
    await store.deleteChat(ad2)
    t.is(await store.existsChat(a, d), false, 'both deleted')

    await store.createChat({ name: 'trio', adminId: a, userIds: [b, c] })
    t.same(await Promise.all([[a, b], [a, c], [b, c]].map(([x, y]) => store.existsChat(x, y))), [false, false, false], 'a trio is no pair')
    await store.createChat({ name: 'solo', adminId: c, userIds: [c] })
    t.is(await store.existsChat(c, c), false)
    for (const [x, y] of [[0, a], [a, 0], ['1', a], [a, 1.5], [undefined, a]]) {
      await rejects(t, store.existsChat(/** @type {any} */ (x), /** @type {any} */ (y)), INVALID, `existsChat(${String(x)}, ${String(y)})`)
    }
    await finish(t, db, store)
  })

  test(name('getChats lists the user\'s chats, most recent activity first'), async t => {
    const { db, store, ids: [a, b, c] } = await setup(['alice', 'bob', 'carol'])
    const base = Date.now() + 1000000
    const x = await store.createChat({ name: 'x', adminId: a, userIds: [b] })
    const y = await store.createChat({ name: 'y', adminId: b, userIds: [a] })
    const z = await store.createChat({ name: 'z', adminId: a })
    const w = await store.createChat({ name: 'w', adminId: a, userIds: [c] })
    await store.createChat({ name: 'not alice\'s', adminId: c })
    await store.addChatMessage({ chatId: y, senderId: b, text: '1', timestamp: base + 1 })
    await store.addChatMessage({ chatId: x, senderId: a, text: '2', timestamp: base + 2 })
    await store.addChatMessage({ chatId: z, senderId: a, text: '3', timestamp: base + 3 })
    const chats = await store.getChats(a)
    t.same(chats.map(chat => chat.id), [z, x, y, w], 'ordered by the last message\'s timestamp; a quiet chat last')
    t.same(chats.map(chat => chat.lastActivity).slice(0, 3), [base + 3, base + 2, base + 1], 'lastActivity is the message timestamp')
    t.same(chats[1], await store.getChat(x), 'the same chats getChat returns')
    t.same((await store.getChats(b)).map(chat => chat.id), [x, y])
    t.same((await store.getChats(c)).map(chat => chat.id), [5, w], 'quiet chats: the newest first')

    await store.addChatMessage({ chatId: y, senderId: a, text: '4', timestamp: base + 10 })
    t.same((await store.getChats(a)).map(chat => chat.id), [y, z, x, w], 'a new message moves its chat to the front')
    t.same((await store.getChats(b)).map(chat => chat.id), [y, x])
    await store.removeChatMember(z, a)
    t.same((await store.getChats(a)).map(chat => chat.id), [y, x, w], 'a chat the user left is not listed')
    await store.deleteChat(x)
    t.same((await store.getChats(a)).map(chat => chat.id), [y, w], 'nor a deleted chat')
    t.same((await store.getChats(b)).map(chat => chat.id), [y])
    t.same(await store.getChats(99), [], 'an unknown user has no chats')
    for (const bad of [0, '1', 1.5, null]) await rejects(t, store.getChats(/** @type {any} */ (bad)), INVALID, `getChats(${String(bad)})`)
    await finish(t, db, store)
  })

  // Messages

  test(name('addChatMessage: per-chat ids from 1, one value, lastActivity in the same batch'), async t => {
    const { db, store, ids: [a, b, c] } = await setup(['alice', 'bob', 'carol'])
    const base = Date.now() + 1000000
    const one = await store.createChat({ name: 'one', adminId: a, userIds: [b] })
    const two = await store.createChat({ name: 'two', adminId: b })
    const writes = recordWrites(db)
    t.is(await store.addChatMessage({ chatId: one, senderId: a, text: 'hello', timestamp: base }), 1, 'the first id is 1')
    writes.stop()
    t.is(writes.batches.length, 1, 'one batch')
    // The stored schema's record of the children's layout rides with their first write (lib/schema.js).
    t.same(withoutSchema(countOps(writes.batches[0])), { 'messages.blocks:put': 1, 'messages.seq:put': 1, 'chats:put': 1 }, 'holding the message (in its block) and the chat\'s lastActivity')
    t.same(await store.getChatMessages(one), [{ id: 1, chatId: one, senderId: a, text: 'hello', timestamp: base }], 'the message is one value')
    t.is((await store.getChat(one))?.lastActivity, base)

    t.is(await store.addChatMessage({ chatId: one, senderId: b, text: 'hi', timestamp: base + 5 }), 2)
    t.is(await store.addChatMessage({ chatId: two, senderId: b, text: 'elsewhere', timestamp: base + 1 }), 1, 'ids are per chat')
    t.is(await store.addChatMessage({ chatId: one, senderId: a, text: 'x'.repeat(200), timestamp: base + 6 }), 3, '200 characters is allowed')
    t.is((await store.getChat(one))?.lastActivity, base + 6)

    const before = Date.now()
    const id = await store.addChatMessage({ chatId: two, senderId: b, text: 'now' })
    const [message] = await store.getChatMessages(two, { from: id })
    t.ok(message.timestamp >= before && message.timestamp <= Date.now(), 'timestamp defaults to now')

    const dumped = await dump(db)
    await rejects(t, store.addChatMessage({ chatId: one, senderId: c, text: 'let me in' }), FORBIDDEN, 'a non-member may not send')
    await rejects(t, store.addChatMessage({ chatId: two, senderId: a, text: 'no' }), FORBIDDEN, 'nor a member of another chat')
    await rejects(t, store.addChatMessage({ chatId: 99, senderId: a, text: 'void' }), NOT_FOUND, 'an unknown chat')
    await rejects(t, store.addChatMessage({ chatId: one, senderId: 99, text: 'ghost' }), FORBIDDEN, 'an unknown sender')
    await rejects(t, store.addChatMessage({ chatId: one, senderId: a, text: 'x'.repeat(201) }), INVALID, '201 characters')
    for (const [message, what] of /** @type {Array<[any, string]>} */ ([
      [{ chatId: one, senderId: a, text: '' }, 'empty text'],
      [{ chatId: one, senderId: a }, 'no text'],
      [{ chatId: one, senderId: a, text: 42 }, 'numeric text'],
      [{ chatId: one, senderId: a, text: ['hi'] }, 'array text'],
      [{ chatId: 0, senderId: a, text: 'hi' }, 'chat id 0'],
      [{ senderId: a, text: 'hi' }, 'no chat id'],
      [{ chatId: one, senderId: '1', text: 'hi' }, 'string sender id'],
      [{ chatId: one, text: 'hi' }, 'no sender'],
      [{ chatId: one, senderId: a, text: 'hi', timestamp: 'now' }, 'string timestamp'],
      [{ chatId: one, senderId: a, text: 'hi', timestamp: NaN }, 'NaN timestamp'],
      [{ chatId: one, senderId: a, text: 'hi', timestamp: Infinity }, 'infinite timestamp'],
      [{ chatId: one, senderId: a, text: 'hi', recipients: [] }, 'empty recipients'],
      [{ chatId: one, senderId: a, text: 'hi', recipients: b }, 'recipients not an array'],
      [{ chatId: one, senderId: a, text: 'hi', recipients: [0] }, 'recipient id 0'],
      [{ chatId: one, senderId: a, text: 'hi', recipients: [String(b)] }, 'string recipient id']
    ])) {
      await rejects(t, store.addChatMessage(message), INVALID, what)
    }
    await rejects(t, store.addChatMessage(), INVALID, 'no argument')
    await rejects(t, store.addChatMessage({ chatId: one, senderId: a, text: 'psst', recipients: [c] }), FORBIDDEN, 'whispering to a non-member')
    t.is(await dump(db), dumped, 'no refused message wrote anything')

    t.is(await store.addChatMessage({ chatId: one, senderId: b, text: 'next' }), 4, 'refused messages used no id')
    await store.removeChatMember(one, b)
    await rejects(t, store.addChatMessage({ chatId: one, senderId: b, text: 'bye' }), FORBIDDEN, 'a removed member may not send')
    await store.addChatMember(one, c)
    t.is(await store.addChatMessage({ chatId: one, senderId: c, text: 'joined' }), 5, 'a new member may')
    await finish(t, db, store)
  })

  test(name('concurrent addChatMessage: strictly increasing ids without gaps'), async t => {
    const { db, store, ids: [a, b] } = await setup(['alice', 'bob'])
    const one = await store.createChat({ name: 'one', adminId: a, userIds: [b] })
    const two = await store.createChat({ name: 'two', adminId: a, userIds: [b] })
    const sends = []
    for (let i = 0; i < 60; i++) {
      sends.push(store.addChatMessage({ chatId: i % 3 ? one : two, senderId: i % 2 ? a : b, text: `m${i}` }))
    }
    // A refused message among them takes no id.
    const refused = store.addChatMessage({ chatId: one, senderId: 99, text: 'no' }).catch(err => err.code)
    const ids = await Promise.all(sends.map(background))
    t.is(await refused, FORBIDDEN)
    const oneIds = ids.filter((_, i) => i % 3)
    const twoIds = ids.filter((_, i) => !(i % 3))
    t.same([...oneIds].sort((x, y) => x - y), range(1, 41), 'chat one: 1..40, each once')
    t.same([...twoIds].sort((x, y) => x - y), range(1, 21), 'chat two: 1..20, each once')
    const stored = await store.getChatMessages(one, { n: 1000 })
    t.same(stored?.map(m => m.id), range(1, 41), 'stored in id order')
    t.same(stored?.map(m => m.text), ids.map((id, i) => [id, i]).filter(([, i]) => i % 3).sort((x, y) => x[0] - y[0]).map(([, i]) => `m${i}`),
      'each id holds the message it was returned for')
    await finish(t, db, store)
  })

  test(name('getChatMessages: from, to, n'), async t => {
    const { db, store, ids: [a, b] } = await setup(['alice', 'bob'])
    const chat = await store.createChat({ name: 'r', adminId: a, userIds: [b] })
    const empty = await store.createChat({ name: 'empty', adminId: a })
    const base = Date.now() + 1000000
    for (let i = 1; i <= 10; i++) await store.addChatMessage({ chatId: chat, senderId: i % 2 ? a : b, text: `m${i}`, timestamp: base + i })
    const get = async (/** @type {any} */ options) => (await store.getChatMessages(chat, options))?.map(m => m.id)

    t.same(await store.getChatMessages(chat, { from: 4, n: 1 }), [{ id: 4, chatId: chat, senderId: b, text: 'm4', timestamp: base + 4 }])
    t.same(await get(undefined), range(1, 11), 'no options: all (fewer than a page)')
    t.same(await get({}), range(1, 11))
    t.same(await get({ from: 3 }), range(3, 11), 'from only: from `from` (inclusive) up')
    t.same(await get({ from: 1 }), range(1, 11))
    t.same(await get({ from: 10 }), [10])
    t.same(await get({ from: 3, n: 2 }), [3, 4], 'from + n: the n from `from` up')
    t.same(await get({ from: 11 }), [], 'from beyond the last id -> []')
    t.same(await get({ from: 500, n: 5 }), [])
    t.same(await get({ to: 5 }), [1, 2, 3, 4], 'to only: below `to` (exclusive)')
    t.same(await get({ to: 5, n: 2 }), [3, 4], 'to + n: the n just below `to`, ascending')
    t.same(await get({ to: 2, n: 5 }), [1])
    t.same(await get({ to: 1 }), [], 'nothing below 1')
    t.same(await get({ to: 11 }), range(1, 11))
    t.same(await get({ to: 1000 }), range(1, 11), 'to beyond the last id')
    t.same(await get({ to: 1000, n: 3 }), [8, 9, 10])
    t.same(await get({ n: 3 }), [8, 9, 10], 'n only: the newest n, ascending')
    t.same(await get({ n: 1 }), [10])
    t.same(await get({ n: 10 }), range(1, 11))
    t.same(await get({ n: 100 }), range(1, 11), 'n larger than available')
    t.same(await get({ from: 3, to: 6 }), [3, 4, 5], 'from + to: [from, to)')
    t.same(await get({ from: 3, to: 6, n: 2 }), [3, 4], 'from + to + n counts up from `from`')
    t.same(await get({ from: 3, to: 6, n: 100 }), [3, 4, 5])
    t.same(await get({ from: 3, to: 3 }), [], 'an empty interval')
    t.same(await get({ from: 6, to: 3 }), [], 'a reversed interval')
    t.same(await get({ from: 9, to: 1000 }), [9, 10])
    t.same(await store.getChatMessages(empty), [], 'a chat without messages -> []')
    t.same(await store.getChatMessages(empty, { to: 5, n: 2 }), [])
    t.is(await store.getChatMessages(99), null, 'an unknown chat -> null')
    t.is(await store.getChatMessages(99, { from: 1 }), null)

    for (let i = 11; i <= 60; i++) await store.addChatMessage({ chatId: chat, senderId: a, text: `m${i}` })
    t.same(await get({ n: 60 }), range(1, 61), 'n is honoured above any default page')
    t.same(await get({ from: 2, n: 59 }), range(2, 61))
    t.same(await get({ to: 60, n: 55 }), range(5, 60))

    const before = await dump(db)
    for (const [options, what] of /** @type {Array<[any, string]>} */ ([
      [{ from: 0 }, 'from 0'], [{ from: -1 }, 'negative from'], [{ from: 1.5 }, 'fractional from'], [{ from: '1' }, 'string from'],
      [{ to: 0 }, 'to 0'], [{ to: '5' }, 'string to'], [{ to: NaN }, 'NaN to'],
      [{ n: 0 }, 'n 0'], [{ n: -3 }, 'negative n'], [{ n: 2.5 }, 'fractional n'], [{ n: '3' }, 'string n'], [{ n: Infinity }, 'infinite n'],
      [{ viewerId: 0 }, 'viewerId 0'], [{ viewerId: '1' }, 'string viewerId']
    ])) {
      await rejects(t, store.getChatMessages(chat, options), INVALID, what)
    }
    for (const bad of [0, '1', undefined, 2.5]) {
      await rejects(t, store.getChatMessages(/** @type {any} */ (bad)), INVALID, `chat id ${String(bad)}`)
    }
    t.is(await dump(db), before, 'nothing written')
    await finish(t, db, store)
  })

  test(name('whispers: shown only to their sender and recipients, and n counts only those shown'), async t => {
    const { db, store, ids: [a, b, c, d] } = await setup(['alice', 'bob', 'carol', 'dave'])
    const chat = await store.createChat({ name: 'r', adminId: a, userIds: [b, c, d] })
    const send = (/** @type {number} */ senderId, /** @type {string} */ text, /** @type {number[] | undefined} */ recipients) =>
      store.addChatMessage({ chatId: chat, senderId, text, timestamp: 1000, recipients })
    await send(a, 'all 1') // 1
    await send(a, 'a to b', [b, b]) // 2
    await send(b, 'all 3') // 3
    await send(c, 'c to a, d', [d, a]) // 4
    await send(d, 'd to d', [d]) // 5
    await send(b, 'all 6') // 6
    const ids = async (/** @type {any} */ options) => (await store.getChatMessages(chat, options))?.map(m => m.id)

    t.same((await store.getChatMessages(chat, { from: 2, n: 1, viewerId: b })), [{ id: 2, chatId: chat, senderId: a, text: 'a to b', timestamp: 1000, recipients: [b] }],
      'a whisper carries its recipients (each once)')
    t.same((await store.getChatMessages(chat, { from: 4, n: 1, viewerId: a }))?.[0].recipients, [a, d], 'sorted')
    t.same(await ids({}), [1, 3, 6], 'without viewerId: no whispers')
    t.same(await ids({ viewerId: a }), [1, 2, 3, 4, 6], 'a: sent 2, received 4')
    t.same(await ids({ viewerId: b }), [1, 2, 3, 6], 'b: received 2')
    t.same(await ids({ viewerId: c }), [1, 3, 4, 6], 'c: sent 4')
    t.same(await ids({ viewerId: d }), [1, 3, 4, 5, 6], 'd: received 4, sent 5 to itself')
    t.same(await ids({ viewerId: 99 }), [1, 3, 6], 'a stranger sees what everyone sees')

    t.same(await ids({ n: 2 }), [3, 6], 'n counts only the messages shown (newest)')
    t.same(await ids({ n: 2, viewerId: a }), [4, 6])
    t.same(await ids({ n: 3, viewerId: b }), [2, 3, 6])
    t.same(await ids({ from: 1, n: 2 }), [1, 3], 'n counts only the messages shown (from)')
    t.same(await ids({ from: 2, n: 2, viewerId: c }), [3, 4])
    t.same(await ids({ from: 4, n: 2, viewerId: d }), [4, 5])
    t.same(await ids({ to: 6, n: 2 }), [1, 3], 'n counts only the messages shown (to)')
    t.same(await ids({ to: 6, n: 2, viewerId: d }), [4, 5])
    t.same(await ids({ from: 2, to: 6, viewerId: b }), [2, 3])
    t.same(await ids({ from: 4, to: 6 }), [], 'a range of whispers only, seen by nobody in particular')
    t.same(await ids({ allWhispers: true }), [1, 2, 3, 4, 5, 6], 'allWhispers: every whisper, for a caller that filters them itself')
    t.same(await ids({ n: 1, allWhispers: true }), [6])
    t.same(await ids({ from: 4, to: 6, allWhispers: true }), [4, 5])
    t.same(await ids({ allWhispers: false }), [1, 3, 6], 'allWhispers: false is the default')
    t.is(await store.getChatMessages(99, { viewerId: a }), null)
    await rejects(t, store.getChatMessages(chat, /** @type {any} */ ({ allWhispers: 'yes' })), INVALID, 'allWhispers is a boolean')
    await rejects(t, store.getChatMessages(chat, { allWhispers: true, viewerId: a }), INVALID, 'allWhispers or viewerId, not both')
    await finish(t, db, store)
  })

  // Deleting chats

  test(name('deleteChat: chat, edges both ways and the pair count in one batch; ids never reused'), async t => {
    const { db, store, ids: [a, b, c] } = await setup(['alice', 'bob', 'carol'])
    const first = await store.createChat({ name: 'first', adminId: a, userIds: [b] })
    const keep = await store.createChat({ name: 'keep', adminId: a, userIds: [b] })
    const last = await store.createChat({ name: 'last', adminId: b, userIds: [a, c] })
    await store.addChatMessage({ chatId: first, senderId: a, text: 'hi' })
    await store.addChatMessage({ chatId: keep, senderId: b, text: 'kept' })

    const writes = recordWrites(db)
    t.is(await store.deleteChat(first), true)
    writes.stop()
    t.same(countOps(writes.batches[0]), {
      'chats:del': 1, 'members.list.to:del': 1, 'members.list.from:put': 2, 'pairs:put': 1, 'messages.purge:put': 1
    }, 'one batch: the chat, its list of members, its members\' lists of chats, the pair count, the purge marker')
    t.is(await store.getChat(first), null)
    t.is(await store.getChatMessages(first), null)
    t.is(await store.checkChatMember(first, a), false)
    t.is(await store.checkChatMember(first, b), false)
    t.same((await store.getChats(a)).map(chat => chat.id).sort(), [keep, last])
    t.is(await store.existsChat(a, b), true, 'the other chat of the pair remains')
    t.is(await store.deleteChat(first), false, 'deleting it again -> false')
    t.is(await store.deleteChat(99), false, 'an unknown chat -> false')
    t.is(await store.addChatMember(first, c), false, 'cannot join a deleted chat')
    t.is(await store.removeChatMember(first, a), false)
    await rejects(t, store.addChatMessage({ chatId: first, senderId: a, text: 'hello?' }), NOT_FOUND, 'cannot send to a deleted chat')
    t.same((await store.getChatMessages(keep))?.map(m => m.text), ['kept'], 'other chats keep their messages')

    t.is(await store.deleteChat(last), true, 'delete the newest chat')
    await store.messages.settled()
    const next = await store.createChat({ name: 'next', adminId: c, userIds: [a] })
    t.is(next, 4, 'a new chat gets a new id, not a deleted one')
    t.same(await store.getChatMessages(next), [], 'and none of the old messages')
    t.is(await store.addChatMessage({ chatId: next, senderId: c, text: 'fresh' }), 1)
    t.same(await store.getChats(c).then(chats => chats.map(chat => chat.id)), [next])
    for (const bad of [0, '1', 1.5, undefined]) await rejects(t, store.deleteChat(/** @type {any} */ (bad)), INVALID, `deleteChat(${String(bad)})`)
    await finish(t, db, store)
  })

  test(name('deleteChat with 3000 messages: gone at once for readers, purged in bounded batches'), async t => {
    const { db, store, ids: [a, b] } = await setup(['alice', 'bob'])
    const big = await store.createChat({ name: 'big', adminId: a, userIds: [b] })
    const other = await store.createChat({ name: 'other', adminId: b })
    for (let i = 0; i < 3000; i += 500) {
      await Promise.all(Array.from({ length: 500 }, (_, j) => store.addChatMessage({ chatId: big, senderId: j % 2 ? a : b, text: `m${i + j}` })))
    }
    await store.addChatMessage({ chatId: other, senderId: b, text: 'keep 1' })
    await store.addChatMessage({ chatId: other, senderId: b, text: 'keep 2' })
    t.is((await store.getChatMessages(big, { n: 5000 }))?.length, 3000)

    const writes = recordWrites(db)
    t.is(await store.deleteChat(big), true)
    // Immediately, before the background purge has run:
    t.is(await store.getChat(big), null, 'getChat -> null')
    t.is(await store.getChatMessages(big), null, 'getChatMessages -> null')
    t.is(await store.getChatMessages(big, { from: 1, n: 5000, viewerId: a }), null)
    t.is(await store.checkChatMember(big, a), false, 'checkChatMember -> false')
    t.is(await store.checkChatMember(big, b), false)
    t.same(await store.getChats(a), [], 'no longer listed')
    t.same((await store.getChats(b)).map(chat => chat.id), [other])
    t.is(await store.existsChat(a, b), false)
    t.is(await store.messages.lastSeq(big), 0)
    t.is(await store.messages.range(big).count(), 0, 'no message of it is readable')
    t.same((await store.check()).problems, [], 'consistent while purging')

    await store.messages.settled()
    writes.stop()
    const sizes = writes.batches.map(ops => ops.length)
    t.ok(sizes.every(size => size <= 1001), `every batch bounded (sizes ${sizes.join(', ')})`)
    t.ok(sizes.length >= 4, 'the delete and at least three purge batches')
    t.same(countOps(writes.batches[0])['messages.blocks:del'], undefined, 'the delete batch itself holds no message')
    const deleted = writes.batches.reduce((sum, ops) => sum + (countOps(ops)['messages.blocks:del'] || 0), 0)
    t.is(deleted, Math.ceil(3000 / 16), 'every block of 16 messages deleted exactly once')
    t.is((await rawKeys(db, 'messages.blocks')).length, 1, 'only the other chat\'s messages remain (2, in one block)')
    t.is((await rawKeys(db, 'messages.seq')).length, 1, 'and only its sequence')
    t.same(await rawKeys(db, 'messages.purge'), [], 'no purge marker left')
    t.same((await store.getChatMessages(other))?.map(m => m.text), ['keep 1', 'keep 2'])
    t.is(await store.createChat({ name: 'again', adminId: a, userIds: [b] }), 3, 'the id is not reused')
    t.same(await store.getChatMessages(3), [])
    await finish(t, db, store)
  })

  // Watching

  test(name('watch: each new message once, in id order, after `after`'), async t => {
    const { db, store, ids: [a, b] } = await setup(['alice', 'bob'])
    const chat = await store.createChat({ name: 'r', adminId: a, userIds: [b] })
    const live = await store.createChat({ name: 'live', adminId: a })
    await store.addChatMessage({ chatId: chat, senderId: a, text: 'old 1' })
    await store.addChatMessage({ chatId: chat, senderId: b, text: 'old 2' })
    const fetched = await store.getChatMessages(chat)
    const after = /** @type {any} */ (fetched).at(-1).id
    const controller = new AbortController()
    /** @type {any[]} */
    const received = []
    const watching = background((async () => {
      for await (const message of store.watch(chat, { after, signal: controller.signal })) {
        received.push(message)
        if (received.length === 40) controller.abort()
      }
    })())
    const sent = await Promise.all(Array.from({ length: 40 }, (_, i) => store.addChatMessage({ chatId: chat, senderId: i % 2 ? a : b, text: `new ${i}` })))
    t.is(await within(watching, 5000), 'settled', 'the watch ends when its signal aborts')
    t.same(received.map(m => m.id), range(3, 43), 'ids 3..42, each once, in order')
    t.same(received, await store.getChatMessages(chat, { from: 3 }), 'exactly the stored messages')
    t.same([...sent].sort((x, y) => x - y), range(3, 43))

    // Without `after`: from the last message at the time of the first next().
    const quiet = store.watch(chat)
    const first = background(quiet.next())
    await delay(20)
    await store.addChatMessage({ chatId: chat, senderId: a, text: 'latest' })
    const got = await within(first, 5000)
    t.same(got !== 'timeout' && got.value, { id: 43, chatId: chat, senderId: a, text: 'latest', timestamp: got !== 'timeout' && got.value?.timestamp })
    await quiet.return(undefined)

    // Catching up from an older `after`, then ending when the chat is deleted.
    const ended = []
    for await (const message of store.watch(chat, { after: 40 })) {
      ended.push(message.id)
      if (message.id === 43) await store.deleteChat(chat)
    }
    t.same(ended, [41, 42, 43], 'catches up, then ends when the chat is deleted')
    t.same(await store.watch(chat).next(), { value: undefined, done: true }, 'a deleted chat: ends at once')
    t.same(await store.watch(99, { after: 0 }).next(), { value: undefined, done: true }, 'an unknown chat: ends at once')
    const aborted = new AbortController()
    aborted.abort()
    t.same(await store.watch(live, { after: 0, signal: aborted.signal }).next(), { value: undefined, done: true }, 'an aborted signal: ends at once')
    for (const [id, options, what] of /** @type {Array<[any, any, string]>} */ ([
      [0, {}, 'chat id 0'], ['1', {}, 'string chat id'], [1, { after: -1 }, 'negative after'], [1, { after: 1.5 }, 'fractional after'],
      [1, { viewerId: 0 }, 'viewerId 0'], [1, { signal: 'stop' }, 'a signal that is no AbortSignal']
    ])) {
      await rejects(t, store.watch(id, options).next(), INVALID, `watch: ${what}`)
    }
    await finish(t, db, store)
  })

  test(name('watch: no gap and no duplicate between a fetch and the watch, while messages keep coming'), async t => {
    const { db, store, ids: [a, b] } = await setup(['alice', 'bob'])
    const chat = await store.createChat({ name: 'r', adminId: a, userIds: [b] })
    const total = 80
    const state = { produced: false }
    const producing = background((async () => {
      for (let i = 0; i < total; i++) {
        await store.addChatMessage({ chatId: chat, senderId: i % 2 ? a : b, text: `m${i + 1}` })
        if (i % 8 === 0) await delay(0)
      }
    })().finally(() => { state.produced = true }))
    while (!state.produced && (await store.messages.lastSeq(chat)) < 20) await delay(0)
    const fetched = /** @type {any[]} */ (await store.getChatMessages(chat, { n: 1000 }))
    const after = fetched.at(-1).id
    t.ok(after >= 20 && after < total, `fetched up to ${after} while the producer ran`)
    const controller = new AbortController()
    /** @type {any[]} */
    const watched = []
    const watching = background((async () => {
      for await (const message of store.watch(chat, { after, signal: controller.signal })) {
        watched.push(message)
        if (message.id === total) controller.abort()
      }
    })())
    await producing
    t.is(await within(watching, 5000), 'settled')
    t.same([...fetched, ...watched].map(m => m.id), range(1, total + 1), 'fetched + watched = 1..total, no gap, no duplicate')
    t.same([...fetched, ...watched].map(m => m.text), range(1, total + 1).map(i => `m${i}`))
    await finish(t, db, store)
  })

  test(name('watch with viewerId: whispers only for their sender and recipients; allWhispers: all of them'), async t => {
    const { db, store, ids: [a, b, c] } = await setup(['alice', 'bob', 'carol'])
    const chat = await store.createChat({ name: 'r', adminId: a, userIds: [b, c] })
    const watchAs = async (/** @type {number | undefined} */ viewerId) => {
      const ids = []
      for await (const message of store.watch(chat, { after: 0, viewerId })) {
        ids.push(message.id)
        if (message.id === 5) break
      }
      return ids
    }
    const everything = async () => {
      const ids = []
      for await (const message of store.watch(chat, { after: 0, allWhispers: true })) {
        ids.push(message.id)
        if (message.id === 5) break
      }
      return ids
    }
    const watchers = background(Promise.all([watchAs(undefined), watchAs(a), watchAs(b), watchAs(c), everything()]))
    await store.addChatMessage({ chatId: chat, senderId: a, text: 'all' }) // 1
    await store.addChatMessage({ chatId: chat, senderId: a, text: 'a to b', recipients: [b] }) // 2
    await store.addChatMessage({ chatId: chat, senderId: c, text: 'c to a', recipients: [a] }) // 3
    await store.addChatMessage({ chatId: chat, senderId: b, text: 'b to b', recipients: [b] }) // 4
    await store.addChatMessage({ chatId: chat, senderId: b, text: 'all' }) // 5
    const got = await within(watchers, 5000)
    t.same(got, [[1, 5], [1, 2, 3, 5], [1, 2, 4, 5], [1, 3, 5], [1, 2, 3, 4, 5]], 'nobody / a / b / c / allWhispers: everything')
    await rejects(t, store.watch(chat, { after: 0, allWhispers: true, viewerId: a }).next(), INVALID, 'watch: allWhispers or viewerId, not both')
    await rejects(t, store.watch(chat, /** @type {any} */ ({ after: 0, allWhispers: 1 })).next(), INVALID, 'watch: allWhispers is a boolean')
    await finish(t, db, store)
  })

  // Regression tests: a delete racing a read, and null where an object belongs.

  test(name('getChatMessages during deleteChat answers the whole chat or null, never []'), async t => {
    const { db, store, ids: [a] } = await setup(['alice'])
    const chat = await store.createChat({ name: 'r', adminId: a })
    await store.addChatMessage({ chatId: chat, senderId: a, text: 'one' })
    await store.addChatMessage({ chatId: chat, senderId: a, text: 'two' })
    // Let deleteChat commit right after getChatMessages' existence check:
    // the interleaving that happens by chance with concurrent readers.
    const has = store.chats.has.bind(store.chats)
    store.chats.has = async (/** @type {any} */ id) => {
      const found = await has(id)
      await store.deleteChat(id)
      return found
    }
    const got = await store.getChatMessages(chat)
    t.ok(got === null || got.length === 2, `null or both messages, got ${JSON.stringify(got)}`)
    await db.close()
  })

  test(name('lengths count characters, not UTF-16 units'), async t => {
    const { db, store, ids: [a] } = await setup(['alice'])
    const chat = await store.createChat({ name: 'r', adminId: a })
    t.is(await store.addChatMessage({ chatId: chat, senderId: a, text: '😀'.repeat(200) }), 1, '200 emoji are 200 characters')
    await rejects(t, store.addChatMessage({ chatId: chat, senderId: a, text: '😀'.repeat(201) }), INVALID, '201 are too many')
    t.is(typeof await store.createUser({ username: '🦊'.repeat(64), password: 'pw' }), 'number', 'a 64-character username of astral characters')
    await rejects(t, store.createUser({ username: '🦊'.repeat(65), password: 'pw' }), INVALID, '65 are too many')
    await db.close()
  })

  test(name('null instead of an options object throws a coded error'), async t => {
    const { db, store, ids: [a] } = await setup(['alice'])
    const chat = await store.createChat({ name: 'r', adminId: a, password: 'pw' })
    for (const [call, what] of /** @type {Array<[() => Promise<any>, string]>} */ ([
      [() => store.createUser(/** @type {any} */ (null)), 'createUser(null)'],
      [() => store.setUserSession(/** @type {any} */ (null)), 'setUserSession(null)'],
      [() => store.createChat(/** @type {any} */ (null)), 'createChat(null)'],
      [() => store.addChatMessage(/** @type {any} */ (null)), 'addChatMessage(null)'],
      [() => store.getChatMessages(chat, /** @type {any} */ (null)), 'getChatMessages(id, null)'],
      [() => store.addChatMember(chat, a, /** @type {any} */ (null)), 'addChatMember(id, id, null) on a private chat'],
      [() => store.watch(chat, /** @type {any} */ (null)).next(), 'watch(id, null)']
    ])) {
      await rejects(t, call(), INVALID, what)
    }
    await db.close()
  })
}

// Helpers

/**
 * Assert that `promise` rejects with `code`; resolve with the error.
 * @param {any} t @param {Promise<unknown>} promise @param {string} code @param {string} message
 * @returns {Promise<any>}
 */
async function rejects (t, promise, code, message) {
  try {
    const value = await promise
    t.fail(`${message}: resolved with ${JSON.stringify(value)} instead of rejecting with ${code}`)
  } catch (err) {
    t.is(/** @type {any} */ (err).code, code, `${message} -> ${code}`)
    return err
  }
}

/** Every key and value of the database, as one string. @param {any} db */
async function dump (db) {
  const entries = await db.level.iterator({ keyEncoding: 'view', valueEncoding: 'utf8' }).all()
  return JSON.stringify(entries.map((/** @type {[Uint8Array, string]} */ [key, value]) => [Array.from(key).join('.'), value]))
}

/** ChatStore's ownership marker, parsed, if there is one. @param {any} db */
async function marker (db) {
  const value = await db.level.sublevel('chat.meta').get('store')
  return value === undefined ? undefined : JSON.parse(value)
}

/** Raw keys of one namespace. @param {any} db @param {string} namespace */
function rawKeys (db, namespace) {
  return db.level.sublevel(namespace, { keyEncoding: 'view' }).keys().all()
}

/** Collect the batches written to the database until stop(). @param {any} db */
function recordWrites (db) {
  /** @type {any[][]} */
  const batches = []
  const listener = (/** @type {any[]} */ ops) => { batches.push(modelOps(ops)) }
  db.level.on('write', listener)
  return { batches, stop: () => db.level.removeListener('write', listener) }
}

/** Ops of a batch counted by `<namespace>:<type>`. @param {any[]} ops */
function countOps (ops) {
  /** @type {Record<string, number>} */
  const counts = {}
  for (const op of ops) {
    const key = `${namespaceOf(op.key)}:${op.type}`
    counts[key] = (counts[key] || 0) + 1
  }
  return counts
}

/** The namespace of a root key: `!name!...`. @param {string | Uint8Array} key */
function namespaceOf (key) {
  if (typeof key === 'string') return key.slice(1, key.indexOf('!', 1))
  let name = ''
  for (let i = 1; i < key.length && key[i] !== 0x21; i++) name += String.fromCharCode(key[i])
  return name
}

/**
 * Mark a promise awaited later as handled, so that if it rejects before then
 * the test fails where it is awaited instead of the process crashing.
 * @template T @param {Promise<T>} promise @returns {Promise<T>}
 */
function background (promise) {
  promise.catch(() => {})
  return promise
}

/** [start, end) @param {number} start @param {number} end */
function range (start, end) {
  return Array.from({ length: end - start }, (_, i) => start + i)
}

/** @param {number} ms */
function delay (ms) {
  return new Promise(resolve => setTimeout(resolve, ms))
}

/**
 * The promise's value ('settled' for undefined), or 'timeout' after `ms`.
 * @template T @param {Promise<T>} promise @param {number} ms @returns {Promise<T | 'settled' | 'timeout'>}
 */
async function within (promise, ms) {
  /** @type {any} */
  let timer
  const timeout = new Promise(resolve => { timer = setTimeout(() => resolve('timeout'), ms) })
  try {
    return /** @type {any} */ (await Promise.race([promise.then(value => value === undefined ? 'settled' : value), timeout]))
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Op counts by namespace without the stored schema's (`:levelkit.meta`).
 * @param {Record<string, number>} counts
 */
function withoutSchema (counts) {
  return Object.fromEntries(Object.entries(counts).filter(([name]) => !name.startsWith(':levelkit.meta:')))
}
