// A layout question for relations: keep a direction as one key per edge
// (levelkit's default) or as one list of ids per id (the `lists` option)?
//
//   edges  follows.fwd  [from, to] -> ''    follows.rev  [to, from] -> ''
//   lists  follows.list.to  from -> [to, ...]    follows.list.from  to -> [from, ...]
//
// levelkit itself on both sides (a relation `follows` from `people` to
// `people`, declared with lists: [] and with lists: ['from', 'to']), so the
// numbers are what a user of the option gets. For every list size N in
// --sizes, a fresh pair of databases gets --heads heads with N edges each,
// then three phases are timed:
//   change  add an edge to a random head and remove it again, awaited one
//           at a time (the list stays at N): changes/s, two per pair
//   list    to(head).all() of a random head: the whole list
//   has     has(head, id) of a random head and a random id (1 in 2 there)
// The read cache is off (open({ readCache: 0 })): this measures the layouts,
// not memory; with it on, repeated reads of either layout come from memory.
//
// The layouts take turns slice by slice (--slices, alternating which goes
// first); with --runs K everything repeats on fresh databases and we report
// medians, and the median of per-run ratios lists / edges (> 1: lists faster).
// Both layouts must answer every list and has() read the same (checked).
//
// Output: a summary on stdout, a progress bar on stderr when it is a TTY,
// and under --out (default bench/out/, ignored by git) a folder
// relation-lists-<time>/ with results.csv, summary.json and relation-lists.svg.
//
// Usage: node bench/relation-lists.js [--sizes 10,100,1000] [--heads 20]
//   [--changes 2000] [--lists 5000] [--has 20000] [--runs 3] [--slices 10]
//   [--backend leveldb|memory] [--out bench/out] [--db-dir <tmp>]

import os from 'node:os'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { open } from 'levelkit'
import { Progress } from './lib/progress.js'
import { median, fmt, parseCount } from './lib/stats.js'
import { barSvg } from './lib/svg-plot.js'
import {
  parseCli, failWith, optionOf, writeCsv, printTable, finishRun, dirSize, prng, alternate, sideBySideOptions, sideBySideUsage, printProblems, startRun, printMachine
} from './lib/seeds-common.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const NAME = 'relation-lists'
const LAYOUTS = /** @type {const} */ (['edges', 'lists'])
const PHASES = /** @type {const} */ (['change', 'list', 'has'])
const BACKENDS = ['leveldb', 'memory']

const USAGE = `Usage: node bench/${NAME}.js [options]
  --sizes N,N,...  edges per head, one pair of fresh databases each (default 10,100,1000)
  --heads N        heads (from-side records) with that many edges (default 20)
  --changes N      add + remove pairs timed per size (default 2000)
  --lists N        to(head).all() reads timed per size (default 5000)
  --has N          has(head, id) reads timed per size (default 20000)
${sideBySideUsage(19)}`

const args = parseCli(NAME, USAGE, {
  sizes: { type: 'string', default: '10,100,1000' },
  heads: { type: 'string', default: '20' },
  changes: { type: 'string', default: '2000' },
  lists: { type: 'string', default: '5000' },
  has: { type: 'string', default: '20000' },
  ...sideBySideOptions(path.join(here, 'out'))
})
const count = (/** @type {string} */ flag) => optionOf(NAME, USAGE, () => parseCount(args[flag]))
const opts = {
  sizes: optionOf(NAME, USAGE, () => String(args.sizes).split(',').map(parseCount)),
  heads: count('heads'),
  changes: count('changes'),
  lists: count('lists'),
  has: count('has'),
  runs: count('runs'),
  slices: count('slices')
}
const backend = String(args.backend)
if (!BACKENDS.includes(backend)) failWith(NAME, USAGE, `Unknown backend ${JSON.stringify(backend)}`)

/**
 * One run at one list size: both layouts on fresh databases, filled the same
 * way, then the phases in turns. Returns ops/s per layout and phase, and the
 * database sizes.
 * @param {number} size @param {number} run @param {() => void} tick
 */
async function runSize (size, run, tick) {
  // Ids 1..heads are the heads; the others are what they link to.
  const people = opts.heads + size * 2
  const rand = prng(0x11575 + size * 7 + run)
  /** @type {number[][]} the ids each head links to */
  const targets = []
  for (let h = 1; h <= opts.heads; h++) {
    const set = new Set()
    while (set.size < size) set.add(opts.heads + 1 + rand.int(people - opts.heads))
    targets.push([...set].sort((a, b) => a - b))
  }
  const changes = Array.from({ length: opts.changes }, () => {
    const head = 1 + rand.int(opts.heads)
    let other
    do other = opts.heads + 1 + rand.int(people - opts.heads)
    while (targets[head - 1].includes(other))
    return [head, other]
  })
  const lists = Array.from({ length: opts.lists }, () => 1 + rand.int(opts.heads))
  const probes = Array.from({ length: opts.has }, () => {
    const head = 1 + rand.int(opts.heads)
    const list = targets[head - 1]
    return [head, rand() < 0.5 ? list[rand.int(list.length)] : opts.heads + 1 + rand.int(people - opts.heads)]
  })

  /** @type {Record<string, any>} */
  const sides = {}
  for (const layout of LAYOUTS) {
    const location = backend === 'leveldb' ? path.join(args['db-dir'], `levelkit-${NAME}-${process.pid}-${layout}-${size}-${run}`) : undefined
    if (location) fs.rmSync(location, { recursive: true, force: true })
    const db = await open(location ? { backend, location, readCache: 0 } : { backend, readCache: 0 })
    const peopleModel = db.collection('people')
    const follows = db.relation('follows', { from: peopleModel, to: peopleModel, lists: layout === 'lists' ? ['from', 'to'] : [] })
    for (let i = 0; i < people; i += 1000) {
      await db.write(async (w) => {
        const scoped = peopleModel.in(w)
        for (let k = i; k < Math.min(people, i + 1000); k++) await scoped.insert({ n: k })
      })
    }
    for (let h = 1; h <= opts.heads; h++) {
      const list = targets[h - 1]
      for (let i = 0; i < list.length; i += 500) {
        await db.write(async (w) => {
          const scoped = follows.in(w)
          for (const other of list.slice(i, i + 500)) await scoped.add(h, other)
        })
      }
    }
    sides[layout] = { db, follows, location, phases: {}, answers: { list: 0, has: 0 } }
  }

  /**
   * @param {string} phase @param {number} n
   * @param {(side: any, from: number, to: number) => Promise<void>} work
   */
  const timed = async (phase, n, work) => {
    const ms = await alternate(LAYOUTS, n, opts.slices, run, (layout, from, to) => work(sides[layout], from, to), tick)
    const per = phase === 'change' ? 2 * n : n
    for (const layout of LAYOUTS) sides[layout].phases[phase] = { count: per, ms: ms[layout], opsPerSec: per / (ms[layout] / 1000) }
  }

  await timed('change', changes.length, async (side, from, to) => {
    for (let i = from; i < to; i++) {
      const [head, other] = changes[i]
      if (!(await side.follows.add(head, other)) || !(await side.follows.remove(head, other))) throw new Error(`${head} -> ${other} was already there`)
    }
  })
  await timed('list', lists.length, async (side, from, to) => {
    let total = 0
    for (let i = from; i < to; i++) total += (await side.follows.to(lists[i]).all()).length
    side.answers.list += total
  })
  await timed('has', probes.length, async (side, from, to) => {
    let found = 0
    for (let i = from; i < to; i++) if (await side.follows.has(probes[i][0], probes[i][1])) found++
    side.answers.has += found
  })

  /** @type {string[]} */
  const problems = []
  const [a, b] = LAYOUTS.map(layout => sides[layout].answers)
  if (a.list !== b.list || a.has !== b.has) problems.push(`size ${size}, run ${run}: the layouts answered differently (${JSON.stringify(a)} against ${JSON.stringify(b)})`)
  for (let h = 1; h <= opts.heads; h++) {
    for (const layout of LAYOUTS) {
      const got = await sides[layout].follows.to(h).all()
      if (JSON.stringify(got) !== JSON.stringify(targets[h - 1])) problems.push(`size ${size}, run ${run}, ${layout}: to(${h}) is not the list written`)
    }
  }
  /** @type {Record<string, any>} */
  const result = { size, run, problems, layouts: {} }
  for (const layout of LAYOUTS) {
    const side = sides[layout]
    const { ok } = await side.db.check()
    if (!ok) problems.push(`size ${size}, run ${run}, ${layout}: check() found problems`)
    await side.db.close()
    result.layouts[layout] = { phases: side.phases, diskBytes: side.location ? dirSize(side.location) : null }
    if (side.location) fs.rmSync(side.location, { recursive: true, force: true })
  }
  return result
}

const run = startRun(NAME, args.out, ['classic-level', 'memory-level', 'abstract-level'])
const { machine, versions, loadBefore, startedAt, outDir } = run
console.log(`${NAME}: a relation direction as one key per edge or as one list per id, levelkit on ${backend}, ${opts.runs} run(s)`)
console.log(`  sizes ${opts.sizes.join(', ')} edges per head, ${opts.heads} heads; ${fmt(opts.changes)} add+remove pairs, ${fmt(opts.lists)} list reads, ${fmt(opts.has)} has() reads; read cache off`)
printMachine(run, ['classic-level'])

const progress = new Progress(NAME, opts.runs * opts.sizes.length * PHASES.length * Math.max(1, opts.slices) * 2)
let done = 0
/** @type {any[]} */
const results = []
for (let run = 1; run <= opts.runs; run++) {
  for (const size of opts.sizes) {
    progress.label = `${NAME}: run ${run}, ${size} edges per head`
    results.push(await runSize(size, run, () => progress.update(++done)))
  }
}
progress.done()
const loadAfter = os.loadavg()
const problems = results.flatMap(r => r.problems)

/** @type {Record<number, any>} */
const summary = {}
for (const size of opts.sizes) {
  const mine = results.filter(r => r.size === size)
  /** @type {Record<string, any>} */
  const row = {}
  for (const phase of PHASES) {
    /** @type {Record<string, any>} */
    const cell = {}
    for (const layout of LAYOUTS) cell[layout] = median(mine.map(r => r.layouts[layout].phases[phase].opsPerSec))
    cell.ratios = mine.map(r => r.layouts.lists.phases[phase].opsPerSec / r.layouts.edges.phases[phase].opsPerSec)
    cell.ratio = median(cell.ratios)
    row[phase] = cell
  }
  row.diskBytes = Object.fromEntries(LAYOUTS.map(layout => [layout, backend === 'leveldb' ? median(mine.map(r => r.layouts[layout].diskBytes)) : null]))
  summary[size] = row
}

const UNIT = { change: 'changes/s', list: 'lists/s', has: 'reads/s' }
console.log()
console.log(`Medians of ${opts.runs} run(s); ratio = lists / edges (median of per-run ratios, > 1: lists faster)`)
const table = [['edges per head', 'phase', 'unit', 'edges', 'lists', 'ratio', 'per run']]
for (const size of opts.sizes) {
  for (const phase of PHASES) {
    const cell = summary[size][phase]
    table.push([fmt(size), phase, UNIT[phase], fmt(cell.edges), fmt(cell.lists), `${cell.ratio.toFixed(2)}×`, cell.ratios.map((/** @type {number} */ x) => x.toFixed(2)).join(' ')])
  }
}
printTable(table, 3)
printProblems(problems)

const csvRows = []
for (const r of results) {
  for (const layout of LAYOUTS) {
    for (const phase of PHASES) {
      const p = r.layouts[layout].phases[phase]
      csvRows.push([r.run, backend, r.size, layout, phase, p.count, p.ms, p.opsPerSec, r.layouts[layout].diskBytes])
    }
  }
}
writeCsv(path.join(outDir, 'results.csv'), ['run', 'backend', 'edges_per_head', 'layout', 'phase', 'count', 'ms', 'ops_per_sec', 'disk_bytes'], csvRows)
const categories = []
for (const size of opts.sizes) for (const phase of PHASES) categories.push(`${phase}, N=${size}`)
fs.writeFileSync(path.join(outDir, `${NAME}.svg`), barSvg({
  title: 'Relation direction as edges vs as lists: ops/s (higher is better)',
  subtitle: `levelkit on ${backend}, read cache off; ${machine.cpu}, ${machine.cores} cores, node ${versions.node}; median of ${opts.runs} run(s), ${startedAt.toISOString().slice(0, 10)}`,
  xLabel: 'operations per second (change: one add or remove; list: one whole to(id); has: one point check)',
  xScale: 'log',
  categories,
  series: LAYOUTS.map(layout => ({ name: layout, values: opts.sizes.flatMap(size => PHASES.map(phase => summary[size][phase][layout])) }))
}))
finishRun(outDir, { name: NAME, startedAt, machine, versions, loadBefore, loadAfter }, {
  options: { ...opts, backend },
  summary,
  problems,
  runs: results
}, ['results.csv', `${NAME}.svg`])
if (problems.length) process.exitCode = 1
