// The clients of bench/transactions.js: async loops in one process, each
// with its own seeded PRNG, doing reads and transfers on a side for a fixed
// time. What they count: operations completed (reads, transfers, declined
// transfers), latency of each from its start to its end (retries
// included; all of them are returned, in ms), retries, and operations that
// gave up (by error code).

import { performance } from 'node:perf_hooks'
import { codes } from 'levelkit'
import { prng } from 'levelkit-testkit/prng'
import { quantile } from './stats.js'
import { MAX_AMOUNT } from './transactions-sides.js'

/** Errors that end one operation, not the run: counted as "gave up". */
export const GIVE_UPS = Object.freeze([codes.CONFLICT, codes.DEADLOCK, codes.LOCK_TIMEOUT, codes.TX_EXPIRED])

/**
 * Count a transaction that gave up (one of GIVE_UPS) by its code; rethrow
 * anything else.
 * @param {unknown} err @param {Record<string, number>} gaveUpBy
 */
export function countGiveUp (err, gaveUpBy) {
  const code = /** @type {any} */ (err)?.code
  if (!GIVE_UPS.includes(code)) throw err
  gaveUpBy[code] = (gaveUpBy[code] ?? 0) + 1
}

/**
 * @typedef {{
 *   ops: number, reads: number, transfers: number, declined: number, retries: number,
 *   gaveUp: number, gaveUpBy: Record<string, number>, ms: number, opsPerSec: number, p50Ms: number, p99Ms: number,
 *   latencies: number[]
 * }} DriveResult
 */

/**
 * Run `loops` client loops against `side` until `seconds` have passed (an
 * operation started before then is finished and counted). Each operation
 * is a read of two distinct accounts with probability `readShare`, else a
 * transfer of 1..MAX_AMOUNT between two distinct accounts; `choose(rand)`
 * picks an account. Client c draws from prng(seed + c), so sides given the
 * same seed see the same sequences.
 * @param {{
 *   side: import('./transactions-sides.js').Side, loops: number, seconds: number, seed: number,
 *   readShare: number, choose: (rand: () => number) => number
 * }} cell
 * @returns {Promise<DriveResult>}
 */
export async function drive ({ side, loops, seconds, seed, readShare, choose }) {
  /** @type {number[]} */
  const latencies = []
  const counts = { retries: 0 }
  let reads = 0
  let transfers = 0
  let declined = 0
  /** @type {Record<string, number>} */
  const gaveUpBy = {}
  const start = performance.now()
  const deadline = start + seconds * 1000
  const client = async (/** @type {number} */ c) => {
    const rand = prng(seed + c)
    while (performance.now() < deadline) {
      const read = rand() < readShare
      const a = choose(rand)
      let b
      do b = choose(rand)
      while (b === a)
      const amount = 1 + rand.int(MAX_AMOUNT)
      const t0 = performance.now()
      try {
        if (read) {
          await side.read(a, b, counts)
          reads++
        } else if (await side.transfer(a, b, amount, counts)) {
          transfers++
        } else {
          declined++
        }
        latencies.push(performance.now() - t0)
      } catch (err) {
        countGiveUp(err, gaveUpBy)
      }
    }
  }
  await Promise.all(Array.from({ length: loops }, (_, c) => client(c)))
  const ms = performance.now() - start
  const ops = reads + transfers + declined
  return {
    ops,
    reads,
    transfers,
    declined,
    retries: counts.retries,
    gaveUp: Object.values(gaveUpBy).reduce((x, y) => x + y, 0),
    gaveUpBy,
    ms,
    opsPerSec: ops / (ms / 1000),
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    latencies
  }
}
