// The WebSocket fan-out of bench/chat-server.js: rooms of members, each
// member a `ws` client of GET /api/ws subscribed to its room; one member of
// each room at a time sends (`{ type: 'send' }` frames, the senders taking
// turns) at a fixed rate per room; every member receives every message.
// Measured: messages delivered per second, the time from a send to each
// delivery (p50/p99), and that each client got its room's messages in id
// order without a gap or a duplicate.

import { performance } from 'node:perf_hooks'
import WebSocket from 'ws'
import { quantile } from './stats.js'

/**
 * @typedef {{ chatId: number, members: Array<{ userId: number, token: string }> }} Room
 * @typedef {{
 *   rooms: number, members: number, clients: number, ratePerRoom: number, seconds: number,
 *   sent: number, expected: number, delivered: number, deliveredPerSec: number,
 *   p50: number, p99: number, max: number, gaps: number, duplicates: number,
 *   errors: Record<string, number>, missing: number
 * }} FanOutResult
 */

/**
 * Whether the server has the live WebSocket: null if a client with `token`
 * can open GET /api/ws, else why not.
 * @param {string} url @param {string} token
 * @returns {Promise<string | null>}
 */
export function probeWebSocket (url, token) {
  return new Promise(resolve => {
    const socket = new WebSocket(`${url.replace(/^http/, 'ws')}/api/ws?token=${token}`)
    socket.once('open', () => { socket.terminate(); resolve(null) })
    socket.once('unexpected-response', (_, response) => { socket.terminate(); resolve(`GET /api/ws answered ${response.statusCode}`) })
    socket.once('error', err => resolve(`GET /api/ws failed: ${err.message}`))
  })
}

/**
 * Connect every member of every room, subscribe, check each receives, then
 * send at `rate` messages per second per room for `duration` seconds, and
 * wait up to `drain` seconds for the last deliveries.
 * @param {{ url: string, rooms: Room[], rate: number, duration: number, drain?: number, timeout?: number }} options
 * @returns {Promise<FanOutResult>}
 */
export async function fanOut ({ url, rooms, rate, duration, drain = 10, timeout = 20 }) {
  const wsUrl = url.replace(/^http/, 'ws') + '/api/ws'
  /** @type {Map<string, number>} send time of each timed message, by its text */
  const sentAt = new Map()
  /** @type {number[]} */
  const latencies = []
  /** @type {Record<string, number>} */
  const errors = {}
  let delivered = 0
  let gaps = 0
  let duplicates = 0
  let lastDelivery = 0
  /** @type {Array<() => void>} */
  let onDelivery = []

  // One client per member of each room.
  const clients = rooms.flatMap(room => room.members.map(member => ({ room, member, socket: /** @type {WebSocket | null} */ (null), lastId: 0, ready: false })))
  try {
    await Promise.all(clients.map(client => new Promise((resolve, reject) => {
      const socket = new WebSocket(`${wsUrl}?token=${client.member.token}`)
      client.socket = socket
      const timer = setTimeout(() => reject(new Error(`WebSocket ${wsUrl}: no open within ${timeout} s`)), timeout * 1000)
      socket.once('open', () => { clearTimeout(timer); resolve(undefined) })
      socket.once('unexpected-response', (_, response) => { clearTimeout(timer); reject(new Error(`WebSocket ${wsUrl}: the server answered ${response.statusCode}`)) })
      socket.once('error', err => { clearTimeout(timer); reject(err) })
      socket.on('message', data => {
        const now = performance.now()
        let frame
        try {
          frame = JSON.parse(String(data))
        } catch {
          errors['not JSON'] = (errors['not JSON'] || 0) + 1
          return
        }
        if (frame.type === 'error') errors[frame.code] = (errors[frame.code] || 0) + 1
        if (frame.type !== 'message' || frame.chatId !== client.room.chatId) return
        const { id, text } = frame.message
        if (id <= client.lastId) duplicates++
        else if (id !== client.lastId + 1) gaps++
        client.lastId = Math.max(client.lastId, id)
        if (text === 'ready') client.ready = true
        const sent = sentAt.get(text)
        if (sent === undefined) return
        latencies.push(now - sent)
        delivered++
        lastDelivery = now
        if (onDelivery.length > 0) for (const wake of onDelivery.splice(0)) wake()
      })
    })))

    // Subscribed with the whole history (after: 0), then a first message:
    // once every client has it, every subscription is live.
    for (const client of clients) client.socket?.send(JSON.stringify({ type: 'subscribe', chatId: client.room.chatId, after: 0 }))
    const byRoom = new Map(rooms.map(room => [room, clients.filter(c => c.room === room).map(c => /** @type {WebSocket} */ (c.socket))]))
    // The member of a room that sends its k-th message: they take turns.
    const sender = (/** @type {Room} */ room, /** @type {number} */ k) => {
      const sockets = /** @type {WebSocket[]} */ (byRoom.get(room))
      return sockets[k % sockets.length]
    }
    for (const room of rooms) sender(room, 0).send(JSON.stringify({ type: 'send', chatId: room.chatId, text: 'ready' }))
    const readyBy = performance.now() + timeout * 1000
    while (!clients.every(c => c.ready)) {
      if (performance.now() > readyBy) throw new Error(`${clients.filter(c => !c.ready).length} of ${clients.length} WebSocket clients did not receive their room's first message within ${timeout} s`)
      await sleep(20)
    }

    // The timed phase: room r sends its k-th message at start + k / rate,
    // by its members in turn.
    const start = performance.now()
    const end = start + duration * 1000
    const sentPerRoom = rooms.map(() => 0)
    let seq = 0
    const sendDue = (/** @type {number} */ due) => rooms.forEach((room, r) => {
      while (sentPerRoom[r] < due) {
        const text = `m${++seq}`
        sender(room, ++sentPerRoom[r]).send(JSON.stringify({ type: 'send', chatId: room.chatId, text }))
        sentAt.set(text, performance.now())
      }
    })
    while (performance.now() < end) {
      sendDue(Math.floor((performance.now() - start) / 1000 * rate))
      await sleep(2)
    }
    // Every message the schedule made due is sent, late if the machine fell
    // behind (its latency counts from now): the load offered is the one asked.
    sendDue(Math.floor(duration * rate))
    const sent = seq
    const expected = rooms.reduce((sum, room, r) => sum + sentPerRoom[r] * room.members.length, 0)
    const drainBy = performance.now() + drain * 1000
    const undelivered = () => delivered < expected
    while (undelivered() && performance.now() < drainBy) {
      await new Promise(resolve => {
        onDelivery.push(() => resolve(undefined))
        setTimeout(resolve, 50)
      })
    }
    onDelivery = []
    const seconds = ((lastDelivery || end) - start) / 1000
    return {
      rooms: rooms.length,
      members: rooms[0] ? rooms[0].members.length : 0,
      clients: clients.length,
      ratePerRoom: rate,
      seconds,
      sent,
      expected,
      delivered,
      deliveredPerSec: delivered / Math.max(seconds, 1e-9),
      p50: quantile(latencies, 0.5),
      p99: quantile(latencies, 0.99),
      max: latencies.reduce((a, b) => Math.max(a, b), 0),
      gaps,
      duplicates,
      errors,
      missing: expected - delivered
    }
  } finally {
    for (const client of clients) client.socket?.terminate()
  }
}

/** @param {number} ms */
function sleep (ms) {
  return new Promise(resolve => setTimeout(resolve, ms))
}
