// The sides of bench/transactions.js: the same two operations on bank
// accounts { id, balance } through each levelkit mode and through
// better-sqlite3.
//   read(a, b)               read both balances
//   transfer(a, b, amount)   move `amount` from a to b; declined (false,
//                            nothing written) when a holds less
// Money is only ever moved, so the sum of the balances never changes and no
// balance goes below zero: accountsInvariant() and the SQLite side's
// invariant() check that after each cell.

import { codes } from 'levelkit'
import Database from 'better-sqlite3'

export const INITIAL_BALANCE = 1000
/** Transfers move 1..MAX_AMOUNT. */
export const MAX_AMOUNT = 10

/**
 * levelkit's modes, in the order the tables show them.
 * `versioned`: the collection is declared versioned. Only the mode that
 * uses versions has them: they cost every write one more op (and the
 * counter one per batch), which the other modes should not pay.
 */
export const MODES = Object.freeze({
  plain: { label: 'plain writes', versioned: false },
  versioned: { label: 'versioned writes', versioned: true },
  optimistic: { label: 'optimistic tx', versioned: false },
  soft: { label: 'soft-lock tx', versioned: false },
  hard: { label: 'hard-lock tx', versioned: false },
  write: { label: 'db.write()', versioned: false },
  durable: { label: 'durable db.write()', versioned: false },
  unsafe: { label: 'unsafe (no tx)', versioned: false }
})

/**
 * The modes run by default: every one but `unsafe`, which reads both
 * balances with plain get()s and writes them back with patches, so
 * concurrent transfers overwrite each other (lost updates): it is there to
 * show that the invariant check catches that.
 */
export const DEFAULT_MODES = /** @type {Array<keyof typeof MODES>} */ (Object.keys(MODES).filter(mode => mode !== 'unsafe'))

/** @typedef {keyof typeof MODES} Mode */
/** @typedef {{ retries: number }} Counts what a side counts while it runs */
/**
 * @typedef {{
 *   read (a: number, b: number, counts: Counts): unknown,
 *   transfer (a: number, b: number, amount: number, counts: Counts): boolean | Promise<boolean>
 * }} Side
 */

/**
 * Create accounts 1..n with INITIAL_BALANCE each.
 * @param {any} db a levelkit database @param {any} accounts its collection @param {number} n
 */
export async function populateAccounts (db, accounts, n) {
  for (let i = 0; i < n; i += 1000) {
    await db.write(async (/** @type {any} */ w) => {
      const scoped = accounts.in(w)
      for (let k = i; k < Math.min(n, i + 1000); k++) await scoped.insert({ balance: INITIAL_BALANCE })
    })
  }
}

/**
 * The invariant of n accounts: all there, the sum unchanged, none negative.
 * @param {any} accounts a levelkit collection @param {number} n
 */
export async function accountsInvariant (accounts, n) {
  let count = 0
  let sum = 0
  let min = Infinity
  for (const { balance } of await accounts.query().all()) {
    count++
    sum += balance
    if (balance < min) min = balance
  }
  return invariantOf(count, sum, min, n)
}

/** @param {number} count @param {number} sum @param {number} min @param {number} n */
function invariantOf (count, sum, min, n) {
  const expected = n * INITIAL_BALANCE
  return { ok: count === n && sum === expected && min >= 0, count, sum, min, expected }
}

// Thrown by an update function to decline a transfer: levelkit rejects the
// update with LEVELKIT_INVALID, this as its cause, and writes nothing.
const DECLINED = new Error('not enough money')

/** @param {unknown} err */
const declined = err => /** @type {any} */ (err)?.cause === DECLINED

/** @param {number} amount */
const debit = amount => (/** @type {any} */ r) => {
  if (r.balance < amount) throw DECLINED
  return { ...r, balance: r.balance - amount }
}

/** @param {number} amount */
const credit = amount => (/** @type {any} */ r) => ({ ...r, balance: r.balance + amount })

/**
 * One levelkit mode over `accounts`.
 * - plain: `update(id, fn)` of a, then of b, outside transactions (each
 *   atomic on its own; reads are plain `get`s).
 * - versioned: `version()` then `get()` of a, `update(a, patch, { ifVersion })`,
 *   again from the version on LEVELKIT_CONFLICT; then the same for b.
 * - optimistic, soft, hard: `db.transaction()` reading both accounts, then
 *   updating both; soft and hard read with `{ lock }`, in id order, so
 *   transfers never deadlock. Reads are a transaction reading both without
 *   locks (so they wait for hard locks and not for soft ones).
 * - write, durable: both updates in one `db.write()`, durable with
 *   `{ sync: true }` (one flush per group commit).
 * - unsafe: get() both, then update() both with patches computed from what
 *   was read: loses updates under concurrency (see DEFAULT_MODES).
 * @param {Mode} mode
 * @param {any} db
 * @param {any} accounts
 * @param {{ maxRetries: number }} txOptions
 * @returns {Side}
 */
export function levelkitSide (mode, db, accounts, txOptions) {
  const plainRead = async (/** @type {number} */ a, /** @type {number} */ b) => {
    await accounts.get(a)
    await accounts.get(b)
  }
  switch (mode) {
    case 'plain':
      return {
        read: plainRead,
        async transfer (a, b, amount) {
          try {
            await accounts.update(a, debit(amount))
          } catch (err) {
            if (declined(err)) return false
            throw err
          }
          await accounts.update(b, credit(amount))
          return true
        }
      }
    case 'versioned':
      return {
        read: plainRead,
        async transfer (a, b, amount, counts) {
          if (!(await versionedAdd(accounts, a, -amount, counts))) return false
          await versionedAdd(accounts, b, amount, counts)
          return true
        }
      }
    case 'optimistic':
    case 'soft':
    case 'hard': {
      const lock = mode === 'optimistic' ? undefined : { lock: mode }
      return {
        read: (a, b, counts) => db.transaction(async (/** @type {any} */ tx, /** @type {number} */ attempt) => {
          if (attempt > 1) counts.retries++
          const scoped = accounts.in(tx)
          await scoped.get(a)
          await scoped.get(b)
        }, txOptions),
        transfer: (a, b, amount, counts) => db.transaction(async (/** @type {any} */ tx, /** @type {number} */ attempt) => {
          if (attempt > 1) counts.retries++
          const scoped = accounts.in(tx)
          const [first, second] = a < b ? [a, b] : [b, a]
          const one = await scoped.get(first, lock)
          const two = await scoped.get(second, lock)
          const [from, to] = first === a ? [one, two] : [two, one]
          if (from.balance < amount) return false
          await scoped.update(a, { balance: from.balance - amount })
          await scoped.update(b, { balance: to.balance + amount })
          return true
        }, txOptions)
      }
    }
    case 'write':
    case 'durable': {
      const options = { sync: mode === 'durable' }
      return {
        read: plainRead,
        async transfer (a, b, amount) {
          try {
            await db.write(async (/** @type {any} */ w) => {
              const scoped = accounts.in(w)
              await scoped.update(a, debit(amount))
              await scoped.update(b, credit(amount))
            }, options)
            return true
          } catch (err) {
            if (declined(err)) return false
            throw err
          }
        }
      }
    }
    case 'unsafe':
      return {
        read: plainRead,
        async transfer (a, b, amount) {
          const from = await accounts.get(a)
          const to = await accounts.get(b)
          if (from.balance < amount) return false
          await accounts.update(a, { balance: from.balance - amount })
          await accounts.update(b, { balance: to.balance + amount })
          return true
        }
      }
    default:
      throw new Error(`Unknown mode ${JSON.stringify(mode)}`)
  }
}

/**
 * Add `delta` to a balance with a versioned write: read the version, then
 * the record, write with ifVersion, and start again on a conflict. False
 * (nothing written) if the balance would go below zero.
 * @param {any} accounts @param {number} id @param {number} delta @param {Counts} counts
 */
async function versionedAdd (accounts, id, delta, counts) {
  for (;;) {
    const version = await accounts.version(id)
    const { balance } = await accounts.get(id)
    if (balance + delta < 0) return false
    try {
      await accounts.update(id, { balance: balance + delta }, { ifVersion: version })
      return true
    } catch (err) {
      if (/** @type {any} */ (err).code !== codes.CONFLICT) throw err
      counts.retries++
    }
  }
}

/**
 * The SQLite side: a table accounts (id INTEGER PRIMARY KEY, balance),
 * prepared statements, a transfer in `BEGIN IMMEDIATE` (it reads, then
 * writes: taking the write lock at once is what a competent SQLite user
 * does), reads in a deferred transaction (one snapshot for both). WAL mode
 * on a file; `synchronous` is NORMAL (relaxed: no fsync per commit) or
 * FULL (durable: an fsync of the WAL per commit). ':memory:' for a
 * database in memory.
 * @param {string} file
 * @param {'NORMAL' | 'FULL'} synchronous
 * @param {number} n accounts
 */
export function openSqliteSide (file, synchronous, n) {
  const sql = new Database(file)
  if (file !== ':memory:') sql.pragma('journal_mode = WAL')
  sql.pragma(`synchronous = ${synchronous}`)
  sql.exec('CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)')
  const insert = sql.prepare('INSERT INTO accounts (id, balance) VALUES (?, ?)')
  sql.transaction(() => {
    for (let id = 1; id <= n; id++) insert.run(id, INITIAL_BALANCE)
  })()
  const balanceOf = sql.prepare('SELECT balance FROM accounts WHERE id = ?').pluck()
  const setBalance = sql.prepare('UPDATE accounts SET balance = ? WHERE id = ?')
  const totals = sql.prepare('SELECT count(*) AS count, coalesce(sum(balance), 0) AS sum, min(balance) AS min FROM accounts')
  const transfer = sql.transaction((/** @type {number} */ a, /** @type {number} */ b, /** @type {number} */ amount) => {
    const from = /** @type {number} */ (balanceOf.get(a))
    const to = /** @type {number} */ (balanceOf.get(b))
    if (from < amount) return false
    setBalance.run(from - amount, a)
    setBalance.run(to + amount, b)
    return true
  })
  const read = sql.transaction((/** @type {number} */ a, /** @type {number} */ b) => [balanceOf.get(a), balanceOf.get(b)])
  return {
    sql,
    /** @param {number} a @param {number} b */
    read: (a, b) => read(a, b),
    /** @param {number} a @param {number} b @param {number} amount @returns {boolean} */
    transfer: (a, b, amount) => transfer.immediate(a, b, amount),
    invariant () {
      const { count, sum, min } = /** @type {any} */ (totals.get())
      return invariantOf(count, sum, min ?? Infinity, n)
    },
    close () {
      sql.close()
    }
  }
}
