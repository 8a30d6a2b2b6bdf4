// What the agreement tests of the benchmarks' peer stores share
// (sqlite-chat-store-test.js, pg-chat-store-test.js): a store with
// ChatStore's methods must answer as ChatStore does, value for value or error
// code for error code, on random sequences of operations and on a script of
// edge cases, with the clock frozen during each operation so timestamps
// agree too.

import { prng } from 'levelkit-testkit/prng'

/**
 * Freeze Date.now() at a clock the tests move by hand; give back what was
 * there when the test run finishes.
 * @param {typeof import('tape').default} test
 */
export function frozenClock (test) {
  const before = Date.now
  const clock = { now: 1_800_000_000_000, before }
  Date.now = () => clock.now
  test.onFinish(() => { Date.now = before })
  return clock
}

/** What a call answered: its value, or its error's code. @param {() => Promise<any>} call */
export async function answer (call) {
  try {
    return { value: await call() }
  } catch (err) {
    const e = /** @type {any} */ (err)
    return e && typeof e.code === 'string' && e.code.startsWith('LEVELKIT_') ? { code: e.code } : { thrown: String(e && e.stack) }
  }
}

/**
 * One random operation, as [description, call on a store].
 * @param {ReturnType<typeof prng>} random
 * @param {{ users: number, chats: number, sessions: string[], created: Array<[string, string]> }} known
 * @param {number[]} members of a chat picked beforehand (`chatId`), to send as a member more often than not
 * @param {number} chatId
 * @param {{ now: number }} clock
 * @returns {[string, (store: any) => Promise<any>]}
 */
function operation (random, known, members, chatId, clock) {
  const r = random
  // Mostly ids that exist, sometimes just past them, sometimes not ids at all.
  const id = (/** @type {number} */ max) => {
    const x = r()
    if (x < 0.85) return 1 + r.int(Math.max(1, max + 1))
    if (x < 0.95) return max + 1 + r.int(3)
    return r.pick([0, -1, 1.5, '1', null, undefined, NaN, 2 ** 53])
  }
  const user = () => id(known.users)
  const chat = () => id(known.chats)
  const names = ['ann', 'bob', ' cy ', 'dee', 'eve', 'fay', 'gus', 'hal', 'ivy', 'jo', 'kim', 'lu', 'Ann', 'x'.repeat(64), 'y'.repeat(65), '', '  ', '👍'.repeat(64), 'zoë']
  const name = () => r() < 0.97 ? r.pick(names) + (r() < 0.7 ? String(r.int(40)) : '') : r.pick([5, null, ['ann']])
  const password = () => r() < 0.95 ? r.pick(['pw', 'secret', 'hunter2', 'x'.repeat(1024)]) : r.pick(['', 'x'.repeat(1025), 7])
  const ids = (/** @type {number} */ k) => Array.from({ length: k }, user)
  const text = () => r() < 0.95 ? r.pick(['hi', 'hello there', '👍'.repeat(200), 'a'.repeat(200), 'b'.repeat(201), '👍'.repeat(201)]) : r.pick(['', 5, null])
  const session = () => r() < 0.9 && known.sessions.length > 0 ? r.pick(known.sessions) : r.pick(['nope', '', 5])
  const messageOptions = () => {
    /** @type {Record<string, any>} */
    const o = {}
    if (r() < 0.3) o.from = r() < 0.95 ? 1 + r.int(30) : 0
    if (r() < 0.3) o.to = r() < 0.95 ? 1 + r.int(30) : -3
    if (r() < 0.5) o.n = r() < 0.95 ? 1 + r.int(60) : 0
    if (r() < 0.6) o.viewerId = user()
    return o
  }
  const ops = /** @type {Array<[number, () => [string, (s: any) => Promise<any>]]>} */ ([
    [10, () => {
      const u = { username: name(), password: password() }
      return [`createUser(${JSON.stringify(u)})`, s => s.createUser(u)]
    }],
    [4, () => { const n = name(); return [`getUser(${JSON.stringify(n)})`, s => s.getUser(n)] }],
    [3, () => { const u = user(); return [`getUserById(${u})`, s => s.getUserById(u)] }],
    [4, () => {
      let [n, p] = [name(), password()]
      if (known.created.length > 0 && r() < 0.6) [n, p] = r.pick(known.created)
      if (r() < 0.2) p = 'wrong'
      return [`verifyPassword(${JSON.stringify(n)}, ${JSON.stringify(p).slice(0, 20)})`, s => s.verifyPassword(n, p)]
    }],
    [4, () => {
      const sessionId = r() < 0.95 ? `s${r.int(30)}` : r.pick(['', 'x'.repeat(257), 3])
      const session = { sessionId, userId: user(), expiry: r() < 0.95 ? clock.now + r.int(5000) - 1000 : r.pick([Infinity, '1']) }
      if (typeof sessionId === 'string' && sessionId !== '' && !known.sessions.includes(sessionId)) known.sessions.push(sessionId)
      return [`setUserSession(${JSON.stringify(session)})`, s => s.setUserSession(session)]
    }],
    [4, () => { const sid = session(); const now = r() < 0.5 ? undefined : clock.now + r.int(3000); return [`getUserFromSession(${JSON.stringify(sid)}, ${now})`, s => s.getUserFromSession(sid, now)] }],
    [2, () => { const sid = session(); return [`removeSession(${JSON.stringify(sid)})`, s => s.removeSession(sid)] }],
    [1, () => { const now = clock.now + r.int(3000); return [`purgeExpiredSessions(${now})`, s => s.purgeExpiredSessions(now)] }],
    [8, () => {
      const big = r() < 0.2
      // A big chat lists distinct ids, around the 30-member limit.
      const userIds = big ? Array.from({ length: 29 + r.int(4) }, (_, i) => i + 1) : ids(r() < 0.4 ? 1 : r.int(6))
      /** @type {Record<string, any>} */
      const c = { name: r() < 0.95 ? r.pick(['room', ' general ', 'x'.repeat(100)]) : r.pick(['', 'y'.repeat(101), 3]), adminId: big ? 30 + r.int(3) : user(), userIds: r() < 0.97 ? userIds : 'all' }
      if (r() < 0.25) c.password = password()
      return [`createChat(${JSON.stringify(c)})`, s => s.createChat(c)]
    }],
    [4, () => { const c = chat(); return [`getChat(${c})`, s => s.getChat(c)] }],
    [5, () => { const u = user(); return [`getChats(${u})`, s => s.getChats(u)] }],
    [1, () => { const c = chat(); return [`deleteChat(${c})`, s => s.deleteChat(c)] }],
    [6, () => {
      const [c, u] = [chat(), user()]
      const o = r() < 0.5 ? undefined : r() < 0.95 ? { password: password() } : 'pw'
      return [`addChatMember(${c}, ${u}, ${JSON.stringify(o)})`, s => s.addChatMember(c, u, o)]
    }],
    [3, () => { const [c, u] = [chat(), user()]; return [`removeChatMember(${c}, ${u})`, s => s.removeChatMember(c, u)] }],
    [3, () => { const [c, u] = [chat(), user()]; return [`checkChatMember(${c}, ${u})`, s => s.checkChatMember(c, u)] }],
    [4, () => { const [a, b] = [user(), user()]; return [`existsChat(${a}, ${b})`, s => s.existsChat(a, b)] }],
    [20, () => {
      /** @type {Record<string, any>} */
      const member = () => members.length > 0 && r() < 0.8 ? r.pick(members) : user()
      const m = { chatId: members.length > 0 && r() < 0.9 ? chatId : chat(), senderId: member(), text: text() }
      if (r() < 0.3) m.timestamp = r() < 0.95 ? clock.now - 50000 + r.int(100000) : r.pick([Infinity, '5'])
      if (r() < 0.2) m.recipients = r() < 0.9 ? Array.from({ length: 1 + r.int(3) }, member) : r.pick([[], 'all', [0]])
      return [`addChatMessage(${JSON.stringify(m)})`, s => s.addChatMessage(m)]
    }],
    [12, () => { const c = chat(); const o = messageOptions(); return [`getChatMessages(${c}, ${JSON.stringify(o)})`, s => s.getChatMessages(c, o)] }]
  ])
  const total = ops.reduce((sum, [w]) => sum + w, 0)
  let pick = r.int(total)
  for (const [weight, make] of ops) {
    if (pick < weight) return make()
    pick -= weight
  }
  throw new Error('unreachable')
}

/**
 * `steps` random operations on ChatStore (`levelkit`) and on `other`, one
 * at a time: every answer equal, then the final states equal from every side
 * a caller can see, and the sequence having reached the answers worth
 * comparing (not just errors).
 * @param {import('tape').Test} t
 * @param {{ levelkit: any, other: any, seed: number, steps: number, clock: { now: number } }} run
 */
export async function agreeOnRandomOperations (t, { levelkit, other, seed, steps, clock }) {
  const STEPS = steps
  const random = prng(seed)
  const known = { users: 0, chats: 0, sessions: /** @type {string[]} */ ([]), created: /** @type {Array<[string, string]>} */ ([]) }
  const seen = new Set()
  let mismatch = null
  for (let step = 0; step < STEPS && mismatch === null; step++) {
    clock.now += 1 + random.int(1000)
    // A chat and its members, read from ChatStore (a read changes nothing).
    const chatId = 1 + random.int(Math.max(1, known.chats))
    const chat = await levelkit.getChat(chatId)
    const [what, call] = operation(random, known, chat ? chat.members : [], chatId, clock)
    const expected = await answer(() => call(levelkit))
    const actual = await answer(() => call(other))
    if (JSON.stringify(expected) !== JSON.stringify(actual)) mismatch = { step, what, expected, actual }
    if (what.startsWith('createUser') && typeof expected.value === 'number') {
      known.users = Math.max(known.users, expected.value)
      const { username, password } = JSON.parse(what.slice('createUser('.length, -1))
      known.created.push([username, password])
    }
    if (what.startsWith('createChat') && typeof expected.value === 'number') known.chats = Math.max(known.chats, expected.value)
    seen.add(`${what.slice(0, what.indexOf('('))} ${expected.code || (expected.value === null ? 'null' : typeof expected.value)}`)
  }
  t.is(mismatch, null, mismatch ? `step ${mismatch.step}: ${mismatch.what}` : `all ${STEPS} answers equal`)
  if (mismatch) t.comment(JSON.stringify(mismatch).slice(0, 4000))

  // The final states agree from every side a caller can see.
  const finals = []
  for (let u = 1; u <= known.users; u++) finals.push(['getChats', u], ['getUserById', u])
  for (let c = 1; c <= known.chats + 1; c++) {
    finals.push(['getChat', c])
    for (let v = 0; v <= known.users; v++) finals.push(['getChatMessages', c, v === 0 ? {} : { viewerId: v, n: 1000 }])
  }
  for (let a = 1; a <= Math.min(known.users, 15); a++) for (let b = 1; b <= Math.min(known.users, 15); b++) finals.push(['existsChat', a, b])
  const differ = []
  for (const [method, ...args] of finals) {
    const [expected, actual] = [await answer(() => levelkit[method](...args)), await answer(() => other[method](...args))]
    if (JSON.stringify(expected) !== JSON.stringify(actual)) differ.push(`${method}(${args.map(a => JSON.stringify(a)).join(', ')}): ${JSON.stringify(expected)} vs ${JSON.stringify(actual)}`)
  }
  t.same(differ.slice(0, 5), [], `the final states agree (${finals.length} reads)`)

  // The sequence reached the answers worth comparing, not just errors.
  for (const outcome of ['createUser number', 'createUser LEVELKIT_UNIQUE', 'createChat number', 'createChat LEVELKIT_LIMIT', 'createChat LEVELKIT_NOT_FOUND',
    'addChatMessage number', 'addChatMessage LEVELKIT_FORBIDDEN', 'addChatMessage LEVELKIT_INVALID', 'addChatMember boolean', 'getChatMessages object', 'getChatMessages null', 'verifyPassword object']) {
    t.ok(seen.has(outcome), `reached: ${outcome}`)
  }
}

/**
 * A script of edge cases (private chats, full chats, whispers, pairs,
 * deletes, ties, session expiry) on ChatStore and on `other`: every answer
 * equal.
 * @param {import('tape').Test} t
 * @param {{ levelkit: any, other: any, clock: { now: number } }} run
 */
export async function agreeOnEdgeCases (t, { levelkit, other, clock }) {
  const script = /** @type {Array<[string, ...any[]]>} */ ([
    ...Array.from({ length: 32 }, (_, i) => /** @type {[string, ...any[]]} */ (['createUser', { username: `u${i + 1}`, password: 'pw' }])),
    ['createChat', { name: 'secret', adminId: 1, userIds: [2], password: 'door' }],
    ['addChatMember', 1, 3],
    ['addChatMember', 1, 3, { password: 'wall' }],
    ['addChatMember', 1, 3, { password: 'door' }],
    ['addChatMember', 1, 3, { password: 'door' }],
    ['addChatMember', 1, 2],
    ['getChat', 1],
    ['createChat', { name: 'big', adminId: 1, userIds: Array.from({ length: 29 }, (_, i) => i + 2) }],
    ['addChatMember', 2, 31],
    ['removeChatMember', 2, 30],
    ['addChatMember', 2, 31],
    ['addChatMessage', { chatId: 1, senderId: 1, text: 'to 3', recipients: [3, 3] }],
    ['addChatMessage', { chatId: 1, senderId: 1, text: 'to 9', recipients: [9] }],
    ['addChatMessage', { chatId: 1, senderId: 2, text: 'all' }],
    ['getChatMessages', 1, {}],
    ['getChatMessages', 1, { viewerId: 3 }],
    ['getChatMessages', 1, { viewerId: 2 }],
    ['getChatMessages', 1, { viewerId: 1, from: 2 }],
    ['getChatMessages', 1, { viewerId: 1, to: 3, n: 1 }],
    ['getChatMessages', 1, { allWhispers: true }],
    ['getChatMessages', 1, { allWhispers: true, n: 1 }],
    ['getChatMessages', 1, { allWhispers: true, viewerId: 1 }],
    ['getChatMessages', 1, { allWhispers: 'yes' }],
    ['createChat', { name: 'pair', adminId: 5, userIds: [6] }],
    ['existsChat', 6, 5],
    ['addChatMember', 3, 7],
    ['existsChat', 6, 5],
    ['removeChatMember', 3, 5],
    ['removeChatMember', 3, 7],
    ['existsChat', 5, 6],
    ['existsChat', 6, 6],
    ['deleteChat', 3],
    ['deleteChat', 3],
    ['createChat', { name: 'after delete', adminId: 5, userIds: [6] }],
    ['getChatMessages', 3, {}],
    ['getChats', 1],
    ['getChats', 99],
    // Equal lastActivity: the newer chat first. '=': on the same clock.
    ['createChat', { name: 'tie a', adminId: 8 }],
    ['=createChat', { name: 'tie b', adminId: 8 }],
    ['=addChatMessage', { chatId: 6, senderId: 8, text: 'same ms' }],
    ['getChats', 8],
    // A session ends at its expiry.
    ['setUserSession', { sessionId: 'edge', userId: 1, expiry: 1_900_000_000_000 }],
    ['getUserFromSession', 'edge', 1_899_999_999_999],
    ['getUserFromSession', 'edge', 1_900_000_000_000],
    ['purgeExpiredSessions', 1_899_999_999_999],
    ['purgeExpiredSessions', 1_900_000_000_000],
    ['getUserFromSession', 'edge', 0]
  ])
  for (const [step, ...args] of script) {
    const method = step.replace(/^=/, '')
    if (!step.startsWith('=')) clock.now += 10
    const [expected, actual] = [await answer(() => levelkit[method](...args)), await answer(() => other[method](...args))]
    t.same(actual, expected, `${method}(${args.map(a => JSON.stringify(a)).join(', ')}) -> ${JSON.stringify(expected).slice(0, 120)}`)
  }
}
