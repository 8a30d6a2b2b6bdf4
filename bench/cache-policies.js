// The read-cache policies of levelkit/cache (LRU, 2Q, ARC, W-TinyLFU):
// their hit rates against Bélády's optimal offline policy, and their speed
// beside lru-cache and mnemonist's LRUMap.
//
// Hit rates: each policy reads each trace through (get; on a miss, set) at
// several cache sizes, from empty; hit rate = hits / accesses, the cold
// start included. Traces (bench/lib/cache-traces.js): the seed's experiment
// (250 keys uniformly at random, caches of 25..200), Zipf s=0.8, 1.0, 1.2
// over 10,000 keys, a hot set polluted by one-time scans, a loop 10% larger
// than a cache of 1,000, and two public traces of cache2k (web07, web12;
// CC BY 4.0, bench/fixtures/traces/). The synthetic traces are seeded
// (--seed), so hit rates are exact and the same on every run. "optimal" is
// Bélády's MIN: evict what is next used farthest in the future; no policy
// that sees the trace one access at a time can beat it. On the Zipf traces,
// which draw every access independently, "A0" is the best such a policy
// can do in the long run: hold the `size` most probable keys.
//
// Speed: ops/s of get (a full cache of --speed-size entries, every get a
// hit, keys by Zipf s=1.0), set (keys 0..99,999 in a loop: each set of a full
// cache evicts) and read-through (get, set on a miss; Zipf s=1.0 over
// 100,000 keys), with string keys, --ops operations per measurement, for
// each policy and for lru-cache and mnemonist's LRUMap on the same keys.
// Each run measures every side in turn (the order rotating from run to run,
// after an untimed warm-up); the tables give medians of --runs runs.
//
// Output: tables, the goals of issue 16 (met / missed), and under --out
// (default bench/out/, ignored by git) a folder cache-policies-<time>/ with
// hit-rates.csv, speed.csv, summary.json, cache-policies-<trace>.svg (hit
// rate by cache size, per trace) and cache-policies-speed.svg.
//
// Usage: node bench/cache-policies.js [--runs 5] [--ops 1000000] [--length 200000]
//   [--traces seed,zipf-0.8,...] [--speed-size 10000] [--seed 1] [--no-speed] [--out bench/out]

import os from 'node:os'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'
import { LRUCache } from 'lru-cache'
import { LRUMap } from 'mnemonist'
import { createCache, policies } from 'levelkit/cache'
import { median, fmt, parseCount } from './lib/stats.js'
import { barSvg, barChartSvg } from './lib/svg-plot.js'
import { parseCli, failWith, optionOf, writeCsv, printTable, finishRun, printProblems, startRun, printMachine, prng } from './lib/seeds-common.js'
import { traceSpecs, hitsOf, optimalHits } from './lib/cache-traces.js'
import { keyChooser } from './lib/transactions-keys.js'

const require = createRequire(import.meta.url)
const here = path.dirname(fileURLToPath(import.meta.url))
const NAME = 'cache-policies'
const TRACE_NAMES = traceSpecs(1, 1).map(spec => spec.name)
const OPS = /** @type {const} */ (['get', 'set', 'read-through'])
const SPEED_KEYS = 100000

const USAGE = `Usage: node bench/${NAME}.js [options]
  --runs K          speed: runs; medians are reported (default 5)
  --ops N           speed: operations per measurement (default 1000000)
  --speed-size N    speed: the cache's size in entries (default 10000)
  --length N        accesses of each synthetic trace (default 200000)
  --traces a,b      hit rates on these traces (default all: ${TRACE_NAMES.join(', ')})
  --seed N          seed of the synthetic traces and the speed keys (default 1)
  --no-speed        hit rates only
  --out DIR         output folder (default bench/out)`

const args = parseCli(NAME, USAGE, {
  runs: { type: 'string', default: '5' },
  ops: { type: 'string', default: '1000000' },
  'speed-size': { type: 'string', default: '10000' },
  length: { type: 'string', default: '200000' },
  traces: { type: 'string', default: TRACE_NAMES.join(',') },
  seed: { type: 'string', default: '1' },
  'no-speed': { type: 'boolean', default: false },
  out: { type: 'string', default: path.join(here, 'out') }
})

/** @param {string} message @returns {never} */
const fail = message => failWith(NAME, USAGE, message)
/** @param {string} flag */
const count = flag => optionOf(NAME, USAGE, () => parseCount(args[flag]))
const traces = String(args.traces).split(',').map(s => s.trim()).filter(Boolean)
for (const name of traces) if (!TRACE_NAMES.includes(name)) fail(`Unknown trace ${JSON.stringify(name)} (${TRACE_NAMES.join(', ')})`)
const opts = {
  runs: count('runs'),
  ops: count('ops'),
  speedSize: count('speed-size'),
  length: count('length'),
  traces,
  seed: count('seed'),
  speed: !args['no-speed']
}
if (opts.speedSize >= SPEED_KEYS) fail(`--speed-size is below ${fmt(SPEED_KEYS)} (the keys of the set and read-through loops)`)

/** @type {Record<string, (size: number) => { get (key: string): any, set (key: string, value: any): any }>} */
const SIDES = {
  ...Object.fromEntries(policies.map(policy => [policy, (/** @type {number} */ size) => createCache({ policy, size })])),
  'lru-cache': size => new LRUCache({ max: size }),
  mnemonist: size => new LRUMap(size)
}
const LABELS = /** @type {Record<string, string>} */ ({ lru: 'LRU', '2q': '2Q', arc: 'ARC', tinylfu: 'W-TinyLFU', 'lru-cache': 'lru-cache (LRU)', mnemonist: 'mnemonist LRUMap', optimal: 'optimal (Bélády)', a0: 'A0 (top keys)' })

const run = startRun(NAME, args.out, [])
// lru-cache does not export its package.json: read the versions from the files.
for (const name of ['lru-cache', 'mnemonist']) run.versions[name] = packageVersion(name)
const { machine, versions, loadBefore, startedAt, outDir } = run
console.log(`${NAME}: hit rates of ${policies.map(p => LABELS[p]).join(', ')} and of the optimal policy on ${traces.length} traces;${opts.speed ? ` ops/s beside lru-cache and mnemonist, median of ${opts.runs} runs of ${fmt(opts.ops)} ops` : ''}`)
printMachine(run, ['lru-cache', 'mnemonist'])

/** @type {Array<{ trace: string, size: number, policy: string, hits: number, accesses: number, hitRate: number }>} */
const hitRates = []
/** @type {string[]} */
const problems = []
/** @type {Array<{ goal: string, value: number | string | null, target: number | string, met: boolean }>} */
const goals = []
const files = []
const rateOf = (/** @type {string} */ trace, /** @type {number} */ size, /** @type {string} */ policy) =>
  /** @type {{ hitRate: number }} */ (hitRates.find(x => x.trace === trace && x.size === size && x.policy === policy)).hitRate
const pct = (/** @type {number} */ rate) => (100 * rate).toFixed(1)

for (const spec of traceSpecs(opts.length, opts.seed).filter(spec => traces.includes(spec.name))) {
  const keys = spec.keys()
  const zipf = /^zipf-/.test(spec.name) ? Number(spec.name.slice(5)) : null
  console.log()
  console.log(`${spec.name}: ${spec.text}; hit rate %`)
  const columns = ['optimal', ...(zipf === null ? [] : ['a0']), ...policies]
  const table = [['size', ...columns.map(c => LABELS[c])]]
  for (const size of spec.sizes) {
    /** @param {string} policy @param {number} hits */
    const add = (policy, hits) => hitRates.push({ trace: spec.name, size, policy, hits, accesses: keys.length, hitRate: hits / keys.length })
    add('optimal', optimalHits(keys, size))
    if (zipf !== null) add('a0', Math.round(keys.length * topShare(10000, zipf, size)))
    for (const policy of policies) {
      const cache = createCache({ policy, size })
      const hits = hitsOf(cache, keys)
      if (cache.stats().hits !== hits) problems.push(`${spec.name}, ${policy}, size ${size}: stats() says ${cache.stats().hits} hits, the loop counted ${hits}`)
      if (hits > rateOf(spec.name, size, 'optimal') * keys.length) problems.push(`${spec.name}, ${policy}, size ${size}: above the optimal policy, which is impossible`)
      add(policy, hits)
    }
    table.push([String(size), ...columns.map(c => pct(rateOf(spec.name, size, c)))])
  }
  printTable(table, 1)
  const file = `${NAME}-${spec.name}.svg`
  fs.writeFileSync(path.join(outDir, file), barChartSvg({
    title: `Hit rate by cache size: ${spec.name} (higher is better)`,
    subtitle: `${spec.text}; read-through from empty; levelkit ${versions.levelkit}, ${startedAt.toISOString().slice(0, 10)}`,
    yLabel: 'hit rate, % of accesses',
    yScale: 'linear',
    categories: spec.sizes.map(size => `${fmt(size)} entries`),
    series: columns.map(c => ({ name: LABELS[c], values: spec.sizes.map(size => Number(pct(rateOf(spec.name, size, c)))) }))
  }))
  files.push(file)
}

/**
 * The share of accesses to the `size` most probable of `keys` keys under
 * Zipf s: what holding exactly them hits in the long run.
 * @param {number} keys @param {number} s @param {number} size
 */
function topShare (keys, s, size) {
  let top = 0
  let total = 0
  for (let k = 1; k <= keys; k++) {
    total += k ** -s
    if (k <= size) top += k ** -s
  }
  return top / total
}

/** @type {Array<{ run: number, side: string, op: string, ops: number, ms: number, opsPerSec: number, hitRate: number | null }>} */
const speed = []
if (opts.speed) {
  const random = prng(opts.seed)
  const names = Array.from({ length: SPEED_KEYS }, (_, i) => `key:${i}`)
  const hot = keyChooser('hot', opts.speedSize, 1.0)
  const getKeys = Array.from({ length: opts.ops }, () => names[hot(random) - 1])
  const setKeys = Array.from({ length: opts.ops }, (_, i) => names[i % SPEED_KEYS])
  const all = keyChooser('hot', SPEED_KEYS, 1.0)
  const readKeys = Array.from({ length: opts.ops }, () => names[all(random) - 1])
  const sides = Object.keys(SIDES)

  /** @type {Record<string, string[]>} */
  const keysOf = { get: getKeys, set: setKeys, 'read-through': readKeys }
  // Each side and op gets a loop of its own (new Function: its own call-site
  // feedback), so the JIT sees one cache class per call site, as in a
  // program using one cache: one shared loop would go megamorphic and time
  // the dispatch as much as the caches.
  const LOOPS = {
    get: 'let found = 0; for (let i = 0; i < ops; i++) if (cache.get(keys[i]) !== undefined) found++; return found',
    set: 'for (let i = 0; i < ops; i++) cache.set(keys[i], i); return ops',
    'read-through': 'let found = 0; for (let i = 0; i < ops; i++) { const key = keys[i]; if (cache.get(key) !== undefined) found++; else cache.set(key, i) } return found'
  }
  /** @type {Map<string, Function>} */
  const loops = new Map()
  /** @param {string} side @param {typeof OPS[number]} op @param {number} ops */
  const measure = (side, op, ops) => {
    const name = `${side} ${op}`
    if (!loops.has(name)) loops.set(name, new Function('cache', 'keys', 'ops', LOOPS[op])) // eslint-disable-line no-new-func
    const loop = /** @type {Function} */ (loops.get(name))
    const cache = SIDES[side](opts.speedSize)
    if (op === 'get') for (let i = 0; i < opts.speedSize; i++) cache.set(names[i], i)
    const start = performance.now()
    const found = loop(cache, keysOf[op], ops)
    const ms = performance.now() - start
    if (op === 'get' && found !== ops) problems.push(`${side}: ${ops - found} of ${ops} gets of a full cache missed`)
    return { ms, hitRate: op === 'read-through' ? found / ops : null }
  }

  for (const side of sides) for (const op of OPS) measure(side, op, Math.min(opts.ops, 100000))
  for (let r = 1; r <= opts.runs; r++) {
    const order = sides.map((_, i) => sides[(i + r) % sides.length])
    for (const op of OPS) {
      for (const side of order) {
        const { ms, hitRate } = measure(side, op, opts.ops)
        speed.push({ run: r, side, op, ops: opts.ops, ms, opsPerSec: opts.ops / (ms / 1000), hitRate })
      }
    }
    process.stdout.write(`\r  speed: run ${r} of ${opts.runs}`)
  }
  console.log()
  console.log()
  console.log(`Speed: millions of ops/s, median of ${opts.runs} runs of ${fmt(opts.ops)} ops; a cache of ${fmt(opts.speedSize)} string keys`)
  const table = [['side', ...OPS.map(op => `${op} M ops/s`), 'read-through hit %']]
  for (const side of sides) {
    table.push([LABELS[side], ...OPS.map(op => fmt(medianOps(side, op) / 1e6, 2)), pct(median(speed.filter(x => x.side === side && x.op === 'read-through').map(x => /** @type {number} */ (x.hitRate))))])
  }
  printTable(table, 1)
  const file = `${NAME}-speed.svg`
  fs.writeFileSync(path.join(outDir, file), barSvg({
    title: 'Cache speed: operations per second (higher is better)',
    subtitle: `${fmt(opts.speedSize)} entries, string keys, median of ${opts.runs} runs of ${fmt(opts.ops)} ops; lru-cache ${versions['lru-cache']}, mnemonist ${versions.mnemonist}; ${machine.cpu}, node ${versions.node}, ${startedAt.toISOString().slice(0, 10)}`,
    xLabel: 'operations per second',
    categories: sides.map(side => LABELS[side]),
    series: OPS.map(op => ({ name: op, values: sides.map(side => medianOps(side, op)) }))
  }))
  files.push(file)
}

/** The version of an installed package, from its package.json. @param {string} name */
function packageVersion (name) {
  let dir = path.dirname(require.resolve(name))
  while (!fs.existsSync(path.join(dir, 'package.json')) || JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).name !== name) {
    const parent = path.dirname(dir)
    if (parent === dir) return 'unknown'
    dir = parent
  }
  return JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version
}

/** @param {string} side @param {string} op */
function medianOps (side, op) {
  return median(speed.filter(x => x.side === side && x.op === op).map(x => x.opsPerSec))
}

console.log()
const traced = [...new Set(hitRates.map(x => x.trace))]
for (const policy of ['arc', 'tinylfu']) {
  const below = []
  for (const trace of traced) {
    for (const size of [...new Set(hitRates.filter(x => x.trace === trace).map(x => x.size))]) {
      const gap = rateOf(trace, size, policy) - rateOf(trace, size, 'lru')
      if (gap < 0) below.push(`${trace} @${size}: ${(-100 * gap).toFixed(2)} points below`)
    }
  }
  goal(`${LABELS[policy]} ≥ LRU on every trace and size`, below.length === 0 ? 'everywhere' : below.join('; '), 'everywhere', below.length === 0)
  const zipfs = traced.filter(trace => trace.startsWith('zipf-'))
  if (zipfs.length > 0) {
    const far = []
    let worst = 0
    for (const trace of zipfs) {
      for (const size of [...new Set(hitRates.filter(x => x.trace === trace).map(x => x.size))]) {
        const gap = rateOf(trace, size, 'optimal') - rateOf(trace, size, policy)
        worst = Math.max(worst, gap)
        if (gap > 0.1) far.push(`${trace} @${size}: ${pct(gap)} (A0 ${pct(rateOf(trace, size, 'optimal') - rateOf(trace, size, 'a0'))})`)
      }
    }
    goal(`${LABELS[policy]} within 10 points of optimal on Zipf`, far.length === 0 ? `at most ${pct(worst)} points` : far.join('; '), '≤ 10 points', far.length === 0)
  }
}
if (opts.speed) {
  const ratio = median(speed.filter(x => x.side === 'lru' && x.op === 'get').map(x => x.opsPerSec / /** @type {any} */ (speed.find(y => y.side === 'lru-cache' && y.op === 'get' && y.run === x.run)).opsPerSec))
  goal('LRU get ≥ 0.8× lru-cache get (median of per-run ratios)', Number(ratio.toFixed(2)), 0.8, ratio >= 0.8)
}
printProblems(problems)

/** @param {string} text @param {number | string | null} value @param {number | string} target @param {boolean} met */
function goal (text, value, target, met) {
  goals.push({ goal: text, value, target, met })
  console.log(`  goal: ${text}: ${met ? 'met' : 'MISSED'} (${value})`)
}

writeCsv(path.join(outDir, 'hit-rates.csv'), ['trace', 'size', 'policy', 'hits', 'accesses', 'hit_rate'],
  hitRates.map(x => [x.trace, x.size, x.policy, x.hits, x.accesses, x.hitRate]))
files.unshift('hit-rates.csv')
if (opts.speed) {
  writeCsv(path.join(outDir, 'speed.csv'), ['run', 'side', 'op', 'ops', 'ms', 'ops_per_sec', 'hit_rate'],
    speed.map(x => [x.run, x.side, x.op, x.ops, x.ms, x.opsPerSec, x.hitRate]))
  files.splice(1, 0, 'speed.csv')
}
const loadAfter = os.loadavg()
finishRun(outDir, { name: NAME, startedAt, machine, versions, loadBefore, loadAfter }, {
  options: opts,
  traces: traceSpecs(opts.length, opts.seed).filter(spec => traces.includes(spec.name)).map(({ name, text, sizes }) => ({ name, text, sizes })),
  hitRates,
  speed: opts.speed ? Object.fromEntries(Object.keys(SIDES).map(side => [side, Object.fromEntries(OPS.map(op => [op, medianOps(side, op)]))])) : null,
  goals,
  problems
}, files)
if (problems.length > 0) process.exitCode = 1
