// Smoke test of bench/idb-layouts.js: one run in Chromium with a tiny data
// set, then the shape of what it prints. It never asserts a time.

import test from 'tape'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const script = fileURLToPath(new URL('../idb-layouts.js', import.meta.url))

test('bench/idb-layouts.js with a tiny data set', { timeout: 90000 }, async t => {
  const { code, stdout, stderr } = await new Promise(resolve => {
    execFile(process.execPath, [script, '--runs', '1', '--users', '60', '--members', '5', '--warm', '4', '--n', '3', '--reads', '5', '--bulk', '20', '--slices', '2'], { timeout: 80000 }, (err, stdout, stderr) => {
      resolve({ code: err ? /** @type {any} */ (err).code ?? 1 : 0, stdout, stderr })
    })
  })
  t.is(code, 0, `exit 0${code ? `: ${stderr}${stdout}` : ''}`)
  for (const layout of ['A levelkit today', 'B Dexie', 'C records in a store with a native index', 'D users\' lists in buckets', 'E relation lists in a store with a native index', 'F E, the chat record copied into its list\'s entry']) {
    t.match(stdout, new RegExp(`${layout}.* [\\d,]+ +[\\d.]+×`), `a row for ${layout}, with a rate and a ratio`)
  }
  t.match(stdout, /B Dexie \(multiEntry index\) +[\d,]+ +1\.00× +[\d,]+ +1\.00× +[\d,]+ +1\.00×/, 'Dexie\'s layout is the reference of every column')
  for (const layout of ['A username entry \\+ record', 'B Dexie \\(add\\(\\) with a unique index\\)', 'C record in a store with a native unique index']) {
    t.match(stdout, new RegExp(`${layout}.* [\\d,]+ +[\\d.]+×`), `a createUser row for ${layout}, with a rate and a ratio`)
  }
  // Every layout that answers a user's chats finds the same number of them on average, give or take the random members.
  const perRead = [...stdout.matchAll(/× +([\d.]+)\n/g)].map(m => Number(m[1]))
  t.is(perRead.length, 5, 'chats per read, for the five layouts that read')
  t.ok(perRead.every(v => v > 0), `each finds chats (${perRead.join(', ')})`)

  // --bulk (default 200, 20 here): a bulk load of chats in four layouts, Dexie's the reference.
  for (const layout of ['G levelkit today', 'H G without the member list', 'C records with their members', 'B Dexie \\(add\\(\\) with a multiEntry index\\)']) {
    t.match(stdout, new RegExp(`${layout}.* [\\d,]+ +[\\d.]+ +[\\d.]+×`), `a bulk load row for ${layout}, with a rate, ms per chat and a ratio`)
  }
  t.match(stdout, /B Dexie \(add\(\) with a multiEntry index\) +[\d,]+ +[\d.]+ +1\.00×/, 'Dexie\'s layout is the bulk load\'s reference')

  const usage = await new Promise(resolve => execFile(process.execPath, [script, '--members', '0'], (err, stdout, stderr) => resolve({ code: /** @type {any} */ (err)?.code, stderr })))
  t.is(/** @type {any} */ (usage).code, 2, 'a bad option is a usage error')
})
