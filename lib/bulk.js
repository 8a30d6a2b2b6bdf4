import { invalid, levelkitError, codes } from './errors.js'
import { describe, readInput, noop } from './common.js'
import { optionsOf } from './options.js'
import { scopeOf, modelOf, writeThrough } from './model-handle.js'

// Records per batch unless the caller says otherwise. Measured with
// bench/sorted-write.js --mode levelkit at 1M entries (2026-11-26): batches
// of 250 took 13.2-14.3 s and 128 MB peak RSS where batches of 1000 took
// 16.5-16.7 s and 149 MB (4000: 17.6 s, 220 MB; 16000: 19.5 s, 398 MB;
// 100: 14.7 s). A batch is alive until it is written, long enough for the
// garbage collector to copy it out of the young generation: smaller ones
// cost it less. Each batch still pays a critical section and a write.
export const DEFAULT_BATCH_SIZE = 250
// One batch is one critical section and one atomic LevelDB batch, held in
// memory whole: bounded, so a typo cannot ask for a batch of a billion.
export const MAX_BATCH_SIZE = 100000

/**
 * @typedef {import('./write-scope.js').WriteScope} WriteScope
 * @typedef {'collection.insertMany()' | 'collection.putMany()' | 'children.appendMany()' | 'relation.addMany()'} BulkCall
 */

/**
 * The batch size a bulk call was given, checked.
 * @param {unknown} options @param {BulkCall} call
 * @returns {number}
 */
export function batchSizeOf (options, call) {
  const { batchSize = DEFAULT_BATCH_SIZE } = optionsOf(options, call)
  if (!Number.isSafeInteger(batchSize) || batchSize < 1 || batchSize > MAX_BATCH_SIZE) {
    throw invalid(`The batchSize option of ${call} must be an integer from 1 to ${MAX_BATCH_SIZE}, got ${describe(batchSize)}`)
  }
  return batchSize
}

const ARRAY_VALUES = Array.prototype[Symbol.iterator]

/**
 * Up to `size` items of `array` from `start`, as its iterator would read them.
 * @param {unknown[]} array @param {number} start @param {number} size
 */
function arrayBatch (array, start, size) {
  const items = []
  for (let i = start; i < start + size && i < array.length; i++) items.push(array[i])
  return items
}

/**
 * The input of a bulk call (an array, an iterable or an async iterable) in
 * batches of up to `size` items, pulled as they are needed: an iterable is
 * never read further than the batch being made.
 * @param {unknown} input @param {number} size @param {string} what the input, as the subject of a sentence
 * @returns {AsyncGenerator<unknown[]>}
 */
export async function * batchesOf (input, size, what) {
  if (input !== null && typeof input === 'object' && readInput(what, () => Array.isArray(input) && input[Symbol.iterator] === ARRAY_VALUES)) {
    // An array read as its iterator reads it (each index below its length
    // at that step, a hole as undefined), a batch in one loop: not a call
    // of next() and of readInput() per item (a chat's members are most of a
    // bulk load's calls otherwise).
    for (let start = 0; ; start += size) {
      const batch = readInput(what, () => arrayBatch(/** @type {unknown[]} */ (input), start, size))
      if (batch.length > 0) yield batch
      // Where an array's iterator said done, it stays done.
      if (batch.length < size) return
    }
  }
  const [iterator, sync] = iteratorOf(input, what)
  let done = false
  try {
    let batch = []
    while (true) {
      // A sync iterator's steps are not awaited: a promise and a turn of
      // the microtask queue per item cost a million-record load seconds.
      const step = sync ? iterator.next() : await iterator.next()
      if (step.done) {
        done = true
        break
      }
      batch.push(step.value)
      if (batch.length === size) {
        yield batch
        batch = []
      }
    }
    if (batch.length > 0) yield batch
  } finally {
    // Stopped early (a refusal): let the input clean up, as for...of would.
    if (!done && typeof iterator.return === 'function') await iterator.return()
  }
}

/**
 * The input's iterator, and whether it is a sync one.
 * @param {unknown} input @param {string} what
 * @returns {[any, boolean]}
 */
function iteratorOf (input, what) {
  const iterable = /** @type {any} */ (input)
  const [make, sync] = input !== null && (typeof input === 'object' || typeof input === 'function')
    ? readInput(what, () => {
      const async = iterable[Symbol.asyncIterator]
      return async == null ? [iterable[Symbol.iterator], true] : [async, false]
    })
    : [undefined, false]
  if (typeof make !== 'function') throw invalid(`${what} must be an array, an iterable or an async iterable, got ${describe(input)}`)
  const iterator = readInput(what, () => make.call(iterable))
  // An array is input at the door, like any argument: an element that throws
  // when read is bad input. Another iterable's own errors (a stream that
  // fails) are the caller's, and reject as they are.
  if (!Array.isArray(input)) return [iterator, sync]
  return [{ next: () => readInput(what, () => iterator.next()) }, sync]
}

/**
 * The error a bulk call rejects with: what went wrong, with how many items
 * were written before it (`written`).
 * @param {unknown} err @param {number} written
 */
function withWritten (err, written) {
  if (err !== null && typeof err === 'object' && !Object.isFrozen(err)) {
    try {
      Object.defineProperty(err, 'written', { value: written, enumerable: true, configurable: true, writable: true })
    } catch {
      // An error object that refuses it (a Proxy, a sealed one) goes on as it is.
    }
  }
  return err
}

/**
 * Run a bulk call of a model handle. Outside a scope, each batch is one
 * critical section (one atomic batch with everything it implies: index
 * entries, counters); the next batch is read and prepared while the
 * previous one is written, so at most two batches are in memory. Inside a
 * db.write() scope or a transaction, the whole input is one operation of
 * that scope (its one batch), all or nothing.
 *
 * `prepare(items)` checks and encodes a batch's items outside the critical
 * section (it throws for bad input, before anything of the batch is
 * decided); `write(scope, prepared)` decides its ops inside it.
 *
 * With `again`, a batch's critical section may run again (Writer#run():
 * on IndexedDB its unique values are then claimed by its batch instead of
 * read, as insert() claims a new record's), with `again(prepared)` in
 * place of what the first run may have used up. A refused claim fails no
 * batch for good (its sections run again, in order, reading): the load
 * goes on after one, its own or another call's.
 * @template P
 * @param {import('./model-handle.js').ModelHandle} handle
 * @param {unknown} input @param {number} size @param {string} what the input, as the subject of a sentence
 * @param {(items: unknown[]) => P} prepare
 * @param {(scope: WriteScope, prepared: P) => Promise<unknown> | unknown} write
 * @param {((prepared: P) => P) | null} [again]
 * @returns {Promise<number>} how many items were written
 */
export async function loadInBatches (handle, input, size, what, prepare, write, again = null) {
  if (scopeOf(handle) !== null) {
    // Pulled inside the operation: the scope's batch holds all of it.
    return writeThrough(handle, async scope => {
      let count = 0
      for await (const items of batchesOf(input, size, what)) {
        await write(scope, prepare(items))
        count += items.length
      }
      return count
    }).then(count => /** @type {number} */ (count), err => { throw withWritten(err, 0) })
  }
  const writer = modelOf(handle).writer
  // A batch that failed to be written (this call's or another's) counts
  // as a failure: no batch of this call is decided after that. (A refused
  // claim does not count: no section that may not run again is decided
  // with or on top of a claim, see Writer#run().)
  const failures = writer.failures
  let written = 0
  let refused = false
  /** @type {{ promise: Promise<unknown>, count: number } | null} the batch being written */
  let inFlight = null
  const settle = async () => {
    const batch = inFlight
    inFlight = null
    if (batch === null) return
    await batch.promise
    written += batch.count
  }
  try {
    for await (const items of batchesOf(input, size, what)) {
      const prepared = prepare(items)
      let runs = 0
      const promise = writeThrough(handle, async scope => {
        if (refused || writer.failures !== failures) {
          // Nothing after a refused or failed batch is written.
          throw levelkitError(codes.ABORTED, `Aborted the rest of ${what.charAt(0).toLowerCase()}${what.slice(1)}: an earlier write failed`, { cause: writer.lastError })
        }
        scope.bulk = true
        try {
          return await write(scope, runs++ === 0 || again === null ? prepared : again(prepared))
        } catch (err) {
          // Critical sections run in order: the next batch's sees this.
          refused = true
          throw err
        }
      }, again !== null)
      promise.catch(noop)
      await settle()
      inFlight = { promise, count: items.length }
    }
    await settle()
    return written
  } catch (err) {
    // A batch in flight when the input failed is written all the same.
    await settle().catch(noop)
    throw withWritten(err, written)
  }
}
