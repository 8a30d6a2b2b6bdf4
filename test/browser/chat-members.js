// Chats and their members as the IndexedDB entries of the browser tests
// declare them (a relation with lists both ways, as ChatStore's members),
// and every edge read back from both sides.

import { open } from '../../browser.js'

/**
 * A database levelkit opens at `location` with users, chats and members.
 * @param {string} location @param {object} [options] more open() options
 */
export async function openChats (location, options = {}) {
  const db = await open({ location, ...options })
  const users = db.collection('users')
  const chats = db.collection('chats')
  const members = db.relation('members', { from: chats, to: users, lists: ['from', 'to'] })
  return { db, users, chats, members }
}

/** `n` users named u1, u2, ... @param {number} n */
export const people = n => Array.from({ length: n }, (_, i) => ({ name: `u${i + 1}` }))

/** Each of `chatIds`' members, and each user's chats among them, as the relation answers both ways. @param {any} s @param {number[]} chatIds @param {number} userCount */
export async function edges (s, chatIds, userCount) {
  const forward = []
  for (const chat of chatIds) for (const user of await s.members.to(chat).all()) forward.push(`${chat}>${user}`)
  const reverse = []
  for (let user = 1; user <= userCount; user++) for (const chat of await s.members.from(user).all()) if (chatIds.includes(chat)) reverse.push(`${chat}>${user}`)
  return { forward: forward.sort(), reverse: reverse.sort() }
}

/** 30 chats' members among users 1..60: up to 20 each, sorted, no repeats. */
export const memberRows = () => Array.from({ length: 30 }, (_, c) => Array.from({ length: 20 }, (_, k) => 1 + ((c * 7 + k * 3) % 60)).filter((u, i, all) => all.indexOf(u) === i).sort((a, b) => a - b))

/**
 * A bulk load in one db.write(): a chat per row of `rows`, its members
 * added with addMany(); the new chats' ids.
 * @param {any} s @param {number[][]} rows
 * @returns {Promise<number[]>}
 */
export function loadChats (s, rows) {
  return s.db.write(async (/** @type {any} */ w) => {
    const ids = []
    for (const members of rows) {
      const id = await s.chats.in(w).insert({ title: 'c' })
      await s.members.in(w).addMany(id, members)
      ids.push(id)
    }
    return ids
  })
}
