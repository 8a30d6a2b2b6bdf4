// Chats and their members over real HTTP: GET/POST /api/chats,
// GET/DELETE /api/chats/:id, POST /api/chats/:id/members,
// DELETE /api/chats/:id/members/:userId and GET /api/direct-chats/:userId,
// each with its success and failure answers.
import test from 'tape'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startServer, signUp } from './util.js'

/** @param {any} answer */
const code = answer => [answer.status, answer.body?.error?.code]

test('POST /api/chats creates a chat (the caller its admin), GET /api/chats lists them by recent activity', async t => {
  const server = await startServer()
  const { api } = server
  try {
    const ann = await signUp(api, 'ann')
    const bob = await signUp(api, 'bob')
    const carol = await signUp(api, 'carol')
    t.same((await api('GET', '/api/chats', { token: ann.token })).body, [], 'none at first')

    const before = Date.now()
    const first = await api('POST', '/api/chats', { token: ann.token, body: { name: ' ann & bob ', members: ['bob'] } })
    t.is(first.status, 201)
    t.same(Object.keys(first.body).sort(), ['adminId', 'createdAt', 'id', 'lastActivity', 'members', 'name', 'private'])
    t.same([first.body.id, first.body.name, first.body.adminId, first.body.members, first.body.private], [1, 'ann & bob', ann.id, [ann.id, bob.id], false])
    t.ok(first.body.createdAt >= before && first.body.lastActivity === first.body.createdAt)
    const group = await api('POST', '/api/chats', { token: bob.token, body: { name: 'group', members: ['ann', 'carol', 'bob'] } })
    t.same([group.status, group.body.adminId, group.body.members], [201, bob.id, [ann.id, bob.id, carol.id]], 'the caller listed too: once')
    const priv = await api('POST', '/api/chats', { token: carol.token, body: { name: 'secret', members: [], private: true, password: 'letmein' } })
    t.same([priv.status, priv.body.private, priv.body.members], [201, true, [carol.id]], 'a private chat')
    t.notOk('passwordHash' in priv.body, 'no password hash')
    const implied = await api('POST', '/api/chats', { token: carol.token, body: { name: 'also secret', members: [], password: 'pw' } })
    t.is(implied.body.private, true, 'a password makes it private')

    await api('POST', `/api/chats/${first.body.id}/messages`, { token: bob.token, body: { text: 'news' } })
    const list = await api('GET', '/api/chats', { token: ann.token })
    t.is(list.status, 200)
    t.same(list.body.map((/** @type {any} */ c) => c.id), [first.body.id, group.body.id], 'ann\'s chats, most recent activity first')
    t.same((await api('GET', '/api/chats', { cookie: carol.token })).body.map((/** @type {any} */ c) => c.id), [implied.body.id, priv.body.id, group.body.id], 'carol\'s')
  } finally {
    await server.close()
  }
})

test('POST /api/chats: 404 for an unknown member, 403 over 30 members, 400 for bad input; nothing written', async t => {
  const server = await startServer()
  const { api } = server
  try {
    const ann = await signUp(api, 'ann')
    for (let i = 0; i < 30; i++) await server.store.createUser({ username: `u${i}`, password: 'pw' })
    const unknown = await api('POST', '/api/chats', { token: ann.token, body: { name: 'x', members: ['u1', 'nobody'] } })
    t.same(code(unknown), [404, 'NOT_FOUND'])
    t.match(unknown.body.error.message, /No user named "nobody"/)
    const full = await api('POST', '/api/chats', { token: ann.token, body: { name: 'x', members: Array.from({ length: 30 }, (_, i) => `u${i}`) } })
    t.same(code(full), [403, 'LEVELKIT_LIMIT'], '31 members: 403')
    const bad = [
      { name: 'x' },
      { members: [] },
      { name: '', members: [] },
      { name: '   ', members: [] },
      { name: 'x'.repeat(201), members: [] },
      { name: 'x'.repeat(101), members: [] },
      { name: 5, members: [] },
      { name: 'x', members: 'u1' },
      { name: 'x', members: [1] },
      { name: 'x', members: [''] },
      { name: 'x', members: [], private: 'yes' },
      { name: 'x', members: [], private: true },
      { name: 'x', members: [], private: false, password: 'pw' },
      { name: 'x', members: [], password: '' },
      { name: 'x', members: [], adminId: 2 },
      { name: 'x', members: Array.from({ length: 101 }, () => 'u1') }
    ]
    for (const body of bad) {
      const answer = await api('POST', '/api/chats', { token: ann.token, body })
      t.is(answer.status, 400, `${JSON.stringify(body).slice(0, 70)}: 400 ${answer.body?.error?.code}: ${answer.body?.error?.message}`)
    }
    t.same(await server.store.getChats(ann.id), [], 'no chat was created')
  } finally {
    await server.close()
  }
})

test('GET /api/chats/:id: members only (403), 404 for none, 400 for an id that is not a positive integer', async t => {
  const server = await startServer()
  const { api } = server
  try {
    const ann = await signUp(api, 'ann')
    const eve = await signUp(api, 'eve')
    const chat = (await api('POST', '/api/chats', { token: ann.token, body: { name: 'x', members: [] } })).body
    const got = await api('GET', `/api/chats/${chat.id}`, { token: ann.token })
    t.same([got.status, got.body], [200, chat])
    t.same(code(await api('GET', `/api/chats/${chat.id}`, { token: eve.token })), [403, 'FORBIDDEN'], 'not a member: 403')
    t.same(code(await api('GET', '/api/chats/99', { token: ann.token })), [404, 'NOT_FOUND'])
    for (const id of ['0', '-1', '1.5', '01', 'abc', '1e3', '0x10', '9007199254740993', '1%20', '%31']) {
      const answer = await api('GET', `/api/chats/${id}`, { token: ann.token })
      // '%31' is '1' once decoded: a valid id.
      if (id === '%31') t.is(answer.status, 200, 'a percent-encoded digit is that digit')
      else t.same([answer.status, answer.body?.error?.message], [400, 'params/id must be a positive integer'], `${id}: 400`)
    }
  } finally {
    await server.close()
  }
})

test('DELETE /api/chats/:id: the admin only (403), 204, then 404', async t => {
  const server = await startServer()
  const { api } = server
  try {
    const ann = await signUp(api, 'ann')
    const bob = await signUp(api, 'bob')
    const eve = await signUp(api, 'eve')
    const chat = (await api('POST', '/api/chats', { token: ann.token, body: { name: 'x', members: ['bob'] } })).body
    t.same(code(await api('DELETE', `/api/chats/${chat.id}`, { token: bob.token })), [403, 'FORBIDDEN'], 'a member who is not the admin: 403')
    t.same(code(await api('DELETE', `/api/chats/${chat.id}`, { token: eve.token })), [403, 'FORBIDDEN'], 'a non-member: 403')
    t.ok(await server.store.getChat(chat.id), 'still there')
    const deleted = await api('DELETE', `/api/chats/${chat.id}`, { token: ann.token })
    t.same([deleted.status, deleted.text], [204, ''])
    t.is(await server.store.getChat(chat.id), null, 'deleted')
    t.same(code(await api('DELETE', `/api/chats/${chat.id}`, { token: ann.token })), [404, 'NOT_FOUND'], 'again: 404')
    t.same(code(await api('GET', `/api/chats/${chat.id}`, { token: bob.token })), [404, 'NOT_FOUND'])
    t.same((await api('GET', '/api/chats', { token: bob.token })).body, [], 'gone from the members\' lists')
    t.is((await api('DELETE', '/api/chats/x', { token: ann.token })).status, 400)
  } finally {
    await server.close()
  }
})

test('POST /api/chats/:id/members: join, add others as a member, private chats need the password, full chats refuse', async t => {
  const server = await startServer({ storeOptions: { maxMembers: 3 } })
  const { api } = server
  try {
    const ann = await signUp(api, 'ann')
    const bob = await signUp(api, 'bob')
    const carol = await signUp(api, 'carol')
    const dan = await signUp(api, 'dan')
    const open = (await api('POST', '/api/chats', { token: ann.token, body: { name: 'open', members: [] } })).body
    const closed = (await api('POST', '/api/chats', { token: ann.token, body: { name: 'closed', members: [], password: 'sesame' } })).body

    t.same(code(await api('POST', `/api/chats/${open.id}/members`, { token: carol.token, body: { username: 'bob' } })), [403, 'FORBIDDEN'], 'a non-member cannot add others')
    const joined = await api('POST', `/api/chats/${open.id}/members`, { token: bob.token, body: { username: 'bob' } })
    t.same([joined.status, joined.text], [204, ''], 'bob joins the open chat')
    t.ok(await server.store.checkChatMember(open.id, bob.id))
    t.is((await api('POST', `/api/chats/${open.id}/members`, { token: bob.token, body: { username: 'bob' } })).status, 204, 'joining again: 204')
    t.is((await api('POST', `/api/chats/${open.id}/members`, { token: bob.token, body: { username: 'carol' } })).status, 204, 'a member adds carol')
    t.same(code(await api('POST', `/api/chats/${open.id}/members`, { token: dan.token, body: { username: 'dan' } })), [403, 'LEVELKIT_LIMIT'], 'full (3 members): 403')

    t.same(code(await api('POST', `/api/chats/${closed.id}/members`, { token: bob.token, body: { username: 'bob' } })), [403, 'LEVELKIT_FORBIDDEN'], 'private, no password: 403')
    t.same(code(await api('POST', `/api/chats/${closed.id}/members`, { token: bob.token, body: { username: 'bob', password: 'wrong' } })), [403, 'LEVELKIT_FORBIDDEN'], 'wrong password: 403')
    t.notOk(await server.store.checkChatMember(closed.id, bob.id))
    t.is((await api('POST', `/api/chats/${closed.id}/members`, { token: bob.token, body: { username: 'bob', password: 'sesame' } })).status, 204, 'the password: 204')
    t.ok(await server.store.checkChatMember(closed.id, bob.id))
    t.same(code(await api('POST', `/api/chats/${closed.id}/members`, { token: ann.token, body: { username: 'carol' } })), [403, 'LEVELKIT_FORBIDDEN'], 'even the admin adds others with the password only')

    t.same(code(await api('POST', '/api/chats/99/members', { token: bob.token, body: { username: 'bob' } })), [404, 'NOT_FOUND'], 'no such chat: 404')
    t.same(code(await api('POST', `/api/chats/${open.id}/members`, { token: ann.token, body: { username: 'nobody' } })), [404, 'NOT_FOUND'], 'no such user: 404')
    for (const body of [{}, { username: 1 }, { username: 'bob', password: 2 }, { username: 'bob', role: 'admin' }]) {
      t.is((await api('POST', `/api/chats/${open.id}/members`, { token: bob.token, body })).status, 400, `${JSON.stringify(body)}: 400`)
    }
    t.is((await api('POST', '/api/chats/0/members', { token: bob.token, body: { username: 'bob' } })).status, 400, 'chat id 0: 400')
  } finally {
    await server.close()
  }
})

test('DELETE /api/chats/:id/members/:userId: leave, or the admin removes; 403 for others, 404 for a non-member', async t => {
  const server = await startServer()
  const { api } = server
  try {
    const ann = await signUp(api, 'ann')
    const bob = await signUp(api, 'bob')
    const carol = await signUp(api, 'carol')
    const chat = (await api('POST', '/api/chats', { token: ann.token, body: { name: 'x', members: ['bob', 'carol'] } })).body
    t.same(code(await api('DELETE', `/api/chats/${chat.id}/members/${carol.id}`, { token: bob.token })), [403, 'FORBIDDEN'], 'a member cannot remove another')
    const left = await api('DELETE', `/api/chats/${chat.id}/members/${bob.id}`, { token: bob.token })
    t.same([left.status, left.text], [204, ''], 'bob leaves')
    t.notOk(await server.store.checkChatMember(chat.id, bob.id))
    t.same(code(await api('DELETE', `/api/chats/${chat.id}/members/${bob.id}`, { token: bob.token })), [404, 'NOT_FOUND'], 'leaving again: 404')
    t.is((await api('DELETE', `/api/chats/${chat.id}/members/${carol.id}`, { token: ann.token })).status, 204, 'the admin removes carol')
    t.same(code(await api('DELETE', `/api/chats/${chat.id}/members/99`, { token: ann.token })), [404, 'NOT_FOUND'], 'no such member: 404')
    t.same(code(await api('DELETE', `/api/chats/98/members/${ann.id}`, { token: ann.token })), [404, 'NOT_FOUND'], 'no such chat: 404')
    t.is((await api('DELETE', `/api/chats/${chat.id}/members/x`, { token: ann.token })).status, 400)
    t.is((await api('DELETE', `/api/chats/${chat.id}/members/${ann.id}`, { token: ann.token })).status, 204, 'the admin leaves too')
    t.same((await server.store.getChat(chat.id))?.members, [], 'no one left')
  } finally {
    await server.close()
  }
})

test('GET /api/direct-chats/:userId: the chat of exactly the two, 404 if none', async t => {
  const server = await startServer()
  const { api } = server
  try {
    const ann = await signUp(api, 'ann')
    const bob = await signUp(api, 'bob')
    const carol = await signUp(api, 'carol')
    t.same(code(await api('GET', `/api/direct-chats/${bob.id}`, { token: ann.token })), [404, 'NOT_FOUND'], 'none yet')
    await api('POST', '/api/chats', { token: ann.token, body: { name: 'three', members: ['bob', 'carol'] } })
    t.is((await api('GET', `/api/direct-chats/${bob.id}`, { token: ann.token })).status, 404, 'a chat of three is not direct')
    const direct = (await api('POST', '/api/chats', { token: bob.token, body: { name: 'two', members: ['ann'] } })).body
    const found = await api('GET', `/api/direct-chats/${bob.id}`, { token: ann.token })
    t.same([found.status, found.body], [200, { chatId: direct.id }])
    t.same((await api('GET', `/api/direct-chats/${ann.id}`, { token: bob.token })).body, { chatId: direct.id }, 'both ways')
    t.is((await api('GET', `/api/direct-chats/${ann.id}`, { token: ann.token })).status, 404, 'with oneself: 404')
    t.is((await api('GET', `/api/direct-chats/${carol.id}`, { token: ann.token })).status, 404)
    t.is((await api('GET', '/api/direct-chats/99', { token: ann.token })).status, 404, 'an unknown user: 404')
    t.is((await api('GET', '/api/direct-chats/-2', { token: ann.token })).status, 400)
  } finally {
    await server.close()
  }
})

test('the chat page is served at / from staticDir; unknown routes answer 404 in JSON', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-chat-static-'))
  writeFileSync(join(dir, 'index.html'), '<!doctype html><title>chat</title>')
  const server = await startServer({ staticDir: dir })
  const { api } = server
  try {
    const page = await api('GET', '/')
    t.same([page.status, page.text], [200, '<!doctype html><title>chat</title>'])
    t.match(page.headers.get('content-type') ?? '', /^text\/html/)
    t.is(page.headers.get('x-content-type-options'), 'nosniff')
    for (const [method, path] of [['GET', '/nothing.js'], ['GET', '/api/nothing'], ['POST', '/api/me'], ['PUT', '/api/chats'], ['GET', '/../../etc/passwd']]) {
      const answer = await api(method, path)
      t.same(code(answer), [404, 'NOT_FOUND'], `${method} ${path}: 404`)
    }
    t.is((await api('GET', '/api/me')).headers.get('cache-control'), 'no-store', 'API answers are not cached')
  } finally {
    await server.close()
    rmSync(dir, { recursive: true, force: true })
  }
})
