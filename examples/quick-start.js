// The README's quick start, runnable: `npm run example:quick-start` (LevelDB
// in ./data/quick-start), `node examples/quick-start.js --memory` or
// `--location <dir>`.
import { parseArgs } from 'node:util'
import { open } from '../index.js'

const { values: args } = parseArgs({
  options: {
    memory: { type: 'boolean', default: false },
    location: { type: 'string', default: './data/quick-start' }
  }
})
const db = await open(args.memory ? { backend: 'memory' } : { backend: 'leveldb', location: args.location })

const users = db.collection('users', {
  indexes: {
    username: { unique: true, key: u => u.username },
    byAge: { key: u => [u.age, u.city] },
    tags: { key: u => u.tags, multi: true }
  },
  validate (u) {
    if (typeof u.username !== 'string' || u.username === '') throw new Error('username is required')
  }
})
const chats = db.collection('chats')
const members = db.relation('members', { from: chats, to: users, onDelete: 'cascade' })
const messages = db.children('messages', { parent: chats })

// Data these models did not write (another program's, such as the chat
// demo's, whose models have the same names) does not check clean: leave it
// alone rather than write over it.
const found = await db.check()
if (!found.ok) {
  console.error(`quick start: not using ${args.location}: its data is not this program's (${found.problems.length} problems, such as ${found.problems[0].type}: ${found.problems[0].message}). Pass --location <dir> for a directory of its own.`)
  await db.close()
  process.exit(2)
}

// A second run on the same data finds the users already there.
async function user (username, age, city, tags) {
  const existing = await users.getBy('username', username)
  return existing ? existing.id : users.insert({ username, age, city, tags })
}
const ann = await user('ann', 31, 'Oslo', ['admin', 'ops'])
const bob = await user('bob', 35, 'Rome', ['ops'])
const cat = await user('cat', 42, 'Bern', [])

try {
  await users.insert({ username: 'ann', age: 20, city: 'Lima', tags: [] })
} catch (err) {
  console.log(`second "ann" refused: ${err.code}`)
}

const chatId = await db.write(async (w) => {
  const id = await chats.in(w).insert({ name: `standup ${new Date().toISOString().slice(0, 10)}` })
  await members.in(w).add(id, ann)
  await members.in(w).add(id, bob)
  return id
})
await messages.append(chatId, { from: ann, text: 'morning!' })
await messages.append(chatId, { from: bob, text: 'hi ann' })

const thirties = await users.query({ index: 'byAge', gte: [30], lt: [40] }).all()
console.log('users in their thirties:', thirties.map(u => `${u.username} (${u.age}, ${u.city})`).join(', '))
console.log('tagged ops:', (await users.query({ index: 'tags', eq: 'ops' }).all()).map(u => u.username).join(', '))
console.log(`members of chat ${chatId}:`, (await users.getMany(await members.to(chatId).all())).map(u => u.username).join(', '))
console.log(`chats of ann: ${await members.from(ann).count()}`)
for (const [seq, m] of await collect(messages.range(chatId).entries())) console.log(`  #${seq} ${m.text}`)

const page = await users.query({ index: 'byAge', limit: 2 }).page()
console.log('first page:', page.items.map(u => u.username), 'next:', (await users.query({ index: 'byAge', limit: 2, cursor: page.cursor }).page()).items.map(u => u.username))

await users.update(cat, { age: 43 })
const report = await db.check()
console.log(`check: ${report.ok ? 'ok' : JSON.stringify(report.problems)}`)
await db.close()

async function collect (iterable) {
  const out = []
  for await (const x of iterable) out.push(x)
  return out
}
