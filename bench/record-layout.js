// A seeds' question (issue 6 part 3): store a chat message as one aggregated
// value, or as one key per field?
//
//   aggregated  key  <chat>!<seq>            value JSON {"from","text","ts"}
//   per-field   keys <chat>!<seq>!from       value the sender id
//                    <chat>!<seq>!text       value the text
//                    <chat>!<seq>!ts         value the timestamp (decimal)
//
// Raw Level (classic-level, or memory-level with --backend memory), utf8
// keys and values, chained batches, the same messages for both layouts
// (seeded PRNG). Chat ids are 6 digits and sequence numbers 10 digits, zero
// padded, so byte order is numeric order. Both layouts return the same
// objects { seq, from, text, ts } (checked after every run).
//
// Phases, each timed on its own, in this order on a fresh database:
//   bulk   --messages messages, chained batches of --batch-size messages
//          (1 or 3 puts per message), messages spread round-robin over
//          --chats chats (so keys arrive interleaved, as in a live system)
//   send   --sends messages, one chained batch per message, awaited one at a
//          time, to random chats: the sendMessage shape
//   page   --pages reads of the last --page-size messages of a random chat:
//          one reverse iterator (limit page-size, or 3 × page-size entries
//          for per-field, regrouped into messages)
//   get    --gets point reads of one random message: get() of 1 key against
//          getMany() of its 3 keys
// Then, on leveldb: the database size as written (tables + write-ahead
// log), and after compactRange() over all keys (tables only, Snappy).
//
// Both layouts are open at once and take turns: every phase is cut into
// --slices slices (default 10), run layout by layout, alternating which goes
// first, so load from elsewhere on the machine hits both alike; a phase's
// time is the sum of its slices. (Both databases' background compactions
// run whenever LevelDB decides, also during the other layout's slices.)
// With --runs K this repeats K times on fresh databases; we report medians
// and the median of per-run ratios (aggregated / per-field ops/s: > 1 means
// aggregated is faster; per-field / aggregated bytes).
//
// Output: a summary on stdout, a progress bar on stderr when it is a TTY,
// and under --out (default bench/out/, ignored by git) a folder
// record-layout-<time>/ with results.csv (one row per run, layout and
// phase), summary.json, record-layout.svg (ops/s per phase) and
// record-layout-bytes.svg (bytes per message).
//
// Usage: node bench/record-layout.js [--messages 200000] [--chats 200]
//   [--sends 20000] [--pages 2000] [--gets 20000] [--page-size 50]
//   [--batch-size 1000] [--text-size 90] [--runs 3] [--slices 10]
//   [--backend leveldb|memory|leveldb,memory] [--out bench/out] [--db-dir <tmp>]

import os from 'node:os'
import fs from 'node:fs'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { ClassicLevel } from 'classic-level'
import { MemoryLevel } from 'memory-level'
import { Progress } from './lib/progress.js'
import { median, fmt, mb, parseCount } from './lib/stats.js'
import { barSvg } from './lib/svg-plot.js'
import {
  parseCli, failWith, optionOf, writeCsv, printTable, finishRun, dirSize, prng, messageText, sideBySideOptions, printProblems, startRun, printMachine
} from './lib/seeds-common.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const NAME = 'record-layout'
const LAYOUTS = ['aggregated', 'per-field']
const PHASES = ['bulk', 'send', 'page', 'get']
const BACKENDS = ['leveldb', 'memory']

const USAGE = `Usage: node bench/record-layout.js [options]
  --messages N     messages written in bulk first (default 200000)
  --chats N        chats the messages are spread over (default 200)
  --sends N        single-message batches timed after the bulk load (default 20000)
  --pages N        "last page of a chat" reads (default 2000)
  --gets N         single-message point reads (default 20000)
  --page-size N    messages per page (default 50)
  --batch-size N   messages per bulk batch (default 1000)
  --text-size N    mean text length in characters (default 90)
  --runs K         runs of each layout, fresh database each (default 3)
  --slices N       slices per phase; the layouts take turns slice by slice (default 10)
  --backend B      leveldb | memory | leveldb,memory (default leveldb)
  --out DIR        output folder (default bench/out)
  --db-dir DIR     where the LevelDB databases go (default the OS temp dir)`

const args = parseCli(NAME, USAGE, {
  messages: { type: 'string', default: '200000' },
  chats: { type: 'string', default: '200' },
  sends: { type: 'string', default: '20000' },
  pages: { type: 'string', default: '2000' },
  gets: { type: 'string', default: '20000' },
  'page-size': { type: 'string', default: '50' },
  'batch-size': { type: 'string', default: '1000' },
  'text-size': { type: 'string', default: '90' },
  ...sideBySideOptions(path.join(here, 'out'))
})
const count = (/** @type {string} */ flag) => optionOf(NAME, USAGE, () => parseCount(args[flag]))
const opts = {
  messages: count('messages'),
  chats: count('chats'),
  sends: count('sends'),
  pages: count('pages'),
  gets: count('gets'),
  pageSize: count('page-size'),
  batchSize: count('batch-size'),
  textSize: count('text-size'),
  runs: count('runs'),
  slices: count('slices')
}
const backends = args.backend.split(',')
for (const b of backends) if (!BACKENDS.includes(b)) failWith(NAME, USAGE, `Unknown backend ${JSON.stringify(b)}`)
if (opts.chats > 999999) failWith(NAME, USAGE, '--chats is at most 999999')

const chatKey = (/** @type {number} */ chat) => String(chat).padStart(6, '0')
const seqKey = (/** @type {number} */ seq) => String(seq).padStart(10, '0')
const FIELDS = ['from', 'text', 'ts'] // sorted: the order LevelDB keeps them in

/**
 * The messages of one run, generated before any timing: the same for both
 * layouts. Message i of the bulk load goes to chat i % chats; sends go to
 * random chats.
 */
function makeData () {
  const rand = prng(0x5eed)
  const seqs = new Int32Array(opts.chats)
  let ts = Date.UTC(2026, 0, 1)
  const make = (/** @type {number} */ chat) => {
    ts += 1 + rand.int(5000)
    return { chat, seq: ++seqs[chat], from: 'u' + (1 + rand.int(10000)), text: messageText(rand, opts.textSize), ts }
  }
  const bulk = Array.from({ length: opts.messages }, (_, i) => make(i % opts.chats))
  const sends = Array.from({ length: opts.sends }, () => make(rand.int(opts.chats)))
  const pageChats = Int32Array.from({ length: opts.pages }, () => rand.int(opts.chats))
  const gets = Array.from({ length: opts.gets }, () => {
    const chat = rand.int(opts.chats)
    return { chat, seq: 1 + rand.int(seqs[chat]) }
  })
  return { bulk, sends, pageChats, gets, lastSeq: seqs }
}

/** @typedef {{ chat: number, seq: number, from: string, text: string, ts: number }} Message */

/**
 * The two layouts, as a competent engineer writes them by hand.
 * Each returns { write(batch, msg), bytes(msg), page(db, chat, n), get(db, chat, seq) }.
 */
const layouts = {
  aggregated: {
    /** @param {any} batch @param {Message} m */
    write (batch, m) {
      batch.put(`${chatKey(m.chat)}!${seqKey(m.seq)}`, JSON.stringify({ from: m.from, text: m.text, ts: m.ts }))
    },
    /** @param {Message} m stored bytes (keys + values, UTF-8) */
    bytes (m) {
      return 17 + Buffer.byteLength(JSON.stringify({ from: m.from, text: m.text, ts: m.ts }))
    },
    /** @param {any} db @param {number} chat @param {number} n */
    async page (db, chat, n) {
      const prefix = chatKey(chat) + '!'
      const entries = await db.iterator({ gt: prefix, lt: prefix + '~', reverse: true, limit: n }).all()
      const out = new Array(entries.length)
      for (let i = 0; i < entries.length; i++) {
        const [key, value] = entries[i]
        const m = JSON.parse(value)
        m.seq = Number(key.slice(7))
        out[i] = m
      }
      return out
    },
    /** @param {any} db @param {number} chat @param {number} seq */
    async get (db, chat, seq) {
      const value = await db.get(`${chatKey(chat)}!${seqKey(seq)}`)
      if (value === undefined) return undefined
      const m = JSON.parse(value)
      m.seq = seq
      return m
    }
  },
  'per-field': {
    /** @param {any} batch @param {Message} m */
    write (batch, m) {
      const k = `${chatKey(m.chat)}!${seqKey(m.seq)}!`
      batch.put(k + 'from', m.from)
      batch.put(k + 'text', m.text)
      batch.put(k + 'ts', String(m.ts))
    },
    /** @param {Message} m */
    bytes (m) {
      return 3 * 18 + 4 + 4 + 2 + Buffer.byteLength(m.from) + Buffer.byteLength(m.text) + String(m.ts).length
    },
    /** @param {any} db @param {number} chat @param {number} n */
    async page (db, chat, n) {
      const prefix = chatKey(chat) + '!'
      const entries = await db.iterator({ gt: prefix, lt: prefix + '~', reverse: true, limit: 3 * n }).all()
      const out = []
      /** @type {any} */
      let m = null
      let current = ''
      for (let i = 0; i < entries.length; i++) {
        const [key, value] = entries[i]
        const cut = key.lastIndexOf('!')
        const id = key.slice(0, cut)
        if (id !== current) {
          current = id
          m = { seq: Number(key.slice(7, cut)) }
          out.push(m)
        }
        const field = key.slice(cut + 1)
        m[field] = field === 'ts' ? Number(value) : value
      }
      return out
    },
    /** @param {any} db @param {number} chat @param {number} seq */
    async get (db, chat, seq) {
      const k = `${chatKey(chat)}!${seqKey(seq)}!`
      const [from, text, ts] = await db.getMany(FIELDS.map(f => k + f))
      if (from === undefined) return undefined
      return { from, text, ts: Number(ts), seq }
    }
  }
}

/** @param {string} backend @param {string} location */
async function openDb (backend, location) {
  const db = backend === 'leveldb'
    ? new ClassicLevel(location, { createIfMissing: true, errorIfExists: true })
    : new MemoryLevel()
  await db.open()
  return db
}

/**
 * One run of both layouts, each on a fresh database, both open at once.
 * Every phase is cut into --slices slices; the layouts take turns slice by
 * slice (alternating which goes first), so a burst of load on this shared
 * machine hits both alike. A phase's time is the sum of its slices.
 * @param {string} backend @param {ReturnType<typeof makeData>} data
 * @param {number} run @param {Progress} progress @param {{ done: number }} counter
 */
async function runPair (backend, data, run, progress, counter) {
  /** @type {Record<string, any>} */
  const state = {}
  for (const name of LAYOUTS) {
    const location = path.join(args['db-dir'], `levelkit-${NAME}-${process.pid}-${backend}-${name}-${run}`)
    fs.rmSync(location, { recursive: true, force: true })
    state[name] = {
      layout: /** @type {any} */ (layouts)[name],
      location,
      db: await openDb(backend, location),
      phases: /** @type {Record<string, { count: number, ms: number, opsPerSec: number }>} */ ({}),
      pageMessages: 0,
      found: 0
    }
  }
  const tick = (/** @type {number} */ n) => { counter.done += n; progress.update(counter.done) }

  /**
   * @param {string} phase @param {number} n items
   * @param {(st: any, from: number, to: number) => Promise<void>} work items [from, to) for one layout
   * @param {number} [unit] round slice bounds to multiples of this (whole batches)
   */
  const timed = async (phase, n, work, unit = 1) => {
    const ms = Object.fromEntries(LAYOUTS.map(l => [l, 0]))
    const slices = Math.max(1, Math.min(opts.slices, Math.ceil(n / unit)))
    for (let k = 0; k < slices; k++) {
      const from = Math.min(n, Math.round(k * n / slices / unit) * unit)
      const to = k === slices - 1 ? n : Math.min(n, Math.round((k + 1) * n / slices / unit) * unit)
      const order = (k + run) % 2 === 0 ? LAYOUTS : [...LAYOUTS].reverse()
      for (const name of order) {
        const start = performance.now()
        await work(state[name], from, to)
        ms[name] += performance.now() - start
        tick((to - from) * (phase === 'page' ? 20 : 1) / 2)
      }
    }
    for (const name of LAYOUTS) state[name].phases[phase] = { count: n, ms: ms[name], opsPerSec: n / (ms[name] / 1000) }
  }

  await timed('bulk', data.bulk.length, async (st, from, to) => {
    for (let i = from; i < to;) {
      const end = Math.min(to, i + opts.batchSize)
      const batch = st.db.batch()
      for (; i < end; i++) st.layout.write(batch, data.bulk[i])
      await batch.write()
    }
  }, opts.batchSize)
  await timed('send', data.sends.length, async (st, from, to) => {
    const sends = data.sends
    for (let i = from; i < to; i++) {
      const batch = st.db.batch()
      st.layout.write(batch, sends[i])
      await batch.write()
    }
  })
  await timed('page', data.pageChats.length, async (st, from, to) => {
    for (let i = from; i < to; i++) {
      const page = await st.layout.page(st.db, data.pageChats[i], opts.pageSize)
      st.pageMessages += page.length
    }
  })
  await timed('get', data.gets.length, async (st, from, to) => {
    for (let i = from; i < to; i++) {
      const m = await st.layout.get(st.db, data.gets[i].chat, data.gets[i].seq)
      if (m !== undefined) st.found++
    }
  })

  /** @type {Record<string, any>} */
  const out = {}
  for (const name of LAYOUTS) {
    const st = state[name]
    if (st.found !== data.gets.length) throw new Error(`${name}: ${data.gets.length - st.found} point reads found nothing`)
    let logicalBytes = 0
    for (const m of data.bulk) logicalBytes += st.layout.bytes(m)
    for (const m of data.sends) logicalBytes += st.layout.bytes(m)
    // What both layouts must agree on: the last page of a few chats.
    const sample = []
    for (const chat of [0, Math.floor(opts.chats / 2), opts.chats - 1]) sample.push(await st.layout.page(st.db, chat, opts.pageSize))
    let diskBytes = null
    let compactedBytes = null
    if (backend === 'leveldb') {
      diskBytes = dirSize(st.location)
      await st.db.compactRange('0', '~')
      compactedBytes = dirSize(st.location)
    }
    await st.db.close()
    if (backend === 'leveldb') fs.rmSync(st.location, { recursive: true, force: true })
    const messages = data.bulk.length + data.sends.length
    out[name] = { backend, layout: name, run, phases: st.phases, pageMessages: st.pageMessages, messages, logicalBytes, diskBytes, compactedBytes, sample }
  }
  return out
}

const run = startRun(NAME, args.out, ['classic-level', 'memory-level', 'abstract-level'])
const { machine, versions, loadBefore, startedAt, outDir } = run
fs.mkdirSync(args['db-dir'], { recursive: true })

console.log(`${NAME}: one aggregated value per message vs one key per field (from, text, ts); ${opts.runs} run(s) of each on ${backends.join(', ')}`)
console.log(`  ${fmt(opts.messages)} messages in ${opts.chats} chats (bulk, ${opts.batchSize} per chained batch), then ${fmt(opts.sends)} single-message batches, ${fmt(opts.pages)} pages of ${opts.pageSize}, ${fmt(opts.gets)} point reads; text ~${opts.textSize} chars`)
printMachine(run, ['classic-level', 'memory-level'])

const data = makeData()
const perRun = opts.messages + opts.sends + opts.pages * 20 + opts.gets
const progress = new Progress(NAME, perRun * opts.runs * LAYOUTS.length * backends.length)
const counter = { done: 0 }
/** @type {any[]} */
const results = []
const problems = []
for (let run = 1; run <= opts.runs; run++) {
  for (const backend of backends) {
    const byLayout = await runPair(backend, data, run, progress, counter)
    for (const name of LAYOUTS) results.push(byLayout[name])
    if (JSON.stringify(byLayout.aggregated.sample.map(sortPage)) !== JSON.stringify(byLayout['per-field'].sample.map(sortPage))) {
      problems.push(`run ${run} ${backend}: the layouts returned different pages`)
    }
    for (const r of Object.values(byLayout)) delete r.sample
  }
}
progress.done()
const loadAfter = os.loadavg()

/** Messages with their keys in one order, for comparing. @param {any[]} page */
function sortPage (page) {
  return page.map(m => ({ seq: m.seq, from: m.from, text: m.text, ts: m.ts }))
}

// Aggregate: medians over runs, ratios per run.

/** @type {Record<string, any>} */
const summary = {}
for (const backend of backends) {
  const mine = results.filter(r => r.backend === backend)
  /** @type {Record<string, any>} */
  const s = { phases: {}, bytes: {} }
  for (const phase of PHASES) {
    /** @type {Record<string, any>} */
    const row = {}
    for (const layout of LAYOUTS) {
      row[layout] = median(mine.filter(r => r.layout === layout).map(r => r.phases[phase].opsPerSec))
    }
    const ratios = []
    for (let run = 1; run <= opts.runs; run++) {
      const a = mine.find(r => r.run === run && r.layout === 'aggregated')
      const f = mine.find(r => r.run === run && r.layout === 'per-field')
      ratios.push(a.phases[phase].opsPerSec / f.phases[phase].opsPerSec)
    }
    row.ratio = median(ratios)
    row.ratios = ratios
    s.phases[phase] = row
  }
  for (const what of ['logicalBytes', 'diskBytes', 'compactedBytes']) {
    if (mine[0][what] === null) continue
    /** @type {Record<string, any>} */
    const row = {}
    for (const layout of LAYOUTS) row[layout] = median(mine.filter(r => r.layout === layout).map(r => r[what]))
    row.ratio = row['per-field'] / row.aggregated
    s.bytes[what] = row
  }
  summary[backend] = s
}

// Print.

const UNIT = { bulk: 'messages/s', send: 'messages/s', page: `pages/s (${opts.pageSize} msgs)`, get: 'messages/s' }
for (const backend of backends) {
  const s = summary[backend]
  console.log()
  console.log(`${backend}: medians of ${opts.runs} run(s); ratio = aggregated / per-field (median of per-run ratios, > 1: aggregated faster)`)
  const rows = [['phase', 'unit', 'aggregated', 'per-field', 'ratio', 'per run']]
  for (const phase of PHASES) {
    const p = s.phases[phase]
    rows.push([phase, /** @type {any} */ (UNIT)[phase], fmt(p.aggregated), fmt(p['per-field']), `${p.ratio.toFixed(2)}×`, p.ratios.map((/** @type {number} */ x) => x.toFixed(2)).join(' ')])
  }
  printTable(rows, 2)
  const messages = results[0].messages
  const brows = [['bytes', 'aggregated', 'per-field', 'per-field / aggregated', 'B/message (agg, field)']]
  /** @type {Record<string, string>} */
  const label = { logicalBytes: 'keys + values (UTF-8)', diskBytes: 'on disk as written (tables + WAL)', compactedBytes: 'on disk after compactRange' }
  for (const [what, b] of Object.entries(s.bytes)) {
    brows.push([label[what], mb(b.aggregated), mb(b['per-field']), `${b.ratio.toFixed(2)}×`, `${fmt(b.aggregated / messages, 1)}, ${fmt(b['per-field'] / messages, 1)}`])
  }
  console.log()
  printTable(brows, 1)
}
printProblems(problems)

// Files.

const csvRows = []
for (const r of results) {
  for (const phase of PHASES) {
    const p = r.phases[phase]
    csvRows.push([r.run, r.backend, r.layout, phase, p.count, p.ms, p.opsPerSec, r.messages, r.logicalBytes, r.diskBytes, r.compactedBytes])
  }
}
writeCsv(path.join(outDir, 'results.csv'), ['run', 'backend', 'layout', 'phase', 'count', 'ms', 'ops_per_sec', 'messages', 'logical_bytes', 'disk_bytes', 'compacted_bytes'], csvRows)

const subtitle = `${machine.cpu}, ${machine.cores} cores, node ${versions.node}, classic-level ${versions['classic-level']}, ${fmt(opts.messages + opts.sends)} messages, median of ${opts.runs} run(s), ${startedAt.toISOString().slice(0, 10)}`
const categories = []
for (const backend of backends) for (const phase of PHASES) categories.push(`${phase} (${backend})`)
fs.writeFileSync(path.join(outDir, `${NAME}.svg`), barSvg({
  title: 'Message as one value vs one key per field: ops/s (higher is better)',
  subtitle,
  xLabel: 'operations per second (bulk/send/get: messages; page: pages of ' + opts.pageSize + ')',
  xScale: 'log',
  categories,
  series: LAYOUTS.map(layout => ({ name: layout, values: backends.flatMap((/** @type {string} */ b) => PHASES.map(p => summary[b].phases[p][layout])) }))
}))
const byteCats = []
/** @type {number[][]} */
const byteVals = [[], []]
for (const backend of backends) {
  for (const [what, b] of Object.entries(summary[backend].bytes)) {
    const label = { logicalBytes: 'keys + values', diskBytes: 'on disk as written', compactedBytes: 'on disk, compacted' }[what]
    byteCats.push(`${label} (${backend})`)
    LAYOUTS.forEach((layout, k) => byteVals[k].push(b[layout] / results[0].messages))
  }
}
fs.writeFileSync(path.join(outDir, `${NAME}-bytes.svg`), barSvg({
  title: 'Message as one value vs one key per field: bytes per message (lower is better)',
  subtitle,
  xLabel: 'bytes per message',
  categories: byteCats,
  series: LAYOUTS.map((layout, k) => ({ name: layout, values: byteVals[k] }))
}))
finishRun(outDir, { name: NAME, startedAt, machine, versions, loadBefore, loadAfter }, {
  options: { ...opts, backends },
  summary,
  problems,
  runs: results
}, ['results.csv', `${NAME}.svg`, `${NAME}-bytes.svg`])
if (problems.length) process.exitCode = 1
