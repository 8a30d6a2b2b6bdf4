// Connections a database opens outside its pool (the shared writer lock's,
// the listening one, snapshots') kept for a moment when it is done with
// them, for the next database of this process with the same settings: a
// PostgreSQL connection is a server process forked and initialized
// (tens of ms of the server's CPU on a small machine), and a process
// that opens and closes databases (tests, scripts, short jobs) would
// otherwise pay it for each of them.
//
// A connection is kept only after `DISCARD ALL` succeeds on it (session
// advisory locks let go, UNLISTEN *, SET values and prepared statements
// gone: nothing of its last owner's session is left), only for settings
// that are plain data (a password function, say, makes none), never when
// it failed or was terminated (it is dropped from the idle set at its error,
// and checked again when taken), and for at most IDLE_MS: the timer and the
// idle sockets are unref'd, so that kept connections never hold a process
// open. Connections to a primary found among hosts (failover) are never
// kept: the host may be a standby by the next time.

// How long a connection stays idle before it is ended. Short: reuse is for
// databases opened one after another, not a pool.
export const IDLE_MS = 1000
// Idle connections kept at most per settings.
export const MAX_IDLE = 16
// Pool settings in a client's config that do not change its connection.
const POOL_ONLY = new Set(['max', 'min', 'idleTimeoutMillis', 'allowExitOnIdle', 'maxUses', 'maxLifetimeSeconds', 'log', 'Promise', 'Client'])

/** @typedef {import('pg').Client} Client */

/** @type {Map<string, Array<{ client: Client, until: number }>>} idle connections by settings, the last given back last */
const idle = new Map()
/** @type {WeakSet<Client>} connections that failed: never kept */
const broken = new WeakSet()
/** @type {WeakMap<Client, string>} the settings' key of each connection that may be kept */
const keys = new WeakMap()
/** @type {WeakSet<Client>} connections taken from the idle set (not new) */
const reusedSet = new WeakSet()
/** @type {Set<Client>} connections being reset to be kept (giveBack() between its start and the idle set) */
const returning = new Set()
/** @type {ReturnType<typeof setTimeout> | null} */
let sweeper = null

/**
 * Counters (tests and the test runner's report): connections taken from
 * the idle set, kept, and ended instead of kept (why in `refused`).
 */
export const idleStats = { reused: 0, kept: 0, refused: 0, expired: 0 }

/**
 * The key of a client's settings, or null when they are not plain data
 * (functions, streams, buffers) and so cannot be told equal: such
 * connections are not kept.
 * @param {Record<string, unknown>} config
 * @returns {string | null}
 */
export function connectionKey (config) {
  /** @type {Record<string, unknown>} */
  const picked = {}
  for (const name of Object.keys(config).sort()) {
    if (POOL_ONLY.has(name) || config[name] === undefined) continue
    if (!plain(config[name])) return null
    picked[name] = config[name]
  }
  return JSON.stringify(picked, (_, value) => value !== null && typeof value === 'object' && !Array.isArray(value)
    ? Object.fromEntries(Object.keys(value).sort().map(k => [k, value[k]]))
    : value)
}

/** @param {unknown} value */
function plain (value) {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true
  if (typeof value === 'number') return Number.isFinite(value)
  if (Array.isArray(value)) return value.every(plain)
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) return Object.values(/** @type {object} */ (value)).every(plain)
  return false
}

/**
 * A connection with `config`'s settings: an idle one, else a new one made
 * by `connect`. Give it back with release() when done.
 * @param {Record<string, any>} config
 * @param {(config: Record<string, any>) => Promise<Client>} connect
 * @returns {Promise<Client>}
 */
export async function connectKept (config, connect) {
  const key = connectionKey(config)
  const kept = takeIdle(key)
  if (kept !== null) {
    keys.set(kept, /** @type {string} */ (key))
    return kept
  }
  const client = await connect(config)
  if (key !== null) {
    keys.set(client, key)
    watchConnection(client)
  }
  return client
}

/**
 * Whether `client` was an idle one, not new: it may have died while idle
 * without its error reaching this process yet, so a failure of its first
 * statement is worth a new connection rather than the caller's error.
 * @param {Client} client
 */
export function wasIdle (client) {
  return reusedSet.has(client)
}

/**
 * Done with a connection: kept for the next database with its settings
 * (connectKept()'s), else ended (one made otherwise, one that failed).
 * @param {Client} client
 * @param {{ query: (statement: string) => Promise<unknown> }} [queue] the owner's InOrder, when statements may be in flight
 * @returns {Promise<void>}
 */
export function release (client, queue) {
  const key = keys.get(client)
  keys.delete(client)
  if (key === undefined) return client.end().catch(noop)
  return giveBack(key, client, queue)
}

/**
 * Watch a new connection for failure: one that fails is never kept.
 * @param {Client} client
 */
function watchConnection (client) {
  client.on('error', () => markBroken(client))
  client.on('end', () => markBroken(client))
}

/** @param {Client} client */
function markBroken (client) {
  broken.add(client)
  for (const [key, list] of idle) {
    const at = list.findIndex(entry => entry.client === client)
    if (at === -1) continue
    list.splice(at, 1)
    if (list.length === 0) idle.delete(key)
  }
}

/**
 * An idle connection with these settings, reset, or null.
 * @param {string | null} key connectionKey()'s
 * @returns {Client | null}
 */
function takeIdle (key) {
  if (key === null) return null
  const list = idle.get(key) ?? []
  for (let entry = list.pop(); entry !== undefined; entry = list.pop()) {
    const { client } = entry
    if (list.length === 0) idle.delete(key)
    if (!usable(client)) {
      client.end().catch(noop)
      continue
    }
    const socket = /** @type {any} */ (client)
    socket.ref()
    reusedSet.add(client)
    idleStats.reused++
    return client
  }
  return null
}

/**
 * Done with `client`: reset it and keep it for IDLE_MS, or end it (it
 * failed, its settings are not plain data, the set is full, or the reset
 * failed). Statements already sent on it are answered first (`queue`, the
 * owner's InOrder, sends the reset after them).
 * @param {string | null} key connectionKey()'s (null: end it)
 * @param {Client} client
 * @param {{ query: (statement: string) => Promise<unknown> }} [queue] where statements go one at a time
 * @returns {Promise<void>}
 */
async function giveBack (key, client, queue) {
  const send = (/** @type {string} */ statement) => queue ? queue.query(statement) : client.query(statement)
  if (key === null || !alive(client) || (idle.get(key)?.length ?? 0) >= MAX_IDLE) {
    idleStats.refused++
    return client.end().catch(noop)
  }
  returning.add(client)
  try {
    try {
      await send('DISCARD ALL')
    } catch (err) {
      // In a transaction (or a failed one), which DISCARD ALL refuses: ended first.
      const code = /** @type {any} */ (err).code
      if (code !== '25001' && code !== '25P02') throw err
      await send('ROLLBACK')
      await send('DISCARD ALL')
    }
  } catch {
    idleStats.refused++
    if (returning.delete(client)) await client.end().catch(noop)
    return
  }
  // Ended meanwhile by endIdleConnections().
  if (!returning.delete(client)) return
  // pg remembers which named statements it prepared on the connection;
  // DISCARD ALL deallocated them.
  const connection = /** @type {any} */ (client).connection
  if (!usable(client) || connection == null || typeof connection.parsedStatements !== 'object' || typeof /** @type {any} */ (client).unref !== 'function' || (idle.get(key)?.length ?? 0) >= MAX_IDLE) {
    idleStats.refused++
    return client.end().catch(noop)
  }
  connection.parsedStatements = {}
  if (typeof connection.submittedNamedStatements === 'object') connection.submittedNamedStatements = {}
  // The last owner's listeners go; the watch stays.
  client.removeAllListeners('notification')
  client.removeAllListeners('notice')
  client.removeAllListeners('error')
  client.removeAllListeners('end')
  client.on('error', noop)
  watchConnection(client)
  const socket = /** @type {any} */ (client)
  socket.unref()
  let list = idle.get(key)
  if (list === undefined) idle.set(key, list = [])
  list.push({ client, until: Date.now() + IDLE_MS })
  idleStats.kept++
  sweep()
}

/** Whether a connection is up: connected, not failed, not ending. */
function alive (/** @type {any} */ client) {
  return !broken.has(client) && client._connected === true && client._queryable === true && client._ending === false && !client._connectionError
}

/** Whether a connection is up and has nothing in flight (pg's fields: checked, so that a pg that renames them keeps nothing). */
function usable (/** @type {any} */ client) {
  return alive(client) && client._activeQuery === null && Array.isArray(client._queryQueue) && client._queryQueue.length === 0
}

/** End the connections idle for IDLE_MS, on an unref'd timer while any are left. */
function sweep () {
  if (sweeper !== null) return
  sweeper = setTimeout(() => {
    sweeper = null
    const now = Date.now()
    for (const [key, list] of idle) {
      for (let i = list.length - 1; i >= 0; i--) {
        if (list[i].until > now) continue
        list[i].client.end().catch(noop)
        list.splice(i, 1)
        idleStats.expired++
      }
      if (list.length === 0) idle.delete(key)
    }
    if (idle.size > 0) sweep()
  }, IDLE_MS / 4)
  sweeper.unref()
}

/**
 * End now every connection kept for the next database, and every one
 * being reset to be kept (a database's close() gives its writer and
 * listening connections back without waiting for their reset): once this
 * resolves, no session of a database closed before the call is left (a
 * DROP DATABASE next, a server about to stop, tests counting sessions).
 */
export async function endIdleConnections () {
  const all = [...idle.values()].flat().map(entry => entry.client)
  idle.clear()
  if (sweeper !== null) clearTimeout(sweeper)
  sweeper = null
  // Their reset is cut short: giveBack() finds them gone from the set.
  all.push(...returning)
  returning.clear()
  // A kept socket is unref'd: ended unref'd, its close would hold nothing,
  // and a caller with nothing else pending (a test's last cleanup, a
  // script's end) would exit inside this await, before what follows it
  // (stopping the server: a throwaway cluster left running).
  for (const client of all) /** @type {any} */ (client).ref?.()
  await Promise.all(all.map(client => client.end().catch(noop)))
}

/** Connections idle now (tests). */
export function idleCount () {
  let n = 0
  for (const list of idle.values()) n += list.length
  return n
}

function noop () {}
