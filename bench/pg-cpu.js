// Node CPU per createChat of levelkit's ChatStore over PostgreSQL (issue 18:
// at 4 processes on 2 cores the Node side is the limit): one process, one
// throwaway cluster, a data set filled, then createChat × --n with
// --concurrency in flight. Prints CPU µs per op (process.cpuUsage() over the
// timed part), and per op: round trips (Client#query calls), statement text
// bytes, parameter bytes, rows returned. --prof FILE writes a CPU profile of
// the timed part (node:inspector) and prints the top self times by function.
// --library DIR runs another copy of levelkit (its own `pg` is counted).
// --calls counts JavaScript function calls per op over the timed part (V8's
// precise coverage with call counts: levelkit's, pg's and Node's JS alike;
// it makes the code slower, so its CPU column is not comparable) and, with
// --top, the functions called most per op (the last run).
//
// Usage: node bench/pg-cpu.js [--locking serializable|keys] [--n 400]
//   [--concurrency 16] [--users 300] [--chats 10] [--user-chats edges]
//   [--runs 1] [--warm N] [--prof out.cpuprofile] [--heap out.heapprofile] [--calls] [--top 20] [--library DIR]
import path from 'node:path'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import { pathToFileURL, fileURLToPath } from 'node:url'
import { Session } from 'node:inspector/promises'
import { postgres } from 'levelkit-testkit/postgres'
import { makeWorkload } from './lib/chat-workload-worker.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const args = process.argv.slice(2)
/** @param {string} name @param {string} fallback */
const opt = (name, fallback) => { const i = args.indexOf(`--${name}`); return i === -1 ? fallback : args[i + 1] }
const library = path.resolve(opt('library', path.join(here, '..')))
const locking = opt('locking', 'serializable')
const n = Number(opt('n', '400'))
const concurrency = Number(opt('concurrency', '16'))
const runs = Number(opt('runs', '1'))
const prof = opt('prof', '')
const top = Number(opt('top', '20'))
// createChats before the timed runs (default --n): 0 measures a fresh process's first ones, as a
// scale-out cell's processes at --scale 0.2 and 4 processes are (20 createChats each).
const warm = Number(opt('warm', String(n)))

const pg = createRequire(path.join(library, 'index.js'))('pg')
const counts = { queries: 0, textBytes: 0, paramBytes: 0, rows: 0 }
const clientQuery = pg.Client.prototype.query
pg.Client.prototype.query = function (/** @type {any[]} */ ...a) {
  counts.queries++
  const config = a[0]
  const text = typeof config === 'string' ? config : config?.text ?? ''
  counts.textBytes += Buffer.byteLength(text)
  const values = Array.isArray(a[1]) ? a[1] : config?.values ?? []
  for (const v of values) counts.paramBytes += v instanceof Uint8Array ? v.byteLength : Array.isArray(v) ? v.reduce((s, x) => s + (x?.byteLength ?? String(x).length), 0) : String(v ?? '').length
  const result = clientQuery.apply(this, a)
  if (result && typeof result.then === 'function') {
    result.then((/** @type {any} */ r) => { for (const x of Array.isArray(r) ? r : [r]) counts.rows += x?.rows?.length ?? 0 }, () => {})
  }
  return result
}

const { open } = await import(pathToFileURL(path.join(library, 'index.js')).href)
const { ChatStore } = await import(pathToFileURL(path.join(library, 'chat.js')).href)
const server = await postgres()
try {
  const work = makeWorkload({ seed: 1, run: 1, users: Number(opt('users', '300')), chats: Number(opt('chats', '10')), members: 20, pairChats: 0, messages: 0, n: { createUser: 0, createUserC: 0, getUser: 0, createChat: warm + n * runs, createChatC: 0, addChatMessage: 0, last50: 0, getChats: 0, getChatsC: 0 } })
  const db = await open({ backend: 'postgres', connectionString: server.connectionString, table: 'pgcpu', poolSize: concurrency, shared: true, locking })
  const store = await ChatStore.open(db, { passwordCost: { scryptN: 2, pbkdf2Iterations: 1000 }, userChats: opt('user-chats', 'edges') })
  for (const user of work.users) await store.createUser(user)
  for (const chat of work.chats) await store.createChat(chat)
  const inputs = work.inputs.createChat
  const pump = async (/** @type {any[]} */ items) => {
    let i = 0
    await Promise.all(Array.from({ length: concurrency }, async () => { while (i < items.length) await store.createChat(items[i++]) }))
  }
  await pump(inputs.slice(0, warm))
  const session = new Session()
  const heap = opt('heap', '')
  const calls = args.includes('--calls')
  if (prof || heap || calls) session.connect()
  if (calls) { await session.post('Profiler.enable'); await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false }) }
  if (heap) await session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
  if (prof) { await session.post('Profiler.enable'); await session.post('Profiler.setSamplingInterval', { interval: 100 }); await session.post('Profiler.start') }
  for (let r = 1; r <= runs; r++) {
    const before = { ...counts }
    // (Taking the coverage resets its counts.)
    if (calls) await session.post('Profiler.takePreciseCoverage')
    const cpu = process.cpuUsage()
    const t0 = performance.now()
    await pump(inputs.slice(warm + (r - 1) * n, warm + r * n))
    const ms = performance.now() - t0
    const { user, system } = process.cpuUsage(cpu)
    const per = (/** @type {keyof typeof counts} */ k) => ((counts[k] - before[k]) / n).toFixed(2)
    const coverage = calls ? (await session.post('Profiler.takePreciseCoverage')).result : null
    const callsPerOp = coverage !== null ? { callsPerOp: Math.round(countCalls(coverage) / n) } : {}
    if (coverage !== null && r === runs && top > 0) printCallsTop(coverage)
    console.log(JSON.stringify({ library, locking, n, warm, run: r, concurrency, cpuUsPerOp: Math.round((user + system) / n), userUsPerOp: Math.round(user / n), opsPerS: Math.round(n / ms * 1000), roundTrips: per('queries'), textBytes: per('textBytes'), paramBytes: per('paramBytes'), rows: per('rows'), ...callsPerOp }))
  }
  if (heap) {
    const { profile } = await session.post('HeapProfiler.stopSampling')
    fs.writeFileSync(heap, JSON.stringify(profile))
    printHeapTop(profile)
  }
  if (prof) {
    const { profile } = await session.post('Profiler.stop')
    fs.writeFileSync(prof, JSON.stringify(profile))
    printTop(profile)
  }
  await db.close()
} finally {
  await server.stop()
}

/**
 * Function calls counted by precise coverage since it was last taken: each
 * function's first range holds its calls (a script's top level counts as
 * one, run once, and is left out).
 * @param {any[]} scripts
 */
function countCalls (scripts) {
  let total = 0
  for (const script of scripts) {
    for (const fn of script.functions) if (fn.functionName !== '' || fn.ranges[0].startOffset !== 0) total += fn.ranges[0].count
  }
  return total
}

/**
 * Calls per op by function (name url:line), the top --top: where the
 * calls of countCalls() go. @param {any[]} scripts
 */
function printCallsTop (scripts) {
  /** @type {Map<string, number>} */
  const byFunction = new Map()
  for (const script of scripts) {
    const url = script.url.replace(/^.*\/(node_modules|lib|wt-[^/]+)\//, '$1/')
    for (const fn of script.functions) {
      if (fn.functionName === '' && fn.ranges[0].startOffset === 0) continue
      const key = `${fn.functionName || '(anonymous)'} ${url}:@${fn.ranges[0].startOffset}`
      byFunction.set(key, (byFunction.get(key) ?? 0) + fn.ranges[0].count)
    }
  }
  for (const [key, count] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${(count / n).toFixed(1).padStart(8)} calls/op  ${key}`)
}

/** Self time by function (name url:line), the top --top. @param {any} profile */
function printTop (profile) {
  /** @type {Map<number, any>} */
  const nodes = new Map(profile.nodes.map((/** @type {any} */ node) => [node.id, node]))
  /** @type {Map<string, number>} */
  const self = new Map()
  const dt = profile.timeDeltas
  let total = 0
  for (let i = 0; i < profile.samples.length; i++) {
    const f = nodes.get(profile.samples[i]).callFrame
    const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules|lib|wt-[^/]+)\//, '$1/')}:${f.lineNumber + 1}`
    const d = dt[i] ?? 0
    total += d
    self.set(key, (self.get(key) ?? 0) + d)
  }
  const rows = [...self].sort((a, b) => b[1] - a[1]).slice(0, top)
  for (const [key, us] of rows) console.log(`${(us / 1000).toFixed(1).padStart(8)} ms ${(100 * us / total).toFixed(1).padStart(5)}%  ${key}`)
  console.log(`total ${(total / 1000).toFixed(0)} ms sampled`)
}

/** Bytes allocated by function (sampled), the top --top, per op. @param {any} profile */
function printHeapTop (profile) {
  /** @type {Map<string, number>} */
  const self = new Map()
  let total = 0
  const walk = (/** @type {any} */ node) => {
    const f = node.callFrame
    const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules|lib|wt-[^/]+)\//, '$1/')}:${f.lineNumber + 1}`
    const bytes = node.selfSize
    total += bytes
    self.set(key, (self.get(key) ?? 0) + bytes)
    for (const child of node.children) walk(child)
  }
  walk(profile.head)
  const ops = n * runs
  for (const [key, bytes] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${(bytes / ops / 1024).toFixed(1).padStart(8)} KB/op  ${key}`)
  console.log(`total ${(total / ops / 1024).toFixed(0)} KB/op allocated (sampled)`)
}
