// Shared helpers of the benchmarks (first written for the seeds' questions,
// issue 6 part 3; used by every script in bench/).
// Machine and version facts, option parsing, output folders, CSV, a plain
// text table, directory sizes, a seeded PRNG, and Linux process figures
// (open file descriptors, RSS).

import os from 'node:os'
import fs from 'node:fs'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

/** Facts about the machine, for the summary and the JSON. */
export function machineInfo () {
  return {
    cpu: os.cpus()[0]?.model || 'unknown',
    cores: os.cpus().length,
    memoryBytes: os.totalmem(),
    platform: `${os.platform()} ${os.arch()} ${os.release()}`,
    hostname: os.hostname()
  }
}

/**
 * Versions of node and of the named packages (those not installed are left
 * out).
 * @param {string[]} packages
 */
export function versionsOf (packages) {
  /** @type {Record<string, string>} */
  const versions = { node: process.version, levelkit: require('levelkit/package.json').version }
  for (const name of packages) {
    try {
      versions[name] = require(`${name}/package.json`).version
    } catch {}
  }
  return versions
}

/** @param {number[]} load */
export const loadText = load => load.map(l => l.toFixed(2)).join(' ')

/**
 * Parse the command line, or print the usage and exit 2.
 * @param {string} name the script's name, for messages
 * @param {string} usage
 * @param {Record<string, any>} options parseArgs options
 * @returns {Record<string, any>}
 */
export function parseCli (name, usage, options) {
  let values
  try {
    values = parseArgs({ options: { ...options, help: { type: 'boolean', short: 'h', default: false } } }).values
  } catch (err) {
    failWith(name, usage, /** @type {Error} */ (err).message)
  }
  if (values.help) {
    console.log(usage)
    process.exit(0)
  }
  return values
}

/** @param {string} name @param {string} usage @param {string} message @returns {never} */
export function failWith (name, usage, message) {
  console.error(`${name}: ${message}\n\n${usage}`)
  process.exit(2)
}

/**
 * Run `parse`, turning a thrown error into a usage error.
 * @template T
 * @param {string} name @param {string} usage @param {() => T} parse
 * @returns {T}
 */
export function optionOf (name, usage, parse) {
  try {
    return parse()
  } catch (err) {
    return failWith(name, usage, /** @type {Error} */ (err).message)
  }
}

/**
 * A fresh, timestamped output folder `<out>/<name>-<time>/`.
 * @param {string} out @param {string} name
 */
export function outputDir (out, name) {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-')
  const dir = path.resolve(out, `${name}-${stamp}`)
  fs.mkdirSync(dir, { recursive: true })
  return dir
}

/**
 * Write `<outDir>/summary.json` (what every benchmark records: its name,
 * date, command line, machine, versions and load, then `fields`), and print
 * the load and the files written.
 * @param {string} outDir
 * @param {{ name: string, startedAt: Date, machine: object, versions: object, loadBefore: number[], loadAfter: number[] }} run
 * @param {Record<string, unknown>} fields
 * @param {string[]} files the other files written, for the closing line
 */
export function finishRun (outDir, run, fields, files) {
  fs.writeFileSync(path.join(outDir, 'summary.json'), JSON.stringify({
    benchmark: run.name,
    date: run.startedAt.toISOString(),
    command: `node bench/${run.name}.js ${process.argv.slice(2).join(' ')}`.trim(),
    machine: run.machine,
    versions: run.versions,
    loadAverage: { before: run.loadBefore, after: run.loadAfter },
    ...fields
  }, null, 2) + '\n')
  console.log()
  console.log(`Load average ${loadText(run.loadAfter)} (before: ${loadText(run.loadBefore)})`)
  console.log(`Wrote ${shown(outDir)}/: ${[...files, 'summary.json'].join(', ')}`)
}

/** A path relative to the working directory when it is inside it. @param {string} file */
export function shown (file) {
  return file.startsWith(process.cwd() + path.sep) ? path.relative(process.cwd(), file) : file
}

/**
 * Write a CSV file: a header row and rows of cells (numbers, strings).
 * @param {string} file @param {string[]} header @param {Array<Array<string | number | null>>} rows
 */
export function writeCsv (file, header, rows) {
  const cell = (/** @type {any} */ v) => {
    if (v === null || v === undefined) return ''
    const s = typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toPrecision(8)) : String(v)
    return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s
  }
  fs.writeFileSync(file, [header, ...rows].map(row => row.map(cell).join(',')).join('\n') + '\n')
}

/**
 * Print rows as an aligned table (first `left` columns left-aligned, the
 * rest right-aligned).
 * @param {string[][]} table @param {number} [left]
 */
export function printTable (table, left = 1) {
  const widths = table[0].map((_, c) => Math.max(...table.map(row => String(row[c]).length)))
  for (const row of table) {
    console.log('  ' + row.map((cell, c) => c < left ? String(cell).padEnd(widths[c]) : String(cell).padStart(widths[c])).join('  '))
  }
}

/** Total size of the files under a directory (of a file; 0 if missing). @param {string} dir @returns {number} bytes */
export function dirSize (dir) {
  if (!fs.existsSync(dir)) return 0
  if (!fs.statSync(dir).isDirectory()) return fs.statSync(dir).size
  let total = 0
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name)
    total += entry.isDirectory() ? dirSize(file) : fs.statSync(file).size
  }
  return total
}

export { prng } from 'levelkit-testkit/prng'

/**
 * The options every side-by-side benchmark of a layout takes (--runs,
 * --slices, --backend, --out, --db-dir), as parseCli() specs, and their
 * usage lines.
 * @param {string} outDefault the default output folder
 */
export function sideBySideOptions (outDefault) {
  return {
    runs: { type: 'string', default: '3' },
    slices: { type: 'string', default: '10' },
    backend: { type: 'string', default: 'leveldb' },
    out: { type: 'string', default: outDefault },
    'db-dir': { type: 'string', default: os.tmpdir() }
  }
}

/** @param {number} width the column where the descriptions start */
export function sideBySideUsage (width) {
  const line = (/** @type {string} */ flag, /** @type {string} */ text) => `  ${flag.padEnd(width - 2)}${text}`
  return [
    line('--runs K', 'runs, fresh databases each (default 3)'),
    line('--slices N', 'slices per phase; the sides take turns slice by slice (default 10)'),
    line('--backend B', 'leveldb | memory (default leveldb)'),
    line('--out DIR', 'output folder (default bench/out)'),
    line('--db-dir DIR', 'where the LevelDB databases go (default the OS temp dir)')
  ].join('\n')
}

/**
 * What a run records as it starts: the machine, the versions of `packages`
 * (and Node's), the load, the time, and its output folder (created).
 * @param {string} name @param {string} out @param {string[]} packages
 */
export function startRun (name, out, packages) {
  return { machine: machineInfo(), versions: versionsOf(packages), loadBefore: os.loadavg(), startedAt: new Date(), outDir: outputDir(out, name) }
}

/**
 * The closing lines of a run's header: the machine with the versions of
 * `shownPackages`, then the load and the output folder.
 * @param {ReturnType<typeof startRun>} run @param {string[]} shownPackages
 */
export function printMachine (run, shownPackages) {
  const { machine, versions } = run
  console.log(`  ${machine.cpu}, ${machine.cores} cores, ${machine.platform}, node ${versions.node}${shownPackages.map(name => `, ${name} ${versions[name]}`).join('')}`)
  console.log(`  load average ${loadText(run.loadBefore)}; output ${shown(run.outDir)}`)
}

/** Print each problem a run found, after a blank line. @param {string[]} problems */
export function printProblems (problems) {
  if (problems.length === 0) return
  console.log()
  for (const p of problems) console.log(`  PROBLEM: ${p}`)
}

/**
 * Time `work` over items [0, n) for each side in turn, slice by slice
 * (--slices), alternating which side goes first (shifted by `run`), so
 * drift and background load hit every side alike. Returns ms per side.
 * @param {readonly string[]} sides @param {number} n @param {number} slices @param {number} run
 * @param {(side: string, from: number, to: number) => Promise<void>} work
 * @param {() => void} tick called after each slice of each side
 * @returns {Promise<Record<string, number>>}
 */
export async function alternate (sides, n, slices, run, work, tick) {
  /** @type {Record<string, number>} */
  const ms = Object.fromEntries(sides.map(side => [side, 0]))
  const count = Math.max(1, Math.min(slices, n))
  for (let k = 0; k < count; k++) {
    const from = Math.floor(k * n / count)
    const to = Math.floor((k + 1) * n / count)
    const order = (k + run) % 2 === 0 ? sides : [...sides].reverse()
    for (const side of order) {
      const start = performance.now()
      await work(side, from, to)
      ms[side] += performance.now() - start
      tick()
    }
  }
  return ms
}

const WORDS = ['hello', 'ok', 'see', 'you', 'at', 'the', 'meeting', 'tomorrow', 'thanks', 'sure', 'lunch', 'deploy', 'is', 'done', 'can', 'we', 'talk', 'later', 'great', 'news', 'ship', 'it', 'why', 'not', 'fixed', 'review', 'please', 'Zürich', 'café', '👍']

/**
 * A chat-like message text of about `size` characters (words from a small
 * vocabulary, so it compresses like real text, not like random bytes).
 * @param {() => number} rand @param {number} size
 */
export function messageText (rand, size) {
  const target = Math.max(1, Math.round(size * (0.3 + 1.4 * rand())))
  let text = ''
  while (text.length < target) text += (text ? ' ' : '') + WORDS[Math.floor(rand() * WORDS.length)]
  return text
}

/** Open file descriptors of this process (Linux: /proc/self/fd), or null. */
export function openFds () {
  try {
    return fs.readdirSync('/proc/self/fd').length
  } catch {
    return null
  }
}

/** What the open file descriptors point at, by kind (Linux), or null. */
export function fdKinds () {
  try {
    /** @type {Record<string, number>} */
    const kinds = {}
    for (const fd of fs.readdirSync('/proc/self/fd')) {
      let target
      try {
        target = fs.readlinkSync(`/proc/self/fd/${fd}`)
      } catch {
        continue
      }
      const kind = /\.ldb$|\.sst$/.test(target)
        ? 'table'
        : /\/LOCK$/.test(target) ? 'LOCK' : /\/LOG$/.test(target) ? 'LOG' : /MANIFEST-/.test(target) ? 'MANIFEST' : /\.log$/.test(target) ? 'WAL' : 'other'
      kinds[kind] = (kinds[kind] || 0) + 1
    }
    return kinds
  } catch {
    return null
  }
}

/** Resident memory from /proc/self/status (bytes), or from Node. */
export function rss () {
  try {
    const status = fs.readFileSync('/proc/self/status', 'utf8')
    const total = /VmRSS:\s+(\d+) kB/.exec(status)
    const anon = /RssAnon:\s+(\d+) kB/.exec(status)
    const file = /RssFile:\s+(\d+) kB/.exec(status)
    return {
      rssBytes: total ? Number(total[1]) * 1024 : process.memoryUsage().rss,
      anonBytes: anon ? Number(anon[1]) * 1024 : null,
      fileBytes: file ? Number(file[1]) * 1024 : null
    }
  } catch {
    return { rssBytes: process.memoryUsage().rss, anonBytes: null, fileBytes: null }
  }
}

/** Threads of this process (Linux), or null. */
export function threads () {
  try {
    const m = /Threads:\s+(\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))
    return m ? Number(m[1]) : null
  } catch {
    return null
  }
}
