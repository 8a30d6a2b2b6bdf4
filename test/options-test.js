// The options table (lib/options.js) is what the calls accept, and open()
// keeps passing unknown options through to the backend it opens, but not
// when there is none ({ db }). The refusals on every backend are in the
// conformance suite (test/conformance/queries.js).
import test from 'tape'
import { MemoryLevel } from 'memory-level'
import { open } from '../index.js'
import { OPTIONS } from '../lib/options.js'
import { oneOfEachModel } from './conformance/queries.js'

/** @param {() => any} fn @returns {Promise<any>} the error, or null */
async function failure (fn) {
  try {
    await fn()
    return null
  } catch (err) {
    return err
  }
}

test('every option in the table is taken by its call, and only those', async t => {
  const db = await open({ backend: 'memory' })
  const { users, chats, members, messages, hits } = oneOfEachModel(db)
  const chat = await chats.insert({})
  const handles = db.collection('handles', { indexes: { handle: { unique: true, key: (/** @type {any} */ h) => h.handle } } })
  const ended = new AbortController()
  ended.abort()
  let declared = 0
  let version = 0
  /** @type {Record<keyof typeof OPTIONS, (options: any) => any>} */
  const calls = {
    'collection.query()': options => users.query(options).all(),
    'collection.get()': options => users.get(1, options),
    'collection.getBy()': options => handles.getBy('handle', 'a', options),
    'collection.count()': options => users.count(options),
    'collection.put()': options => users.put(1, { name: 'a' }, options),
    'collection.update()': options => users.update(1, { name: 'b' }, options),
    'collection.del()': options => users.del(2, options),
    'collection.insertMany()': options => users.insertMany([{ name: 'm' }], options),
    'collection.putMany()': options => users.putMany([[3, { name: 'p' }]], options),
    'children.appendMany()': options => messages.appendMany(chat, ['a'], options),
    'relation.addMany()': options => members.addMany(chat, [1], options),
    'relation.to()': options => members.to(chat, options).all(),
    'relation.from()': options => members.from(1, options).all(),
    'children.range()': options => messages.range(chat, options).all(),
    'children.watch()': options => messages.watch(chat, { ...options, signal: options.signal ?? ended.signal }).next(),
    'counter.query()': options => hits.query(options).all(),
    'db.check()': options => db.check(options),
    'db.write()': options => db.write(async () => {}, options),
    'db.transaction()': options => db.transaction(async () => {}, options),
    'db.migrate()': options => db.migrate([{ version: ++version, up () {} }], options),
    'modify()': options => db.migrate([{ version: ++version, up: (/** @type {any} */ m) => m.collection(users).modify(() => undefined, options) }]),
    'open()': async options => (await open({ db: new MemoryLevel(), ...options })).close(),
    'db.collection()': options => db.collection(`c${declared++}`, options),
    'db.relation()': options => db.relation(`r${declared++}`, { from: chats, to: users, ...options }),
    'db.children()': options => db.children(`k${declared++}`, { parent: chats, ...options })
  }
  t.same(Object.keys(calls).sort(), Object.keys(OPTIONS).sort(), 'a call for every row of the table')
  for (const [call, options] of Object.entries(OPTIONS)) {
    const run = calls[/** @type {keyof typeof OPTIONS} */ (call)]
    const refusals = []
    for (const name of options) {
      const err = await failure(() => run({ [name]: undefined }))
      if (err && /unknown option/.test(err.message)) refusals.push(name)
    }
    t.same(refusals, [], `${call} takes ${options.join(', ')}`)
    const err = await failure(() => run({ notAnOption: 1 }))
    t.ok(err?.code === 'LEVELKIT_INVALID' && /"notAnOption"/.test(err.message), `${call} refuses any other`)
  }
  await db.close()
})

test('open() passes unknown options through to the backend it opens, and refuses them with { db }', async t => {
  for (const bad of [null, [], 'memory', 5]) {
    t.is((await failure(() => open(/** @type {any} */ (bad))))?.code, 'LEVELKIT_INVALID', `refuses ${JSON.stringify(bad)} as options`)
  }
  const reached = await failure(() => open({ backend: 'memory', storeEncoding: 'nope' }))
  t.match(String(reached?.message), /storeEncoding option must be/, 'an option of memory-level is passed to it (and judged there)')
  const err = await failure(() => open({ db: new MemoryLevel(), cacheSize: 8 << 20 }))
  t.is(err?.code, 'LEVELKIT_INVALID', 'with { db }, an option for a backend has nowhere to go: refused')
  t.match(String(err?.message), /"cacheSize"/, 'naming it')
  const sub = await open({ backend: 'memory' })
  t.ok(sub.sublevel('mine', { keyEncoding: 'tuple', valueEncoding: 'json' }), 'db.sublevel() passes its options to abstract-level')
  t.is((await failure(() => sub.sublevel('other', /** @type {any} */ ([]))))?.code, 'LEVELKIT_INVALID', 'but takes an object only')
  await sub.close()
})
