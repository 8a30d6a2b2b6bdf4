// Reference solution: the schema is declared once per database; every
// operation is one levelkit call (or one db.write() scope), so indexes,
// relation edges and message sequences are kept right by levelkit itself.
import { open } from 'levelkit'

const schemas = new WeakMap()

export function setup (db) {
  // Declaring a model twice throws: cache the (promise of the) schema per db.
  if (!schemas.has(db)) {
    schemas.set(db, (async () => {
      const kit = await open({ db })
      const users = kit.collection('users', {
        indexes: { username: { unique: true, key: user => user.username } }
      })
      const chats = kit.collection('chats')
      const members = kit.relation('members', { from: chats, to: users })
      const messages = kit.children('messages', { parent: chats })
      return { kit, users, chats, members, messages }
    })())
  }
  return schemas.get(db)
}

export async function createUser (db, username) {
  const { users } = await setup(db)
  // No "is it taken?" read first: the unique index refuses a taken name
  // (LEVELKIT_UNIQUE), even when two calls race.
  return users.insert({ username })
}

export async function createChat (db, name, memberIds) {
  const { kit, chats, members } = await setup(db)
  // One atomic batch: the chat and all its members, or (a member that does
  // not exist: LEVELKIT_NOT_FOUND) nothing at all.
  return kit.write(async (w) => {
    const id = await chats.in(w).insert({ name })
    for (const userId of memberIds) await members.in(w).add(id, userId)
    return id
  })
}

export async function sendMessage (db, chatId, userId, text) {
  const { kit, members, messages } = await setup(db)
  // The membership check and the append in one scope: nothing can remove
  // the member in between.
  return kit.write(async (w) => {
    if (!await members.in(w).has(chatId, userId)) {
      throw Object.assign(new Error(`user ${userId} is not a member of chat ${chatId}`), { code: 'NOT_MEMBER' })
    }
    return messages.in(w).append(chatId, { from: userId, text })
  })
}

export async function chatsOf (db, userId) {
  const { members } = await setup(db)
  return members.from(userId).all()
}

export async function recent (db, chatId, n) {
  const { messages } = await setup(db)
  const newestFirst = await messages.range(chatId, { reverse: true, limit: n }).all()
  return newestFirst.reverse()
}
