// Restart on LevelDB: close the server and its database, open them again
// on the same directory: users, sessions, chats and messages are all there.
import test from 'tape'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startServer, signUp } from './util.js'

test('a restart on LevelDB keeps users, sessions, chats, members and messages', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-chat-restart-'))
  const location = join(dir, 'db')
  try {
    const first = await startServer({ location })
    const ann = await signUp(first.api, 'ann')
    const bob = await signUp(first.api, 'bob')
    const chat = (await first.api('POST', '/api/chats', { token: ann.token, body: { name: 'kept', members: ['bob'], password: 'sesame' } })).body
    const sent = []
    for (let i = 0; i < 20; i++) sent.push((await first.api('POST', `/api/chats/${chat.id}/messages`, { token: i % 2 ? bob.token : ann.token, body: { text: `m${i}`, ...(i === 8 ? { to: [bob.id] } : {}) } })).body)
    await first.close()

    const second = await startServer({ location })
    try {
      const { api } = second
      t.same((await api('GET', '/api/me', { token: ann.token })).body, { id: ann.id, username: 'ann' }, 'the session still works')
      t.is((await api('POST', '/api/sessions', { body: { username: 'bob', password: bob.password } })).status, 201, 'the password still works')
      t.same((await api('GET', `/api/chats/${chat.id}`, { token: bob.token })).body, { ...chat, lastActivity: sent[19].timestamp }, 'the chat')
      t.same((await api('GET', `/api/chats/${chat.id}/messages`, { token: bob.token })).body, sent, 'every message, the whisper too')
      t.is((await api('GET', `/api/chats/${chat.id}/messages`, { token: ann.token })).body.length, 20)
      const next = await api('POST', `/api/chats/${chat.id}/messages`, { token: ann.token, body: { text: 'after' } })
      t.is(next.body.id, 21, 'ids continue')
      t.is((await api('POST', '/api/users', { body: { username: 'ann', password: 'x' } })).status, 409, 'usernames stay taken')
      t.same((await second.store.check()).problems, [], 'check() clean')
    } finally {
      await second.close()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
