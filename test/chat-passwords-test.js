// ChatStore's password checks on LevelDB: the work a login does must not tell
// an unknown username from an existing one, also after `passwordCost` was
// raised; hashes move to the current cost as their users sign in; and a
// stored hash that does not parse is a coded error, never a match.
//
// Hashing work is measured, not timed: every key derivation is published on
// the diagnostics channel `levelkit:password-derive` with its cost.

import test from 'tape'
import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open } from '../index.js'
import { ChatStore } from '../chat.js'

const OLD = { scryptN: 1024 }
const NEW = { scryptN: 4096 }
const scrypt = (/** @type {number} */ N) => ({ algorithm: 'scrypt', N, r: 8, p: 1 })

/**
 * The key derivations `fn` runs, with their cost.
 * @template T @param {() => Promise<T>} fn
 * @returns {Promise<{ result: T, derivations: any[] }>}
 */
async function derivationsOf (fn) {
  /** @type {any[]} */
  const derivations = []
  const record = (/** @type {any} */ message) => derivations.push(message)
  subscribe('levelkit:password-derive', record)
  try {
    return { result: await fn(), derivations }
  } finally {
    unsubscribe('levelkit:password-derive', record)
  }
}

/**
 * Count the reads that reach the backend (the root database: every
 * sublevel's reads end there).
 * @param {any} level
 */
function countReads (level) {
  const counts = { n: 0 }
  for (const method of ['get', 'getSync', 'getMany', 'has', 'hasMany', 'iterator', 'keys', 'values']) {
    const original = level[method].bind(level)
    level[method] = (/** @type {any[]} */ ...args) => {
      counts.n++
      return original(...args)
    }
  }
  return counts
}

/** A LevelDB directory with users ann, bob and cat, hashed at the OLD cost. */
async function withOldUsers () {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-passwords-'))
  const db = await open({ location: dir })
  const store = await ChatStore.open(db, { passwordCost: OLD })
  for (const name of ['ann', 'bob', 'cat']) await store.createUser({ username: name, password: `pw-${name}` })
  await db.close()
  return dir
}

/** @param {string} dir @param {any} options */
async function reopen (dir, options) {
  const db = await open({ location: dir, readCache: 0 })
  return { db, store: await ChatStore.open(db, options) }
}

test('chat passwords: an unknown username does the key derivation an existing user\'s check does, after passwordCost was raised', async t => {
  const dir = await withOldUsers()
  try {
    const { db, store } = await reopen(dir, { passwordCost: NEW })
    await store.messages.settled() // a purge resumed by the declaration reads too
    const reads = countReads(db.level)

    const existing = await derivationsOf(() => store.verifyPassword('ann', 'wrong'))
    const existingReads = reads.n
    t.is(existing.result, null, 'a wrong password -> null')
    t.same(existing.derivations, [scrypt(1024)], 'checking a user hashed before the raise derives at the cost stored with the hash')

    const unknown = await derivationsOf(() => store.verifyPassword('nobody', 'wrong'))
    t.is(unknown.result, null, 'an unknown username -> null')
    t.same(unknown.derivations, existing.derivations, 'an unknown username derives once, at the cost of the stored hashes (not the raised one)')
    t.is(reads.n - existingReads, existingReads, `both paths read the database the same number of times (${existingReads})`)

    t.same((await derivationsOf(() => store.verifyPassword('bob', 'pw-bob'))).result?.username, 'bob', 'the right password still verifies')
    await db.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('chat passwords: a successful login upgrades the hash to the current cost, and the unknown-user cost follows most stored hashes', async t => {
  const dir = await withOldUsers()
  try {
    let { db, store } = await reopen(dir, { passwordCost: NEW })
    const stored = async (/** @type {number} */ id) => (await store.users.get(id)).passwordHash

    const first = await derivationsOf(() => store.verifyPassword('ann', 'pw-ann'))
    t.is(first.result?.id, 1, 'ann signs in')
    t.same(first.derivations, [scrypt(1024), scrypt(4096)], 'her old hash is checked, then a new one made at the current cost')
    t.match(await stored(1), /^scrypt\$4096\$8\$1\$/, 'and stored')
    t.same((await derivationsOf(() => store.verifyPassword('ann', 'pw-ann'))).derivations, [scrypt(4096)], 'the next sign-in checks the new hash only')
    t.is((await store.verifyPassword('ann', 'pw-ann'))?.id, 1)
    t.is(await store.verifyPassword('ann', 'pw-bob'), null, 'the new hash refuses a wrong password')
    t.same((await derivationsOf(() => store.verifyPassword('nobody', 'x'))).derivations, [scrypt(1024)], 'two of three hashes at the old cost: an unknown username costs that')

    t.is((await store.verifyPassword('bob', 'pw-bob'))?.id, 2, 'bob signs in')
    t.same((await derivationsOf(() => store.verifyPassword('nobody', 'x'))).derivations, [scrypt(4096)], 'two of three at the new cost: an unknown username now costs that')
    t.same((await derivationsOf(() => store.verifyPassword('bob', 'wrong'))).derivations, [scrypt(4096)], 'as a wrong password for bob does')
    t.same((await derivationsOf(() => store.verifyPassword('cat', 'wrong'))).derivations, [scrypt(1024)], 'cat has not signed in since: still the old cost')
    const both = await Promise.all([store.verifyPassword('cat', 'pw-cat'), store.verifyPassword('cat', 'pw-cat')])
    t.same(both.map(user => user?.id), [3, 3], 'two sign-ins of cat at once: both succeed')
    t.match(await stored(3), /^scrypt\$4096\$/, 'one upgrade is stored')
    t.same(await store.check(), { ok: true, problems: [] }, 'store.check() agrees with the hash cost counts')
    await db.close();

    ({ db, store } = await reopen(dir, { passwordCost: NEW }))
    t.same((await derivationsOf(() => store.verifyPassword('nobody', 'x'))).derivations, [scrypt(4096)], 'a store opened later knows the counts')
    await db.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('chat passwords: a stored hash that does not parse is LEVELKIT_DECODE_ERROR, never a match', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-passwords-'))
  try {
    const db = await open({ location: dir })
    const store = await ChatStore.open(db, { passwordCost: OLD })
    const id = await store.createUser({ username: 'ann', password: 'pw-ann' })
    const good = (await store.users.get(id)).passwordHash
    const [, , , , salt, hash] = good.split('$')
    for (const [what, passwordHash] of /** @type {Array<[string, any]>} */ ([
      ['an unknown scheme', `md5$${hash}`],
      ['no hash at all (a record another program wrote)', undefined],
      ['a number', 42],
      ['an empty hash', `scrypt$1024$8$1$${salt}$`],
      ['a short hash', `scrypt$1024$8$1$${salt}$AAAA`],
      ['a cost that is not a number', `scrypt$many$8$1$${salt}$${hash}`],
      ['a cost scrypt refuses (not a power of 2)', `scrypt$1000$8$1$${salt}$${hash}`],
      ['salt that is not base64', `scrypt$1024$8$1$*not base64*$${hash}`],
      ['PBKDF2 without iterations', `pbkdf2-sha256$$${salt}$${hash}`]
    ])) {
      await store.users.put(id, { id, username: 'ann', passwordHash, createdAt: 1 })
      try {
        const user = await store.verifyPassword('ann', 'anything')
        t.fail(`${what}: resolved ${JSON.stringify(user)}`)
      } catch (err) {
        t.is(/** @type {any} */ (err).code, 'LEVELKIT_DECODE_ERROR', `${what} -> LEVELKIT_DECODE_ERROR (${/** @type {any} */ (err).message})`)
      }
    }
    t.same((await store.check()).problems.map(p => p.type), ['unreadable-password-hash', 'password-cost-count-mismatch'],
      'store.check() reports the hash it cannot read, and the count that no longer matches')
    await db.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('chat passwords: createUser writes no hash count per user; stores with other costs taking turns keep the counts right', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-passwords-'))
  try {
    /** Stored keys of passwordCosts each createUser writes. @param {any} db */
    const costWrites = (db) => {
      const writes = /** @type {string[][]} */ ([])
      db.level.on('write', (/** @type {any[]} */ ops) => {
        writes.push(ops.map(op => Buffer.from(op.key).toString('latin1')).filter(key => key.startsWith('!passwordCosts!')))
      })
      return writes
    }
    const turns = [[OLD, ['ann', 'bob']], [NEW, ['cat', 'dan', 'eve']], [OLD, ['fay']], [NEW, ['gus']]]
    for (const [cost, names] of /** @type {Array<[any, string[]]>} */ (turns)) {
      const { db, store } = await reopen(dir, { passwordCost: cost })
      const writes = costWrites(db)
      for (const name of names) await store.createUser({ username: name, password: `pw-${name}` })
      t.same(writes.slice(1).flat(), [], `${names.length} users at scryptN ${cost.scryptN}: only the first writes passwordCosts (${writes[0].length} keys)`)
      t.same(await store.check(), { ok: true, problems: [] }, 'store.check() agrees with the hash cost counts')
      await db.close()
    }
    // 3 hashes at the old cost, 4 at the new one.
    const { db, store } = await reopen(dir, { passwordCost: OLD })
    t.same((await derivationsOf(() => store.verifyPassword('nobody', 'x'))).derivations, [scrypt(4096)], 'four of seven hashes at the new cost: an unknown username costs that')
    t.is((await store.verifyPassword('gus', 'pw-gus'))?.id, 7, 'gus signs in (his hash moves to the old cost)')
    t.is((await store.verifyPassword('eve', 'pw-eve'))?.id, 5, 'eve too')
    t.same((await derivationsOf(() => store.verifyPassword('nobody', 'x'))).derivations, [scrypt(1024)], 'now five of seven at the old cost')
    t.same(await store.check(), { ok: true, problems: [] }, 'store.check() agrees')
    await db.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
