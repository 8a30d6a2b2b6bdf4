// Model-based test of db.transaction(): random concurrent histories must be
// serializable in commit order.
//
// Each history opens a fresh database with a small schema (items with a
// unique and a non-unique index, notes as children of items, a counter),
// then launches 20 to 60 programs at once: mostly transactions, some plain
// model operations outside any transaction. A transaction's program reads
// (get, getBy, index and id range queries with limits, count, counter,
// children) and writes (insert, update, del, counter add, append) values that
// depend on everything it read so far, sleeping 0-2 ms between operations.
// A third of the histories take no locks; in a third, programs lock records
// first, in id order, and write only what they locked (deadlocks are rarer);
// in the rest, any read may lock, in any mode and order (deadlock victims).
// Some programs throw at their end, always or depending on what they read.
//
// Every program is deterministic given what it reads, so a history is
// checked by replaying its committed programs, one at a time, against a
// plain in-memory reference model (Maps, written from the documented
// semantics) in commit order: each must read exactly what its committed
// attempt read, and the final database must equal the reference (and pass
// db.check()). Programs that did not commit are not replayed, so any trace
// of them (a user-thrown abort, a conflict given up on) is a difference.
//
// A failure prints the history's seed. The seed fixes the programs, not the
// timing, so a replay may need a few runs:
//   LEVELKIT_TX_ONLY=<memory|memory-async|leveldb> LEVELKIT_TX_SEED=<seed> LEVELKIT_TX_HISTORIES=1 npx tape test/transaction-model-test.js
// LEVELKIT_TX_HISTORIES=<n> sets the number of histories per backend.
// LEVELKIT_TX_MIX=inserts makes half the programs plain inserts, and 40% of
// transaction steps inserts, of names not taken yet: transactions inserting
// while inserts outside them take the next ids (other histories per seed).

import test from 'tape'
import os from 'node:os'
import path from 'node:path'
import fs from 'node:fs/promises'
import { AsyncLocalStorage } from 'node:async_hooks'
import { isDeepStrictEqual } from 'node:util'
import { MemoryLevel } from 'memory-level'
import { open } from '../index.js'
import { prng } from './util/prng.js'

const env = process.env
const SEED = env.LEVELKIT_TX_SEED === undefined ? Date.now() % 0x7fffffff : Number(env.LEVELKIT_TX_SEED)
const ONLY = env.LEVELKIT_TX_ONLY // 'memory', 'memory-async' or 'leveldb'
const HISTORIES = env.LEVELKIT_TX_HISTORIES === undefined ? null : Number(env.LEVELKIT_TX_HISTORIES)
const INSERTS = env.LEVELKIT_TX_MIX === 'inserts'
const MEMORY_HISTORIES = HISTORIES ?? 30
const LEVELDB_HISTORIES = HISTORIES ?? 20

const NAMES = ['ann', 'bob', 'cy', 'dee', 'eve', 'fay', 'gus', 'hal', 'ivy', 'jo']
const GROUPS = 4
const KEYS = ['a', 'b', 'c']
const MAX_ID = 12
const LOCKS = ['shared', 'soft', 'hard']
const RECORD_WRITES = new Set(['update', 'bump', 'del', 'append'])
// What a program catches and reads as an outcome, like a value.
const OUTCOMES = new Set(['LEVELKIT_UNIQUE', 'LEVELKIT_NOT_FOUND'])
// Why a transaction may end without committing, besides its own throw.
const GIVE_UPS = new Set(['LEVELKIT_CONFLICT', 'LEVELKIT_DEADLOCK', 'LEVELKIT_LOCK_TIMEOUT', 'LEVELKIT_TX_EXPIRED'])
const ABORT = 'TEST_ABORT'

const same = isDeepStrictEqual
const sleep = (/** @type {number} */ ms) => new Promise(resolve => setTimeout(resolve, ms))

// ---------------------------------------------------------------------------
// Histories: generated from the seed alone, before anything runs.

function generateHistory (rand) {
  const locking = rand.pick(['none', 'ordered', 'random'])
  const schema = { covering: rand() < 0.5, blockSize: rand() < 0.5 ? 4 : undefined }
  const size = 20 + rand.int(41)
  const programs = []
  for (let i = 0; i < size; i++) programs.push(rand() < (INSERTS ? 0.5 : 0.1) ? plainProgram(rand) : txProgram(rand, locking))
  return { locking, schema, programs, setup: generateSetup(rand) }
}

function generateSetup (rand) {
  const items = NAMES.slice(0, 6).map(name => ({ name, group: rand.int(GROUPS), value: rand.int(100) }))
  const notes = Array.from({ length: 6 }, () => ({ parent: 1 + rand.int(6), value: { v: rand.int(100) } }))
  const adds = KEYS.slice(0, 2).map(key => ({ key, delta: 1 + rand.int(9) }))
  return { items, notes, adds }
}

const itemId = rand => rand() < 0.7 ? 1 + rand.int(8) : 1 + rand.int(MAX_ID)
const maybe = (rand, p, make) => rand() < p ? make() : undefined

function txProgram (rand, locking) {
  const steps = []
  /** @type {number[]} records the program writes, when it locked them */
  const writable = []
  if (locking === 'ordered' && rand() < 0.6) {
    // The discipline that keeps deadlocks rarer: lock first, in id order,
    // and write only records locked 'soft' (a 'shared' lock is only read, or
    // two holders would both wait to write; 'hard' would make plain reads
    // wait). What deadlocks are left come from commits, which take write
    // locks one key at a time (the counters, the id sequence and index
    // entries too), holding some while they wait for a record locked here.
    const ids = [...new Set(Array.from({ length: 1 + rand.int(3) }, () => itemId(rand)))].sort((a, b) => a - b)
    const modes = ids.map(() => rand() < 0.3 ? 'shared' : 'soft')
    if (!modes.includes('soft')) modes[modes.length - 1] = 'soft'
    ids.forEach((id, i) => {
      steps.push({ op: 'get', id, lock: modes[i] })
      if (modes[i] === 'soft') writable.push(id)
    })
  }
  const n = 2 + rand.int(6)
  for (let i = 0; i < n; i++) {
    const step = randomStep(rand, locking === 'random')
    if (writable.length > 0 && RECORD_WRITES.has(step.op)) step.id = writable[rand.int(writable.length)]
    steps.push(step)
  }
  for (const step of steps) step.delay = rand.int(3)
  return {
    kind: 'tx',
    steps,
    salt: rand.int(1000),
    start: rand.int(10),
    abort: rand() < 0.08,
    abortIfOdd: rand() < 0.08,
    sync: rand() < 0.1
  }
}

/** An insert of a name no record has yet (in all likelihood). */
const freshInsert = rand => ({ op: 'insert', name: rand.pick(NAMES) + rand.int(1000) })

function plainProgram (rand) {
  if (INSERTS && rand() < 0.7) return { kind: 'plain', steps: [freshInsert(rand)], salt: rand.int(1000), start: rand.int(10) }
  const step = rand.pick([
    () => ({ op: 'add', key: rand.pick(KEYS) }),
    () => ({ op: 'bump', id: itemId(rand) }),
    () => ({ op: 'insert', name: rand.pick(NAMES) }),
    () => ({ op: 'del', id: itemId(rand) })
  ])()
  return { kind: 'plain', steps: [step], salt: rand.int(1000), start: rand.int(10) }
}

/** One read or write. Without `id`, a step targets an id read before (see target()). */
function randomStep (rand, locks) {
  const lock = () => locks && rand() < 0.4 ? rand.pick(LOCKS) : undefined
  const id = () => rand() < 0.5 ? itemId(rand) : undefined
  const limit = () => maybe(rand, 0.5, () => 1 + rand.int(3))
  if (INSERTS && rand() < 0.4) return freshInsert(rand)
  const r = rand.int(100)
  if (r < 14) return { op: 'get', id: id(), fallback: itemId(rand), lock: lock() }
  if (r < 22) return { op: 'getBy', name: rand.pick(NAMES), lock: lock() }
  if (r < 32) return { op: 'queryGroup', range: { gte: maybe(rand, 0.6, () => rand.int(GROUPS)), lte: maybe(rand, 0.6, () => rand.int(GROUPS)), limit: limit(), reverse: rand() < 0.3, lock: lock() } }
  if (r < 40) return { op: 'queryIds', range: { gt: maybe(rand, 0.6, () => rand.int(MAX_ID)), lte: maybe(rand, 0.6, () => rand.int(MAX_ID)), limit: limit(), reverse: rand() < 0.3, lock: lock() } }
  if (r < 46) return { op: 'count', group: maybe(rand, 0.7, () => rand.int(GROUPS)) }
  if (r < 51) return { op: 'counter', key: rand.pick(KEYS) }
  if (r < 56) return { op: 'notes', id: id(), fallback: itemId(rand), range: { limit: limit(), reverse: rand() < 0.3 } }
  if (r < 59) return { op: 'lastSeq', id: id(), fallback: itemId(rand) }
  if (r < 67) return { op: 'insert', name: rand.pick(NAMES) }
  if (r < 77) return { op: 'update', id: id(), fallback: itemId(rand), patch: rand.pick(['value', 'group', 'name', 'both']), name: rand.pick(NAMES) }
  if (r < 81) return { op: 'bump', id: id(), fallback: itemId(rand) }
  if (r < 85) return { op: 'del', id: id(), fallback: itemId(rand) }
  if (r < 93) return { op: 'add', key: rand.pick(KEYS) }
  return { op: 'append', id: id(), fallback: itemId(rand) }
}

// ---------------------------------------------------------------------------
// Programs: one interpreter for levelkit and for the reference model.

/** A stable text of a value: object keys sorted (records come back in any key order). */
function canon (value) {
  if (value === undefined) return 'u'
  if (Array.isArray(value)) return `[${value.map(canon).join(',')}]`
  if (value !== null && typeof value === 'object') return `{${Object.keys(value).sort().map(k => `${k}:${canon(value[k])}`).join(',')}}`
  return JSON.stringify(value)
}

function mix (acc, value) {
  let h = acc
  for (const c of canon(value)) h = (h * 31 + c.charCodeAt(0)) % 1000003
  return h
}

/**
 * Run a program's steps through `api`, pushing what each step reads (or the
 * outcome of each write) to `seen`. Returns what the writes were computed
 * from: a hash of everything read.
 */
async function execute (api, program, seen, pause) {
  let acc = program.salt
  /** @type {number[]} ids of the records the last read returned */
  let ids = []
  const see = value => { seen.push(value); acc = mix(acc, value) }
  const target = step => step.id ?? (ids.length > 0 ? ids[acc % ids.length] : step.fallback)
  const write = async fn => {
    try {
      return await fn()
    } catch (err) {
      if (OUTCOMES.has(err?.code)) return { error: err.code }
      throw err
    }
  }
  for (const step of program.steps) {
    if (pause) await pause(step.delay)
    switch (step.op) {
      case 'get':
      case 'getBy': {
        const record = step.op === 'get' ? await api.get(target(step), step.lock) : await api.getBy(step.name, step.lock)
        see(record)
        ids = record ? [record.id] : []
        break
      }
      case 'queryGroup':
      case 'queryIds': {
        const records = await api[step.op](step.range)
        see(records)
        ids = records.map(r => r.id)
        break
      }
      case 'count': see(await api.count(step.group)); break
      case 'counter': see(await api.counter(step.key)); break
      case 'notes': see(await api.notes(target(step), step.range)); break
      case 'lastSeq': see(await api.lastSeq(target(step))); break
      case 'insert': {
        const id = await write(() => api.insert({ name: step.name, group: acc % GROUPS, value: acc % 100 }, seen.length))
        see(id)
        if (typeof id === 'number') ids = [id]
        break
      }
      case 'update': see(await write(() => api.update(target(step), patchOf(step, acc)))); break
      case 'bump': see(await write(() => api.bump(target(step)))); break
      case 'del': see(await write(() => api.del(target(step)))); break
      case 'add': see(await write(() => api.add(step.key, (acc % 7) - 3))); break
      case 'append': see(await write(() => api.append(target(step), { v: acc % 100 }))); break
      default: throw new Error(`unknown step ${step.op}`)
    }
  }
  return acc
}

function patchOf (step, acc) {
  switch (step.patch) {
    case 'value': return { value: acc % 100 }
    case 'group': return { group: acc % GROUPS }
    case 'name': return { name: step.name }
    default: return { value: acc % 100, group: (acc >> 2) % GROUPS }
  }
}

const bump = record => ({ ...record, value: (record.value + 1) % 100 })

/** The end of a transaction's program: it may give up, leaving a trace that must not last. */
async function finish (api, program, acc) {
  if (program.abortIfOdd && acc % 2 === 1) throw abortError('odd')
  if (program.abort) {
    await api.add('poison', 1)
    throw abortError('always')
  }
}

function abortError (why) {
  return Object.assign(new Error(`deliberate abort (${why})`), { code: ABORT })
}

/** @param {any} given */
function defined (given) {
  return Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined))
}

/** The program API on levelkit: bound to a transaction, or plain (scope null). */
function levelkitApi (m, scope) {
  const items = scope ? m.items.in(scope) : m.items
  const notes = scope ? m.notes.in(scope) : m.notes
  const totals = scope ? m.totals.in(scope) : m.totals
  const locked = lock => lock === undefined ? undefined : { lock }
  return {
    get: (id, lock) => items.get(id, locked(lock)),
    getBy: (name, lock) => items.getBy('name', name, locked(lock)),
    queryGroup: range => items.query(defined({ index: 'group', ...range })).all(),
    queryIds: range => items.query(defined(range)).all(),
    count: group => group === undefined ? items.count() : items.count({ index: 'group', eq: group }),
    counter: key => totals.get(key),
    notes: async (parent, range) => {
      const entries = []
      for await (const entry of notes.range(parent, defined(range)).entries()) entries.push(entry)
      return entries
    },
    lastSeq: parent => notes.lastSeq(parent),
    insert: record => items.insert(record),
    update: (id, patch) => items.update(id, patch),
    bump: id => items.update(id, bump),
    del: id => items.del(id),
    add: (key, delta) => totals.add(key, delta),
    append: (parent, value) => notes.append(parent, value)
  }
}

function declare (db, schema) {
  const items = db.collection('items', {
    indexes: {
      name: { key: r => r.name, unique: true, covering: schema.covering },
      group: { key: r => r.group }
    }
  })
  const notes = db.children('notes', { parent: items, ...defined({ blockSize: schema.blockSize }) })
  const totals = db.counter('totals')
  return { items, notes, totals }
}

// ---------------------------------------------------------------------------
// The reference model

class Reference {
  constructor () {
    /** @type {Map<number, any>} */
    this.items = new Map()
    /** every id handed out so far: never handed out again */
    this.used = new Set()
    this.lastId = 0
    /** @type {Map<number, Map<number, any>>} */
    this.notes = new Map()
    /** @type {Map<number, number>} */
    this.noteSeqs = new Map()
    /** @type {Map<string, number>} */
    this.totals = new Map()
  }

  sorted () {
    return [...this.items.values()].sort((a, b) => a.id - b.id)
  }

  /**
   * The program API on the reference. `claimed`: what the committed attempt
   * being replayed read, step by step. A transaction's insert takes an id
   * reserved in memory when it runs, so ids are neither consecutive (an
   * attempt that does not commit leaves its id unused) nor in commit order;
   * what the reference checks is that the id is a new one.
   * @param {any[]} [claimed]
   */
  api (claimed) {
    const ref = this
    const fail = code => { throw Object.assign(new Error(code), { code }) }
    const ranged = (list, { limit, reverse }) => {
      if (reverse) list.reverse()
      return limit === undefined ? list : list.slice(0, limit)
    }
    const owner = name => ref.sorted().find(r => r.name === name)
    const store = next => {
      const other = owner(next.name)
      if (other && other.id !== next.id) fail('LEVELKIT_UNIQUE')
      ref.items.set(next.id, next)
      return next
    }
    return {
      get: id => ref.items.get(id),
      getBy: name => owner(name),
      queryGroup: range => ranged(ref.sorted()
        .filter(r => (range.gte === undefined || r.group >= range.gte) && (range.lte === undefined || r.group <= range.lte))
        .sort((a, b) => a.group - b.group || a.id - b.id), range),
      queryIds: range => ranged(ref.sorted()
        .filter(r => (range.gt === undefined || r.id > range.gt) && (range.lte === undefined || r.id <= range.lte)), range),
      count: group => ref.sorted().filter(r => group === undefined || r.group === group).length,
      counter: key => ref.totals.get(key) ?? 0,
      notes: (parent, range) => ranged([...(ref.notes.get(parent) ?? new Map())].sort((a, b) => a[0] - b[0]), range),
      lastSeq: parent => ref.noteSeqs.get(parent) ?? 0,
      insert: (record, step) => {
        if (owner(record.name)) fail('LEVELKIT_UNIQUE')
        const wanted = claimed?.[step]
        // Not a new id: the next one, which differs from it.
        const id = Number.isSafeInteger(wanted) && wanted > 0 && !ref.used.has(wanted) ? wanted : ref.lastId + 1
        store({ ...record, id })
        ref.used.add(id)
        ref.lastId = Math.max(ref.lastId, id)
        return id
      },
      update: (id, patch) => {
        const old = ref.items.get(id)
        if (!old) fail('LEVELKIT_NOT_FOUND')
        return store({ ...old, ...patch })
      },
      bump: id => {
        const old = ref.items.get(id)
        if (!old) fail('LEVELKIT_NOT_FOUND')
        return store(bump(old))
      },
      del: id => {
        if (!ref.items.delete(id)) return false
        ref.notes.delete(id)
        ref.noteSeqs.delete(id)
        return true
      },
      add: (key, delta) => {
        const value = (ref.totals.get(key) ?? 0) + delta
        if (value === 0) ref.totals.delete(key)
        else ref.totals.set(key, value)
        return value
      },
      append: (parent, value) => {
        if (!ref.items.has(parent)) fail('LEVELKIT_NOT_FOUND')
        const seq = (ref.noteSeqs.get(parent) ?? 0) + 1
        if (!ref.notes.has(parent)) ref.notes.set(parent, new Map())
        ref.notes.get(parent).set(seq, value)
        ref.noteSeqs.set(parent, seq)
        return seq
      }
    }
  }
}

// ---------------------------------------------------------------------------
// One history

/**
 * The commit order, observed. The write path numbers its critical sections
 * in the order they decide ops (writer.decisions); a transaction commits in
 * a critical section (Transaction#commit() hands writer.run() a function
 * that validates the reads and pushes the ops), and so does every plain
 * model operation. Critical sections run one at a time and the count is
 * raised right after the function returns, before the next one starts. So
 * wrapping writer.run() to log, when the function has returned, which
 * program it runs for (an AsyncLocalStorage label set where the program is
 * launched: db.transaction() runs the commit in that context) and the
 * count so far, logs every decision in commit order, with its number.
 *
 * Where each committed program is serialized:
 * - one that decided ops (a read-write transaction, a plain write): at its
 *   decision; its reads were checked against every decision before it;
 * - a transaction that wrote nothing: right after decision `tx.at` (read at
 *   the end of its callback), the snapshot all its reads were checked
 *   against (a read-only transaction commits nothing, so has no decision);
 * - a plain operation that decided nothing (a refusal): right after the
 *   decisions made before its critical section.
 */
function observeCommits (db, als) {
  const writer = db.writer
  const log = []
  const run = writer.run
  const note = (scope, decided) => {
    const label = als.getStore()
    log.push({ label, attempt: label?.current, before: writer.decisions, decided })
  }
  writer.run = (fn, ...rest) => run.call(writer, async scope => {
    let result
    try {
      result = await fn(scope)
    } catch (err) {
      note(scope, false)
      throw err
    }
    note(scope, scope.ops.length > 0)
    return result
  }, ...rest)
  return { log, stop: () => { delete writer.run } }
}

async function launch (db, m, entry) {
  const { program } = entry
  await sleep(program.start)
  try {
    if (program.kind === 'plain') {
      entry.current = { seen: [] }
      await execute(levelkitApi(m, null), program, entry.current.seen, null)
    } else {
      await db.transaction(async (tx, n) => {
        const attempt = { n, tx, seen: [], at: -1 }
        entry.attempts.push(attempt)
        entry.current = attempt
        const api = levelkitApi(m, tx)
        const acc = await execute(api, program, attempt.seen, sleep)
        attempt.at = tx.at
        await finish(api, program, acc)
      }, { maxRetries: 50, sync: program.sync })
    }
    entry.committed = true
  } catch (err) {
    entry.error = err
  }
}

async function runHistory (backend, seed, dir, totals) {
  const history = generateHistory(prng(seed))
  const location = dir && path.join(dir, String(seed))
  const level = backend === 'memory-async' ? lateReads(new MemoryLevel()) : null
  const db = await open(level ? { db: level, syncReads: false } : location ? { backend: 'leveldb', location } : { backend: 'memory' })
  const problems = []
  try {
    const m = declare(db, history.schema)
    const ref = new Reference()
    const refApi = ref.api()
    const agree = (actual, wanted, what) => { if (!same(actual, wanted)) problems.push(`setup: ${what} gave ${actual}, the reference ${wanted}`) }
    for (const item of history.setup.items) agree(await m.items.insert(item), refApi.insert(item), 'insert')
    for (const { parent, value } of history.setup.notes) agree(await m.notes.append(parent, value), refApi.append(parent, value), 'append')
    for (const { key, delta } of history.setup.adds) agree(await m.totals.add(key, delta), refApi.add(key, delta), 'add')

    const als = new AsyncLocalStorage()
    const observed = observeCommits(db, als)
    const base = db.writer.decisions
    const entries = history.programs.map(program => ({ program, attempts: [], current: null, committed: false, error: null }))
    const deadlocks = db.writer.locks.stats().deadlocks
    try {
      await Promise.all(entries.map(entry => als.run(entry, () => launch(db, m, entry))))
    } finally {
      observed.stop()
    }
    totals.deadlocks += db.writer.locks.stats().deadlocks - deadlocks

    const events = placeCommits(entries, observed.log, base, problems, totals)
    if (problems.length === 0) await replay(events, ref, problems)
    if (problems.length === 0) await compareFinal(db, m, ref, problems)
    if (problems.length > 0) problems.push(`history: ${JSON.stringify({ locking: history.locking, schema: history.schema })}`)
  } finally {
    await db.close()
    if (level) await level.close()
  }
  return problems
}

/**
 * A memory database whose reads answer 0-2 ms late, with what they read
 * when made (as a round trip to a server does): other decisions are made
 * while a transaction's reads are on their way.
 * @param {MemoryLevel<any, any>} level
 */
function lateReads (level) {
  const late = (/** @type {Promise<any>} */ read) => read.then(value => new Promise(resolve => setTimeout(resolve, Math.floor(Math.random() * 3), value)))
  const methods = /** @type {any} */ (level)
  for (const name of ['_get', '_getMany']) {
    const read = methods[name]
    methods[name] = function (/** @type {any[]} */ ...args) { return late(read.apply(this, args)) }
  }
  const iterator = methods._iterator
  methods._iterator = function (/** @type {any[]} */ ...args) {
    const it = iterator.apply(this, args)
    for (const name of ['_next', '_nextv', '_all']) {
      const read = it[name]
      it[name] = function (/** @type {any[]} */ ...args) { return late(read.apply(this, args)) }
    }
    return it
  }
  return level
}

/** Each committed program with where it is serialized (see observeCommits()); checks what was logged. */
function placeCommits (entries, log, base, problems, totals) {
  const decided = log.filter(e => e.decided)
  decided.forEach((e, i) => {
    if (e.before !== base + i) problems.push(`decision ${i} of the history was logged after ${e.before} decisions, expected ${base + i}: a decision was not observed`)
  })
  const events = []
  for (const entry of entries) {
    const { program } = entry
    const mine = log.filter(e => e.label === entry)
    const commits = mine.filter(e => e.decided)
    const what = `${program.kind} ${JSON.stringify(program)}`
    if (!entry.committed) {
      const err = entry.error
      if (err?.code === ABORT) totals.aborted++
      else if (GIVE_UPS.has(err?.code)) totals.gaveUp[err.code] = (totals.gaveUp[err.code] ?? 0) + 1
      else problems.push(`${what} failed unexpectedly: ${err?.stack ?? err}`)
      if (commits.length > 0) problems.push(`${what} rejected with ${err?.code} but its ops were decided`)
      continue
    }
    if (commits.length > 1) problems.push(`${what} decided ops ${commits.length} times`)
    if (program.kind === 'tx') {
      const attempt = entry.current
      totals.committed++
      if (attempt.n > 1) totals.retried++
      if (commits.length === 1) {
        if (commits[0].attempt !== attempt) problems.push(`${what}: decided by attempt ${commits[0].attempt?.n}, resolved by attempt ${attempt.n}`)
        events.push({ key: 2 * (commits[0].before + 1), entry, seen: attempt.seen })
      } else {
        if (attempt.tx.ops.length > 0) problems.push(`${what}: committed ${attempt.tx.ops.length} ops without a decision`)
        totals.readOnly++
        events.push({ key: 2 * attempt.at + 1, entry, seen: attempt.seen })
      }
    } else {
      totals.plain++
      const last = mine[mine.length - 1]
      if (last === undefined) {
        problems.push(`${what}: resolved without a critical section`)
        continue
      }
      events.push({ key: last.decided ? 2 * (last.before + 1) : 2 * last.before + 1, entry, seen: entry.current.seen })
    }
  }
  for (const { seen } of events) {
    for (const value of seen) if (OUTCOMES.has(value?.error)) totals.outcomes[value.error] = (totals.outcomes[value.error] ?? 0) + 1
  }
  // Stable: programs serialized at one point that decided nothing read the same state.
  return events.sort((a, b) => a.key - b.key)
}

/** Run the committed programs on the reference, one at a time, in commit order. */
async function replay (events, ref, problems) {
  for (let i = 0; i < events.length; i++) {
    const { entry, seen, key } = events[i]
    const { program } = entry
    const api = ref.api(seen)
    const replayed = []
    let thrown = null
    try {
      const acc = await execute(api, program, replayed, null)
      if (program.kind === 'tx') await finish(api, program, acc)
    } catch (err) {
      thrown = err
    }
    if (thrown !== null || !same(replayed, seen)) {
      const place = key % 2 === 0 ? `decision ${key / 2}` : `a read-only point after decision ${(key - 1) / 2}`
      problems.push(`commit ${i} of ${events.length} (${place}, attempt ${entry.current?.n ?? '-'}): serial replay in commit order ${thrown ? `threw ${thrown.message}` : 'read otherwise'}`)
      problems.push(`  program: ${JSON.stringify(program)}`)
      problems.push(`  committed attempt read: ${JSON.stringify(seen)}`)
      problems.push(`  serial replay read:     ${JSON.stringify(replayed)}`)
      return
    }
  }
}

async function compareFinal (db, m, ref, problems) {
  const expect = (actual, wanted, what) => {
    if (!same(actual, wanted)) problems.push(`final ${what}: ${JSON.stringify(actual)}, expected ${JSON.stringify(wanted)}`)
  }
  const api = ref.api()
  const lk = levelkitApi(m, null)
  expect(await m.items.query().all(), ref.sorted(), 'items')
  for (const name of NAMES) expect(await lk.getBy(name), api.getBy(name), `getBy(${name})`)
  for (let g = 0; g < GROUPS; g++) {
    expect(await lk.count(g), api.count(g), `count(group ${g})`)
    expect(await lk.queryGroup({ gte: g, lte: g }), api.queryGroup({ gte: g, lte: g }), `query(group ${g})`)
  }
  for (const key of [...KEYS, 'poison']) expect(await lk.counter(key), api.counter(key), `counter ${key}`)
  for (let id = 1; id <= Math.max(ref.lastId, MAX_ID); id++) {
    expect(await lk.notes(id, {}), api.notes(id, {}), `notes of ${id}`)
    expect(await lk.lastSeq(id), api.lastSeq(id), `lastSeq(${id})`)
  }
  const report = await db.check()
  expect(report.problems, [], 'db.check()')
}

// ---------------------------------------------------------------------------
// The tests

async function histories (t, backend, count) {
  const dir = backend === 'leveldb' ? await fs.mkdtemp(path.join(os.tmpdir(), 'levelkit-tx-model-')) : null
  const totals = { committed: 0, retried: 0, readOnly: 0, plain: 0, aborted: 0, deadlocks: 0, gaveUp: {}, outcomes: {} }
  const started = Date.now()
  t.comment(`seeds ${SEED} to ${SEED + count - 1} (rerun one with LEVELKIT_TX_ONLY=${backend} LEVELKIT_TX_SEED=<seed> LEVELKIT_TX_HISTORIES=1)`)
  let failed = 0
  try {
    for (let i = 0; i < count && failed < 3; i++) {
      const seed = SEED + i
      const problems = await runHistory(backend, seed, dir, totals)
      if (problems.length > 0) {
        failed++
        t.fail(`history ${i} (seed ${seed}) is not serializable in commit order:\n${problems.join('\n')}`)
        t.comment(`replay: LEVELKIT_TX_ONLY=${backend} LEVELKIT_TX_SEED=${seed} LEVELKIT_TX_HISTORIES=1 npx tape test/transaction-model-test.js`)
      }
    }
  } finally {
    if (dir) await fs.rm(dir, { recursive: true, force: true })
  }
  t.comment(`${JSON.stringify(totals)} in ${Date.now() - started} ms`)
  if (failed > 0) return
  t.pass(`${count} concurrent histories replay serially in commit order, and end in the reference's state`)
  if (count >= 10) {
    // What the histories must have exercised, or they prove little.
    t.ok(totals.committed > count * 15, `most transactions commit (${totals.committed})`)
    t.ok(totals.retried > 0, `some committed on a later attempt (${totals.retried})`)
    t.ok(totals.readOnly > 0, `some committed reading only (${totals.readOnly})`)
    t.ok(totals.plain > 0, `plain operations ran among them (${totals.plain})`)
    t.ok(totals.aborted > 0, `some threw (${totals.aborted})`)
    t.ok(totals.deadlocks > 0, `some deadlocked (${totals.deadlocks})`)
    t.ok(totals.outcomes.LEVELKIT_UNIQUE > 0 && totals.outcomes.LEVELKIT_NOT_FOUND > 0, 'committed programs met taken unique values and missing records')
  }
}

test('transactions: random concurrent histories on memory-level are serializable in commit order', { skip: ONLY !== undefined && ONLY !== 'memory' }, async t => {
  await histories(t, 'memory', MEMORY_HISTORIES)
})

// Reads that answer late (syncReads: false, 0-2 ms, as on postgres and
// IndexedDB): decisions made while a transaction's reads are on their way.
test('transactions: random concurrent histories on memory-level with asynchronous reads are serializable in commit order', { skip: ONLY !== undefined && ONLY !== 'memory-async' }, async t => {
  await histories(t, 'memory-async', MEMORY_HISTORIES)
})

test('transactions: random concurrent histories on classic-level are serializable in commit order', { skip: ONLY !== undefined && ONLY !== 'leveldb' }, async t => {
  await histories(t, 'leveldb', LEVELDB_HISTORIES)
})
