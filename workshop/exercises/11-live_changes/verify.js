import { InstrumentedLevel, attempt } from '../../lib/backends.js'
import { equal, all } from '../../lib/checks.js'

export const functions = ['watch']

export function scenario (random) {
  const keys = random.words(12, 3, 6)
  const todo = () => ({ title: random.words(random.int(1, 3)).join(' '), done: random.next() < 0.3 })
  const [a, b, c, d, e, f, g, h, i, j, k, l] = keys
  return {
    // Through the sublevel itself: put, del, batch, chained batch.
    direct: [
      ['put', a, todo()],
      ['put', b, todo()],
      ['del', a],
      ['batch', [['put', c, todo()], ['put', d, todo()], ['del', b]]],
      ['chained', [['put', e, todo()], ['del', c]]]
    ],
    // Root batches with the sublevel option (array and chained), mixed with
    // writes to other sublevels and plain root keys, which must not show up.
    root: [
      ['root-batch', [['put', f, todo()], ['tags', g, todo()], ['put', h, todo()], ['plain', i, 'x']]],
      ['root-chained', [['tags', j, todo()], ['put', k, todo()], ['plain', l, 'y'], ['put', f, todo()]]]
    ],
    // Other sublevels only: a name that starts like the watched one, and a
    // root key that looks like it.
    others: [
      ['archive', a, todo()],
      ['archive-batch', [['put', b, todo()], ['del', a]]],
      ['plain', 'todos', 'z'],
      ['tags', k, todo()]
    ],
    after: [['put', g, todo()], ['del', h]],
    notes: [[e, todo()], [l, todo()]]
  }
}

const change = ([type, key, value]) => type === 'del' ? { type, key } : { type: 'put', key, value }

function expected (scenario) {
  const flat = (steps) => steps.flatMap(([kind, ...rest]) => {
    if (kind === 'put' || kind === 'del') return [change([kind, ...rest])]
    if (kind === 'batch' || kind === 'chained') return rest[0].map(change)
    if (kind === 'root-batch' || kind === 'root-chained') return rest[0].filter(([t]) => t === 'put').map(change)
    return []
  })
  return {
    direct: flat(scenario.direct),
    root: flat(scenario.root),
    others: [],
    afterUnsubscribe: [],
    notes: scenario.notes.map(([key, value]) => ({ type: 'put', key, value }))
  }
}

async function write (db, step) {
  const [todos, tags, archive] = ['todos', 'tags', 'todos-archive'].map(name => db.sublevel(name, { valueEncoding: 'json' }))
  // A chained batch needs an open sublevel (no deferred open).
  await Promise.all([todos.open(), tags.open(), archive.open()])
  const rootOp = ([t, key, value]) => t === 'put'
    ? { type: 'put', sublevel: todos, key, value }
    : t === 'del'
      ? { type: 'del', sublevel: todos, key }
      : t === 'tags'
        ? { type: 'put', sublevel: tags, key, value }
        : { type: 'put', key, value }
  const [kind, key, value] = step
  if (kind === 'put') return todos.put(key, value)
  if (kind === 'del') return todos.del(key)
  if (kind === 'batch') return todos.batch(key.map(([t, k, v]) => t === 'put' ? { type: 'put', key: k, value: v } : { type: 'del', key: k }))
  if (kind === 'chained') {
    const batch = todos.batch()
    for (const [t, k, v] of key) t === 'put' ? batch.put(k, v) : batch.del(k)
    return batch.write()
  }
  if (kind === 'root-batch') return db.batch(key.map(rootOp))
  if (kind === 'root-chained') {
    const batch = db.batch()
    for (const op of key.map(rootOp)) op.type === 'put' ? batch.put(op.key, op.value, op.sublevel ? { sublevel: op.sublevel } : {}) : batch.del(op.key, { sublevel: op.sublevel })
    return batch.write()
  }
  if (kind === 'archive') return archive.put(key, value)
  if (kind === 'archive-batch') return archive.batch(key.map(([t, k, v]) => t === 'put' ? { type: 'put', key: k, value: v } : { type: 'del', key: k }))
  if (kind === 'plain') return db.put(key, value)
  if (kind === 'tags') return tags.put(key, value)
}

// Keep only type, key and value (a del's value is not compared).
const shape = (e) => e && typeof e === 'object' ? (e.type === 'del' ? { type: e.type, key: e.key } : { type: e.type, key: e.key, value: e.value }) : e

export async function exec ({ mod, scenario }) {
  const db = new InstrumentedLevel()
  await db.open()
  // One instance per sublevel name and options, as in an app that creates
  // its sublevels once: the verifier's writes and the learner's sublevel are
  // then the same object (a sublevel's own 'write' event is per instance).
  const instances = new Map()
  const sublevel = db.sublevel.bind(db)
  db.sublevel = (name, options) => {
    const id = JSON.stringify([name, options || {}])
    if (!instances.has(id)) instances.set(id, sublevel(name, options))
    return instances.get(id)
  }
  // 'write' listeners on the root and on every sublevel handed out
  const listeners = () => [db, ...instances.values()].reduce((n, d) => n + d.listenerCount('write'), 0)
  const listenersBefore = listeners()
  let events = []
  const notes = []
  const watched = await attempt(() => mod.watch(db, 'todos', (e) => events.push(shape(e))))
  if (watched.threw) {
    const threw = { threw: watched.threw }
    return { direct: threw, root: threw, others: threw, unsubscribe: { unsubscribeType: threw } }
  }
  await attempt(() => mod.watch(db, 'notes', (e) => notes.push(shape(e))))
  const phase = async (steps) => {
    events = []
    for (const step of steps) await write(db, step)
    await new Promise(resolve => setImmediate(resolve)) // let a deferred listener catch up
    return events
  }
  const direct = await phase(scenario.direct)
  const root = await phase(scenario.root)
  const others = await phase(scenario.others)
  const unsubscribed = await attempt(() => watched.value())
  const afterUnsubscribe = await phase(scenario.after)
  const listenersAfter = listeners()
  const notesDb = db.sublevel('notes', { valueEncoding: 'json' })
  for (const [key, value] of scenario.notes) await notesDb.put(key, value)
  await new Promise(resolve => setImmediate(resolve))
  return {
    direct,
    root,
    others,
    unsubscribe: {
      unsubscribeType: typeof watched.value,
      unsubscribed: unsubscribed.threw ? { threw: unsubscribed.threw } : 'ok',
      afterUnsubscribe,
      // two watchers (todos, notes) were added; one is gone
      writeListenersLeft: listenersAfter - listenersBefore,
      notes
    }
  }
}

export const checks = [
  {
    id: 'direct-writes',
    kind: 'result',
    title: 'writes made through the sublevel are reported (put, del, batch, chained batch)',
    check: ({ learner, scenario }) => equal(learner.direct, expected(scenario).direct, 'onChange should get { type, key, value } (values decoded from JSON; a del has no value) for every put and del made through the sublevel, in order')
  },
  {
    id: 'root-batches',
    kind: 'result',
    title: 'root batches with the sublevel option are reported too',
    check: ({ learner, scenario }) => equal(learner.root, expected(scenario).root, 'a root db.batch() with { sublevel } ops changes the sublevel too, but only the root\'s \'write\' event sees it: listen on the root and keep the ops whose key starts with the sublevel\'s prefix')
  },
  {
    id: 'other-sublevels',
    kind: 'result',
    title: 'writes elsewhere are not reported',
    check: ({ learner }) => equal(learner.others, [], 'writes to other sublevels (\'todos-archive\' starts like \'todos\': its prefix is \'!todos-archive!\') and to root keys are not changes of this sublevel: match the whole prefix, with both \'!\'')
  },
  {
    id: 'unsubscribe',
    kind: 'behaviour',
    title: 'unsubscribe() stops the events and removes its listener, and only its own',
    check: ({ learner, scenario }) => all(
      equal(learner.unsubscribe.unsubscribeType, 'function', 'watch() must return the unsubscribe function (synchronously)'),
      equal(learner.unsubscribe, { unsubscribeType: 'function', unsubscribed: 'ok', afterUnsubscribe: [], writeListenersLeft: 1, notes: expected(scenario).notes }, 'after unsubscribe(): no more events, one \'write\' listener fewer (off() with the very function you passed to on(), not a new one), and other watchers (notes) still working')
    )
  }
]
