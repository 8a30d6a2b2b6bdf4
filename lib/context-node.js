import { AsyncLocalStorage } from 'node:async_hooks'

// What the current async context runs in: which db.write() callback (if
// any), so a model call that forgot `.in(w)` fails fast instead of waiting
// for the very callback that waits for it; and which critical section of a
// database shared with locking: 'serializable' (if any), whose reads go to
// its transaction (lib/backends/postgres-serializable.js). One storage for
// both, each context a frame naming the two: every AsyncLocalStorage
// enabled makes every promise of the process pay its hook again (two cost
// 30.8 KB of allocation per createChat over PostgreSQL, one 15.5; session
// 20, pgcpu).
const storage = new AsyncLocalStorage()

/**
 * @typedef {{ scope: any, section: any }} Frame
 */

// While enabled, AsyncLocalStorage makes every promise of the process pay a
// hook (on Node 20, about a third more CPU per request in the chat server's
// read routes). Only a running callback or section needs it: the storage is
// disabled once none has run for a turn of the event loop (switching it on
// and off for each of a stream of callbacks costs more than it saves), and
// run() enables it again.
let running = 0
/** @type {ReturnType<typeof setImmediate> | null} */
let idleCheck = null

function disableIfIdle () {
  idleCheck = null
  if (running === 0) storage.disable()
}

/** @returns {Frame | undefined} */
function current () {
  return running === 0 ? undefined : storage.getStore()
}

/**
 * @template T
 * @param {Frame} frame @param {() => Promise<T> | T} fn
 * @returns {Promise<T>}
 */
function enter (frame, fn) {
  running++
  return storage.run(frame, async () => {
    try {
      return await fn()
    } finally {
      if (--running === 0 && idleCheck === null) idleCheck = setImmediate(disableIfIdle)
    }
  })
}

/**
 * Run `fn` as db.write() callback `scope` (inside the critical section
 * that runs it, if any).
 * @template T
 * @param {object} scope
 * @param {() => Promise<T>} fn
 * @returns {Promise<T>}
 */
export function runInScope (scope, fn) {
  return enter({ scope, section: current()?.section }, fn)
}

/**
 * Run `fn` as a critical section of `section` (a serializable
 * transaction): currentSection() tells it, there and in what it calls.
 * @template T
 * @param {object} section
 * @param {() => Promise<T> | T} fn
 * @returns {Promise<T>}
 */
export function runInSection (section, fn) {
  return enter({ scope: current()?.scope, section }, fn)
}

/** Whether currentScope() can tell. */
export const tracksScopes = true

/** @returns {any} the write scope of the current async context, if any */
export function currentScope () {
  return current()?.scope
}

/**
 * The section whose reads `fn` starts, synchronously (see readingAs()). Null
 * outside readingAs().
 * @type {object | null}
 */
let readingSection = null

/**
 * Call `fn` as a read of critical section `section`: currentSection() tells
 * it while `fn` runs synchronously, and only then. For a section run
 * untracked (no frame of its own: a db.write() callback of levelkit's own,
 * lib/database.js writeUntracked), whose reads all go through its write
 * scope (lib/write-scope.js), which starts each one so; the backend decides
 * where a read goes when it is started.
 * @template T @param {object} section @param {() => T} fn @returns {T}
 */
export function readingAs (section, fn) {
  const before = beginReading(section)
  try {
    return fn()
  } finally {
    endReading(before)
  }
}

/**
 * readingAs() without a function to call (none to allocate, on the hot
 * path of a section's point reads): what follows, up to endReading() with
 * what this returns, starts reads as `section`'s. Paired in a try/finally.
 * @param {object} section @returns {object | null}
 */
export function beginReading (section) {
  const before = readingSection
  readingSection = section
  return before
}

/** @param {object | null} before what beginReading() returned */
export function endReading (before) {
  readingSection = before
}

/** @returns {any} the critical section (runInSection(), readingAs()) of the current async context, if any */
export function currentSection () {
  return readingSection ?? current()?.section
}

/** @returns {any} the critical section of the current async context's frame (runInSection()), readingAs() aside */
export function sectionFrame () {
  return current()?.section
}

/** @returns {any} the section readingAs() is starting a read of now, if any */
export function readingNow () {
  return readingSection
}
