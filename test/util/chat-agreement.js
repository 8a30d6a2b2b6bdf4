import { numeric } from './common.js'

const show = (/** @type {unknown} */ value) => JSON.stringify(value)

/**
 * Everything that must agree with the chats' member lists: the edges in both
 * directions, getChat, getChats (its set and order), checkChatMember for
 * every chat id up to maxChatId, and existsChat for every pair of users.
 * @param {any} store a ChatStore
 * @param {Array<{ id: number, members: number[] }>} chats the chats that exist
 * @param {number[]} userIds
 * @param {number} maxChatId the highest chat id ever handed out
 * @returns {Promise<string[]>} problems found
 */
export async function membershipProblems (store, chats, userIds, maxChatId) {
  const problems = []
  const byId = new Map(chats.map(c => [c.id, c]))
  for (const chat of chats) {
    const unique = [...new Set(chat.members)].sort(numeric)
    if (show(chat.members) !== show(unique)) problems.push(`chat ${chat.id}: members ${show(chat.members)} not sorted or not unique`)
    if (chat.members.length > store.options.maxMembers) problems.push(`chat ${chat.id}: ${chat.members.length} members, more than ${store.options.maxMembers}`)
    const edges = await store.members.to(chat.id).all()
    if (show(edges) !== show(chat.members)) problems.push(`members.to(${chat.id}) is ${show(edges)}, the chat lists ${show(chat.members)}`)
    const got = await store.getChat(chat.id)
    if (got === null || show(got.members) !== show(chat.members) || 'passwordHash' in got) problems.push(`getChat(${chat.id}) is ${show(got)}`)
  }
  for (const u of userIds) {
    const want = chats.filter(c => c.members.includes(u)).map(c => c.id).sort(numeric)
    const from = await store.members.from(u).all()
    if (show(from) !== show(want)) problems.push(`members.from(${u}) is ${show(from)}, expected ${show(want)}`)
    const listed = await store.getChats(u)
    const ids = listed.map((/** @type {any} */ c) => c.id).sort(numeric)
    if (show(ids) !== show(want)) problems.push(`getChats(${u}) gives chats ${show(ids)}, expected ${show(want)}`)
    if (listed.some((/** @type {any} */ c) => 'passwordHash' in c || !c.members.includes(u))) problems.push(`getChats(${u}) gives a chat with a password hash or without the user`)
    for (let i = 1; i < listed.length; i++) {
      const a = listed[i - 1]
      const b = listed[i]
      if (a.lastActivity < b.lastActivity || (a.lastActivity === b.lastActivity && a.id < b.id)) problems.push(`getChats(${u}) is not ordered by lastActivity, id descending`)
    }
    for (let c = 1; c <= maxChatId + 1; c++) {
      const member = byId.has(c) && byId.get(c).members.includes(u)
      if (await store.checkChatMember(c, u) !== member) problems.push(`checkChatMember(${c}, ${u}) is ${!member}, expected ${member}`)
    }
  }
  for (const a of userIds) {
    for (const b of userIds) {
      const want = a !== b && chats.some(c => c.members.length === 2 && c.members.includes(a) && c.members.includes(b))
      if (await store.existsChat(a, b) !== want) problems.push(`existsChat(${a}, ${b}) is ${!want}, expected ${want}`)
    }
  }
  return problems
}
