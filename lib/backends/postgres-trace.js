// A timeline of the section transactions of a process (locking: 'keys' or
// 'serializable'), for measuring what a transaction's time is made of: with
// locking: 'serializable' at several processes, the processes take turns on
// a sequence's lock table from a transaction's first statement to its COMMIT
// (postgres-serializable.js), so the holder's turn is everyone's wait, and
// how much of it is round trips and how much this process's own work
// between them is what says how to shorten it (bench/pg-turns.js reads it).
// Off unless LEVELKIT_PG_TRACE names a file prefix: then every event is kept
// in memory and the process writes `<prefix>.<pid>.json` as it exits. Off,
// each call site costs one test of a constant.
import fs from 'node:fs'
import { performance } from 'node:perf_hooks'

const target = process.env.LEVELKIT_PG_TRACE

/** Whether events are recorded. */
export const tracing = typeof target === 'string' && target !== ''

/** @type {Array<number | string>} flat: time (ms, performance.now()), event, transaction number, value, ... */
const events = []

/**
 * Record `event` of section transaction `transaction` (its number in this
 * process) now: 'open' (its first statement sent, with the opening that
 * locks), 'sent' and 'answered' (a statement of it, or its batch and
 * COMMIT), 'batch' (the batch and its COMMIT sent), 'commit' (a COMMIT
 * alone sent), 'ended' (its end answered), 'failed' (a statement or the end
 * refused), 'sections' (its end is decided: `value` critical sections ran
 * in it, or since the last one).
 * @param {string} event @param {number} transaction @param {number} [value]
 */
export function trace (event, transaction, value = 0) {
  events.push(performance.now(), event, transaction, value)
}

if (tracing) {
  process.on('exit', () => {
    const rows = []
    for (let i = 0; i < events.length; i += 4) rows.push([events[i], events[i + 1], events[i + 2], events[i + 3]])
    fs.writeFileSync(`${target}.${process.pid}.json`, JSON.stringify({ pid: process.pid, origin: performance.timeOrigin, events: rows }))
  })
}
