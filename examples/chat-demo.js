// The main job: the chat reference model on an embedded on-disk LevelDB.
//
//   npm run demo                           LevelDB in ./data/chat-demo
//   node examples/chat-demo.js --memory    in memory
//   node examples/chat-demo.js --location ./elsewhere
//
// Run it again on the same data: users and chats are found, not re-created,
// and the new messages continue each chat's ids. Data of another program
// (the quick start's users, chats, members and messages) is refused.
//
// Then check it from the command line: npx levelkit check ./data/chat-demo --chat
import { parseArgs } from 'node:util'
import { open } from '../index.js'
import { ChatStore } from '../chat.js'

const { values: args } = parseArgs({
  options: {
    memory: { type: 'boolean', default: false },
    location: { type: 'string', default: './data/chat-demo' }
  }
})

const db = await open(args.memory ? { backend: 'memory' } : { backend: 'leveldb', location: args.location })
const say = (/** @type {string} */ line = '') => console.log(line)
/** @type {ChatStore} */
let chat
try {
  chat = await ChatStore.open(db)
} catch (err) {
  await db.close()
  if (/** @type {any} */ (err).code !== 'LEVELKIT_FOREIGN_DATA') throw err
  console.error(`chat demo: not using ${args.location} (${/** @type {any} */ (err).code}): ${/** @type {Error} */ (err).message}`)
  process.exit(2)
}

say(`levelkit chat demo on ${args.memory ? 'memory' : `LevelDB at ${args.location}`}`)
say()

// Data an earlier version of this demo wrote may keep the members relation
// in its former layout (edges instead of lists), or messages one key each
// instead of in blocks: ChatStore.open() moved them (its migrations run once
// per database, db.migrate()).

// Users: created on the first run, found (and their password checked) after.
const people = [['alice', 'wonderland'], ['bob', 'builder'], ['carol', 'christmas']]
/** @type {Record<string, number>} */
const ids = {}
for (const [username, password] of people) {
  const existing = await chat.verifyPassword(username, password)
  if (existing) {
    ids[username] = existing.id
    say(`found user   ${username.padEnd(6)} id ${existing.id} (password ok)`)
  } else {
    ids[username] = await chat.createUser({ username, password })
    say(`created user ${username.padEnd(6)} id ${ids[username]}`)
  }
}
try {
  await chat.createUser({ username: 'alice', password: 'again' })
} catch (err) {
  say(`a second "alice" is refused: ${/** @type {any} */ (err).code}`)
}

// A session for alice, valid for an hour; an expired one is purged.
const session = await chat.setUserSession({ userId: ids.alice, expiry: Date.now() + 3600_000 })
await chat.setUserSession({ userId: ids.bob, expiry: Date.now() - 1 })
say(`session ${session.slice(0, 8)}... belongs to user ${await chat.getUserFromSession(session)}; purged ${await chat.purgeExpiredSessions()} expired session(s)`)
say()

// Chats: a direct chat alice-bob (existsChat is a point read) and a group.
let direct = (await chat.getChats(ids.alice)).find(c => c.members.length === 2 && c.members.includes(ids.bob))
if (!(await chat.existsChat(ids.alice, ids.bob)) || !direct) {
  const id = await chat.createChat({ name: 'alice & bob', adminId: ids.alice, userIds: [ids.bob] })
  direct = /** @type {any} */ (await chat.getChat(id))
  say(`created chat ${id} "alice & bob"`)
}
let group = (await chat.getChats(ids.carol)).find(c => c.name === 'general')
if (!group) {
  const id = await chat.createChat({ name: 'general', adminId: ids.carol, userIds: [ids.alice, ids.bob] })
  group = /** @type {any} */ (await chat.getChat(id))
  say(`created chat ${id} "general"`)
}
const directId = /** @type {any} */ (direct).id
const groupId = /** @type {any} */ (group).id

// A live reader of the group, started before anything is sent this run. It
// reads until it has seen the last message sent below (`until`, known once
// sent), so what it prints does not depend on when it is stopped.
const controller = new AbortController()
/** @type {import('../chat.js').Message[]} */
const live = []
let until = Infinity
const watching = (async () => {
  for await (const message of chat.watch(groupId, { signal: controller.signal, viewerId: ids.alice })) {
    live.push(message)
    if (message.id >= until) return
  }
})()

const run = new Date().toISOString().slice(11, 19)
await chat.addChatMessage({ chatId: directId, senderId: ids.alice, text: `hi bob (${run})` })
await chat.addChatMessage({ chatId: directId, senderId: ids.bob, text: 'hi alice!' })
await chat.addChatMessage({ chatId: groupId, senderId: ids.carol, text: `standup at ten (${run})` })
await chat.addChatMessage({ chatId: groupId, senderId: ids.bob, text: 'carol, can I skip?', recipients: [ids.carol] })
until = await chat.addChatMessage({ chatId: groupId, senderId: ids.alice, text: 'see you there' })
// Delivered already (while this call was answered): nothing more to wait for.
if (live.some(m => m.id >= until)) controller.abort()
try {
  await chat.addChatMessage({ chatId: directId, senderId: ids.carol, text: 'let me in' })
} catch (err) {
  say(`carol cannot write to alice & bob: ${/** @type {any} */ (err).code}`)
}
say()

say("alice's chats, most recent activity first:")
for (const c of await chat.getChats(ids.alice)) {
  say(`  #${c.id} ${c.name.padEnd(12)} ${c.members.length} members, last activity ${new Date(c.lastActivity).toISOString()}`)
}
say()

/** @param {string} title @param {any[] | null} messages */
const show = (title, messages) => {
  say(title)
  for (const m of messages || []) {
    const sender = Object.keys(ids).find(name => ids[name] === m.senderId)
    say(`  ${String(m.id).padStart(3)} ${String(sender).padEnd(6)} ${m.recipients ? '(whisper) ' : ''}${m.text}`)
  }
}
show('last 4 messages of "general", as alice sees them (the whisper is hidden):', await chat.getChatMessages(groupId, { n: 4, viewerId: ids.alice }))
show('the same, as carol sees them:', await chat.getChatMessages(groupId, { n: 4, viewerId: ids.carol }))
show('the first 2 messages of "alice & bob":', await chat.getChatMessages(directId, { from: 1, n: 2 }))
say()

const timeout = setTimeout(() => controller.abort(), 10000)
await watching
clearTimeout(timeout)
if (!live.some(m => m.id === until)) throw new Error(`alice's live watch did not deliver message ${until} of "general" within 10 s`)
say(`alice's live watch of "general" received ${live.length} message(s) as they were committed: ids ${live.map(m => m.id).join(', ')}`)
say(`existsChat(alice, bob) = ${await chat.existsChat(ids.alice, ids.bob)}, existsChat(bob, carol) = ${await chat.existsChat(ids.bob, ids.carol)}, checkChatMember(general, bob) = ${await chat.checkChatMember(groupId, ids.bob)}`)
say()

const report = await chat.check()
say(report.ok ? 'db.check() and the chat invariants: no problems' : `problems: ${JSON.stringify(report.problems, null, 2)}`)
await db.close()
if (!report.ok) process.exitCode = 1
