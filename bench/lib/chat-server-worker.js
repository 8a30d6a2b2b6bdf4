// One server of bench/chat-server.js, in a process of its own (forked by
// it): the chat server (server/lib/app.js's buildApp) over ChatStore on
// LevelDB, over the SQLite store or over Maps (map-chat-store.js: no
// storage, what the server's own layers cost), or a no-op fastify app
// answering the same routes with a constant (the ceiling of the HTTP stack).
// The store is filled
// with the data set of bench/chat-workload.js before the app listens, and a
// session is set for every user, with the tokens the parent sends, so the
// parent's requests carry `Authorization: Bearer <token>` and no login runs
// during a measurement.
//
// Messages from the parent: { type: 'start', config } once, then
// { type: 'usage' } (answered with this process's CPU time) any number of
// times, then { type: 'stop' }: the app and the store close, the answer gives
// the database's size, and the process exits.

import fs from 'node:fs'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { open } from 'levelkit'
import { ChatStore } from 'levelkit/chat'
import Fastify from 'fastify'
// The chat server (bench/ may import server/, never workshop/).
import { buildApp } from '../../server/lib/app.js'
import { levelkitKv } from '../../server/lib/kv.js'
import { SqliteChatStore, sqliteKv } from './sqlite-chat-store.js'
import { MapChatStore } from './map-chat-store.js'
import { makeWorkload, pump } from './chat-workload-worker.js'
import { dirSize } from './seeds-common.js'

/** What the no-op app answers to every request. */
export const NOOP_BODY = Object.freeze({ ok: true })

/**
 * @typedef {{
 *   target: 'levelkit' | 'sqlite' | 'maps' | 'noop', dbDir: string,
 *   users: number, chats: number, members: number, messages: number, seed: number,
 *   tokens: string[], scryptN: number
 * }} Config
 */

/**
 * The no-op app: the three measured routes answered with a constant, on the
 * same fastify, without a store, a session or a schema.
 */
export async function noopApp () {
  const app = Fastify({ logger: false })
  const answer = async () => NOOP_BODY
  app.get('/api/chats', answer)
  app.get('/api/chats/:id/messages', answer)
  app.post('/api/chats/:id/messages', answer)
  await app.ready()
  return app
}

/**
 * Open the store of `target`, fill it with the data set, set the sessions.
 * @param {Config} config
 * @param {string} dir this server's own directory
 */
async function openStore (config, dir) {
  const passwordCost = { scryptN: config.scryptN, pbkdf2Iterations: 1000 }
  const work = makeWorkload({ ...config, pairChats: 0, run: 1, n: {} })
  /** @type {any} */
  let store
  /** @type {any} */
  let kv
  /** @type {() => Promise<void>} */
  let close
  if (config.target === 'levelkit') {
    const db = await open({ backend: 'leveldb', location: path.join(dir, 'level') })
    store = await ChatStore.open(db, { passwordCost })
    kv = levelkitKv(db)
    close = () => db.close()
  } else if (config.target === 'maps') {
    store = new MapChatStore()
    close = () => store.close()
  } else {
    store = new SqliteChatStore(path.join(dir, 'chat.sqlite'), { passwordCost })
    kv = sqliteKv(store)
    close = () => store.close()
  }
  // Users one at a time (ids 1..U on both stores), chats in order, messages
  // and sessions 64 in flight (a ChatStore commits them in groups; the SQLite
  // store one transaction each either way).
  const populate = { users: 0, chats: 0, messages: 0, sessions: 0 }
  let start = performance.now()
  for (const user of work.users) await store.createUser(user)
  populate.users = performance.now() - start
  start = performance.now()
  for (const chat of work.chats) await store.createChat(chat)
  populate.chats = performance.now() - start
  start = performance.now()
  await pump(work.messages, 64, message => store.addChatMessage(message))
  populate.messages = performance.now() - start
  start = performance.now()
  const expiry = Date.now() + 24 * 3600 * 1000
  await pump(config.tokens.map((token, i) => ({ sessionId: token, userId: i + 1, expiry })), 64, session => store.setUserSession(session))
  populate.sessions = performance.now() - start
  return { store, kv, close, populate }
}

/** @param {Config} config */
async function start (config) {
  const dir = path.join(config.dbDir, `levelkit-chat-server-${process.pid}-${config.target}`)
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  /** @type {any} */
  let app
  let opened = null
  if (config.target === 'noop') {
    app = await noopApp()
  } else {
    opened = await openStore(config, dir)
    // No rate limit: the benchmark is one client hammering from one address.
    app = await buildApp({ store: opened.store, kv: opened.kv, logger: false, rateLimit: { auth: false, api: false } })
  }
  await app.listen({ port: 0, host: '127.0.0.1' })
  const stop = async () => {
    await app.close()
    if (opened) await opened.close()
    const bytes = dirSize(dir)
    fs.rmSync(dir, { recursive: true, force: true })
    return { dbBytes: bytes, peakRssBytes: process.resourceUsage().maxRSS * 1024 }
  }
  return { port: app.server.address().port, populate: opened ? opened.populate : null, stop }
}

if (process.send) {
  /** @type {Awaited<ReturnType<typeof start>> | null} */
  let server = null
  const send = (/** @type {any} */ message) => new Promise(resolve => process.send?.(message, () => resolve(undefined)))
  const fail = async (/** @type {any} */ err) => {
    await send({ type: 'error', error: err && err.stack ? err.stack : String(err) })
    process.exit(1)
  }
  process.on('message', (/** @type {any} */ message) => {
    if (message.type === 'start') {
      start(message.config).then(started => {
        server = started
        return send({ type: 'ready', port: started.port, populate: started.populate })
      }).catch(fail)
    } else if (message.type === 'usage') {
      const { user, system } = process.cpuUsage()
      send({ type: 'usage', cpuMs: (user + system) / 1000 })
    } else if (message.type === 'stop') {
      Promise.resolve(server && server.stop()).then(async result => {
        await send({ type: 'stopped', ...result })
        process.exit(0)
      }).catch(fail)
    }
  })
  // The parent went away: nothing left to serve.
  process.on('disconnect', () => process.exit(0))
}
