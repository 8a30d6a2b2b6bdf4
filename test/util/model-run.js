// Running the model property tests' scenarios (test/util/model-commands.js)
// against levelkit and the reference model (test/util/model-reference.js):
// after every command the results (or error codes) must agree; at the end of
// every run the whole state is compared through every read path, and
// db.check() must find nothing wrong. Environment-free (no Node built-in),
// so the browser page (test/browser/model-property-entry.js) runs the same
// code against IndexedDB.

import fc from 'fast-check'
import { deepEqual } from '../browser/harness.js'
import { compareBytes } from '../../lib/bytes.js'
import { scenario, USERNAMES } from './model-commands.js'
import { Reference, ok, fail, edge, ABORT } from './model-reference.js'

/**
 * Where a scenario runs, made fresh for each run.
 * @typedef {object} ModelTarget
 * @property {(options: { syncReads: boolean, relationIndexes: boolean | 'entries' | 'lists' }) => Promise<any>} open
 *   open the database (again after a close: the same data)
 * @property {boolean} durable whether a close keeps the data (else `reopen` does nothing)
 * @property {OtherHandle | null} other a second handle on the same data (another
 *   tab, another process), or null: 'other' commands then run on the first
 * @property {() => Promise<void>} [destroy] remove the data after the run
 *
 * @typedef {object} OtherHandle
 * @property {(ops: any[], setup: Setup) => Promise<any[]>} run the commands one
 *   after the other, each settled as start() settles (opened at first use)
 * @property {(state: object, probes: any[], where: string, setup: Setup) => Promise<void>} compare
 *   compareAll() through it, with the reference's state(); throws a Mismatch
 * @property {() => Promise<void>} close
 *
 * @typedef {{ policy: any, layout: any, options: object }} Setup
 */

export function declare (db, policy, layout) {
  const users = db.collection('users', {
    indexes: {
      username: { unique: true, key: u => u.username },
      byAge: { key: u => [u.age, u.city] },
      tags: { key: u => u.tags, multi: true }
    }
  })
  const chats = db.collection('chats')
  const declareMembers = () => db.relation('members', { from: chats, to: users, onDelete: policy.members, lists: layout.lists })
  const blocks = layout.blockSize ? { blockSize: layout.blockSize } : {}
  const declareMessages = () => db.children('messages', { parent: chats, onDelete: policy.messages, ...blocks })
  if (policy.messagesFirst) {
    const messages = declareMessages()
    return { users, chats, members: declareMembers(), messages }
  }
  const members = declareMembers()
  return { users, chats, members, messages: declareMessages() }
}

function scoped (api, w) {
  return { users: api.users.in(w), chats: api.chats.in(w), members: api.members.in(w), messages: api.messages.in(w) }
}

/** Start one command; its promise settles with its result. */
function perform (api, c) {
  switch (c.type) {
    case 'insertUser': return api.users.insert(c.rec)
    case 'putUser': return api.users.put(c.id, c.rec)
    case 'updateUser': return api.users.update(c.id, c.patch)
    case 'replaceUser': return api.users.update(c.id, old => ({ ...c.rec, id: old.id }))
    case 'delUser': return api.users.del(c.id)
    case 'getUser': return api.users.get(c.id)
    case 'getBy': return api.users.getBy('username', c.username)
    case 'insertChat': return api.chats.insert(c.rec)
    case 'putChat': return api.chats.put(c.id, c.rec)
    case 'delChat': return api.chats.del(c.id)
    case 'getChat': return api.chats.get(c.id)
    case 'addMember': return api.members.add(c.chat, c.user)
    case 'removeMember': return api.members.remove(c.chat, c.user)
    case 'hasMember': return api.members.has(c.chat, c.user)
    case 'append': return api.messages.append(c.chat, c.value)
    case 'delMessage': return api.messages.del(c.chat, c.seq)
    case 'putMessage': return api.messages.put(c.chat, c.seq, c.value)
    case 'getMessage': return api.messages.get(c.chat, c.seq)
    case 'lastSeq': return api.messages.lastSeq(c.chat)
    default: throw new Error(`Unknown command ${c.type}`)
  }
}

/**
 * Call fn now (synchronously, so that writes queue in call order) and settle
 * with { ok, value } or { ok: false, code }; the error itself is kept
 * non-enumerable, for rethrowing and for messages.
 */
async function attempt (fn) {
  try {
    return ok(await fn())
  } catch (err) {
    return Object.defineProperty(fail(err.code), 'error', { value: err })
  }
}

export class Mismatch extends Error {}

function same (actual, expected, what) {
  if (deepEqual(actual, expected)) return
  const cause = actual && actual.error ? `\n  (error: ${actual.error.stack})` : ''
  throw new Mismatch(`${what}:\n  expected ${fc.stringify(expected)}\n  actual   ${fc.stringify(actual)}${cause}`)
}

/**
 * Start a command or a db.write() group (synchronously, so that it queues for
 * the write path in call order) and settle with what happened.
 */
export function start (db, api, c) {
  if (c.type !== 'write') return attempt(() => perform(api, c))
  const inner = []
  const outcome = attempt(() => db.write(async w => {
    // A callback may run again (on postgres with key locks or serializable
    // transactions, on IndexedDB after a refused claim): only its last run
    // is the group's.
    inner.length = 0
    const local = scoped(api, w)
    if (c.parallel) {
      const pending = c.ops.map(({ op }) => attempt(() => perform(local, op)))
      for (let i = 0; i < pending.length; i++) {
        const result = await pending[i]
        inner.push(result)
        if (!result.ok && !c.ops[i].caught) throw result.error
      }
    } else {
      for (const { op, caught } of c.ops) {
        const result = await attempt(() => perform(local, op))
        inner.push(result)
        if (!result.ok && !caught) throw result.error
      }
    }
    if (c.abort) throw Object.assign(new Error('abort'), { code: ABORT })
    return inner.length
  }))
  return outcome.then(outcome => ({ inner, outcome }))
}

/** What the reference model says `start(db, api, c)` settles with. */
function expect (ref, c) {
  return c.type === 'write' ? ref.group(c) : ref.apply(c)
}

async function step (run, c, where) {
  const { ref } = run
  switch (c.type) {
    case 'probe': return checkProbe(run.api, ref, c.probe, where)
    case 'pages': return checkPages(run, c, where)
    case 'reopen': return run.reopen(c.relationIndexes)
    case 'other': {
      if (run.other === null) {
        for (const [i, op] of c.ops.entries()) same(await start(run.db, run.api, op), expect(ref, op), `${where}: op ${i} ${fc.stringify(op)}`)
        return
      }
      const actual = await run.other.run(c.ops, run.setup())
      c.ops.forEach((op, i) => same(actual[i], expect(ref, op), `${where}: op ${i} through the other handle ${fc.stringify(op)}`))
      return
    }
    case 'concurrent': {
      const actual = await Promise.all(c.ops.map(op => start(run.db, run.api, op)))
      c.ops.forEach((op, i) => same(actual[i], expect(ref, op), `${where}: concurrent op ${i} ${fc.stringify(op)}`))
      return
    }
    default:
      same(await start(run.db, run.api, c), expect(ref, c), `${where}: ${fc.stringify(c)}`)
  }
}

function realQuery (api, p, extra) {
  const options = { ...p.range, reverse: p.reverse, limit: p.limit, ...extra }
  switch (p.target) {
    case 'users': return api.users.query(p.index === undefined ? options : { index: p.index, ...options })
    case 'to': return api.members.to(p.id, options)
    case 'from': return api.members.from(p.id, options)
    case 'messages': return api.messages.range(p.id, options)
  }
}

async function checkProbe (api, ref, p, where) {
  const what = `${where} probe ${fc.stringify(p)}`
  const expected = ref.query(p)
  same(await realQuery(api, p).all(), expected.map(e => e.item), `${what}: all()`)
  same(await realQuery(api, p).count(), expected.length, `${what}: count()`)

  // Collecting every page equals the whole (unlimited) query.
  const whole = ref.query(p, { limit: Infinity }).map(e => e.item)
  const pages = []
  let cursor = null
  do {
    const page = await realQuery(api, p, { limit: p.pageSize, cursor }).page()
    pages.push(page.items)
    cursor = page.cursor
    if (pages.length > whole.length + 1) throw new Mismatch(`${what}: page() does not stop (${pages.length} pages for ${whole.length} items)`)
  } while (cursor !== null)
  same(pages.flat(), whole, `${what}: items of all pages (page size ${p.pageSize})`)
  same(pages.length, Math.max(1, Math.ceil(whole.length / p.pageSize)), `${what}: number of pages`)
}

async function checkPages (run, { probe: p, between }, where) {
  const what = `${where}: pages ${fc.stringify(p)}`
  const first = await realQuery(run.api, p, { limit: p.pageSize }).page()
  const expected = run.ref.query(p, { limit: Infinity })
  same(first.items, expected.slice(0, p.pageSize).map(e => e.item), `${what}: first page`)
  same(first.cursor !== null, expected.length > p.pageSize, `${what}: a cursor if and only if there is more`)
  for (let i = 0; i < between.length; i++) await step(run, between[i], `${what}: between pages, command ${i}`)
  if (first.cursor === null) return
  const last = expected[p.pageSize - 1].key
  const rest = run.ref.query(p, { limit: Infinity }).filter(e => compareBytes(e.key, last) * (p.reverse ? -1 : 1) > 0)
  const next = await realQuery(run.api, p, { limit: p.pageSize, cursor: first.cursor }).page()
  same(next.items, rest.slice(0, p.pageSize).map(e => e.item), `${what}: second page after ${fc.stringify(between)}`)
  same(next.cursor !== null, rest.length > p.pageSize, `${what}: a cursor on the second page if and only if there is more`)
}

/** Compare everything levelkit holds with the reference, through every read path. */
export async function compareAll (db, api, ref, probes, where) {
  const byId = (a, b) => a.id - b.id
  const users = Array.from(ref.users.records.values()).sort(byId)
  const chats = Array.from(ref.chats.records.values()).sort(byId)
  same(await api.users.query().all(), users, `${where}: all users`)
  same(await api.users.count(), users.length, `${where}: users.count()`)
  same(await api.chats.query().all(), chats, `${where}: all chats`)
  const userIds = Array.from({ length: ref.users.seq + 1 }, (_, i) => i + 1)
  const chatIds = Array.from({ length: ref.chats.seq + 1 }, (_, i) => i + 1)
  // More than 16 ids: getMany() reads them with one getMany() rather than getSync() each.
  const manyIds = Array.from({ length: Math.max(20, ref.users.seq + 1) }, (_, i) => i + 1)
  same(await api.users.getMany(manyIds), manyIds.map(i => ref.users.records.get(i)), `${where}: users.getMany()`)
  for (const i of userIds) same(await api.users.get(i), ref.users.records.get(i), `${where}: users.get(${i})`)
  for (const i of chatIds) same(await api.chats.get(i), ref.chats.records.get(i), `${where}: chats.get(${i})`)
  for (const name of USERNAMES) {
    same(await api.users.getBy('username', name), ref.userByName(name), `${where}: getBy('username', ${fc.stringify(name)})`)
  }

  const everything = { range: {}, reverse: false, limit: undefined, pageSize: 3 }
  for (const index of [undefined, 'username', 'byAge', 'tags']) {
    await checkProbe(api, ref, { ...everything, target: 'users', index }, where)
    await checkProbe(api, ref, { ...everything, target: 'users', index, reverse: true, limit: 2, pageSize: 2 }, where)
  }
  for (const c of chatIds) {
    await checkProbe(api, ref, { ...everything, target: 'to', id: c }, where)
    await checkProbe(api, ref, { ...everything, target: 'messages', id: c, pageSize: 2 }, where)
    const entries = []
    for await (const entry of api.messages.range(c).entries()) entries.push(entry)
    same(entries, Array.from(ref.messages.get(c) || []).sort((a, b) => a[0] - b[0]), `${where}: messages.range(${c}).entries()`)
    same(await api.messages.lastSeq(c), ref.lastSeqs.get(c) || 0, `${where}: messages.lastSeq(${c})`)
    for (const u of userIds) same(await api.members.has(c, u), ref.edges.has(edge(c, u)), `${where}: members.has(${c}, ${u})`)
  }
  for (const u of userIds) await checkProbe(api, ref, { ...everything, target: 'from', id: u, reverse: true }, where)
  for (const p of probes) await checkProbe(api, ref, p, where)

  const report = await db.check()
  same({ ok: report.ok, problems: report.problems }, { ok: true, problems: [] }, `${where}: db.check()`)
}

/**
 * Run one scenario on a fresh target; throws a Mismatch (or levelkit's
 * error) on the first disagreement.
 * @param {ModelTarget} target
 */
export async function runScenario (target, { policy, layout, syncReads, relationIndexes, setup, commands, probes }, progress = { where: '', trace: null }) {
  /** @param {string} where */
  const at = where => {
    progress.where = where
    progress.trace?.(where)
  }
  const run = {
    ref: new Reference(policy),
    db: null,
    api: null,
    other: target.other,
    options: { syncReads, relationIndexes },
    setup: () => ({ policy, layout, options: run.options }),
    async open () {
      run.db = await target.open(run.options)
      run.api = declare(run.db, policy, layout)
    },
    async reopen (relationIndexes) {
      if (!target.durable) return
      await run.other?.close()
      const db = run.db
      run.db = null
      await db.close()
      run.options = { ...run.options, relationIndexes }
      await run.open()
      // A relation whose stored layout is not its declared one (on
      // IndexedDB, reverse lists opened with relationIndexes: true) is moved
      // at its first use, which a db.write() callback cannot wait for
      // (LEVELKIT_INDEX_BUILDING, as documented): make the first use a read,
      // which waits for the move.
      await run.api.members.from(1).all()
    }
  }
  try {
    at(`opening (${fc.stringify({ policy, layout, syncReads, relationIndexes })})`)
    await run.open()
    for (let i = 0; i < setup.length; i++) {
      at(`setup command ${i} ${fc.stringify(setup[i])}`)
      await step(run, setup[i], `setup command ${i}`)
    }
    for (let i = 0; i < commands.length; i++) {
      at(`command ${i} ${fc.stringify(commands[i])}`)
      await step(run, commands[i], `command ${i}`)
    }
    at('comparing after all commands')
    await compareAll(run.db, run.api, run.ref, probes, 'after all commands')
    if (run.other) await run.other.compare(run.ref.state(), probes, 'through the other handle, after all commands', run.setup())
    if (target.durable) {
      // What was acknowledged must also be what is stored.
      at('reopening and comparing')
      await run.reopen(run.options.relationIndexes)
      await compareAll(run.db, run.api, run.ref, probes, 'after reopening')
    }
  } finally {
    at('closing')
    try {
      await run.other?.close()
      await run.db?.close()
    } finally {
      await target.destroy?.()
    }
  }
}

/**
 * A second handle on the same data in this realm: a database `openOther`
 * opens (another database on a shared PostgreSQL table; in the browser, the
 * other tab's own), with the models declared as the first handle has them.
 * @param {(options: object) => Promise<any>} openOther
 * @returns {OtherHandle}
 */
export function localOther (openOther) {
  /** @type {{ db: any, api: any } | null} */
  let handle = null
  const ensure = async ({ policy, layout, options }) => {
    if (handle === null) {
      const db = await openOther(options)
      handle = { db, api: declare(db, policy, layout) }
    }
    return handle
  }
  return {
    async run (ops, setup) {
      const { db, api } = await ensure(setup)
      const results = []
      for (const op of ops) results.push(await start(db, api, op))
      return results
    },
    async compare (state, probes, where, setup) {
      const { db, api } = await ensure(setup)
      await compareAll(db, api, Reference.from(state), probes, where)
    },
    async close () {
      const closing = handle
      handle = null
      await closing?.db.close()
    }
  }
}

/**
 * What start() settled with, as data that crosses to another realm
 * (structured cloning drops the non-enumerable error: its stack goes as text).
 * @param {any} result
 */
export function portable (result) {
  if (result && 'inner' in result) return { inner: result.inner.map(portable), outcome: portable(result.outcome) }
  return result.error === undefined ? result : { ...result, stack: String(result.error.stack ?? result.error) }
}

/** The other way: back to what start() settles with. @param {any} result */
export function revive (result) {
  if (result && 'inner' in result) return { inner: result.inner.map(revive), outcome: revive(result.outcome) }
  if (result.stack === undefined) return result
  const { stack, ...rest } = result
  return Object.defineProperty(rest, 'error', { value: { stack } })
}

/**
 * Check the property on `numRuns` random scenarios, each on a target made
 * by `makeTarget`.
 *
 * A run that takes longer than `timeout` ms fails with the step it was
 * stuck in, and every run after it passes at once, unmade: shrinking a hang
 * would cost `timeout` per candidate (most hang too) and leave what each
 * hung run holds (locks, connections, open transactions) held, so the
 * failure reported is the first hung scenario, with its seed and path.
 * `trace`, if given, is told each step as it starts.
 * @param {() => Promise<ModelTarget>} makeTarget
 * @param {{ numRuns: number, seed: number, path?: string, timeout?: number, trace?: ((step: string) => void) | null }} options
 * @returns {Promise<{ failed: boolean, numRuns: number, report: string, counterexamplePath: string | null, ms: number }>}
 */
export async function checkModel (makeTarget, { numRuns, seed, path, timeout, trace = null }) {
  const started = Date.now()
  let hung = false
  let runs = 0
  const property = fc.asyncProperty(scenario, async s => {
    if (hung) return
    const progress = { where: 'making the target', trace: trace === null ? null : (/** @type {string} */ step) => trace(`run ${runs}: ${step}`) }
    runs++
    const run = (async () => runScenario(await makeTarget(), s, progress))()
    if (!timeout) return run
    /** @type {any} */
    let timer
    const expired = new Promise((resolve, reject) => {
      timer = setTimeout(() => {
        hung = true
        reject(new Mismatch(`The run did not end within ${timeout} ms: stuck at ${progress.where} (a hang, or a very slow step; not shrunk)`))
      }, timeout)
    })
    try {
      await Promise.race([run, expired])
    } finally {
      clearTimeout(timer)
    }
  })
  const details = await fc.check(property, {
    numRuns,
    seed,
    path,
    endOnFailure: path !== undefined,
    includeErrorInReport: true
  })
  return {
    failed: details.failed,
    numRuns: details.numRuns,
    report: details.failed ? fc.defaultReportMessage(details) ?? '' : '',
    counterexamplePath: details.counterexamplePath,
    ms: Date.now() - started
  }
}
