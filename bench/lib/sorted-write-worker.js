// One run of bench/sorted-write.js, in a process of its own (forked by it),
// so that each run starts with a fresh heap and its peak RSS is its own.
//
// Receives one config message, writes `entries` pre-sorted entries into a
// fresh database, answers with one result message, and exits.
//
// The write loops are deliberately plain. Every loop records one row per
// 1000 writes (a "window"): elapsed ms since the first write, and the mean
// time per write over the window:
//   batch, levelkit: window wall time / writes (one batch of 1000 is one
//                    window, so this is the batch time / 1000, amortized);
//   put, levelkit-put: the mean latency of the window's individual writes,
//                    each timed from call to resolve with `concurrency` in
//                    flight: the column the 2013 script wrote.
// Every mode also records the window's wall time (`window_ms`), which is
// what the per-batch percentiles are computed from.
// With `bare: true` the same writes run in a minimal inline loop with no
// recording and no progress bar: the baseline for the script's overhead.

import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { Progress } from './progress.js'
import { serveOneRun } from './child-run.js'

const WINDOW = 1000

/**
 * @typedef {{
 *   mode: 'put' | 'batch' | 'levelkit' | 'levelkit-put',
 *   backend: 'leveldb' | 'memory',
 *   entries: number,
 *   batchSize: number,
 *   concurrency: number,
 *   levelOptions: Record<string, unknown>,
 *   location: string,
 *   keepDb: boolean,
 *   bare: boolean,
 *   label: string
 * }} Config
 */

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

/** @param {string} dir @returns {number} bytes */
function dirSize (dir) {
  let total = 0
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name)
    total += entry.isDirectory() ? dirSize(file) : fs.statSync(file).size
  }
  return total
}

/** @param {Config} config */
async function openRaw (config) {
  if (config.backend === 'leveldb') {
    const { ClassicLevel } = await import('classic-level')
    const db = new ClassicLevel(config.location, { ...config.levelOptions, valueEncoding: 'view', createIfMissing: true, errorIfExists: true })
    await db.open()
    return db
  }
  const { MemoryLevel } = await import('memory-level')
  const db = new MemoryLevel({ valueEncoding: 'view' })
  await db.open()
  return db
}

/** @param {Config} config */
async function openLevelkit (config) {
  const { open } = await import('levelkit')
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

/** @param {Config} config */
export async function run (config) {
  const { mode, entries: n } = config
  const raw = crypto.randomBytes(256) // the same 256 bytes for every entry, as in 2013
  const rec = new Recorder(n)
  const progress = new Progress(config.label, n, { enabled: !config.bare && !!process.stderr.isTTY })
  const levelkit = mode === 'levelkit' || mode === 'levelkit-put'
  const memory = new MemorySampler()
  const db = levelkit ? await openLevelkit(config) : await openRaw(config)
  const level = levelkit ? db.level : db

  let totalMs
  let valueNote
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
  } else {
    // levelkit stores JSON: the 256 bytes go in as a base64 string.
    const value = raw.toString('base64')
    valueNote = `a JSON record { key, value } whose value is the same 256 random bytes as a ${value.length}-char base64 string`
    const collection = db.collection('entries', { id: (/** @type {any} */ e) => e.key })
    if (mode === 'levelkit') {
      totalMs = await batchLoop(n, config.batchSize, (from, to) => db.write(async (/** @type {any} */ w) => {
        const c = collection.in(w)
        for (let i = from; i < to; i++) await c.insert({ key: keyOf(i), value })
      }), rec, progress)
    } else {
      totalMs = await putLoop(n, config.concurrency, i => collection.insert({ key: keyOf(i), value }), rec, progress)
    }
  }
  progress.done()

  const bytes = await entryBytes(level)
  await assertLastWritten(level, n)
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
    peakRssBytes: usage.maxRSS * 1024,
    peakRssAnonBytes: memory.available ? memory.peakAnonBytes : null,
    peakRssFileBytes: memory.available ? memory.peakFileBytes : null,
    heapUsedBytes: process.memoryUsage().heapUsed,
    cpuUserMs: usage.userCPUTime / 1000,
    cpuSystemMs: usage.systemCPUTime / 1000,
    rows: {
      elapsedMs: Array.from(rec.elapsedMs.subarray(0, rec.count)),
      nsPerWrite: Array.from(rec.nsPerWrite.subarray(0, rec.count)),
      windowMs: Array.from(rec.windowMs.subarray(0, rec.count))
    }
  }
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
