import { noop } from './common.js'

/**
 * @typedef {'unknown' | 'ready' | 'clearing' | 'building' | 'failed'} BuildState
 *   unknown: not yet compared with the stored schema (lib/schema.js);
 *   clearing: its entries of an older declaration are being deleted, and
 *   writes leave it alone meanwhile; building: existing records are being
 *   indexed, and writes maintain it; failed: a build stopped on an error
 *   (a unique value shared by two records), and writes maintain it
 */

// How many times an index or a layout became ready in this process: a
// read-only transaction reading one snapshot (lib/snapshot-transaction.js)
// compares it with the count when its snapshot was taken. An index built
// after that is incomplete in the snapshot even once it is ready here.
let becameReady = 0

/** How many times an index or layout of this process became ready so far. */
export function readyCount () {
  return becameReady
}

/**
 * Where an index is in its life: usable or not, and how far its build got.
 * The write path reads `maintained` in every critical section; reads that
 * need the index wait on `settled()` unless it is `ready`.
 */
export class IndexState {
  /** @type {BuildState} */
  state = 'unknown'
  /** records indexed by the build so far */
  done = 0
  /** records the collection holds, counted once asked for (an estimate; until then, `done`) */
  total = 0
  /** @type {Error | null} why the build failed */
  error = null
  /** @type {{ promise: Promise<void>, resolve: () => void, reject: (err: unknown) => void } | null} */
  #waiting = null

  get ready () {
    return this.state === 'ready'
  }

  /** Whether writes keep its entries: not while the entries of an older declaration are cleared. */
  get maintained () {
    return this.state !== 'clearing'
  }

  /**
   * A promise that resolves once the index is ready and rejects with the
   * error of a failed build (as soon as either happens).
   * @returns {Promise<void>}
   */
  settled () {
    if (this.state === 'ready') return Promise.resolve()
    if (this.state === 'failed') return Promise.reject(this.error)
    if (this.#waiting === null) {
      /** @type {any} */
      const waiting = {}
      waiting.promise = new Promise((resolve, reject) => { waiting.resolve = resolve; waiting.reject = reject })
      // Nobody may be waiting when a build fails: that is no unhandled rejection.
      waiting.promise.catch(noop)
      this.#waiting = waiting
    }
    return /** @type {any} */ (this.#waiting).promise
  }

  /**
   * The build stopped without an outcome (the database closed): reads that
   * wait for it reject with `error`; the state stays as it is.
   * @param {Error} error
   */
  interrupt (error) {
    const waiting = this.#waiting
    this.#waiting = null
    waiting?.reject(error)
  }

  /** @param {BuildState} state @param {Error | null} [error] */
  set (state, error = null) {
    if (state === 'ready' && this.state !== 'ready') becameReady++
    this.state = state
    this.error = state === 'failed' ? error : null
    const waiting = this.#waiting
    if (waiting === null) return
    if (state === 'ready') waiting.resolve()
    else if (state === 'failed') waiting.reject(error)
    else return
    this.#waiting = null
  }
}
