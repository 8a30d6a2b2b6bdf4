// The parent's handle on one server of bench/chat-server.js: forks
// bench/lib/chat-server-worker.js, which fills its store and listens on a
// random port of 127.0.0.1; asks it for its CPU time around each
// measurement; stops it. To profile the servers, give their node options
// in BENCH_SERVER_NODE_ARGS (e.g. '--cpu-prof --cpu-prof-dir=prof').

import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const WORKER = fileURLToPath(new URL('./chat-server-worker.js', import.meta.url))

/**
 * @typedef {{
 *   target: string, url: string, port: number, populate: Record<string, number> | null,
 *   cpuMs (): Promise<number>, stop (): Promise<{ dbBytes: number, peakRssBytes: number }>
 * }} ServerHandle
 */

/**
 * Start one server and resolve once it listens.
 * @param {import('./chat-server-worker.js').Config} config
 * @returns {Promise<ServerHandle>}
 */
export function startServer (config) {
  const execArgv = [...process.execArgv, ...(process.env.BENCH_SERVER_NODE_ARGS || '').split(' ').filter(Boolean)]
  const child = fork(WORKER, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv })
  /** @type {Array<{ type: string, resolve: (message: any) => void }>} */
  const waiting = []
  let exited = /** @type {Error | null} */ (null)
  const failAll = (/** @type {Error} */ err) => {
    exited = err
    for (const w of waiting.splice(0)) w.resolve({ type: 'error', error: err.message })
  }
  child.on('message', (/** @type {any} */ message) => {
    const i = message.type === 'error' ? 0 : waiting.findIndex(w => w.type === message.type)
    if (i >= 0 && waiting.length > 0) waiting.splice(i, 1)[0].resolve(message)
  })
  child.on('error', failAll)
  child.on('exit', (code, signal) => failAll(new Error(`The ${config.target} server exited with ${signal || code}`)))
  /** Send a message and wait for the answer of type `type`. @param {any} message @param {string} type */
  const ask = (message, type) => new Promise((resolve, reject) => {
    if (exited) return reject(exited)
    waiting.push({ type, resolve: answer => answer.type === 'error' ? reject(new Error(`${config.target} server: ${answer.error}`)) : resolve(answer) })
    child.send(message)
  })
  return ask({ type: 'start', config }, 'ready').then(ready => ({
    target: config.target,
    port: ready.port,
    url: `http://127.0.0.1:${ready.port}`,
    populate: ready.populate,
    cpuMs: () => ask({ type: 'usage' }, 'usage').then(answer => answer.cpuMs),
    stop: () => ask({ type: 'stop' }, 'stopped').then(({ dbBytes, peakRssBytes }) => ({ dbBytes, peakRssBytes }))
  }), err => {
    child.kill()
    throw err
  })
}
