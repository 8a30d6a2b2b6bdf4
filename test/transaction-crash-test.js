// Crash safety of transactions: a child process
// (test/fixtures/transaction-crash-worker.js) runs concurrent random bank
// transfers between 1,000 accounts on a LevelDB levelkit database, each a
// db.transaction() (optimistic or with soft locks, some with { sync: true }),
// and is killed with SIGKILL at a random moment; several times in a row, on
// the same database. After each kill the database is reopened here and
// - db.check() finds nothing wrong (records, indexes, ledger blocks);
// - the total of the balances is unchanged and no balance is negative;
// - each account's balance is its initial balance plus the deltas of its
//   ledger, and the ledgers hold exactly the two entries of each recorded
//   transfer: every transfer is there entirely or not at all;
// - every transfer the worker acknowledged (db.transaction() resolved, then
//   it wrote the ack line) is there, in this cycle and every later one, and
//   none that it refused for want of funds, nor any that threw.
//
// CRASH_SEED=<n> reproduces the random choices of a run (the kill timing and
// the interleaving of the transactions still vary).

import test from 'tape'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { open } from '../index.js'
import { declare, ACCOUNTS, INITIAL, ABORT } from './fixtures/transaction-crash-worker.js'
import { prng } from './util/prng.js'
import { acknowledged, killCycle, readAckLog } from './util/worker.js'

const WORKER = fileURLToPath(new URL('./fixtures/transaction-crash-worker.js', import.meta.url))
const SEED = process.env.CRASH_SEED ? Number(process.env.CRASH_SEED) : Date.now() % 0x7fffffff
const CYCLES = 10

const show = value => JSON.stringify(value)
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

test(`transactions: bank transfers killed with SIGKILL, ${CYCLES} times on one LevelDB database`, async t => {
  t.comment(`seed ${SEED} (reproduce with CRASH_SEED=${SEED})`)
  const rand = prng(SEED)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'levelkit-tx-crash-'))
  const location = path.join(dir, 'db')
  const state = {
    /** @type {Map<string, any>} every transfer started, by tid */
    started: new Map(),
    /** @type {Map<string, any>} transfers acknowledged as made, by tid: there from then on */
    made: new Map(),
    /** @type {Set<string>} transfers that must never be found: refused for want of funds, or thrown */
    never: new Set()
  }
  const totals = { made: 0, refused: 0, thrown: 0, inFlight: 0, inFlightFound: 0, byMode: {}, synced: 0, transfers: 0 }
  let failed = false

  try {
    const db = await open({ backend: 'leveldb', location })
    const { accounts } = declare(db)
    await db.write(async w => {
      for (let i = 0; i < ACCOUNTS; i++) await accounts.in(w).insert({ balance: INITIAL })
    })
    await db.close()

    for (let cycle = 0; cycle < CYCLES && !failed; cycle++) {
      const logPath = path.join(dir, `ack-${cycle}.log`)
      const wrong = await killCycle(WORKER, [location, logPath, String(rand.int(0x7fffffff)), String(cycle)], async () => {
        await acknowledged(logPath, 51)
        await sleep(rand.int(600))
      })
      if (wrong) {
        t.fail(`cycle ${cycle}: ${wrong}`)
        failed = true
        break
      }
      const problems = await verify(logPath, location, state, totals)
      if (problems.length > 0) {
        failed = true
        t.comment(`seed ${SEED}; database and ack logs kept in ${dir}`)
      }
      if (problems.length > 60) problems.splice(50, Infinity, `... and ${problems.length - 50} more problems`)
      t.deepEqual(problems, [], `cycle ${cycle}: after SIGKILL the total holds, every transfer is whole, and every acknowledged one is there`)
    }

    t.comment(`${totals.made} transfers acknowledged (${show(totals.byMode)}, ${totals.synced} with sync), ${totals.refused} refused for want of funds, ${totals.thrown} thrown; ${totals.inFlight} in flight at a kill, ${totals.inFlightFound} of those found made; ${totals.transfers} transfers in the database`)
    if (!failed) {
      t.ok(totals.made > CYCLES * 50, `the workers acknowledged many transfers (${totals.made})`)
      t.ok(totals.byMode.optimistic > 0 && totals.byMode.soft > 0, 'optimistic and locked transfers were acknowledged')
      t.ok(totals.synced > 0, 'transfers with { sync: true } were acknowledged')
      t.ok(totals.refused > 0 && totals.thrown > 0, 'some were refused and some threw')
      t.ok(totals.inFlight > 0, `kills hit transfers in flight (${totals.inFlight})`)
    }
  } finally {
    if (!failed) fs.rmSync(dir, { recursive: true, force: true })
  }
})

/**
 * Read one cycle's ack log into `state`, reopen the database and check it.
 * Returns the problems found.
 */
async function verify (logPath, location, state, totals) {
  const problems = []
  /** @type {Map<number, any>} this cycle's starts, by n */
  const starts = new Map()
  const acked = new Set()
  for (const entry of readAckLog(logPath)) {
    if (entry.t === 's') {
      starts.set(entry.n, entry)
      state.started.set(entry.tid, entry)
      continue
    }
    const start = starts.get(entry.n)
    if (start === undefined) {
      problems.push(`log: ${show(entry)} before its start`)
      continue
    }
    acked.add(start.tid)
    if (entry.t === 'a') {
      if (entry.moved) {
        state.made.set(start.tid, start)
        totals.made++
        totals.byMode[start.mode] = (totals.byMode[start.mode] ?? 0) + 1
        if (start.sync) totals.synced++
        if (start.abort) problems.push(`transfer ${start.tid} was to throw, but resolved`)
      } else {
        state.never.add(start.tid)
        totals.refused++
      }
    } else if (start.abort && entry.msg === ABORT) {
      state.never.add(start.tid)
      totals.thrown++
    } else {
      problems.push(`transfer ${start.tid} failed unexpectedly: ${entry.code} ${entry.msg}`)
    }
  }
  const inFlight = [...starts.values()].filter(s => !acked.has(s.tid))

  const db = await open({ backend: 'leveldb', location })
  try {
    const { accounts, transfers, ledger } = declare(db)
    const report = await db.check()
    for (const p of report.problems) problems.push(`check(): ${p.type} in ${p.namespace}: ${p.message}`)

    const all = await accounts.query().all()
    if (all.length !== ACCOUNTS) problems.push(`${all.length} accounts, expected ${ACCOUNTS}`)
    const total = all.reduce((sum, a) => sum + a.balance, 0)
    if (total !== ACCOUNTS * INITIAL) problems.push(`the balances add up to ${total}, expected ${ACCOUNTS * INITIAL}`)
    for (const a of all) if (!(a.balance >= 0)) problems.push(`account ${a.id} has balance ${a.balance}`)

    const found = new Map((await transfers.query().all()).map(tr => [tr.tid, tr]))
    totals.transfers = found.size
    for (const [tid, start] of state.made) {
      const tr = found.get(tid)
      if (tr === undefined) problems.push(`acknowledged transfer ${tid} ${show(start)} is missing`)
      else if (tr.from !== start.from || tr.to !== start.to || tr.amount !== start.amount) problems.push(`transfer ${tid} is ${show(tr)}, acknowledged as ${show(start)}`)
    }
    for (const tid of state.never) if (found.has(tid)) problems.push(`transfer ${tid} was refused or threw, yet is recorded: ${show(found.get(tid))}`)
    for (const [tid, tr] of found) {
      const start = state.started.get(tid)
      if (start === undefined) problems.push(`transfer ${tid} ${show(tr)} was never started`)
      else if (tr.from !== start.from || tr.to !== start.to || tr.amount !== start.amount) problems.push(`transfer ${tid} is ${show(tr)}, started as ${show(start)}`)
    }
    for (const start of inFlight) {
      totals.inFlight++
      // Made or not, as a whole: the ledgers and balances say which, below.
      if (found.has(start.tid)) {
        totals.inFlightFound++
        state.made.set(start.tid, start)
      } else {
        state.never.add(start.tid)
      }
    }

    // Each account: its balance is what its ledger says, and its ledger has
    // exactly its side of each recorded transfer.
    const entries = new Map()
    for (const a of all) {
      let sum = 0
      for (const { tid, delta } of await ledger.range(a.id).all()) {
        sum += delta
        const tr = found.get(tid)
        const side = tr === undefined ? undefined : a.id === tr.from ? -tr.amount : a.id === tr.to ? tr.amount : undefined
        if (side !== delta) problems.push(`ledger of account ${a.id}: ${show({ tid, delta })} does not match transfer ${show(tr)}`)
        entries.set(tid, (entries.get(tid) ?? 0) + 1)
      }
      if (a.balance !== INITIAL + sum) problems.push(`account ${a.id} has balance ${a.balance}, its ledger says ${INITIAL + sum}`)
    }
    for (const [tid, tr] of found) {
      if (entries.get(tid) !== 2) problems.push(`transfer ${tid} ${show(tr)} has ${entries.get(tid) ?? 0} ledger entries, expected 2`)
    }
  } finally {
    await db.close()
  }
  return problems
}
