// Failover for the postgres backend: several hosts, of which the one where
// pg_is_in_recovery() is false (the primary) is used, found again when a
// connection to it fails; reads and idempotent writes retried there; and
// batches whose commit outcome is unknown settled by their commit id.
// pg connects to one host only (its connection strings take no host list,
// nor target_session_attrs), so the host choice is made here.
import { EventEmitter } from 'node:events'
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { levelkitError, codes, invalid } from '../errors.js'
import { describe } from '../common.js'
import { createOnce } from './postgres-create.js'

// How long an operation waits for a primary (a promotion takes a few
// seconds to a Patroni ttl) before it fails.
const DEFAULT_FAILOVER_TIMEOUT = 30000
// Per host, per try: a host that does not answer is skipped for the next.
const CONNECT_TIMEOUT = 2000
const PAUSE = 250
// The table of commit ids, one for all the databases of a schema.
export const COMMITS_TABLE = 'levelkit_commits'
// Commit ids of sessions gone for longer than this are removed at open.
const COMMITS_KEPT = '1 day'

/**
 * @typedef {{ host: string, port: number }} Host
 * @typedef {{ hosts: Host[], configFor: (host: Host) => import('pg').PoolConfig, timeout: number }} Failover
 */

/**
 * Whether the options ask for failover (a `hosts` list, a connection string
 * naming several hosts or target_session_attrs=read-write/primary), and if
 * so the hosts and the pool settings to use on each (its connection string
 * without the host list).
 * @param {{ connectionString?: string, hosts?: unknown, failoverTimeout?: unknown, config: import('pg').PoolConfig }} options
 * @returns {Failover | null}
 */
export function failoverOf ({ connectionString, hosts, failoverTimeout, config }) {
  if (failoverTimeout !== undefined && (typeof failoverTimeout !== 'number' || !Number.isSafeInteger(failoverTimeout) || failoverTimeout < 0)) {
    throw invalid(`The failoverTimeout option must be a non-negative integer (milliseconds), got ${describe(failoverTimeout)}`)
  }
  /** @type {Host[]} */
  let list = []
  let readWrite = false
  /** @type {ReturnType<typeof parseHosts>} */
  let parsed = null
  if (typeof connectionString === 'string') {
    parsed = parseHosts(connectionString)
    if (parsed) {
      list = parsed.hosts
      readWrite = parsed.readWrite
    } else if (hosts !== undefined) {
      throw invalid('With the hosts option, connectionString must be a postgres:// URL (its host is replaced by each of the hosts)')
    }
  }
  if (hosts !== undefined) {
    if (!Array.isArray(hosts) || hosts.length === 0) throw invalid(`The hosts option must be a non-empty array of 'host:port' strings or { host, port } objects, got ${describe(hosts)}`)
    if (list.length > 1) throw invalid('Pass the hosts either in the hosts option or in connectionString, not both')
    const port = list.length === 1 ? list[0].port : 5432
    list = hosts.map(host => hostOf(host, port))
  } else if (list.length < 2 && !readWrite) {
    if (failoverTimeout !== undefined) throw invalid('The failoverTimeout option needs hosts (the hosts option, or several hosts in connectionString)')
    return null
  }
  const { connectionString: ignored, ...settings } = config
  const url = parsed
  return {
    hosts: list,
    // pg takes the host of a connection string over a host setting: the
    // string itself names the host.
    configFor: url
      ? (host) => ({ ...settings, connectionString: `${url.scheme}${url.auth}${hostPort(host)}${url.rest}` })
      : (host) => ({ ...settings, host: host.host, port: host.port }),
    timeout: failoverTimeout === undefined ? DEFAULT_FAILOVER_TIMEOUT : failoverTimeout
  }
}

/** @param {Host} host */
function hostPort (host) {
  return `${host.host.includes(':') ? `[${host.host}]` : encodeURIComponent(host.host)}:${host.port}`
}

/**
 * The hosts of a postgres:// URL (host1:port1,host2:port2) and the parts
 * around them (without target_session_attrs); null for a string that is
 * not such a URL.
 * @param {string} url
 * @returns {{ hosts: Host[], scheme: string, auth: string, rest: string, readWrite: boolean } | null}
 */
function parseHosts (url) {
  const match = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(.*)$/.exec(url)
  if (!match) return null
  const [, scheme, auth = '', authority, tail] = match
  const hosts = authority === '' ? [] : authority.split(',').map(part => hostOf(decodeURIComponent(part), 5432))
  let readWrite = false
  // pg passes unknown parameters on as settings of the session: this one is ours.
  const rest = tail.replace(/([?&])target_session_attrs=([^&#]*)&?/, (_, sep, value) => {
    if (value !== 'read-write' && value !== 'primary' && value !== 'any') throw invalid(`target_session_attrs=${value} is not supported: use read-write (or primary)`)
    readWrite = value !== 'any'
    return sep
  }).replace(/[?&]$/, '')
  return { hosts, scheme, auth, rest, readWrite: readWrite || hosts.length > 1 }
}

/** @param {unknown} value @param {number} defaultPort @returns {Host} */
function hostOf (value, defaultPort) {
  if (value !== null && typeof value === 'object' && typeof (/** @type {any} */ (value).host) === 'string') {
    const { host, port = defaultPort } = /** @type {any} */ (value)
    if (host !== '' && Number.isSafeInteger(port) && port > 0 && port < 65536) return { host, port }
  } else if (typeof value === 'string') {
    const match = /^(?:\[([^\]]+)\]|([^:]+))(?::(\d+))?$/.exec(value)
    if (match) {
      const port = match[3] === undefined ? defaultPort : Number(match[3])
      if (port > 0 && port < 65536) return { host: match[1] || match[2], port }
    }
  }
  throw invalid(`A host must be 'host:port' or { host, port }, got ${describe(value)}`)
}

/**
 * Whether an error means the connection, or the server, is gone (or is not
 * the primary any more), rather than that the server refused the statement.
 * @param {unknown} err
 */
export function isConnectionError (err) {
  const e = /** @type {any} */ (err)
  if (!e) return false
  const code = typeof e.code === 'string' ? e.code : ''
  if (NETWORK_CODES.has(code)) return true
  // 08: connection exception; 57P01-03: the server shuts down, crashed or
  // is starting; 25006: a read-only transaction (a standby, or a demoted primary).
  if (/^08/.test(code) || code === '57P01' || code === '57P02' || code === '57P03' || code === '25006') return true
  return /Connection terminated|connection error|not queryable|timeout exceeded when trying to connect|Client was closed/i.test(String(e.message))
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND', 'LEVELKIT_NO_PRIMARY'])

/**
 * What PostgresLevel uses of a pg Pool (query, connect, end, 'error'
 * events), over a pg Pool on whichever host is the primary now. A
 * connection error drops that pool; the next operation looks for the
 * primary again, waiting up to the failover timeout.
 */
export class PrimaryPool extends EventEmitter {
  #failover
  /** @type {{ pool: import('pg').Pool, host: Host } | null} */
  #current = null
  /** @type {Promise<{ pool: import('pg').Pool, host: Host }> | null} */
  #finding = null
  #ended = false
  /** @type {Set<import('pg').Pool>} pools of earlier primaries, still ending */
  #old = new Set()

  /** @param {Failover} failover */
  constructor (failover) {
    super()
    this.#failover = failover
  }

  /** The host used now (null while looking for one). */
  get host () {
    return this.#current && this.#current.host
  }

  /** How long an operation waits for a primary. */
  get timeout () {
    return this.#failover.timeout
  }

  /**
   * Run a query, again on the primary found next if the connection fails:
   * for reads and idempotent writes only (PostgresLevel's batches go
   * through queryOnce() and their commit ids).
   * @param {import('pg').QueryConfig | string} query @param {unknown[]} [values]
   */
  async query (query, values) {
    if (typeof query === 'string') query = { text: query, values }
    const deadline = Date.now() + this.#failover.timeout
    for (;;) {
      try {
        return await this.queryOnce(query, deadline)
      } catch (err) {
        if (!isConnectionError(err) || Date.now() >= deadline || this.#ended) throw err
        await pause()
      }
    }
  }

  /**
   * Run a query once on the primary (waiting for one until `deadline`).
   * @param {import('pg').QueryConfig} query @param {number} [deadline]
   */
  async queryOnce (query, deadline = Date.now() + this.#failover.timeout) {
    const current = await this.#primary(deadline)
    try {
      return await current.pool.query(query)
    } catch (err) {
      if (isConnectionError(err)) this.#drop(current)
      throw err
    }
  }

  /** A connection of the pool on the primary (the table lock's). */
  async connect () {
    const deadline = Date.now() + this.#failover.timeout
    for (;;) {
      const current = await this.#primary(deadline)
      try {
        const client = await current.pool.connect()
        client.on('error', () => this.#drop(current))
        return client
      } catch (err) {
        if (isConnectionError(err)) this.#drop(current)
        if (!isConnectionError(err) || Date.now() >= deadline) throw err
        await pause()
      }
    }
  }

  /**
   * A connection of its own on the primary, not from the pool (a
   * snapshot's, the shared writer lock's, the listening one), with
   * `settings` under the pool's: when the primary found does not answer,
   * the next one is looked for, up to the failover timeout. Its failure
   * makes the next operation look again.
   * @param {import('pg').ClientConfig} settings
   */
  async connectClient (settings) {
    const deadline = Date.now() + this.#failover.timeout
    for (;;) {
      const current = await this.#primary(deadline)
      const client = new pg.Client({ ...settings, ...this.#failover.configFor(current.host) })
      client.on('error', () => this.#drop(current))
      try {
        await client.connect()
        return client
      } catch (err) {
        client.end().catch(noop)
        if (isConnectionError(err)) this.#drop(current)
        if (!isConnectionError(err) || Date.now() >= deadline || this.#ended) throw err
        await pause()
      }
    }
  }

  async end () {
    this.#ended = true
    const current = this.#current
    this.#current = null
    if (current) this.#old.add(current.pool)
    await Promise.all([...this.#old].map(pool => pool.end().catch(noop)))
    this.#old.clear()
  }

  /** @param {number} deadline */
  #primary (deadline) {
    if (this.#ended) return Promise.reject(new Error('the pool has ended'))
    if (this.#current) return Promise.resolve(this.#current)
    if (!this.#finding) {
      this.#finding = this.#find(deadline).finally(() => { this.#finding = null })
    }
    return this.#finding
  }

  /**
   * Try each host until one answers as a primary (pg_is_in_recovery() is
   * false), round after round until `deadline`.
   * @param {number} deadline
   */
  async #find (deadline) {
    /** @type {unknown} */
    let last = null
    for (;;) {
      for (const host of this.#failover.hosts) {
        const client = new pg.Client({ connectionTimeoutMillis: CONNECT_TIMEOUT, ...this.#failover.configFor(host) })
        client.on('error', noop)
        try {
          await client.connect()
          const { rows } = await client.query('SELECT pg_is_in_recovery() AS standby')
          if (!rows[0].standby) {
            if (this.#ended) throw new Error('the pool has ended')
            const pool = new pg.Pool(this.#failover.configFor(host))
            pool.on('error', (err) => { this.#dropPool(pool); this.emit('error', err) })
            this.#current = { pool, host }
            this.emit('primary', host)
            return this.#current
          }
          last = new Error(`${host.host}:${host.port} is a standby`)
        } catch (err) {
          last = err
        } finally {
          // Not awaited: pg's end() of a client whose connection failed
          // can wait for an 'end' event that has already been emitted.
          client.end().catch(noop)
        }
      }
      if (Date.now() >= deadline || this.#ended) {
        throw levelkitError('LEVELKIT_NO_PRIMARY', `No primary among ${this.#failover.hosts.map(h => `${h.host}:${h.port}`).join(', ')} (${last instanceof Error ? last.message : 'no answer'})`, { cause: last })
      }
      await pause()
    }
  }

  /** @param {{ pool: import('pg').Pool }} current */
  #drop (current) {
    if (this.#current !== current) return
    this.#dropPool(current.pool)
  }

  /** @param {import('pg').Pool} pool */
  #dropPool (pool) {
    if (this.#current && this.#current.pool === pool) this.#current = null
    if (this.#old.has(pool)) return
    this.#old.add(pool)
    pool.end().catch(noop).finally(() => this.#old.delete(pool))
  }
}

/**
 * Commit ids: each batch of a database, in the statement that writes it,
 * inserts (session, seq) into levelkit_commits. When the connection fails
 * before the batch's answer, its outcome is settled on the primary found
 * next by inserting the same id, as fenced: the insert waits for a
 * transaction still writing that id, and then either finds it (the batch
 * committed) or takes the id so that it never can (it did not). Only then
 * is the batch written again, under a new id. levelkit's write path decides
 * sequences and unique values before the batch: writing a batch twice would
 * double them, losing one would leave a gap.
 */
export class CommitLog {
  #pool
  #session = randomBytes(12).toString('hex')
  #seq = 0
  /** @type {Set<number>} ids not settled yet: the rows below the smallest are no longer needed */
  #unsettled = new Set()
  #onSettle

  /**
   * @param {PrimaryPool} pool
   * @param {(settled: { commitId: string, committed: boolean | null }) => void} [onSettle] told how each unknown outcome was settled (null: it could not be)
   */
  constructor (pool, onSettle = noop) {
    this.#pool = pool
    this.#onSettle = onSettle
  }

  /** Create the table when missing; remove the ids of sessions long gone. */
  async open () {
    // Two openers at once: one creates it, the other waits and finds it.
    await createOnce({ query: text => this.#pool.query({ text }) }, COMMITS_TABLE, [`CREATE TABLE IF NOT EXISTS ${COMMITS_TABLE} (session text NOT NULL, seq bigint NOT NULL, fenced boolean NOT NULL DEFAULT false, at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (session, seq))`])
    await this.#pool.query({ text: `DELETE FROM ${COMMITS_TABLE} WHERE at < now() - interval '${COMMITS_KEPT}'` })
  }

  /** Remove this session's ids (at close). */
  async close () {
    await this.#pool.queryOnce({ text: `DELETE FROM ${COMMITS_TABLE} WHERE session = $1`, values: [this.#session] }).catch(noop)
  }

  /**
   * Write a batch: `text` (one statement: an INSERT, DELETE or WITH ...)
   * with its commit id, settled as above when the connection fails, and
   * written again (once, by default) when it did not commit.
   * With `run`, the statement goes to a connection of the caller's (the
   * shared writer lock's, whose lock fences the batch): a batch found not
   * committed there is not written again here, the caller decides.
   * @param {string} text @param {unknown[]} values
   * @param {{ beforeRetry?: () => Promise<void>, retries?: number, run?: (query: import('pg').QueryConfig) => Promise<unknown> }} [options]
   */
  async write (text, values, options = {}) {
    const { beforeRetry, run = (/** @type {import('pg').QueryConfig} */ query) => this.#pool.queryOnce(query) } = options
    const retries = options.run ? 0 : options.retries ?? 1
    for (let attempt = 0; ; attempt++) {
      const id = this.take(text, values)
      try {
        if (attempt > 0 && beforeRetry) await beforeRetry()
        try {
          await run(id.query)
          return
        } catch (err) {
          // The server answered with an error: the statement rolled back.
          if (!isConnectionError(err)) throw err
          if (await this.settle(id.seq, err)) return
          if (attempt >= retries) {
            throw levelkitError(codes.BACKEND_UNAVAILABLE, `The batch was not committed (the connection failed ${attempt + 1} times): ${/** @type {Error} */ (err).message}`, { cause: err, commitId: id.commitId, committed: false })
          }
        }
      } finally {
        this.done(id.seq)
      }
    }
  }

  /**
   * A commit id for a batch written elsewhere (in a transaction of the
   * caller's, postgres-section-lock.js): the statement `text` with it, to
   * send once; settle() its outcome if the answer never comes, and done()
   * once it is known.
   * @param {string} text one statement (an INSERT, DELETE or WITH ...) @param {unknown[]} values
   * @returns {{ seq: number, commitId: string, query: import('pg').QueryConfig }}
   */
  take (text, values) {
    const seq = ++this.#seq
    this.#unsettled.add(seq)
    let smallest = seq
    for (const s of this.#unsettled) if (s < smallest) smallest = s
    return { seq, commitId: `${this.#session}:${seq}`, query: { text: withCommitId(text, values.length), values: [...values, this.#session, seq, smallest] } }
  }

  /** The outcome of the batch of id `seq` is known (or will never be asked for). @param {number} seq */
  done (seq) {
    this.#unsettled.delete(seq)
  }

  /**
   * Whether the batch of id `seq` committed, asked of the primary (waiting
   * for one, up to the failover timeout), as fenced: from then on it never
   * can. Rejects with LEVELKIT_COMMIT_UNKNOWN when no primary answers in time.
   * @param {number} seq @param {unknown} failure why the batch's answer never came
   * @returns {Promise<boolean>}
   */
  async settle (seq, failure) {
    const commitId = `${this.#session}:${seq}`
    let committed
    try {
      committed = await this.#settle(seq, failure)
    } catch (unknown) {
      this.#onSettle({ commitId, committed: null })
      throw unknown
    }
    this.#onSettle({ commitId, committed })
    return committed
  }

  /**
   * @param {number} seq @param {unknown} failure
   * @returns {Promise<boolean>}
   */
  async #settle (seq, failure) {
    const deadline = Date.now() + this.#pool.timeout
    let last = failure
    for (;;) {
      try {
        const { rows } = await this.#pool.queryOnce({
          text: `INSERT INTO ${COMMITS_TABLE} (session, seq, fenced) VALUES ($1, $2, true) ON CONFLICT (session, seq) DO NOTHING RETURNING seq`,
          values: [this.#session, seq]
        }, deadline)
        return rows.length === 0
      } catch (err) {
        last = err
        if (!isConnectionError(err) || Date.now() >= deadline) break
        await pause()
      }
    }
    throw levelkitError(codes.COMMIT_UNKNOWN, `The connection failed while a batch was being committed, and whether it was could not be found out: ${/** @type {Error} */ (last).message}`, {
      cause: last,
      commitId: `${this.#session}:${seq}`
    })
  }
}

/**
 * The statement with its commit id inserted in the same statement (so in
 * the same transaction), and this session's ids below the smallest
 * unsettled one removed. Its three parameters follow the statement's own.
 * @param {string} text @param {number} count the statement's parameters
 */
export function withCommitId (text, count) {
  const [session, seq, smallest] = [count + 1, count + 2, count + 3]
  const ctes = `lk_commit AS (INSERT INTO ${COMMITS_TABLE} (session, seq) VALUES ($${session}, $${seq})), ` +
    `lk_pruned AS (DELETE FROM ${COMMITS_TABLE} WHERE session = $${session} AND seq < $${smallest})`
  return text.startsWith('WITH ') ? `WITH ${ctes}, ${text.slice(5)}` : `WITH ${ctes} ${text}`
}

function pause () {
  return new Promise(resolve => setTimeout(resolve, PAUSE))
}

function noop () {}
