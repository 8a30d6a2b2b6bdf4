// A worker of bench/shared-table.js: opens levelkit on its table, appends
// chat messages (--concurrency at a time) for a second untimed, says it is
// ready, then on 'go' appends for the timed seconds and reports what it did
// and what it cost; then ends.
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'

export const PASSWORD_COST = { scryptN: 2, pbkdf2Iterations: 1000 }
export const WARM_MS = 1000

/** @param {string} library */
export async function levelkitOf (library) {
  const { open } = await import(pathToFileURL(path.join(library, 'index.js')).href)
  const { ChatStore } = await import(pathToFileURL(path.join(library, 'chat.js')).href)
  return { open, ChatStore }
}

/** @param {{ connectionString: string, locking: string, concurrency: number }} config @param {string} table */
export const openOptions = (config, table) => ({ backend: 'postgres', connectionString: config.connectionString, table, shared: true, locking: config.locking, poolSize: config.concurrency })

/** The worker's job. @param {any} config what bench/shared-table.js passed */
async function work (config) {
  // A worker: append until told to stop, report what it did and cost.
  const { open, ChatStore } = await levelkitOf(config.library)
  const db = await open(openOptions(config, config.table))
  const store = await ChatStore.open(db, { passwordCost: PASSWORD_COST })
  const lock = /** @type {any} */ (db).level.sharedWriterLock?.() ?? null
  let k = 0
  let gaveUp = 0
  const appended = new Map()
  /** Append for `ms`, --concurrency at a time. @param {number} ms */
  const appendFor = async ms => {
    let n = 0
    const end = performance.now() + ms
    await Promise.all(Array.from({ length: config.concurrency }, async () => {
      while (performance.now() < end) {
        const chatId = config.chats[(k++ * 7919) % config.chats.length]
        try {
          await store.addChatMessage({ chatId, senderId: config.sender, text: `message ${k} of ${process.pid}` })
        } catch (err) {
          // A section that gave up after maxReruns wrote nothing: counted, not appended.
          if (/** @type {any} */ (err)?.code !== 'LEVELKIT_CONFLICT') throw err
          gaveUp++
          continue
        }
        appended.set(chatId, (appended.get(chatId) ?? 0) + 1)
        n++
      }
    }))
    return n
  }
  await appendFor(WARM_MS)
  process.send?.({ ready: true })
  await new Promise(resolve => process.once('message', resolve))
  const stats0 = lock === null ? null : structuredClone(lock.stats)
  const usage0 = process.resourceUsage()
  const cpu0 = process.cpuUsage()
  const start = performance.now()
  const ops = await appendFor(config.seconds * 1000)
  const ms = performance.now() - start
  const cpu = process.cpuUsage(cpu0)
  const usage = process.resourceUsage()
  /** @type {Record<string, number>} */
  const counted = {}
  if (lock !== null) {
    for (const name of ['failures', 'retries', 'transactions', 'tableContended']) counted[name] = (lock.stats[name] ?? 0) - (stats0[name] ?? 0)
  }
  await db.close()
  process.send?.({
    ops,
    gaveUp,
    ms,
    userMs: cpu.user / 1000,
    systemMs: cpu.system / 1000,
    minorFaults: usage.minorPageFault - usage0.minorPageFault,
    contextSwitches: usage.voluntaryContextSwitches + usage.involuntaryContextSwitches - usage0.voluntaryContextSwitches - usage0.involuntaryContextSwitches,
    counted,
    appended: [...appended]
  }, () => process.exit(0))
}

if (process.send && process.argv[2]) await work(JSON.parse(process.argv[2]))
