// The headline benchmark: the classic LevelDOWN sorted-write benchmark
// (Rod Vagg, leveldown bench/write-sorted.js, 2013), modernised.
//
// Push N pre-sorted entries (default 10,000,000) into a fresh database as
// fast as possible and record, every 1000 writes, the elapsed time and the
// mean time per write over those 1000 writes.
//
// Modes (--mode, or a comma list; --compare = put,batch,raw,levelkit):
//   put           individual db.put() with 10 in flight (--concurrency), keys
//                 increasing monotonically, a 256-byte value: the 2013 shape.
//                 The recorded time per write is each put's latency (call to
//                 resolve, 10 in flight), averaged per 1000, as in 2013.
//   batch         chained batches of 1000 (--batch-size), one in flight; time
//                 per write = batch time / 1000. The default mode.
//   raw           what `levelkit` writes, written by hand: chained batches of
//                 1000 (--batch-size) of the same keys (levelkit's sublevel
//                 prefix and tuple-encoded id) and the same value bytes (the
//                 record's JSON). The like-for-like baseline of `levelkit`;
//                 at up to 100k entries both report a hash of the whole
//                 database, which must be equal.
//   levelkit      the same entries through a levelkit collection with function
//                 ids (db.collection('entries', { id: e => e.key }), no
//                 indexes): one collection.insertMany() of { key, value }
//                 records from a generator, in batches of 1000
//                 (--batch-size): one atomic batch per 1000, like `batch`.
//                 levelkit stores JSON, so the 256 bytes are a base64 string.
//   levelkit-scope (extra) the same, one db.write() scope of 1000 awaited
//                 insert()s per batch: what `levelkit` measured before
//                 insertMany() existed.
//   levelkit-put  (extra) individual collection.insert() with 10 in flight,
//                 the levelkit counterpart of `put` (group commit).
// Keys are String(i).padStart(16, '0') (the 2013 script used
// monotonic-timestamp strings: also ASCII, increasing). The value is the same
// 256 random bytes for every entry, as in 2013 (Snappy finds nothing to
// compress inside one value, but the repeats across entries compress).
//
// Every run is a child process of its own (bench/lib/sorted-write-worker.js):
// a fresh database, a fresh heap, its own peak RSS. With --runs K the
// configurations take turns K times (see roundOrder(): raw and levelkit's
// modes back to back, in alternating order; the others rotated); we report
// medians, and ratios against raw `batch` (levelkit's also against `raw`)
// on the same backend computed run by run, each round's as soon as it ends:
// of wall time, of CPU time (user + system, all threads) of the timed loop,
// and of the main thread's CPU time in it (Linux), the JavaScript side
// without LevelDB's compaction thread. On a shared machine the CPU ratios
// are the steadier figures.
// --overhead adds, for the raw modes, runs of a minimal inline loop with no
// recording (alternating before/after the instrumented run): the script's
// own overhead is the ratio of the two medians.
//
// Memory: the script keeps O(N / 1000) numbers (one row per 1000 writes).
// Peak RSS is reported with its anonymous and file-backed parts. On leveldb
// it is flat in N except for LevelDB's table cache: every table LevelDB
// writes stays open (up to maxOpenFiles, default 1000) with its index block
// in memory (~25 KB here) and its file mmap()ed (~45 KB resident); with
// --max-open-files 100 peak RSS is flat from 1M to 10M (bench/RESULTS.md).
//
// Output: a summary on stdout; progress on stderr when it is a TTY; under
// --out (default bench/out/, ignored by git) a folder sorted-write-<time>/
// with one CSV per run (`elapsed_ms,avg_ns_per_write,window_ms`: the 2013
// columns, plus the wall time of the 1000-write window), summary.json and
// sorted-write.svg (ms per write against seconds, one series per run).
//
// Usage: node bench/sorted-write.js [--entries 10000000] [--mode batch]
//   [--compare] [--backend leveldb|memory] [--runs 1] [--batch-size 1000]
//   [--concurrency 10] [--write-buffer-size 4M] [--cache-size 8M]
//   [--compression true|false] [--max-open-files 1000] [--overhead] [--out bench/out]
//   [--db-dir <tmpdir>] [--keep-db] [--y-scale auto|log|linear] [--levelkit DIR]

import os from 'node:os'
import fs from 'node:fs'
import path from 'node:path'
import { runInChild } from './lib/child-run.js'
import { parseCli, failWith, optionOf, machineInfo, versionsOf } from './lib/seeds-common.js'
import { fileURLToPath } from 'node:url'
import { median, quantile, max, min, fmt, mb, parseSize, parseCount } from './lib/stats.js'
import { scatterSvg } from './lib/svg-plot.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const WORKER = path.join(here, 'lib', 'sorted-write-worker.js')
const MODES = ['put', 'batch', 'raw', 'levelkit', 'levelkit-scope', 'levelkit-put']
const BACKENDS = ['leveldb', 'memory']

const USAGE = `Usage: node bench/sorted-write.js [options]
  --entries N            entries to write (default 10000000; 1e6, 1M, 3000 work)
  --mode M[,M...]        put | batch | raw | levelkit | levelkit-scope | levelkit-put (default batch)
  --compare              modes put,batch,raw,levelkit; ratios against batch, and levelkit's against raw
  --backend B[,B...]     leveldb | memory (default leveldb)
  --runs K               runs of every configuration, fresh database each (default 1)
  --batch-size N         entries per batch in batch/raw/levelkit/levelkit-scope (default 1000)
  --concurrency N        writes in flight in put/levelkit-put (default 10)
  --write-buffer-size S  classic-level writeBufferSize (e.g. 4M; default LevelDB's 4 MiB)
  --cache-size S         classic-level cacheSize (default 8 MiB)
  --compression BOOL     classic-level compression (default true: Snappy)
  --max-open-files N     classic-level maxOpenFiles (default 1000): LevelDB keeps up to this many
                         tables open, each with its index block in memory and its file mmap()ed
  --overhead             also time a bare inline loop for put/batch: the script's overhead
  --out DIR              output folder (default bench/out)
  --db-dir DIR           where the LevelDB databases go (default the OS temp dir)
  --keep-db              keep the LevelDB databases
  --y-scale S            auto | log | linear (default auto)
  --levelkit DIR         the levelkit tree the levelkit modes load (default: the one this script is in),
                         e.g. a checkout of an earlier commit, to measure a change with the same script`

/** @param {string} message @returns {never} */
const fail = message => failWith('sorted-write', USAGE, message)

const args = parseCli('sorted-write', USAGE, {
  entries: { type: 'string', default: '10000000' },
  mode: { type: 'string' },
  compare: { type: 'boolean', default: false },
  backend: { type: 'string', default: 'leveldb' },
  runs: { type: 'string', default: '1' },
  'batch-size': { type: 'string', default: '1000' },
  concurrency: { type: 'string', default: '10' },
  'write-buffer-size': { type: 'string' },
  'cache-size': { type: 'string' },
  compression: { type: 'string' },
  'max-open-files': { type: 'string' },
  overhead: { type: 'boolean', default: false },
  out: { type: 'string', default: path.join(here, 'out') },
  'db-dir': { type: 'string', default: os.tmpdir() },
  'keep-db': { type: 'boolean', default: false },
  'y-scale': { type: 'string', default: 'auto' },
  levelkit: { type: 'string' }
})

/** @template T @param {() => T} parse @returns {T} */
const option = parse => optionOf('sorted-write', USAGE, parse)

const entries = option(() => parseCount(args.entries))
const runs = option(() => parseCount(args.runs))
const batchSize = option(() => parseCount(args['batch-size']))
const concurrency = option(() => parseCount(args.concurrency))
if (args.compare && args.mode) fail('--compare chooses the modes itself: use either --compare or --mode')
const modes = args.compare ? ['put', 'batch', 'raw', 'levelkit'] : (args.mode || 'batch').split(',')
const backends = args.backend.split(',')
for (const m of modes) if (!MODES.includes(m)) fail(`Unknown mode ${JSON.stringify(m)}`)
for (const b of backends) if (!BACKENDS.includes(b)) fail(`Unknown backend ${JSON.stringify(b)}`)
if (!['auto', 'log', 'linear'].includes(args['y-scale'])) fail('--y-scale is auto, log or linear')

/** classic-level options, passed through as given (only on the leveldb backend). */
const levelOptions = /** @type {Record<string, unknown>} */ ({})
if (args['write-buffer-size'] !== undefined) levelOptions.writeBufferSize = option(() => parseSize(args['write-buffer-size']))
if (args['cache-size'] !== undefined) levelOptions.cacheSize = option(() => parseSize(args['cache-size']))
if (args['max-open-files'] !== undefined) levelOptions.maxOpenFiles = option(() => parseCount(args['max-open-files']))
if (args.compression !== undefined) {
  if (!['true', 'false'].includes(args.compression)) fail('--compression is true or false')
  levelOptions.compression = args.compression === 'true'
}

// The levelkit the levelkit modes load: its index.js.
const levelkitEntry = path.resolve(args.levelkit ?? path.join(here, '..'), 'index.js')
if (!fs.existsSync(levelkitEntry)) fail(`--levelkit: no levelkit at ${path.dirname(levelkitEntry)} (no index.js)`)

const versions = versionsOf(['classic-level', 'memory-level', 'abstract-level'])
const machine = machineInfo()

const stamp = new Date().toISOString().replace(/[:.]/g, '-')
const outDir = path.resolve(args.out, `sorted-write-${stamp}`)
/** @param {string} file */
const shown = file => file.startsWith(process.cwd() + path.sep) ? path.relative(process.cwd(), file) : file
fs.mkdirSync(args['db-dir'], { recursive: true })

/** @typedef {{ mode: string, backend: string, bare: boolean }} Variant */

/** @type {Variant[]} every configuration, in the order of the first round */
const variants = []
for (const backend of backends) {
  for (const mode of modes) {
    variants.push({ mode, backend, bare: false })
  }
}

/** @param {Variant} v */
const nameOf = v => `${v.mode} ${v.backend}${v.bare ? ' (bare loop)' : ''}`
/** @param {Variant} v */
const keyOf = v => `${v.mode}-${v.backend}${v.bare ? '-bare' : ''}`

/**
 * Run one configuration in a child process.
 * @param {Variant} v @param {number} round
 * @returns {Promise<any>}
 */
function runOne (v, round) {
  const location = path.join(args['db-dir'], `levelkit-sorted-write-${process.pid}-${keyOf(v)}-${round}`)
  fs.rmSync(location, { recursive: true, force: true })
  const config = {
    mode: v.mode,
    backend: v.backend,
    entries,
    batchSize,
    concurrency,
    levelOptions: v.backend === 'leveldb' ? levelOptions : {},
    location,
    keepDb: args['keep-db'],
    bare: v.bare,
    label: `${nameOf(v)} #${round}`,
    levelkitEntry
  }
  return runInChild(WORKER, config, `The run "${config.label}"`)
}

const loadBefore = os.loadavg()
const startedAt = new Date()
console.log(`sorted-write: ${fmt(entries)} pre-sorted entries, ${runs} run(s) each of ${modes.join(', ')} on ${backends.join(', ')}`)
console.log(`  batch size ${batchSize}, ${concurrency} in flight for put modes, classic-level options ${JSON.stringify(levelOptions)}`)
console.log(`  ${machine.cpu}, ${machine.cores} cores, ${machine.platform}, node ${versions.node}, classic-level ${versions['classic-level']}, memory-level ${versions['memory-level']}, levelkit ${versions.levelkit}`)
if (args.levelkit !== undefined) console.log(`  levelkit modes load ${path.dirname(levelkitEntry)}`)
console.log(`  load average ${loadBefore.map(l => l.toFixed(2)).join(' ')}; output ${shown(outDir)}`)

/** @type {Map<string, any[]>} results per variant key, in round order */
const results = new Map()
/** @type {Array<{ round: number, key: string }>} */
const order = []

/**
 * The configurations of one round, in the order they run. raw and levelkit's
 * modes are compared run by run, so on each backend they run back to back,
 * in alternating order (raw first in odd rounds, last in even ones): a
 * change in the machine's load hits both sides of a ratio alike. The other
 * configurations rotate from round to round, so none of them always runs
 * first (cold caches) or right after the slowest; they run before the pairs
 * in odd rounds and after them in even ones.
 * @param {number} round from 1
 * @returns {Variant[]}
 */
function roundOrder (round) {
  const paired = (/** @type {Variant} */ v) => modes.includes('raw') && (v.mode === 'raw' || v.mode.startsWith('levelkit'))
  const others = variants.filter(v => !paired(v))
  const shift = others.length === 0 ? 0 : (round - 1) % others.length
  const rotated = others.slice(shift).concat(others.slice(0, shift))
  /** @type {Variant[]} */
  const pairs = []
  for (const backend of backends) {
    const block = variants.filter(v => v.backend === backend && paired(v))
    pairs.push(...(round % 2 === 1 ? block : block.reverse()))
  }
  return round % 2 === 1 ? rotated.concat(pairs) : pairs.concat(rotated)
}

/** @param {any} r a run's result: CPU time of its timed loop, all threads */
const cpuOf = r => r.loopCpuMs
/** @param {any} r a run's result: CPU time of its main thread in the timed loop (null off Linux) */
const mainCpuOf = r => r.loopMainCpuMs

/** @param {number | null} a @param {number | null} b */
const ratioOf = (a, b) => a === null || b === null || !(b > 0) ? null : a / b

for (let round = 1; round <= runs; round++) {
  for (const v of roundOrder(round)) {
    const withBare = args.overhead && (v.mode === 'put' || v.mode === 'batch')
    const bare = { ...v, bare: true }
    // Bare before instrumented in even rounds, after in odd ones.
    const sequence = !withBare ? [v] : round % 2 === 0 ? [bare, v] : [v, bare]
    for (const which of sequence) {
      const result = await runOne(which, round)
      const key = keyOf(which)
      let list = results.get(key)
      if (!list) results.set(key, (list = []))
      list.push({ ...result, round })
      order.push({ round, key })
      const main = mainCpuOf(result) === null ? '' : `, main thread ${(mainCpuOf(result) / 1000).toFixed(3)} s`
      console.log(`  #${round} ${nameOf(which).padEnd(28)} ${(result.totalMs / 1000).toFixed(3).padStart(9)} s  ${fmt(result.writesPerSec).padStart(10)} writes/s  peak RSS ${mb(result.peakRssBytes)}  CPU ${(cpuOf(result) / 1000).toFixed(3)} s${main}  load ${os.loadavg()[0].toFixed(2)}`)
      if (!which.bare) writeCsv(which, round, result)
    }
  }
  // This round's levelkit/raw ratios, as soon as it has them.
  for (const v of variants) {
    if (!v.mode.startsWith('levelkit')) continue
    const a = results.get(keyOf(v))?.find(r => r.round === round)
    const b = results.get(keyOf({ ...v, mode: 'raw' }))?.find(r => r.round === round)
    if (a && b) console.log(`  #${round} ${`${v.mode}/raw ${v.backend}`.padEnd(28)} ${formatRatios(runRatios(a, b))}`)
  }
}
const loadAfter = os.loadavg()

/** @param {Variant} v @param {number} round @param {any} result */
function writeCsv (v, round, result) {
  const { elapsedMs, nsPerWrite, windowMs } = result.rows
  let csv = 'elapsed_ms,avg_ns_per_write,window_ms\n'
  for (let i = 0; i < elapsedMs.length; i++) {
    csv += `${elapsedMs[i].toFixed(3)},${Math.round(nsPerWrite[i])},${windowMs[i].toFixed(3)}\n`
  }
  fs.mkdirSync(outDir, { recursive: true })
  fs.writeFileSync(path.join(outDir, `${keyOf(v)}-run${round}.csv`), csv)
}

// Aggregate.

/** @param {any[]} list */
function summarize (list) {
  const perRun = list.map(r => {
    // Per-window figures per run. For batch/levelkit a window is one batch of
    // 1000, so these are per-batch times.
    const w = r.rows.windowMs
    return {
      round: r.round,
      totalMs: r.totalMs,
      closeMs: r.closeMs,
      writesPerSec: r.writesPerSec,
      windowMsP50: quantile(w, 0.5),
      windowMsP99: quantile(w, 0.99),
      windowMsMax: max(w),
      nsPerWriteP50: quantile(r.rows.nsPerWrite, 0.5),
      nsPerWriteP99: quantile(r.rows.nsPerWrite, 0.99),
      dbBytes: r.dbBytes,
      peakRssBytes: r.peakRssBytes,
      peakRssAnonBytes: r.peakRssAnonBytes,
      peakRssFileBytes: r.peakRssFileBytes,
      heapUsedBytes: r.heapUsedBytes,
      cpuUserMs: r.cpuUserMs,
      cpuSystemMs: r.cpuSystemMs,
      loopCpuMs: r.loopCpuMs,
      loopMainCpuMs: r.loopMainCpuMs
    }
  })
  const m = (/** @type {string} */ field) => median(perRun.map(r => /** @type {any} */ (r)[field]))
  return {
    runs: perRun.length,
    totalMs: m('totalMs'),
    totalMsMin: min(perRun.map(r => r.totalMs)),
    totalMsMax: max(perRun.map(r => r.totalMs)),
    writesPerSec: m('writesPerSec'),
    loopCpuMs: m('loopCpuMs'),
    loopMainCpuMs: list[0].loopMainCpuMs === null ? null : m('loopMainCpuMs'),
    windowMsP50: m('windowMsP50'),
    windowMsP99: m('windowMsP99'),
    windowMsMax: m('windowMsMax'),
    nsPerWriteP50: m('nsPerWriteP50'),
    nsPerWriteP99: m('nsPerWriteP99'),
    closeMs: m('closeMs'),
    dbBytes: list[0].dbBytes === null ? null : m('dbBytes'),
    peakRssBytes: max(perRun.map(r => r.peakRssBytes)),
    peakRssAnonBytes: list[0].peakRssAnonBytes === null ? null : max(perRun.map(r => r.peakRssAnonBytes)),
    peakRssFileBytes: list[0].peakRssFileBytes === null ? null : max(perRun.map(r => r.peakRssFileBytes)),
    entryBytes: list[0].entryBytes,
    valueNote: list[0].valueNote,
    perRun
  }
}

/** @type {Record<string, any>} */
const summary = {}
for (const [key, list] of results) summary[key] = summarize(list)

/**
 * The ratios of run `a` to run `b`: wall time, CPU time of the timed loop
 * (all threads: user + system) and CPU time of the main thread alone (the
 * JavaScript side, without LevelDB's compaction thread; null off Linux).
 * Wall time is what a user waits for, but on a shared machine it moves with
 * the load; CPU time moves less.
 * @param {any} a @param {any} b
 * @returns {{ wall: number, cpu: number | null, mainCpu: number | null }}
 */
function runRatios (a, b) {
  return { wall: a.totalMs / b.totalMs, cpu: ratioOf(cpuOf(a), cpuOf(b)), mainCpu: ratioOf(mainCpuOf(a), mainCpuOf(b)) }
}

/** @param {{ wall: number, cpu: number | null, mainCpu: number | null }} r */
function formatRatios (r) {
  const x = (/** @type {number | null} */ n) => n === null ? 'n/a' : `${n.toFixed(2)}×`
  return `wall ${x(r.wall)}, CPU ${x(r.cpu)}, main-thread CPU ${x(r.mainCpu)}`
}

/**
 * Ratios of `a` to `b` run by run (the runs of one round: back to back for
 * raw and levelkit), and their medians: of wall time, of CPU time (all
 * threads) and of main-thread CPU time. Also the ratio of the median wall
 * times.
 * @param {string} a @param {string} b
 */
function pairedRatio (a, b) {
  const ra = results.get(a)
  const rb = results.get(b)
  if (!ra || !rb) return null
  /** @type {Array<{ round: number, wall: number, cpu: number | null, mainCpu: number | null }>} */
  const perRound = []
  for (const x of ra) {
    const y = rb.find(r => r.round === x.round)
    if (y) perRound.push({ round: x.round, ...runRatios(x, y) })
  }
  const spread = (/** @type {Array<number | null>} */ list) => {
    if (list.some(n => n === null)) return null
    const numbers = /** @type {number[]} */ (list)
    return { median: median(numbers), min: min(numbers), max: max(numbers) }
  }
  const wall = /** @type {{ median: number, min: number, max: number }} */ (spread(perRound.map(r => r.wall)))
  return {
    median: wall.median,
    min: wall.min,
    max: wall.max,
    cpu: spread(perRound.map(r => r.cpu)),
    mainCpu: spread(perRound.map(r => r.mainCpu)),
    perRound,
    ofMedians: median(ra.map(r => r.totalMs)) / median(rb.map(r => r.totalMs)),
    cpuOfMedians: median(ra.map(cpuOf)) / median(rb.map(cpuOf))
  }
}

/** @type {Record<string, any>} */
const ratios = {}
for (const v of variants) {
  if (v.mode === 'batch') continue
  const r = pairedRatio(keyOf(v), keyOf({ ...v, mode: 'batch' }))
  if (r) ratios[`${v.mode}/batch ${v.backend}`] = r
}
// levelkit's modes against `raw`, which writes the same bytes.
for (const v of variants) {
  if (!v.mode.startsWith('levelkit')) continue
  const r = pairedRatio(keyOf(v), keyOf({ ...v, mode: 'raw' }))
  if (r) ratios[`${v.mode}/raw ${v.backend}`] = r
}
/** @type {Record<string, any>} */
const overhead = {}
for (const v of variants) {
  const r = pairedRatio(keyOf(v), keyOf({ ...v, bare: true }))
  if (r) overhead[`${v.mode} ${v.backend}`] = r
}

// Print.

const rows = [['mode', 'backend', 'runs', 'total s (median)', 'min..max s', 'CPU s', 'main CPU s', 'writes/s', 'p50 ms/1000', 'p99 ms/1000', 'max ms/1000', 'close ms', 'db size', 'B/entry', 'peak RSS', 'anon', 'file']]
for (const [key, s] of Object.entries(summary)) {
  const [first] = /** @type {any[]} */ (results.get(key))
  rows.push([
    first.mode + (first.bare ? ' (bare)' : ''),
    first.backend,
    String(s.runs),
    (s.totalMs / 1000).toFixed(3),
    `${(s.totalMsMin / 1000).toFixed(2)}..${(s.totalMsMax / 1000).toFixed(2)}`,
    (s.loopCpuMs / 1000).toFixed(3),
    s.loopMainCpuMs === null ? 'n/a' : (s.loopMainCpuMs / 1000).toFixed(3),
    fmt(s.writesPerSec),
    first.bare ? '-' : s.windowMsP50.toFixed(3),
    first.bare ? '-' : s.windowMsP99.toFixed(3),
    first.bare ? '-' : s.windowMsMax.toFixed(3),
    fmt(s.closeMs, 1),
    s.dbBytes === null ? 'n/a' : mb(s.dbBytes),
    `${s.entryBytes.key}+${s.entryBytes.value}`,
    mb(s.peakRssBytes),
    s.peakRssAnonBytes === null ? 'n/a' : mb(s.peakRssAnonBytes),
    s.peakRssFileBytes === null ? 'n/a' : mb(s.peakRssFileBytes)
  ])
}
console.log()
printTable(rows)
console.log()
console.log('  CPU s = CPU time (user + system, all threads) of the timed loop; main CPU s = its main thread\'s alone (Linux).')
console.log('  ms/1000 = wall time of each window of 1000 writes (one batch in batch/levelkit); p50/p99/max over the windows of a run, median over runs.')
console.log('  B/entry = stored key+value bytes of one entry. Peak RSS = the largest maxRSS of the run processes; anon / file =')
console.log('  peaks of its anonymous (heaps, memtables, caches) and file-backed (node binary, mmap()ed table files) parts.')
for (const [key, s] of Object.entries(summary)) {
  if ((key.startsWith('put-') || key.startsWith('levelkit-put-')) && !key.endsWith('-bare')) {
    console.log(`  ${key}: per-write latency with ${concurrency} in flight, mean per 1000: p50 ${fmt(s.nsPerWriteP50 / 1000, 1)} µs, p99 ${fmt(s.nsPerWriteP99 / 1000, 1)} µs`)
  }
}
const values = new Set(Object.values(summary).map(s => s.valueNote))
for (const note of values) {
  const who = Object.entries(summary).filter(([, s]) => s.valueNote === note).map(([k]) => k.replace(/-(leveldb|memory)(-bare)?$/, '')).filter((k, i, a) => a.indexOf(k) === i)
  console.log(`  Values (${who.join(', ')}): ${note}.`)
}
if (Object.keys(ratios).length > 0) {
  console.log()
  console.log('Time ratios against batch (or raw) on the same backend, run by run (> 1 = slower): median (min..max over rounds)')
  console.log('of wall time, of CPU time of the timed loop (all threads) and of its main thread\'s CPU time (the JavaScript side):')
  const x = (/** @type {{ median: number, min: number, max: number } | null} */ r) => r === null ? 'n/a' : `${r.median.toFixed(2)}× (${r.min.toFixed(2)}..${r.max.toFixed(2)})`
  for (const [name, r] of Object.entries(ratios)) {
    console.log(`  ${name.padEnd(28)} wall ${x(r)}, CPU ${x(r.cpu)}, main-thread CPU ${x(r.mainCpu)}; ${r.perRound.length} round(s)`)
  }
}
// raw and levelkit's modes must have written the same database.
for (const backend of backends) {
  const hashed = [...results.values()].flat().filter(r => r.backend === backend && r.contentHash !== null && (r.mode === 'raw' || r.mode.startsWith('levelkit')))
  const hashedModes = [...new Set(hashed.map(r => r.mode))]
  if (hashedModes.length < 2) continue
  const distinct = new Set(hashed.map(r => r.contentHash))
  if (distinct.size !== 1) {
    console.error(`sorted-write: ${hashedModes.join(', ')} wrote different databases on ${backend}: content hashes ${[...distinct].join(', ')}`)
    process.exitCode = 1
  } else {
    console.log(`  ${hashedModes.join(', ')} on ${backend} wrote the same database, byte for byte (SHA-256 of every key and value).`)
  }
}
if (Object.keys(overhead).length > 0) {
  console.log()
  console.log('Script overhead: instrumented loop (per-1000 recording, progress) against a bare inline loop, same writes:')
  for (const [name, r] of Object.entries(overhead)) {
    const signed = (/** @type {number} */ x) => `${x >= 1 ? '+' : ''}${((x - 1) * 100).toFixed(1)}%`
    console.log(`  ${name.padEnd(28)} ${signed(r.median)} wall time (median of per-round ratios, ${r.min.toFixed(3)}..${r.max.toFixed(3)} over ${r.perRound.length} round(s)); ${signed(r.ofMedians)} between median wall times; ${signed(r.cpuOfMedians)} between median CPU times`)
  }
}

fs.mkdirSync(outDir, { recursive: true })
const svgPath = path.join(outDir, 'sorted-write.svg')
const series = []
// One hue per configuration, one shade per run.
const HUES = [0, 210, 120, 30, 275, 180, 330, 60]
let hue = 0
for (const [key, list] of results) {
  if (key.endsWith('-bare')) continue
  const h = HUES[hue++ % HUES.length]
  for (const r of list) {
    const latency = r.mode === 'put' || r.mode === 'levelkit-put'
    const light = list.length === 1 ? 45 : 32 + 30 * (r.round - 1) / (list.length - 1)
    series.push({
      name: `${r.mode}${latency ? ' (latency)' : ''} ${r.backend} #${r.round}`,
      color: `hsl(${h}, 75%, ${light.toFixed(0)}%)`,
      x: r.rows.elapsedMs.map((/** @type {number} */ ms) => ms / 1000),
      y: r.rows.nsPerWrite.map((/** @type {number} */ ns) => ns / 1e6)
    })
  }
}
fs.writeFileSync(svgPath, scatterSvg({
  title: `levelkit sorted-write: ${fmt(entries)} pre-sorted writes (${modes.join(', ')} on ${backends.join(', ')})`,
  subtitle: `${machine.cpu}, ${machine.cores} cores, ${os.platform()} ${os.arch()}, node ${versions.node}, classic-level ${versions['classic-level']}, levelkit ${versions.levelkit}, ${startedAt.toISOString().slice(0, 10)}`,
  xLabel: 'Seconds',
  yLabel: 'Milliseconds per write (mean per 1000 writes)',
  yScale: /** @type {any} */ (args['y-scale']),
  series
}))

const jsonPath = path.join(outDir, 'summary.json')
fs.writeFileSync(jsonPath, JSON.stringify({
  benchmark: 'sorted-write',
  date: startedAt.toISOString(),
  command: `node ${path.relative(process.cwd(), fileURLToPath(import.meta.url))} ${process.argv.slice(2).join(' ')}`.trim(),
  machine,
  versions,
  loadAverage: { before: loadBefore, after: loadAfter },
  options: { entries, runs, modes, backends, batchSize, concurrency, levelOptions, overhead: args.overhead, levelkit: path.dirname(levelkitEntry) },
  csvColumns: ['elapsed_ms', 'avg_ns_per_write', 'window_ms'],
  order,
  summary,
  ratiosAgainstBatch: ratios,
  overhead
}, null, 2) + '\n')

console.log()
console.log(`Load average ${loadAfter.map(l => l.toFixed(2)).join(' ')} (before: ${loadBefore.map(l => l.toFixed(2)).join(' ')})`)
console.log(`Wrote ${shown(outDir)}/: ${results.size > 0 ? 'one CSV per run, ' : ''}summary.json, sorted-write.svg`)

/** @param {string[][]} table */
function printTable (table) {
  const widths = table[0].map((_, c) => Math.max(...table.map(row => row[c].length)))
  for (const row of table) {
    console.log('  ' + row.map((cell, c) => c < 2 ? cell.padEnd(widths[c]) : cell.padStart(widths[c])).join('  '))
  }
}
