import fs from 'node:fs'
import { fork, execFile } from 'node:child_process'
import { prng } from './prng.js'

/**
 * Start a crash-test worker and wait until it reports 'ready' (or exits, or
 * 20 s pass).
 * @param {string} worker path of the worker module
 * @param {string[]} args
 * @returns {Promise<{ child: import('node:child_process').ChildProcess, exited: Promise<{ code: number | null, signal: string | null }>, ready: boolean }>}
 */
export async function startWorker (worker, args) {
  const child = fork(worker, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  /** @type {Promise<{ code: number | null, signal: string | null }>} */
  const exited = new Promise(resolve => child.once('exit', (code, signal) => resolve({ code, signal })))
  /** @type {any} */
  let timer
  /** @type {boolean} */
  const ready = await Promise.race([
    new Promise(resolve => child.once('message', msg => resolve(msg === 'ready'))),
    exited.then(() => false),
    new Promise(resolve => { timer = setTimeout(resolve, 20000, false) })
  ])
  clearTimeout(timer)
  return { child, exited, ready }
}

/**
 * One crash cycle: start the worker, let `beforeKill(child)` decide when,
 * then SIGKILL it.
 * @param {string} worker @param {string[]} args
 * @param {(child: import('node:child_process').ChildProcess) => Promise<void>} beforeKill
 * @returns {Promise<string | null>} what went wrong, or null if the worker was killed as planned
 */
export async function killCycle (worker, args, beforeKill) {
  const { child, exited, ready } = await startWorker(worker, args)
  if (!ready) {
    child.kill('SIGKILL')
    return 'the worker did not get ready'
  }
  await beforeKill(child)
  child.kill('SIGKILL')
  const { signal } = await exited
  return signal === 'SIGKILL' ? null : `the worker ended by itself (${signal}) instead of being killed`
}

/**
 * The worker side: keep up to `maxInFlight` operations running, forever
 * (until the parent kills the process).
 * @param {() => any} choose the next operation, or null to try again
 * @param {(op: any) => Promise<void>} run
 * @param {number} maxInFlight
 */
export async function pump (choose, run, maxInFlight) {
  const running = new Set()
  while (true) {
    for (let tries = 0; running.size < maxInFlight && tries < 20; tries++) {
      const op = choose()
      if (op === null) continue
      const p = run(op).finally(() => running.delete(p))
      running.add(p)
    }
    if (running.size > 0) await Promise.race(running)
    else await new Promise(resolve => setImmediate(resolve))
  }
}

/**
 * The worker side of start-up: its arguments, a seeded PRNG, and an ack log
 * written with writeSync (in the OS page cache before the op goes on, so it
 * survives SIGKILL). The worker exits if its parent goes away.
 */
export function workerSetup () {
  const [location, logPath, seedArg, cycleArg] = process.argv.slice(2)
  const fd = fs.openSync(logPath, 'a')
  process.on('disconnect', () => process.exit(3))
  setTimeout(() => process.exit(4), 60000).unref()
  return {
    location,
    rand: prng(Number(seedArg)),
    cycle: Number(cycleArg),
    log: (/** @type {object} */ entry) => fs.writeSync(fd, JSON.stringify(entry) + '\n')
  }
}

/**
 * The parent side: the entries of an ack log, in order. A torn last line (the
 * kill came mid-write) is dropped.
 * @param {string} logPath
 * @returns {any[]}
 */
export function readAckLog (logPath) {
  const content = fs.existsSync(logPath) ? fs.readFileSync(logPath, 'utf8') : ''
  const lines = content.split('\n')
  lines.pop()
  return lines.map(line => JSON.parse(line))
}

/**
 * The parent side: wait until the worker's ack log holds `count` acknowledged
 * operations (or `ms` passed), so a kill comes after real work however slow
 * the machine is rather than after a fixed time.
 * @param {string} logPath @param {number} count @param {number} [ms]
 * @returns {Promise<number>} how many were acknowledged
 */
export async function acknowledged (logPath, count, ms = 30000) {
  const deadline = Date.now() + ms
  while (true) {
    const acks = readAckLog(logPath).filter(entry => entry.t === 'a').length
    if (acks >= count || Date.now() >= deadline) return acks
    await new Promise(resolve => setTimeout(resolve, 20))
  }
}

/**
 * Run a Node script to its end.
 * @param {string} file @param {string[]} args
 * @param {{ cwd?: string, execArgv?: string[] }} [options] its working directory, and Node options before the script
 * @returns {Promise<{ code: number, stdout: string, stderr: string }>}
 */
export function runScript (file, args, { cwd, execArgv = [] } = {}) {
  return new Promise(resolve => {
    execFile(process.execPath, [...execArgv, file, ...args], { cwd }, (err, stdout, stderr) => {
      resolve({ code: err ? /** @type {any} */ (err).code : 0, stdout, stderr })
    })
  })
}
