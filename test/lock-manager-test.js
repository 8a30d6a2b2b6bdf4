// The lock table that transactions take their key and range locks in: which
// modes conflict, who is granted in which order, and how waits end (granted,
// timed out, chosen as a deadlock victim, or abandoned by release()).
import test from 'tape'
import { spawnSync } from 'node:child_process'
import { LockManager } from '../lib/lock-manager.js'
import { concatBytes } from '../lib/bytes.js'
import { codes } from '../lib/errors.js'
import { prng } from './util/prng.js'

const MODES = ['read', 'shared', 'soft', 'hard', 'write']
const HELD_MODES = ['shared', 'soft', 'hard', 'write']
// Requested mode -> the held modes (of another owner) it waits for.
const WAITS_FOR = {
  read: ['hard'],
  shared: ['soft', 'hard', 'write'],
  soft: ['shared', 'soft', 'hard', 'write'],
  hard: ['shared', 'soft', 'hard', 'write'],
  write: ['shared', 'soft', 'hard', 'write']
}

const encoder = new TextEncoder()
/** @param {string} s */
const bytes = s => encoder.encode(s)
/** The point lock on key s. @param {string} s */
const point = s => ({ gte: bytes(s), lt: concatBytes(bytes(s), [0x00]) })
/** [a, b), either side unbounded when undefined. @param {string} [a] @param {string} [b] */
function range (a, b) {
  /** @type {{ gte?: Uint8Array, lt?: Uint8Array }} */
  const bounds = {}
  if (a !== undefined) bounds.gte = bytes(a)
  if (b !== undefined) bounds.lt = bytes(b)
  return bounds
}

let ages = 0
/** An owner started after every earlier one (larger age = younger). @param {string} name */
const owner = name => ({ name, age: ++ages })

/** Let every settled promise's callbacks run. */
const tick = () => new Promise(resolve => setImmediate(resolve))
/** @param {number} ms */
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

/**
 * Follow what one acquire() returned: `log` gets `name` when it is granted
 * and `name!CODE` when it is rejected, in the order that happens.
 * @param {string[]} log @param {string} name @param {Promise<void> | null} p
 */
function follow (log, name, p) {
  const state = { status: 'waiting', /** @type {any} */ error: null }
  if (p === null) {
    state.status = 'granted'
    log.push(name)
    return state
  }
  p.then(() => {
    state.status = 'granted'
    log.push(name)
  }, err => {
    state.status = 'rejected'
    state.error = err
    log.push(`${name}!${err.code}`)
  })
  return state
}

/**
 * Whether `mode` by a fresh owner on `want` waits while another owner holds
 * `heldMode` on `have`, seen through isBlocked() and through acquire().
 * @param {any} t @param {string} heldMode @param {object} have @param {string} mode @param {object} want
 */
async function waits (t, heldMode, have, mode, want) {
  const locks = new LockManager()
  const holder = owner('holder')
  const other = owner('other')
  t.is(locks.acquire(holder, 's', have, heldMode, {}), null)
  const blocked = locks.isBlocked(other, 's', want, mode)
  const log = /** @type {string[]} */ ([])
  const state = follow(log, 'other', locks.acquire(other, 's', want, mode, {}))
  await tick()
  const waited = state.status === 'waiting'
  t.is(blocked, waited, `${mode} vs held ${heldMode}: isBlocked() agrees with acquire()`)
  locks.release(holder)
  await tick()
  t.is(state.status, 'granted', `${mode} vs held ${heldMode}: granted once the holder releases`)
  locks.release(other)
  t.is(locks.active, false)
  return waited
}

test('compatibility: every requested mode against every held mode, on a point', async t => {
  for (const mode of MODES) {
    for (const held of HELD_MODES) {
      const expected = WAITS_FOR[/** @type {keyof WAITS_FOR} */ (mode)].includes(held)
      t.is(await waits(t, held, point('k'), mode, point('k')), expected, `${mode} ${expected ? 'waits for' : 'passes'} a held ${held}`)
    }
  }
})

test('compatibility: overlapping ranges conflict, half-open neighbours and disjoint ranges do not', async t => {
  for (const mode of MODES) {
    for (const held of HELD_MODES) {
      const expected = WAITS_FOR[/** @type {keyof WAITS_FOR} */ (mode)].includes(held)
      const pair = `${mode} vs held ${held}`
      t.is(await waits(t, held, range('b', 'd'), mode, point('c')), expected, `${pair}: a point inside a held range`)
      t.is(await waits(t, held, point('c'), mode, range('b', 'd')), expected, `${pair}: a range around a held point`)
      t.is(await waits(t, held, range('b', 'd'), mode, range('c', 'e')), expected, `${pair}: partly overlapping ranges`)
      t.is(await waits(t, held, range('b', 'd'), mode, range('d', 'f')), false, `${pair}: [b, d) and [d, f) touch but do not overlap`)
      t.is(await waits(t, held, range('d', 'f'), mode, range('b', 'd')), false, `${pair}: nor [d, f) and [b, d)`)
      t.is(await waits(t, held, point('c'), mode, point('c\x00')), false, `${pair}: a point lock is not its successor's`)
      t.is(await waits(t, held, range('b', 'd'), mode, point('x')), false, `${pair}: disjoint`)
    }
  }
})

test('compatibility: unbounded sides', async t => {
  for (const mode of ['read', 'soft']) {
    t.is(await waits(t, 'hard', {}, mode, point('anything')), true, `${mode}: the whole space covers every key`)
    t.is(await waits(t, 'hard', range('m'), mode, range(undefined, 'n')), true, `${mode}: [m, ∞) and (-∞, n) overlap`)
    t.is(await waits(t, 'hard', range('m'), mode, range(undefined, 'm')), false, `${mode}: [m, ∞) and (-∞, m) do not`)
    t.is(await waits(t, 'hard', range(undefined, 'm'), mode, range('m')), false, `${mode}: nor (-∞, m) and [m, ∞)`)
    t.is(await waits(t, 'hard', range(undefined, 'm'), mode, {}), true, `${mode}: (-∞, m) and everything`)
    t.is(await waits(t, 'hard', range('a', 'b'), mode, range('a', 'a')), false, `${mode}: an empty range overlaps nothing`)
  }
})

test('locks in different spaces never conflict', async t => {
  const locks = new LockManager()
  const a = owner('a')
  const b = owner('b')
  t.is(locks.acquire(a, 'users', {}, 'hard', {}), null)
  t.is(locks.acquire(b, 'posts', {}, 'hard', {}), null, 'another space')
  t.is(locks.isBlocked(b, 'users', point('k'), 'read'), true)
  t.is(locks.isBlocked(a, 'users', point('k'), 'hard'), false, 'an owner is never blocked by itself')
  t.is(locks.acquire(b, 'users', point('k'), 'read', {}) !== null, true, 'same space waits')
  locks.release(a)
  locks.release(b)
  t.is(locks.active, false)
})

test('an owner never conflicts with itself and upgrades its locks', async t => {
  const locks = new LockManager()
  const a = owner('a')
  const b = owner('b')
  t.is(locks.acquire(a, 's', point('k'), 'shared', {}), null)
  t.is(locks.acquire(a, 's', point('k'), 'shared', {}), null, 'again')
  t.is(locks.acquire(a, 's', point('k'), 'read', {}), null, 'a plain read')
  t.is(locks.isBlocked(b, 's', point('k'), 'shared'), false, 'b may share it')
  t.is(locks.isBlocked(b, 's', point('k'), 'soft'), true)
  t.is(locks.acquire(a, 's', point('k'), 'soft', {}), null, 'shared -> soft')
  t.is(locks.isBlocked(b, 's', point('k'), 'shared'), true, 'b may no longer share it')
  t.is(locks.isBlocked(b, 's', point('k'), 'read'), false, 'but may still read it')
  t.is(locks.acquire(a, 's', range('a', 'z'), 'hard', {}), null, 'soft -> hard on a wider range')
  t.is(locks.isBlocked(b, 's', point('c'), 'read'), true, 'now even reads wait')
  t.is(locks.acquire(a, 's', point('k'), 'write', {}), null, 'write under its hard lock')
  t.is(locks.acquire(a, 's', point('k'), 'shared', {}), null, 'and shared: never a downgrade')
  t.is(locks.isBlocked(b, 's', point('c'), 'read'), true, 'still hard')
  t.is(locks.stats().waits, 0, 'nothing waited')
  locks.release(a)
  t.is(locks.isBlocked(b, 's', point('c'), 'read'), false, 'release drops every lock')
  t.is(locks.active, false)
})

test('an upgrade waits for other holders; two upgrading holders deadlock and the younger gives way', async t => {
  const locks = new LockManager()
  const log = /** @type {string[]} */ ([])
  const a = owner('a')
  const b = owner('b')
  t.is(locks.acquire(a, 's', point('k'), 'shared', {}), null)
  t.is(locks.acquire(b, 's', point('k'), 'shared', {}), null)
  const aUp = follow(log, 'a', locks.acquire(a, 's', point('k'), 'soft', {}))
  const bUp = follow(log, 'b', locks.acquire(b, 's', point('k'), 'soft', {}))
  await tick()
  t.same(log, [`b!${codes.DEADLOCK}`], 'b, the younger, is the victim')
  t.is(bUp.error.cycle, 2)
  t.is(aUp.status, 'waiting', 'a waits for b to release its shared lock')
  locks.release(b)
  await tick()
  t.same(log, [`b!${codes.DEADLOCK}`, 'a'])
  t.same(locks.stats(), { waits: 2, timeouts: 0, deadlocks: 1 })
  locks.release(a)
  t.is(locks.active, false)
})

test('an upgrade goes ahead of a queued request that already waits for the upgrading owner', async t => {
  const locks = new LockManager()
  const log = /** @type {string[]} */ ([])
  const a = owner('a')
  const b = owner('b')
  t.is(locks.acquire(a, 's', point('k'), 'shared', {}), null)
  follow(log, 'b', locks.acquire(b, 's', point('k'), 'soft', {}))
  // b cannot be granted before a releases everything, so a taking k now
  // delays b by nothing, where queueing behind b would be a deadlock.
  t.is(locks.acquire(a, 's', point('k'), 'soft', {}), null, 'granted at once')
  t.is(locks.acquire(a, 's', range('a', 'z'), 'hard', {}), null, 'and a wider hard lock too')
  t.same(locks.stats(), { waits: 1, timeouts: 0, deadlocks: 0 })
  await tick()
  t.same(log, [])
  locks.release(a)
  await tick()
  t.same(log, ['b'])
  locks.release(b)
  t.is(locks.active, false)
})

test('FIFO: a queued soft lock is not overtaken by a later shared one', async t => {
  const locks = new LockManager()
  const log = /** @type {string[]} */ ([])
  const a = owner('a')
  const b = owner('b')
  const c = owner('c')
  const d = owner('d')
  t.is(locks.acquire(a, 's', point('k'), 'shared', {}), null)
  follow(log, 'b', locks.acquire(b, 's', point('k'), 'soft', {}))
  const cState = follow(log, 'c', locks.acquire(c, 's', point('k'), 'shared', {}))
  t.is(cState.status, 'waiting', 'c waits although a\'s shared lock alone would let it in')
  t.is(locks.isBlocked(c, 's', point('k'), 'shared'), false, 'isBlocked() looks at held locks only')
  t.is(locks.acquire(d, 's', point('other'), 'soft', {}), null, 'a lock on another key does not queue')
  t.is(locks.acquire(d, 's', point('k'), 'read', {}), null, 'nor does a plain read')
  locks.release(a)
  await tick()
  t.same(log, ['b'], 'b first')
  locks.release(b)
  await tick()
  t.same(log, ['b', 'c'], 'then c')
  locks.release(c)
  locks.release(d)
  t.is(locks.active, false)
})

test('release() grants the waiters in the order they came, as many as are compatible', async t => {
  const locks = new LockManager()
  const log = /** @type {string[]} */ ([])
  const a = owner('a')
  const [b, c, d, e, f] = ['b', 'c', 'd', 'e', 'f'].map(owner)
  t.is(locks.acquire(a, 's', range('a', 'z'), 'soft', {}), null)
  follow(log, 'b', locks.acquire(b, 's', point('k'), 'shared', {}))
  follow(log, 'c', locks.acquire(c, 's', point('m'), 'write', {}))
  follow(log, 'd', locks.acquire(d, 's', range('j', 'l'), 'shared', {}))
  follow(log, 'e', locks.acquire(e, 's', range('a', 'z'), 'soft', {}))
  follow(log, 'f', locks.acquire(f, 's', point('m'), 'shared', {}))
  t.same(locks.stats().waits, 5)
  locks.release(a)
  await tick()
  t.same(log, ['b', 'c', 'd'], 'b, c and d: e conflicts with them, f with c and with e ahead of it')
  locks.release(b)
  locks.release(d)
  await tick()
  t.same(log, ['b', 'c', 'd'], 'e still waits for c')
  locks.release(c)
  await tick()
  t.same(log, ['b', 'c', 'd', 'e'])
  locks.release(e)
  await tick()
  t.same(log, ['b', 'c', 'd', 'e', 'f'])
  locks.release(f)
  t.is(locks.active, false)
})

test('an owner may wait for several locks at once', async t => {
  const locks = new LockManager()
  const a = owner('a')
  const b = owner('b')
  t.is(locks.acquire(a, 's', point('x'), 'soft', {}), null)
  t.is(locks.acquire(a, 't', point('y'), 'hard', {}), null)
  const both = Promise.all([
    locks.acquire(b, 's', point('x'), 'shared', {}),
    locks.acquire(b, 't', point('y'), 'read', {}),
    locks.acquire(b, 's', point('x'), 'shared', {})
  ])
  let done = false
  both.then(() => { done = true })
  await tick()
  t.is(done, false)
  locks.release(a)
  await tick()
  t.is(done, true, 'all granted')
  t.is(locks.isBlocked(a, 's', point('x'), 'soft'), true, 'b holds x')
  t.is(locks.isBlocked(a, 't', point('y'), 'hard'), false, 'a plain read holds nothing')
  locks.release(b)
  t.is(locks.active, false)
})

test('a wait times out with LEVELKIT_LOCK_TIMEOUT and the queue moves on', async t => {
  const locks = new LockManager()
  const log = /** @type {string[]} */ ([])
  const a = owner('a')
  const b = owner('b')
  const c = owner('c')
  t.is(locks.acquire(a, 's', point('k'), 'shared', {}), null)
  const bState = follow(log, 'b', locks.acquire(b, 's', point('k'), 'soft', { timeout: 20 }))
  const cState = follow(log, 'c', locks.acquire(c, 's', point('k'), 'shared', { timeout: 80 }))
  await sleep(5)
  t.same(log, [], 'both wait')
  await sleep(40)
  t.same(log, [`b!${codes.LOCK_TIMEOUT}`, 'c'], 'b timed out, then c, no longer behind b, is granted')
  t.is(bState.error.space, 's')
  t.is(bState.error.mode, 'soft')
  t.is(bState.error.timeout, 20)
  t.is(cState.status, 'granted')
  t.same(locks.stats(), { waits: 2, timeouts: 1, deadlocks: 0 })
  t.is(locks.isBlocked(b, 's', point('k'), 'soft'), true, 'c holds it now, with a')
  locks.release(a)
  locks.release(c)
  t.is(locks.active, false, 'the timed-out owner holds nothing and waits for nothing')
  await sleep(100)
  t.same(log, [`b!${codes.LOCK_TIMEOUT}`, 'c'], 'c\'s timer was cleared when it was granted')
  t.is(locks.stats().timeouts, 1)
})

test('a pending wait does not keep the process alive', t => {
  const url = new URL('../lib/lock-manager.js', import.meta.url).href
  const script = `
    import { LockManager } from ${JSON.stringify(url)}
    const locks = new LockManager()
    locks.acquire({ age: 1 }, 's', {}, 'hard', {})
    locks.acquire({ age: 2 }, 's', {}, 'read', { timeout: 60000 }).catch(() => {})
  `
  const started = Date.now()
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { timeout: 20000, encoding: 'utf8' })
  t.is(child.stderr, '')
  t.is(child.status, 0)
  t.ok(Date.now() - started < 10000, 'it exits without waiting for the timer')
  t.end()
})

test('deadlock between two owners: the younger is the victim, whichever closes the cycle', async t => {
  for (const closer of ['younger', 'older']) {
    const locks = new LockManager()
    const log = /** @type {string[]} */ ([])
    const a = owner('a')
    const b = owner('b')
    t.is(locks.acquire(a, 's', point('x'), 'soft', {}), null)
    t.is(locks.acquire(b, 's', point('y'), 'write', {}), null)
    /** @type {any} */
    let states
    if (closer === 'younger') {
      states = { a: follow(log, 'a', locks.acquire(a, 's', point('y'), 'shared', {})) }
      states.b = follow(log, 'b', locks.acquire(b, 's', point('x'), 'soft', {}))
    } else {
      states = { b: follow(log, 'b', locks.acquire(b, 's', point('x'), 'soft', {})) }
      states.a = follow(log, 'a', locks.acquire(a, 's', point('y'), 'shared', {}))
    }
    await tick()
    t.same(log, [`b!${codes.DEADLOCK}`], `${closer} closes it: b is rejected at once`)
    t.is(states.b.error.space, 's')
    t.is(states.b.error.mode, 'soft')
    t.is(states.b.error.cycle, 2)
    t.is(states.a.status, 'waiting', 'a still waits for b\'s lock')
    t.same(locks.stats(), { waits: 2, timeouts: 0, deadlocks: 1 })
    locks.release(b)
    await tick()
    t.same(log, [`b!${codes.DEADLOCK}`, 'a'], 'a is granted once b releases')
    locks.release(a)
    t.is(locks.active, false)
  }
})

test('deadlock among three owners: the youngest is the victim', async t => {
  const locks = new LockManager()
  const log = /** @type {string[]} */ ([])
  const a = owner('a')
  const b = owner('b')
  const c = owner('c')
  t.is(locks.acquire(a, 'one', point('k'), 'soft', {}), null)
  t.is(locks.acquire(b, 'two', point('k'), 'hard', {}), null)
  t.is(locks.acquire(c, 'three', range('a', 'z'), 'shared', {}), null)
  follow(log, 'c', locks.acquire(c, 'one', point('k'), 'shared', {}))
  follow(log, 'a', locks.acquire(a, 'two', point('k'), 'read', {}))
  const bState = follow(log, 'b', locks.acquire(b, 'three', point('q'), 'write', {}))
  await tick()
  t.same(log, [`c!${codes.DEADLOCK}`], 'c, the youngest, is rejected; b, which closed the cycle, waits')
  t.is(bState.status, 'waiting')
  locks.release(c)
  await tick()
  t.same(log, [`c!${codes.DEADLOCK}`, 'b'])
  locks.release(b)
  await tick()
  t.same(log, [`c!${codes.DEADLOCK}`, 'b', 'a'])
  t.same(locks.stats(), { waits: 3, timeouts: 0, deadlocks: 1 })
  locks.release(a)
  t.is(locks.active, false)
})

test('deadlock through an earlier queued request', async t => {
  const locks = new LockManager()
  const log = /** @type {string[]} */ ([])
  const a = owner('a')
  const b = owner('b')
  const c = owner('c')
  t.is(locks.acquire(a, 's', point('x'), 'shared', {}), null)
  t.is(locks.acquire(c, 's', point('y'), 'soft', {}), null)
  follow(log, 'b', locks.acquire(b, 's', point('x'), 'soft', {}))
  // c's shared lock would be compatible with a's, but b queued first: c
  // waits for b, b for a, and a, asking for y, for c.
  const cState = follow(log, 'c', locks.acquire(c, 's', point('x'), 'shared', {}))
  await tick()
  t.is(cState.status, 'waiting')
  const aState = follow(log, 'a', locks.acquire(a, 's', point('y'), 'shared', {}))
  await tick()
  t.same(log, [`c!${codes.DEADLOCK}`], 'c, the youngest of a -> c -> b -> a, is the victim')
  t.is(cState.error.cycle, 3)
  t.is(aState.status, 'waiting', 'a waits for c\'s soft lock on y')
  locks.release(c)
  await tick()
  t.same(log, [`c!${codes.DEADLOCK}`, 'a'])
  locks.release(a)
  await tick()
  t.same(log, [`c!${codes.DEADLOCK}`, 'a', 'b'])
  t.same(locks.stats(), { waits: 3, timeouts: 0, deadlocks: 1 })
  locks.release(b)
  t.is(locks.active, false)
})

test('a victim loses every wait it has pending, and the queue behind them moves on', async t => {
  for (const closer of ['older', 'younger']) {
    const locks = new LockManager()
    const log = /** @type {string[]} */ ([])
    const a = owner('a')
    const b = owner('b')
    const c = owner('c')
    const d = owner('d')
    t.is(locks.acquire(a, 's', point('x'), 'soft', {}), null)
    t.is(locks.acquire(d, 's', point('z'), 'shared', {}), null)
    t.is(locks.acquire(b, 's', point('y'), 'soft', {}), null)
    if (closer === 'younger') follow(log, 'a-y', locks.acquire(a, 's', point('y'), 'shared', {}))
    follow(log, 'b-z', locks.acquire(b, 's', point('z'), 'soft', {}))
    // Compatible with d's shared lock, but queued behind b's soft request.
    follow(log, 'c-z', locks.acquire(c, 's', point('z'), 'shared', {}))
    follow(log, 'b-x', locks.acquire(b, 's', point('x'), 'soft', {}))
    if (closer === 'older') follow(log, 'a-y', locks.acquire(a, 's', point('y'), 'shared', {}))
    await tick()
    t.same(log.sort(), [`b-x!${codes.DEADLOCK}`, `b-z!${codes.DEADLOCK}`, 'c-z'], `the ${closer} closes the cycle: both of b's waits are rejected, and c, no longer behind b, is granted`)
    t.same(locks.stats(), { waits: 4, timeouts: 0, deadlocks: 1 })
    locks.release(b)
    await tick()
    t.same(log.slice(3), ['a-y'])
    locks.release(a)
    locks.release(c)
    locks.release(d)
    t.is(locks.active, false)
  }
})

test('a grant that closes a cycle is a deadlock too', async t => {
  const locks = new LockManager()
  const log = /** @type {string[]} */ ([])
  const x = owner('x')
  const a = owner('a')
  const b = owner('b')
  t.is(locks.acquire(x, 's', point('k1'), 'hard', {}), null)
  t.is(locks.acquire(b, 's', point('k2'), 'soft', {}), null)
  follow(log, 'a-k1', locks.acquire(a, 's', point('k1'), 'hard', {}))
  follow(log, 'a-k2', locks.acquire(a, 's', point('k2'), 'shared', {}))
  // A plain read does not queue behind a's hard request: b waits for x only.
  follow(log, 'b-k1', locks.acquire(b, 's', point('k1'), 'read', {}))
  await tick()
  t.same(log, [])
  // Granting a's hard lock makes b's read wait for a, which waits for b.
  locks.release(x)
  await tick()
  t.same(log, ['a-k1', `b-k1!${codes.DEADLOCK}`])
  t.same(locks.stats(), { waits: 3, timeouts: 0, deadlocks: 1 })
  locks.release(b)
  await tick()
  t.same(log, ['a-k1', `b-k1!${codes.DEADLOCK}`, 'a-k2'])
  locks.release(a)
  t.is(locks.active, false)
})

test('release(owner, reason) rejects the owner\'s pending waits with the reason', async t => {
  const locks = new LockManager()
  const log = /** @type {string[]} */ ([])
  const a = owner('a')
  const b = owner('b')
  const c = owner('c')
  t.is(locks.acquire(a, 's', range('a', 'z'), 'hard', {}), null)
  const first = follow(log, 'b1', locks.acquire(b, 's', point('k'), 'soft', { timeout: 30 }))
  const second = follow(log, 'b2', locks.acquire(b, 's', point('m'), 'read', {}))
  follow(log, 'c', locks.acquire(c, 's', point('k'), 'shared', {}))
  const reason = new Error('transaction aborted')
  locks.release(b, reason)
  await tick()
  t.same(log, ['b1!undefined', 'b2!undefined'])
  t.is(first.error, reason, 'the very reason')
  t.is(second.error, reason)
  t.is(locks.isBlocked(c, 's', point('k'), 'shared'), true, 'a keeps its lock')
  const third = follow(log, 'b3', locks.acquire(b, 's', point('k'), 'soft', {}))
  locks.release(b)
  await tick()
  t.is(third.error.code, codes.ABORTED, 'without a reason: LEVELKIT_ABORTED')
  t.is(third.error.space, 's')
  t.is(third.error.mode, 'soft')
  locks.release(a)
  await tick()
  t.same(log, ['b1!undefined', 'b2!undefined', `b3!${codes.ABORTED}`, 'c'], 'c was waiting behind b, not for it')
  await sleep(50)
  t.is(locks.stats().timeouts, 0, 'b1\'s timer was cleared')
  locks.release(c)
  t.is(locks.active, false)
})

test('stats() and active', async t => {
  const locks = new LockManager()
  const a = owner('a')
  const b = owner('b')
  const c = owner('c')
  t.same(locks.stats(), { waits: 0, timeouts: 0, deadlocks: 0 })
  t.is(locks.active, false)
  t.is(locks.acquire(a, 's', point('k'), 'read', {}), null)
  t.is(locks.active, false, 'a plain read holds nothing')
  t.is(locks.acquire(a, 's', point('k'), 'shared', {}), null)
  t.is(locks.active, true, 'a lock is held')
  locks.release(a)
  t.is(locks.active, false)
  t.is(locks.acquire(a, 's', point('k'), 'hard', {}), null)
  const read = locks.acquire(b, 's', point('k'), 'read', { timeout: 20 })
  const write = locks.acquire(c, 's', point('k'), 'write', {})
  t.ok(read && write)
  locks.release(a)
  t.is(locks.active, true, 'c holds k now')
  await Promise.all([read, write])
  locks.release(c)
  t.is(locks.active, false)
  t.is(locks.acquire(a, 's', point('k'), 'soft', {}), null)
  const timedOut = locks.acquire(b, 's', point('k'), 'soft', { timeout: 20 })
  t.is(locks.active, true)
  locks.release(a)
  t.is(locks.active, true, 'b\'s wait is granted, so held')
  await timedOut
  locks.release(b)
  t.is(locks.acquire(a, 's', point('k'), 'soft', {}), null)
  const failed = follow([], 'b', locks.acquire(b, 's', point('k'), 'soft', { timeout: 20 }))
  await sleep(40) // the lock manager's timers do not keep the process alive
  t.is(failed.error?.code, codes.LOCK_TIMEOUT)
  locks.release(a)
  t.is(locks.active, false, 'a timed-out wait is gone')
  t.same(locks.stats(), { waits: 4, timeouts: 1, deadlocks: 0 })
})

test('a plain read waits only for another owner\'s hard lock, and never behind queued requests', async t => {
  const locks = new LockManager()
  const log = /** @type {string[]} */ ([])
  const a = owner('a')
  const b = owner('b')
  const r = owner('r')
  t.is(locks.acquire(a, 's', point('k'), 'soft', {}), null)
  follow(log, 'b', locks.acquire(b, 's', point('k'), 'hard', {}))
  t.is(locks.acquire(r, 's', point('k'), 'read', {}), null, 'past a held soft lock and a queued hard request')
  locks.release(a)
  await tick()
  t.same(log, ['b'])
  const read = follow(log, 'r', locks.acquire(r, 's', range('j', 'l'), 'read', {}))
  t.is(read.status, 'waiting', 'now b holds k hard')
  follow(log, 'a', locks.acquire(a, 's', point('k'), 'shared', {}))
  locks.release(b)
  await tick()
  t.same(log, ['b', 'r', 'a'])
  t.is(locks.isBlocked(b, 's', point('k'), 'soft'), true, 'a holds its shared lock')
  t.is(locks.isBlocked(b, 's', point('k'), 'read'), false)
  locks.release(a)
  locks.release(r)
  t.is(locks.active, false)
})

test('bad modes are refused', t => {
  const locks = new LockManager()
  t.throws(() => locks.acquire(owner('a'), 's', {}, /** @type {any} */ ('exclusive'), {}), /exclusive/)
  t.is(locks.active, false)
  t.end()
})

/**
 * Random transactions, each taking a few locks (one at a time or two at once)
 * and then releasing them; a rejected one releases and stops. Without
 * timeouts every one must finish: a wait that nothing ends is a missed
 * deadlock or a missed grant. Checked on every grant: no two owners hold
 * conflicting locks on overlapping ranges.
 * @param {any} t @param {number} seed @param {boolean} timeouts
 */
async function simulate (t, seed, timeouts) {
  const random = prng(seed)
  const locks = new LockManager()
  const keys = ['a', 'b', 'c', 'd', 'e']
  /** @type {Map<object, Array<{ space: string, bounds: any, mode: string }>>} */
  const holding = new Map()
  const problems = /** @type {string[]} */ ([])
  const victims = new Set()
  let timedOut = 0
  let deadlocked = 0
  let finished = 0
  const bounds = () => {
    const i = random.int(keys.length)
    if (random() < 0.6) return point(keys[i])
    if (random() < 0.1) return {}
    return range(keys[i], keys[Math.min(keys.length - 1, i + 1 + random.int(2))] + (random() < 0.5 ? '' : '\x00'))
  }
  /** @param {object} me @param {string} space @param {any} b @param {string} mode */
  const check = (me, space, b, mode) => {
    if (mode === 'read') return
    for (const [other, held] of holding) {
      if (other === me) continue
      for (const lock of held) {
        if (lock.space !== space || !WAITS_FOR[/** @type {keyof WAITS_FOR} */ (mode)].includes(lock.mode)) continue
        const probe = new LockManager()
        probe.acquire({ age: 0 }, space, lock.bounds, /** @type {any} */ (lock.mode), {})
        if (probe.isBlocked({ age: 1 }, space, b, /** @type {any} */ (mode))) problems.push(`seed ${seed}: ${mode} granted over another's ${lock.mode}`)
      }
    }
    holding.get(me)?.push({ space, bounds: b, mode })
  }
  /** @param {number} n */
  const transaction = async n => {
    const me = { age: n }
    holding.set(me, [])
    const steps = 1 + random.int(4)
    const plan = []
    for (let i = 0; i < steps; i++) {
      const width = random() < 0.25 ? 2 : 1
      const step = []
      for (let j = 0; j < width; j++) {
        step.push({ space: random() < 0.7 ? 's' : 't', bounds: bounds(), mode: random.pick(MODES), timeout: timeouts && random() < 0.3 ? 1 + random.int(10) : undefined })
      }
      plan.push(step)
    }
    try {
      for (const step of plan) {
        await Promise.all(step.map(async ({ space, bounds, mode, timeout }) => {
          const p = locks.acquire(me, space, bounds, /** @type {any} */ (mode), { timeout })
          if (p !== null) {
            await p.catch(err => {
              if (err.code === codes.DEADLOCK) deadlocked++
              throw err
            })
          }
          check(me, space, bounds, mode)
        }))
        if (timeouts) await sleep(random.int(4))
        else if (random() < 0.5) await tick()
      }
    } catch (err) {
      const code = /** @type {any} */ (err).code
      if (code === codes.DEADLOCK) victims.add(me)
      else if (code === codes.LOCK_TIMEOUT) timedOut++
      else problems.push(`seed ${seed}: ${code}`)
    }
    holding.delete(me)
    locks.release(me)
    finished++
  }
  const count = 6 + random.int(10)
  const all = []
  for (let n = 1; n <= count; n++) {
    all.push(transaction(n))
    if (random() < 0.5) await tick()
  }
  let timer
  const stuck = await Promise.race([
    Promise.all(all).then(() => false),
    new Promise(resolve => { timer = setTimeout(resolve, 3000, true) })
  ])
  clearTimeout(timer)
  if (stuck) problems.push(`seed ${seed}: ${count - finished} of ${count} transactions never finished`)
  if (locks.active && !stuck) problems.push(`seed ${seed}: still active`)
  const stats = locks.stats()
  // A deadlock rejects every wait of its victim, and a victim may be in
  // another cycle before it has released.
  if (!stuck && (stats.deadlocks < victims.size || stats.deadlocks > deadlocked)) {
    problems.push(`seed ${seed}: ${stats.deadlocks} deadlocks counted, ${victims.size} victims, ${deadlocked} waits rejected`)
  }
  if (!stuck && stats.timeouts !== timedOut) problems.push(`seed ${seed}: ${stats.timeouts} timeouts counted, ${timedOut} seen`)
  return { problems, stats }
}

test('random transactions: never two conflicting holders, every wait ends, every deadlock is counted', async t => {
  const totals = { waits: 0, timeouts: 0, deadlocks: 0 }
  const problems = []
  // LOCK_MANAGER_SEEDS=first-last runs other seeds (a longer soak, or one to replay).
  const [first, last] = (process.env.LOCK_MANAGER_SEEDS || '1-240').split('-').map(Number)
  for (let seed = first; seed <= (last || first); seed++) {
    const run = await simulate(t, seed, seed % 8 === 0)
    problems.push(...run.problems)
    if (problems.length > 0) break // one seed to replay is enough
    for (const key of /** @type {const} */ (['waits', 'timeouts', 'deadlocks'])) totals[key] += run.stats[key]
  }
  t.same(problems, [])
  t.ok(totals.waits > 500 && totals.deadlocks > 20 && totals.timeouts > 20, `the runs waited (${JSON.stringify(totals)})`)
})
