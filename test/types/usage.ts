// Compiled by `tsc` in `npm test`: the declarations must describe real usage.
import { open, codes, tupleEncoding, encodeTuple, decodeTuple } from '../../index.js'
import type { Collection, CheckReport, Page, WriteScope } from '../../index.js'

interface User { username: string, age?: number, tags?: string[] }

export async function usage (): Promise<void> {
  const db = await open({ backend: 'leveldb', location: './data', cacheSize: 8 << 20 })
  const users: Collection<User> = db.collection<User>('users', {
    indexes: {
      username: { unique: true, key: u => u.username },
      byAge: { key: u => u.age === undefined ? undefined : [u.age] },
      tags: { key: u => u.tags, multi: true }
    },
    validate (u) { if (u.username === '') throw new Error('empty') }
  })
  const chats = db.collection('chats')
  const members = db.relation('members', { from: chats, to: users, onDelete: { from: 'cascade', to: 'restrict' } })
  const follows = db.relation('follows', { from: users, to: users, lists: ['from', 'to'] })
  await follows.from(1).all()
  // @ts-expect-error a direction is 'from' or 'to'
  db.relation('likes', { from: users, to: chats, lists: ['sideways'] })
  const messages = db.children<{ text: string }>('messages', { parent: chats })
  db.children('notes', { parent: chats, blockSize: 16 })
  // @ts-expect-error blockSize is a number
  db.children('notes2', { parent: chats, blockSize: '16' })
  const id = await users.insert({ username: 'ann', age: 3 })
  const user = await users.get(id)
  const name: string | undefined = user?.username
  await users.update(id, { age: 4 })
  await users.update(id, old => ({ ...old, age: (old.age ?? 0) + 1 }))
  const page: Page<User> = await users.query({ index: 'byAge', gte: [1], limit: 2 }).page()
  await users.query({ cursor: page.cursor }).all()
  for await (const [key, u] of users.query().entries()) console.log(key, u.username)
  const seq: number = await messages.append(1, { text: 'hi' })
  const texts: string[] = (await messages.range(1, { lt: seq, limit: 5, reverse: true }).all()).map(m => m.text)
  const known: Array<{ text: string } | undefined> = await messages.getMany(1, [seq, seq - 1])
  await db.write(async (w: WriteScope) => {
    await members.in(w).add(1, id)
    await messages.in(w).append(1, { text: 'x' })
  })
  const report: CheckReport = await db.check({ repair: true })
  const code: string = codes.UNIQUE
  const key: Uint8Array = encodeTuple([1, 'a', [true, null]])
  const back = decodeTuple(key)
  console.log(name, texts, report.ok, code, back, tupleEncoding.name)
  await db.close()
}

export async function chatUsage (): Promise<void> {
  const { ChatStore } = await import('../../chat.js')
  const db = await open({ backend: 'memory' })
  const chat = new ChatStore(db, { maxMembers: 10, passwordCost: { scryptN: 1024 } })
  const ann = await chat.createUser({ username: 'ann', password: 'pw' })
  const user = await chat.getUser('ann')
  const name: string | undefined = user?.username
  const chatId = await chat.createChat({ name: 'c', adminId: ann, userIds: [] })
  const id: number = await chat.addChatMessage({ chatId, senderId: ann, text: 'hi' })
  const page = await chat.getChatMessages(chatId, { to: id + 1, n: 10, viewerId: ann })
  const controller = new AbortController()
  for await (const message of chat.watch(chatId, { after: id, signal: controller.signal })) console.log(message.text)
  for await (const [seq, message] of chat.messages.watch(chatId)) console.log(seq, message.id)
  for await (const [key, count] of chat.pairs.query().entries()) console.log(key, count)
  await chat.messages.settled()
  console.log(name, page?.length, (await chat.check()).ok, codes.FORBIDDEN, codes.LIMIT)
}
