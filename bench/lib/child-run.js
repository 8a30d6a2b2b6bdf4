// One benchmark run in a child process of its own (a fresh heap, its own
// peak RSS, nothing left over from the run before): the parent sends the
// run's config, the child answers once with its result and exits.

import { fork } from 'node:child_process'

/**
 * Run `worker` in a child process with `config`; resolves with its result.
 * @param {string} worker path of a module that calls serveOneRun()
 * @param {any} config
 * @param {string} label names the run in an error
 * @returns {Promise<any>}
 */
export function runInChild (worker, config, label) {
  return new Promise((resolve, reject) => {
    const child = fork(worker, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    let answer = /** @type {any} */ (null)
    child.on('message', message => { answer = message })
    child.on('error', reject)
    child.on('exit', (code, signal) => {
      if (answer && answer.ok) resolve(answer.result)
      else reject(new Error(answer ? answer.error : `${label} exited with ${signal || code}`))
    })
    child.send(config)
  })
}

/**
 * In the child: run `run` on the config the parent sends, answer, and exit.
 * Does nothing when this process was not forked with an IPC channel.
 * @param {(config: any) => Promise<any>} run
 */
export function serveOneRun (run) {
  if (!process.send) return
  process.once('message', (config) => {
    run(config).then(
      result => process.send?.({ ok: true, result }, () => process.exit(0)),
      err => process.send?.({ ok: false, error: err && err.stack ? err.stack : String(err) }, () => process.exit(1))
    )
  })
}
