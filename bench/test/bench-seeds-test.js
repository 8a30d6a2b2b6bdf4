// Smoke tests of the seeds' benchmarks (issue 6 part 3): bench/record-layout.js,
// bench/one-vs-many.js (with a 2-cycle kill -9 test), bench/tuple-codec.js,
// bench/relation-lists.js and bench/child-blocks.js,
// each run once with tiny sizes; we check the shape of what they print and
// write. They never assert a time: a benchmark measures, it is not a timed
// test.

import test from 'tape'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const bench = (/** @type {string} */ name) => fileURLToPath(new URL(`../${name}`, import.meta.url))

/** @param {string} script @param {string[]} args @returns {Promise<{ code: number, stdout: string, stderr: string }>} */
function run (script, args) {
  return new Promise(resolve => {
    execFile(process.execPath, [bench(script), ...args], { timeout: 60000 }, (err, stdout, stderr) => {
      resolve({ code: err ? /** @type {any} */ (err).code ?? 1 : 0, stdout, stderr })
    })
  })
}

/** The one output folder the script made under `out`. @param {any} t @param {string} out @param {string} name */
function outputOf (t, out, name) {
  const dirs = readdirSync(out).filter(entry => entry.startsWith(`${name}-`) && !entry.startsWith('levelkit-'))
  t.is(dirs.length, 1, 'one output folder')
  return join(out, dirs[0])
}

/** Cells of one CSV line (quoted cells may hold commas and "" quotes). @param {string} line */
function cells (line) {
  return [...line.matchAll(/(?:^|,)("(?:[^"]|"")*"|[^,]*)/g)].map(m => m[1].startsWith('"') ? m[1].slice(1, -1).replace(/""/g, '"') : m[1])
}

/** Header and rows of a CSV file. @param {string} file */
function csv (file) {
  const [header, ...rows] = readFileSync(file, 'utf8').trimEnd().split('\n')
  return { header: cells(header), rows: rows.map(cells) }
}

/** @param {any} t @param {string} file @param {number} bars */
function checkBarSvg (t, file, bars) {
  const svg = readFileSync(file, 'utf8')
  t.ok(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"') && svg.trimEnd().endsWith('</svg>'), `${file.split('/').pop()} is an SVG document`)
  t.is((svg.match(/<rect x="[\d.]+" y="[\d.]+" width="[\d.]+" height="[\d.]+" fill="[^"]+" fill-opacity/g) || []).length, bars, `${bars} bars`)
}

test('bench/record-layout.js on leveldb and memory', async t => {
  const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-seeds-'))
  try {
    const { code, stdout, stderr } = await run('record-layout.js', [
      '--messages', '2000', '--chats', '10', '--sends', '200', '--pages', '20', '--gets', '200', '--page-size', '20',
      '--batch-size', '500', '--runs', '2', '--backend', 'leveldb,memory', '--out', out, '--db-dir', out
    ])
    t.is(code, 0, `exit 0${code ? `: ${stderr}` : ''}`)
    t.match(stdout, /leveldb: medians of 2 run/, 'prints the leveldb summary')
    t.match(stdout, /memory: medians of 2 run/, 'prints the memory summary')
    t.match(stdout, /on disk after compactRange/, 'prints the size on disk')
    t.doesNotMatch(stdout, /PROBLEM/, 'both layouts return the same pages')
    const dir = outputOf(t, out, 'record-layout')
    const { header, rows } = csv(join(dir, 'results.csv'))
    t.same(header.slice(0, 7), ['run', 'backend', 'layout', 'phase', 'count', 'ms', 'ops_per_sec'])
    t.is(rows.length, 2 * 2 * 2 * 4, 'one row per run, backend, layout and phase')
    t.ok(rows.every(row => Number(row[6]) > 0), 'every phase has a rate')
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
    for (const backend of ['leveldb', 'memory']) {
      for (const phase of ['bulk', 'send', 'page', 'get']) {
        const p = summary.summary[backend].phases[phase]
        t.ok(p.aggregated > 0 && p['per-field'] > 0 && p.ratio > 0 && p.ratios.length === 2, `${backend} ${phase}: medians and ratios`)
      }
    }
    t.same(Object.keys(summary.summary.leveldb.bytes).sort(), ['compactedBytes', 'diskBytes', 'logicalBytes'], 'leveldb sizes')
    t.same(Object.keys(summary.summary.memory.bytes), ['logicalBytes'], 'memory: logical size only')
    t.ok(summary.summary.leveldb.bytes.logicalBytes.ratio > 1, 'per-field stores more bytes (3 keys per message)')
    checkBarSvg(t, join(dir, 'record-layout.svg'), 2 * 4 * 2)
    checkBarSvg(t, join(dir, 'record-layout-bytes.svg'), (3 + 1) * 2) // 3 sizes on leveldb, 1 on memory
    t.same(readdirSync(out).filter(name => name.startsWith('levelkit-')), [], 'the databases are removed')
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})

test('bench/one-vs-many.js with a 2-cycle kill -9 test', async t => {
  const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-seeds-'))
  try {
    const { code, stdout, stderr } = await run('one-vs-many.js', [
      '--ops', '300', '--concurrency', '4', '--chats', '20', '--users', '50', '--runs', '1',
      '--kills', '2', '--kill-min-ms', '5', '--kill-max-ms', '40', '--out', out, '--db-dir', out
    ])
    t.is(code, 0, `exit 0${code ? `: ${stderr}` : ''}`)
    t.match(stdout, /sends\/s, one at a time/, 'prints the throughput')
    t.match(stdout, /open fds/, 'prints the open files')
    t.match(stdout, /inconsistent \/ cycles/, 'prints the kill test')
    const dir = outputOf(t, out, 'one-vs-many')
    const throughput = csv(join(dir, 'throughput.csv'))
    t.is(throughput.rows.length, 2, 'one throughput row per layout')
    t.ok(throughput.rows.every(row => Number(row[2]) > 0 && Number(row[3]) > 0), 'rates')
    t.ok(throughput.rows.every(row => row[17] === 'true'), 'both layouts are consistent after an orderly run')
    const kills = csv(join(dir, 'kills.csv'))
    t.same(kills.header.slice(0, 5), ['cycle', 'layout', 'delay_ms', 'messages', 'inconsistent'])
    t.is(kills.rows.length, 4, 'one row per cycle and layout')
    t.ok(kills.rows.every(row => Number(row[3]) > 0), 'every killed writer had written messages')
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
    const { one, many } = summary.summary.throughput
    t.ok(one.sequentialOpsPerSec > 0 && many.concurrentOpsPerSec > 0, 'JSON has the rates')
    if (one.fdsAfterWrites !== null) {
      t.ok(many.fdsAfterWrites - many.fdsBefore > one.fdsAfterWrites - one.fdsBefore, 'four databases hold more file descriptors than one')
    }
    t.is(summary.summary.kills.one.cycles, 2)
    t.is(summary.summary.kills.many.cycles, 2)
    t.is(summary.summary.kills.one.inconsistent, 0, 'one database: a send is one atomic batch, never half written')
    t.comment(`many databases: ${summary.summary.kills.many.inconsistent} of 2 kills left an inconsistent state`)
    checkBarSvg(t, join(dir, 'one-vs-many.svg'), 2 * 2)
    checkBarSvg(t, join(dir, 'one-vs-many-resources.svg'), 2 * 4)
    t.same(readdirSync(out).filter(name => name.startsWith('levelkit-')), [], 'the databases are removed')
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})

test('bench/tuple-codec.js with benchmark.js', async t => {
  const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-seeds-'))
  try {
    const { code, stdout, stderr } = await run('tuple-codec.js', ['--count', '100', '--runs', '1', '--max-time', '0.01', '--dataset', 'string,chat-seq,nested', '--out', out])
    t.is(code, 0, `exit 0${code ? `: ${stderr}` : ''}`)
    t.match(stdout, /levelkit ops\/s\s+bytewise ops\/s\s+charwise ops\/s/, 'prints the rates')
    t.match(stdout, /Correctness on each dataset/, 'prints the correctness check')
    const dir = outputOf(t, out, 'tuple-codec')
    const { header, rows } = csv(join(dir, 'results.csv'))
    t.same(header, ['run', 'dataset', 'codec', 'op', 'ops_per_sec', 'rme_percent', 'samples', 'mean_key_bytes'])
    // 3 datasets × 3 codecs × 2 ops, but charwise cannot encode bytes (nested).
    t.is(rows.length, 3 * 3 * 2 - 2, 'one row per dataset, codec and operation the codec supports')
    t.ok(rows.every(row => Number(row[4]) > 0 && Number(row[7]) > 0), 'rates and key sizes')
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
    t.same(Object.keys(summary.correctness), ['string', '[chatId, seq]', 'nested', 'edge cases'])
    for (const [name, byCodec] of Object.entries(summary.correctness)) {
      const lk = /** @type {any} */ (byCodec).levelkit
      t.same([lk.unsupported, lk.roundTripFailures, lk.orderFailures, lk.bytewiseMismatches], [0, 0, 0, 0], `levelkit is correct on ${name}`)
    }
    t.is(summary.summary.nested.encode.charwise, null, 'charwise: n/a on bytes')
    t.comment(`charwise on the edge cases: ${summary.correctness['edge cases'].charwise.roundTripFailures} round-trip and ${summary.correctness['edge cases'].charwise.orderFailures} order failures`)
    checkBarSvg(t, join(dir, 'tuple-codec.svg'), 3 * 2 * 3 - 2)
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})

test('bench/relation-lists.js with tiny sizes', async t => {
  const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-lists-'))
  try {
    const { code, stdout, stderr } = await run('relation-lists.js', [
      '--sizes', '3,30', '--heads', '4', '--changes', '20', '--lists', '20', '--has', '40', '--runs', '1', '--slices', '2', '--out', out, '--db-dir', out
    ])
    t.is(code, 0, `exit 0${code ? `: ${stderr}` : ''}`)
    t.match(stdout, /ratio = lists \/ edges/, 'prints the ratio')
    t.notOk(/PROBLEM/.test(stdout), 'both layouts answered alike, and check() was clean')
    const dir = outputOf(t, out, 'relation-lists')
    const { header, rows } = csv(join(dir, 'results.csv'))
    t.same(header, ['run', 'backend', 'edges_per_head', 'layout', 'phase', 'count', 'ms', 'ops_per_sec', 'disk_bytes'], 'CSV header')
    t.is(rows.length, 2 * 2 * 3, 'a row per size, layout and phase')
    t.ok(rows.every(row => Number(row[7]) > 0 && Number(row[8]) > 0), 'a rate and a size in every row')
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
    t.same(Object.keys(summary.summary), ['3', '30'], 'a summary per size')
    t.ok(summary.summary['30'].list.ratio > 0 && summary.summary['30'].change.edges > 0, 'ratios and rates')
    t.same(summary.problems, [])
    checkBarSvg(t, join(dir, 'relation-lists.svg'), 2 * 3 * 2)
    t.same(readdirSync(out).filter(name => name.startsWith('levelkit-relation-lists-')), [], 'the databases are removed')
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})

test('bench/child-blocks.js with tiny sizes', async t => {
  const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-blocks-'))
  try {
    const { code, stdout, stderr } = await run('child-blocks.js', [
      '--block-sizes', '3,8', '--parents', '6', '--children', '10', '--appends', '30', '--reads', '20', '--runs', '1', '--slices', '2', '--out', out, '--db-dir', out
    ])
    t.is(code, 0, `exit 0${code ? `: ${stderr}` : ''}`)
    t.match(stdout, /ratio = blocks \/ keys/, 'prints the ratio')
    t.notOk(/PROBLEM/.test(stdout), 'every side answered alike, and check() was clean')
    const dir = outputOf(t, out, 'child-blocks')
    const { header, rows } = csv(join(dir, 'results.csv'))
    t.same(header, ['run', 'backend', 'side', 'block_size', 'phase', 'count', 'ms', 'ops_per_sec', 'disk_bytes'], 'CSV header')
    t.is(rows.length, 3 * 4, 'a row per side and phase')
    t.ok(rows.every(row => Number(row[7]) > 0 && Number(row[8]) > 0), 'a rate and a size in every row')
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
    t.same(Object.keys(summary.summary), ['append', 'append64', 'last50', 'range50'], 'a summary per phase')
    t.ok(summary.summary.last50['blocks of 8'].ratio > 0 && summary.summary.append.keys.opsPerSec > 0, 'ratios and rates')
    t.same(summary.problems, [])
    checkBarSvg(t, join(dir, 'child-blocks.svg'), 3 * 4)
    t.same(readdirSync(out).filter(name => name.startsWith('levelkit-child-blocks-')), [], 'the databases are removed')
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})

test('bench/compare-trees.js with tiny sizes, this tree against itself', async t => {
  const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-trees-'))
  const repo = fileURLToPath(new URL('../..', import.meta.url))
  try {
    const { code, stdout, stderr } = await run('compare-trees.js', [
      '--before', repo, '--users', '30', '--chats', '3', '--messages', '40', '--ops', 'getUser,addChatMessageC', '--n', '10', '--slices', '2', '--out', out
    ])
    t.is(code, 0, `exit 0${code ? `: ${stderr}` : ''}`)
    t.match(stdout, /after\/before is the median of the ratio/, 'prints what the ratio is')
    const dir = outputOf(t, out, 'compare-trees')
    const { header, rows } = csv(join(dir, 'results.csv'))
    t.same(header, ['operation', 'slice', 'before_ops_per_s', 'after_ops_per_s'], 'CSV header')
    t.same(rows.map(row => row.slice(0, 2)), [['getUser', '0'], ['getUser', '1'], ['addChatMessageC', '0'], ['addChatMessageC', '1']], 'a row per operation and slice')
    t.ok(rows.every(row => Number(row[2]) > 0 && Number(row[3]) > 0), 'a rate on both sides in every row')
    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
    t.same(Object.keys(summary.results), ['getUser', 'addChatMessageC'], 'a result per operation')
    t.ok(summary.results.getUser.ratio > 0, 'a ratio')
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})

test('the seeds\' benchmarks refuse bad options', async t => {
  for (const [script, args, message] of [
    ['record-layout.js', ['--backend', 'nope'], /Unknown backend "nope"/],
    ['one-vs-many.js', ['--many-write', 'nope'], /--many-write is parallel or sequential/],
    ['tuple-codec.js', ['--dataset', 'nope'], /Unknown dataset "nope"/],
    ['relation-lists.js', ['--backend', 'nope'], /Unknown backend "nope"/],
    ['child-blocks.js', ['--block-sizes', '1'], /A block size is 2 to 1024, got 1/],
    ['compare-trees.js', [], /--before is required/],
    ['compare-trees.js', ['--before', tmpdir()], /is not a levelkit checkout/]
  ]) {
    const { code, stderr } = await run(/** @type {string} */ (script), /** @type {string[]} */ (args))
    t.is(code, 2, `${script}: exit 2`)
    t.match(stderr, /** @type {RegExp} */ (message))
  }
})
