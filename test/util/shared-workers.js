// Worker processes of the postgres shared-mode tests
// (test/fixtures/postgres-shared-worker.js): each opens one table and runs
// one role when told to go.
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const WORKER = fileURLToPath(new URL('../fixtures/postgres-shared-worker.js', import.meta.url))

/**
 * A worker process in `role` on `table`, once it is open and ready.
 * @param {string} connectionString @param {string} table @param {string} role @param {object} args
 * @param {string} locking @param {object} [options] more options of open()
 */
export async function startWorker (connectionString, table, role, args, locking, options = {}) {
  const child = fork(WORKER, [connectionString, table, role, JSON.stringify(args), locking, JSON.stringify(options)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  /** @type {Promise<{ code: number | null, signal: string | null }>} */
  const exited = new Promise(resolve => child.once('exit', (code, signal) => resolve({ code, signal })))
  /** @type {any[]} */
  const messages = []
  /** @type {Array<() => void>} */
  let waiting = []
  child.on('message', message => {
    messages.push(message)
    for (const wake of waiting) wake()
    waiting = []
  })
  /** @param {(message: any) => boolean} match @returns {Promise<any>} */
  const next = async (match) => {
    for (;;) {
      const found = messages.find(match)
      if (found !== undefined) return found
      const ended = await Promise.race([new Promise(resolve => waiting.push(() => resolve(null))), exited])
      if (ended !== null && messages.find(match) === undefined) throw new Error(`worker (${role}) exited (${JSON.stringify(ended)}) before it said what was expected`)
    }
  }
  await next(message => message === 'ready')
  return {
    child,
    exited,
    next,
    go () { child.send({ go: true }) },
    /** The result of its role, then it closes. */
    async result () {
      const message = await next(m => typeof m === 'object' && m !== null && ('done' in m || 'failed' in m))
      child.send({ close: true })
      await exited
      if (message.failed) throw new Error(`worker (${role}) failed: ${message.failed}`)
      return message.done
    }
  }
}
