// Benchmark: the cost of levelkit's model layer over hand-written
// classic-level code doing the same on-disk work.
//
// Both run in this process, on separate fresh databases in a temp dir, with
// identical deterministic data: same records, same ids, same keys (tuple
// encoding from lib/tuple.js), same sublevel names, same values. After every
// round the two databases are compared entry by entry, so "same work" is
// checked, not assumed.
//
// Operations, each awaited one at a time N times (plus one concurrent one):
//   insert      users.insert({ username, age }) with a unique index on
//               username and a plain index on [age]
//   insert xC   the same with C (default 64) inserts in flight
//   update      users.update(id, { age }): moves the [age] index entry
//   query       users.query({ index: 'byAge', gte: [a], lt: [a + 50], limit: 20 }).all()
//   append      messages.append(chatId, { text }) to one of 100 chats
//
// Rounds: every round opens two FRESH databases (levelkit, raw), runs the
// phases above in order on both (each phase builds on the data of the
// previous ones, identically on both sides), compares them, and deletes them.
// Fresh databases keep the rounds comparable (same size, same LSM state).
// Within a measurement the N ops are done in 10 slices that alternate
// between the sides (A B B A ...), so both databases grow in lockstep and
// background load on a shared machine hits both alike; which side starts
// alternates per round. We report, per operation, the median over rounds of
// ops/s (N / total time of that side's slices) and raw/levelkit: the target
// is <= 1.2. A second ratio, from the median slice rates, is printed as a
// check against load spikes. The JSON in bench/out/ has every round.
//
// Usage: node bench/model-overhead.js [--n N] [--rounds R] [--concurrency C] [--quick]
//   --n N   ops per measurement for every operation (default: per operation,
//           about 1 s of levelkit time each on a 2 vCPU AMD EPYC; DEFAULT_N)
//   --quick smoke test: N = 500, 1 round, no warm-up
// Run with `node --expose-gc` to collect garbage before every measurement.

import os from 'node:os'
import fs from 'node:fs'
import path from 'node:path'
import { parseArgs } from 'node:util'
import crypto from 'node:crypto'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { ClassicLevel } from 'classic-level'
import { open, encodeTuple as encode, decodeTuple as decode } from 'levelkit'
import { prng } from 'levelkit-testkit/prng'

const require = createRequire(import.meta.url)
const here = path.dirname(fileURLToPath(import.meta.url))

const OPS = ['insert', 'insertConcurrent', 'update', 'query', 'append']
const DEFAULT_N = { insert: 10000, insertConcurrent: 20000, update: 10000, query: 3000, append: 15000 }

const { values: args } = parseArgs({
  options: {
    n: { type: 'string' },
    rounds: { type: 'string' },
    concurrency: { type: 'string' },
    quick: { type: 'boolean', default: false }
  }
})

const quick = args.quick
const ROUNDS = quick ? 1 : positive(args.rounds, 5)
const CONCURRENCY = positive(args.concurrency, 64)
const N = {}
for (const op of OPS) N[op] = quick ? 500 : positive(args.n, DEFAULT_N[op])
const CHATS = 100
const AGES = 1000
const QUERY_SPAN = 50
const QUERY_LIMIT = 20
const SLICES = 10

const LABELS = {
  insert: 'insert (unique + age index)',
  insertConcurrent: `insert, ${CONCURRENCY} in flight`,
  update: 'update (moves age entry)',
  query: `query byAge, limit ${QUERY_LIMIT}`,
  append: 'append child'
}

// ---------------------------------------------------------------------------
// Deterministic data, generated before timing and shared by both sides.

function makeWorkload (n, seed) {
  const random = prng(seed)
  const int = (k) => Math.floor(random() * k)
  const users = []
  for (let i = 0; i < n.insert + n.insertConcurrent; i++) {
    users.push({ username: 'user' + i.toString(36).padStart(5, '0'), age: int(AGES) })
  }
  // Ids are 1..users.length in insert order (on both sides; checked).
  const ages = users.map(u => u.age)
  const updates = []
  for (let i = 0; i < n.update; i++) {
    const id = 1 + int(users.length)
    // A different age, so every update moves the index entry.
    const age = (ages[id - 1] + 1 + int(AGES - 1)) % AGES
    ages[id - 1] = age
    updates.push({ id, age })
  }
  const queries = []
  for (let i = 0; i < n.query; i++) queries.push(int(AGES - QUERY_SPAN))
  const appends = []
  for (let i = 0; i < n.append; i++) appends.push({ chat: int(CHATS), text: `message ${i} ` + 'x'.repeat(int(60)) })
  return { users, updates, queries, appends }
}

// ---------------------------------------------------------------------------
// The levelkit side: just the public API.

async function openLevelkit (location) {
  const db = await open({ backend: 'leveldb', location })
  const users = db.collection('users', {
    indexes: {
      username: { unique: true, key: u => u.username },
      byAge: { key: u => [u.age] }
    }
  })
  const chats = db.collection('chats')
  const messages = db.children('messages', { parent: chats })
  return {
    name: 'levelkit',
    level: db.level,
    close: () => db.close(),
    insertUser: (user) => users.insert(user),
    updateUser: (id, patch) => users.update(id, patch),
    queryByAge: (a, b, limit) => users.query({ index: 'byAge', gte: [a], lt: [b], limit }).all(),
    insertChat: (chat) => chats.insert(chat),
    appendMessage: (chatId, value) => messages.append(chatId, value)
  }
}

// ---------------------------------------------------------------------------
// The raw side: what a competent engineer would write by hand with
// classic-level 3 for the same data model and the same on-disk layout.
// - One root database, one sublevel per namespace (names as lib/names.js),
//   keys tuple-encoded once with lib/tuple.js ('view'), values JSON ('utf8')
//   or bytes ('view').
// - Every change is one atomic batch across sublevels. The array form of
//   db.batch() is used: on classic-level 3 it measured faster than a chained
//   batch for these 2-4 op batches (one native call instead of one per op).
// - Point reads use getSync() (classic-level 3 reads from the block cache /
//   memtable on the main thread; no thread-pool round trip). Also for the
//   ~20 records of a query: faster than one getMany() here.
// - Id and per-parent sequence counters live in memory, and are persisted
//   in the same batch as the record they number.

const EMPTY = new Uint8Array(0)
const LAST = encode('last')

class Raw {
  static async open (location) {
    const raw = new Raw(new ClassicLevel(location))
    await raw.db.open()
    await raw.load()
    return raw
  }

  constructor (db) {
    this.name = 'raw'
    this.db = db
    this.level = db
    const utf8 = { keyEncoding: 'view', valueEncoding: 'utf8' }
    const view = { keyEncoding: 'view', valueEncoding: 'view' }
    this.users = db.sublevel('users', utf8)
    this.usersSeq = db.sublevel('users.seq', utf8)
    this.byUsername = db.sublevel('users.idx.username', view)
    this.byAge = db.sublevel('users.idx.byAge', view)
    this.chats = db.sublevel('chats', utf8)
    this.chatsSeq = db.sublevel('chats.seq', utf8)
    this.messages = db.sublevel('messages', utf8)
    this.messagesSeq = db.sublevel('messages.seq', utf8)
    /** usernames of inserts whose batch is not written yet */
    this.pendingUsernames = new Set()
    /** last message seq per chat id, loaded lazily */
    this.messageSeqs = new Map()
  }

  async load () {
    for (const sublevel of [this.users, this.usersSeq, this.byUsername, this.byAge, this.chats, this.chatsSeq, this.messages, this.messagesSeq]) {
      await sublevel.open()
    }
    this.lastUserId = await this.lastId(this.users, this.usersSeq)
    this.lastChatId = await this.lastId(this.chats, this.chatsSeq)
  }

  // Concurrent batches may land out of order, so the persisted counter can
  // lag the highest id: take the max with the last record's id at open.
  async lastId (records, seq) {
    const stored = await seq.get(LAST)
    const [lastKey] = await records.keys({ reverse: true, limit: 1 }).all()
    return Math.max(stored === undefined ? 0 : Number(stored), lastKey === undefined ? 0 : decode(lastKey))
  }

  close () {
    return this.db.close()
  }

  async insertUser (user) {
    const { username } = user
    const uniqueKey = encode([username])
    if (this.pendingUsernames.has(username) || this.byUsername.getSync(uniqueKey) !== undefined) {
      throw new Error(`username ${username} is taken`)
    }
    const id = ++this.lastUserId
    const idBytes = encode(id)
    this.pendingUsernames.add(username)
    try {
      await this.db.batch([
        { type: 'put', sublevel: this.users, key: idBytes, value: JSON.stringify({ id, ...user }) },
        { type: 'put', sublevel: this.byUsername, key: uniqueKey, value: idBytes },
        { type: 'put', sublevel: this.byAge, key: encode([[user.age], id]), value: EMPTY },
        { type: 'put', sublevel: this.usersSeq, key: LAST, value: String(id) }
      ])
    } finally {
      this.pendingUsernames.delete(username)
    }
    return id
  }

  // Read-modify-write without a lock: correct for one update at a time
  // (which is how it is measured), not for concurrent updates of one record.
  async updateUser (id, patch) {
    const idBytes = encode(id)
    const stored = this.users.getSync(idBytes)
    if (stored === undefined) throw new Error(`no user ${id}`)
    const old = JSON.parse(stored)
    const next = { ...old, ...patch, id }
    const ops = [{ type: 'put', sublevel: this.users, key: idBytes, value: JSON.stringify(next) }]
    if (next.age !== old.age) {
      ops.push({ type: 'del', sublevel: this.byAge, key: encode([[old.age], id]) })
      ops.push({ type: 'put', sublevel: this.byAge, key: encode([[next.age], id]), value: EMPTY })
    }
    if (next.username !== old.username) {
      const uniqueKey = encode([next.username])
      if (this.byUsername.getSync(uniqueKey) !== undefined) throw new Error(`username ${next.username} is taken`)
      ops.push({ type: 'del', sublevel: this.byUsername, key: encode([old.username]) })
      ops.push({ type: 'put', sublevel: this.byUsername, key: uniqueKey, value: idBytes })
    }
    await this.db.batch(ops)
    return next
  }

  async queryByAge (a, b, limit) {
    // Keys are encode([[age], id]); encode([[a]]) sorts before every key
    // with age a, encode([[b]]) before every key with age b.
    const keys = await this.byAge.keys({ gte: encode([[a]]), lt: encode([[b]]), limit }).all()
    const records = []
    for (const key of keys) {
      const value = this.users.getSync(encode(decode(key)[1]))
      if (value !== undefined) records.push(JSON.parse(value))
    }
    return records
  }

  async insertChat (chat) {
    const id = ++this.lastChatId
    await this.db.batch([
      { type: 'put', sublevel: this.chats, key: encode(id), value: JSON.stringify({ id, ...chat }) },
      { type: 'put', sublevel: this.chatsSeq, key: LAST, value: String(id) }
    ])
    return id
  }

  async appendMessage (chatId, value) {
    const parentKey = encode(chatId)
    if (this.chats.getSync(parentKey) === undefined) throw new Error(`no chat ${chatId}`)
    let seq = this.messageSeqs.get(chatId)
    if (seq === undefined) {
      const stored = this.messagesSeq.getSync(parentKey)
      seq = stored === undefined ? 0 : Number(stored)
    }
    seq++
    this.messageSeqs.set(chatId, seq)
    try {
      await this.db.batch([
        { type: 'put', sublevel: this.messages, key: encode([chatId, seq]), value: JSON.stringify(value) },
        { type: 'put', sublevel: this.messagesSeq, key: parentKey, value: String(seq) }
      ])
    } catch (err) {
      this.messageSeqs.delete(chatId) // reload from disk next time
      throw err
    }
    return seq
  }
}

// ---------------------------------------------------------------------------
// Phases. run(side, w, from, to) does ops [from, to) of a measurement and
// returns a checksum of what they returned, which must be equal on both
// sides. setup() is untimed.

const phases = {
  insert: {
    async run (side, w, from, to) {
      let sum = 0
      for (let i = from; i < to; i++) {
        const u = w.users[i]
        sum += await side.insertUser({ username: u.username, age: u.age })
      }
      return sum
    }
  },

  insertConcurrent: {
    async run (side, w, from, to) {
      let sum = 0
      let next = from
      const worker = async () => {
        while (next < to) {
          const u = w.users[N.insert + next++]
          const id = await side.insertUser({ username: u.username, age: u.age })
          sum += id
        }
      }
      await Promise.all(Array.from({ length: CONCURRENCY }, worker))
      return sum
    }
  },

  update: {
    async run (side, w, from, to) {
      let sum = 0
      for (let i = from; i < to; i++) {
        const { id, age } = w.updates[i]
        sum += (await side.updateUser(id, { age })).age
      }
      return sum
    }
  },

  query: {
    async run (side, w, from, to) {
      let sum = 0
      for (let i = from; i < to; i++) {
        const a = w.queries[i]
        const records = await side.queryByAge(a, a + QUERY_SPAN, QUERY_LIMIT)
        for (const r of records) sum += r.id
        sum += records.length * 1e6
      }
      return sum
    }
  },

  append: {
    async setup (side) {
      side.chatIds = []
      for (let i = 0; i < CHATS; i++) side.chatIds.push(await side.insertChat({ title: `chat ${i}` }))
    },
    async run (side, w, from, to) {
      let sum = 0
      for (let i = from; i < to; i++) {
        const { chat, text } = w.appends[i]
        sum += await side.appendMessage(side.chatIds[chat], { text })
      }
      return sum
    }
  }
}

// One measurement of `op` on both sides: N ops each, in SLICES slices that
// alternate between the sides (A B B A A B ...), so background load on a
// shared machine hits both alike. Returns ops/s and checksum per side.
async function measure (op, sides, workload) {
  const phase = phases[op]
  const ns = [0, 0]
  const sums = [0, 0]
  const sliceRates = [[], []]
  for (const side of sides) if (phase.setup) await phase.setup(side, workload)
  const n = N[op]
  const slices = Math.min(SLICES, n)
  for (let s = 0; s < slices; s++) {
    const from = Math.floor(n * s / slices)
    const to = Math.floor(n * (s + 1) / slices)
    const order = s % 2 === 0 ? [0, 1] : [1, 0]
    for (const k of order) {
      if (globalThis.gc) globalThis.gc()
      const start = process.hrtime.bigint()
      sums[k] += await phase.run(sides[k], workload, from, to)
      const took = Number(process.hrtime.bigint() - start)
      ns[k] += took
      sliceRates[k].push((to - from) / (took / 1e9))
    }
  }
  return sides.map((side, k) => ({ name: side.name, opsPerSec: n / (ns[k] / 1e9), sliceMedian: median(sliceRates[k]), sum: sums[k] }))
}

async function runRound (round, workload, tmp, results) {
  const lk = await openLevelkit(fs.mkdtempSync(path.join(tmp, 'levelkit-')))
  const raw = await Raw.open(fs.mkdtempSync(path.join(tmp, 'raw-')))
  const sides = round % 2 === 0 ? [lk, raw] : [raw, lk]
  const checks = []
  try {
    for (const op of OPS) {
      const sums = {}
      for (const { name, opsPerSec, sliceMedian, sum } of await measure(op, sides, workload)) {
        sums[name] = sum
        if (results) {
          results[op][name].push(opsPerSec)
          results[op][name + 'SliceMedian'].push(sliceMedian)
        }
      }
      if (sums.levelkit !== sums.raw) checks.push(`${op}: results differ (levelkit ${sums.levelkit}, raw ${sums.raw})`)
    }
    const diff = await compareDatabases(lk.level, raw.level)
    if (diff) checks.push(diff)
  } finally {
    await lk.close()
    await raw.close()
    fs.rmSync(lk.level.location, { recursive: true, force: true })
    fs.rmSync(raw.level.location, { recursive: true, force: true })
  }
  return checks
}

/** First difference between two databases' raw entries, or null. */
async function compareDatabases (a, b) {
  const options = { keyEncoding: 'view', valueEncoding: 'view' }
  const ia = a.iterator(options)
  const ib = b.iterator(options)
  let count = 0
  try {
    while (true) {
      const [ea, eb] = await Promise.all([ia.nextv(1000), ib.nextv(1000)])
      for (let i = 0; i < Math.min(ea.length, eb.length); i++) {
        if (Buffer.compare(ea[i][0], eb[i][0]) !== 0 || Buffer.compare(ea[i][1], eb[i][1]) !== 0) {
          return `databases differ at entry ${count + i}: levelkit ${show(ea[i][0])} vs raw ${show(eb[i][0])}`
        }
      }
      if (ea.length !== eb.length) return `databases differ in size (after ${count + Math.min(ea.length, eb.length)} entries)`
      if (ea.length === 0) return null
      count += ea.length
    }
  } finally {
    await ia.close()
    await ib.close()
  }
}

function show (bytes) {
  return JSON.stringify(Buffer.from(bytes).toString('latin1'))
}

// ---------------------------------------------------------------------------

function positive (value, fallback) {
  if (value === undefined) return fallback
  const n = Number(value)
  if (!Number.isInteger(n) || n < 1) throw new Error(`Expected a positive integer, got ${value}`)
  return n
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}

/** Hash of the levelkit code under test: lib/ changes while people work. */
function hashSources () {
  const root = path.dirname(require.resolve('levelkit/package.json'))
  const files = ['index.js', ...fs.readdirSync(path.join(root, 'lib')).filter(f => f.endsWith('.js')).sort().map(f => `lib/${f}`)]
  const hash = crypto.createHash('sha1')
  for (const file of files) hash.update(file + '\0').update(fs.readFileSync(path.join(root, file)))
  return hash.digest('hex')
}

const fmt = (n) => Math.round(n).toLocaleString('en-US')

async function main () {
  const versions = {
    node: process.version,
    cpu: os.cpus()[0].model,
    cores: os.cpus().length,
    classicLevel: require('classic-level/package.json').version,
    abstractLevel: require('abstract-level/package.json').version,
    libHash: hashSources()
  }
  console.log(`node ${versions.node}, ${versions.cpu} (${versions.cores} cores), classic-level ${versions.classicLevel}, abstract-level ${versions.abstractLevel}`)
  console.log(`levelkit sources (index.js + lib/*.js) sha1 ${versions.libHash.slice(0, 12)}, ${new Date().toISOString()}`)
  console.log(`rounds ${ROUNDS} (fresh databases per round, ${SLICES} alternating slices per measurement), concurrency ${CONCURRENCY}${quick ? ', QUICK' : ''}${globalThis.gc ? ', gc before each measurement' : ''}`)
  console.log(`N per measurement: ${OPS.map(op => `${op} ${N[op]}`).join(', ')}`)
  console.log('raw side: array batches, getSync() for point reads and for the records of a query, in-memory counters\n')

  const workload = makeWorkload(N, 42)
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'levelkit-bench-'))
  const results = {}
  for (const op of OPS) results[op] = { levelkit: [], raw: [], levelkitSliceMedian: [], rawSliceMedian: [] }
  const problems = []
  const loadavg = [] // 1-minute load average at the start of each round
  try {
    if (!quick) {
      // Warm-up: same code paths, small N, results discarded.
      const saved = { ...N }
      for (const op of OPS) N[op] = Math.min(N[op], 1000)
      await runRound(0, makeWorkload(N, 7), tmp, null)
      Object.assign(N, saved)
    }
    for (let round = 0; round < ROUNDS; round++) {
      loadavg.push(os.loadavg()[0])
      const checks = await runRound(round, workload, tmp, results)
      problems.push(...checks.map(c => `round ${round + 1}: ${c}`))
      console.log(`round ${round + 1}/${ROUNDS}: ` + OPS.map(op =>
        `${op} ${fmt(results[op].levelkit[round])}/${fmt(results[op].raw[round])}`).join(', ') + ' (levelkit/raw ops/s)')
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }

  const summary = {}
  console.log('\n' + 'operation'.padEnd(30) + 'N'.padStart(7) + 'levelkit ops/s'.padStart(16) + 'raw ops/s'.padStart(12) +
    'raw/levelkit'.padStart(14) + '  (slice medians)')
  for (const op of OPS) {
    const lk = median(results[op].levelkit)
    const raw = median(results[op].raw)
    const ratio = raw / lk
    const sliceRatio = median(results[op].rawSliceMedian) / median(results[op].levelkitSliceMedian)
    summary[op] = { levelkit: lk, raw, ratio, sliceRatio }
    console.log(LABELS[op].padEnd(30) + String(N[op]).padStart(7) + fmt(lk).padStart(16) + fmt(raw).padStart(12) +
      `${ratio.toFixed(2)}x${ratio > 1.2 ? ' !' : '  '}`.padStart(14) + `${sliceRatio.toFixed(2)}x`.padStart(10))
  }
  console.log('\nops/s: N / total time of that side\'s slices, median over rounds; "!" marks raw/levelkit > 1.2.')
  console.log('(slice medians): the same ratio from the median slice rate instead, less sensitive to load spikes.')
  console.log(`1-min load average at round starts: ${loadavg.map(l => l.toFixed(2)).join(', ')} (${versions.cores} cores)`)
  if (problems.length > 0) {
    console.log('\nCHECKS FAILED:\n  ' + problems.join('\n  '))
    process.exitCode = 1
  } else {
    console.log('checks: both sides returned the same results and left byte-identical databases')
  }

  const outDir = path.join(here, 'out')
  fs.mkdirSync(outDir, { recursive: true })
  const date = new Date()
  const file = path.join(outDir, `model-overhead-${date.toISOString().replace(/[:.]/g, '-')}.json`)
  fs.writeFileSync(file, JSON.stringify({
    date: date.toISOString(),
    ...versions,
    rounds: ROUNDS,
    concurrency: CONCURRENCY,
    quick,
    gc: !!globalThis.gc,
    n: N,
    slices: SLICES,
    loadavg,
    results,
    summary,
    problems
  }, null, 2) + '\n')
  console.log(`wrote ${path.relative(process.cwd(), file)}`)
}

await main()
