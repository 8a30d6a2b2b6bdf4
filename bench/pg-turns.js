// What a section transaction's time is made of, from the timelines
// LEVELKIT_PG_TRACE writes (lib/backends/postgres-trace.js): run a bench with
// LEVELKIT_PG_TRACE=bench/out/trace (each levelkit process writes
// bench/out/trace.<pid>.json as it exits; any prefix will do), then
//   node bench/pg-turns.js bench/out/trace.*.json [--last 100]
// Per transaction whose sections ran (with createChat at locking:
// 'serializable', its opening locked the chats sequence's lock table, held
// to its end): the wait for its first answer (the lock, then the
// first statement's round trip), the time held (first answer to end), and
// how the held time splits into the statements' round trips (the union of
// their sent-to-answered intervals), the batch-and-COMMIT's round trip, and
// the process's own work between them (the rest); its sections (group
// size) and statements. Medians over the transactions of each process's
// last --last sections (the timed part of a bench whose warm-up came first),
// And the turns of all processes laid end to end by their absolute times:
// the share of the wall time during which some process held one, and the
// gaps between one turn's end and the next one's first answer, when the
// next one was waiting already (the hand-over: its lock granted, its first
// statement run, its answer read by its process) and when it was not.
import fs from 'node:fs'
import { median, quantile } from './lib/stats.js'

const args = process.argv.slice(2)
const at = args.indexOf('--last')
const last = at === -1 ? 100 : Number(args[at + 1])
const files = args.filter((a, i) => !a.startsWith('--') && (at === -1 || i !== at + 1))
if (files.length === 0) {
  console.error('Usage: node bench/pg-turns.js TRACE.json... [--last 100]')
  process.exit(2)
}

/** @typedef {{ process: number, start: number, first: number, end: number, sections: number, statements: number, wire: number, batch: number, failed: boolean }} Turn */

/**
 * The transactions of one process's trace.
 * @param {{ pid: number, origin: number, events: Array<[number, string, number, number]> }} trace
 * @returns {Turn[]}
 */
function turnsOf (trace) {
  /** @type {Map<number, any>} */
  const byTx = new Map()
  const of = (/** @type {number} */ tx) => {
    let t = byTx.get(tx)
    if (t === undefined) byTx.set(tx, t = { process: trace.pid, start: NaN, first: NaN, end: NaN, sections: 0, statements: 0, intervals: [], sent: [], batchAt: NaN, failed: false })
    return t
  }
  for (const [time, event, tx, value] of trace.events) {
    if (tx === 0) continue
    const t = of(tx)
    const abs = trace.origin + time
    if (event === 'sections') t.sections = value
    else if (event === 'open') t.start = abs
    else if (event === 'sent') t.sent.push(abs)
    else if (event === 'answered') {
      const sent = t.sent.shift()
      if (Number.isNaN(t.first)) t.first = abs
      else {
        t.statements++
        t.intervals.push([sent, abs])
      }
    } else if (event === 'batch' || event === 'commit' || event === 'rollback') t.batchAt = abs
    else if (event === 'ended' || event === 'failed') {
      if (event === 'failed') t.failed = true
      if (Number.isNaN(t.end)) t.end = abs
      // A transaction of one statement (its batch sent with its opening).
      if (Number.isNaN(t.first)) t.first = abs
    }
  }
  return [...byTx.values()].filter(t => !Number.isNaN(t.start) && !Number.isNaN(t.end)).map(t => {
    // Statements queued behind each other overlap: the union of their intervals.
    t.intervals.sort((/** @type {number[]} */ a, /** @type {number[]} */ b) => a[0] - b[0])
    let wire = 0
    let reach = -Infinity
    for (const [from, to] of t.intervals) {
      const begin = Math.max(from, reach)
      if (to > begin) wire += to - begin
      reach = Math.max(reach, to)
    }
    return { process: t.process, start: t.start, first: t.first, end: t.end, sections: t.sections, statements: t.statements + 1, wire, batch: Number.isNaN(t.batchAt) ? 0 : t.end - t.batchAt, failed: t.failed }
  }).sort((a, b) => a.start - b.start)
}

/** @type {Turn[]} */
const all = []
for (const file of files) {
  const turns = turnsOf(JSON.parse(fs.readFileSync(file, 'utf8'))).filter(t => t.sections > 0)
  // The last `last` sections' transactions.
  let sections = 0
  let from = turns.length
  while (from > 0 && sections < last) sections += turns[--from].sections
  all.push(...turns.slice(from))
}
if (all.length === 0) {
  console.log('no inserting transaction in the traces')
  process.exit(0)
}
const fmt = (/** @type {number} */ x) => x.toFixed(1)
const row = (/** @type {string} */ name, /** @type {number[]} */ xs) => console.log(`${name.padEnd(46)} median ${fmt(median(xs)).padStart(7)}  p90 ${fmt(quantile(xs, 0.9)).padStart(7)}  mean ${fmt(xs.reduce((a, b) => a + b, 0) / xs.length).padStart(7)}`)
const held = all.map(t => t.end - t.first)
const own = all.map(t => t.end - t.first - t.wire - t.batch)
console.log(`${all.length} inserting transactions from ${files.length} processes (each one's last ${last} sections), ${all.filter(t => t.failed).length} failed`)
row('sections (inserts) per transaction', all.map(t => t.sections))
row('statements per transaction (the batch aside)', all.map(t => t.statements))
row('ms: open to first answer (lock wait + RTT)', all.map(t => t.first - t.start))
row('ms: held (first answer to end)', held)
row('ms: - statements on the wire', all.map(t => t.wire))
row('ms: - batch and COMMIT on the wire', all.map(t => t.batch))
row('ms: - own work between them', own)
row('ms held per section', all.map(t => (t.end - t.first) / t.sections))
row('ms own work per section', all.map((t, i) => own[i] / t.sections))
row('ms per statement on the wire', all.filter(t => t.statements > 1).map(t => t.wire / (t.statements - 1)))
// The turns laid end to end: how much of the span some process held one.
const starts = all.map(t => t.first).sort((a, b) => a - b)
const spans = all.map(t => [t.first, t.end]).sort((a, b) => a[0] - b[0])
let covered = 0
let reach = -Infinity
for (const [from, to] of spans) {
  const begin = Math.max(from, reach)
  if (to > begin) covered += to - begin
  reach = Math.max(reach, to)
}
const wall = Math.max(...all.map(t => t.end)) - starts[0]
console.log(`wall ${fmt(wall)} ms; some turn held ${fmt(100 * covered / wall)}% of it; sum of turns / wall ${(held.reduce((a, b) => a + b, 0) / wall).toFixed(2)}`)
const byFirst = [...all].sort((a, b) => a.first - b.first)
const waiting = []
const notWaiting = []
for (let i = 1; i < byFirst.length; i++) {
  const gap = byFirst[i].first - byFirst[i - 1].end
  if (gap < 0) continue
  ;(byFirst[i].start < byFirst[i - 1].end ? waiting : notWaiting).push(gap)
}
const sum = (/** @type {number[]} */ xs) => xs.reduce((a, b) => a + b, 0)
if (waiting.length > 0) row(`ms hand-over, next one waiting (${waiting.length}, ${fmt(100 * sum(waiting) / wall)}% of wall)`, waiting)
if (notWaiting.length > 0) row(`ms idle, nobody waiting (${notWaiting.length}, ${fmt(100 * sum(notWaiting) / wall)}% of wall)`, notWaiting)
