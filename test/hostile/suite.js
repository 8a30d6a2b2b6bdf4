import { codes, encodeTuple, decodeTuple } from '../../index.js'
import { ChatStore } from '../../chat.js'
import { HOSTILE } from './values.js'

// Hostile input at the door of the public API: every public method, every
// argument position, every value of ./values.js. Each call must either be
// accepted (only where the value is valid there) or fail with a levelkit
// error whose code is documented, rejecting (async methods) rather than
// throwing, within a few seconds, and with nothing written: the raw contents
// of the database are the same before and after. Environment-free: the
// runner passes tape's `test` and `common = { backend, open }`.

const CODES = new Set(Object.values(codes))
const SETTLE_MS = 10000
// A watch() that accepted its arguments waits for a child: this long.
const WATCH_WAIT_MS = 200
const CHAT_OPTIONS = { passwordCost: { scryptN: 1024, pbkdf2Iterations: 1000 } }

/**
 * @typedef {{ where: string, kinds: string[], call: (f: any, v: unknown) => any, sync?: boolean, query?: boolean, watch?: boolean, wake?: (f: any) => Promise<unknown> }} Position
 *   `kinds`: what the parameter takes (see values.js): a hostile value may be
 *   accepted only if it is valid for every one of them. `sync`: documented to
 *   return (or throw) synchronously. `query`: returns a Query, whose every
 *   method is then run. `watch`: returns an async iterator that may wait;
 *   `wake` appends what it waits for.
 */

let names = 0
const fresh = () => `m${++names}`

/** @type {Position[]} */
export const MODEL_POSITIONS = [
  // Database
  { where: 'db.collection(name)', kinds: ['name'], sync: true, call: (f, v) => f.db.collection(v) },
  { where: 'db.collection(name, options)', kinds: ['options'], sync: true, call: (f, v) => f.db.collection(fresh(), v) },
  { where: 'db.collection(name, { id })', kinds: ['fn'], sync: true, call: (f, v) => f.db.collection(fresh(), { id: v }) },
  { where: 'db.collection(name, { indexes })', kinds: ['options'], sync: true, call: (f, v) => f.db.collection(fresh(), { indexes: v }) },
  { where: 'db.collection(name, { indexes: { i: spec } })', kinds: ['index'], sync: true, call: (f, v) => f.db.collection(fresh(), { indexes: { i: v } }) },
  { where: 'db.collection(name, { indexes: { i: { key } } })', kinds: ['fn'], sync: true, call: (f, v) => f.db.collection(fresh(), { indexes: { i: { key: v } } }) },
  { where: 'db.collection(name, { indexes: { i: { unique } } })', kinds: ['bool'], sync: true, call: (f, v) => f.db.collection(fresh(), { indexes: { i: { key: noop, unique: v } } }) },
  { where: 'db.collection(name, { indexes: { i: { multi } } })', kinds: ['bool'], sync: true, call: (f, v) => f.db.collection(fresh(), { indexes: { i: { key: noop, multi: v } } }) },
  { where: 'db.collection(name, { indexes: { i: { covering } } })', kinds: ['bool'], sync: true, call: (f, v) => f.db.collection(fresh(), { indexes: { i: { key: noop, unique: true, covering: v } } }) },
  { where: 'db.collection(name, { validate })', kinds: ['fn'], sync: true, call: (f, v) => f.db.collection(fresh(), { validate: v }) },
  { where: 'the id function returns it', kinds: ['key'], call: (f, v) => f.db.collection(fresh(), { id: () => v }).insert({ a: 1 }) },
  { where: 'the id function throws it', kinds: ['thrown'], call: (f, v) => f.db.collection(fresh(), { id: () => { throw v } }).insert({ a: 1 }) },
  { where: 'an index key function returns it', kinds: ['key'], call: (f, v) => f.db.collection(fresh(), { indexes: { i: { key: () => v } } }).insert({ a: 1 }) },
  { where: 'a multi index key function returns it', kinds: ['keys'], call: (f, v) => f.db.collection(fresh(), { indexes: { i: { key: () => v, multi: true } } }).insert({ a: 1 }) },
  { where: 'an index key function throws it', kinds: ['thrown'], call: (f, v) => f.db.collection(fresh(), { indexes: { i: { key: () => { throw v } } } }).insert({ a: 1 }) },
  { where: 'validate throws it', kinds: ['thrown'], call: (f, v) => f.db.collection(fresh(), { validate: () => { throw v } }).insert({ a: 1 }) },
  { where: 'db.relation(name)', kinds: ['name'], sync: true, call: (f, v) => f.db.relation(v, { from: f.chats, to: f.users }) },
  { where: 'db.relation(name, options)', kinds: ['relation'], sync: true, call: (f, v) => f.db.relation(fresh(), v) },
  { where: 'db.relation(name, { from })', kinds: ['collection'], sync: true, call: (f, v) => f.db.relation(fresh(), { from: v, to: f.users }) },
  { where: 'db.relation(name, { to })', kinds: ['collection'], sync: true, call: (f, v) => f.db.relation(fresh(), { from: f.chats, to: v }) },
  { where: 'db.relation(name, { onDelete })', kinds: ['onDelete'], sync: true, call: (f, v) => f.db.relation(fresh(), { from: f.chats, to: f.users, onDelete: v }) },
  { where: 'db.relation(name, { onDelete: { from } })', kinds: ['onDelete'], sync: true, call: (f, v) => f.db.relation(fresh(), { from: f.chats, to: f.users, onDelete: { from: v, to: 'cascade' } }) },
  { where: 'db.relation(name, { lists })', kinds: ['lists'], sync: true, call: (f, v) => f.db.relation(fresh(), { from: f.chats, to: f.users, lists: v }) },
  { where: 'db.relation(name, { lists: [side] })', kinds: ['lists'], sync: true, call: (f, v) => f.db.relation(fresh(), { from: f.chats, to: f.users, lists: [v] }) },
  { where: 'db.children(name)', kinds: ['name'], sync: true, call: (f, v) => f.db.children(v, { parent: f.chats }) },
  { where: 'db.children(name, options)', kinds: ['relation'], sync: true, call: (f, v) => f.db.children(fresh(), v) },
  { where: 'db.children(name, { parent })', kinds: ['collection'], sync: true, call: (f, v) => f.db.children(fresh(), { parent: v }) },
  { where: 'db.children(name, { onDelete })', kinds: ['onDelete'], sync: true, call: (f, v) => f.db.children(fresh(), { parent: f.chats, onDelete: v }) },
  { where: 'db.children(name, { blockSize })', kinds: ['blockSize'], sync: true, call: (f, v) => f.db.children(fresh(), { parent: f.chats, blockSize: v }) },
  { where: 'db.counter(name)', kinds: ['name'], sync: true, call: (f, v) => f.db.counter(v) },
  { where: 'db.sublevel(name)', kinds: ['name'], sync: true, call: (f, v) => f.db.sublevel(v) },
  { where: 'db.sublevel(name, options)', kinds: ['options'], sync: true, call: (f, v) => f.db.sublevel(fresh(), v) },
  { where: 'db.sublevel(name, { keyEncoding })', kinds: ['any'], sync: true, call: (f, v) => f.db.sublevel(fresh(), { keyEncoding: v }) },
  { where: 'db.sublevel(name, { valueEncoding })', kinds: ['any'], sync: true, call: (f, v) => f.db.sublevel(fresh(), { valueEncoding: v }) },
  { where: 'db.write(fn)', kinds: ['fn'], call: (f, v) => f.db.write(v) },
  { where: 'db.check(options)', kinds: ['options'], call: (f, v) => f.db.check(v) },
  { where: 'db.check({ repair })', kinds: ['bool'], call: (f, v) => f.db.check({ repair: v }) },

  // Collection (users: sequence ids and three indexes; people: function ids and a covering index)
  { where: 'collection.in(w)', kinds: ['scope'], sync: true, call: (f, v) => f.users.in(v) },
  { where: 'collection.insert(record)', kinds: ['record'], call: (f, v) => f.users.insert(v) },
  { where: 'collection.insert({ field })', kinds: ['json'], call: (f, v) => f.users.insert({ username: `u${++names}`, field: v }) },
  { where: 'collection.insert({ unique value })', kinds: ['json', 'key'], call: (f, v) => f.users.insert({ username: v }) },
  { where: 'collection.insert({ multi value })', kinds: ['json', 'keys'], call: (f, v) => f.users.insert({ username: `u${++names}`, tags: v }) },
  { where: 'collection.put(id, record)', kinds: ['id'], call: (f, v) => f.users.put(v, { username: `u${++names}` }) },
  { where: 'collection.put(id, record) (function ids)', kinds: ['key', 'json'], call: (f, v) => f.people.put(v, { name: v, email: `e${++names}` }) },
  { where: 'collection.put(id, record)', kinds: ['record'], call: (f, v) => f.users.put(10, v) },
  { where: 'collection.update(id, patch)', kinds: ['id'], call: (f, v) => f.users.update(v, { age: 50 }) },
  { where: 'collection.update(id, change)', kinds: ['record'], call: (f, v) => f.users.update(1, v) },
  { where: 'collection.update(id, { field })', kinds: ['json', 'key'], call: (f, v) => f.users.update(1, { age: v }) },
  { where: 'collection.update(id, fn) returning it', kinds: ['record'], call: (f, v) => f.users.update(1, () => v) },
  { where: 'collection.update(id, fn) throwing it', kinds: ['thrown'], call: (f, v) => f.users.update(1, () => { throw v }) },
  { where: 'collection.del(id)', kinds: ['id'], call: (f, v) => f.users.del(v) },
  { where: 'collection.del(id) (function ids)', kinds: ['key'], call: (f, v) => f.people.del(v) },
  { where: 'collection.get(id)', kinds: ['id'], call: (f, v) => f.users.get(v) },
  { where: 'collection.get(id) (function ids)', kinds: ['key'], call: (f, v) => f.people.get(v) },
  { where: 'collection.has(id)', kinds: ['id'], call: (f, v) => f.users.has(v) },
  { where: 'collection.getMany(ids)', kinds: ['ids'], call: (f, v) => f.users.getMany(v) },
  { where: 'collection.getMany([id])', kinds: ['id'], call: (f, v) => f.users.getMany([1, v]) },
  { where: 'collection.getMany([id]) (function ids)', kinds: ['key'], call: (f, v) => f.people.getMany([v]) },
  { where: 'collection.getBy(index)', kinds: ['name'], call: (f, v) => f.users.getBy(v, 'a') },
  { where: 'collection.getBy(index, value)', kinds: ['key'], call: (f, v) => f.users.getBy('username', v) },
  { where: 'collection.getBy(covering index, value)', kinds: ['key'], call: (f, v) => f.people.getBy('email', v) },
  { where: 'collection.query(options)', kinds: ['options'], query: true, sync: true, call: (f, v) => f.users.query(v) },
  { where: 'collection.query({ index })', kinds: ['name'], query: true, sync: true, call: (f, v) => f.users.query({ index: v }) },
  { where: 'collection.query({ gte })', kinds: ['key'], query: true, sync: true, call: (f, v) => f.users.query({ gte: v }) },
  { where: 'collection.query({ index, lt })', kinds: ['key'], query: true, sync: true, call: (f, v) => f.users.query({ index: 'byAge', lt: v }) },
  { where: 'collection.query({ index, eq })', kinds: ['key'], query: true, sync: true, call: (f, v) => f.users.query({ index: 'username', eq: v }) },
  { where: 'collection.query({ covering index, gt })', kinds: ['key'], query: true, sync: true, call: (f, v) => f.people.query({ index: 'email', gt: v }) },
  { where: 'collection.query({ prefix })', kinds: ['keys'], query: true, sync: true, call: (f, v) => f.users.query({ index: 'byAge', prefix: v }) },
  { where: 'collection.query({ limit })', kinds: ['limit'], query: true, sync: true, call: (f, v) => f.users.query({ limit: v }) },
  { where: 'collection.query({ reverse })', kinds: ['bool'], query: true, sync: true, call: (f, v) => f.users.query({ reverse: v }) },
  { where: 'collection.query({ cursor })', kinds: ['cursor'], query: true, sync: true, call: (f, v) => f.users.query({ cursor: v }) },
  { where: 'collection.count(options)', kinds: ['options'], call: (f, v) => f.users.count(v) },
  { where: 'collection.count({ lte })', kinds: ['key'], call: (f, v) => f.users.count({ lte: v }) },

  // Relation (members: sequence ids, edges; follows: function ids, lists)
  { where: 'relation.in(w)', kinds: ['scope'], sync: true, call: (f, v) => f.members.in(v) },
  { where: 'relation.add(fromId)', kinds: ['id'], call: (f, v) => f.members.add(v, 1) },
  { where: 'relation.add(fromId, toId)', kinds: ['id'], call: (f, v) => f.members.add(2, v) },
  { where: 'relation.add(fromId) (function ids, lists)', kinds: ['key'], call: (f, v) => f.follows.add(v, 'bob') },
  { where: 'relation.add(fromId, toId) (function ids, lists)', kinds: ['key'], call: (f, v) => f.follows.add('bob', v) },
  { where: 'relation.addMany(fromId)', kinds: ['id'], call: (f, v) => f.members.addMany(v, [1]) },
  { where: 'relation.addMany(fromId, toIds)', kinds: ['idsIterable'], call: (f, v) => f.members.addMany(2, v) },
  { where: 'relation.addMany(fromId, [toId])', kinds: ['id'], call: (f, v) => f.members.addMany(2, [3, v]) },
  { where: 'relation.addMany(fromId, [toId]) (function ids, lists)', kinds: ['key'], call: (f, v) => f.follows.addMany('bob', [v]) },
  { where: 'relation.remove(fromId)', kinds: ['id'], call: (f, v) => f.members.remove(v, 1) },
  { where: 'relation.remove(fromId, toId)', kinds: ['id'], call: (f, v) => f.members.remove(1, v) },
  { where: 'relation.remove(fromId, toId) (function ids, lists)', kinds: ['key'], call: (f, v) => f.follows.remove('ann', v) },
  { where: 'relation.has(fromId)', kinds: ['id'], call: (f, v) => f.members.has(v, 1) },
  { where: 'relation.has(fromId, toId)', kinds: ['id'], call: (f, v) => f.members.has(1, v) },
  { where: 'relation.has(fromId, toId) (function ids, lists)', kinds: ['key'], call: (f, v) => f.follows.has('ann', v) },
  { where: 'relation.to(fromId)', kinds: ['id'], query: true, sync: true, call: (f, v) => f.members.to(v) },
  { where: 'relation.to(fromId, options)', kinds: ['options'], query: true, sync: true, call: (f, v) => f.members.to(1, v) },
  { where: 'relation.to(fromId, { gt })', kinds: ['key'], query: true, sync: true, call: (f, v) => f.members.to(1, { gt: v }) },
  { where: 'relation.from(toId)', kinds: ['id'], query: true, sync: true, call: (f, v) => f.members.from(v) },
  { where: 'relation.from(toId) (function ids, lists)', kinds: ['key'], query: true, sync: true, call: (f, v) => f.follows.from(v) },
  { where: 'relation.from(toId, { lt }) (function ids, lists)', kinds: ['key'], query: true, sync: true, call: (f, v) => f.follows.from('bob', { lt: v }) },
  { where: 'relation.from(toId, options)', kinds: ['options'], query: true, sync: true, call: (f, v) => f.members.from(1, v) },

  // Children (messages of chats: keys; notes of people: blocks of 4)
  { where: 'children.in(w)', kinds: ['scope'], sync: true, call: (f, v) => f.messages.in(v) },
  { where: 'children.append(parentId)', kinds: ['id'], call: (f, v) => f.messages.append(v, 'x') },
  { where: 'children.append(parentId) (function ids, blocks)', kinds: ['key'], call: (f, v) => f.notes.append(v, 'x') },
  { where: 'children.append(parentId, value)', kinds: ['json'], call: (f, v) => f.messages.append(1, v) },
  { where: 'children.append(parentId, value) (blocks)', kinds: ['json'], call: (f, v) => f.notes.append('ann', v) },
  { where: 'children.get(parentId)', kinds: ['id'], call: (f, v) => f.messages.get(v, 1) },
  { where: 'children.get(parentId, seq)', kinds: ['seq'], call: (f, v) => f.messages.get(1, v) },
  { where: 'children.get(parentId, seq) (blocks)', kinds: ['seq'], call: (f, v) => f.notes.get('ann', v) },
  { where: 'children.put(parentId)', kinds: ['id'], call: (f, v) => f.messages.put(v, 1, 'y') },
  { where: 'children.put(parentId, seq)', kinds: ['seq'], call: (f, v) => f.messages.put(1, v, 'y') },
  { where: 'children.put(parentId, seq, value)', kinds: ['json'], call: (f, v) => f.messages.put(1, 1, v) },
  { where: 'children.put(parentId, seq, value) (blocks)', kinds: ['json'], call: (f, v) => f.notes.put('ann', 1, v) },
  { where: 'children.del(parentId)', kinds: ['id'], call: (f, v) => f.messages.del(v, 1) },
  { where: 'children.del(parentId, seq)', kinds: ['seq'], call: (f, v) => f.messages.del(1, v) },
  { where: 'children.del(parentId, seq) (blocks)', kinds: ['seq'], call: (f, v) => f.notes.del('ann', v) },
  { where: 'children.range(parentId)', kinds: ['id'], query: true, sync: true, call: (f, v) => f.messages.range(v) },
  { where: 'children.range(parentId) (function ids, blocks)', kinds: ['key'], query: true, sync: true, call: (f, v) => f.notes.range(v) },
  { where: 'children.range(parentId, options)', kinds: ['options'], query: true, sync: true, call: (f, v) => f.messages.range(1, v) },
  { where: 'children.range(parentId, { gt })', kinds: ['key'], query: true, sync: true, call: (f, v) => f.messages.range(1, { gt: v }) },
  { where: 'children.range(parentId, { lte }) (blocks)', kinds: ['key'], query: true, sync: true, call: (f, v) => f.notes.range('ann', { lte: v }) },
  { where: 'children.getMany(parentId)', kinds: ['id'], call: (f, v) => f.messages.getMany(v, [1]) },
  { where: 'children.getMany(parentId, seqs)', kinds: ['ids'], call: (f, v) => f.messages.getMany(1, v) },
  { where: 'children.getMany(parentId, [seq])', kinds: ['seq'], call: (f, v) => f.messages.getMany(1, [1, v]) },
  { where: 'children.getMany(parentId, [seq]) (blocks)', kinds: ['seq'], call: (f, v) => f.notes.getMany('ann', [v]) },
  { where: 'children.lastSeq(parentId)', kinds: ['id'], call: (f, v) => f.messages.lastSeq(v) },
  { where: 'children.lastSeq(parentId) (function ids)', kinds: ['key'], call: (f, v) => f.notes.lastSeq(v) },
  { where: 'children.watch(parentId)', kinds: ['id'], watch: true, sync: true, call: (f, v) => f.messages.watch(v) },
  { where: 'children.watch(parentId, options)', kinds: ['options'], watch: true, sync: true, wake: f => f.messages.append(1, 'wake'), call: (f, v) => f.messages.watch(1, v) },
  { where: 'children.watch(parentId, { after })', kinds: ['nonneg'], watch: true, sync: true, call: (f, v) => f.messages.watch(1, { after: v, signal: f.aborted }) },
  { where: 'children.watch(parentId, { signal })', kinds: ['signal'], watch: true, sync: true, call: (f, v) => f.messages.watch(1, { after: 0, signal: v }) },

  // Counter
  { where: 'counter.in(w)', kinds: ['scope'], sync: true, call: (f, v) => f.hits.in(v) },
  { where: 'counter.add(key)', kinds: ['key'], call: (f, v) => f.hits.add(v) },
  { where: 'counter.add(key, delta)', kinds: ['int'], call: (f, v) => f.hits.add('k', v) },
  { where: 'counter.get(key)', kinds: ['key'], call: (f, v) => f.hits.get(v) },
  { where: 'counter.query(options)', kinds: ['options'], query: true, sync: true, call: (f, v) => f.hits.query(v) },
  { where: 'counter.query({ gte })', kinds: ['key'], query: true, sync: true, call: (f, v) => f.hits.query({ gte: v }) },
  { where: 'counter.query({ prefix })', kinds: ['keys'], query: true, sync: true, call: (f, v) => f.hits.query({ prefix: v }) },

  // Keys
  { where: 'encodeTuple(value)', kinds: ['key'], sync: true, call: (f, v) => encodeTuple(v) },
  { where: 'decodeTuple(bytes)', kinds: ['bytes'], sync: true, call: (f, v) => decodeTuple(/** @type {any} */ (v)) }
]

/** @type {Position[]} */
export const CHAT_POSITIONS = [
  { where: 'new ChatStore(db)', kinds: ['db'], sync: true, call: (f, v) => new ChatStore(/** @type {any} */ (v)) },
  { where: 'new ChatStore(db, options)', kinds: ['options'], sync: true, call: (f, v) => construct(f, v) },
  { where: 'ChatStore.open(db, options)', kinds: ['options'], call: (f, v) => ChatStore.open(f.spare(), /** @type {any} */ (v)) },
  { where: 'new ChatStore(db, { adopt })', kinds: ['bool'], sync: true, call: (f, v) => construct(f, { adopt: v }) },
  { where: 'new ChatStore(db, { maxMembers })', kinds: ['count'], sync: true, call: (f, v) => construct(f, { maxMembers: v }) },
  { where: 'new ChatStore(db, { passwordCost })', kinds: ['options'], sync: true, call: (f, v) => construct(f, { passwordCost: v }).createUser({ username: 'x', password: 'pw' }) },
  { where: 'new ChatStore(db, { passwordCost: { scryptN } })', kinds: ['cost'], sync: true, call: (f, v) => construct(f, { passwordCost: { scryptN: v } }).createUser({ username: 'x', password: 'pw' }) },
  { where: 'new ChatStore(db, { passwordCost: { pbkdf2Iterations } })', kinds: ['cost'], sync: true, call: (f, v) => construct(f, { passwordCost: { pbkdf2Iterations: v } }) },
  { where: 'chat.createUser(user)', kinds: ['options'], call: (f, v) => f.store.createUser(v) },
  { where: 'chat.createUser({ username })', kinds: ['username'], call: (f, v) => f.store.createUser({ username: v, password: 'pw' }) },
  { where: 'chat.createUser({ password })', kinds: ['string'], call: (f, v) => f.store.createUser({ username: `u${++names}`, password: v }) },
  { where: 'chat.getUser(username)', kinds: ['username'], call: (f, v) => f.store.getUser(v) },
  { where: 'chat.getUserById(id)', kinds: ['id'], call: (f, v) => f.store.getUserById(v) },
  { where: 'chat.verifyPassword(username)', kinds: ['username'], call: (f, v) => f.store.verifyPassword(v, 'pw') },
  { where: 'chat.verifyPassword(username, password)', kinds: ['string'], call: (f, v) => f.store.verifyPassword('alice', v) },
  { where: 'chat.setUserSession(session)', kinds: ['options'], call: (f, v) => f.store.setUserSession(v) },
  { where: 'chat.setUserSession({ sessionId })', kinds: ['string'], call: (f, v) => f.store.setUserSession({ sessionId: v, userId: 1, expiry: 1e15 }) },
  { where: 'chat.setUserSession({ userId })', kinds: ['id'], call: (f, v) => f.store.setUserSession({ userId: v, expiry: 1e15 }) },
  { where: 'chat.setUserSession({ expiry })', kinds: ['number'], call: (f, v) => f.store.setUserSession({ userId: 1, expiry: v }) },
  { where: 'chat.getUserFromSession(sessionId)', kinds: ['string'], call: (f, v) => f.store.getUserFromSession(v) },
  { where: 'chat.getUserFromSession(sessionId, now)', kinds: ['number'], call: (f, v) => f.store.getUserFromSession('s1', v) },
  { where: 'chat.removeSession(sessionId)', kinds: ['string'], call: (f, v) => f.store.removeSession(v) },
  { where: 'chat.purgeExpiredSessions(now)', kinds: ['number'], call: (f, v) => f.store.purgeExpiredSessions(v) },
  { where: 'chat.createChat(chat)', kinds: ['options'], call: (f, v) => f.store.createChat(v) },
  { where: 'chat.createChat({ name })', kinds: ['string'], call: (f, v) => f.store.createChat({ name: v, adminId: 1 }) },
  { where: 'chat.createChat({ adminId })', kinds: ['id'], call: (f, v) => f.store.createChat({ name: 'c', adminId: v }) },
  { where: 'chat.createChat({ userIds })', kinds: ['ids'], call: (f, v) => f.store.createChat({ name: 'c', adminId: 1, userIds: v }) },
  { where: 'chat.createChat({ userIds: [id] })', kinds: ['id'], call: (f, v) => f.store.createChat({ name: 'c', adminId: 1, userIds: [2, v] }) },
  { where: 'chat.createChat({ password })', kinds: ['string'], call: (f, v) => f.store.createChat({ name: 'c', adminId: 1, password: v }) },
  { where: 'chat.getChat(chatId)', kinds: ['id'], call: (f, v) => f.store.getChat(v) },
  { where: 'chat.getChats(userId)', kinds: ['id'], call: (f, v) => f.store.getChats(v) },
  { where: 'chat.deleteChat(chatId)', kinds: ['id'], call: (f, v) => f.store.deleteChat(v) },
  { where: 'chat.addChatMember(chatId)', kinds: ['id'], call: (f, v) => f.store.addChatMember(v, 3) },
  { where: 'chat.addChatMember(chatId, userId)', kinds: ['id'], call: (f, v) => f.store.addChatMember(1, v) },
  { where: 'chat.addChatMember(chatId, userId, options)', kinds: ['options'], call: (f, v) => f.store.addChatMember(2, 3, v) },
  { where: 'chat.addChatMember(chatId, userId, { password })', kinds: ['string'], call: (f, v) => f.store.addChatMember(2, 3, { password: v }) },
  { where: 'chat.removeChatMember(chatId)', kinds: ['id'], call: (f, v) => f.store.removeChatMember(v, 2) },
  { where: 'chat.removeChatMember(chatId, userId)', kinds: ['id'], call: (f, v) => f.store.removeChatMember(1, v) },
  { where: 'chat.checkChatMember(chatId)', kinds: ['id'], call: (f, v) => f.store.checkChatMember(v, 1) },
  { where: 'chat.checkChatMember(chatId, userId)', kinds: ['id'], call: (f, v) => f.store.checkChatMember(1, v) },
  { where: 'chat.existsChat(user1)', kinds: ['id'], call: (f, v) => f.store.existsChat(v, 2) },
  { where: 'chat.existsChat(user1, user2)', kinds: ['id'], call: (f, v) => f.store.existsChat(1, v) },
  { where: 'chat.addChatMessage(message)', kinds: ['options'], call: (f, v) => f.store.addChatMessage(v) },
  { where: 'chat.addChatMessage({ chatId })', kinds: ['id'], call: (f, v) => f.store.addChatMessage({ chatId: v, senderId: 1, text: 'hi' }) },
  { where: 'chat.addChatMessage({ senderId })', kinds: ['id'], call: (f, v) => f.store.addChatMessage({ chatId: 1, senderId: v, text: 'hi' }) },
  { where: 'chat.addChatMessage({ text })', kinds: ['string'], call: (f, v) => f.store.addChatMessage({ chatId: 1, senderId: 1, text: v }) },
  { where: 'chat.addChatMessage({ timestamp })', kinds: ['number'], call: (f, v) => f.store.addChatMessage({ chatId: 1, senderId: 1, text: 'hi', timestamp: v }) },
  { where: 'chat.addChatMessage({ recipients })', kinds: ['ids'], call: (f, v) => f.store.addChatMessage({ chatId: 1, senderId: 1, text: 'hi', recipients: v }) },
  { where: 'chat.addChatMessage({ recipients: [id] })', kinds: ['id'], call: (f, v) => f.store.addChatMessage({ chatId: 1, senderId: 1, text: 'hi', recipients: [2, v] }) },
  { where: 'chat.getChatMessages(chatId)', kinds: ['id'], call: (f, v) => f.store.getChatMessages(v) },
  { where: 'chat.getChatMessages(chatId, options)', kinds: ['options'], call: (f, v) => f.store.getChatMessages(1, v) },
  { where: 'chat.getChatMessages(chatId, { from })', kinds: ['id'], call: (f, v) => f.store.getChatMessages(1, { from: v }) },
  { where: 'chat.getChatMessages(chatId, { to })', kinds: ['id'], call: (f, v) => f.store.getChatMessages(1, { to: v }) },
  { where: 'chat.getChatMessages(chatId, { n })', kinds: ['id'], call: (f, v) => f.store.getChatMessages(1, { n: v }) },
  { where: 'chat.getChatMessages(chatId, { viewerId })', kinds: ['id'], call: (f, v) => f.store.getChatMessages(1, { viewerId: v }) },
  { where: 'chat.watch(chatId)', kinds: ['id'], watch: true, sync: true, call: (f, v) => f.store.watch(v) },
  { where: 'chat.watch(chatId, options)', kinds: ['options'], watch: true, sync: true, wake: wakeChat, call: (f, v) => f.store.watch(1, v) },
  { where: 'chat.watch(chatId, { after })', kinds: ['nonneg'], watch: true, sync: true, call: (f, v) => f.store.watch(1, { after: v, signal: f.aborted }) },
  { where: 'chat.watch(chatId, { signal })', kinds: ['signal'], watch: true, sync: true, call: (f, v) => f.store.watch(1, { after: 0, signal: v }) },
  { where: 'chat.watch(chatId, { viewerId })', kinds: ['id'], watch: true, sync: true, call: (f, v) => f.store.watch(1, { viewerId: v, after: 0, signal: f.aborted }) }
]

function noop () {}

/** @param {any} f */
function wakeChat (f) {
  return f.store.addChatMessage({ chatId: 1, senderId: 1, text: 'wake' })
}

/** A ChatStore on a database of its own (it declares fixed model names). @param {any} f @param {unknown} options */
function construct (f, options) {
  const db = f.spare()
  return new ChatStore(db, /** @type {any} */ (options))
}

/** The models the model positions use, with a little data. @param {any} common */
export async function modelFixture (common) {
  const db = await common.open()
  const users = db.collection('users', {
    indexes: {
      username: { unique: true, key: (/** @type {any} */ u) => u.username },
      byAge: { key: (/** @type {any} */ u) => u.age === undefined ? undefined : [u.age] },
      tags: { key: (/** @type {any} */ u) => u.tags, multi: true }
    }
  })
  const people = db.collection('people', { id: (/** @type {any} */ p) => p.name, indexes: { email: { unique: true, covering: true, key: (/** @type {any} */ p) => p.email } } })
  const chats = db.collection('chats')
  const members = db.relation('members', { from: chats, to: users })
  const follows = db.relation('follows', { from: people, to: people, lists: ['from', 'to'] })
  const messages = db.children('messages', { parent: chats })
  const notes = db.children('notes', { parent: people, blockSize: 4 })
  const hits = db.counter('hits')
  for (const [username, age] of /** @type {Array<[string, number]>} */ ([['a', 30], ['b', 40], ['c', 50]])) await users.insert({ username, age, tags: ['t'] })
  await people.insert({ name: 'ann', email: 'ann@x' })
  await people.insert({ name: 'bob', email: 'bob@x' })
  await chats.insert({ name: 'one' })
  await chats.insert({ name: 'two' })
  await members.add(1, 1)
  await members.add(1, 2)
  await follows.add('ann', 'bob')
  for (const text of ['a', 'b', 'c']) await messages.append(1, text)
  for (const text of ['a', 'b', 'c', 'd', 'e']) await notes.append('ann', text)
  await hits.add('k', 2)
  return { db, users, people, chats, members, follows, messages, notes, hits, aborted: AbortSignal.abort() }
}

/** A chat store with three users, a chat of two, a private chat, messages and a session. @param {any} common */
export async function chatFixture (common) {
  const db = await common.open()
  const store = new ChatStore(db, CHAT_OPTIONS)
  for (const username of ['alice', 'bob', 'carol']) await store.createUser({ username, password: 'pw' })
  await store.createChat({ name: 'one', adminId: 1, userIds: [2] })
  await store.createChat({ name: 'private', adminId: 1, password: 'secret' })
  for (const text of ['hi', 'there']) await store.addChatMessage({ chatId: 1, senderId: 1, text })
  await store.setUserSession({ sessionId: 's1', userId: 1, expiry: 1e15 })
  /** @type {any[]} */
  const spares = []
  return {
    db,
    store,
    aborted: AbortSignal.abort(),
    // Databases for constructors, opened ahead (a constructor is synchronous).
    spares,
    spare: () => spares.shift()
  }
}

/**
 * Run `position` with `hostile` and return what is wrong with the outcome
 * (nothing when it is right).
 * @param {any} f the fixture @param {Position} position @param {import('./values.js').Hostile} hostile
 * @returns {Promise<string[]>}
 */
export async function attempt (f, position, hostile) {
  const problems = []
  const accepted = position.kinds.every(kind => hostile.accepts.includes(kind))
  const before = f.db ? await dump(f.db) : null
  /** @type {{ ok: true } | { ok: false, error: unknown } | { timedOut: true }} */
  let outcome
  let result
  let threw = false
  try {
    result = position.call(f, hostile.make())
  } catch (err) {
    threw = true
    if (!position.sync) problems.push('threw synchronously instead of rejecting')
    outcome = { ok: false, error: err }
  }
  if (!threw) {
    if (position.query) outcome = await runQuery(result)
    else if (position.watch) outcome = await runWatch(f, position, result)
    else if (result instanceof Promise) outcome = await settle(result)
    else {
      if (!position.sync) problems.push('did not return a promise')
      outcome = { ok: true }
    }
  }
  if (outcome === undefined) throw new Error('no outcome')
  if ('timedOut' in outcome) {
    problems.push(`did not settle within ${SETTLE_MS} ms`)
  } else if (outcome.ok) {
    if (!accepted) problems.push('accepted it')
  } else {
    if (!isCoded(outcome.error)) problems.push(`failed with ${show(outcome.error)}`)
    if (before !== null) {
      await quiesce(f.db)
      if (!sameEntries(before, await dump(f.db))) problems.push('wrote something although it failed')
    }
  }
  return problems
}

/** @param {unknown} query */
async function runQuery (query) {
  const runs = [
    async (/** @type {any} */ q) => { for await (const item of q) noop(item) },
    async (/** @type {any} */ q) => { for await (const entry of q.entries()) noop(entry) },
    async (/** @type {any} */ q) => { for await (const key of q.keys()) noop(key) },
    (/** @type {any} */ q) => q.all(),
    (/** @type {any} */ q) => q.page(),
    (/** @type {any} */ q) => q.count()
  ]
  for (const run of runs) {
    let promise
    try {
      promise = run(query)
    } catch (err) {
      return { ok: false, error: err }
    }
    const outcome = await settle(promise)
    if (!('ok' in outcome) || !outcome.ok) return outcome
  }
  return { ok: true }
}

/** @param {any} f @param {Position} position @param {any} iterator */
async function runWatch (f, position, iterator) {
  if (iterator === null || typeof iterator !== 'object' || typeof iterator.next !== 'function') {
    return { ok: false, error: new Error('watch() did not return an iterator') }
  }
  const first = iterator.next()
  const early = await settle(first, WATCH_WAIT_MS)
  if (!('timedOut' in early)) {
    if (early.ok) await settle(iterator.return())
    return early
  }
  // Waiting for a child: it took its arguments. Give it one, then end it.
  if (position.wake) await position.wake(f)
  const woken = await settle(first)
  if ('timedOut' in woken) return woken
  await settle(iterator.return())
  return woken
}

/**
 * @param {Promise<unknown>} promise @param {number} [ms]
 * @returns {Promise<{ ok: true } | { ok: false, error: unknown } | { timedOut: true }>}
 */
function settle (promise, ms = SETTLE_MS) {
  return new Promise(resolve => {
    const timer = setTimeout(() => resolve({ timedOut: true }), ms)
    Promise.resolve(promise).then(
      () => { clearTimeout(timer); resolve({ ok: true }) },
      error => { clearTimeout(timer); resolve({ ok: false, error }) }
    )
  })
}

/** Wait until no write of the database is queued or unwritten. @param {any} db */
async function quiesce (db) {
  try {
    await db.write(noop)
  } catch {}
}

/** @param {unknown} err */
function isCoded (err) {
  try {
    return err instanceof Error && CODES.has(/** @type {any} */ (err).code)
  } catch {
    return false
  }
}

/** @param {unknown} err */
function show (err) {
  try {
    if (err instanceof Error) return `${err.name}${/** @type {any} */ (err).code ? ` [${/** @type {any} */ (err).code}]` : ''}: ${err.message.slice(0, 160)}`
    return `a thrown ${typeof err}`
  } catch {
    return 'a thrown value that cannot be shown'
  }
}

/** Every raw entry of the database. @param {any} db @returns {Promise<Array<[Uint8Array, Uint8Array]>>} */
function dump (db) {
  return db.level.iterator({ keyEncoding: 'view', valueEncoding: 'view' }).all()
}

/** @param {Array<[Uint8Array, Uint8Array]>} a @param {Array<[Uint8Array, Uint8Array]>} b */
function sameEntries (a, b) {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) {
    if (!sameBytes(a[i][0], b[i][0]) || !sameBytes(a[i][1], b[i][1])) return false
  }
  return true
}

/** @param {Uint8Array} a @param {Uint8Array} b */
function sameBytes (a, b) {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/**
 * The suite: per hostile value, a fresh database for the model positions and
 * one for the chat positions; every position tried; each failure listed.
 * @param {any} test
 * @param {{ backend: string, open: () => Promise<any> }} common
 * @param {{ onCount?: (failures: number, calls: number) => void }} [report]
 */
export function hostileSuite (test, common, report = {}) {
  let failures = 0
  let calls = 0
  for (const hostile of HOSTILE) {
    test(`${common.backend}: hostile input: ${hostile.name}, in every argument of every public method`, async (/** @type {any} */ t) => {
      /** @type {string[]} */
      const found = []
      const models = await modelFixture(common)
      for (const position of MODEL_POSITIONS) {
        calls++
        for (const problem of await attempt(models, position, hostile)) found.push(`${position.where}: ${problem}`)
      }
      await models.db.close()
      const chat = await chatFixture(common)
      for (const position of CHAT_POSITIONS) {
        calls++
        if (position.where.includes('ChatStore(db, ') || position.where.startsWith('ChatStore.open')) chat.spares.push(await common.open())
        for (const problem of await attempt(chat, position, hostile)) found.push(`${position.where}: ${problem}`)
        for (const spare of chat.spares.splice(0)) await spare.close()
      }
      await chat.db.close()
      failures += found.length
      for (const line of found) t.comment(line)
      t.is(found.length, 0, `${MODEL_POSITIONS.length + CHAT_POSITIONS.length} calls: none throws synchronously from an async method, fails without a documented code, writes on failure, hangs, or accepts it where it is not valid`)
    })
  }
  test(`${common.backend}: hostile input: the count`, async (/** @type {any} */ t) => {
    t.comment(`${failures} failure(s) in ${calls} hostile calls on ${common.backend}`)
    report.onCount?.(failures, calls)
    t.pass('counted')
  })
}
