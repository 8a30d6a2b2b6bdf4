// What a layout costs IndexedDB, without any library: createChat with
// --members members, a chat record rewritten (addChatMessage's write) and a
// cold "user's chats" (a fresh transaction, no cache) on raw IndexedDB in
// Chromium, in six layouts (bench/lib/idb-layouts-page.js): A levelkit's
// before session 13 (a list per user, 23 puts per chat), B Dexie's (one
// add() into a store with a multiEntry index), C the chats in an object
// store of their own with a native multiEntry index on their members, D the
// users' lists in buckets of 256 user ids, E the relation's lists in an
// object store of their own with a native multiEntry index (levelkit's
// since session 13), F E with a copy of the chat record in its list's
// entry (a user's chats in one getAll()); and createUser with a unique
// username in three (A: the username's entry and the record, B: one add()
// into a store with a unique index, C: the record in a store of its own
// with a native unique index); and a bulk load of --bulk chats in one
// transaction in four (G levelkit's since session 20: the record and the
// member list in browser-level's store, the list's slotted entry carrying
// the record in the lists store; H G without the member list in
// browser-level's store; C; B), the native work per chat of
// bench/browser-workload.js' preload. Issue 15: the rows of
// bench/browser-workload.js that stay below Dexie are request counts; this
// measures which layouts could reach the goals before one is built.
//
// Each run: a fresh Chromium profile on disk, --users users, then per
// layout --warm createChats, then --slices slices of --n createChats, the
// layouts interleaved (the order alternating per slice), then the chat
// rewrites, the createUsers and the cold reads the same way. Ratios are to B (Dexie's layout), per run, then the
// median over runs.
//
// Usage: node bench/idb-layouts.js [--runs 3] [--users 2000] [--members 20]
//   [--warm 200] [--n 30] [--reads 100] [--bulk 200] [--slices 8] [--seed 1]

import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { bundleForBrowser, launchPersistentChromium, modulePage, serve } from '../test/util/browser.js'
import { median, fmt, parseCount } from './lib/stats.js'
import { parseCli, failWith, optionOf, printTable } from './lib/seeds-common.js'

const NAME = 'idb-layouts'
const CREATE = ['A', 'B', 'C', 'D', 'E', 'F']
const UPDATE = ['A', 'B', 'C', 'E', 'F']
const USER = ['A', 'B', 'C']
const COLD = ['A', 'B', 'C', 'E', 'F']
const BULK = ['G', 'H', 'C', 'B']
const BULK_LABELS = /** @type {Record<string, string>} */ ({
  G: 'G levelkit today (record + member list + slotted entry)',
  H: 'H G without the member list (the entry is the list)',
  C: 'C records with their members in a store of their own',
  B: 'B Dexie (add() with a multiEntry index)'
})
const LABELS = /** @type {Record<string, string>} */ ({
  A: 'A levelkit today (a list per user)',
  B: 'B Dexie (multiEntry index)',
  C: 'C records in a store with a native index',
  D: 'D users\' lists in buckets of 256',
  E: 'E relation lists in a store with a native index',
  F: 'F E, the chat record copied into its list\'s entry'
})
const USER_LABELS = /** @type {Record<string, string>} */ ({
  A: 'A username entry + record (levelkit today)',
  B: 'B Dexie (add() with a unique index)',
  C: 'C record in a store with a native unique index'
})
const USAGE = `Usage: node bench/${NAME}.js [options]
  --runs K      runs, each a fresh Chromium profile (default 3)
  --users N     users (default 2000)
  --members N   members per chat (default 20)
  --warm N      createChats per layout before the measured ones (default 200)
  --n N         createChats, chat rewrites and createUsers per layout and slice (default 30)
  --reads N     cold reads of a user's chats per layout and slice (default 100)
  --bulk N      chats per transaction of the bulk load, per layout and slice (default 200; 0: none)
  --slices N    slices per layout (default 8)
  --seed N      seed of the members chosen and the users read (default 1)`

const args = parseCli(NAME, USAGE, {
  runs: { type: 'string', default: '3' },
  users: { type: 'string', default: '2000' },
  members: { type: 'string', default: '20' },
  warm: { type: 'string', default: '200' },
  n: { type: 'string', default: '30' },
  reads: { type: 'string', default: '100' },
  bulk: { type: 'string', default: '200' },
  slices: { type: 'string', default: '8' },
  seed: { type: 'string', default: '1' }
})
/** @param {string} flag */
const count = flag => optionOf(NAME, USAGE, () => parseCount(args[flag]))
const opts = Object.fromEntries(['runs', 'users', 'members', 'warm', 'n', 'reads', 'slices', 'seed'].map(flag => [flag, count(flag)]))
// 0 allowed: no bulk load.
opts.bulk = args.bulk === '0' ? 0 : count('bulk')
if (opts.members > opts.users) failWith(NAME, USAGE, '--members cannot exceed --users')

const code = await bundleForBrowser('bench/lib/idb-layouts-page.js')
const server = await serve({ '/': modulePage('/page.js'), '/page.js': { body: code } })
console.log(`${NAME}: createChat with ${opts.members} members and a cold user's chats on raw IndexedDB, ${opts.users} users, ${opts.runs} run(s); load average ${os.loadavg().map(v => v.toFixed(2)).join(' ')}`)

/** @type {Array<Record<string, Record<string, number>>>} per run: kind -> layout -> ops/s (median of slices) */
const perRun = []
/** @type {Record<string, number>} chats found per cold read, by layout (all runs) */
const found = {}
/** @type {Record<string, number>} */
const reads = {}
try {
  for (let run = 1; run <= opts.runs; run++) {
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), `levelkit-${NAME}-`))
    const context = await launchPersistentChromium(profile)
    try {
      const page = context.pages()[0] ?? await context.newPage()
      await page.goto(server.url + '/')
      await page.waitForFunction(() => /** @type {any} */ (window).idbLayouts !== undefined)
      /** @param {string} fn @param {any[]} a */
      const call = (fn, ...a) => page.evaluate(([f, x]) => /** @type {any} */ (window).idbLayouts[f](...x), /** @type {[string, any[]]} */ ([fn, a]))
      await call('setup', { users: opts.users, members: opts.members, seed: opts.seed + run - 1 })
      for (const layout of CREATE) await call('slice', 'create', layout, opts.warm)
      /** @type {Record<string, Record<string, number[]>>} */
      const slices = { create: {}, update: {}, user: {}, cold: {} }
      for (const [kind, layouts, n] of /** @type {Array<['create' | 'update' | 'user' | 'cold', string[], number]>} */ ([['create', CREATE, opts.n], ['update', UPDATE, opts.n], ['user', USER, opts.n], ['cold', COLD, opts.reads]])) {
        for (let s = 0; s < opts.slices; s++) {
          for (const layout of s % 2 === 0 ? layouts : [...layouts].reverse()) {
            const result = await call('slice', kind, layout, n)
            ;(slices[kind][layout] ??= []).push(result.opsPerSec)
            if (kind === 'cold') {
              found[layout] = (found[layout] ?? 0) + result.found
              reads[layout] = (reads[layout] ?? 0) + n
            }
          }
        }
      }
      /** @type {Record<string, number[]>} chats/s of each bulk slice, by layout */
      const bulk = {}
      if (opts.bulk > 0) {
        for (const layout of BULK) await call('bulk', layout, opts.bulk)
        for (let s = 0; s < opts.slices; s++) {
          for (const layout of s % 2 === 0 ? BULK : [...BULK].reverse()) {
            const result = await call('bulk', layout, opts.bulk)
            ;(bulk[layout] ??= []).push(opts.bulk / (result.ms / 1000))
          }
        }
      }
      await call('close')
      perRun.push(Object.fromEntries(Object.entries({ ...slices, bulk }).map(([kind, by]) => [kind, Object.fromEntries(Object.entries(by).map(([layout, rates]) => [layout, median(rates)]))])))
      console.log(`  run ${run}: load ${os.loadavg()[0].toFixed(2)}`)
    } finally {
      await context.close()
      fs.rmSync(profile, { recursive: true, force: true })
    }
  }
} finally {
  await server.close()
}

/** @param {string} kind @param {string} layout */
const ratio = (kind, layout) => median(perRun.map(r => r[kind][layout] / r[kind].B))
/** @param {string} kind @param {string} layout */
const rate = (kind, layout) => fmt(median(perRun.map(r => r[kind][layout])))
const table = [['layout', 'createChat ops/s', 'vs B', 'chat rewrite ops/s', 'vs B', 'cold user\'s chats ops/s', 'vs B', 'chats per read']]
for (const layout of CREATE) {
  const cold = COLD.includes(layout)
  const update = UPDATE.includes(layout)
  table.push([
    LABELS[layout], rate('create', layout), `${ratio('create', layout).toFixed(2)}×`,
    update ? rate('update', layout) : '', update ? `${ratio('update', layout).toFixed(2)}×` : '',
    cold ? rate('cold', layout) : '', cold ? `${ratio('cold', layout).toFixed(2)}×` : '',
    cold ? fmt(found[layout] / reads[layout], 2) : ''
  ])
}
console.log()
printTable(table)
const users = [['createUser layout', 'ops/s', 'vs B']]
for (const layout of USER) users.push([USER_LABELS[layout], rate('user', layout), `${ratio('user', layout).toFixed(2)}×`])
console.log()
printTable(users)
if (opts.bulk > 0) {
  const bulk = [[`bulk load, ${opts.bulk} chats per transaction`, 'chats/s', 'ms per chat', 'vs B']]
  for (const layout of BULK) bulk.push([BULK_LABELS[layout], rate('bulk', layout), fmt(1000 / median(perRun.map(r => r.bulk[layout])), 3), `${ratio('bulk', layout).toFixed(2)}×`])
  console.log()
  printTable(bulk)
}
console.log()
console.log(`  Medians over ${opts.runs} run(s) of the median slice; "vs B": the ratio to Dexie's layout within each run, then the median. Load average at the end ${os.loadavg().map(v => v.toFixed(2)).join(' ')}.`)
