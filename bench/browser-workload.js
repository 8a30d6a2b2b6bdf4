// The chat workload in a browser: levelkit's ChatStore on IndexedDB (the
// browser bundle, browser-level) against the same methods on Dexie.js
// (bench/lib/browser-workload-dexie.js: the schema a competent Dexie user
// writes), in one headless Chromium, same data, same answers (issue 15).
//
// Each run launches Chromium (Debian's, through playwright-core, as the
// browser tests do: test/util/browser.js) on a fresh profile on disk, so
// IndexedDB is on disk as for a user, and opens a page per side (bench/lib/
// browser-workload-page.js), each on an origin of its own (127.0.0.1 and
// localhost, swapped every run): Chromium keeps an origin's IndexedDB
// databases in one backing store, so on one origin a side's writes (and
// their compactions) would land on the other's, and the storage estimate
// could not tell the sides apart. Each page makes the data set from --seed
// (--users, --chats of --members, --messages spread over the chats) and
// bulk-loads it (levelkit: a db.write() per --chunk records doing what
// ChatStore's methods do, with users.insertMany() and messages.appendMany()
// per chat; Dexie: a bulkAdd() per --chunk), which side first
// alternating per run; each side's preload ends with a full garbage
// collection, timed and counted in its time (Chromium runs with
// --js-flags=--expose-gc; an untimed one before it): the preload pays for
// its own garbage, on both sides, and the rows start from a collected heap
// (before, the first row, createUser, paid one or two full collections of
// the preload's leftovers, or not, by luck). Then the sides answer the same
// sample of reads, which must agree.
//
// Rows, each awaited one by one and with --concurrency (16) in flight:
// getUser by username, the last 50 messages of a chat, a user's chats,
// membership (half members), createUser, createChat with --members members,
// addChatMessage. A row's operations are split into --slices slices that
// alternate between the sides (which side starts alternates per run and
// row), timed in the page. The read rows measure a page that holds the
// cross-tab lease, whose cache answers what it read before; their cold
// rows (last) read from the same database opened again in the page, as a
// second tab would, a fresh store per slice (opened and closed untimed):
// on levelkit a store that holds no lease (the first takes the lock back
// after the second's open), so no cache answers; on Dexie a fresh Dexie
// instance (Dexie keeps no values in memory). Every answer is hashed into the row's digest
// (a sum, so order does not count), which must be the same on both sides;
// after the writes the sides answer a sample again, and ChatStore's check()
// must be clean. Passwords are hashed by ChatStore's browser function
// (PBKDF2) on both sides at --pbkdf2 iterations (a token cost: storage is
// what is measured).
//
// IndexedDB calls per operation, counted in the page (wrappers installed
// before either side opens): transactions (and how many readwrite), requests
// (IDBObjectStore / IDBIndex methods), cursor steps, Web Lock requests.
// CPU per operation, which load on the machine moves much less than the
// rates: each page's main thread (CDP Performance.getMetrics, ThreadTime)
// and all of Chromium's processes (SystemInfo.getProcessInfo: the browser
// process, where IndexedDB runs, included), read before and after each
// slice; and the time spent inside the wrapped native calls (IndexedDB,
// BroadcastChannel.postMessage, Web Locks), timed in the page.
// Sizes: navigator.storage.estimate() of each side's origin, before and
// after its preload, and the bundles: levelkit's (built by
// scripts/build.js's buildBundles(), as `npm run build` does, which also
// rewrites dist/) beside Dexie's dist/dexie.min.js, minified and gzipped.
//
// Output: tables of medians over runs (ratio = levelkit / Dexie ops/s in
// each run, then the median: > 1 is levelkit faster); under --out (default
// bench/out/, ignored by git) a folder browser-workload-<time>/ with
// results.csv (one row per run, row and side), summary.json and
// browser-workload.svg (ops/s per row, both sides).
//
// Usage: node bench/browser-workload.js [--runs 3] [--users 2000] [--chats 200]
//   [--members 20] [--messages 20000] [--concurrency 16] [--scale 1] [--n N]
//   [--ops a,b] [--slices 10] [--chunk 1000] [--pbkdf2 1] [--seed 1]
//   [--no-warmup] [--no-native] [--relation-entries | --relation-lists] [--trace] [--profile] [--out bench/out]

import os from 'node:os'
import fs from 'node:fs'
import path from 'node:path'
import { gzipSync } from 'node:zlib'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { bundleForBrowser, launchPersistentChromium, modulePage, serve, root } from '../test/util/browser.js'
import { buildBundles } from '../scripts/build.js'
import { median, min, max, fmt, mb, parseCount } from './lib/stats.js'
import { barSvg } from './lib/svg-plot.js'
import { baseOp } from './lib/browser-workload-data.js'
import { parseCli, failWith, optionOf, writeCsv, printTable, finishRun, printProblems, startRun, printMachine } from './lib/seeds-common.js'

const require = createRequire(import.meta.url)
const here = path.dirname(fileURLToPath(import.meta.url))
const NAME = 'browser-workload'
const SIDES = ['levelkit', 'dexie']
const SIDE_LABEL = /** @type {Record<string, string>} */ ({ levelkit: 'levelkit (ChatStore)', dexie: 'Dexie' })

// Operations per measurement and side at --scale 1.
const DEFAULT_N = {
  getUser: 2000,
  getUserC: 2000,
  last50: 400,
  last50C: 400,
  getChats: 1000,
  getChatsC: 1000,
  checkChatMember: 2000,
  checkChatMemberC: 2000,
  createUser: 400,
  createUserC: 400,
  createChat: 100,
  createChatC: 100,
  addChatMessage: 600,
  addChatMessageC: 600,
  // Last: opening a second store moves the cross-tab lock, and with it
  // what the first store's lease cache holds (see openCold() in the page).
  getUserCold: 1000,
  last50Cold: 200,
  getChatsCold: 500,
  checkChatMemberCold: 1000
}
const OP_KEYS = Object.keys(DEFAULT_N)
/** The preload's tables, in the order they are loaded. */
const PRELOAD_TABLES = /** @type {const} */ (['users', 'chats', 'messages'])
/** @param {string} op @param {number} c */
function labelOf (op, c) {
  const base = baseOp(op)
  const text = /** @type {Record<string, string>} */ ({
    getUser: 'getUser',
    last50: 'last 50 messages',
    getChats: 'a user\'s chats',
    checkChatMember: 'membership',
    createUser: 'createUser',
    createChat: 'createChat',
    addChatMessage: 'addChatMessage'
  })[base]
  if (op.endsWith('Cold')) return `${text}, cold (second tab)`
  return op.endsWith('C') ? `${text}, ${c} in flight` : text
}

const USAGE = `Usage: node bench/${NAME}.js [options]
  --runs K          runs, each a fresh Chromium profile (default 3)
  --users N         pre-loaded users (default 2000)
  --chats N         pre-loaded chats of --members members (default 200)
  --members N       members per chat, the admin included; also createChat's (default 20)
  --messages N      pre-loaded messages, spread over the chats (default 20000)
  --concurrency N   operations in flight for the "in flight" rows (default 16)
  --scale X         multiply the operations per measurement (default 1)
  --n N             operations per measurement for every row (overrides --scale)
  --ops a,b,...     only these rows (${OP_KEYS.join(', ')})
  --slices N        alternating slices per measurement (default 10)
  --chunk N         records per write of the bulk preload, both sides (default 1000)
  --pbkdf2 N        PBKDF2 iterations of the password hash, both sides (default 1)
  --seed N          seed of the data set and the inputs (default 1)
  --no-warmup       skip the untimed warm-up of every row on both sides
  --no-native       levelkit's users in browser-level's store (else a native collection:
                    open()'s native option, ChatStore.native)
  --relation-entries  levelkit's chat members kept in IndexedDB's lists store only, chosen
                    (open()'s relationIndexes: 'entries'; the default keeps them so too)
  --relation-lists  levelkit's chat members' lists in browser-level's store too (open()'s
                    relationIndexes: 'lists', the default before session 24)
  --trace           after the first run, list the IndexedDB transactions and requests of
                    one operation of each row, on both sides (which namespaces levelkit reads),
                    and of each table's part of the first run's preload, also per record
                    (each put with its value's shape: bytes, a string or an object's fields)
  --profile         in the first run, CPU-profile each page (Chromium's Profiler domain) over the
                    preload and each row's measured slices: main-thread JS ms per operation
                    (idle excluded), and the functions with the most self time
  --out DIR         output folder (default bench/out)`

const args = parseCli(NAME, USAGE, {
  runs: { type: 'string', default: '3' },
  users: { type: 'string', default: '2000' },
  chats: { type: 'string', default: '200' },
  members: { type: 'string', default: '20' },
  messages: { type: 'string', default: '20000' },
  concurrency: { type: 'string', default: '16' },
  scale: { type: 'string', default: '1' },
  n: { type: 'string' },
  ops: { type: 'string' },
  slices: { type: 'string', default: '10' },
  chunk: { type: 'string', default: '1000' },
  pbkdf2: { type: 'string', default: '1' },
  seed: { type: 'string', default: '1' },
  'no-warmup': { type: 'boolean', default: false },
  'no-native': { type: 'boolean', default: false },
  'relation-entries': { type: 'boolean', default: false },
  'relation-lists': { type: 'boolean', default: false },
  trace: { type: 'boolean', default: false },
  profile: { type: 'boolean', default: false },
  out: { type: 'string', default: path.join(here, 'out') }
})

/** @param {string} message @returns {never} */
const fail = message => failWith(NAME, USAGE, message)
/** @param {string} flag */
const count = flag => optionOf(NAME, USAGE, () => parseCount(args[flag]))

const opts = {
  runs: count('runs'),
  users: count('users'),
  chats: count('chats'),
  members: count('members'),
  messages: count('messages'),
  concurrency: count('concurrency'),
  slices: count('slices'),
  chunk: count('chunk'),
  pbkdf2: count('pbkdf2'),
  seed: count('seed'),
  warmup: !args['no-warmup'],
  native: !args['no-native'],
  entries: Boolean(args['relation-entries']),
  lists: Boolean(args['relation-lists']),
  trace: Boolean(args.trace),
  profile: Boolean(args.profile)
}
if (opts.members < 2 || opts.members > 30) fail('--members is 2..30 (ChatStore\'s default maxMembers is 30)')
if (opts.members > opts.users) fail('--members cannot exceed --users')
const scale = Number(args.scale)
if (!(scale > 0)) fail('--scale is a positive number')
const chosen = args.ops ? String(args.ops).split(',').map(s => s.trim()).filter(Boolean) : OP_KEYS
for (const op of chosen) if (!OP_KEYS.includes(op)) fail(`Unknown row ${JSON.stringify(op)} (${OP_KEYS.join(', ')})`)
// In the order of OP_KEYS, whatever --ops says: the cold rows last.
const ops = OP_KEYS.filter(op => chosen.includes(op))
/** @type {Record<string, number>} */
const n = {}
for (const op of ops) n[op] = args.n !== undefined ? count('n') : Math.max(4, Math.round(DEFAULT_N[/** @type {keyof typeof DEFAULT_N} */ (op)] * scale))
const concurrencyOf = (/** @type {string} */ op) => op.endsWith('C') ? opts.concurrency : 1

const run0 = startRun(NAME, args.out, ['dexie', 'browser-level', 'playwright-core'])
const bundles = await bundleSizes()
console.log(`${NAME}: levelkit ChatStore (browser bundle, IndexedDB) vs Dexie ${run0.versions.dexie}, one headless Chromium, ${opts.runs} run(s)`)
console.log(`  data: ${fmt(opts.users)} users, ${fmt(opts.chats)} chats of ${opts.members} members, ${fmt(opts.messages)} messages; ${opts.concurrency} in flight; preload in writes of ${fmt(opts.chunk)}; PBKDF2 ${opts.pbkdf2} iteration(s)${opts.entries ? '; levelkit\'s chat members in the lists store only (relationIndexes: \'entries\')' : ''}${opts.lists ? '; levelkit\'s chat members\' lists in browser-level\'s store too (relationIndexes: \'lists\')' : ''}`)
printMachine(run0, ['levelkit', 'browser-level', 'dexie', 'playwright-core'])

const code = await bundleForBrowser('bench/lib/browser-workload-page.js')
const server = await serve({ '/': modulePage('/page.js'), '/page.js': { body: code } })
const origins = [server.url, server.url.replace('127.0.0.1', 'localhost')]

/** @type {any[]} */
const perRun = []
/** @type {string[]} */
const problems = []
try {
  for (let run = 1; run <= opts.runs; run++) {
    const result = await runOnce(run)
    perRun.push(result)
    problems.push(...result.problems.map((/** @type {string} */ p) => `run ${run}: ${p}`))
    const cells = ops.map(op => `${op} ${(result.rows[op].levelkit.opsPerSec / result.rows[op].dexie.opsPerSec).toFixed(2)}×`)
    console.log(`  run ${run}: load ${os.loadavg()[0].toFixed(2)}; levelkit/Dexie ${cells.join(', ')}`)
  }
} finally {
  await server.close()
}
const loadAfter = os.loadavg()

/**
 * One run: a fresh Chromium profile, both sides loaded, every row measured.
 * @param {number} run
 */
async function runOnce (run) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), `levelkit-${NAME}-`))
  // gc() in the pages: each side's preload ends with a timed full collection (see below).
  const context = await launchPersistentChromium(profile, { extraArgs: ['--js-flags=--expose-gc'] })
  /** @type {string[]} */
  const problems = []
  try {
    /** @type {string[]} */
    const pageErrors = []
    /** @type {Record<string, import('playwright-core').Page>} */
    const pages = {}
    for (const [k, side] of SIDES.entries()) {
      const page = k === 0 && context.pages()[0] ? context.pages()[0] : await context.newPage()
      page.on('pageerror', err => pageErrors.push(`${side}: ${err.message}`))
      await page.goto(origins[(k + run + 1) % 2] + pageQuery(opts))
      await page.waitForFunction(() => /** @type {any} */ (window).browserWorkload !== undefined)
      pages[side] = page
    }
    /** Call the page's browserWorkload[fn](...args) on one side. @param {string} side @param {string} fn @param {any[]} args */
    const call = (side, fn, ...args) => pages[side].evaluate(([f, a]) => /** @type {any} */ (window).browserWorkload[f](...a), /** @type {[string, any[]]} */ ([fn, args]))
    /** @type {Record<string, any> | null} CPU profiles of the first run, by side and what was measured */
    const profiles = opts.profile && run === 1 ? {} : null
    /** @type {Record<string, import('playwright-core').CDPSession>} */
    const sessions = {}
    if (profiles !== null) {
      for (const side of SIDES) {
        sessions[side] = await context.newCDPSession(pages[side])
        await sessions[side].send('Profiler.enable')
        await sessions[side].send('Profiler.setSamplingInterval', { interval: 100 })
      }
    }
    /**
     * Run `work` with both pages profiled (first run, with --profile): each
     * page's profile shows only its own side's work.
     * @template T @param {string} what @param {number} count operations, for per-operation times
     * @param {() => Promise<T>} work @returns {Promise<T>}
     */
    const profiled = async (what, count, work) => {
      if (profiles === null) return work()
      await Promise.all(SIDES.map(side => sessions[side].send('Profiler.start')))
      const result = await work()
      for (const side of SIDES) {
        const { profile } = await sessions[side].send('Profiler.stop')
        profiles[`${what}, ${side}`] = profileSummary(profile, count)
      }
      return result
    }
    const userAgent = await pages.levelkit.evaluate(() => /** @type {any} */ (window).browserWorkload.userAgent)
    const warm = opts.warmup ? Math.max(2, Math.min(50, Math.round(Math.min(...Object.values(n)) / 10))) : 0
    const config = { users: opts.users, chats: opts.chats, members: opts.members, messages: opts.messages, n, warm, seed: opts.seed + run - 1, pbkdf2Iterations: opts.pbkdf2, tag: `run${run}` }
    for (const side of SIDES) await call(side, 'setup', { ...config, side })

    // CPU time, which load on the machine changes much less than the
    // rates: each page's main thread (Performance.getMetrics' ThreadTime)
    // and every Chromium process (SystemInfo.getProcessInfo: the browser
    // process, where IndexedDB runs, the renderers, the utility processes),
    // read before and after each slice (one side's at a time).
    /** @type {Record<string, import('playwright-core').CDPSession>} */
    const metrics = {}
    for (const side of SIDES) {
      metrics[side] = await context.newCDPSession(pages[side])
      await metrics[side].send('Performance.enable')
    }
    const browserSession = await /** @type {import('playwright-core').Browser} */ (context.browser()).newBrowserCDPSession()
    /** CPU ms so far: `side`'s main thread, and all of Chromium's processes. @param {string} side */
    const cpuNow = async side => {
      const [{ metrics: list }, { processInfo }] = await Promise.all([metrics[side].send('Performance.getMetrics'), browserSession.send('SystemInfo.getProcessInfo')])
      const thread = list.find(m => m.name === 'ThreadTime')
      return { main: (thread?.value ?? 0) * 1000, all: processInfo.reduce((sum, p) => sum + p.cpuTime, 0) * 1000 }
    }
    // The bulk preload, which side first alternating per run; the storage
    // estimate of the side's origin before and after, and its CPU time.
    /** @type {Record<string, any>} */
    const preload = {}
    /** @type {Record<string, number>} */
    const storedBytes = {}
    for (const side of run % 2 === 1 ? SIDES : [...SIDES].reverse()) {
      const before = (await call(side, 'estimate')).usage
      // Untimed: the data set's and setup()'s garbage is not the preload's.
      await call(side, 'collectGarbage')
      const cpu = await cpuNow(side)
      // One call per table, with the CPU time read between them: where
      // the preload's time goes, by table (the reads add a few ms of the
      // script's round trips to the whole's wall time, the same on both sides).
      preload[side] = await profiled(`preload (per 1,000 records), ${side} alone`, (opts.users + opts.chats + opts.messages) / 1000, async () => {
        const whole = { ms: { users: 0, chats: 0, messages: 0, gc: 0 }, counts: /** @type {Record<string, number>} */ ({}), records: 0, traces: /** @type {Record<string, any> | null} */ (null), cpuByTable: /** @type {Record<string, { main: number, all: number, records: number }>} */ ({}) }
        let at = cpu
        for (const table of PRELOAD_TABLES) {
          const part = await call(side, 'preload', side, opts.chunk, opts.trace && run === 1, table)
          const now = await cpuNow(side)
          whole.ms[table] = part.ms[table]
          for (const [key, value] of Object.entries(part.counts)) whole.counts[key] = (whole.counts[key] ?? 0) + value
          whole.records += part.records
          if (part.traces !== null) whole.traces = { ...whole.traces, ...part.traces }
          whole.cpuByTable[table] = { main: now.main - at.main, all: now.all - at.all, records: part.records }
          at = now
        }
        // The preload's garbage charged to the preload, the same on both
        // sides: a timed full collection at its end, in its time and CPU.
        // Without it, one or two full collections of what the preload left
        // fell into the first rows (createUser), on either side, by luck.
        whole.ms.gc = await call(side, 'collectGarbage')
        return whole
      })
      const used = await cpuNow(side)
      preload[side].cpu = { main: used.main - cpu.main, all: used.all - cpu.all }
      storedBytes[side] = (await call(side, 'estimate')).usage - before
    }
    const samples = Math.min(20, opts.users, opts.chats)
    /** @param {boolean} after @param {string} when */
    const compare = async (after, when) => {
      const [a, b] = await Promise.all(SIDES.map(side => call(side, 'answers', samples, after)))
      for (let i = 0; i < a.length; i++) {
        if (a[i][1] !== b[i][1]) problems.push(`${when}, ${a[i][0]}: levelkit ${a[i][1].slice(0, 160)} | dexie ${b[i][1].slice(0, 160)}`)
      }
    }
    await compare(false, 'after the preload')

    /** @type {Record<string, any>} */
    const rows = {}
    for (const [k, op] of ops.entries()) {
      const c = concurrencyOf(op)
      const slice = (/** @type {string} */ side, /** @type {number} */ from, /** @type {number} */ to, /** @type {boolean} */ warmup) => call(side, 'runSlice', side, op, from, to, c, warmup)
      if (warm > 0) for (const side of SIDES) await slice(side, 0, warm, true)
      /** @type {Record<string, any>} */
      const totals = Object.fromEntries(SIDES.map(side => [side, { ms: 0, ops: 0, tx: 0, txReadwrite: 0, requests: 0, cursorSteps: 0, locks: 0, cpuMain: 0, cpuAll: 0, native: {}, sliceOpsPerSec: [] }]))
      const slices = Math.max(1, Math.min(opts.slices, n[op]))
      await profiled(op, n[op], async () => {
        for (let s = 0; s < slices; s++) {
          const from = Math.floor(s * n[op] / slices)
          const to = Math.floor((s + 1) * n[op] / slices)
          for (const side of (s + run + k) % 2 === 0 ? SIDES : [...SIDES].reverse()) {
            const cpu = await cpuNow(side)
            const r = await slice(side, from, to, false)
            const used = await cpuNow(side)
            const t = totals[side]
            for (const key of ['ms', 'ops', 'tx', 'txReadwrite', 'requests', 'cursorSteps', 'locks']) t[key] += r[key]
            t.cpuMain += used.main - cpu.main
            t.cpuAll += used.all - cpu.all
            for (const [name, ms] of Object.entries(r.native)) t.native[name] = (t.native[name] ?? 0) + /** @type {number} */ (ms)
            t.sliceOpsPerSec.push(r.ops / (r.ms / 1000))
          }
        }
      })
      for (const side of SIDES) totals[side].opsPerSec = totals[side].ops / (totals[side].ms / 1000)
      rows[op] = totals
    }
    const digests = Object.fromEntries(await Promise.all(SIDES.map(async side => [side, await call(side, 'answerDigests')])))
    for (const op of ops) {
      if (digests.levelkit[op] !== digests.dexie[op]) problems.push(`${op}: the answers differ between the sides (digest ${digests.levelkit[op]} vs ${digests.dexie[op]})`)
    }
    await compare(true, 'after the writes')
    const check = await call('levelkit', 'checkLevelkit')
    if (!check.ok) problems.push(`ChatStore check() after the writes: ${check.problems.join('; ')}`)
    /** @type {Record<string, Record<string, any>> | null} */
    let traces = null
    if (opts.trace && run === 1) {
      const byRow = ops.filter(op => !op.endsWith('C'))
      const bySide = Object.fromEntries(await Promise.all(SIDES.map(async side => [side, await call(side, 'traceOps', byRow)])))
      traces = Object.fromEntries(byRow.map(op => [op, Object.fromEntries(SIDES.map(side => [side, bySide[side][op]]))]))
    }
    for (const side of SIDES) await call(side, 'close')
    problems.push(...pageErrors.map(m => `uncaught in the page of ${m}`))
    return { run, userAgent, preload, storedBytes, rows, problems, traces, profiles, loadAverage: os.loadavg() }
  } finally {
    await context.close()
    fs.rmSync(profile, { recursive: true, force: true })
  }
}

/**
 * The bundles, measured here: levelkit's as scripts/build.js builds it (and
 * writes it to dist/, where the page loads it from), Dexie's dist file.
 */
function bundleSizes () {
  return buildBundles().then(built => {
    // What `npm run build` writes beside the bundles, so dist/ stays one build.
    fs.writeFileSync(path.join(root, 'dist', 'size.json'), JSON.stringify(built, null, 2) + '\n')
    const dexieDir = path.dirname(require.resolve('dexie/package.json'))
    const dexieMin = fs.readFileSync(path.join(dexieDir, 'dist', 'dexie.min.js'))
    return {
      levelkit: { file: 'dist/levelkit.browser.min.js', ...built.files['levelkit.browser.min.js'] },
      dexie: { file: 'dexie/dist/dexie.min.js', bytes: dexieMin.length, gzip: gzipSync(dexieMin, { level: 9 }).length }
    }
  })
}

// Aggregate: per row, medians over runs; the ratio per run, then its median.
/** @type {Record<string, any>} */
const summary = {}
for (const op of ops) {
  const lk = perRun.map(r => r.rows[op].levelkit.opsPerSec)
  const dx = perRun.map(r => r.rows[op].dexie.opsPerSec)
  const ratios = lk.map((v, i) => v / dx[i])
  const per = (/** @type {string} */ side, /** @type {string} */ key) => median(perRun.map(r => r.rows[op][side][key] / r.rows[op][side].ops))
  summary[op] = {
    label: labelOf(op, opts.concurrency),
    concurrency: concurrencyOf(op),
    ops: n[op],
    levelkitOpsPerSec: median(lk),
    dexieOpsPerSec: median(dx),
    ratio: median(ratios),
    ratioMin: min(ratios),
    ratioMax: max(ratios),
    sliceRatio: median(perRun.map(r => median(r.rows[op].levelkit.sliceOpsPerSec) / median(r.rows[op].dexie.sliceOpsPerSec))),
    perOp: Object.fromEntries(SIDES.map(side => [side, Object.fromEntries(['tx', 'txReadwrite', 'requests', 'cursorSteps', 'locks', 'cpuMain', 'cpuAll'].map(key => [key, per(side, key)]))])),
    // Milliseconds per operation inside each wrapped native call (median over runs).
    native: Object.fromEntries(SIDES.map(side => {
      const names = new Set(perRun.flatMap(r => Object.keys(r.rows[op][side].native)))
      return [side, Object.fromEntries([...names].map(name => [name, median(perRun.map(r => (r.rows[op][side].native[name] ?? 0) / r.rows[op][side].ops))]))]
    }))
  }
}
const preloadOf = (/** @type {string} */ side) => {
  const ms = perRun.map(r => preloadMs(r.preload[side]))
  const records = perRun[0].preload[side].records
  return {
    ms: median(ms),
    recordsPerSec: median(ms.map(m => records / (m / 1000))),
    byTable: Object.fromEntries([...PRELOAD_TABLES, 'gc'].map(t => [t, median(perRun.map(r => r.preload[side].ms[t]))])),
    counts: Object.fromEntries(['tx', 'txReadwrite', 'requests', 'cursorSteps', 'locks'].map(key => [key, median(perRun.map(r => r.preload[side].counts[key]))])),
    // CPU ms per 1,000 of the table's records: main thread, all of Chromium.
    cpuByTable: Object.fromEntries(PRELOAD_TABLES.map(t => [t, Object.fromEntries(/** @type {const} */ (['main', 'all']).map(key => [key, median(perRun.map(r => r.preload[side].cpuByTable[t][key] / (r.preload[side].cpuByTable[t].records / 1000)))]))])),
    storedBytes: median(perRun.map(r => r.storedBytes[side]))
  }
}
const preload = { levelkit: preloadOf('levelkit'), dexie: preloadOf('dexie') }
const preloadRatio = median(perRun.map(r => {
  return preloadMs(r.preload.dexie) / preloadMs(r.preload.levelkit)
}))

const perOpText = (/** @type {any} */ c) => `${fmt(c.tx, c.tx < 10 ? 2 : 1)} (${fmt(c.txReadwrite, 2)} rw)`
const table = [['operation', 'ops', 'levelkit ops/s', 'Dexie ops/s', 'levelkit/Dexie', 'min..max', 'slice check', 'IDB tx/op levelkit', 'IDB tx/op Dexie', 'requests/op lk', 'requests/op Dexie', 'locks/op lk']]
for (const op of ops) {
  const s = summary[op]
  table.push([
    s.label, fmt(s.ops), fmt(s.levelkitOpsPerSec), fmt(s.dexieOpsPerSec), `${s.ratio.toFixed(2)}×`,
    `${s.ratioMin.toFixed(2)}..${s.ratioMax.toFixed(2)}`, `${s.sliceRatio.toFixed(2)}×`,
    perOpText(s.perOp.levelkit), perOpText(s.perOp.dexie),
    fmt(s.perOp.levelkit.requests + s.perOp.levelkit.cursorSteps, 1), fmt(s.perOp.dexie.requests + s.perOp.dexie.cursorSteps, 1), fmt(s.perOp.levelkit.locks, 2)
  ])
}
const records = opts.users + opts.chats + opts.messages
table.push([
  `bulk preload (${fmt(records)} records)`, '1', `${fmt(preload.levelkit.recordsPerSec)} rec/s`, `${fmt(preload.dexie.recordsPerSec)} rec/s`, `${preloadRatio.toFixed(2)}×`, '', '',
  `${fmt(preload.levelkit.counts.tx)} (${fmt(preload.levelkit.counts.txReadwrite)} rw)`, `${fmt(preload.dexie.counts.tx)} (${fmt(preload.dexie.counts.txReadwrite)} rw)`,
  fmt(preload.levelkit.counts.requests + preload.levelkit.counts.cursorSteps), fmt(preload.dexie.counts.requests + preload.dexie.counts.cursorSteps), fmt(preload.levelkit.counts.locks)
])
const storedRange = (/** @type {string} */ side) => perRun.map(r => r.storedBytes[side] / 1e6)
table.push(['stored (storage.estimate)', '', mb(preload.levelkit.storedBytes), mb(preload.dexie.storedBytes), `${(preload.levelkit.storedBytes / preload.dexie.storedBytes).toFixed(2)}×`,
  `MB: ${SIDES.map(side => `${fmt(min(storedRange(side)), 1)}..${fmt(max(storedRange(side)), 1)}`).join(', ')}`, '', '', '', '', '', ''])
table.push(['bundle, minified', '', kib(bundles.levelkit.bytes), kib(bundles.dexie.bytes), `${(bundles.levelkit.bytes / bundles.dexie.bytes).toFixed(2)}×`, '', '', '', '', '', '', ''])
table.push(['bundle, gzipped', '', kib(bundles.levelkit.gzip), kib(bundles.dexie.gzip), `${(bundles.levelkit.gzip / bundles.dexie.gzip).toFixed(2)}×`, '', '', '', '', '', '', ''])
console.log()
printTable(table)
console.log()
console.log(`  Medians over ${opts.runs} run(s). levelkit/Dexie: the ratio of ops/s within each run, then the median (> 1: levelkit faster);`)
console.log('  slice check: the ratio of median slice rates. IDB tx/op: IndexedDB transactions per operation (readwrite ones in brackets);')
console.log('  requests/op: IDBObjectStore/IDBIndex requests plus cursor steps; locks/op: navigator.locks.request() per operation.')
console.log(`  Bulk preload: levelkit a db.write() per ${fmt(opts.chunk)} records doing ChatStore's writes (users.insertMany(), messages.appendMany() per chat), Dexie a bulkAdd() per ${fmt(opts.chunk)}; the ratio is Dexie's time / levelkit's;`)
console.log('  each side\'s preload ends with a full garbage collection (gc(), Chromium run with --js-flags=--expose-gc), timed and counted in the')
console.log('  preload\'s time and CPU, so each side pays for its preload\'s garbage and every row starts from a collected heap (one untimed before it);')
console.log(`  levelkit ${secs(preload.levelkit.byTable)}; Dexie ${secs(preload.dexie.byTable)}. Counts of the preload are totals, not per operation.`)
console.log('  stored: navigator.storage.estimate().usage of the side\'s origin after its preload minus before (on disk, so it depends on when the')
console.log('  backing store last compacted: min..max over runs, levelkit then Dexie).')
console.log(`  Bundles: ${bundles.levelkit.file} (core + chat model, built now by scripts/build.js) and ${bundles.dexie.file}; ratios levelkit/Dexie.`)
console.log(`  ${perRun[0].userAgent.replace(/^.*?(Chrome\/[\d.]+).*$/, '$1')} (Debian chromium, headless, on-disk profile); answers checked on both sides in every run (digests of every row, samples before and after the writes, ChatStore check()).`)
console.log()
/**
 * levelkit's CPU over Dexie's, or n/a where Dexie's rounds to nothing (a
 * part of a tiny preload can take less than one tick of a process's CPU).
 * @param {number} levelkit @param {number} dexie
 */
const cpuRatio = (levelkit, dexie) => dexie > 0 ? `${(levelkit / dexie).toFixed(2)}×` : 'n/a'
const cpuTable = [['operation', 'CPU ms/op lk: main thread', 'all Chromium', 'Dexie: main thread', 'all Chromium', 'lk/Dexie (all)', 'inside native calls, ms/op: levelkit | Dexie']]
for (const op of ops) {
  const s = summary[op]
  const natives = (/** @type {string} */ side) => Object.entries(s.native[side]).filter(([, ms]) => ms >= 0.0005).sort((a, b) => b[1] - a[1]).map(([name, ms]) => `${name} ${fmt(ms, 3)}`).join(', ')
  cpuTable.push([s.label, fmt(s.perOp.levelkit.cpuMain, 2), fmt(s.perOp.levelkit.cpuAll, 2), fmt(s.perOp.dexie.cpuMain, 2), fmt(s.perOp.dexie.cpuAll, 2),
    cpuRatio(s.perOp.levelkit.cpuAll, s.perOp.dexie.cpuAll), `${natives('levelkit')} | ${natives('dexie')}`])
}
{
  // The preload's, per 1,000 records (its CPU time over every table).
  const per = (/** @type {string} */ side, /** @type {'main' | 'all'} */ key) => median(perRun.map(r => r.preload[side].cpu[key] / (r.preload[side].records / 1000)))
  cpuTable.push([`bulk preload (per ${fmt(1000)} records)`, fmt(per('levelkit', 'main'), 1), fmt(per('levelkit', 'all'), 1), fmt(per('dexie', 'main'), 1), fmt(per('dexie', 'all'), 1),
    cpuRatio(per('levelkit', 'all'), per('dexie', 'all')), ''])
  // And each table's part, per 1,000 of its records.
  for (const table of PRELOAD_TABLES) {
    const perTable = (/** @type {string} */ side, /** @type {'main' | 'all'} */ key) => median(perRun.map(r => {
      const part = r.preload[side].cpuByTable[table]
      return part[key] / (part.records / 1000)
    }))
    cpuTable.push([`  preload of ${table} (per ${fmt(1000)})`, fmt(perTable('levelkit', 'main'), 1), fmt(perTable('levelkit', 'all'), 1), fmt(perTable('dexie', 'main'), 1), fmt(perTable('dexie', 'all'), 1),
      cpuRatio(perTable('levelkit', 'all'), perTable('dexie', 'all')), ''])
  }
}
printTable(cpuTable)
console.log()
console.log('  CPU per operation, median over runs: the page\'s main thread (Performance.getMetrics ThreadTime), and every Chromium process')
console.log('  (SystemInfo.getProcessInfo: browser, where IndexedDB runs, renderers, utilities), read before and after each slice; < 1 in')
console.log('  lk/Dexie: levelkit uses less. Native calls: wall time inside the wrapped IndexedDB, BroadcastChannel and Web Locks calls')
console.log('  (on a loaded machine mostly waiting for the CPU: compare with the main thread\'s CPU).')
if (perRun[0].traces) {
  console.log()
  console.log('  One operation of each row, traced (run 1, after the measurements): IndexedDB transactions, and the requests in them by method and namespace')
  for (const [op, bySide] of Object.entries(perRun[0].traces)) {
    for (const side of SIDES) console.log(`  ${`${labelOf(op, opts.concurrency)}, ${side}:`.padEnd(30)} ${traceText(bySide[side])}`)
  }
  for (const side of SIDES) {
    for (const [table, transactions] of Object.entries(perRun[0].preload[side].traces ?? {})) {
      console.log(`  ${`preload of ${table} (all of it), ${side}:`.padEnd(30)} ${traceText(transactions)}`)
    }
  }
  // The same per record: a table's requests per user, chat or message, both
  // sides, what each put's value is (the native work a record costs).
  const recordsOf = /** @type {Record<string, number>} */ ({ users: opts.users, chats: opts.chats, messages: opts.messages })
  for (const table of PRELOAD_TABLES) {
    for (const side of SIDES) {
      const transactions = perRun[0].preload[side].traces?.[table]
      if (transactions !== undefined) console.log(`  ${`preload of ${table}, per record, ${side}:`.padEnd(30)} ${perRecordText(transactions, recordsOf[table])}`)
    }
  }
}
if (perRun[0].profiles) {
  console.log()
  console.log('  CPU profiles (run 1): main-thread ms per operation that was not idle (JS, GC, the rest), and the most self time by function')
  for (const [what, p] of Object.entries(perRun[0].profiles)) {
    console.log(`  ${what}: busy ${p.busy.toFixed(3)} ms/op (gc ${p.gc.toFixed(3)}, program ${p.program.toFixed(3)})`)
    console.log(`    self: ${p.top.map((/** @type {[string, number]} */ [name, ms]) => `${name} ${ms.toFixed(3)}`).join(', ')}`)
    console.log(`    inclusive: ${p.inclusive.map((/** @type {[string, number]} */ [name, ms]) => `${name} ${ms.toFixed(3)}`).join(', ')}`)
  }
}
printProblems(problems)

const files = ['results.csv', `${NAME}.svg`]
writeCsv(path.join(run0.outDir, 'results.csv'),
  ['run', 'operation', 'label', 'side', 'concurrency', 'ops', 'ms', 'ops_per_sec', 'idb_tx', 'idb_tx_readwrite', 'idb_requests', 'cursor_steps', 'locks'],
  perRun.flatMap(r => [
    ...ops.flatMap(op => SIDES.map(side => {
      const t = r.rows[op][side]
      return [r.run, op, labelOf(op, opts.concurrency), side, concurrencyOf(op), t.ops, t.ms, t.opsPerSec, t.tx, t.txReadwrite, t.requests, t.cursorSteps, t.locks]
    })),
    ...SIDES.map(side => {
      const p = r.preload[side]
      const ms = preloadMs(p)
      return [r.run, 'preload', 'bulk preload', side, 1, p.records, ms, p.records / (ms / 1000), p.counts.tx, p.counts.txReadwrite, p.counts.requests, p.counts.cursorSteps, p.counts.locks]
    })
  ]))
const categories = [...ops.map(op => summary[op].label), 'bulk preload (records/s)']
fs.writeFileSync(path.join(run0.outDir, `${NAME}.svg`), barSvg({
  title: `levelkit ChatStore vs Dexie in Chromium (IndexedDB): ops/s, median of ${opts.runs} run${opts.runs === 1 ? '' : 's'}`,
  subtitle: `${fmt(opts.users)} users, ${fmt(opts.chats)} chats × ${opts.members}, ${fmt(opts.messages)} messages; ${perRun[0].userAgent.replace(/^.*?(Chrome\/[\d.]+).*$/, '$1')} headless, levelkit ${run0.versions.levelkit}, Dexie ${run0.versions.dexie}; ${run0.machine.cores} cores; ${run0.startedAt.toISOString().slice(0, 10)}`,
  xLabel: 'operations per second (preload: records per second)',
  xScale: 'log',
  categories,
  series: [
    { name: SIDE_LABEL.levelkit, values: [...ops.map(op => summary[op].levelkitOpsPerSec), preload.levelkit.recordsPerSec], color: '#d62728' },
    { name: SIDE_LABEL.dexie, values: [...ops.map(op => summary[op].dexieOpsPerSec), preload.dexie.recordsPerSec], color: '#1f77b4' }
  ],
  labels: [
    [...ops.map(op => `${compact(summary[op].levelkitOpsPerSec)} (${summary[op].ratio.toFixed(2)}×, ${fmt(summary[op].perOp.levelkit.tx, 1)} tx/op)`), `${compact(preload.levelkit.recordsPerSec)} (${preloadRatio.toFixed(2)}×)`],
    [...ops.map(op => `${compact(summary[op].dexieOpsPerSec)} (${fmt(summary[op].perOp.dexie.tx, 1)} tx/op)`), compact(preload.dexie.recordsPerSec)]
  ]
}))
finishRun(run0.outDir, { name: NAME, ...run0, loadAfter }, {
  options: { ...opts, n, ops },
  userAgent: perRun[0].userAgent,
  bundles,
  summary,
  preload: { ...preload, ratio: preloadRatio },
  problems,
  runs: perRun
}, files)
if (problems.length > 0) process.exitCode = 1

/**
 * A CPU profile of Chromium's Profiler domain in per-operation milliseconds:
 * the time not idle, of it garbage collection and "(program)" (the
 * renderer's own work, IndexedDB's bindings included), and the 14 functions
 * with the most self time and the 14 with the most inclusive time (a
 * function counted once per sample wherever it is on the stack).
 * @param {any} profile @param {number} count
 */
function profileSummary (profile, count) {
  /** @type {Map<number, any>} */
  const nodes = new Map(profile.nodes.map((/** @type {any} */ node) => [node.id, node]))
  /** @type {Map<number, number>} */
  const parents = new Map()
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id)
  const nameOf = (/** @type {any} */ frame) => `${frame.functionName || '(anonymous)'}:${frame.lineNumber + 1}`
  /** @type {Map<string, number>} */
  const self = new Map()
  /** @type {Map<string, number>} */
  const total = new Map()
  let busy = 0
  let gc = 0
  let program = 0
  for (let i = 0; i < profile.samples.length; i++) {
    const frame = nodes.get(profile.samples[i]).callFrame
    const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000
    if (frame.functionName === '(idle)') continue
    busy += ms
    if (frame.functionName === '(garbage collector)') gc += ms
    if (frame.functionName === '(program)') program += ms
    self.set(nameOf(frame), (self.get(nameOf(frame)) ?? 0) + ms)
    // Inclusive: each function once per sample, wherever it is on the stack.
    const seen = new Set()
    for (let id = profile.samples[i]; id !== undefined; id = parents.get(id)) {
      const f = nodes.get(id).callFrame
      if (f.functionName === '' || f.functionName === '(root)') continue
      const name = nameOf(f)
      if (seen.has(name)) continue
      seen.add(name)
      total.set(name, (total.get(name) ?? 0) + ms)
    }
  }
  const topOf = (/** @type {Map<string, number>} */ map) => [...map].sort((a, b) => b[1] - a[1]).slice(0, 14).map(([name, ms]) => [name, ms / count])
  return { busy: busy / count, gc: gc / count, program: program / count, top: topOf(self), inclusive: topOf(total) }
}

/**
 * A traced operation in a line: its transactions by mode, and the requests
 * in them counted by method and namespace (a cursor's steps as one count).
 * @param {Array<{ mode: string, requests: string[] }>} transactions
 */
function traceText (transactions) {
  const parts = []
  for (const mode of ['readonly', 'readwrite']) {
    const of = transactions.filter(t => t.mode === mode)
    if (of.length === 0) continue
    /** @type {Map<string, number>} */
    const tally = new Map()
    for (const t of of) for (const r of t.requests) tally.set(r, (tally.get(r) || 0) + 1)
    parts.push(`${of.length} ${mode} [${[...tally].map(([r, k]) => k > 1 ? `${k}× ${r}` : r).join(', ')}]`)
  }
  return `${transactions.length} tx: ${parts.join('; ')}`
}

/**
 * A traced preload's requests per record: each kind (method, namespace, the
 * value's shape) counted over the whole part, divided by its records.
 * @param {Array<{ mode: string, requests: string[] }>} transactions @param {number} records
 */
function perRecordText (transactions, records) {
  /** @type {Map<string, number>} */
  const tally = new Map()
  let all = 0
  for (const t of transactions) {
    for (const r of t.requests) {
      tally.set(r, (tally.get(r) || 0) + 1)
      all++
    }
  }
  const each = [...tally].sort((a, b) => b[1] - a[1]).map(([r, k]) => `${fmt(k / records, k < records / 10 ? 3 : 2)} ${r}`)
  return `${fmt(all / records, 2)} requests, ${fmt(transactions.length / records, 3)} tx: ${each.join(', ')}`
}

/** @param {number} bytes */
function kib (bytes) {
  return `${fmt(bytes / 1024, 1)} KiB`
}

/** @param {number} v */
function compact (v) {
  return v >= 1e4 ? `${fmt(v / 1e3, 1)}k` : fmt(v, v < 10 ? 1 : 0)
}

/**
 * A side's preload time in one run: its tables' parts and the full garbage
 * collection at its end.
 * @param {{ ms: Record<string, number> }} part
 */
function preloadMs (part) {
  return part.ms.users + part.ms.chats + part.ms.messages + part.ms.gc
}

/** @param {Record<string, number>} byTable */
function secs (byTable) {
  return Object.entries(byTable).map(([t, ms]) => t === 'gc' ? `its final gc() ${fmt(ms, 0)} ms` : `${t} ${fmt(ms / 1000, 2)} s`).join(', ')
}

/** The page's query: the levelkit side's open() options. @param {{ native: boolean, entries: boolean, lists: boolean }} options */
function pageQuery (options) {
  const query = new URLSearchParams()
  if (!options.native) query.set('native', '0')
  if (options.entries) query.set('entries', '1')
  if (options.lists) query.set('lists', '1')
  const text = query.toString()
  return text === '' ? '/' : `/?${text}`
}
