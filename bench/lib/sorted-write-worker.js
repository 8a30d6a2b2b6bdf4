// One run of bench/sorted-write.js, in a process of its own (forked by it),
// so that each run starts with a fresh heap and its peak RSS is its own.
//
// Receives one config message, writes `entries` pre-sorted entries into a
// fresh database, answers with one result message, and exits.
//
// The write loops are deliberately plain. Every loop records one row per
// 1000 writes (a "window"): elapsed ms since the first write, and the mean
// time per write over the window:
//   batch, raw, levelkit-scope: window wall time / writes (one batch of
//                    1000 is one window, so this is the batch time / 1000,
//                    amortized);
//   levelkit:        one insertMany() call over a generator of all the
//                    entries: a window ends when its last entry is pulled
//                    (insertMany() pulls at most two batches ahead of what is
//                    written, so the windows follow the writes; the total
//                    time includes the last batches' writes);
//   put, levelkit-put: the mean latency of the window's individual writes,
//                    each timed from call to resolve with `concurrency` in
//                    flight: the column the 2013 script wrote.
// Every mode also records the window's wall time (`window_ms`), which is
// what the per-batch percentiles are computed from.
// With `bare: true` the same writes run in a minimal inline loop with no
// recording and no progress bar: the baseline for the script's overhead.

import crypto from 'node:crypto'
import fs from 'node:fs'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { Progress } from './progress.js'
import { serveOneRun } from './child-run.js'
import { dirSize } from './seeds-common.js'
import { mainThreadCpuMs } from './thread-cpu.js'

const WINDOW = 1000
// The levelkit entries' collection, and the namespace the raw mode writes.
const COLLECTION = 'entries'
// Databases up to this many entries are hashed after the run, key and value
// bytes of every entry: equal hashes, equal databases.
const HASH_LIMIT = 100000

/**
 * @typedef {{
 *   mode: 'put' | 'batch' | 'raw' | 'levelkit' | 'levelkit-scope' | 'levelkit-put',
 *   backend: 'leveldb' | 'memory',
 *   entries: number,
 *   batchSize: number,
 *   concurrency: number,
 *   levelOptions: Record<string, unknown>,
 *   location: string,
 *   keepDb: boolean,
 *   bare: boolean,
 *   label: string,
 *   levelkitEntry: string
 * }} Config
 */

/**
 * 256 random-looking bytes, the same in every run (so that databases written
 * by different runs can be compared): SHA-256 of 8 fixed strings.
 */
function valueBytes () {
  return Buffer.concat(Array.from({ length: 8 }, (_, i) => crypto.createHash('sha256').update(`sorted-write ${i}`).digest()))
}

/** The key of entry i: 16 ASCII digits, so byte order is numeric order. @param {number} i */
function keyOf (i) {
  return String(i).padStart(16, '0')
}

class Recorder {
  /** @param {number} entries */
  constructor (entries) {
    const rows = Math.ceil(entries / WINDOW) + 1
    this.elapsedMs = new Float64Array(rows)
    this.nsPerWrite = new Float64Array(rows)
    this.windowMs = new Float64Array(rows)
    this.count = 0
  }

  /** @param {number} elapsedMs @param {number} nsPerWrite @param {number} windowMs */
  row (elapsedMs, nsPerWrite, windowMs) {
    const k = this.count++
    this.elapsedMs[k] = elapsedMs
    this.nsPerWrite[k] = nsPerWrite
    this.windowMs[k] = windowMs
  }
}

/**
 * Chained batches of `size` (batch), or db.write() scopes of `size` inserts
 * (levelkit): `writeBatch(from, to)` writes entries [from, to).
 * @param {number} n @param {number} size
 * @param {(from: number, to: number) => Promise<unknown>} writeBatch
 * @param {Recorder} rec @param {Progress} progress
 */
async function batchLoop (n, size, writeBatch, rec, progress) {
  const start = performance.now()
  let rowStart = start
  let rowWrites = 0
  for (let i = 0; i < n;) {
    const end = Math.min(n, i + size)
    await writeBatch(i, end)
    rowWrites += end - i
    i = end
    if (rowWrites >= WINDOW || i === n) {
      const now = performance.now()
      rec.row(now - start, (now - rowStart) * 1e6 / rowWrites, now - rowStart)
      rowStart = now
      rowWrites = 0
      progress.update(i)
    }
  }
  return performance.now() - start
}

/**
 * One bulk call over all the entries: `load(entries)` writes what `source`
 * yields (n entries). A window ends when its last entry is pulled.
 * @param {number} n
 * @param {Iterable<unknown>} source
 * @param {(entries: Iterable<unknown>) => Promise<unknown>} load
 * @param {Recorder} rec @param {Progress} progress
 */
async function pulledLoop (n, source, load, rec, progress) {
  const start = performance.now()
  let rowStart = start
  let pulled = 0
  function * counted () {
    for (const entry of source) {
      yield entry
      if (++pulled % WINDOW === 0 || pulled === n) {
        const now = performance.now()
        const writes = pulled % WINDOW || WINDOW
        rec.row(now - start, (now - rowStart) * 1e6 / writes, now - rowStart)
        rowStart = now
        progress.update(pulled)
      }
    }
  }
  await load(counted())
  return performance.now() - start
}

/**
 * Individual writes with `concurrency` in flight: each of `concurrency`
 * loops awaits one write at a time, so exactly that many are pending (as the
 * 2013 pump did). Keys are handed out in increasing order.
 * @param {number} n @param {number} concurrency
 * @param {(i: number) => Promise<unknown>} writeOne
 * @param {Recorder} rec @param {Progress} progress
 */
async function putLoop (n, concurrency, writeOne, rec, progress) {
  const start = performance.now()
  let next = 0
  let done = 0
  let rowStart = start
  let rowWrites = 0
  let latencyMs = 0
  const pump = async () => {
    while (next < n) {
      const i = next++
      const t = performance.now()
      await writeOne(i)
      const now = performance.now()
      latencyMs += now - t
      done++
      if (++rowWrites === WINDOW || done === n) {
        rec.row(now - start, latencyMs * 1e6 / rowWrites, now - rowStart)
        rowStart = now
        rowWrites = 0
        latencyMs = 0
        progress.update(done)
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, pump))
  return performance.now() - start
}

// The baseline loops: the same writes as above, inline, with nothing else.

/** @param {any} db @param {number} n @param {number} size @param {Uint8Array} value */
async function bareBatch (db, n, size, value) {
  const start = performance.now()
  for (let i = 0; i < n;) {
    const end = Math.min(n, i + size)
    const batch = db.batch()
    for (; i < end; i++) batch.put(String(i).padStart(16, '0'), value)
    await batch.write()
  }
  return performance.now() - start
}

/** @param {any} db @param {number} n @param {number} concurrency @param {Uint8Array} value */
async function barePut (db, n, concurrency, value) {
  const start = performance.now()
  let i = 0
  const pump = async () => {
    while (i < n) await db.put(String(i++).padStart(16, '0'), value)
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, pump))
  return performance.now() - start
}

/**
 * @param {Config} config
 * @param {{ keyEncoding?: string, valueEncoding: string }} encodings
 */
async function openRaw (config, encodings) {
  if (config.backend === 'leveldb') {
    const { ClassicLevel } = await import('classic-level')
    const db = new ClassicLevel(config.location, { ...config.levelOptions, ...encodings, createIfMissing: true, errorIfExists: true })
    await db.open()
    return db
  }
  const { MemoryLevel } = await import('memory-level')
  const db = new MemoryLevel(encodings)
  await db.open()
  return db
}

/** @param {Config} config */
async function openLevelkit (config) {
  // The levelkit of this tree (a worktree's own lib), whatever the
  // `levelkit` package resolves to, or the one --levelkit names.
  const { open } = await import(pathToFileURL(config.levelkitEntry).href)
  const options = config.backend === 'leveldb'
    ? { backend: 'leveldb', location: config.location, ...config.levelOptions, createIfMissing: true, errorIfExists: true }
    : { backend: 'memory' }
  return open(options)
}

/** Bytes of the first stored entry (key and value, as LevelDB sees them). @param {any} level */
async function entryBytes (level) {
  const [[key, value]] = await level.iterator({ limit: 1, keyEncoding: 'view', valueEncoding: 'view' }).all()
  return { key: key.byteLength, value: value.byteLength }
}

/**
 * Peak resident memory split by kind, sampled from /proc/self/status every
 * 100 ms (Linux only): anonymous memory (JS heap, LevelDB's memtables and
 * caches, malloc) and file-backed pages (the node binary, and LevelDB's
 * mmap()ed table files: page cache the kernel can drop at will).
 */
class MemorySampler {
  constructor () {
    this.peakAnonBytes = 0
    this.peakFileBytes = 0
    this.available = fs.existsSync('/proc/self/status')
    this.timer = this.available ? setInterval(() => this.sample(), 100) : null
    this.sample()
  }

  sample () {
    if (!this.available) return
    const status = fs.readFileSync('/proc/self/status', 'utf8')
    const anon = /RssAnon:\s+(\d+) kB/.exec(status)
    const file = /RssFile:\s+(\d+) kB/.exec(status)
    if (anon) this.peakAnonBytes = Math.max(this.peakAnonBytes, Number(anon[1]) * 1024)
    if (file) this.peakFileBytes = Math.max(this.peakFileBytes, Number(file[1]) * 1024)
  }

  stop () {
    if (this.timer) clearInterval(this.timer)
    this.sample()
  }
}

/** The CPU time of the timed loop: process (all threads) and main thread. */
class CpuMeter {
  constructor () {
    this.process = process.cpuUsage()
    this.main = mainThreadCpuMs()
  }

  stop () {
    const { user, system } = process.cpuUsage(this.process)
    const main = mainThreadCpuMs()
    return { loopCpuMs: (user + system) / 1000, loopMainCpuMs: main === null || this.main === null ? null : main - this.main }
  }
}

/** @param {Config} config */
export async function run (config) {
  const { mode, entries: n } = config
  const raw = valueBytes() // the same 256 bytes for every entry, as in 2013
  const rec = new Recorder(n)
  const progress = new Progress(config.label, n, { enabled: !config.bare && !!process.stderr.isTTY })
  const levelkit = mode.startsWith('levelkit')
  const memory = new MemorySampler()
  const db = levelkit
    ? await openLevelkit(config)
    : await openRaw(config, mode === 'raw' ? { keyEncoding: 'view', valueEncoding: 'utf8' } : { valueEncoding: 'view' })
  const level = levelkit ? db.level : db
  // levelkit stores JSON: the 256 bytes go in as a base64 string.
  const base64 = raw.toString('base64')
  const recordNote = `a JSON record { key, value } whose value is the same 256 random bytes as a ${base64.length}-char base64 string`

  let totalMs
  let valueNote
  const cpu = new CpuMeter()
  if (mode === 'batch') {
    valueNote = 'the same 256 random bytes (a Buffer) for every entry'
    totalMs = config.bare
      ? await bareBatch(db, n, config.batchSize, raw)
      : await batchLoop(n, config.batchSize, (from, to) => {
        const batch = db.batch()
        for (let i = from; i < to; i++) batch.put(keyOf(i), raw)
        return batch.write()
      }, rec, progress)
  } else if (mode === 'put') {
    valueNote = 'the same 256 random bytes (a Buffer) for every entry'
    totalMs = config.bare
      ? await barePut(db, n, config.concurrency, raw)
      : await putLoop(n, config.concurrency, i => db.put(keyOf(i), raw), rec, progress)
  } else if (mode === 'raw') {
    // What levelkit writes for the same entries, written by hand with a
    // chained batch: the key of its records namespace (the sublevel prefix,
    // then the tuple encoding of a string: the tag 0x70 and its UTF-8
    // bytes), and the record's JSON as its value (the `contentHash` of the
    // result shows the two databases are the same, byte for byte).
    valueNote = recordNote
    const prefix = Buffer.from(`!${COLLECTION}!\x70`, 'latin1')
    totalMs = await batchLoop(n, config.batchSize, (from, to) => {
      const batch = db.batch()
      for (let i = from; i < to; i++) {
        const id = keyOf(i)
        const key = Buffer.allocUnsafe(prefix.length + id.length)
        prefix.copy(key, 0)
        key.latin1Write(id, prefix.length)
        batch.put(key, `{"key":"${id}","value":"${base64}"}`)
      }
      return batch.write()
    }, rec, progress)
  } else {
    valueNote = recordNote
    const value = base64
    const collection = db.collection(COLLECTION, { id: (/** @type {any} */ e) => e.key })
    if (mode === 'levelkit') {
      totalMs = await pulledLoop(n, (function * () {
        for (let i = 0; i < n; i++) yield { key: keyOf(i), value }
      })(), entries => collection.insertMany(entries, { batchSize: config.batchSize }), rec, progress)
    } else if (mode === 'levelkit-scope') {
      totalMs = await batchLoop(n, config.batchSize, (from, to) => db.write(async (/** @type {any} */ w) => {
        const c = collection.in(w)
        for (let i = from; i < to; i++) await c.insert({ key: keyOf(i), value })
      }), rec, progress)
    } else {
      totalMs = await putLoop(n, config.concurrency, i => collection.insert({ key: keyOf(i), value }), rec, progress)
    }
  }
  const { loopCpuMs, loopMainCpuMs } = cpu.stop()
  progress.done()

  const bytes = await entryBytes(level)
  await assertLastWritten(level, n)
  const contentHash = n <= HASH_LIMIT ? await hashOf(level) : null
  const closeStart = performance.now()
  await db.close()
  const closeMs = performance.now() - closeStart
  memory.stop()
  let dbBytes = null
  if (config.backend === 'leveldb') {
    dbBytes = dirSize(config.location)
    if (!config.keepDb) fs.rmSync(config.location, { recursive: true, force: true })
  }
  const usage = process.resourceUsage()
  return {
    mode,
    backend: config.backend,
    bare: config.bare,
    entries: n,
    totalMs,
    closeMs,
    writesPerSec: n / (totalMs / 1000),
    dbBytes,
    entryBytes: bytes,
    valueNote,
    contentHash,
    peakRssBytes: usage.maxRSS * 1024,
    peakRssAnonBytes: memory.available ? memory.peakAnonBytes : null,
    peakRssFileBytes: memory.available ? memory.peakFileBytes : null,
    heapUsedBytes: process.memoryUsage().heapUsed,
    cpuUserMs: usage.userCPUTime / 1000,
    cpuSystemMs: usage.systemCPUTime / 1000,
    loopCpuMs,
    loopMainCpuMs,
    rows: {
      elapsedMs: Array.from(rec.elapsedMs.subarray(0, rec.count)),
      nsPerWrite: Array.from(rec.nsPerWrite.subarray(0, rec.count)),
      windowMs: Array.from(rec.windowMs.subarray(0, rec.count))
    }
  }
}

/**
 * SHA-256 of every key and value of the database, in key order, each
 * preceded by its length.
 * @param {any} level
 */
async function hashOf (level) {
  const hash = crypto.createHash('sha256')
  const length = Buffer.alloc(4)
  for await (const [key, value] of level.iterator({ keyEncoding: 'view', valueEncoding: 'view' })) {
    for (const bytes of [key, value]) {
      length.writeUInt32BE(bytes.byteLength)
      hash.update(length)
      hash.update(bytes)
    }
  }
  return hash.digest('hex')
}

/**
 * Outside the timed loop: the last key is there (all writes landed). Cheap
 * for any N, unlike counting.
 * @param {any} level @param {number} n
 */
async function assertLastWritten (level, n) {
  const [last] = await level.keys({ reverse: true, limit: 1, keyEncoding: 'utf8' }).all()
  if (!last || !last.includes(keyOf(n - 1))) throw new Error(`The last entry written is missing (found ${JSON.stringify(last)})`)
  return n
}

serveOneRun(run)
