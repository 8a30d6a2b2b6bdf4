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
// With --floor, two more per run, on classic-level directly (no levelkit):
//   raw insert  the same records and their byK entries written as levelkit
//            lays them out (keys of the same codec, encodeTuple(), under the
//            same prefixes; the sequence's key per batch), in chained
//            batches of 250 records (insertMany()'s), each made while the
//            one before is written;
//   raw build   on a copy of the database the build starts from: iterate the
//            records' values, JSON.parse each, its entry key from its `k`
//            and `id`, the entries in chained batches of 1,024 records (a
//            quiet build's) with a progress marker each, the next page read
//            while a batch is written: the build's I/O without levelkit, the
//            floor a build can reach;
//   ratios   levelkit build / raw build (what levelkit adds), raw build /
//            levelkit insert (the goal at the floor), raw build / raw insert.
// --skip-writes leaves out the writes during a build (and check()).
// With --runs K (3) every figure is the median of the runs.
//
// Output: a line per run, the medians, the goal (met / missed), and under
// --out (default bench/out/, ignored by git) a folder index-build-<time>/
// with results.csv (one row per run) and summary.json.
//
// Usage: node bench/index-build.js [--records 1000000] [--runs 3] [--writers 8]
//   [--seconds 3] [--seed 1] [--floor] [--skip-writes] [--out bench/out] [--db-dir <tmp>]

import os from 'node:os'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { execFileSync } from 'node:child_process'
import { ClassicLevel } from 'classic-level'
import { open, encodeTuple } from 'levelkit'
import { prng } from 'levelkit-testkit/prng'
import { median, fmt, parseCount } from './lib/stats.js'
import { parseCli, optionOf, writeCsv, printTable, finishRun, startRun, printMachine, dirSize, loadText } from './lib/seeds-common.js'
import { mainThreadCpuMs } from './lib/thread-cpu.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const NAME = 'index-build'
const GOAL = 0.5
const USAGE = `Usage: node bench/index-build.js [--records 1000000] [--runs 3] [--writers 8]
  [--seconds 3] [--seed 1] [--floor] [--skip-writes] [--out bench/out] [--db-dir <tmp>]`

const values = parseCli(NAME, USAGE, {
  records: { type: 'string', default: '1000000' },
  runs: { type: 'string', default: '3' },
  writers: { type: 'string', default: '8' },
  seconds: { type: 'string', default: '3' },
  seed: { type: 'string', default: '1' },
  floor: { type: 'boolean', default: false },
  'skip-writes': { type: 'boolean', default: false },
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
const floor = Boolean(values.floor)
const skipWrites = Boolean(values['skip-writes'])
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

// The floor's figures per run, in results.csv and summary.json.
const FLOOR_FIELDS = [
  'rawInsertMs', 'rawInsertCpuMs', 'rawInsertMainCpuMs', 'rawBuildMs', 'rawBuildCpuMs', 'rawBuildMainCpuMs',
  'buildOverRaw', 'buildOverRawCpu', 'buildOverRawMain', 'rawOverInsert', 'rawOverInsertCpu', 'rawOverInsertMain',
  'rawOverRaw', 'rawOverRawCpu', 'rawOverRawMain', 'insertOverRaw', 'insertOverRawCpu', 'insertOverRawMain'
]

/** @param {string} name */
const snakeCase = name => name.replace(/[A-Z]/g, c => `_${c.toLowerCase()}`)

/**
 * A run's floor ratios, by wall, process CPU and main-thread CPU.
 * @param {Record<string, number>} t
 */
function ratiosOf (t) {
  return {
    buildOverRaw: t.buildMs / t.rawBuildMs,
    buildOverRawCpu: t.buildCpuMs / t.rawBuildCpuMs,
    buildOverRawMain: t.buildMainCpuMs / t.rawBuildMainCpuMs,
    rawOverInsert: t.rawBuildMs / t.insertMs,
    rawOverInsertCpu: t.rawBuildCpuMs / t.insertCpuMs,
    rawOverInsertMain: t.rawBuildMainCpuMs / t.insertMainCpuMs,
    rawOverRaw: t.rawBuildMs / t.rawInsertMs,
    rawOverRawCpu: t.rawBuildCpuMs / t.rawInsertCpuMs,
    rawOverRawMain: t.rawBuildMainCpuMs / t.rawInsertMainCpuMs,
    insertOverRaw: t.insertMs / t.rawInsertMs,
    insertOverRawCpu: t.insertCpuMs / t.rawInsertCpuMs,
    insertOverRawMain: t.insertMainCpuMs / t.rawInsertMainCpuMs
  }
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

/**
 * The records loaded without byK; then byK built, timed. With --floor, a
 * copy of the database as the build finds it is made first, for the raw
 * build (in `rawFrom`).
 * @param {number} run
 */
async function timeBuild (run) {
  const where = location(`build-${run}`)
  const loading = await open({ backend: 'leveldb', location: where })
  await loading.collection('items').insertMany(recordsOf(seed + run))
  await loading.close()
  const rawFrom = floor ? location(`raw-build-${run}`) : null
  if (rawFrom !== null) execFileSync('cp', ['-r', where, rawFrom])
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
  return { ms, cpuMs, mainCpuMs, where, rawFrom }
}

// The floor (--floor): the same I/O on classic-level with no levelkit.
// Keys as levelkit lays them out: each namespace a sublevel of the root
// ('!name!' prefixes), keys encoded with levelkit's tuple codec.
const RECORDS_PREFIX = new TextEncoder().encode('!items!')
const INDEX_PREFIX = new TextEncoder().encode('!items.idx.byK!')
const SEQUENCE_KEY = prefixed(new TextEncoder().encode('!items.seq!'), encodeTuple('last'))
const MARKER_KEY = prefixed(new TextEncoder().encode('!:levelkit.meta!'), encodeTuple(['index', 'items', 'byK']))
const NO_VALUE = new Uint8Array(0)
// Frozen: abstract-level 3.1.1 copies a non-frozen options object per put.
const UTF8_PUT = Object.freeze({ keyEncoding: 'view', valueEncoding: 'utf8' })
const VIEW_PUT = Object.freeze({ keyEncoding: 'view', valueEncoding: 'view' })
const RAW_INSERT_BATCH = 250
const RAW_BUILD_BATCH = 1024

/** @param {Uint8Array} prefix @param {Uint8Array} key */
function prefixed (prefix, key) {
  const bytes = new Uint8Array(prefix.length + key.length)
  bytes.set(prefix, 0)
  bytes.set(key, prefix.length)
  return bytes
}

// Keys handed to a chained batch are cut from 16 KiB chunks, as
// lib/writer.js does: a small Uint8Array of its own lives on V8's heap, and
// classic-level's native put then moves it out first, which cost the first
// raw build twice levelkit's CPU (19.6 s against 11.2 s, 1M records).
const KEY_CHUNK = 16384
let chunk = new Uint8Array(KEY_CHUNK)
let used = 0

/** `prefix` + `key` in the current chunk. @param {Uint8Array} prefix @param {Uint8Array} key */
function chunked (prefix, key) {
  const length = prefix.length + key.length
  if (used + length > chunk.length) {
    chunk = new Uint8Array(Math.max(KEY_CHUNK, length))
    used = 0
  }
  const bytes = chunk.subarray(used, used + length)
  used += length
  bytes.set(prefix, 0)
  bytes.set(key, prefix.length)
  return bytes
}

/**
 * Time `work` by wall, process CPU and main-thread CPU.
 * @param {() => Promise<void>} work
 */
async function measure (work) {
  const cpu = process.cpuUsage()
  const main = mainThreadCpuMs()
  const start = performance.now()
  await work()
  const ms = performance.now() - start
  return { ms, cpuMs: cpuMsSince(cpu), mainCpuMs: mainCpuSince(main) }
}

/** The records and their entries written on classic-level directly, timed. @param {number} run */
async function timeRawInsert (run) {
  const db = new ClassicLevel(location(`raw-insert-${run}`), { keyEncoding: 'view', valueEncoding: 'view' })
  await db.open()
  const timed = await measure(async () => {
    /** @type {Promise<void> | null} */
    let writing = null
    let batch = db.batch()
    let id = 0
    for (const record of recordsOf(seed + run)) {
      id++
      batch.put(chunked(RECORDS_PREFIX, encodeTuple(id)), JSON.stringify({ id, ...record }), UTF8_PUT)
      batch.put(chunked(INDEX_PREFIX, encodeTuple([record.k, id])), NO_VALUE, VIEW_PUT)
      if (id % RAW_INSERT_BATCH === 0 || id === records) {
        batch.put(SEQUENCE_KEY, String(id), UTF8_PUT)
        // The next batch is made while this one is written.
        await writing
        writing = batch.write()
        batch = db.batch()
      }
    }
    await writing
    await batch.close()
  })
  await db.close()
  return timed
}

/** The raw build on `where` (a copy of the database a build starts from), timed. @param {string} where */
async function timeRawBuild (where) {
  const db = new ClassicLevel(where, { keyEncoding: 'view', valueEncoding: 'view' })
  await db.open()
  const end = RECORDS_PREFIX.slice()
  end[end.length - 1]++
  let indexed = 0
  const timed = await measure(async () => {
    const it = db.iterator({ gt: RECORDS_PREFIX, lt: end, valueEncoding: 'utf8' })
    try {
      let page = await it.nextv(RAW_BUILD_BATCH)
      /** @type {Promise<void> | null} */
      let writing = null
      while (page.length > 0) {
        const batch = db.batch()
        for (const [, json] of page) {
          const record = JSON.parse(json)
          batch.put(chunked(INDEX_PREFIX, encodeTuple([record.k, record.id])), NO_VALUE, VIEW_PUT)
        }
        indexed += page.length
        batch.put(MARKER_KEY, JSON.stringify({ unique: false, multi: false, covering: false, version: 0, state: 'building', done: indexed }), UTF8_PUT)
        // The next page is read while this batch is written.
        await writing
        writing = batch.write()
        page = await it.nextv(RAW_BUILD_BATCH)
      }
      await writing
    } finally {
      await it.close()
    }
  })
  await db.close()
  if (indexed !== records) throw new Error(`the raw build indexed ${indexed} records of ${records}`)
  return timed
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
console.log(`${NAME}: ${fmt(records)} records, ${runs} run(s), ${skipWrites ? 'no writes during a build' : `${writers} writers, ${seconds} s of writes without a build`}${floor ? ', with the raw classic-level floor' : ''}, on classic-level`)
printMachine(runInfo, ['classic-level'])

/** @param {{ ms: number, cpuMs: number, mainCpuMs: number }} t */
const timesText = t => `${fmt(t.ms)} ms (CPU ${fmt(t.cpuMs)} ms, main thread ${fmt(t.mainCpuMs)} ms)`

/** @type {Array<Record<string, number>>} */
const rows = []
try {
  for (let run = 1; run <= runs; run++) {
    const insert = await timeInsert(run)
    const { ms: insertMs, cpuMs: insertCpuMs, mainCpuMs: insertMainCpuMs } = insert
    console.log(`  run ${run}: inserted with the index in ${timesText(insert)}, load ${loadText(os.loadavg())}`)
    /** @type {Record<string, number>} */
    let raw = {}
    if (floor) {
      const rawInsert = await timeRawInsert(run)
      console.log(`  run ${run}: raw insert in ${timesText(rawInsert)}, load ${loadText(os.loadavg())}`)
      raw = { rawInsertMs: rawInsert.ms, rawInsertCpuMs: rawInsert.cpuMs, rawInsertMainCpuMs: rawInsert.mainCpuMs }
    }
    const build = await timeBuild(run)
    const { ms: buildMs, cpuMs: buildCpuMs, mainCpuMs: buildMainCpuMs, where, rawFrom } = build
    console.log(`  run ${run}: built the index in ${timesText(build)}, load ${loadText(os.loadavg())}`)
    if (rawFrom !== null) {
      const rawBuild = await timeRawBuild(rawFrom)
      console.log(`  run ${run}: raw build in ${timesText(rawBuild)}, load ${loadText(os.loadavg())}`)
      raw = { ...raw, rawBuildMs: rawBuild.ms, rawBuildCpuMs: rawBuild.cpuMs, rawBuildMainCpuMs: rawBuild.mainCpuMs }
      raw = { ...raw, ...ratiosOf({ insertMs, insertCpuMs, insertMainCpuMs, buildMs, buildCpuMs, buildMainCpuMs, ...raw }) }
      console.log(`  run ${run}: levelkit build / raw build ${raw.buildOverRaw.toFixed(2)}x (CPU ${raw.buildOverRawCpu.toFixed(2)}x, main ${raw.buildOverRawMain.toFixed(2)}x); raw build / levelkit insert ${raw.rawOverInsert.toFixed(2)}x (CPU ${raw.rawOverInsertCpu.toFixed(2)}x); raw build / raw insert ${raw.rawOverRaw.toFixed(2)}x (CPU ${raw.rawOverRawCpu.toFixed(2)}x)`)
    }
    const generateCpuMs = timeGenerate(run)
    const bytes = dirSize(where)
    const writes = skipWrites ? { quietPerSec: NaN, duringPerSec: NaN, buildUnderWritesMs: NaN } : await writesDuringBuild(where, run)
    const row = { run, insertMs, buildMs, ratio: buildMs / insertMs, insertCpuMs, buildCpuMs, cpuRatio: buildCpuMs / insertCpuMs, insertMainCpuMs, buildMainCpuMs, generateCpuMs, ...writes, slowdown: writes.quietPerSec / writes.duringPerSec, bytes, ...raw }
    rows.push(row)
    const writesText = skipWrites ? '' : `; writes/s ${fmt(writes.quietPerSec)} without a build, ${fmt(writes.duringPerSec)} during one (${row.slowdown.toFixed(2)}x slower; that build took ${fmt(writes.buildUnderWritesMs)} ms)`
    console.log(`  run ${run}: insert with the index ${fmt(insertMs)} ms, build ${fmt(buildMs)} ms (${row.ratio.toFixed(2)}x; CPU ${row.cpuRatio.toFixed(2)}x)${writesText}`)
    for (const name of fs.readdirSync(dbRoot)) fs.rmSync(path.join(dbRoot, name), { recursive: true, force: true })
  }
} finally {
  fs.rmSync(dbRoot, { recursive: true, force: true })
}

const med = (/** @type {string} */ field) => median(rows.map(row => row[field]))
/** @type {Record<string, number>} */
const summary = {
  insertMs: med('insertMs'),
  buildMs: med('buildMs'),
  ratio: med('ratio'),
  insertCpuMs: med('insertCpuMs'),
  buildCpuMs: med('buildCpuMs'),
  cpuRatio: med('cpuRatio'),
  insertMainCpuMs: med('insertMainCpuMs'),
  buildMainCpuMs: med('buildMainCpuMs'),
  generateCpuMs: med('generateCpuMs')
}
if (!skipWrites) {
  Object.assign(summary, {
    quietWritesPerSec: med('quietPerSec'),
    duringWritesPerSec: med('duringPerSec'),
    slowdown: med('slowdown'),
    buildUnderWritesMs: med('buildUnderWritesMs')
  })
}
if (floor) for (const field of FLOOR_FIELDS) summary[field] = med(field)
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
  ...(skipWrites
    ? []
    : [
        ['writes/s without a build', fmt(summary.quietWritesPerSec)],
        ['writes/s during a build', fmt(summary.duringWritesPerSec)],
        ['slowdown of writes', `${summary.slowdown.toFixed(2)}x`],
        ['build under writes (ms)', fmt(summary.buildUnderWritesMs)]
      ])
])
if (floor) {
  // Each ratio is the median of the runs' ratios (the runs are paired).
  console.log()
  console.log('The floor, classic-level with no levelkit (medians of the runs\' ratios):')
  printTable([
    ['', 'wall', 'CPU', 'main thread CPU'],
    ['raw insert (ms)', fmt(summary.rawInsertMs), fmt(summary.rawInsertCpuMs), fmt(summary.rawInsertMainCpuMs)],
    ['raw build (ms)', fmt(summary.rawBuildMs), fmt(summary.rawBuildCpuMs), fmt(summary.rawBuildMainCpuMs)],
    ['levelkit build / raw build', summary.buildOverRaw.toFixed(2), summary.buildOverRawCpu.toFixed(2), summary.buildOverRawMain.toFixed(2)],
    ['raw build / levelkit insert', summary.rawOverInsert.toFixed(2), summary.rawOverInsertCpu.toFixed(2), summary.rawOverInsertMain.toFixed(2)],
    ['raw build / raw insert', summary.rawOverRaw.toFixed(2), summary.rawOverRawCpu.toFixed(2), summary.rawOverRawMain.toFixed(2)],
    ['levelkit insert / raw insert', summary.insertOverRaw.toFixed(2), summary.insertOverRawCpu.toFixed(2), summary.insertOverRawMain.toFixed(2)]
  ])
}
// By wall time and by CPU time: on a loaded machine the insert, which keeps
// both cores busy (its compaction), waits for them longer than the build, and
// the wall time alone flatters the build.
const met = summary.ratio <= GOAL
const cpuMet = summary.cpuRatio <= GOAL
console.log()
console.log(`Goal: build <= ${GOAL} x insert with the index: ${met ? 'met' : 'missed'} (${summary.ratio.toFixed(2)}); by CPU time: ${cpuMet ? 'met' : 'missed'} (${summary.cpuRatio.toFixed(2)})`)
if (floor) console.log(`At the floor (a raw build against levelkit's insert): ${summary.rawOverInsert <= GOAL ? 'within' : 'beyond'} the goal (${summary.rawOverInsert.toFixed(2)}; by CPU time ${summary.rawOverInsertCpu.toFixed(2)})`)

const outDir = runInfo.outDir
const floorColumns = floor ? FLOOR_FIELDS : []
writeCsv(path.join(outDir, 'results.csv'), ['run', 'insert_ms', 'build_ms', 'ratio', 'insert_cpu_ms', 'build_cpu_ms', 'cpu_ratio', 'insert_main_cpu_ms', 'build_main_cpu_ms', 'generate_cpu_ms', 'writes_per_s_quiet', 'writes_per_s_during', 'slowdown', 'build_under_writes_ms', 'db_bytes', ...floorColumns.map(snakeCase)],
  rows.map(r => [r.run, r.insertMs, r.buildMs, r.ratio, r.insertCpuMs, r.buildCpuMs, r.cpuRatio, r.insertMainCpuMs, r.buildMainCpuMs, r.generateCpuMs, r.quietPerSec, r.duringPerSec, r.slowdown, r.buildUnderWritesMs, r.bytes, ...floorColumns.map(field => r[field])]))
finishRun(outDir, { ...runInfo, loadAfter: os.loadavg() }, {
  options: { records, runs, writers, seconds, seed, floor, skipWrites },
  summary,
  goals: [
    { goal: `build <= ${GOAL} x insert with the index declared`, value: summary.ratio, met },
    { goal: `build <= ${GOAL} x insert with the index declared, by CPU time`, value: summary.cpuRatio, met: cpuMet },
    ...(floor ? [{ goal: `a raw classic-level build <= ${GOAL} x levelkit's insert (whether the goal is within reach)`, value: summary.rawOverInsert, met: summary.rawOverInsert <= GOAL }] : [])
  ],
  runs: rows
}, ['results.csv'])
