// Smoke test of bench/cache-policies.js: one tiny run, checking what it
// writes; and the optimal policy of bench/lib/cache-traces.js against
// Bélády's rule applied literally (scan ahead for each resident key). It
// never asserts a speed: a benchmark measures, it is not a timed test.

import test from 'tape'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { prng } from 'levelkit-testkit/prng'
import { optimalHits, readTrace, uniformTrace } from '../lib/cache-traces.js'

const script = fileURLToPath(new URL('../cache-policies.js', import.meta.url))

/**
 * Bélády's MIN by its definition, O(n² · size): on a miss with the cache
 * full, evict the key (the new one included) next used farthest ahead.
 * @param {ArrayLike<number>} trace @param {number} size
 */
function slowOptimal (trace, size) {
  const held = new Set()
  let hits = 0
  const nextUse = (/** @type {number} */ key, /** @type {number} */ from) => {
    for (let j = from; j < trace.length; j++) if (trace[j] === key) return j
    return Infinity
  }
  for (let i = 0; i < trace.length; i++) {
    const key = trace[i]
    if (held.has(key)) {
      hits++
      continue
    }
    held.add(key)
    if (held.size > size) {
      let farthest = key
      for (const k of held) if (nextUse(k, i + 1) > nextUse(farthest, i + 1)) farthest = k
      held.delete(farthest)
    }
  }
  return hits
}

test('the optimal policy hits what Bélády\'s rule hits, literally applied', t => {
  const random = prng(5)
  let differ = 0
  let cases = 0
  for (const keys of [3, 8, 20]) {
    for (const size of [1, 2, 5]) {
      for (let round = 0; round < 20; round++) {
        const trace = Int32Array.from({ length: 200 }, () => random() < 0.5 ? random.int(keys) : random.int(3))
        cases++
        if (optimalHits(trace, size) !== slowOptimal(trace, size)) differ++
      }
    }
  }
  t.is(differ, 0, `the same hits in ${cases} random cases`)
  const big = uniformTrace(3000, 300, 1)
  t.is(optimalHits(big, 100), slowOptimal(big, 100), 'and on a longer trace, past the heap\'s rebuilds')
  t.end()
})

test('the public traces read as their README says', t => {
  for (const [file, accesses, keys] of [['trace-mt-20130703.trc.bin.gz', 76118, 20484], ['trace-mt-20121220.trc.bin.gz', 95607, 13756]]) {
    const trace = readTrace(String(file))
    t.same([trace.length, new Set(trace).size], [accesses, keys], `${file}: ${accesses} accesses of ${keys} keys`)
  }
  t.end()
})

test('bench/cache-policies.js: a tiny run writes its tables, CSVs, plots and goals', async t => {
  const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-cache-'))
  try {
    const { code, stdout, stderr } = await new Promise(resolve => {
      execFile(process.execPath, [script, '--runs', '1', '--ops', '2000', '--length', '3000', '--traces', 'seed,zipf-1.0,loop', '--out', out], { timeout: 60000 }, (err, stdout, stderr) => {
        resolve({ code: err ? /** @type {any} */ (err).code ?? 1 : 0, stdout, stderr })
      })
    })
    t.is(code, 0, `exit 0${code ? `: ${stderr}` : ''}`)
    t.match(stdout, /optimal \(Bélády\)/, 'prints the hit rates')
    t.match(stdout, /get M ops\/s/, 'prints the speeds')
    t.match(stdout, /goal: LRU get/, 'and the goals')
    const dirs = readdirSync(out).filter(name => name.startsWith('cache-policies-'))
    t.is(dirs.length, 1, 'one output folder')
    const dir = join(out, dirs[0])
    const rows = readFileSync(join(dir, 'hit-rates.csv'), 'utf8').trimEnd().split('\n')
    t.is(rows[0], 'trace,size,policy,hits,accesses,hit_rate', 'hit-rates.csv header')
    // seed: 4 sizes, zipf: 5 (with A0), loop: 4; 4 policies + optimal each.
    t.is(rows.length - 1, 4 * 5 + 5 * 6 + 4 * 5, 'a row per trace, size and policy')
    const cells = rows.slice(1).map(row => row.split(','))
    const optimal = new Map(cells.filter(c => c[2] === 'optimal').map(c => [`${c[0]}@${c[1]}`, Number(c[3])]))
    t.ok(cells.every(c => c[2] === 'optimal' || c[2] === 'a0' || Number(c[3]) <= /** @type {number} */ (optimal.get(`${c[0]}@${c[1]}`))), 'no policy above the optimal one')
    const speed = readFileSync(join(dir, 'speed.csv'), 'utf8').trimEnd().split('\n')
    t.is(speed.length - 1, 6 * 3, 'speed.csv: 6 sides × 3 ops')
    for (const file of ['cache-policies-seed.svg', 'cache-policies-zipf-1.0.svg', 'cache-policies-loop.svg', 'cache-policies-speed.svg']) {
      const svg = readFileSync(join(dir, file), 'utf8')
      t.ok(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"') && svg.trimEnd().endsWith('</svg>'), `${file} is an SVG document`)
    }
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
    t.is(summary.benchmark, 'cache-policies')
    t.same(summary.problems, [], 'no problem')
    t.ok(summary.goals.length >= 5, 'the goals are recorded')
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})
