// Index builds (issue 17): how long building an index on N existing records
// takes, against inserting those N records with the index declared, and how
// much a build slows the writes that go on during it. On classic-level.
//
// Per run, on fresh databases in --db-dir:
//   insert   N records ({ k, n, text }, `k` in random order) loaded with
//            insertMany() into a collection that declares the index byK
//            (key: r => r.k): the time of the load;
//   build    the same records loaded into a collection without it, the
//            database closed and opened again with byK declared, and
//            db.buildIndexes() timed: the time of the build (pages read
//            ahead while the batches before are written, up to 4 of them
//            decided and not yet written; batches of 256 records, growing
//            to 1024 when no other writes go on, each its own critical
//            section);
//            goal: build <= 0.5 x insert;
//            each with the CPU time of the process (process.cpuUsage(): the
//            main thread, libuv's threads and LevelDB's compaction thread)
//            beside the wall time: on a shared machine the wall time follows
//            the load, the CPU time much less; and (Linux) the main thread's
//            own CPU time: the rest is LevelDB's (reads, writes, compaction);
//   writes   --writers concurrent loops (8) of update(id, patch) on random
//            ids of that database for --seconds (3) with no build, after as
//            long a warm-up: writes/s;
//            then the same loops while a second index (byN) is built:
//            writes/s during the build (over the build's duration), and the
//            slowdown (writes/s without / writes/s during).
//   generate how long making the records takes alone (they are made as the
//            insert loads them, so the insert's time holds this much of it).
// With --runs K (3) every figure is the median of the runs.
//
// Output: a line per run, the medians, the goal (met / missed), and under
// --out (default bench/out/, ignored by git) a folder index-build-<time>/
// with results.csv (one row per run) and summary.json.
//
// Usage: node bench/index-build.js [--records 1000000] [--runs 3] [--writers 8]
//   [--seconds 3] [--seed 1] [--out bench/out] [--db-dir <tmp>]

import os from 'node:os'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { open } from 'levelkit'
import { prng } from 'levelkit-testkit/prng'
import { median, fmt, parseCount } from './lib/stats.js'
import { parseCli, optionOf, writeCsv, printTable, finishRun, startRun, printMachine, dirSize, loadText } from './lib/seeds-common.js'
import { mainThreadCpuMs } from './lib/thread-cpu.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const NAME = 'index-build'
const GOAL = 0.5
const USAGE = `Usage: node bench/index-build.js [--records 1000000] [--runs 3] [--writers 8]
  [--seconds 3] [--seed 1] [--out bench/out] [--db-dir <tmp>]`

const values = parseCli(NAME, USAGE, {
  records: { type: 'string', default: '1000000' },
  runs: { type: 'string', default: '3' },
  writers: { type: 'string', default: '8' },
  seconds: { type: 'string', default: '3' },
  seed: { type: 'string', default: '1' },
  out: { type: 'string', default: path.join(here, 'out') },
  'db-dir': { type: 'string' }
})
const records = optionOf(NAME, USAGE, () => parseCount(values.records))
const runs = optionOf(NAME, USAGE, () => parseCount(values.runs))
const writers = optionOf(NAME, USAGE, () => parseCount(values.writers))
const seconds = optionOf(NAME, USAGE, () => {
  const s = Number(values.seconds)
  if (!(s > 0)) throw new Error(`--seconds must be a positive number, got ${values.seconds}`)
  return s
})
const seed = optionOf(NAME, USAGE, () => parseCount(values.seed))
const dbRoot = fs.mkdtempSync(path.join(values['db-dir'] ?? os.tmpdir(), 'levelkit-index-build-'))

const byK = { key: (/** @type {any} */ r) => r.k }
const byN = { key: (/** @type {any} */ r) => r.n % 1000 }

/**
 * The records, generated as they are loaded: `k` is a random string, so the
 * index's entries are written in random order (as for most real keys).
 * @param {number} runSeed
 */
function * recordsOf (runSeed) {
  const rand = prng(runSeed)
  for (let i = 0; i < records; i++) {
    yield { k: `${rand.int(0x7fffffff).toString(36)}-${i}`, n: i, text: 'lorem ipsum dolor sit amet, consectetur adipiscing' }
  }
}

/** @param {string} name */
const location = name => path.join(dbRoot, name)

/** Time of loading the records into a collection that declares byK. @param {number} run */
async function timeInsert (run) {
  const db = await open({ backend: 'leveldb', location: location(`insert-${run}`) })
  const items = db.collection('items', { indexes: { byK } })
  const cpu = process.cpuUsage()
  const main = mainThreadCpuMs()
  const start = performance.now()
  await items.insertMany(recordsOf(seed + run))
  const ms = performance.now() - start
  const cpuMs = cpuMsSince(cpu)
  const mainCpuMs = mainCpuSince(main)
  await db.close()
  return { ms, cpuMs, mainCpuMs }
}

/** CPU time (ms) of making the records alone. @param {number} run */
function timeGenerate (run) {
  const cpu = process.cpuUsage()
  let n = 0
  for (const record of recordsOf(seed + run)) n += record.n
  if (n < 0) throw new Error('unreachable: keeps the loop')
  return cpuMsSince(cpu)
}

/** CPU time (ms) of the main thread since `from`, or NaN where it is not known. @param {number | null} from */
function mainCpuSince (from) {
  const now = mainThreadCpuMs()
  return from === null || now === null ? NaN : now - from
}

/** CPU time (user + system, ms) of the process since `from`. @param {NodeJS.CpuUsage} from */
function cpuMsSince (from) {
  const { user, system } = process.cpuUsage(from)
  return (user + system) / 1000
}

/** The records loaded without byK; then byK built, timed. @param {number} run */
async function timeBuild (run) {
  const where = location(`build-${run}`)
  const loading = await open({ backend: 'leveldb', location: where })
  await loading.collection('items').insertMany(recordsOf(seed + run))
  await loading.close()
  const db = await open({ backend: 'leveldb', location: where })
  const items = db.collection('items', { indexes: { byK } })
  const cpu = process.cpuUsage()
  const main = mainThreadCpuMs()
  const start = performance.now()
  await db.buildIndexes()
  const ms = performance.now() - start
  const cpuMs = cpuMsSince(cpu)
  const mainCpuMs = mainCpuSince(main)
  const status = (await db.schemaStatus()).items.byK
  if (status.state !== 'ready') throw new Error(`byK is ${status.state} after buildIndexes()`)
  // The index answers: the first record's key finds it.
  const first = recordsOf(seed + run).next().value
  const found = await items.query({ index: 'byK', eq: first.k }).all()
  if (found.length !== 1 || found[0].n !== 0) throw new Error('the built index does not find the first record')
  await db.close()
  return { ms, cpuMs, mainCpuMs, where }
}

/**
 * Run `writers` loops of updates on random records until `until()` says
 * stop; resolves with how many were written.
 * @param {any} items @param {number} run @param {() => boolean} until
 */
async function updateLoops (items, run, until) {
  const rand = prng(seed * 7919 + run)
  let written = 0
  await Promise.all(Array.from({ length: writers }, async () => {
    while (!until()) {
      await items.update(1 + rand.int(records), { touched: rand.int(1000) })
      written++
    }
  }))
  return written
}

/**
 * Writes/s with no build for --seconds, then during the build of byN.
 * @param {string} where @param {number} run
 */
async function writesDuringBuild (where, run) {
  let db = await open({ backend: 'leveldb', location: where })
  let items = db.collection('items', { indexes: { byK } })
  // Warmed up first (as long again): writes on a database just opened read
  // from a cold cache, and the writes during the build run warm.
  let start = performance.now()
  await updateLoops(items, run, () => performance.now() - start >= seconds * 1000)
  start = performance.now()
  const quiet = await updateLoops(items, run, () => performance.now() - start >= seconds * 1000)
  const quietPerSec = quiet / ((performance.now() - start) / 1000)
  await db.close()

  db = await open({ backend: 'leveldb', location: where })
  items = db.collection('items', { indexes: { byK, byN } })
  let built = false
  start = performance.now()
  const build = db.buildIndexes().then(() => { built = true })
  const during = await updateLoops(items, run, () => built)
  await build
  const buildMs = performance.now() - start
  const duringPerSec = during / (buildMs / 1000)
  // check() holds every key of the collection and its indexes in memory:
  // measured alone on 300k records, it peaked at 1.1 GB RSS; a run of 1M
  // records peaked at 3 GB.
  const problems = (await db.check()).problems
  if (problems.length > 0) throw new Error(`check() after the build during writes: ${problems.length} problems, the first: ${problems[0].message}`)
  await db.close()
  return { quietPerSec, duringPerSec, buildUnderWritesMs: buildMs }
}

const runInfo = { name: NAME, ...startRun(NAME, values.out, ['classic-level']) }
console.log(`${NAME}: ${fmt(records)} records, ${runs} run(s), ${writers} writers, ${seconds} s of writes without a build, on classic-level`)
printMachine(runInfo, ['classic-level'])

/** @type {Array<Record<string, number>>} */
const rows = []
try {
  for (let run = 1; run <= runs; run++) {
    const { ms: insertMs, cpuMs: insertCpuMs, mainCpuMs: insertMainCpuMs } = await timeInsert(run)
    console.log(`  run ${run}: inserted with the index in ${fmt(insertMs)} ms (CPU ${fmt(insertCpuMs)} ms, main thread ${fmt(insertMainCpuMs)} ms), load ${loadText(os.loadavg())}`)
    const { ms: buildMs, cpuMs: buildCpuMs, mainCpuMs: buildMainCpuMs, where } = await timeBuild(run)
    console.log(`  run ${run}: built the index in ${fmt(buildMs)} ms (CPU ${fmt(buildCpuMs)} ms, main thread ${fmt(buildMainCpuMs)} ms), load ${loadText(os.loadavg())}`)
    const generateCpuMs = timeGenerate(run)
    const bytes = dirSize(where)
    const writes = await writesDuringBuild(where, run)
    const row = { run, insertMs, buildMs, ratio: buildMs / insertMs, insertCpuMs, buildCpuMs, cpuRatio: buildCpuMs / insertCpuMs, insertMainCpuMs, buildMainCpuMs, generateCpuMs, ...writes, slowdown: writes.quietPerSec / writes.duringPerSec, bytes }
    rows.push(row)
    console.log(`  run ${run}: insert with the index ${fmt(insertMs)} ms, build ${fmt(buildMs)} ms (${row.ratio.toFixed(2)}x; CPU ${row.cpuRatio.toFixed(2)}x); writes/s ${fmt(writes.quietPerSec)} without a build, ${fmt(writes.duringPerSec)} during one (${row.slowdown.toFixed(2)}x slower; that build took ${fmt(writes.buildUnderWritesMs)} ms)`)
    for (const name of fs.readdirSync(dbRoot)) fs.rmSync(path.join(dbRoot, name), { recursive: true, force: true })
  }
} finally {
  fs.rmSync(dbRoot, { recursive: true, force: true })
}

const med = (/** @type {string} */ field) => median(rows.map(row => row[field]))
const summary = {
  insertMs: med('insertMs'),
  buildMs: med('buildMs'),
  ratio: med('ratio'),
  insertCpuMs: med('insertCpuMs'),
  buildCpuMs: med('buildCpuMs'),
  cpuRatio: med('cpuRatio'),
  insertMainCpuMs: med('insertMainCpuMs'),
  buildMainCpuMs: med('buildMainCpuMs'),
  generateCpuMs: med('generateCpuMs'),
  quietWritesPerSec: med('quietPerSec'),
  duringWritesPerSec: med('duringPerSec'),
  slowdown: med('slowdown'),
  buildUnderWritesMs: med('buildUnderWritesMs')
}
console.log()
console.log(`Medians of ${rows.length} run(s), ${fmt(records)} records:`)
printTable([
  ['', 'median'],
  ['insert with the index (ms)', fmt(summary.insertMs)],
  ['build the index (ms)', fmt(summary.buildMs)],
  ['build / insert', summary.ratio.toFixed(2)],
  ['insert CPU (ms)', fmt(summary.insertCpuMs)],
  ['build CPU (ms)', fmt(summary.buildCpuMs)],
  ['build / insert, CPU', summary.cpuRatio.toFixed(2)],
  ['insert CPU, main thread (ms)', fmt(summary.insertMainCpuMs)],
  ['build CPU, main thread (ms)', fmt(summary.buildMainCpuMs)],
  ['making the records, in the insert (CPU ms)', fmt(summary.generateCpuMs)],
  ['writes/s without a build', fmt(summary.quietWritesPerSec)],
  ['writes/s during a build', fmt(summary.duringWritesPerSec)],
  ['slowdown of writes', `${summary.slowdown.toFixed(2)}x`],
  ['build under writes (ms)', fmt(summary.buildUnderWritesMs)]
])
// By wall time and by CPU time: on a loaded machine the insert, which keeps
// both cores busy (its compaction), waits for them longer than the build, and
// the wall time alone flatters the build.
const met = summary.ratio <= GOAL
const cpuMet = summary.cpuRatio <= GOAL
console.log()
console.log(`Goal: build <= ${GOAL} x insert with the index: ${met ? 'met' : 'missed'} (${summary.ratio.toFixed(2)}); by CPU time: ${cpuMet ? 'met' : 'missed'} (${summary.cpuRatio.toFixed(2)})`)

const outDir = runInfo.outDir
writeCsv(path.join(outDir, 'results.csv'), ['run', 'insert_ms', 'build_ms', 'ratio', 'insert_cpu_ms', 'build_cpu_ms', 'cpu_ratio', 'insert_main_cpu_ms', 'build_main_cpu_ms', 'generate_cpu_ms', 'writes_per_s_quiet', 'writes_per_s_during', 'slowdown', 'build_under_writes_ms', 'db_bytes'],
  rows.map(r => [r.run, r.insertMs, r.buildMs, r.ratio, r.insertCpuMs, r.buildCpuMs, r.cpuRatio, r.insertMainCpuMs, r.buildMainCpuMs, r.generateCpuMs, r.quietPerSec, r.duringPerSec, r.slowdown, r.buildUnderWritesMs, r.bytes]))
finishRun(outDir, { ...runInfo, loadAfter: os.loadavg() }, {
  options: { records, runs, writers, seconds, seed },
  summary,
  goals: [
    { goal: `build <= ${GOAL} x insert with the index declared`, value: summary.ratio, met },
    { goal: `build <= ${GOAL} x insert with the index declared, by CPU time`, value: summary.cpuRatio, met: cpuMet }
  ],
  runs: rows
}, ['results.csv'])
