import { InstrumentedLevel, dump, attempt } from '../../lib/backends.js'
import { equal, project } from '../../lib/checks.js'

export const functions = ['addUser', 'addPostWithComment', 'listUsers']

export function scenario (random) {
  const names = random.words(random.int(4, 7), 3, 7)
  const users = names.map((name, i) => ({ id: `u${String(i + 1).padStart(2, '0')}`, name, age: random.int(18, 80) }))
  const posts = Array.from({ length: random.int(3, 6) }, (_, i) => ({
    post: { id: `p${String(i + 1).padStart(2, '0')}`, author: random.pick(users).id, title: random.words(3).join(' ') },
    comment: { id: `c${String(i + 1).padStart(2, '0')}`, text: random.words(4).join(' ') }
  }))
  return { users, posts }
}

export async function exec ({ mod, scenario }) {
  const db = new InstrumentedLevel()
  await db.open()
  const added = []
  for (const user of scenario.users) added.push(await attempt(() => mod.addUser(db, user)))
  const writes = []
  for (const { post, comment } of scenario.posts) {
    const m = await db.measure(() => mod.addPostWithComment(db, post, comment))
    writes.push({ post: post.id, writeEvents: m.counts.writeEvents, batches: m.counts.batches + m.counts.puts + m.counts.dels, ...(m.threw ? { threw: m.threw } : {}) })
  }
  const list = await attempt(() => mod.listUsers(db))
  return { added, writes, list, state: await dump(db) }
}

export const checks = [
  {
    id: 'layout',
    kind: 'state',
    title: 'root keys carry the sublevel prefixes; values are JSON',
    check: ({ learner, reference }) => equal(learner.state, reference.state, 'the raw database differs from the reference: check the sublevel names, the nesting of comments inside posts, and valueEncoding json')
  },
  {
    id: 'list-users',
    kind: 'result',
    title: 'listUsers returns the user objects, and only users',
    check: ({ learner, reference }) => equal(project(learner.list, v => v), project(reference.list, v => v), 'listUsers should resolve with the decoded user objects of the users sublevel')
  },
  {
    id: 'one-write-event',
    kind: 'behaviour',
    title: 'addPostWithComment is one atomic write (one root write event, one batch)',
    check: ({ learner }) => equal(
      learner.writes,
      learner.writes.map(w => ({ post: w.post, writeEvents: 1, batches: 1 })),
      'write the post and its comment with one db.batch() on the root, using the sublevel option'
    )
  }
]
