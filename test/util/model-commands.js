// The commands of the model property tests (test/model-property-test.js,
// test/model-property-postgres-test.js, test/browser-model-property-test.js):
// fast-check generators of random scenarios, shared by Node and the browser
// page (test/browser/model-property-entry.js), so every target runs the
// same sequences for a seed.

import fc from 'fast-check'

export const MAX_COMMANDS = 40

// ---------------------------------------------------------------------------
// Small value domains, so that collisions happen all the time. '😀' and
// '\uffff' sort one way in JS (UTF-16 units) and the other way as UTF-8 keys.

export const USERNAMES = ['ann', 'bob', 'Bob', 'bo', '😀', '\uffff']
const CITIES = ['Oslo', 'Oslo😀', 'Oslo\uffff']
const TAGS = ['red', 'green', 'blue', '😀']
const TITLES = ['general', 'random', '😀']
const MAX_ID = 8
const MAX_SEQ = 6

const age = fc.integer({ min: 0, max: 5 })
const city = fc.constantFrom(...CITIES)
const tag = fc.constantFrom(...TAGS)
const username = fc.constantFrom(...USERNAMES)
const tags = fc.array(tag, { maxLength: 3 }) // duplicates on purpose
// Ids that mostly exist (setup inserts a few records first), some that may
// not, and rarely 0, which sequence collections reject (LEVELKIT_INVALID).
const id = fc.oneof(
  { arbitrary: fc.integer({ min: 1, max: 3 }), weight: 8 },
  { arbitrary: fc.integer({ min: 1, max: MAX_ID }), weight: 3 },
  { arbitrary: fc.constant(0), weight: 1 }
)
// Chats are named by relation and message commands: fewer of them, so that
// edges and messages pile up on the same ones.
const chatId = fc.oneof(
  { arbitrary: fc.integer({ min: 1, max: 2 }), weight: 8 },
  { arbitrary: fc.integer({ min: 1, max: MAX_ID }), weight: 2 },
  { arbitrary: fc.constant(0), weight: 1 }
)
const validId = fc.integer({ min: 1, max: MAX_ID })
const seq = fc.oneof(fc.integer({ min: 1, max: 2 }), fc.integer({ min: 1, max: MAX_SEQ }))
const message = fc.oneof(
  fc.string({ maxLength: 3 }),
  fc.integer({ min: -3, max: 3 }),
  fc.constant(null),
  fc.record({ text: fc.constantFrom('hi', '😀', '\uffff') })
)

const user = fc.record({ username, age, city, tags }, { requiredKeys: ['age', 'city'] })
const chat = fc.record({ title: fc.constantFrom(...TITLES) })
// A patch property set to undefined removes it. Without age or city the byAge
// key [age, city] cannot be encoded, so such an update is LEVELKIT_INVALID.
const removable = (arb, freq) => fc.option(arb, { nil: undefined, freq })
const patch = fc.record({
  username: removable(username, 4),
  age: removable(age, 12),
  city: removable(city, 12),
  tags: removable(tags, 4)
}, { requiredKeys: [] })

const cmd = (type, fields = {}) => fc.record({ type: fc.constant(type), ...fields })

export const writeCommand = fc.oneof(
  { arbitrary: cmd('insertUser', { rec: user }), weight: 6 },
  { arbitrary: cmd('putUser', { id, rec: user }), weight: 2 },
  { arbitrary: cmd('updateUser', { id, patch }), weight: 4 },
  // update(id, old => new): the returned record replaces the old one.
  { arbitrary: cmd('replaceUser', { id, rec: user }), weight: 1 },
  { arbitrary: cmd('delUser', { id }), weight: 3 },
  { arbitrary: cmd('insertChat', { rec: chat }), weight: 3 },
  { arbitrary: cmd('putChat', { id: chatId, rec: chat }), weight: 1 },
  { arbitrary: cmd('delChat', { id: chatId }), weight: 2 },
  { arbitrary: cmd('addMember', { chat: chatId, user: id }), weight: 8 },
  { arbitrary: cmd('removeMember', { chat: chatId, user: id }), weight: 3 },
  { arbitrary: cmd('append', { chat: chatId, value: message }), weight: 5 },
  { arbitrary: cmd('delMessage', { chat: chatId, seq }), weight: 2 },
  { arbitrary: cmd('putMessage', { chat: chatId, seq, value: message }), weight: 2 }
)

export const readCommand = fc.oneof(
  cmd('getUser', { id }),
  cmd('getBy', { username }),
  cmd('getChat', { id: chatId }),
  cmd('hasMember', { chat: chatId, user: id }),
  cmd('getMessage', { chat: chatId, seq }),
  cmd('lastSeq', { chat: chatId })
)

// Range options over a value domain: the pairs a caller would write.
const range = value => fc.oneof(
  fc.record({ gte: value, lt: value }, { requiredKeys: [] }),
  fc.record({ gt: value, lte: value }, { requiredKeys: [] }),
  fc.record({ eq: value })
)
const ageKey = fc.oneof(fc.tuple(age), fc.tuple(age, city))
const probeOptions = { reverse: fc.boolean(), limit: fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined }), pageSize: fc.integer({ min: 1, max: 4 }) }
const probe = fc.oneof(
  fc.record({ target: fc.constant('users'), index: fc.constant(undefined), range: range(validId), ...probeOptions }),
  fc.record({ target: fc.constant('users'), index: fc.constant('byAge'), range: range(ageKey), ...probeOptions }),
  fc.record({ target: fc.constant('users'), index: fc.constant('byAge'), range: fc.record({ prefix: fc.oneof(fc.tuple(age), fc.tuple(age, city), fc.constant([])) }), ...probeOptions }),
  fc.record({ target: fc.constant('users'), index: fc.constant('tags'), range: fc.oneof(fc.record({ eq: tag }), range(tag)), ...probeOptions }),
  fc.record({ target: fc.constant('users'), index: fc.constant('username'), range: range(username), ...probeOptions }),
  fc.record({ target: fc.constant('to'), id: fc.integer({ min: 1, max: 3 }), range: range(validId), ...probeOptions }),
  fc.record({ target: fc.constant('from'), id: fc.integer({ min: 1, max: 4 }), range: range(validId), ...probeOptions }),
  fc.record({ target: fc.constant('messages'), id: fc.integer({ min: 1, max: 3 }), range: range(seq), ...probeOptions })
)

const caught = fc.oneof({ arbitrary: fc.constant(false), weight: 2 }, { arbitrary: fc.constant(true), weight: 1 })
// Deletes are the operations that can fail after deciding writes (a cascade
// of one dependent, then a restrict of the next): inside a group, a caught
// failure must take back exactly its own writes.
const groupOp = fc.oneof(
  { arbitrary: writeCommand, weight: 6 },
  { arbitrary: fc.oneof(cmd('delChat', { id: chatId }), cmd('delUser', { id })), weight: 2 },
  { arbitrary: readCommand, weight: 2 }
)
const abort = fc.oneof({ arbitrary: fc.constant(false), weight: 5 }, { arbitrary: fc.constant(true), weight: 1 })
// db.write() groups. Sequential ones await each operation (and may read in
// between); parallel ones start every operation at once, which the scope must
// still run one after the other, in call order.
const group = fc.oneof(
  cmd('write', {
    parallel: fc.constant(false),
    abort,
    ops: fc.array(fc.record({ op: groupOp, caught }), { minLength: 1, maxLength: 4 })
  }),
  cmd('write', {
    parallel: fc.constant(true),
    abort,
    ops: fc.array(fc.record({ op: writeCommand, caught }), { minLength: 1, maxLength: 4 })
  })
)

const command = fc.oneof(
  { arbitrary: writeCommand, weight: 12 },
  { arbitrary: readCommand, weight: 3 },
  { arbitrary: group, weight: 4 },
  // Writes and write groups started without waiting: the write path runs
  // them FIFO, so each must see exactly the effects of those started before.
  { arbitrary: cmd('concurrent', { ops: fc.array(fc.oneof({ arbitrary: writeCommand, weight: 4 }, { arbitrary: group, weight: 1 }), { minLength: 2, maxLength: 5 }) }), weight: 2 },
  { arbitrary: cmd('probe', { probe }), weight: 1 },
  // A first page, some writes, then the next page: the cursor resumes right
  // after the last key it returned, in whatever the data is by then.
  { arbitrary: cmd('pages', { probe, between: fc.array(writeCommand, { maxLength: 3 }) }), weight: 1 },
  // Close and reopen (a no-op where closing loses the data, memory-level).
  // relationIndexes: false → true moves the members' reverse lists into
  // IndexedDB's index; 'entries' and 'lists' move its forward lists between
  // the lists store's entries only and browser-level's store too
  // (lib/idb-entries-move.js; elsewhere the option does nothing).
  { arbitrary: cmd('reopen', { relationIndexes: fc.constantFrom(true, false, 'entries', 'lists') }), weight: 1 },
  // Commands run one after the other through a second handle on the same
  // data, where the target has one (another tab on IndexedDB, another
  // database on a shared PostgreSQL table; else the same handle): the lock
  // goes over and back, and each side must forget what it cached of the
  // keys the other wrote.
  { arbitrary: cmd('other', { ops: fc.array(fc.oneof({ arbitrary: writeCommand, weight: 4 }, { arbitrary: readCommand, weight: 2 }, { arbitrary: group, weight: 1 }), { minLength: 1, maxLength: 4 }) }), weight: 2 }
)

const anyPolicy = fc.record({
  members: fc.constantFrom('cascade', 'restrict', { from: 'cascade', to: 'restrict' }, { from: 'restrict', to: 'cascade' }),
  messages: fc.constantFrom('cascade', 'restrict'),
  // Declaration order is the order in which a chat's dependents are visited
  // when it is deleted.
  messagesFirst: fc.boolean()
})
// Deleting a chat cascades to its first dependent, then its second refuses:
// the cascade's writes must be taken back.
const cascadeThenRestrict = fc.constantFrom(
  { members: 'cascade', messages: 'restrict', messagesFirst: false },
  { members: { from: 'cascade', to: 'restrict' }, messages: 'restrict', messagesFirst: false },
  { members: 'restrict', messages: 'cascade', messagesFirst: true },
  { members: { from: 'restrict', to: 'cascade' }, messages: 'cascade', messagesFirst: true }
)
const policy = fc.oneof(anyPolicy, cascadeThenRestrict)

// How the models are stored: the members' lists (both directions is the
// layout IndexedDB keeps in its own index), messages one per key or in
// blocks. The answers are the same for every layout.
const layout = fc.record({
  lists: fc.oneof(
    { arbitrary: fc.constant(['from', 'to']), weight: 3 },
    { arbitrary: fc.constantFrom([], ['from'], ['to']), weight: 2 }
  ),
  blockSize: fc.constantFrom(0, 0, 2, 4)
})

// A few inserts first (themselves checked like any command), so that most
// ids the commands name exist.
const setup = fc.tuple(
  fc.array(cmd('insertUser', { rec: user }), { minLength: 2, maxLength: 5 }),
  fc.array(cmd('insertChat', { rec: chat }), { minLength: 2, maxLength: 3 })
).map(([users, chats]) => [...users, ...chats])

export const scenario = fc.record({
  policy,
  layout,
  // Reads with getSync() where the backend has it (the default), or without.
  syncReads: fc.boolean(),
  // The first open's relationIndexes (IndexedDB: false stores reverse lists).
  relationIndexes: fc.boolean(),
  setup,
  commands: fc.array(command, { maxLength: MAX_COMMANDS, size: 'max' }),
  probes: fc.array(probe, { maxLength: 8 })
})
