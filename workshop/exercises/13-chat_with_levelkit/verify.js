import { InstrumentedLevel, attempt, dump } from '../../lib/backends.js'
import { equal, all } from '../../lib/checks.js'

export const functions = ['setup', 'createUser', 'createChat', 'sendMessage', 'chatsOf', 'recent']

export function scenario (random) {
  const names = random.words(random.int(5, 7), 3, 8)
  const n = names.length
  const chats = Array.from({ length: 3 }, (_, i) => ({
    name: random.words(2).join(' '),
    // user numbers (1-based creation order), at least two per chat
    members: random.shuffle(Array.from({ length: n }, (_, k) => k + 1)).slice(0, random.int(2, n - 1)).sort((a, b) => a - b)
  }))
  const sends = Array.from({ length: 16 }, () => {
    const chat = random.int(1, 3)
    // mostly a member; sometimes anyone (often not a member)
    const user = random.next() < 0.75 ? random.pick(chats[chat - 1].members) : random.int(1, n)
    return { chat, user, text: random.words(random.int(1, 5)).join(' ') }
  })
  return {
    names,
    duplicate: random.pick(names),
    chats,
    sends,
    recent: [[1, 3], [2, 100], [3, 1]],
    race: { name: random.word(), others: random.words(5).map(w => w + '2') }
  }
}

const short = (outcome) => outcome.threw ? { threw: outcome.threw.code || outcome.threw.message } : { returned: outcome.value }

async function fresh () {
  const db = new InstrumentedLevel()
  await db.open()
  return db
}

// Namespaces: the first !name! of each root key (the rest may be binary).
async function namespaces (db) {
  const names = new Set()
  for await (const key of db.keys({ keyEncoding: 'view' })) names.add(Buffer.from(key).toString('latin1').split('!')[1])
  return [...names].sort()
}

export async function exec ({ mod, scenario }) {
  // 1. Users, chats, messages; the ids come from the learner's own calls.
  const db = await fresh()
  const users = []
  for (const name of scenario.names) users.push({ call: `createUser(${name})`, ...short(await attempt(() => mod.createUser(db, name))) })
  users.push({ call: `createUser(${scenario.duplicate}) again`, ...short(await attempt(() => mod.createUser(db, scenario.duplicate))) })
  const userId = (k) => users[k - 1].returned

  const chats = []
  for (const chat of scenario.chats) {
    const ids = chat.members.map(userId)
    chats.push({ call: `createChat(${chat.name}, users ${chat.members})`, ...short(await attempt(() => mod.createChat(db, chat.name, ids))) })
  }
  const chatId = (k) => chats[k - 1].returned
  for (let k = 1; k <= scenario.names.length; k++) chats.push({ call: `chatsOf(user ${k})`, ...short(await attempt(() => mod.chatsOf(db, userId(k)))) })

  const messages = []
  for (const s of scenario.sends) {
    const outcome = await attempt(() => mod.sendMessage(db, chatId(s.chat), userId(s.user), s.text))
    // Any error will do for a non-member: compare "rejected", not the code.
    messages.push({ call: `sendMessage(chat ${s.chat}, user ${s.user})`, ...(outcome.threw ? { rejected: true } : { returned: outcome.value }) })
  }
  for (const [chat, n] of scenario.recent) messages.push({ call: `recent(chat ${chat}, ${n})`, ...short(await attempt(() => mod.recent(db, chatId(chat), n))) })

  const schema = await attempt(() => mod.setup(db))
  const checked = schema.threw ? { threw: schema.threw } : short(await attempt(() => schema.value.kit.check()))
  const state = { check: checked, namespaces: await namespaces(db) }

  // 2. A chat with a member that does not exist.
  const f = await fresh()
  const a = await attempt(() => mod.createUser(f, scenario.names[0]))
  await attempt(() => mod.createChat(f, 'first', [a.value]))
  const before = await dump(f)
  const failed = await attempt(() => mod.createChat(f, 'second', [a.value, 999]))
  const unchanged = equal(await dump(f), before).ok
  const retried = await attempt(() => mod.createChat(f, 'second', [a.value]))
  const fault = { rejected: !!failed.threw, unchanged, thenWorks: !retried.threw }

  // 3. Ten concurrent createUser calls with one name (and five others).
  const c = await fresh()
  const { name, others } = scenario.race
  const raced = await Promise.all([...Array.from({ length: 10 }, () => name), ...others].map(n => attempt(() => mod.createUser(c, n))))
  const race = {
    sameName: { resolved: raced.slice(0, 10).filter(o => !o.threw).length, rejectedWith: [...new Set(raced.slice(0, 10).filter(o => o.threw).map(o => o.threw.code))] },
    otherNames: { resolved: raced.slice(10).filter(o => !o.threw).length }
  }
  return { users, chats, messages, state, fault, race }
}

export const checks = [
  {
    id: 'users',
    kind: 'result',
    title: 'createUser returns ids; a taken username is refused by the unique index',
    check: ({ learner, reference }) => equal(learner.users, reference.users, 'createUser(db, username) resolves with the new id (1, 2, ...); a taken name must reject with the unique index\'s own LEVELKIT_UNIQUE error (declare the index unique and just insert)')
  },
  {
    id: 'chats',
    kind: 'result',
    title: 'createChat returns ids, chatsOf lists a user\'s chats',
    check: ({ learner, reference }) => equal(learner.chats, reference.chats, 'createChat resolves with the chat id; chatsOf(db, userId) with the ids of the chats the user is a member of, in id order (the relation read from the user\'s side)')
  },
  {
    id: 'messages',
    kind: 'result',
    title: 'members can send, others cannot; recent returns the last n, oldest first',
    check: ({ learner, reference }) => equal(learner.messages, reference.messages, 'sendMessage resolves with the message\'s seq in its chat (1, 2, ...) and rejects for a non-member; recent(db, chatId, n) resolves with the last n messages { from, text }, oldest first')
  },
  {
    id: 'check-clean',
    kind: 'state',
    title: 'db.check() finds nothing wrong, and the namespaces are the expected ones',
    check: ({ learner, reference }) => equal(learner.state, reference.state, 'levelkit\'s consistency check must report no problem (write only through levelkit\'s models: not behind its back), and the database must hold the namespaces of the schema asked for')
  },
  {
    id: 'atomic-chat',
    kind: 'fault',
    title: 'createChat with a missing member writes nothing',
    check: ({ learner }) => all(
      equal(learner.fault.rejected, true, 'createChat with a member that does not exist must reject (LEVELKIT_NOT_FOUND)'),
      equal(learner.fault.unchanged, true, 'the failed createChat left something behind (a chat, or some of its members): insert the chat and add its members inside one db.write()'),
      equal(learner.fault.thenWorks, true, 'after the failed createChat, one with existing members should work')
    )
  },
  {
    id: 'one-winner',
    kind: 'behaviour',
    title: 'ten concurrent createUser calls with one name: exactly one wins',
    check: ({ learner }) => equal(learner.race, { sameName: { resolved: 1, rejectedWith: ['LEVELKIT_UNIQUE'] }, otherNames: { resolved: 5 } }, 'exactly one of the concurrent calls may create the user, the others must reject with LEVELKIT_UNIQUE: a "check first, then insert" leaves a window in which all of them see the name free')
  }
]
