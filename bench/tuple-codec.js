// Key codecs (issue 6 part 3): levelkit's tuple codec (lib/tuple.js) against
// the bytewise and charwise packages: encode and decode rate (with the
// `benchmark` package) and key size, on representative keys, plus a
// correctness check of every codec on the same keys.
//
// Datasets (--count distinct values each, from a seeded PRNG):
//   string                  'user:' + 4-12 lowercase letters (a top-level string key)
//   number                  ints in ±1e6, floats in ±1e4, tiny and huge magnitudes, 0
//   [chatId, seq]           [uint ≤ 1e6, uint ≤ 1e9]: a message key
//   [string, number]        ['user:' + word, a signed int or float]
//   [string, int, float]    a secondary index key (the previous version's dataset)
//   [unicode string, uint]  non-ASCII strings (TextEncoder/TextDecoder path)
//   nested                  nested tuples, booleans, null and bytes (charwise has no bytes)
// plus, for correctness only, edge cases: '', '\x00', '\x01', strings
// containing them, '\uffff' vs '😀', ±Infinity, ±Number.MAX_VALUE,
// ±Number.MIN_VALUE, 2^53, [], [[]], [null], nested arrays of different
// lengths.
//
// Correctness, per codec, on each dataset and on the edge cases (reported,
// never hidden):
//   supported  encode() accepts the value
//   round-trip decode(encode(v)) deep-equals v (bytes compared by content)
//   order      keys sort like the values: the values are sorted with a
//              reference comparator (typewise order: null < false < true <
//              numbers < bytes < strings by code point < arrays, element
//              by element), and every adjacent pair of keys
//              must compare the same way as bytes (what LevelDB and
//              IndexedDB compare; charwise's strings as UTF-8)
//   bytewise   (levelkit only) the same bytes as bytewise
//
// Timing: one Benchmark (benchmark.js) per dataset × codec × operation; each
// call encodes (or decodes) the next of the dataset's values, cycling. --runs
// K passes over all cases, rotating which codec goes first; we report the
// median of the K `hz` figures and the median of per-run ratios.
//
// Output: a summary on stdout, a progress bar on stderr when it is a TTY,
// and under --out (default bench/out/, ignored by git) a folder
// tuple-codec-<time>/ with results.csv (one row per run and case),
// correctness.csv, summary.json and tuple-codec.svg.
//
// Usage: node bench/tuple-codec.js [--count 1000] [--runs 3] [--max-time 1]
//   [--dataset name,...] [--out bench/out]

import os from 'node:os'
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { encodeTuple as encode, decodeTuple as decode } from 'levelkit'
import { Progress } from './lib/progress.js'
import { median, fmt, parseCount } from './lib/stats.js'
import { barSvg } from './lib/svg-plot.js'
import { reference } from 'levelkit-testkit/reference-order'
import {
  machineInfo, versionsOf, loadText, parseCli, failWith, optionOf, outputDir, shown,
  writeCsv, printTable, finishRun, prng
} from './lib/seeds-common.js'

const require = createRequire(import.meta.url)
const Benchmark = require('benchmark')
const bytewise = require('bytewise')
const charwise = require('charwise')

const here = path.dirname(fileURLToPath(import.meta.url))
const NAME = 'tuple-codec'

const USAGE = `Usage: node bench/tuple-codec.js [options]
  --count N        distinct values per dataset (default 1000)
  --runs K         passes over all cases (default 3)
  --max-time S     benchmark.js maxTime per case, seconds (default 1)
  --dataset LIST   only these datasets, comma separated: string, number, chat-seq,
                   string-number, string-int-float, unicode-uint, nested (default all)
  --out DIR        output folder (default bench/out)`

const args = parseCli(NAME, USAGE, {
  count: { type: 'string', default: '1000' },
  runs: { type: 'string', default: '3' },
  'max-time': { type: 'string', default: '1' },
  dataset: { type: 'string' },
  out: { type: 'string', default: path.join(here, 'out') }
})
const COUNT = optionOf(NAME, USAGE, () => parseCount(args.count))
const RUNS = optionOf(NAME, USAGE, () => parseCount(args.runs))
const MAX_TIME = Number(args['max-time'])
if (!(MAX_TIME > 0)) failWith(NAME, USAGE, '--max-time is a positive number of seconds')

/**
 * The codecs, as a Level user would call them. levelkit and bytewise make
 * bytes; charwise makes strings (its keys are stored as UTF-8).
 * @type {Record<string, { encode: (v: any) => any, decode: (k: any) => any, size: (k: any) => number, compare: (a: any, b: any) => number }>}
 */
const CODECS = {
  levelkit: { encode, decode, size: k => k.length, compare: (a, b) => Buffer.compare(a, b) },
  bytewise: { encode: v => bytewise.encode(v), decode: k => bytewise.decode(k), size: k => k.length, compare: (a, b) => Buffer.compare(a, b) },
  charwise: { encode: v => charwise.encode(v), decode: k => charwise.decode(k), size: k => Buffer.byteLength(k), compare: (a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)) }
}
const CODEC_NAMES = Object.keys(CODECS)

const rand = prng(0x9e3779b9)
const int = (/** @type {number} */ lo, /** @type {number} */ hi) => lo + Math.floor(rand() * (hi - lo + 1))
const pick = (/** @type {any[]} */ list) => list[int(0, list.length - 1)]
const word = (/** @type {number} */ lo, /** @type {number} */ hi) => {
  let s = ''
  for (let i = int(lo, hi); i > 0; i--) s += String.fromCharCode(int(97, 122))
  return s
}
const CITIES = ['Zürich', 'São Paulo', 'Kraków', '東京', 'Ελλάδα', 'Montréal 😀']
const number = () => {
  const r = rand()
  if (r < 0.4) return int(-1e6, 1e6)
  if (r < 0.8) return (rand() - 0.5) * 1e4
  if (r < 0.9) return (rand() < 0.5 ? -1 : 1) * rand() * 1e-9
  if (r < 0.98) return (rand() < 0.5 ? -1 : 1) * rand() * 1e300
  return 0
}

/** @type {Record<string, () => any>} */
const DATASETS = {
  string: () => 'user:' + word(4, 12),
  number,
  '[chatId, seq]': () => [int(1, 1e6), int(1, 1e9)],
  '[string, number]': () => ['user:' + word(4, 12), rand() < 0.5 ? int(-1e6, 1e6) : (rand() - 0.5) * 1e4],
  '[string, int, float]': () => ['user:' + word(4, 12), int(-1e6, 1e6), (rand() - 0.5) * 1e4],
  '[unicode string, uint]': () => [pick(CITIES) + ' ' + word(0, 6), int(0, 1e6)],
  nested: () => [word(2, 6), [int(1970, 2100), int(1, 12), int(1, 28)], [pick([true, false]), null, word(1, 8)], Buffer.from([int(0, 255), 0, 255, int(0, 255)])]
}
const EDGE_CASES = [
  '', '\x00', '\x01', 'a\x00b', 'a\x01b', 'a\x00', 'a', 'a\x02', '\uffff', '😀', 'ab',
  0, -1, 1, 1.5, -1.5, Infinity, -Infinity, Number.MAX_VALUE, -Number.MAX_VALUE, Number.MIN_VALUE, -Number.MIN_VALUE, 2 ** 53, -(2 ** 53),
  null, true, false,
  [], [[]], [null], ['a'], ['a', 1], ['a', -1], ['a\x00', 1], ['a', 'b\x01'], [1, [2, 3]], [1, [2]], [1, 2]
]

/** Short names for --dataset. */
const IDS = Object.fromEntries(Object.keys(DATASETS).map(name => [name.replace(/[[\]]/g, '').replace(/chatId, seq/, 'chat-seq').replace(/unicode string/, 'unicode').replace(/, /g, '-').replace(/\s+/g, '-'), name]))
let names = Object.keys(DATASETS)
if (args.dataset) {
  names = args.dataset.split(',').map((/** @type {string} */ id) => IDS[id] || failWith(NAME, USAGE, `Unknown dataset ${JSON.stringify(id)} (known: ${Object.keys(IDS).join(', ')})`))
}

/** Deep equality, byte arrays by content. @param {any} a @param {any} b @returns {boolean} */
function same (a, b) {
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.compare(a, b) === 0
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i]))
  return Object.is(a, b)
}

/** @param {any} v @returns {string} */
function show (v) {
  if (v instanceof Uint8Array) return `<bytes ${Buffer.from(v).toString('hex')}>`
  if (Array.isArray(v)) return `[${v.map(show).join(', ')}]`
  if (typeof v === 'number') return Object.is(v, -0) ? '-0' : String(v)
  return JSON.stringify(v)
}

/** Correctness of one codec on some values. @param {string} codecName @param {any[]} values */
function check (codecName, values) {
  const codec = CODECS[codecName]
  const result = { values: values.length, unsupported: 0, roundTripFailures: 0, orderFailures: 0, bytewiseMismatches: 0, examples: /** @type {string[]} */ ([]) }
  /** @type {Record<string, number>} examples kept per kind of failure */
  const kept = {}
  const note = (/** @type {string} */ kind, /** @type {string} */ text) => {
    if ((kept[kind] || 0) >= (kind === 'unsupported' ? 1 : 4) || result.examples.includes(text)) return
    kept[kind] = (kept[kind] || 0) + 1
    result.examples.push(text)
  }
  /** @type {Array<{ value: any, key: any }>} */
  const encoded = []
  for (const value of values) {
    let key
    try {
      key = codec.encode(value)
    } catch (err) {
      result.unsupported++
      note('unsupported', `encode(${show(value)}) throws: ${/** @type {Error} */ (err).message.split('\n')[0]}`)
      continue
    }
    let back
    try {
      back = codec.decode(key)
    } catch (err) {
      back = { threw: /** @type {Error} */ (err).message }
    }
    if (!same(back, value)) {
      result.roundTripFailures++
      note('round-trip', `decode(encode(${show(value)})) = ${back && back.threw ? `throws ${back.threw}` : show(back)}`)
    }
    if (codecName === 'levelkit') {
      let theirs
      try {
        theirs = bytewise.encode(value)
      } catch {}
      if (theirs && Buffer.compare(key, theirs) !== 0) {
        result.bytewiseMismatches++
        note('bytewise', `encode(${show(value)}) differs from bytewise`)
      }
    }
    encoded.push({ value, key })
  }
  encoded.sort((a, b) => reference(a.value, b.value))
  for (let i = 1; i < encoded.length; i++) {
    const a = encoded[i - 1]
    const b = encoded[i]
    if (Math.sign(codec.compare(a.key, b.key)) !== reference(a.value, b.value)) {
      result.orderFailures++
      note('order', `order: ${show(a.value)} < ${show(b.value)} but the keys compare ${codec.compare(a.key, b.key) > 0 ? '>' : '='}`)
    }
  }
  return result
}

// Data and correctness.

const machine = machineInfo()
const versions = versionsOf(['bytewise', 'charwise', 'benchmark'])
const startedAt = new Date()
const loadBefore = os.loadavg()
const outDir = outputDir(args.out, NAME)

console.log(`${NAME}: levelkit's tuple codec vs bytewise ${versions.bytewise} and charwise ${versions.charwise} (benchmark.js ${versions.benchmark}, maxTime ${MAX_TIME} s per case)`)
console.log(`  ${COUNT} distinct values per dataset, ${RUNS} run(s); ${machine.cpu}, ${machine.cores} cores, node ${versions.node}`)
console.log(`  load average ${loadText(loadBefore)}; output ${shown(outDir)}`)

/** @type {Record<string, any[]>} */
const values = {}
for (const name of names) values[name] = Array.from({ length: COUNT }, DATASETS[name])

/** @type {Record<string, Record<string, any>>} correctness[dataset][codec] */
const correctness = {}
for (const name of [...names, 'edge cases']) {
  correctness[name] = {}
  const sample = name === 'edge cases' ? EDGE_CASES : values[name]
  for (const codec of CODEC_NAMES) correctness[name][codec] = check(codec, sample)
}

/** @type {Record<string, Record<string, { keys: any[], bytes: number } | null>>} encoded keys and mean size */
const keys = {}
for (const name of names) {
  keys[name] = {}
  for (const codec of CODEC_NAMES) {
    try {
      const list = values[name].map(v => CODECS[codec].encode(v))
      keys[name][codec] = { keys: list, bytes: list.reduce((sum, k) => sum + CODECS[codec].size(k), 0) / list.length }
    } catch {
      keys[name][codec] = null // the codec cannot encode this dataset
    }
  }
}

// Timing.

let sink = 0
/** @param {string} name @param {string} codec @param {'encode' | 'decode'} op */
function makeBench (name, codec, op) {
  const mask = values[name].length
  let i = 0
  const fn = op === 'encode'
    ? (() => { const f = CODECS[codec].encode; const list = values[name]; return () => { sink += f(list[i]).length; if (++i === mask) i = 0 } })()
    : (() => { const f = CODECS[codec].decode; const list = /** @type {any} */ (keys[name][codec]).keys; return () => { if (f(list[i]) !== undefined) sink++; if (++i === mask) i = 0 } })()
  // benchmark.js takes at least 5 samples of at least 50 ms: a --max-time
  // below 0.25 s (smoke tests) shortens the samples too.
  const quick = MAX_TIME < 0.25 ? { minTime: MAX_TIME / 5, minSamples: 2 } : {}
  return new Benchmark(`${name} ${codec} ${op}`, fn, { maxTime: MAX_TIME, ...quick })
}

const cases = []
for (const name of names) for (const op of /** @type {const} */ (['encode', 'decode'])) cases.push({ name, op })
const progress = new Progress(NAME, RUNS * cases.length * CODEC_NAMES.length)
let done = 0
/** @type {any[]} */
const rows = []
for (let run = 1; run <= RUNS; run++) {
  const shift = (run - 1) % CODEC_NAMES.length
  const order = CODEC_NAMES.slice(shift).concat(CODEC_NAMES.slice(0, shift))
  for (const { name, op } of cases) {
    for (const codec of order) {
      if (keys[name][codec] !== null) {
        const bench = makeBench(name, codec, op)
        bench.run()
        if (bench.error) throw bench.error
        rows.push({ run, dataset: name, codec, op, hz: bench.hz, rme: bench.stats.rme, samples: bench.stats.sample.length })
      }
      progress.update(++done)
    }
  }
}
progress.done()
const loadAfter = os.loadavg()

// Aggregate.

/** @type {Record<string, any>} summary[dataset][op] = { levelkit, bytewise, charwise, ratios } */
const summary = {}
for (const name of names) {
  summary[name] = { keyBytes: {} }
  for (const codec of CODEC_NAMES) summary[name].keyBytes[codec] = keys[name][codec]?.bytes ?? null
  for (const op of ['encode', 'decode']) {
    /** @type {Record<string, any>} */
    const s = {}
    for (const codec of CODEC_NAMES) {
      const mine = rows.filter(r => r.dataset === name && r.op === op && r.codec === codec)
      s[codec] = mine.length ? median(mine.map(r => r.hz)) : null
      s[`${codec}Rme`] = mine.length ? median(mine.map(r => r.rme)) : null
    }
    for (const other of ['bytewise', 'charwise']) {
      const ratios = []
      for (let run = 1; run <= RUNS; run++) {
        const a = rows.find(r => r.run === run && r.dataset === name && r.op === op && r.codec === 'levelkit')
        const b = rows.find(r => r.run === run && r.dataset === name && r.op === op && r.codec === other)
        if (a && b) ratios.push(a.hz / b.hz)
      }
      s[`levelkit/${other}`] = ratios.length ? median(ratios) : null
    }
    summary[name][op] = s
  }
}

// Print.

const x = (/** @type {number | null} */ r) => r === null ? 'n/a' : `${r.toFixed(1)}×`
const n = (/** @type {number | null} */ v) => v === null ? 'n/a' : fmt(v)
const table = [['dataset', 'op', 'levelkit ops/s', 'bytewise ops/s', 'charwise ops/s', 'lk/bytewise', 'lk/charwise', 'key bytes lk', 'bw', 'cw']]
for (const name of names) {
  for (const op of ['encode', 'decode']) {
    const s = summary[name][op]
    const b = summary[name].keyBytes
    const size = (/** @type {number | null} */ v) => op === 'encode' ? (v === null ? 'n/a' : v.toFixed(1)) : ''
    table.push([name, op, n(s.levelkit), n(s.bytewise), n(s.charwise), x(s['levelkit/bytewise']), x(s['levelkit/charwise']), size(b.levelkit), size(b.bytewise), size(b.charwise)])
  }
}
console.log()
console.log(`Rates: median of ${RUNS} run(s) of benchmark.js hz (ops/s, one key per op); ratios: median of per-run ratios; key bytes: mean stored bytes`)
printTable(table, 2)

console.log()
console.log('Correctness on each dataset and on the edge cases (failures are findings, not errors of this script):')
const ctable = [['dataset', 'codec', 'values', 'unsupported', 'round-trip fails', 'order fails', '≠ bytewise']]
/** @type {string[]} */
const findings = []
for (const [name, byCodec] of Object.entries(correctness)) {
  for (const [codec, c] of Object.entries(byCodec)) {
    ctable.push([name, codec, String(c.values), String(c.unsupported), String(c.roundTripFailures), String(c.orderFailures), codec === 'levelkit' ? String(c.bytewiseMismatches) : ''])
  }
}
printTable(ctable, 2)
for (const codec of CODEC_NAMES) {
  const all = Object.values(correctness).map(byCodec => byCodec[codec])
  const failing = all.some(r => r.unsupported || r.roundTripFailures || r.orderFailures || r.bytewiseMismatches)
  if (!failing) continue
  const examples = new Set(all.flatMap(r => r.examples))
  findings.push(`${codec}: ${[...examples].join('; ')}`)
}
if (findings.length) {
  console.log()
  console.log('Findings (examples):')
  for (const f of findings) console.log(`  - ${f}`)
}

// Files.

writeCsv(path.join(outDir, 'results.csv'), ['run', 'dataset', 'codec', 'op', 'ops_per_sec', 'rme_percent', 'samples', 'mean_key_bytes'],
  rows.map(r => [r.run, r.dataset, r.codec, r.op, r.hz, r.rme, r.samples, keys[r.dataset][r.codec]?.bytes ?? null]))
const crow = []
for (const [name, byCodec] of Object.entries(correctness)) {
  for (const [codec, c] of Object.entries(byCodec)) crow.push([name, codec, c.values, c.unsupported, c.roundTripFailures, c.orderFailures, codec === 'levelkit' ? c.bytewiseMismatches : null, c.examples.join(' | ')])
}
writeCsv(path.join(outDir, 'correctness.csv'), ['dataset', 'codec', 'values', 'unsupported', 'round_trip_failures', 'order_failures', 'bytewise_mismatches', 'examples'], crow)
const categories = []
for (const name of names) for (const op of ['encode', 'decode']) categories.push(`${name} ${op}`)
fs.writeFileSync(path.join(outDir, `${NAME}.svg`), barSvg({
  title: 'Key codecs: keys encoded / decoded per second (higher is better)',
  subtitle: `${machine.cpu}, ${machine.cores} cores, node ${versions.node}, benchmark.js, median of ${RUNS} run(s), ${startedAt.toISOString().slice(0, 10)}`,
  xLabel: 'operations per second (one key each)',
  xScale: 'log',
  categories,
  series: CODEC_NAMES.map(codec => ({ name: codec, values: names.flatMap(name => ['encode', 'decode'].map(op => summary[name][op][codec])) }))
}))
finishRun(outDir, { name: NAME, startedAt, machine, versions, loadBefore, loadAfter }, {
  options: { count: COUNT, runs: RUNS, maxTime: MAX_TIME, datasets: names },
  summary,
  correctness,
  findings
}, ['results.csv', 'correctness.csv', `${NAME}.svg`])
if (sink === 0.5) console.log('') // keeps the results observable
