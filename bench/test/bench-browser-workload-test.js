// Smoke test of bench/browser-workload.js: one run in Chromium with a tiny
// data set and a few operations per row, then the shape of what it prints
// and writes (CSV, JSON, SVG). It never asserts a time: a benchmark
// measures, it is not a timed test. It does assert what the counts must be
// on any machine: Dexie makes one IndexedDB transaction per operation here.

import test from 'tape'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const script = fileURLToPath(new URL('../browser-workload.js', import.meta.url))
const OPS = ['getUser', 'last50', 'getChats', 'checkChatMember', 'createUser', 'createUserC', 'createChat', 'createChatC', 'addChatMessage', 'addChatMessageC', 'getUserCold', 'last50Cold', 'getChatsCold', 'checkChatMemberCold']
const N = 6

/** @param {string[]} args @returns {Promise<{ code: number, stdout: string, stderr: string }>} */
function run (args) {
  return new Promise(resolve => {
    execFile(process.execPath, [script, ...args], { timeout: 120000 }, (err, stdout, stderr) => {
      resolve({ code: err ? /** @type {any} */ (err).code ?? 1 : 0, stdout, stderr })
    })
  })
}

test('bench/browser-workload.js with a tiny data set', { timeout: 130000 }, async t => {
  const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-browser-'))
  try {
    const { code, stdout, stderr } = await run([
      '--runs', '1', '--users', '40', '--chats', '4', '--members', '5', '--messages', '120',
      '--n', String(N), '--slices', '2', '--concurrency', '4', '--chunk', '50', '--no-warmup',
      '--ops', OPS.join(','), '--trace', '--profile', '--out', out
    ])
    t.is(code, 0, `exit 0${code ? `: ${stderr}${stdout}` : ''}`)
    t.notOk(/PROBLEM/.test(stdout), 'the sides answered the same, and ChatStore check() is clean')
    for (const label of ['getUser', 'last 50 messages', 'a user\'s chats', 'membership', 'createUser, 4 in flight', 'createChat', 'addChatMessage, 4 in flight', 'getUser, cold (second tab)', 'membership, cold (second tab)', 'bulk preload (164 records)', 'stored (storage.estimate)', 'bundle, minified', 'bundle, gzipped']) {
      t.ok(stdout.includes(label), `table row: ${label}`)
    }

    // --trace: one operation of each row, and each table's part of the preload, by request and namespace.
    t.match(stdout, /createChat, levelkit: +1 tx: 1 readwrite \[[^\]]*put chats[^\]]*\]/, 'the trace of a createChat')
    // ChatStore's users are native (ChatStore.native): a new user and its username are one put(), no claim of the username.
    const createUser = /createUser, levelkit: +1 tx: 1 readwrite \[([^\]]*)\]/.exec(stdout)
    t.ok(createUser !== null && createUser[1].split(', ').filter(r => /^put users \(\{/.test(r)).length === 1 && !createUser[1].includes('users.idx'), `the trace of a createUser: one put of the user, no request on the username's entries (${createUser?.[1]})`)
    for (const table of ['users', 'chats', 'messages']) {
      t.match(stdout, new RegExp(`preload of ${table} \\(all of it\\), levelkit: +\\d+ tx`), `the trace of the preload's ${table}`)
      for (const side of ['levelkit', 'dexie']) {
        t.match(stdout, new RegExp(`preload of ${table}, per record, ${side}: +[\\d.]+ requests, [\\d.]+ tx: `), `the preload's ${table} per record, ${side}`)
      }
    }
    // Each put with its value's shape: a chat is Dexie's one add() of an object with its members.
    t.match(stdout, /preload of chats, per record, dexie: +1\.00 requests, [\d.]+ tx: 1\.00 add object \(\{ [^)]*members: array 5[^)]*\}\)/, 'Dexie\'s chat: one add() of an object with its members')
    t.match(stdout, /preload of chats, per record, levelkit: .*1\.00 put chats \((bytes|string)\)/, 'levelkit\'s chat record: its put and its value\'s shape')
    // --profile: main-thread time per operation and where it went, per row and side.
    t.ok(stdout.includes('CPU profiles (run 1)'), 'the CPU profiles')
    for (const what of ['createChat, levelkit', 'createChat, dexie', 'preload (per 1,000 records), levelkit alone, levelkit']) {
      t.match(stdout, new RegExp(`${what.replace(/[(),]/g, c => `\\${c}`)}: busy [\\d.]+ ms/op`), `a profile: ${what}`)
    }
    t.match(stdout, /\n {4}self: .+\n {4}inclusive: /, 'self and inclusive times by function')
    // CPU per operation and the time inside native calls, per row and side.
    t.match(stdout, /operation +CPU ms\/op lk: main thread +all Chromium +Dexie: main thread +all Chromium/, 'the CPU table')
    t.match(stdout, /\n {2}createChat +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+× .*transaction [\d.]+.* \| .*transaction [\d.]+/, 'a CPU row: both sides, and their native calls')
    t.match(stdout, /\n {2}bulk preload \(per 1,000 records\) +[\d.,]+ +[\d.,]+ +[\d.,]+ +[\d.,]+ +[\d.]+×/, 'the preload\'s CPU row: both sides')
    for (const table of ['users', 'chats', 'messages']) {
      t.match(stdout, new RegExp(`\\n {4}preload of ${table} \\(per 1,000\\) +[\\d.,]+ +[\\d.,]+ +[\\d.,]+ +[\\d.,]+ +(?:[\\d.]+×|n/a)`), `the preload's CPU row of ${table}: both sides (n/a where Dexie's part took less than a tick)`)
    }

    const dirs = readdirSync(out).filter(name => name.startsWith('browser-workload-'))
    t.is(dirs.length, 1, 'one output folder')
    const dir = join(out, dirs[0])

    const lines = readFileSync(join(dir, 'results.csv'), 'utf8').trimEnd().split('\n')
    t.is(lines[0], 'run,operation,label,side,concurrency,ops,ms,ops_per_sec,idb_tx,idb_tx_readwrite,idb_requests,cursor_steps,locks', 'CSV header')
    const rows = lines.slice(1).map(line => line.replace(/"[^"]*"/, 'label').split(','))
    t.is(rows.length, (OPS.length + 1) * 2, 'one row per operation (and the preload) and side')
    for (const op of [...OPS, 'preload']) {
      t.same(rows.filter(row => row[1] === op).map(row => row[3]).sort(), ['dexie', 'levelkit'], `${op}: both sides`)
    }
    t.ok(rows.every(row => Number(row[7]) > 0), 'a rate on every row')
    // levelkit's reads may make none: the tab holding the leased lock answers them from its lease cache.
    const writes = ['createUser', 'createUserC', 'createChat', 'createChatC', 'addChatMessage', 'addChatMessageC', 'preload']
    t.ok(rows.every(row => row[3] === 'levelkit' && !writes.includes(row[1]) ? Number(row[8]) >= 0 : Number(row[8]) > 0), 'IndexedDB transactions on every row of Dexie, and on every write row of levelkit')

    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
    t.is(summary.benchmark, 'browser-workload')
    t.same(Object.keys(summary.summary), OPS, 'a summary per row, in order')
    for (const op of OPS) {
      const s = summary.summary[op]
      t.ok(s.levelkitOpsPerSec > 0 && s.dexieOpsPerSec > 0 && s.ratio > 0, `${op}: ops/s of both sides and a ratio`)
      t.is(s.perOp.dexie.tx, 1, `${op}: Dexie makes one IndexedDB transaction per operation`)
      t.ok(s.perOp.dexie.cpuMain > 0 && s.perOp.dexie.cpuAll >= 0, `${op}: CPU per operation of Dexie's main thread, and of all of Chromium`)
      t.ok(s.native.dexie.transaction > 0, `${op}: time inside Dexie's transaction() calls`)
    }
    // The cold rows read from a second store that holds no lease: no cache answers them.
    for (const op of ['getUserCold', 'checkChatMemberCold']) {
      t.ok(summary.summary[op].perOp.levelkit.requests >= 1, `${op}: levelkit makes an IndexedDB request per operation (${summary.summary[op].perOp.levelkit.requests})`)
    }
    t.is(summary.summary.createChat.perOp.dexie.txReadwrite, 1, 'createChat is one readwrite transaction on Dexie')
    // The Web Lock is leased: taken once, kept while this tab is the only one writing.
    t.ok(summary.summary.createUser.perOp.levelkit.locks < 0.5, 'levelkit does not take the cross-tab Web Lock again for each write awaited alone')
    // At most one more in all: the store's first createUser() sets its password-cost mark (ChatStore#countCreated(), once per store; --no-warmup here).
    t.ok(Math.round(summary.summary.createUser.perOp.levelkit.txReadwrite * N) <= N + 1, `a write awaited alone is one readwrite IndexedDB transaction on levelkit too, but for the first (${summary.summary.createUser.perOp.levelkit.txReadwrite})`)
    t.ok(summary.bundles.levelkit.gzip > 0 && summary.bundles.levelkit.gzip < summary.bundles.levelkit.bytes, 'levelkit\'s bundle size, minified and gzipped')
    t.ok(summary.bundles.dexie.gzip > 0 && summary.bundles.dexie.gzip < summary.bundles.dexie.bytes, 'Dexie\'s, too')
    t.ok(summary.preload.levelkit.storedBytes > 0 && summary.preload.dexie.storedBytes > 0, 'the storage estimate grew with each side\'s preload')
    // The preload's garbage is charged to the preload, on both sides: a timed
    // full collection at its end, in its time (and the rows after it start
    // from a collected heap).
    t.match(stdout, /levelkit users [\d.]+ s, chats [\d.]+ s, messages [\d.]+ s, its final gc\(\) [\d,]+ ms; Dexie users [\d.]+ s, chats [\d.]+ s, messages [\d.]+ s, its final gc\(\) [\d,]+ ms\./, 'the preload\'s time by table and its final gc(), both sides')
    t.ok(stdout.includes('each side\'s preload ends with a full garbage collection'), 'the method, said under the table')
    for (const side of ['levelkit', 'dexie']) {
      const { ms } = summary.runs[0].preload[side]
      t.ok(ms.gc > 0, `${side}: its preload's final gc() took time (${ms.gc} ms)`)
      const csvMs = Number(rows.find(row => row[1] === 'preload' && row[3] === side)[6])
      t.ok(Math.abs(csvMs - (ms.users + ms.chats + ms.messages + ms.gc)) < 1e-6, `${side}: the preload's time in the CSV includes its gc() (${csvMs} ms)`)
    }
    for (const side of ['levelkit', 'dexie']) {
      const byTable = summary.preload[side].cpuByTable
      t.ok(['users', 'chats', 'messages'].every(table => byTable[table].main > 0 && Number.isFinite(byTable[table].all)), `${side}: the preload's CPU by table in the summary`)
    }
    t.match(readFileSync(join(dir, 'browser-workload.svg'), 'utf8'), /^<svg[\s\S]*Dexie[\s\S]*<\/svg>\n$/, 'an SVG plot')
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})
