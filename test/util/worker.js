import { fork } from 'node:child_process'

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
