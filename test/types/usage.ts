// Compiled by `tsc` in `npm test`: the declarations must describe real usage.
import { open, codes, tupleEncoding, encodeTuple, decodeTuple, endIdleConnections, postgresTables } from '../../index.js'
import type { Collection, CheckReport, IdOf, Page, WriteScope, Transaction, LockMode, ReadCachePolicy, MigrateResult, MigrationProgress } from '../../index.js'

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
  const docs = db.collection<{ key: string, n: number }, string>('docs', { id: d => d.key, versioned: true })
  const version: number | undefined = await docs.version('a')
  if (version !== undefined) await docs.update('a', { n: 1 }, { ifVersion: version })
  await docs.put('a', { key: 'a', n: 2 }, { ifVersion: 3 })
  await docs.del('a', { ifVersion: 4 })
  // @ts-expect-error a version is a number
  await docs.del('a', { ifVersion: '4' })
  // @ts-expect-error versioned is a boolean
  db.collection('flags', { versioned: 'yes' })
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
  await db.write(async w => { await users.in(w).update(id, { age: 5 }) }, { sync: true })
  const moved: boolean = await db.transaction(async (tx: Transaction, attempt: number) => {
    const a = await users.in(tx).get(id, { lock: 'soft' })
    const b = await users.in(tx).getBy('username', 'bob', { lock: 'hard' })
    const adults = await users.in(tx).query({ index: 'byAge', gte: [18], lock: 'shared' }).all()
    if (a === undefined || b === undefined || attempt > 3) return false
    await users.in(tx).update(b.id, { age: (a.age ?? 0) + adults.length })
    return true
  }, { maxRetries: 5, timeout: 1000, lockTimeout: 100, signal: AbortSignal.timeout(2000), sync: true, maxOps: 100, maxBytes: 1 << 20 })
  const mode: LockMode = 'shared'
  // @ts-expect-error lock modes are 'shared', 'soft' and 'hard'
  await db.transaction(async tx => users.in(tx).get(id, { lock: 'exclusive' }))
  // @ts-expect-error maxRetries is a number
  await db.transaction(async () => 1, { maxRetries: 'ten' })
  await open({ backend: 'memory', durability: 'sync' })
  const report: CheckReport = await db.check({ repair: true })
  const tagged = db.collection<{ tag: string }>('tagged', { indexes: { byTag: { key: r => r.tag, unique: true, version: 2 } } })
  await tagged.getBy('byTag', 'x', { wait: false })
  const building: number = await tagged.count({ index: 'byTag', wait: false })
  await tagged.query({ index: 'byTag', wait: true }).all()
  await db.buildIndexes()
  await open({ backend: 'memory', readCache: { policy: 'arc', size: 100 } })
  await open({ backend: 'memory', readCache: 500 })
  // @ts-expect-error policies are 'lru', '2q', 'arc' and 'tinylfu'
  await open({ backend: 'memory', readCache: { policy: 'fifo' } })
  await open({ backend: 'indexeddb', location: 'chat', relationIndexes: 'lists' })
  await open({ backend: 'indexeddb', location: 'chat', relationIndexes: 'entries' })
  // @ts-expect-error relationIndexes is a boolean, 'entries' or 'lists'
  await open({ backend: 'indexeddb', location: 'chat', relationIndexes: 'mirror' })
  const hits: number = db.stats().users.hits
  const policy: ReadCachePolicy = db.readCachePolicy
  const states: string = (await db.schemaStatus()).tagged.byTag.state
  const dropped: Array<{ collection: string, index: string }> = await db.dropUndeclared()
  // @ts-expect-error wait is a boolean
  await tagged.count({ index: 'byTag', wait: 'no' })
  const migrated: MigrateResult = await db.migrate([{
    version: 1,
    async up (m) {
      const counts = await m.collection(tagged).modify(r => r.tag === '' ? m.remove : { ...r, tag: r.tag.toLowerCase() }, { batchSize: 100 })
      const done: number = counts.done
      await m.write(w => tagged.in(w).insert({ tag: `v${m.version}-${done}` }))
    }
  }], { onProgress: (p: MigrationProgress) => console.log(p.step, p.done) })
  const schemaVersion: number = await db.schemaVersion()
  // @ts-expect-error a migration's version is a number
  await db.migrate([{ version: '1', up () {} }])
  console.log(migrated.ran, schemaVersion)
  console.log(building, states, dropped, codes.INDEX_BUILDING)
  const code: string = codes.UNIQUE
  const key: Uint8Array = encodeTuple([1, 'a', [true, null]])
  const back = decodeTuple(key)
  console.log(name, texts, report.ok, code, back, tupleEncoding.name, moved, mode)
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
  const memberIds: number[] = await chat.members.to(chatId).all()
  const stored = await chat.users.get(ann)
  const hash: string | undefined = stored?.passwordHash
  const session = await chat.sessions.get('session-id')
  const expiry: number | undefined = session?.expiry
  const storedChat = await chat.chats.getBy('none', 1)
  const admin: number | undefined = storedChat?.adminId
  // @ts-expect-error chat ids are numbers
  await chat.messages.lastSeq('general')
  console.log(memberIds, hash, expiry, admin)
  console.log(name, page?.length, (await chat.check()).ok, codes.FORBIDDEN, codes.LIMIT)
  const adopted: InstanceType<typeof ChatStore> = await ChatStore.open(await open({ backend: 'memory' }), { adopt: true, passwordCost: { pbkdf2Iterations: 1000 } })
  const foreign: 'LEVELKIT_FOREIGN_DATA' = codes.FOREIGN_DATA
  console.log(await adopted.passwordCosts.get('scrypt$1024$8$1'), foreign)
}

// Ids are typed by the collection: numbers for sequence collections, the id
// function's return type otherwise; relations, children and queries take the
// id types of the collections they were declared with.
interface Author { name: string }
interface Book { title: string, authorId: number, year?: number }
interface Session { sessionId: string, userId: number }
interface Note { text: string }

export async function idUsage (): Promise<void> {
  const db = await open({ backend: 'memory' })
  const authors = db.collection<Author>('authors')
  const books = db.collection<Book>('books', {
    indexes: { byAuthor: { key: b => [b.authorId, b.year ?? 0] } }
  })
  const sessions = db.collection('sessions', { id: (s: Session) => s.sessionId })
  const written = db.relation('written', { from: authors, to: books })
  const reads = db.relation('reads', { from: sessions, to: books, lists: ['from'] })
  const chapters = db.children<{ title: string }>('chapters', { parent: books })
  const notes = db.children<Note, string>('notes', { parent: sessions })
  const tags = db.children('tags', { parent: sessions })
  await tags.append('abc', 'inferred: the parent id type comes from the parent')

  const tolkien = await authors.insert({ name: 'Tolkien' })
  const hobbit: number = await books.insert({ title: 'The Hobbit', authorId: tolkien, year: 1937 })
  const book = await books.get(hobbit)
  if (book !== undefined) {
    const id: number = book.id
    const authorId: number = book.authorId
    console.log(id, authorId, book.title)
  }
  const updated = await books.update(hobbit, { year: 1938 })
  const sameId: number = updated.id
  const many: Array<(Book & { id: number }) | undefined> = await books.getMany([hobbit, 2])
  // @ts-expect-error a sequence collection's ids are numbers
  await books.get('1')
  // @ts-expect-error not a string id either
  await books.insert({ title: 'Silmarillion', authorId: 'tolkien' })
  // @ts-expect-error a stored record of a sequence collection has its id: no patch may change it
  await books.update(hobbit, { id: 2 })

  const sessionId: string = await sessions.insert({ sessionId: 'abc', userId: 1 })
  const session: Session | undefined = await sessions.get(sessionId)
  // @ts-expect-error this collection's ids are strings
  await sessions.get(1)

  const authorId: IdOf<typeof authors> = tolkien
  await written.add(authorId, hobbit)
  await written.addMany(tolkien, [hobbit])
  await written.addMany(tolkien, (async function * () { yield hobbit })(), { batchSize: 10 })
  const bookIds: number[] = await written.to(tolkien, { gt: 0 }).all()
  const authorIds: number[] = await written.from(hobbit).all()
  // @ts-expect-error the `to` side's ids are numbers
  await written.add(tolkien, 'The Hobbit')
  // @ts-expect-error the bounds of to() are ids of the `to` side
  written.to(tolkien, { gt: 'a' })
  await reads.add(sessionId, hobbit)
  const readers: string[] = await reads.from(hobbit).all()
  // records() of a relation's query: the other side's records, typed as its collection reads them
  const writtenBooks: Array<Book & { id: number }> = await written.to(tolkien).records()
  const byAuthors: string[] = (await written.from(hobbit, { limit: 2 }).records()).map(a => a.name)
  const readerSessions: Session[] = await reads.from(hobbit).records()
  // @ts-expect-error from() of `written` reads authors, not books
  const notBooks: Book[] = await written.from(hobbit).records()
  // @ts-expect-error the `from` side's ids are strings
  await reads.has(1, hobbit)

  const seq: number = await chapters.append(hobbit, { title: 'An Unexpected Party' })
  const appended: number = await chapters.appendMany(hobbit, [{ title: 'A' }, { title: 'B' }], { batchSize: 100 })
  // @ts-expect-error the values are the children's type
  await chapters.appendMany(hobbit, [{ name: 'A' }])
  async function * bookStream (): AsyncGenerator<Book> { yield { title: 'Unfinished Tales', authorId: tolkien, year: 1980 } }
  const loaded: number = await books.insertMany(bookStream(), { batchSize: 500 })
  await books.insertMany([{ title: 'Beren', authorId: tolkien, year: 2017 }])
  await sessions.putMany(new Map([['abc', { sessionId: 'abc', userId: 2 }]]))
  await sessions.putMany([['abd', { sessionId: 'abd', userId: 3 }]], { batchSize: 10 })
  // @ts-expect-error an entry's id is the collection's id type
  await sessions.putMany([[1, { sessionId: 'x', userId: 1 }]])
  // @ts-expect-error a record must have the collection's type
  await books.insertMany([{ name: 'x' }])
  // @ts-expect-error batchSize is a number
  await books.insertMany([], { batchSize: '10' })
  try {
    await books.insertMany([])
  } catch (err) {
    if (err instanceof Error && 'written' in err) console.log(appended, loaded, err.written)
  }
  // @ts-expect-error the parent's ids are numbers
  await chapters.append('The Hobbit', { title: 'Roast Mutton' })
  await notes.append(sessionId, { text: 'remember the ring' })
  // @ts-expect-error the parent's ids are strings
  await notes.append(1, { text: 'x' })

  for await (const key of books.query().keys()) console.log(key + 1)
  for await (const [id, b] of books.query({ index: 'byAuthor', prefix: [tolkien] }).entries()) console.log(id + 1, b.id, b.title)
  const firstPage: Page<Book & { id: number }> = await books.query({ index: 'byAuthor', gte: [tolkien, 1900], limit: 10 }).page()
  // @ts-expect-error without an index, bounds are ids: numbers here
  books.query({ gt: 'a' })
  for await (const key of sessions.query({ gte: 'a' }).keys()) console.log(key.toUpperCase())

  const made = await db.write(async (w) => {
    const id: number = await books.in(w).insert({ title: 'Farmer Giles', authorId: tolkien })
    await written.in(w).add(tolkien, id)
    await chapters.in(w).append(id, { title: 'One' })
    return id
  })
  console.log(many, sameId, session, bookIds, authorIds, readers, writtenBooks, byAuthors, readerSessions, notBooks, seq, firstPage.cursor, made + 1)
  await db.close()
}

// Kept PostgreSQL connections ended now (after a close(), before a DROP DATABASE).
const ended: Promise<void> = endIdleConnections()
// @ts-expect-error it takes no arguments
endIdleConnections('now')
void ended
const tables: string[] = postgresTables('chat')
void tables
