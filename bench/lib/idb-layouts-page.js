/* global indexedDB */
// The page of bench/idb-layouts.js: raw IndexedDB, no library. createChat
// with --members members and a cold "user's chats" in five layouts, each
// on its own object stores of one database:
//
// - A, levelkit's today (ChatStore's `lists: ['from', 'to']`): in the one
//   object store browser-level keeps, the chat record, the chats' sequence,
//   the chat's member list and each member's list of chats (one put each,
//   bytes under binary keys, as lib/idb-direct.js writes them, the lists as
//   the lease cache holds them); a user's chats: the user's list, then the
//   chats' records.
// - B, Dexie's (bench/lib/browser-workload-dexie.js): the members read,
//   then one add() of a chat record whose `members` multiEntry index
//   IndexedDB keeps; a user's chats: one getAll() on that index.
// - C, the chats' records in an object store of their own with a native
//   multiEntry index on their members (and the sequence in the main store):
//   two puts; a user's chats: one getAll() on the index.
// - D, each user's list of chats in buckets of 256 user ids: the chat, the
//   sequence, the chat's member list, and one put per bucket touched (its
//   reads are A's, but for the bucket's larger value: not measured).
// - E, the relation's lists in an object store of their own with a native
//   multiEntry index over the listed ids (the records stay where they are):
//   three puts; a user's chats: getAllKeys() on the index, then the chats.
//   This is what levelkit does since session 13 (lib/idb-direct.js mirror()).
// - F, E with a copy of the from-record (the chat) in its list's entry:
//   a user's chats are one getAll() on the index, as in B and C; every
//   rewrite of a chat record also rewrites that entry (and IndexedDB its
//   index entries).
//
// Two more kinds of work, to weigh what a layout costs elsewhere: a chat
// record rewritten (what addChatMessage writes: its lastActivity, no read),
// and createUser with a unique username: A (levelkit today) add()s the
// username's entry and puts the record, bytes under binary keys in the one
// store; B (Dexie) add()s an object to a store with a unique index; C puts
// the record in an object store of its own with a native unique index on
// the username (one add()).
//
// And a bulk load of chats (bench/browser-workload.js' preload: --bulk chats
// in one readwrite transaction, no reads), in the layouts levelkit has or
// could have since the lists store got its slots (session 20): G,
// levelkit's today: the record and the member list in browser-level's
// store, and the list's entry in the lists store (`{ s0: ids, v: record }`
// under [slot, key], its store with the `ids` index and eight slot
// indexes, as lib/idb-open.js makes it): three puts per chat; H, G without
// the member list in browser-level's store (the entry is the list): two;
// C, B as above: one put or add() per chat.
//
// Everything a layout needs to stay right (the users' existence, a
// unique id) is what its library reads: A and C and E as levelkit's lease
// cache would (nothing), B as Dexie does (the members read).

const encoder = new TextEncoder()
const decoder = new TextDecoder()
const STORE = 'level'
const BUCKET = 256

/** @param {string} namespace @param {number} id */
const keyOf = (namespace, id) => encoder.encode(`!${namespace}!${String(id).padStart(10, '0')}`)
/** @param {IDBTransaction} tx */
const done = tx => new Promise((resolve, reject) => { tx.oncomplete = resolve; tx.onerror = () => reject(tx.error); tx.onabort = () => reject(tx.error) })
/** @param {IDBRequest} request @returns {Promise<any>} */
const settled = request => new Promise((resolve, reject) => { request.onsuccess = () => resolve(request.result); request.onerror = () => reject(request.error) })

/** @type {IDBDatabase} */
let db
let users = 0
let members = 0
let chats = 0
let seed = 1
/** @type {Map<number, Uint8Array>} each user's list of chats, as the lease cache holds it (A) */
const lists = new Map()
/** @type {Map<number, Uint8Array>} each bucket's lists (D) */
const buckets = new Map()
/** @type {Map<number, number[]>} each user's chats of layout A, to read back */
const chatsOf = new Map()
/** @type {Record<string, Array<[number, number[]]>>} the chats each layout created, with their members (to rewrite) */
const created = { A: [], B: [], C: [], D: [], E: [], F: [] }
let userIds = 0

const random = () => {
  seed = (seed * 48271) % 2147483647
  return seed / 2147483647
}
const someMembers = () => {
  const chosen = new Set()
  while (chosen.size < members) chosen.add(1 + Math.floor(random() * users))
  return [...chosen].sort((a, b) => a - b)
}
/** @param {number} id @param {number[]} ids */
const chatJson = (id, ids) => JSON.stringify({ id, name: `chat ${id}`, adminId: ids[0], members: ids, lastActivity: Date.now(), createdAt: Date.now(), private: false, passwordHash: null })
/** A list of `count` sequence ids as levelkit stores one (9 bytes each). @param {number} count */
const listBytes = count => new Uint8Array(2 + 9 * count)

/** @param {{ users: number, members: number, seed: number }} config */
async function setup (config) {
  users = config.users
  members = config.members
  seed = config.seed
  db = await new Promise((resolve, reject) => {
    const request = indexedDB.open(`layouts-${Date.now()}`, 1)
    request.onupgradeneeded = () => {
      const d = request.result
      d.createObjectStore(STORE)
      d.createObjectStore('users', { keyPath: 'id' })
      d.createObjectStore('dexieChats', { keyPath: 'id', autoIncrement: true }).createIndex('members', 'members', { multiEntry: true })
      d.createObjectStore('chats').createIndex('members', 'members', { multiEntry: true })
      d.createObjectStore('lists').createIndex('to', 'to', { multiEntry: true })
      d.createObjectStore('listsF').createIndex('to', 'to', { multiEntry: true })
      d.createObjectStore('dexieUsers', { keyPath: 'id', autoIncrement: true }).createIndex('username', 'username', { unique: true })
      d.createObjectStore('ownUsers').createIndex('username', 'username', { unique: true })
      const slotted = d.createObjectStore('slotted')
      slotted.createIndex('ids', 'ids', { multiEntry: true })
      for (let k = 0; k < 8; k++) slotted.createIndex(`s${k}`, `s${k}`, { multiEntry: true })
    }
    request.onsuccess = () => resolve(request.result)
    request.onerror = () => reject(request.error)
  })
  const tx = db.transaction(['users', STORE], 'readwrite')
  for (let u = 1; u <= users; u++) {
    tx.objectStore('users').put({ id: u, username: `user${u}`, createdAt: 1 })
    tx.objectStore(STORE).put(encoder.encode(JSON.stringify({ username: `user${u}` })), keyOf('users', u))
  }
  await done(tx)
}

/** @param {number} chatId @param {number[]} ids */
function remember (chatId, ids) {
  for (const u of ids) {
    const of = chatsOf.get(u)
    if (of === undefined) chatsOf.set(u, [chatId])
    else of.push(chatId)
  }
}

/** @type {Record<string, () => Promise<void>>} */
const CREATE = {
  async A () {
    const id = ++chats
    const ids = someMembers()
    const tx = db.transaction(STORE, 'readwrite')
    const store = tx.objectStore(STORE)
    store.put(encoder.encode(chatJson(id, ids)), keyOf('chats', id))
    store.put(encoder.encode(String(id)), keyOf('chats.seq', 0))
    store.put(listBytes(ids.length), keyOf('members.list.to', id))
    for (const u of ids) {
      const list = listBytes(((lists.get(u)?.length ?? 2) - 2) / 9 + 1)
      lists.set(u, list)
      store.put(list, keyOf('members.list.from', u))
    }
    tx.commit()
    await done(tx)
    remember(id, ids)
    created.A.push([id, ids])
  },
  async B () {
    const ids = someMembers()
    const tx = db.transaction(['users', 'dexieChats'], 'readwrite')
    const found = await Promise.all(ids.map(u => settled(tx.objectStore('users').get(u))))
    if (found.includes(undefined)) throw new Error('a member is missing')
    const id = await settled(tx.objectStore('dexieChats').add({ name: 'chat', adminId: ids[0], members: ids, lastActivity: Date.now(), createdAt: Date.now(), private: false, passwordHash: null }))
    await done(tx)
    created.B.push([id, ids])
  },
  async C () {
    const id = ++chats
    const ids = someMembers()
    const tx = db.transaction([STORE, 'chats'], 'readwrite')
    tx.objectStore('chats').put({ members: ids, record: chatJson(id, ids) }, keyOf('chats', id))
    tx.objectStore(STORE).put(encoder.encode(String(id)), keyOf('chats.seq', 0))
    tx.commit()
    await done(tx)
    created.C.push([id, ids])
  },
  async D () {
    const id = ++chats
    const ids = someMembers()
    const tx = db.transaction(STORE, 'readwrite')
    const store = tx.objectStore(STORE)
    store.put(encoder.encode(chatJson(id, ids)), keyOf('chats', id))
    store.put(encoder.encode(String(id)), keyOf('chats.seq', 0))
    store.put(listBytes(ids.length), keyOf('members.list.to', id))
    for (const bucket of new Set(ids.map(u => Math.floor(u / BUCKET)))) {
      const added = ids.filter(u => Math.floor(u / BUCKET) === bucket).length
      const value = new Uint8Array((buckets.get(bucket)?.length ?? BUCKET * 11) + 9 * added)
      buckets.set(bucket, value)
      store.put(value, keyOf('members.buckets', bucket))
    }
    tx.commit()
    await done(tx)
  },
  async E () {
    const id = ++chats
    const ids = someMembers()
    const tx = db.transaction([STORE, 'lists'], 'readwrite')
    const store = tx.objectStore(STORE)
    store.put(encoder.encode(chatJson(id, ids)), keyOf('chats', id))
    store.put(encoder.encode(String(id)), keyOf('chats.seq', 0))
    tx.objectStore('lists').put({ to: ids.map(u => ['members', u]) }, keyOf('members.list.to', id))
    tx.commit()
    await done(tx)
    created.E.push([id, ids])
  },
  async F () {
    const id = ++chats
    const ids = someMembers()
    const tx = db.transaction([STORE, 'listsF'], 'readwrite')
    const store = tx.objectStore(STORE)
    const record = encoder.encode(chatJson(id, ids))
    store.put(record, keyOf('chats', id))
    store.put(encoder.encode(String(id)), keyOf('chats.seq', 0))
    tx.objectStore('listsF').put({ to: ids.map(u => ['members', u]), record }, keyOf('members.list.to', id))
    tx.commit()
    await done(tx)
    created.F.push([id, ids])
  }
}

/** A chat this layout created, at random. @param {string} layout */
const someChat = layout => created[layout][Math.floor(random() * created[layout].length)]

/** The chat record of a layout that keeps it in browser-level's store (A, E), rewritten. @param {string} layout */
const rewriteRecord = layout => async () => {
  const [id, ids] = someChat(layout)
  const tx = db.transaction(STORE, 'readwrite')
  tx.objectStore(STORE).put(encoder.encode(chatJson(id, ids)), keyOf('chats', id))
  tx.commit()
  await done(tx)
}

/** @type {Record<string, () => Promise<void>>} a chat record rewritten, no read */
const UPDATE = {
  A: rewriteRecord('A'),
  async B () {
    const [id, ids] = someChat('B')
    const tx = db.transaction('dexieChats', 'readwrite')
    tx.objectStore('dexieChats').put({ id, name: 'chat', adminId: ids[0], members: ids, lastActivity: Date.now(), createdAt: Date.now(), private: false, passwordHash: null })
    tx.commit()
    await done(tx)
  },
  async C () {
    const [id, ids] = someChat('C')
    const tx = db.transaction('chats', 'readwrite')
    tx.objectStore('chats').put({ members: ids, record: chatJson(id, ids) }, keyOf('chats', id))
    tx.commit()
    await done(tx)
  },
  E: rewriteRecord('E'),
  async F () {
    const [id, ids] = someChat('F')
    const tx = db.transaction([STORE, 'listsF'], 'readwrite')
    const record = encoder.encode(chatJson(id, ids))
    tx.objectStore(STORE).put(record, keyOf('chats', id))
    tx.objectStore('listsF').put({ to: ids.map(u => ['members', u]), record }, keyOf('members.list.to', id))
    tx.commit()
    await done(tx)
  }
}

/** @param {number} id */
const userJson = id => JSON.stringify({ username: `user-${id}`, passwordHash: `pbkdf2-sha256$1$${'x'.repeat(64)}`, createdAt: Date.now() })

/** @type {Record<string, () => Promise<void>>} createUser with a unique username, no read */
const USER = {
  async A () {
    const id = ++userIds
    const tx = db.transaction(STORE, 'readwrite')
    const store = tx.objectStore(STORE)
    store.add(encoder.encode(String(id)), encoder.encode(`!users.idx.username!user-${id}`))
    store.put(encoder.encode(userJson(id)), keyOf('users.records', id))
    tx.commit()
    await done(tx)
  },
  async B () {
    const id = ++userIds
    const tx = db.transaction('dexieUsers', 'readwrite')
    tx.objectStore('dexieUsers').add({ username: `user-${id}`, passwordHash: `pbkdf2-sha256$1$${'x'.repeat(64)}`, createdAt: Date.now() })
    tx.commit()
    await done(tx)
  },
  async C () {
    const id = ++userIds
    const tx = db.transaction('ownUsers', 'readwrite')
    tx.objectStore('ownUsers').add({ username: `user-${id}`, record: encoder.encode(userJson(id)) }, keyOf('users', id))
    tx.commit()
    await done(tx)
  }
}

/** @type {Record<string, (user: number) => Promise<number>>} how many chats each answers */
const COLD = {
  async A (user) {
    const tx = db.transaction(STORE, 'readonly')
    const store = tx.objectStore(STORE)
    await settled(store.get(keyOf('members.list.from', user)))
    const ids = chatsOf.get(user) ?? []
    return (await Promise.all(ids.map(id => settled(store.get(keyOf('chats', id)))))).length
  },
  async B (user) {
    const tx = db.transaction('dexieChats', 'readonly')
    return (await settled(tx.objectStore('dexieChats').index('members').getAll(user))).length
  },
  async C (user) {
    const tx = db.transaction('chats', 'readonly')
    return (await settled(tx.objectStore('chats').index('members').getAll(user))).length
  },
  async E (user) {
    const tx = db.transaction([STORE, 'lists'], 'readonly')
    const keys = await settled(tx.objectStore('lists').index('to').getAllKeys(['members', user]))
    const store = tx.objectStore(STORE)
    const ids = keys.map((/** @type {ArrayBuffer} */ key) => Number(decoder.decode(key).slice(-10)))
    return (await Promise.all(ids.map((/** @type {number} */ id) => settled(store.get(keyOf('chats', id)))))).length
  },
  async F (user) {
    const tx = db.transaction('listsF', 'readonly')
    // The records, as the other layouts' reads answer them (not decoded).
    const entries = await settled(tx.objectStore('listsF').index('to').getAll(['members', user]))
    return entries.map((/** @type {{ record: Uint8Array }} */ entry) => entry.record).length
  }
}

/** A sorted list of ids as levelkit stores one (4 bytes each here). @param {number[]} ids */
const idBytes = ids => {
  const bytes = new Uint8Array(4 * ids.length)
  const view = new DataView(bytes.buffer)
  ids.forEach((id, i) => view.setUint32(4 * i, id))
  return bytes
}

/** @type {Record<string, (tx: IDBTransaction) => void>} one chat of a bulk load, no read */
const BULK = {
  G (tx) {
    const id = ++chats
    const ids = someMembers()
    const record = chatJson(id, ids)
    tx.objectStore(STORE).put(encoder.encode(record), keyOf('chats', id))
    tx.objectStore(STORE).put(idBytes(ids), keyOf('members.list.to', id))
    tx.objectStore('slotted').put({ s0: ids, v: record }, [0, keyOf('members.list.to', id)])
  },
  H (tx) {
    const id = ++chats
    const ids = someMembers()
    const record = chatJson(id, ids)
    tx.objectStore(STORE).put(encoder.encode(record), keyOf('chats', id))
    tx.objectStore('slotted').put({ s0: ids, v: record }, [0, keyOf('members.list.to', id)])
  },
  C (tx) {
    const id = ++chats
    const ids = someMembers()
    tx.objectStore('chats').put({ members: ids, record: chatJson(id, ids) }, keyOf('chats', id))
  },
  B (tx) {
    const ids = someMembers()
    tx.objectStore('dexieChats').add({ name: 'chat', adminId: ids[0], members: ids, lastActivity: Date.now(), createdAt: Date.now(), private: false, passwordHash: null })
  }
}

/**
 * `n` chats of one layout in one transaction (the sequence put once, where
 * the layout keeps one): ms until it completes.
 * @param {string} layout @param {number} n
 */
async function bulk (layout, n) {
  const start = performance.now()
  const tx = db.transaction([STORE, 'slotted', 'chats', 'dexieChats'], 'readwrite')
  for (let i = 0; i < n; i++) BULK[layout](tx)
  if (layout !== 'B') tx.objectStore(STORE).put(encoder.encode(String(chats)), keyOf('chats.seq', 0))
  tx.commit()
  await done(tx)
  return { ms: performance.now() - start }
}

/**
 * `n` operations of one layout, awaited one by one: ops/s, and the chats
 * the reads found.
 * @param {'create' | 'update' | 'user' | 'cold'} kind @param {string} layout @param {number} n
 */
async function slice (kind, layout, n) {
  let found = 0
  const start = performance.now()
  if (kind === 'create') {
    for (let i = 0; i < n; i++) await CREATE[layout]()
  } else if (kind === 'update') {
    for (let i = 0; i < n; i++) await UPDATE[layout]()
  } else if (kind === 'user') {
    for (let i = 0; i < n; i++) await USER[layout]()
  } else {
    for (let i = 0; i < n; i++) found += await COLD[layout](1 + Math.floor(random() * users))
  }
  return { opsPerSec: n / ((performance.now() - start) / 1000), found }
}

/** @type {any} */ (window).idbLayouts = { setup, slice, bulk, close: () => db.close() }
