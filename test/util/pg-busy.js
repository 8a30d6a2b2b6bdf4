// Statements sent on a pg Client while another statement of that client is
// still running. pg 8 queues them (and warns "Calling client.query() when
// the client is already executing a query" once a second one waits); pg 9
// refuses them. levelkit sends a connection's statements one at a time
// (InOrder), so a test can watch for one and fail on it.
import pg from 'pg'

/**
 * @typedef {object} BusyQuery
 * @property {string} client the client's fallback_application_name ('pool' for the pool's)
 * @property {string} text the statement sent while the client was busy
 * @property {string} running what the client was running then (or '' when only queued ones)
 * @property {number} queued statements waiting on the client then (pg warns when > 0)
 * @property {string} stack where it was sent
 */

/** @type {Set<BusyQuery[]>} the lists of the watches in force */
const watches = new Set()
/** @type {Function | null} pg's own query(), while patched */
let original = null

/** @param {any} statement */
function textOf (statement) {
  if (typeof statement === 'string') return statement
  if (statement && typeof statement.text === 'string') return statement.text
  return statement?.constructor?.name ?? String(statement)
}

function patch () {
  const query = original = pg.Client.prototype.query
  /** @this {any} @param {any[]} args */
  pg.Client.prototype.query = function (...args) {
    // pg's own state: the statement being answered, and those not sent yet.
    const active = this._activeQuery
    const queued = this._queryQueue.length
    if (active || queued > 0) {
      /** @type {BusyQuery} */
      const busy = {
        client: this.connectionParameters?.fallback_application_name ?? 'pool',
        text: textOf(args[0]),
        running: active ? textOf(active) : '',
        queued,
        stack: String(new Error('sent on a busy client').stack).split('\n').slice(2, 10).join('\n')
      }
      for (const list of watches) list.push(busy)
    }
    return query.apply(this, args)
  }
}

/**
 * Watch every pg Client of this process until `stop()`: the statements
 * sent on a client that was running (or queuing) another.
 * @returns {{ busy: BusyQuery[], stop: () => BusyQuery[] }}
 */
export function watchBusyClients () {
  if (original === null) patch()
  /** @type {BusyQuery[]} */
  const busy = []
  watches.add(busy)
  return {
    busy,
    stop () {
      watches.delete(busy)
      if (watches.size === 0 && original !== null) {
        pg.Client.prototype.query = /** @type {any} */ (original)
        original = null
      }
      return busy
    }
  }
}

/**
 * A readable list of busy statements, for a failed assertion's message.
 * @param {BusyQuery[]} busy
 */
export function describeBusy (busy) {
  return busy.map(b => `${b.client}: ${b.text.slice(0, 100)} (while running ${b.running.slice(0, 60) || 'nothing'}, ${b.queued} queued)\n${b.stack}`).join('\n\n')
}
