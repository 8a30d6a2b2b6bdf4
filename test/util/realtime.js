// Real-time order across database handles that share one database
// (processes on a shared postgres table, tabs on one IndexedDB database):
// once an operation is acknowledged in one handle, every operation called
// after that, in any handle, sees it. runHistory() interleaves the
// operations of test/util/realtime-ops.js over the handles, from several
// clients at once with random pauses, and times each call and answer as
// the driver sees them (a call timed before it is made, an answer after it
// arrived: an operation that must see another was called after the other
// really was acknowledged). checkHistory() then checks every pair:
// - a register (a record's n, the counter, the children's last sequence
//   number) only grows: an operation called after another was answered
//   sees at least what the other saw or made, and the writes, each +1,
//   made every value once (no update lost);
// - a set (records inserted, links added) read after an addition was
//   answered holds it: getBy() finds the name, update() finds the record,
//   a query lists it, to() lists the link;
// - a name inserted twice is refused the second time (LEVELKIT_UNIQUE)
//   when the first was acknowledged before the second was called, and
//   never stored twice.

/**
 * @typedef {{ run: (op: string, args: any) => Promise<any> }} Handle a database handle: runs an operation of realtime-ops.js
 * @typedef {{ client: number, handle: number, op: string, args: any, call: number, ack: number, result?: any, error?: { code?: string, message: string } }} Event
 */

/** What each operation is, and how often it is picked. */
const OPS = [
  ['update', 3, 'register'], ['write', 3, 'register'], ['transaction', 2, 'register'],
  ['get', 3, 'register'], ['getBy', 2, 'register'], ['query', 1, 'register'],
  ['readSection', 2, 'register'], ['readTransaction', 1, 'register'],
  ['add', 2, 'counter'], ['counter', 2, 'counter'], ['counterQuery', 1, 'counter'],
  ['append', 2, 'log'], ['lastSeq', 2, 'log'], ['range', 1, 'log'],
  ['insert', 3, 'inserted'], ['findName', 2, 'inserted'], ['touch', 2, 'inserted'], ['scan', 1, 'inserted'],
  ['link', 2, 'links'], ['links', 1, 'links']
]
const WEIGHT = OPS.reduce((sum, [, weight]) => sum + /** @type {number} */ (weight), 0)
const WRITES = new Set(['update', 'write', 'transaction', 'add', 'append'])

/** @param {number} ms */
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

/**
 * Run `count` operations over `handles` from `clients` clients at once.
 * @param {object} options
 * @param {Handle[]} options.handles
 * @param {(() => number) & import('./prng.js').Random} options.random
 * @param {number} options.count
 * @param {number} options.clients
 * @param {number} options.registers how many register records realtime-ops.js seed() made
 * @param {number} [options.maxPause] ms a client pauses at most before each operation
 * @param {number} [options.maxWait] ms a section waits at most between its read and its write
 * @param {() => number} [options.now] the clock (performance.now())
 * @returns {Promise<Event[]>}
 */
export async function runHistory ({ handles, random, count, clients, registers, maxPause = 3, maxWait = 4, now = () => performance.now() }) {
  /** @type {Event[]} */
  const history = []
  /** @type {string[]} names whose insert was acknowledged */
  const names = []
  /** @type {number[]} ids inserted, acknowledged */
  const ids = []
  /** @type {string[]} names an insert was called for */
  const tried = []
  let left = count
  let made = 0
  const client = async (/** @type {number} */ c) => {
    /** @type {Event | null} this client's last operation */
    let last = null
    while (left > 0) {
      left--
      // Half the time, an operation on what the last one touched, at once,
      // in another handle: called right after the last was answered.
      const follow = last !== null && last.error === undefined && random() < 0.5 ? last : null
      if (follow === null) await sleep(random.int(maxPause + 1))
      let op = follow === null ? pick(random) : pickOf(random, kindOf(follow.op))
      if ((op === 'findName' || op === 'touch' || op === 'link') && ids.length === 0) op = 'insert'
      const handle = follow === null ? random.int(handles.length) : (follow.handle + 1 + random.int(handles.length - 1)) % handles.length
      const register = follow === null || kindOf(follow.op) !== 'register' ? random.int(registers) : follow.args.id - 1
      /** @type {any} */
      const args = { id: register + 1, name: `r${register}`, wait: random.int(maxWait + 1), registers, at: made++ }
      if (op === 'insert') {
        // Now and then a name inserted before (or being inserted): refused.
        args.name = tried.length > 0 && random() < 0.2 ? random.pick(tried) : `x${tried.length}`
        if (!tried.includes(args.name)) tried.push(args.name)
      } else if (op === 'findName') {
        args.name = follow?.op === 'insert' ? follow.args.name : random() < 0.5 ? names[names.length - 1] : random.pick(names)
      } else if (op === 'touch' || op === 'link') {
        args.id = follow?.op === 'insert' ? follow.result.id : random() < 0.5 ? ids[ids.length - 1] : random.pick(ids)
      }
      /** @type {Event} */
      const event = { client: c, handle, op, args, call: now(), ack: 0 }
      try {
        event.result = await handles[handle].run(op, args)
      } catch (err) {
        const e = /** @type {any} */ (err)
        event.error = { code: typeof e?.code === 'string' ? e.code : undefined, message: String(e?.message ?? e) }
      }
      event.ack = now()
      history.push(event)
      if (op === 'insert' && event.result !== undefined) {
        names.push(args.name)
        ids.push(event.result.id)
      }
      last = event
    }
  }
  await Promise.all(Array.from({ length: clients }, (_, c) => client(c)))
  return history
}

/** @param {string} op */
function kindOf (op) {
  return /** @type {string} */ (OPS.find(([name]) => name === op)?.[2])
}

/**
 * An operation of `kind`, by weight; after an insert, one of what reads or writes the record.
 * @param {() => number} random @param {string} kind
 */
function pickOf (random, kind) {
  const ops = kind === 'inserted' ? ['touch', 'touch', 'findName', 'link'] : OPS.filter(([, , k]) => k === kind).map(([op]) => /** @type {string} */ (op))
  return ops[Math.floor(random() * ops.length)]
}

/** @param {() => number} random */
function pick (random) {
  let r = random() * WEIGHT
  for (const [op, weight] of OPS) {
    r -= /** @type {number} */ (weight)
    if (r < 0) return /** @type {string} */ (op)
  }
  return /** @type {string} */ (OPS[0][0])
}

/**
 * The violations of real-time order (and the lost or doubled writes) in
 * `history`, each told with the two operations it concerns.
 * @param {Event[]} history
 * @returns {string[]}
 */
export function checkHistory (history) {
  /** @type {string[]} */
  const problems = []
  const show = (/** @type {Event} */ e) => `${e.op}(${JSON.stringify(e.args.id ?? e.args.name)}) in handle ${e.handle} [${e.call.toFixed(1)}..${e.ack.toFixed(1)}] ${e.error ? `rejected ${e.error.code ?? e.error.message}` : JSON.stringify(e.result)}`
  // Inserts: one success per name; a second refused, when the first was answered before it was called.
  /** @type {Map<string, Event[]>} */
  const inserts = new Map()
  for (const e of history) if (e.op === 'insert') inserts.set(e.args.name, [...inserts.get(e.args.name) ?? [], e])
  for (const [name, events] of inserts) {
    const won = events.filter(e => e.result !== undefined)
    if (won.length > 1) problems.push(`name ${name} inserted twice: ${won.map(show).join('; ')}`)
    for (const e of events) {
      if (e.error !== undefined && e.error.code !== 'LEVELKIT_UNIQUE') problems.push(`insert failed: ${show(e)}`)
      if (e.error?.code === 'LEVELKIT_UNIQUE' && won.length === 0) problems.push(`insert refused with no record of the name: ${show(e)}`)
      for (const first of won) if (first !== e && first.ack < e.call && e.error?.code !== 'LEVELKIT_UNIQUE') problems.push(`an insert of a name inserted before it was called is not refused: ${show(first)}, then ${show(e)}`)
    }
  }
  // Any other failure is one.
  for (const e of history) if (e.error !== undefined && e.op !== 'insert') problems.push(`failed: ${show(e)}`)

  // Registers.
  /** @type {Map<string, Event[]>} */
  const registers = new Map()
  for (const e of history) {
    if (e.error !== undefined || e.result?.observed === undefined) continue
    const kind = OPS.find(([op]) => op === e.op)?.[2]
    const key = kind === 'register' ? `record ${e.args.id}` : /** @type {string} */ (kind)
    registers.set(key, [...registers.get(key) ?? [], e])
  }
  for (const [key, events] of registers) {
    const writes = events.filter(e => WRITES.has(e.op)).map(e => e.result.after).sort((a, b) => a - b)
    if (writes.some((value, i) => value !== i + 1)) problems.push(`${key}: the writes made ${JSON.stringify(writes)}, not 1..${writes.length} (a write lost or made twice)`)
    for (const [x, y] of laterPairs(events, e => e.result.after, (y, bound) => y.result.observed < bound)) {
      // Which handle made what x saw, and when: a write still unanswered
      // when y was called was seen by x before it was acknowledged.
      const made = events.find(e => WRITES.has(e.op) && e.result.after === x.result.after)
      problems.push(`${key}: ${show(y)} was called after ${show(x)} was answered, and saw less${made === undefined || made === x ? '' : ` (${x.result.after} made by ${show(made)})`}`)
    }
  }

  // Sets: what a read finds holds every addition answered before it was called.
  /** @param {Event[]} adds @param {Event[]} reads @param {string} what */
  const sets = (adds, reads, what) => {
    const sorted = adds.filter(e => e.error === undefined).sort((a, b) => a.ack - b.ack)
    for (const y of reads) {
      if (y.error !== undefined) continue
      const found = new Set(y.result.found)
      for (const x of sorted) {
        if (x.ack >= y.call) break
        const element = x.result.id ?? x.result.linked
        if (y.op === 'findName' && x.args.name !== y.args.name) continue
        if (y.op === 'touch' && element !== y.args.id) continue
        if (!found.has(element)) problems.push(`${what}: ${show(y)} was called after ${show(x)} was answered, and missed it`)
      }
    }
  }
  sets(history.filter(e => e.op === 'insert'), history.filter(e => e.op === 'findName' || e.op === 'scan' || e.op === 'touch'), 'inserted records')
  sets(history.filter(e => e.op === 'link'), history.filter(e => e.op === 'links'), 'links')
  return problems
}

/**
 * The pairs (x, y) of `events` where y was called after x was answered
 * and `below(y, bound of x)`: one per y, with the x of the highest bound.
 * @param {Event[]} events @param {(e: Event) => number} bound @param {(y: Event, bound: number) => boolean} below
 * @returns {Array<[Event, Event]>}
 */
function laterPairs (events, bound, below) {
  const byAck = [...events].sort((a, b) => a.ack - b.ack)
  const byCall = [...events].sort((a, b) => a.call - b.call)
  /** @type {Array<[Event, Event]>} */
  const pairs = []
  /** @type {Event | null} */
  let best = null
  let k = 0
  for (const y of byCall) {
    while (k < byAck.length && byAck[k].ack < y.call) {
      if (best === null || bound(byAck[k]) > bound(best)) best = byAck[k]
      k++
    }
    if (best !== null && below(y, bound(best))) pairs.push([best, y])
  }
  return pairs
}

/**
 * How many pairs of operations of different handles, one called after the
 * other was answered, the history holds (what it tested, roughly).
 * @param {Event[]} history
 */
export function crossHandlePairs (history) {
  const byAck = [...history].sort((a, b) => a.ack - b.ack)
  let pairs = 0
  for (const y of history) {
    for (const x of byAck) {
      if (x.ack >= y.call) break
      if (x.handle !== y.handle && y.call - x.ack < 5) pairs++
    }
  }
  return pairs
}
