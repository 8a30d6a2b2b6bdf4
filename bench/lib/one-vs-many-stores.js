// The two layouts of bench/one-vs-many.js, shared by its throughput worker
// (bench/lib/one-vs-many-worker.js), its kill-test writer
// (bench/fixtures/one-vs-many-writer.js) and the parent's consistency check.
//
// Four namespaces:
//   users      <user>                  JSON { name }          (preloaded, read-only here)
//   messages   <chat>!<seq>            JSON { from, text, ts }
//   counters   <chat>                  message count of the chat (decimal)
//   by-sender  <user>!<chat>!<seq>     '' (an index entry)
// One "send" writes three of them: the message, the chat's counter and the
// index entry. Chats are 6 digits, seqs 10, users 'u' + 6 digits (zero
// padded, so byte order is numeric order).
//
//   one   one classic-level database, one sublevel per namespace; a send is
//         ONE array batch of 3 ops (atomic: LevelDB writes it as one record
//         of its write-ahead log)
//   many  one classic-level database per namespace (4 directories); a send is
//         one batch per store (3 batches of 1 op), issued together
//         (Promise.all, `parallel`, the default) or one after the other
//         (`sequential`). Nothing makes the three atomic.

import path from 'node:path'
import { ClassicLevel } from 'classic-level'

export const NAMESPACES = ['users', 'messages', 'counters', 'by-sender']
export const LAYOUTS = ['one', 'many']

export const chatKey = (/** @type {number} */ chat) => String(chat).padStart(6, '0')
export const seqKey = (/** @type {number} */ seq) => String(seq).padStart(10, '0')
export const userKey = (/** @type {number} */ user) => 'u' + String(user).padStart(6, '0')

/**
 * @typedef {{ chat: number, seq: number, from: number, text: string, ts: number }} Send
 * @typedef {{
 *   stores: Record<string, any>,
 *   dbs: any[],
 *   send: (s: Send) => Promise<unknown>,
 *   close: () => Promise<void>
 * }} Layout
 */

/**
 * Open a layout under `dir` (created if missing).
 * @param {'one' | 'many'} layout @param {string} dir
 * @param {{ manyWrite?: 'parallel' | 'sequential', levelOptions?: Record<string, unknown> }} [options]
 * @returns {Promise<Layout>}
 */
export async function openLayout (layout, dir, options = {}) {
  const levelOptions = options.levelOptions || {}
  /** @type {Record<string, any>} */
  const stores = {}
  /** @type {any[]} */
  let dbs
  if (layout === 'one') {
    const db = new ClassicLevel(path.join(dir, 'db'), { ...levelOptions, createIfMissing: true })
    await db.open()
    for (const ns of NAMESPACES) {
      stores[ns] = db.sublevel(ns)
      await stores[ns].open() // a new sublevel opens asynchronously
    }
    dbs = [db]
  } else if (layout === 'many') {
    dbs = []
    for (const ns of NAMESPACES) {
      const db = new ClassicLevel(path.join(dir, ns), { ...levelOptions, createIfMissing: true })
      await db.open()
      stores[ns] = db
      dbs.push(db)
    }
  } else {
    throw new Error(`Unknown layout ${JSON.stringify(layout)}`)
  }
  const { messages, counters } = stores
  const bySender = stores['by-sender']

  /** @type {(s: Send) => Promise<unknown>} */
  let send
  if (layout === 'one') {
    const root = dbs[0]
    send = s => root.batch([
      { type: 'put', sublevel: messages, key: `${chatKey(s.chat)}!${seqKey(s.seq)}`, value: JSON.stringify({ from: userKey(s.from), text: s.text, ts: s.ts }) },
      { type: 'put', sublevel: counters, key: chatKey(s.chat), value: String(s.seq) },
      { type: 'put', sublevel: bySender, key: `${userKey(s.from)}!${chatKey(s.chat)}!${seqKey(s.seq)}`, value: '' }
    ])
  } else if (options.manyWrite === 'sequential') {
    send = async s => {
      await messages.batch([{ type: 'put', key: `${chatKey(s.chat)}!${seqKey(s.seq)}`, value: JSON.stringify({ from: userKey(s.from), text: s.text, ts: s.ts }) }])
      await counters.batch([{ type: 'put', key: chatKey(s.chat), value: String(s.seq) }])
      await bySender.batch([{ type: 'put', key: `${userKey(s.from)}!${chatKey(s.chat)}!${seqKey(s.seq)}`, value: '' }])
    }
  } else {
    send = s => Promise.all([
      messages.batch([{ type: 'put', key: `${chatKey(s.chat)}!${seqKey(s.seq)}`, value: JSON.stringify({ from: userKey(s.from), text: s.text, ts: s.ts }) }]),
      counters.batch([{ type: 'put', key: chatKey(s.chat), value: String(s.seq) }]),
      bySender.batch([{ type: 'put', key: `${userKey(s.from)}!${chatKey(s.chat)}!${seqKey(s.seq)}`, value: '' }])
    ])
  }
  return {
    stores,
    dbs,
    send,
    async close () {
      for (const db of dbs) await db.close()
    }
  }
}

/**
 * Walk messages, counters and the index, and report every way they disagree.
 * A consistent state: for every chat, the messages are exactly seqs 1..count
 * and every message has its index entry and no index entry lacks its message.
 * @param {Layout} layout
 */
export async function checkLayout (layout) {
  const { messages, counters } = layout.stores
  const bySender = layout.stores['by-sender']
  /** @type {Map<string, Set<number>>} */
  const msgs = new Map()
  for await (const key of messages.keys()) {
    const [chat, seq] = key.split('!')
    if (!msgs.has(chat)) msgs.set(chat, new Set())
    msgs.get(chat)?.add(Number(seq))
  }
  /** @type {Map<string, number>} */
  const counts = new Map()
  for await (const [key, value] of counters.iterator()) counts.set(key, Number(value))
  /** @type {Map<string, Set<number>>} */
  const index = new Map()
  for await (const key of bySender.keys()) {
    const [, chat, seq] = key.split('!')
    if (!index.has(chat)) index.set(chat, new Set())
    index.get(chat)?.add(Number(seq))
  }
  const problems = { messageWithoutCounter: 0, counterWithoutMessage: 0, messageWithoutIndex: 0, indexWithoutMessage: 0, gaps: 0 }
  let messageCount = 0
  const chats = new Set([...msgs.keys(), ...counts.keys(), ...index.keys()])
  for (const chat of chats) {
    const m = msgs.get(chat) || new Set()
    const c = counts.get(chat) || 0
    const idx = index.get(chat) || new Set()
    messageCount += m.size
    const top = m.size ? Math.max(...m) : 0
    if (top > c) problems.messageWithoutCounter += top - c
    if (c > top) problems.counterWithoutMessage += c - top
    if (top !== m.size) problems.gaps += top - m.size
    for (const seq of m) if (!idx.has(seq)) problems.messageWithoutIndex++
    for (const seq of idx) if (!m.has(seq)) problems.indexWithoutMessage++
  }
  const inconsistent = Object.values(problems).some(n => n > 0)
  return { inconsistent, problems, messages: messageCount, chats: chats.size }
}
