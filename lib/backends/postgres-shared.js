// Several processes writing one table (open({ backend: 'postgres', shared:
// true })): levelkit's shared writer lock (lib/cross-tab.js) over
// PostgreSQL. The lock is a session-level advisory lock held by a connection
// of its own, the writer connection, and while it is held every batch of
// this process goes through that connection: if it dies, PostgreSQL lets
// the lock go and rolls back whatever batch was on it, so no batch decided
// under a lost lock can commit after another process took the lock
// (fencing). Each batch tells the other processes what it wrote with
// pg_notify() in its own statement, so they hear of it exactly when it
// commits, on a connection of their own that LISTENs.
//
// The lock is leased, as a Web Lock is between tabs (lib/cross-tab.js): the
// process that holds it keeps it while idle, so that writes awaited one at
// a time take it once, not once each. A process that waits for it says so
// ('want', a notification on the same channel) before it queues up, and
// again every WANT_REPEAT_MS while it waits; the holder's listening
// connection hears it and the writer lets go once idle. A holder whose
// listening connection is down cannot hear it: until it listens again, the
// lock is not leased (it is let go whenever idle), so that a 'want' lost
// meanwhile cannot keep another process waiting.
import pg from 'pg'
import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { WANT_REPEAT_MS } from '../cross-tab.js'
import { escapeLiteral } from './postgres-literal.js'
import { release } from './postgres-idle.js'

// A notification's payload is at most 8000 bytes: a batch's keys are sent
// in chunks of at most this many characters of JSON, and past MAX_CHUNKS,
// only the prefixes of the namespaces it wrote (its keys are unknown).
const CHUNK_CHARS = 7800
const MAX_CHUNKS = 8
// How long the listening connection waits before connecting again.
const RELISTEN_MS = 200
// The first key of the writer lock: 'LKWR' (the table lock's is 'LKIT').
export const WRITER_LOCK_SPACE = 0x4c4b5752

/**
 * @typedef {import('../cross-tab.js').RemoteMessage} RemoteMessage
 * @typedef {import('../cross-tab.js').CrossTab} CrossTab
 * @typedef {object} SharedWriterHost
 * @property {(purpose: 'writer' | 'listen') => Promise<import('pg').Client>} connect a connection outside the pool
 * @property {(client: InOrder | null) => void} route where the batches go while the lock is held (null: the pool)
 * @property {(channel: string, payload: string) => Promise<unknown>} notify sends a notification through the pool
 * @property {number} lockKey
 * @property {number} [failoverTimeout] with hosts (failover): how long acquire() goes on taking the
 *   lock again on the primary found next when its connection fails (else it fails at once)
 * @property {(err: unknown) => boolean} [isConnectionError] which failures those are
 */

/**
 * The shared writer lock of a postgres database.
 * @implements {CrossTab}
 */
export class PostgresWriterLock {
  /** Reads were made as of what was committed: no value needs checking again at commit. */
  validatesByValue = false
  /**
   * Counters, for the benchmark: how often the lock was taken, and how long
   * taking it waited in all (the section locks that extend this class count
   * other things).
   * @type {Record<string, any>}
   */
  stats = { acquired: 0, waitMs: 0, released: 0 }
  #host
  #channel
  /** A random name for this lock, so that it ignores its own notifications. */
  #self = randomBytes(6).toString('base64')
  /** @type {import('pg').Client | null} the writer connection */
  #client = null
  /** @type {InOrder | null} its statements, one at a time */
  #writer = null
  /** @type {Error | null} why the writer connection failed */
  #lost = null
  #holding = false
  /** @type {string[] | null} the payloads of the next batch's notifications */
  #staged = null
  /** @type {string | null} the payload telling the holding's end, sent with the unlock (ended()) */
  #end = null
  /** @type {import('pg').Client | null} the listening connection */
  #listener = null
  /** @type {InOrder | null} its statements, one at a time */
  #listenQueue = null
  /** @type {Promise<void> | null} */
  #listening = null
  /** @type {Set<(message: RemoteMessage) => void>} */
  #listeners = new Set()
  /** @type {Set<() => void>} called when another process says it waits for the lock */
  #wantListeners = new Set()
  /** The payload of this lock's 'want'. */
  #want
  /** @type {Map<string, { parts: any[], left: number }>} chunks of a batch's notification heard so far, by sender and generation */
  #partial = new Map()
  #closed = false
  /** @type {() => void} */
  #heardFirst = noop
  #listened = new Promise(resolve => { this.#heardFirst = () => resolve(undefined) })
  /** @type {Promise<unknown>} the last catchUp() */
  #catchingUp = Promise.resolve()

  /** @param {SharedWriterHost} host @param {string} table */
  constructor (host, table) {
    this.#host = host
    this.name = table
    // (Unsigned: a channel LISTEN names without quotes.)
    this.#channel = `levelkit_${host.lockKey >>> 0}`
    this.#want = JSON.stringify({ f: this.#self, w: 1 })
  }

  /**
   * Whether the lock may be kept while idle (lib/writer.js): only while
   * the listening connection is up, to hear the others' 'want'.
   */
  get leased () {
    return this.#listener !== null && !this.#closed
  }

  /** @param {() => void} listener */
  wanted (listener) {
    this.#wantListeners.add(listener)
  }

  /** Whether close() was called (a database closed, the backend still open, makes a new one). */
  get closed () {
    return this.#closed
  }

  /** Resolves once the first LISTEN is in place: from then on every batch committed is heard of. */
  listening () {
    return this.#listened
  }

  /** The channel notifications are sent on (a table's oid names it). */
  get channel () {
    return this.#channel
  }

  /** @returns {Promise<() => void>} */
  async acquire () {
    const { failoverTimeout = 0, isConnectionError = () => false } = this.#host
    const deadline = Date.now() + failoverTimeout
    for (;;) {
      try {
        return await this.#acquireOnce()
      } catch (err) {
        // The primary died (or the connection to it): the lock is taken on
        // the next one, where every session of the old one is gone.
        if (this.#closed || !isConnectionError(err) || Date.now() >= deadline) throw err
        await new Promise(resolve => setTimeout(resolve, RELISTEN_MS))
      }
    }
  }

  /** @returns {Promise<() => void>} */
  async #acquireOnce () {
    if (this.#closed) throw new Error('The shared writer lock is closed')
    let client = this.#client
    let writer = this.#writer
    if (client === null || writer === null || this.#lost !== null) {
      this.#drop()
      client = await this.#host.connect('writer')
      const onError = (/** @type {Error} */ err) => { if (this.#client === client) this.#lost = err }
      client.on('error', onError)
      this.#client = client
      this.#writer = writer = new InOrder(client)
      this.#lost = null
    }
    // Waits, on the server, for the process holding it to let go (or die),
    // asking it to meanwhile: it may be keeping it idle.
    this.#sendWant()
    const repeat = setInterval(() => this.#sendWant(), WANT_REPEAT_MS)
    const asked = performance.now()
    try {
      await writer.query(`SELECT pg_advisory_lock(${WRITER_LOCK_SPACE}, $1)`, [this.#host.lockKey])
      this.stats.acquired++
      this.stats.waitMs += performance.now() - asked
    } catch (err) {
      // The next acquire() connects anew.
      if (this.#client === client) this.#lost = /** @type {Error} */ (err)
      throw err
    } finally {
      clearInterval(repeat)
    }
    this.#holding = true
    this.#host.route(writer)
    let released = false
    return () => {
      if (released) return
      released = true
      this.#holding = false
      this.#staged = null
      this.#host.route(null)
      const end = this.#end
      this.#end = null
      if (this.#client !== client || this.#lost !== null) return
      // Queued after every batch sent on the connection, so it lets go
      // only once they are committed. The holding's end (ended()) in the
      // same query, committed before the unlock (the next holder hears it
      // when it catches up): one round trip of the hand-over, not two.
      const unlock = `SELECT pg_advisory_unlock(${WRITER_LOCK_SPACE}, ${Number(this.#host.lockKey)})`
      writer.query(end === null ? unlock : `SELECT pg_notify(${escapeLiteral(this.#channel)}, ${escapeLiteral(end)}); COMMIT; ${unlock}`).catch(err => {
        if (this.#client === client) this.#lost = err
      })
      this.stats.released++
    }
  }

  /** False once the connection that holds the lock failed: the lock is gone with it. */
  held () {
    return this.#holding && this.#lost === null
  }

  /**
   * What the next batch (written on the writer connection) tells the
   * other processes.
   * @param {RemoteMessage} message
   */
  stage (message) {
    this.#staged = encode(this.#self, message)
  }

  /** The payloads of the staged notifications, once: for the batch being written. */
  takeStaged () {
    const staged = this.#staged
    this.#staged = null
    return staged
  }

  /** Sent with the batch already (stage()). */
  post () {}

  /**
   * A holding's end, on the writer connection: after its batches, before
   * the lock is let go (release(), called next, sends it in the query of
   * the unlock, committed first), so that whoever takes the lock next hears
   * it once it catches up.
   * @param {RemoteMessage} message
   */
  ended (message) {
    if (!this.#holding || this.#client === null || this.#writer === null || this.#lost !== null) return
    // Sent by the release, in the query of its unlock.
    this.#end = JSON.stringify({ f: this.#self, g: message.generation, s: message.sequence, e: 1 })
  }

  /** @param {(message: RemoteMessage) => void} listener */
  listen (listener) {
    this.#listeners.add(listener)
    if (this.#listening === null) this.#listening = this.#startListening()
  }

  /**
   * Resolves once every notification committed before the call is heard:
   * one round trip on the listening connection, which delivers the
   * notifications waiting for it before its answer.
   */
  catchUp () {
    // One round trip at a time on the connection (pg queues them anyway).
    const caughtUp = this.#catchingUp.then(async () => {
      const listener = this.#listenQueue
      if (this.#listener === null || listener === null) return false
      try {
        await listener.query('SELECT 1')
        return true
      } catch {
        return false
      }
    })
    this.#catchingUp = caughtUp
    return caughtUp
  }

  close () {
    this.#closed = true
    this.#heardFirst()
    this.#listeners.clear()
    this.#wantListeners.clear()
    // Kept for a moment for the next database of this process
    // (postgres-idle.js), or ended: either lets the locks go.
    this.#drop(true)
    const listener = this.#listener
    const queue = this.#listenQueue
    this.#listener = null
    this.#listenQueue = null
    if (listener) release(listener, queue ?? undefined)
  }

  #sendingWant = false

  /**
   * Tell the other processes this one waits for the lock: on the listening
   * connection, or through the pool while it is down. One at a time: a
   * slow one is not piled on.
   */
  #sendWant () {
    if (this.#sendingWant || this.#closed) return
    this.#sendingWant = true
    const listener = this.#listenQueue
    const sent = this.#listener !== null && listener !== null
      ? listener.query('SELECT pg_notify($1, $2)', [this.#channel, this.#want])
      : this.#host.notify(this.#channel, this.#want)
    // A 'want' not sent is sent again soon; the lock is waited for anyway.
    sent.catch(noop).finally(() => { this.#sendingWant = false })
  }

  #callWanted () {
    for (const listener of this.#wantListeners) listener()
  }

  /**
   * End the writer connection, if any (a failed one, or at close).
   * @param {boolean} [closing] at close: kept for the next database if it did not fail
   */
  #drop (closing = false) {
    const client = this.#client
    const writer = this.#writer
    const lost = this.#lost
    this.#client = null
    this.#writer = null
    this.#holding = false
    this.#host.route(null)
    if (!client) return
    if (closing && lost === null) release(client, writer ?? undefined)
    else client.end().catch(noop)
  }

  async #startListening () {
    let first = true
    while (!this.#closed) {
      /** @type {import('pg').Client | undefined} */
      let client
      try {
        client = await this.#host.connect('listen')
        if (this.#closed) {
          await client.end().catch(noop)
          return
        }
        client.on('notification', (msg) => {
          if (msg.channel === this.#channel && msg.payload) this.#heard(msg.payload)
        })
        const heard = new InOrder(client)
        await heard.query(`LISTEN ${this.#channel}`)
        if (this.#closed) {
          // Closed while the LISTEN was in flight: close() found no
          // listening connection to give back, so it is given back here.
          await release(client, heard)
          return
        }
        this.#listenQueue = heard
        this.#listener = client
        // Notifications missed while the connection was lost: the
        // listeners learn that anything may have changed.
        if (first) this.#heardFirst()
        else this.#deliver({ generation: null, ops: null, prefixes: null })
        first = false
        const connected = client
        const lost = new Promise(resolve => connected.once('error', resolve).once('end', resolve))
        await lost
        if (this.#listener === client) this.#listener = null
        client.end().catch(noop)
        // Deaf to the others' 'want' until it listens again: an idle
        // holder lets the lock go now, as if wanted (the lock is no longer
        // leased meanwhile, see leased).
        if (!this.#closed) this.#callWanted()
      } catch {
        if (client) client.end().catch(noop)
      }
      if (!this.#closed) await new Promise(resolve => setTimeout(resolve, RELISTEN_MS))
    }
  }

  /** @param {string} payload */
  #heard (payload) {
    let chunk
    try {
      chunk = JSON.parse(payload)
    } catch {
      return
    }
    if (chunk === null || typeof chunk !== 'object' || chunk.f === this.#self) return
    if (chunk.w === 1) {
      this.#callWanted()
      return
    }
    /** @type {number | undefined} */
    const sequence = Number.isSafeInteger(chunk.s) ? chunk.s : undefined
    if (chunk.e === 1) {
      if (sequence !== undefined) this.#deliver({ generation: chunk.g, sequence, end: true, ops: null, prefixes: null })
      return
    }
    if ('p' in chunk) {
      this.#deliver({ generation: chunk.g, sequence, ops: null, prefixes: Array.isArray(chunk.p) ? chunk.p : null })
      return
    }
    if (!Array.isArray(chunk.o) || !Number.isSafeInteger(chunk.n)) return
    let ops = chunk.o
    if (chunk.n > 1) {
      // The chunks of one batch arrive together and in order.
      const id = `${chunk.f}:${chunk.g}:${chunk.s}`
      let partial = this.#partial.get(id)
      if (!partial) this.#partial.set(id, partial = { parts: [], left: chunk.n })
      partial.parts.push(...chunk.o)
      if (--partial.left > 0) return
      this.#partial.delete(id)
      ops = partial.parts
    }
    this.#deliver({
      generation: chunk.g,
      sequence,
      ops: ops.map((/** @type {[string, number, string]} */ [prefix, type, key]) => ({ prefix, type: type === 1 ? 'put' : 'del', key: new Uint8Array(Buffer.from(key, 'base64')) })),
      prefixes: null
    })
  }

  /** @param {RemoteMessage} message */
  #deliver (message) {
    for (const listener of this.#listeners) listener(message)
  }
}

/** @type {Map<string, string>} a namespace prefix -> its JSON (prefixJson()) */
const prefixJsons = new Map()

/**
 * JSON.stringify(prefix), kept: prefixes are a schema's namespaces, few and
 * used again in every batch (the map is emptied should it ever grow large).
 * @param {string} prefix
 */
function prefixJson (prefix) {
  let json = prefixJsons.get(prefix)
  if (json === undefined) {
    if (prefixJsons.size >= 10000) prefixJsons.clear()
    json = JSON.stringify(prefix)
    prefixJsons.set(prefix, json)
  }
  return json
}

/**
 * The payloads that tell `message`: its keys in chunks that fit a
 * notification, or only its prefixes when they would take too many.
 * @param {string} self @param {RemoteMessage} message
 * @returns {string[]}
 */
function encode (self, message) {
  const { generation, sequence, ops } = message
  if (ops !== null) {
    /** @type {string[]} */
    // Each item is JSON.stringify([prefix, 1 or 0, base64]) written out,
    // its prefix's JSON made once: a batch of createChats names ~1,000
    // keys, while this process holds the serializable sequence lock.
    const items = ops.map(op => `[${prefixJson(op.prefix)},${op.type === 'put' ? 1 : 0},"${Buffer.from(op.key.buffer, op.key.byteOffset, op.key.byteLength).toString('base64')}"]`)
    /** @type {string[][]} */
    const chunks = [[]]
    let size = 0
    for (const item of items) {
      if (size + item.length + 1 > CHUNK_CHARS && chunks[chunks.length - 1].length > 0) {
        if (chunks.length === MAX_CHUNKS) {
          chunks.length = 0
          break
        }
        chunks.push([])
        size = 0
      }
      chunks[chunks.length - 1].push(item)
      size += item.length + 1
    }
    if (chunks.length > 0) {
      return chunks.map(chunk => `{"f":${JSON.stringify(self)},"g":${JSON.stringify(generation)},"s":${JSON.stringify(sequence ?? null)},"n":${chunks.length},"o":[${chunk.join(',')}]}`)
    }
  }
  const prefixes = message.prefixes ?? [...new Set((ops ?? []).map(op => op.prefix))]
  const payload = JSON.stringify({ f: self, g: generation, s: sequence, p: prefixes })
  // Too many namespaces to name: anything may have changed.
  return [payload.length <= CHUNK_CHARS ? payload : JSON.stringify({ f: self, g: generation, s: sequence, p: null })]
}

/**
 * A connection whose statements are sent one at a time, in the order they
 * are made: pg queues a statement made while another runs, but warns ("when
 * the client is already executing a query") and pg 9 refuses it.
 */
export class InOrder {
  /** @type {Promise<unknown>} the last statement made, settled or not */
  #last = Promise.resolve()

  /** @param {import('pg').Client | Promise<import('pg').Client>} client the connection (or while it connects) */
  constructor (client) {
    this.client = client
  }

  /**
   * Send `statement` once the statements made before it are answered;
   * if it fails, `recover` next (before any statement made after it).
   * @param {string | import('pg').QueryConfig} statement @param {unknown[]} [values] @param {string} [recover]
   * @returns {Promise<import('pg').QueryResult<any>>}
   */
  query (statement, values, recover) {
    const client = this.client
    const sent = this.#last.then(async () => (await client).query(statement, values))
    this.#last = recover === undefined ? sent.then(noop, noop) : sent.then(noop, async () => (await client).query(recover)).then(noop, noop)
    return sent
  }
}

/**
 * A connection for the lock or for listening: not from the pool, which
 * the reads and unshared writes use, so that neither waits for the other.
 * @param {import('pg').ClientConfig} config
 */
export async function connectClient (config) {
  const client = new pg.Client(config)
  client.on('error', noop)
  await client.connect()
  return client
}

/**
 * TCP keepalive on the writer and listening connections, both ways: a
 * silent partition (a machine gone, a cable cut, no RST) would otherwise
 * leave the writer lock with a session the server keeps for as long as
 * TCP does not notice (hours, by default, for an idle one), and every
 * other process waiting. The server side is what lets the lock go: the
 * session's tcp_keepalives_* and tcp_user_timeout (unacknowledged data)
 * end it about `delay` + 3 probes after the client went silent. The
 * client side (pg's keepAlive) makes this process notice too, but Node
 * sets only the idle time: the probes' interval and count are the OS's.
 * Over a unix socket, where no partition happens, the server ignores them.
 * @param {number | false} delay ms of silence before the first probe; false: the defaults
 * @returns {import('pg').ClientConfig}
 */
export function keepAliveConfig (delay) {
  return delay === false ? {} : { keepAlive: true, keepAliveInitialDelayMillis: delay }
}

/**
 * The server side of keepAliveConfig(): settings of the session, sent once
 * the connection is made.
 * @param {import('pg').Client} client @param {number | false} delay
 */
export async function keepSessionAlive (client, delay) {
  if (delay === false) return
  const idle = Math.max(1, Math.ceil(delay / 1000))
  const interval = Math.max(1, Math.ceil(idle / 5))
  const count = 3
  try {
    await client.query(`SET tcp_keepalives_idle = ${idle}; SET tcp_keepalives_interval = ${interval}; SET tcp_keepalives_count = ${count}; SET tcp_user_timeout = ${(idle + interval * count) * 1000}`)
  } catch (err) {
    // A server without tcp_user_timeout (before PostgreSQL 12): without it.
    if (/** @type {any} */ (err).code !== '42704') throw err
    await client.query(`SET tcp_keepalives_idle = ${idle}; SET tcp_keepalives_interval = ${interval}; SET tcp_keepalives_count = ${count}`)
  }
}

function noop () {}
