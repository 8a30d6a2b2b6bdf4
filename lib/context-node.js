import { AsyncLocalStorage } from 'node:async_hooks'

// Which db.write() callback (if any) the current async context runs in, so a
// model call that forgot `.in(w)` fails fast instead of waiting for the very
// callback that waits for it.
const storage = new AsyncLocalStorage()

// While enabled, AsyncLocalStorage makes every promise of the process pay a
// hook (on Node 20, about a third more CPU per request in the chat server's
// read routes). Only a running callback needs it: the storage is disabled
// once no callback has run for a turn of the event loop (switching it on and
// off for each of a stream of callbacks costs more than it saves), and run()
// enables it again.
let running = 0
/** @type {ReturnType<typeof setImmediate> | null} */
let idleCheck = null

function disableIfIdle () {
  idleCheck = null
  if (running === 0) storage.disable()
}

/**
 * @template T
 * @param {object} scope
 * @param {() => Promise<T>} fn
 * @returns {Promise<T>}
 */
export function runInScope (scope, fn) {
  running++
  return storage.run(scope, async () => {
    try {
      return await fn()
    } finally {
      if (--running === 0 && idleCheck === null) idleCheck = setImmediate(disableIfIdle)
    }
  })
}

/** Whether currentScope() can tell. */
export const tracksScopes = true

/** @returns {any} the write scope of the current async context, if any */
export function currentScope () {
  return running === 0 ? undefined : storage.getStore()
}
