// A seeds' question (issue 6 part 3): one classic-level database with a
// sublevel per namespace, or one classic-level database per namespace?
//
// Four namespaces (users, messages, counters, by-sender); a "send" writes a
// message, its chat's counter and an index entry (bench/lib/one-vs-many-stores.js):
//   one   one database, 4 sublevels: a send is one atomic batch of 3 ops
//   many  4 databases (4 directories): a send is one batch per store (3),
//         issued together (--many-write parallel, default) or one after the
//         other (--many-write sequential)
//
// 1. Throughput, open files and memory. Each layout runs in a child process
//    of its own (bench/lib/one-vs-many-worker.js): open the layout, preload
//    --users users, time --ops sends one at a time, then --ops sends with
//    --concurrency in flight; count the process's open file descriptors
//    (/proc/self/fd, by kind), threads and RSS before opening, after opening
//    and after the writes. Both processes are alive at once and take turns:
//    each part is cut into --slices slices (default 10), one layout's slice
//    then the other's, alternating which goes first, so load from elsewhere
//    hits both alike. --runs K runs on fresh databases; medians, and the
//    median of per-run ratios.
// 2. What is lost: no atomic batch across stores. --kills cycles per layout
//    (alternating): a child (bench/fixtures/one-vs-many-writer.js) sends
//    messages in a loop into a fresh directory; the parent SIGKILLs it at a
//    random time (--kill-min-ms..--kill-max-ms after its first send), then
//    reopens the stores and counts inconsistent states: a message without
//    its counter increment, a counter ahead of its messages, a message
//    without its index entry, an index entry without its message.
//    LevelDB's default sync: false is kept (the write-ahead log reaches the
//    OS on every write, so a killed *process* loses nothing it finished
//    writing; what differs is what "one write" covers).
//
// Output: a summary on stdout, a progress bar on stderr when it is a TTY,
// and under --out (default bench/out/, ignored by git) a folder
// one-vs-many-<time>/ with throughput.csv, kills.csv, summary.json,
// one-vs-many.svg (sends/s) and one-vs-many-resources.svg (fds, threads,
// RSS, inconsistent states).
//
// Usage: node bench/one-vs-many.js [--ops 50000] [--concurrency 16]
//   [--chats 1000] [--users 10000] [--text-size 90] [--runs 3] [--slices 10] [--kills 20]
//   [--kill-min-ms 20] [--kill-max-ms 400] [--many-write parallel|sequential]
//   [--seed 1] [--out bench/out] [--db-dir <tmp>]

import os from 'node:os'
import fs from 'node:fs'
import path from 'node:path'
import { fork } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { Progress } from './lib/progress.js'
import { median, min, max, fmt, mb, parseCount } from './lib/stats.js'
import { barSvg } from './lib/svg-plot.js'
import { openLayout, checkLayout, LAYOUTS } from './lib/one-vs-many-stores.js'
import {
  parseCli, failWith, optionOf, writeCsv, printTable, finishRun, prng, startRun, printMachine
} from './lib/seeds-common.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const NAME = 'one-vs-many'
const WORKER = path.join(here, 'lib', 'one-vs-many-worker.js')
const WRITER = path.join(here, 'fixtures', 'one-vs-many-writer.js')

const USAGE = `Usage: node bench/one-vs-many.js [options]
  --ops N            sends timed one at a time, and again with --concurrency in flight (default 50000)
  --concurrency N    sends in flight in the second part (default 16)
  --chats N          chats the messages go to (default 1000)
  --users N          users preloaded, senders of the messages (default 10000)
  --text-size N      mean message text length in characters (default 90)
  --runs K           throughput runs of each layout (default 3)
  --slices N         slices per part; the two layouts' processes take turns slice by slice (default 10)
  --kills N          kill -9 cycles per layout; 0 skips the kill test (default 20)
  --kill-min-ms MS   earliest kill, after the writer's first send (default 20)
  --kill-max-ms MS   latest kill (default 400)
  --many-write W     parallel | sequential: how the many-db layout issues its 3 batches (default parallel)
  --seed N           seed of the kill times (default 1)
  --out DIR          output folder (default bench/out)
  --db-dir DIR       where the databases go (default the OS temp dir)`

const args = parseCli(NAME, USAGE, {
  ops: { type: 'string', default: '50000' },
  concurrency: { type: 'string', default: '16' },
  chats: { type: 'string', default: '1000' },
  users: { type: 'string', default: '10000' },
  'text-size': { type: 'string', default: '90' },
  runs: { type: 'string', default: '3' },
  slices: { type: 'string', default: '10' },
  kills: { type: 'string', default: '20' },
  'kill-min-ms': { type: 'string', default: '20' },
  'kill-max-ms': { type: 'string', default: '400' },
  'many-write': { type: 'string', default: 'parallel' },
  seed: { type: 'string', default: '1' },
  out: { type: 'string', default: path.join(here, 'out') },
  'db-dir': { type: 'string', default: os.tmpdir() }
})
const count = (/** @type {string} */ flag) => optionOf(NAME, USAGE, () => parseCount(args[flag]))
const opts = {
  ops: count('ops'),
  concurrency: count('concurrency'),
  chats: count('chats'),
  users: count('users'),
  textSize: count('text-size'),
  runs: count('runs'),
  slices: count('slices'),
  kills: args.kills === '0' ? 0 : count('kills'),
  killMinMs: args['kill-min-ms'] === '0' ? 0 : count('kill-min-ms'),
  killMaxMs: count('kill-max-ms'),
  manyWrite: args['many-write'],
  seed: count('seed')
}
if (!['parallel', 'sequential'].includes(opts.manyWrite)) failWith(NAME, USAGE, '--many-write is parallel or sequential')
if (opts.killMaxMs < opts.killMinMs) failWith(NAME, USAGE, '--kill-max-ms must be at least --kill-min-ms')

const run = startRun(NAME, args.out, ['classic-level', 'abstract-level'])
const { machine, versions, loadBefore, startedAt, outDir } = run
fs.mkdirSync(args['db-dir'], { recursive: true })
const dbDir = (/** @type {string} */ what) => {
  const dir = path.join(args['db-dir'], `levelkit-${NAME}-${process.pid}-${what}`)
  fs.rmSync(dir, { recursive: true, force: true })
  return dir
}

console.log(`${NAME}: one classic-level database with 4 sublevels vs 4 classic-level databases (users, messages, counters, by-sender)`)
console.log(`  a send = message + chat counter + index entry: one batch (one) vs one batch per store, ${opts.manyWrite} (many)`)
console.log(`  ${opts.runs} throughput run(s) of ${fmt(opts.ops)} sends one at a time and ${fmt(opts.ops)} with ${opts.concurrency} in flight; ${opts.kills} kill -9 cycle(s) per layout`)
printMachine(run, ['classic-level'])

const progress = new Progress(NAME, opts.runs * 2 * 2 * opts.ops + opts.kills * 2 * 50000)
let done = 0

// 1. Throughput, files, memory.

/**
 * A layout's worker process, asked one thing at a time.
 * @param {'one' | 'many'} layout
 */
function startWorker (layout) {
  const child = fork(WORKER, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  /** @type {Array<{ resolve: (v: any) => void, reject: (e: Error) => void }>} */
  const waiting = []
  child.on('message', (/** @type {any} */ answer) => {
    const w = waiting.shift()
    if (!w) return
    if (answer.ok) w.resolve(answer.result)
    else w.reject(new Error(answer.error))
  })
  child.on('exit', (code, signal) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`The ${layout} worker exited with ${signal || code}`))
  })
  return {
    /** @param {any} message @returns {Promise<any>} */
    ask (message) {
      return new Promise((resolve, reject) => {
        waiting.push({ resolve, reject })
        child.send(message)
      })
    }
  }
}

/**
 * One throughput run: both layouts' processes open at once, taking turns
 * slice by slice (alternating which goes first).
 * @param {number} run
 */
async function throughputRun (run) {
  /** @type {Record<string, ReturnType<typeof startWorker>>} */
  const workers = {}
  /** @type {Record<string, any>} */
  const opened = {}
  for (const layout of LAYOUTS) {
    workers[layout] = startWorker(/** @type {any} */ (layout))
    const config = { layout, dir: dbDir(`${layout}-${run}`), ops: opts.ops, concurrency: opts.concurrency, textSize: opts.textSize, chats: opts.chats, users: opts.users, manyWrite: opts.manyWrite }
    opened[layout] = await workers[layout].ask({ type: 'open', config })
  }
  /** @type {Record<string, Record<string, number>>} */
  const ms = { one: { sequential: 0, concurrent: 0 }, many: { sequential: 0, concurrent: 0 } }
  for (const part of ['sequential', 'concurrent']) {
    for (let k = 0; k < opts.slices; k++) {
      const order = (k + run) % 2 === 0 ? LAYOUTS : [...LAYOUTS].reverse()
      for (const layout of order) {
        ms[layout][part] += await workers[layout].ask({ type: 'slice', part, k, slices: opts.slices })
        done += opts.ops / opts.slices
        progress.update(done)
      }
    }
  }
  const out = []
  for (const layout of LAYOUTS) {
    const r = await workers[layout].ask({ type: 'finish' })
    out.push({
      ...r,
      run,
      sequential: { ops: r.sequentialOps, ms: ms[layout].sequential, opsPerSec: r.sequentialOps / (ms[layout].sequential / 1000) },
      concurrent: { ops: r.concurrentOps, ms: ms[layout].concurrent, opsPerSec: r.concurrentOps / (ms[layout].concurrent / 1000), inFlight: r.inFlight }
    })
  }
  return out
}

/** @type {any[]} */
const throughput = []
for (let run = 1; run <= opts.runs; run++) throughput.push(...await throughputRun(run))

// 2. kill -9.

/**
 * One cycle: start the writer, wait for its first send, let it write for
 * `delayMs`, SIGKILL it, reopen and check.
 * @param {'one' | 'many'} layout @param {number} cycle @param {number} delayMs
 */
async function killCycle (layout, cycle, delayMs) {
  const dir = dbDir(`kill-${layout}-${cycle}`)
  const child = fork(WRITER, [layout, dir, opts.manyWrite, String(opts.textSize), String(opts.chats)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  /** @type {Promise<{ code: number | null, signal: string | null }>} */
  const exited = new Promise(resolve => child.once('exit', (code, signal) => resolve({ code, signal })))
  const timeout = new AbortController()
  const ready = await Promise.race([
    new Promise(resolve => child.once('message', msg => resolve(msg === 'ready'))),
    exited.then(() => false),
    sleep(20000, false, { signal: timeout.signal }).catch(() => false)
  ])
  timeout.abort()
  if (!ready) {
    child.kill('SIGKILL')
    throw new Error(`kill cycle ${cycle} (${layout}): the writer did not start`)
  }
  await sleep(delayMs)
  child.kill('SIGKILL')
  const { signal } = await exited
  if (signal !== 'SIGKILL') throw new Error(`kill cycle ${cycle} (${layout}): the writer ended by itself (${signal})`)
  const stores = await openLayout(layout, dir)
  const check = await checkLayout(stores)
  await stores.close()
  fs.rmSync(dir, { recursive: true, force: true })
  return { layout, cycle, delayMs, ...check }
}

/** @type {any[]} */
const kills = []
const rand = prng(opts.seed)
for (let cycle = 1; cycle <= opts.kills; cycle++) {
  const order = cycle % 2 === 1 ? LAYOUTS : [...LAYOUTS].reverse()
  for (const layout of order) {
    const delayMs = Math.round(opts.killMinMs + rand() * (opts.killMaxMs - opts.killMinMs))
    kills.push(await killCycle(/** @type {any} */ (layout), cycle, delayMs))
    done += 50000
    progress.update(done)
  }
}
progress.done()
const loadAfter = os.loadavg()

// Aggregate.

/** @type {Record<string, any>} */
const summary = { throughput: {}, kills: {} }
for (const layout of LAYOUTS) {
  const mine = throughput.filter(r => r.layout === layout)
  const m = (/** @type {(r: any) => number} */ f) => median(mine.map(f))
  summary.throughput[layout] = {
    runs: mine.length,
    sequentialOpsPerSec: m(r => r.sequential.opsPerSec),
    concurrentOpsPerSec: m(r => r.concurrent.opsPerSec),
    openMs: m(r => r.openMs),
    fdsBefore: m(r => r.before.fds),
    fdsAfterOpen: m(r => r.afterOpen.fds),
    fdsAfterWrites: m(r => r.afterWrites.fds),
    fdKindsAfterWrites: mine[0].afterWrites.fdKinds,
    threadsBefore: m(r => r.before.threads),
    threadsAfterWrites: m(r => r.afterWrites.threads),
    rssBefore: m(r => r.before.rssBytes),
    rssAfterOpen: m(r => r.afterOpen.rssBytes),
    rssAfterWrites: m(r => r.afterWrites.rssBytes),
    peakRss: max(mine.map(r => r.peakRssBytes)),
    cpuMs: m(r => r.cpuMs),
    dbBytes: m(r => r.dbBytes),
    consistentAfterRuns: mine.every(r => !r.check.inconsistent)
  }
}
/** @param {(r: any) => number} f */
const pairedRatio = f => {
  const ratios = []
  for (let run = 1; run <= opts.runs; run++) {
    const one = throughput.find(r => r.run === run && r.layout === 'one')
    const many = throughput.find(r => r.run === run && r.layout === 'many')
    ratios.push(f(one) / f(many))
  }
  return { median: median(ratios), min: min(ratios), max: max(ratios), perRun: ratios }
}
summary.ratios = {
  sequential: pairedRatio(r => r.sequential.opsPerSec),
  concurrent: pairedRatio(r => r.concurrent.opsPerSec)
}
for (const layout of LAYOUTS) {
  const mine = kills.filter(k => k.layout === layout)
  /** @type {Record<string, number>} */
  const problems = {}
  for (const k of mine) for (const [what, n] of Object.entries(k.problems)) problems[what] = (problems[what] || 0) + /** @type {number} */ (n)
  summary.kills[layout] = {
    cycles: mine.length,
    inconsistent: mine.filter(k => k.inconsistent).length,
    problems,
    messagesRecoveredMedian: mine.length ? median(mine.map(k => k.messages)) : null
  }
}

// Print.

const one = summary.throughput.one
const many = summary.throughput.many
console.log()
console.log(`Throughput: sends/s, medians of ${opts.runs} run(s); ratio = one / many (median of per-run ratios, > 1: one database faster)`)
printTable([
  ['', 'one db (sublevels)', 'many dbs', 'ratio', 'per run'],
  ['sends/s, one at a time', fmt(one.sequentialOpsPerSec), fmt(many.sequentialOpsPerSec), `${summary.ratios.sequential.median.toFixed(2)}×`, summary.ratios.sequential.perRun.map((/** @type {number} */ x) => x.toFixed(2)).join(' ')],
  [`sends/s, ${opts.concurrency} in flight`, fmt(one.concurrentOpsPerSec), fmt(many.concurrentOpsPerSec), `${summary.ratios.concurrent.median.toFixed(2)}×`, summary.ratios.concurrent.perRun.map((/** @type {number} */ x) => x.toFixed(2)).join(' ')]
])
console.log()
console.log('Resources of the process (medians; open fds from /proc/self/fd, before opening → after opening → after the writes):')
const kinds = (/** @type {any} */ k) => k ? Object.entries(k).map(([n, c]) => `${n} ${c}`).join(', ') : 'n/a'
printTable([
  ['', 'one db (sublevels)', 'many dbs'],
  ['open fds', `${one.fdsBefore} → ${one.fdsAfterOpen} → ${one.fdsAfterWrites}`, `${many.fdsBefore} → ${many.fdsAfterOpen} → ${many.fdsAfterWrites}`],
  ['fds held by the store(s)', String(one.fdsAfterWrites - one.fdsBefore), String(many.fdsAfterWrites - many.fdsBefore)],
  ['fds after writes, by kind', kinds(one.fdKindsAfterWrites), kinds(many.fdKindsAfterWrites)],
  ['threads', `${one.threadsBefore} → ${one.threadsAfterWrites}`, `${many.threadsBefore} → ${many.threadsAfterWrites}`],
  ['RSS after opening', mb(one.rssAfterOpen), mb(many.rssAfterOpen)],
  ['RSS after the writes', mb(one.rssAfterWrites), mb(many.rssAfterWrites)],
  ['peak RSS', mb(one.peakRss), mb(many.peakRss)],
  ['open time', `${fmt(one.openMs, 1)} ms`, `${fmt(many.openMs, 1)} ms`],
  ['on disk after the run', mb(one.dbBytes), mb(many.dbBytes)],
  ['consistent after the runs', String(one.consistentAfterRuns), String(many.consistentAfterRuns)]
])
if (opts.kills > 0) {
  console.log()
  console.log(`kill -9: ${opts.kills} cycle(s) per layout, killed ${opts.killMinMs}..${opts.killMaxMs} ms after the first send (seed ${opts.seed}); inconsistent states after reopening:`)
  const k1 = summary.kills.one
  const km = summary.kills.many
  const p = (/** @type {any} */ k, /** @type {string} */ what) => String(k.problems[what] || 0)
  printTable([
    ['', 'one db (sublevels)', 'many dbs'],
    ['inconsistent / cycles', `${k1.inconsistent} / ${k1.cycles}`, `${km.inconsistent} / ${km.cycles}`],
    ['messages without counter increment', p(k1, 'messageWithoutCounter'), p(km, 'messageWithoutCounter')],
    ['counter increments without message', p(k1, 'counterWithoutMessage'), p(km, 'counterWithoutMessage')],
    ['messages without index entry', p(k1, 'messageWithoutIndex'), p(km, 'messageWithoutIndex')],
    ['index entries without message', p(k1, 'indexWithoutMessage'), p(km, 'indexWithoutMessage')],
    ['gaps in a chat\'s messages', p(k1, 'gaps'), p(km, 'gaps')],
    ['messages recovered (median per cycle)', fmt(k1.messagesRecoveredMedian), fmt(km.messagesRecoveredMedian)]
  ])
}

// Files.

writeCsv(path.join(outDir, 'throughput.csv'),
  ['run', 'layout', 'sequential_ops_per_sec', 'concurrent_ops_per_sec', 'in_flight', 'open_ms', 'fds_before', 'fds_after_open', 'fds_after_writes', 'threads_before', 'threads_after_writes', 'rss_before', 'rss_after_open', 'rss_after_writes', 'peak_rss', 'cpu_ms', 'db_bytes', 'consistent'],
  throughput.map(r => [r.run, r.layout, r.sequential.opsPerSec, r.concurrent.opsPerSec, r.concurrent.inFlight, r.openMs, r.before.fds, r.afterOpen.fds, r.afterWrites.fds, r.before.threads, r.afterWrites.threads, r.before.rssBytes, r.afterOpen.rssBytes, r.afterWrites.rssBytes, r.peakRssBytes, r.cpuMs, r.dbBytes, String(!r.check.inconsistent)]))
writeCsv(path.join(outDir, 'kills.csv'),
  ['cycle', 'layout', 'delay_ms', 'messages', 'inconsistent', 'message_without_counter', 'counter_without_message', 'message_without_index', 'index_without_message', 'gaps'],
  kills.map(k => [k.cycle, k.layout, k.delayMs, k.messages, String(k.inconsistent), k.problems.messageWithoutCounter, k.problems.counterWithoutMessage, k.problems.messageWithoutIndex, k.problems.indexWithoutMessage, k.problems.gaps]))

const subtitle = `${machine.cpu}, ${machine.cores} cores, node ${versions.node}, classic-level ${versions['classic-level']}, medians of ${opts.runs} run(s), many = ${opts.manyWrite} batches, ${startedAt.toISOString().slice(0, 10)}`
const series = [{ name: 'one db, 4 sublevels', key: 'one' }, { name: '4 dbs', key: 'many' }]
fs.writeFileSync(path.join(outDir, `${NAME}.svg`), barSvg({
  title: 'One database with sublevels vs one database per namespace: sends/s (higher is better)',
  subtitle,
  xLabel: 'sends per second (message + counter + index entry)',
  categories: ['one at a time', `${opts.concurrency} in flight`],
  series: series.map(s => ({ name: s.name, values: [summary.throughput[s.key].sequentialOpsPerSec, summary.throughput[s.key].concurrentOpsPerSec] }))
}))
const resourceCats = ['fds held', 'threads', 'RSS after writes, MB']
if (opts.kills > 0) resourceCats.push(`inconsistent after kill -9 (of ${opts.kills})`)
fs.writeFileSync(path.join(outDir, `${NAME}-resources.svg`), barSvg({
  title: 'One database with sublevels vs one database per namespace: costs (lower is better)',
  subtitle,
  xLabel: 'count (fds, threads, inconsistent states) or MB',
  categories: resourceCats,
  series: series.map(s => {
    const t = summary.throughput[s.key]
    const values = [t.fdsAfterWrites - t.fdsBefore, t.threadsAfterWrites, t.rssAfterWrites / 1e6]
    if (opts.kills > 0) values.push(summary.kills[s.key].inconsistent)
    return { name: s.name, values }
  })
}))
finishRun(outDir, { name: NAME, startedAt, machine, versions, loadBefore, loadAfter }, {
  options: opts,
  summary,
  throughput,
  kills
}, ['throughput.csv', 'kills.csv', `${NAME}.svg`, `${NAME}-resources.svg`])
