// One layout of a throughput run of bench/one-vs-many.js, in a process of
// its own (forked by it), so that its open files, threads and memory are
// its own.
//
// The parent keeps both layouts' processes alive at once and has them take
// turns, slice by slice, so load from elsewhere on the machine hits both
// alike. Protocol (IPC, one request at a time, every answer is
// { ok, result } or { ok: false, error }):
//   { type: 'open', config }      open the layout in a fresh directory,
//                                 preload the users, pre-generate the sends;
//                                 answers the fds/threads/RSS before and after
//                                 opening
//   { type: 'slice', part, k, slices }
//                                 time slice k of `slices` of the part:
//                                 'sequential' (sends one at a time) or
//                                 'concurrent' (--concurrency lanes); answers ms
//   { type: 'finish' }            fds/threads/RSS after the writes, check
//                                 the stores agree, close, size on disk; exits

import fs from 'node:fs'
import { performance } from 'node:perf_hooks'
import { openLayout, checkLayout, userKey, NAMESPACES } from './one-vs-many-stores.js'
import { prng, messageText, openFds, fdKinds, rss, threads, dirSize } from './seeds-common.js'

/**
 * @typedef {{ layout: 'one' | 'many', dir: string, ops: number, concurrency: number, textSize: number,
 *   chats: number, users: number, manyWrite: 'parallel' | 'sequential', keepDb?: boolean }} Config
 */

/** @type {any} */
let state = null

/** @param {Config} config */
async function open (config) {
  const rand = prng(0xc0ffee)
  const texts = Array.from({ length: 256 }, () => messageText(rand, config.textSize))
  const before = { fds: openFds(), threads: threads(), ...rss() }
  const openStart = performance.now()
  const layout = await openLayout(config.layout, config.dir, { manyWrite: config.manyWrite })
  const openMs = performance.now() - openStart
  const afterOpen = { fds: openFds(), fdKinds: fdKinds(), threads: threads(), ...rss() }

  const batch = layout.stores.users.batch()
  for (let u = 0; u < config.users; u++) batch.put(userKey(u), JSON.stringify({ name: 'user ' + u }))
  await batch.write()

  const seqs = new Int32Array(config.chats)
  let ts = Date.UTC(2026, 0, 1)
  let i = 0
  const next = (/** @type {number} */ chat) => ({ chat, seq: ++seqs[chat], from: rand.int(config.users), text: texts[i++ & 255], ts: ts++ })
  // Pre-generated, so the timed loops only write. With sends in flight, each
  // lane has chats of its own (chat % lanes === lane): two sends to one chat
  // are never in flight together, so every counter ends at its chat's last
  // seq, as in the sequential part.
  const sequential = Array.from({ length: config.ops }, () => next(rand.int(config.chats)))
  const lanes = Math.min(config.concurrency, config.ops, config.chats)
  const perLane = Math.ceil(config.ops / lanes)
  const chatsPerLane = Math.floor(config.chats / lanes)
  const concurrent = Array.from({ length: lanes }, (_, lane) =>
    Array.from({ length: perLane }, () => next(lane + lanes * rand.int(chatsPerLane))))
  state = { config, layout, sequential, concurrent, lanes, perLane, before, afterOpen, openMs }
  return { before, afterOpen, openMs }
}

/** @param {number} n @param {number} k @param {number} slices */
const bounds = (n, k, slices) => [Math.round(k * n / slices), Math.round((k + 1) * n / slices)]

/** @param {'sequential' | 'concurrent'} part @param {number} k @param {number} slices */
async function slice (part, k, slices) {
  const { layout, sequential, concurrent, perLane } = state
  const start = performance.now()
  if (part === 'sequential') {
    const [from, to] = bounds(sequential.length, k, slices)
    for (let i = from; i < to; i++) await layout.send(sequential[i])
  } else {
    const [from, to] = bounds(perLane, k, slices)
    await Promise.all(concurrent.map(async (/** @type {any[]} */ list) => {
      for (let i = from; i < to; i++) await layout.send(list[i])
    }))
  }
  return performance.now() - start
}

async function finish () {
  const { config, layout, lanes, perLane, before, afterOpen, openMs } = state
  const afterWrites = { fds: openFds(), fdKinds: fdKinds(), threads: threads(), ...rss() }
  const check = await checkLayout(layout)
  const closeStart = performance.now()
  await layout.close()
  const closeMs = performance.now() - closeStart
  const dbBytes = dirSize(config.dir)
  if (!config.keepDb) fs.rmSync(config.dir, { recursive: true, force: true })
  const usage = process.resourceUsage()
  return {
    layout: config.layout,
    stores: NAMESPACES.length,
    sequentialOps: config.ops,
    concurrentOps: lanes * perLane,
    inFlight: lanes,
    openMs,
    closeMs,
    before,
    afterOpen,
    afterWrites,
    peakRssBytes: usage.maxRSS * 1024,
    cpuMs: (usage.userCPUTime + usage.systemCPUTime) / 1000,
    dbBytes,
    check
  }
}

if (process.send) {
  process.on('message', async (/** @type {any} */ message) => {
    try {
      let result
      if (message.type === 'open') result = await open(message.config)
      else if (message.type === 'slice') result = await slice(message.part, message.k, message.slices)
      else if (message.type === 'finish') result = await finish()
      else throw new Error(`Unknown request ${JSON.stringify(message.type)}`)
      process.send?.({ ok: true, result }, () => { if (message.type === 'finish') process.exit(0) })
    } catch (err) {
      const e = /** @type {Error} */ (err)
      process.send?.({ ok: false, error: e.stack || String(e) }, () => process.exit(1))
    }
  })
}
