// A layout question for ordered children: one key per child (levelkit's
// default) or blocks of n children per value (the `blockSize` option)?
//
//   keys        messages         [parent, seq] -> child
//   blocks of n messages.blocks  [parent, first] -> [[seq, child], ...]
//
// levelkit itself on every side (children `messages` of a collection `chats`,
// declared without blockSize and with each of --block-sizes), so the numbers
// are what a user of the option gets, with the default read cache. Each side
// gets a fresh database with --parents parents of --children children each
// (chat-like messages of about --size characters), then the phases are timed:
//   append     append a child to a random parent, awaited one at a time
//   append64   the same with --concurrency (64) in flight (group commit)
//   last50     getMany() of the last 50 children of a random parent
//   range50    range(parent, { reverse: true, limit: 50 }).all(): an iterator
// The sides take turns slice by slice (--slices, alternating which goes
// first); with --runs K everything repeats on fresh databases and we report
// medians, and the median of per-run ratios blocks / keys (> 1: blocks
// faster). Every side must answer every read the same, and check() must be
// clean (checked).
//
// Output: a summary on stdout, a progress bar on stderr when it is a TTY,
// and under --out (default bench/out/, ignored by git) a folder
// child-blocks-<time>/ with results.csv, summary.json and child-blocks.svg.
//
// Usage: node bench/child-blocks.js [--block-sizes 8,16,32] [--parents 2000]
//   [--children 50] [--size 60] [--appends 5000] [--concurrency 64]
//   [--reads 3000] [--runs 3] [--slices 10] [--backend leveldb|memory]
//   [--out bench/out] [--db-dir <tmp>]

import os from 'node:os'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { open } from 'levelkit'
import { Progress } from './lib/progress.js'
import { median, fmt, parseCount } from './lib/stats.js'
import { barSvg } from './lib/svg-plot.js'
import {
  parseCli, failWith, optionOf, writeCsv, printTable, finishRun, dirSize, prng, alternate, messageText, sideBySideOptions, sideBySideUsage, printProblems, startRun, printMachine
} from './lib/seeds-common.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const NAME = 'child-blocks'
const PHASES = /** @type {const} */ (['append', 'append64', 'last50', 'range50'])
const BACKENDS = ['leveldb', 'memory']
const PAGE = 50

const USAGE = `Usage: node bench/${NAME}.js [options]
  --block-sizes N,...  block sizes to compare with one key per child (default 8,16,32)
  --parents N          parents, each with --children children to start with (default 2000)
  --children N         children per parent to start with (default 50)
  --size N             about this many characters per child's text (default 60)
  --appends N          appends timed per append phase and side (default 5000)
  --concurrency N      appends in flight in the append64 phase (default 64)
  --reads N            reads timed per read phase and side (default 3000)
${sideBySideUsage(23)}`

const args = parseCli(NAME, USAGE, {
  'block-sizes': { type: 'string', default: '8,16,32' },
  parents: { type: 'string', default: '2000' },
  children: { type: 'string', default: '50' },
  size: { type: 'string', default: '60' },
  appends: { type: 'string', default: '5000' },
  concurrency: { type: 'string', default: '64' },
  reads: { type: 'string', default: '3000' },
  ...sideBySideOptions(path.join(here, 'out'))
})
const count = (/** @type {string} */ flag) => optionOf(NAME, USAGE, () => parseCount(args[flag]))
const opts = {
  blockSizes: optionOf(NAME, USAGE, () => String(args['block-sizes']).split(',').map(parseCount)),
  parents: count('parents'),
  children: count('children'),
  size: count('size'),
  appends: count('appends'),
  concurrency: count('concurrency'),
  reads: count('reads'),
  runs: count('runs'),
  slices: count('slices')
}
const backend = String(args.backend)
if (!BACKENDS.includes(backend)) failWith(NAME, USAGE, `Unknown backend ${JSON.stringify(backend)}`)
const bad = opts.blockSizes.find(n => n < 2 || n > 1024)
if (bad !== undefined) failWith(NAME, USAGE, `A block size is 2 to 1024, got ${bad}`)
const SIDES = ['keys', ...opts.blockSizes.map(n => `blocks of ${n}`)]
/** @param {string} side */
const blockSizeOf = side => side === 'keys' ? undefined : Number(side.split(' ').pop())

/**
 * One run: every side on a fresh database, filled the same way, then the
 * phases in turns. Returns ops/s per side and phase, and the database sizes.
 * @param {number} run @param {() => void} tick
 */
async function runOnce (run, tick) {
  const rand = prng(0xb10c + run)
  const texts = Array.from({ length: 256 }, () => messageText(rand, opts.size))
  const child = (/** @type {number} */ i) => ({ senderId: 1 + (i % 97), text: texts[i % texts.length], timestamp: 1_700_000_000_000 + i })
  const appendTo = Array.from({ length: opts.appends }, () => 1 + rand.int(opts.parents))
  const readOf = Array.from({ length: opts.reads }, () => 1 + rand.int(opts.parents))

  /** @type {Record<string, any>} */
  const sides = {}
  for (const side of SIDES) {
    const location = backend === 'leveldb' ? path.join(args['db-dir'], `levelkit-${NAME}-${process.pid}-${side.replace(/ /g, '-')}-${run}`) : undefined
    if (location) fs.rmSync(location, { recursive: true, force: true })
    const db = await open(location ? { backend, location } : { backend })
    const chats = db.collection('chats')
    const messages = db.children('messages', { parent: chats, blockSize: blockSizeOf(side) })
    await db.write(async (w) => { for (let p = 0; p < opts.parents; p++) await chats.in(w).insert({ p }) })
    // Filled as a chat fills: round after round over the parents.
    for (let round = 0; round < opts.children; round++) {
      await db.write(async (w) => {
        const scoped = messages.in(w)
        for (let p = 1; p <= opts.parents; p++) await scoped.append(p, child(round * opts.parents + p))
      })
    }
    sides[side] = { db, messages, location, phases: {}, answers: { last50: 0, range50: 0 } }
  }

  /**
   * @param {string} phase @param {number} n
   * @param {(side: any, from: number, to: number) => Promise<void>} work
   */
  const timed = async (phase, n, work) => {
    const ms = await alternate(SIDES, n, opts.slices, run, (side, from, to) => work(sides[side], from, to), tick)
    for (const side of SIDES) sides[side].phases[phase] = { count: n, ms: ms[side], opsPerSec: n / (ms[side] / 1000) }
  }

  await timed('append', appendTo.length, async (side, from, to) => {
    for (let i = from; i < to; i++) await side.messages.append(appendTo[i], child(i))
  })
  await timed('append64', appendTo.length, async (side, from, to) => {
    let next = from
    const lane = async () => { while (next < to) { const i = next++; await side.messages.append(appendTo[i], child(i)) } }
    await Promise.all(Array.from({ length: Math.min(opts.concurrency, to - from) }, lane))
  })
  await timed('last50', readOf.length, async (side, from, to) => {
    let total = 0
    for (let i = from; i < to; i++) {
      const last = await side.messages.lastSeq(readOf[i])
      const seqs = Array.from({ length: Math.min(PAGE, last) }, (_, k) => last - k)
      total += (await side.messages.getMany(readOf[i], seqs)).reduce((/** @type {number} */ sum, /** @type {any} */ m) => sum + m.timestamp % 1000, 0)
    }
    side.answers.last50 += total
  })
  await timed('range50', readOf.length, async (side, from, to) => {
    let total = 0
    for (let i = from; i < to; i++) {
      total += (await side.messages.range(readOf[i], { reverse: true, limit: PAGE }).all()).reduce((/** @type {number} */ sum, /** @type {any} */ m) => sum + m.timestamp % 1000, 0)
    }
    side.answers.range50 += total
  })

  /** @type {string[]} */
  const problems = []
  const reference = sides.keys.answers
  for (const side of SIDES) {
    const { answers } = sides[side]
    if (answers.last50 !== reference.last50 || answers.range50 !== reference.range50) {
      problems.push(`run ${run}, ${side}: answered differently from keys (${JSON.stringify(answers)} against ${JSON.stringify(reference)})`)
    }
    if (answers.last50 !== answers.range50) problems.push(`run ${run}, ${side}: getMany() and range() gave different pages`)
  }
  /** @type {Record<string, any>} */
  const result = { run, problems, sides: {} }
  const parentOne = JSON.stringify(await sides.keys.messages.range(1).all())
  for (const side of SIDES) {
    const { db, location, phases } = sides[side]
    if (JSON.stringify(await sides[side].messages.range(1).all()) !== parentOne) problems.push(`run ${run}, ${side}: parent 1's children differ from keys`)
    if (!(await db.check()).ok) problems.push(`run ${run}, ${side}: check() found problems`)
    await db.close()
    result.sides[side] = { phases, diskBytes: location ? dirSize(location) : null }
    if (location) fs.rmSync(location, { recursive: true, force: true })
  }
  return result
}

const run = startRun(NAME, args.out, ['classic-level', 'memory-level', 'abstract-level'])
const { machine, versions, loadBefore, startedAt, outDir } = run
console.log(`${NAME}: ordered children as one key each or in blocks of ${opts.blockSizes.join(', ')}, levelkit on ${backend}, ${opts.runs} run(s)`)
console.log(`  ${fmt(opts.parents)} parents of ${fmt(opts.children)} children (~${opts.size} characters of text each); ${fmt(opts.appends)} appends per phase (1 and ${opts.concurrency} in flight), ${fmt(opts.reads)} pages of ${PAGE} per read phase`)
printMachine(run, ['classic-level'])

const progress = new Progress(NAME, opts.runs * PHASES.length * Math.max(1, opts.slices) * SIDES.length)
let done = 0
/** @type {any[]} */
const results = []
for (let run = 1; run <= opts.runs; run++) {
  progress.label = `${NAME}: run ${run}`
  results.push(await runOnce(run, () => progress.update(++done)))
}
progress.done()
const loadAfter = os.loadavg()
const problems = results.flatMap(r => r.problems)

/** @type {Record<string, any>} */
const summary = {}
for (const phase of PHASES) {
  /** @type {Record<string, any>} */
  const row = {}
  for (const side of SIDES) {
    const rates = results.map(r => r.sides[side].phases[phase].opsPerSec)
    const ratios = results.map(r => r.sides[side].phases[phase].opsPerSec / r.sides.keys.phases[phase].opsPerSec)
    row[side] = { opsPerSec: median(rates), ratio: median(ratios), ratios }
  }
  summary[phase] = row
}
const diskBytes = Object.fromEntries(SIDES.map(side => [side, backend === 'leveldb' ? median(results.map(r => r.sides[side].diskBytes)) : null]))

console.log()
console.log(`Medians of ${opts.runs} run(s), ops/s; ratio = blocks / keys (median of per-run ratios, > 1: blocks faster)`)
const table = [['phase', ...SIDES.map(side => `${side} ops/s`), ...SIDES.slice(1).map(side => side.replace('blocks of ', 'ratio '))]]
for (const phase of PHASES) {
  table.push([phase, ...SIDES.map(side => fmt(summary[phase][side].opsPerSec)), ...SIDES.slice(1).map(side => `${summary[phase][side].ratio.toFixed(2)}×`)])
}
if (backend === 'leveldb') table.push(['on disk (MB)', ...SIDES.map(side => (diskBytes[side] / 1e6).toFixed(1)), ...SIDES.slice(1).map(() => '')])
printTable(table, 1)
printProblems(problems)

const csvRows = []
for (const r of results) {
  for (const side of SIDES) {
    for (const phase of PHASES) {
      const p = r.sides[side].phases[phase]
      csvRows.push([r.run, backend, side, blockSizeOf(side) ?? '', phase, p.count, p.ms, p.opsPerSec, r.sides[side].diskBytes])
    }
  }
}
writeCsv(path.join(outDir, 'results.csv'), ['run', 'backend', 'side', 'block_size', 'phase', 'count', 'ms', 'ops_per_sec', 'disk_bytes'], csvRows)
fs.writeFileSync(path.join(outDir, `${NAME}.svg`), barSvg({
  title: 'Children one key each vs in blocks: ops/s (higher is better)',
  subtitle: `levelkit on ${backend}; ${machine.cpu}, ${machine.cores} cores, node ${versions.node}; median of ${opts.runs} run(s), ${startedAt.toISOString().slice(0, 10)}`,
  xLabel: `operations per second (append: one child; last50 and range50: one page of ${PAGE})`,
  xScale: 'log',
  categories: [...PHASES],
  series: SIDES.map(side => ({ name: side, values: PHASES.map(phase => summary[phase][side].opsPerSec) }))
}))
finishRun(outDir, { name: NAME, startedAt, machine, versions, loadBefore, loadAfter }, {
  options: { ...opts, backend },
  summary,
  diskBytes,
  problems,
  runs: results
}, ['results.csv', `${NAME}.svg`])
if (problems.length) process.exitCode = 1
