import { concatBytes, compareBytes, bytesToBinaryString, binaryStringToBytes } from './bytes.js'
import { invalid } from './errors.js'
import { assertNotClosed } from './namespace.js'
import { describe } from './common.js'

/**
 * @typedef {import('./bounds.js').ByteBounds} ByteBounds
 * @typedef {import('./transaction.js').Transaction} Transaction
 * @typedef {(entries: Array<[Uint8Array, any]>, snapshot: any, tx?: Transaction) => Promise<Array<[any, any, Uint8Array]>> | Array<[any, any, Uint8Array]>} Loader
 *   returns [key, item, raw key] per entry it keeps (it may drop entries); reads what it needs
 *   through `tx` when there is one
 * @typedef {object} QuerySource
 * @property {any} root the root database, for snapshots
 * @property {import('./namespace.js').Namespace} namespace the namespace that is scanned
 * @property {ByteBounds} bounds
 * @property {string} tag names the scanned key namespace in cursors
 * @property {boolean} values whether the scan needs values
 * @property {boolean} consistent whether `load` reads other namespaces, so needs a snapshot
 * @property {Loader} load turns raw entries into [key, item] pairs
 * @property {() => Promise<boolean>} [prepare] runs before reading; false means the range is empty
 * @property {Transaction} [transaction] the transaction the query reads in: its own writes, as of
 *   when it began, and the range read is checked when it commits
 * @property {import('./transaction.js').LockMode} [lock] in a transaction, lock the range in this mode first
 * @property {import('./write-scope.js').WriteScope | null} [scope] the write scope of the critical
 *   section the query reads in, if any: its reads are started as the section's (WriteScope#startRead()),
 *   and with locking: 'serializable' the section's transaction is the consistent view (no snapshot)
 * @property {() => Promise<any[]>} [list] every item of the whole range in key order, as a new
 *   array, read without an iterator (a cache): all() uses it when the query is not resumed and
 *   has no limit (a limited read reads only what it returns)
 * @property {(bounds: ByteBounds) => Promise<ListedKeys>} [keys] the raw keys within `bounds` in key
 *   order, read without an iterator (a stored list): every read uses it instead of an iterator
 * @property {(bounds: ByteBounds, reverse: boolean, tx?: Transaction, limit?: number) => AsyncGenerator<Array<[Uint8Array, any]>>} [scan]
 *   the entries within `bounds` in key order (or reverse), read its own way (children kept in
 *   blocks): every read uses it instead of an iterator over `namespace`; `limit` is how many
 *   the query needs at most (a hint: it stops the generator itself)
 * @typedef {{ readonly length: number, at (i: number): Uint8Array | undefined }} ListedKeys
 *   keys by position (an array, or a view that makes only the keys asked for)
 */

const FIRST_CHUNK = 64
const CHUNK = 512

// The largest iterator limit every backend takes as it is: classic-level
// keeps only 32 bits of it (a limit of 2 ** 32 reads nothing). A larger
// limit is enforced here instead, over an iterator without one.
export const BACKEND_LIMIT = 2 ** 31 - 1

/**
 * A lazy, re-runnable range read. Nothing is read until it is iterated,
 * collected with all(), paged with page() or counted with count().
 */
export class Query {
  /** @type {QuerySource} */ #source
  /** @type {ByteBounds} */ #bounds
  #reverse
  #limit

  /**
   * @param {QuerySource} source
   * @param {{ reverse?: boolean, limit?: number, cursor?: string | null }} options
   */
  constructor (source, options) {
    this.#source = source
    this.#reverse = options.reverse === undefined ? false : assertBoolean(options.reverse, 'reverse')
    this.#limit = assertLimit(options.limit)
    this.#bounds = options.cursor == null ? source.bounds : resume(source, this.#reverse, options.cursor)
  }

  /** @returns {AsyncGenerator<any>} */
  async * [Symbol.asyncIterator] () {
    for await (const [, item] of this.entries()) yield item
  }

  /** @returns {AsyncGenerator<[any, any]>} pairs of key (id, sequence number...) and item */
  async * entries () {
    for await (const chunk of this.#chunks(this.#limit)) {
      for (const [key, item] of chunk) yield [key, item]
    }
  }

  /** @returns {AsyncGenerator<any>} */
  async * keys () {
    for await (const [key] of this.entries()) yield key
  }

  /** @returns {Promise<any[]>} */
  async all () {
    const source = this.#source
    if (source.list !== undefined && this.#bounds === source.bounds && this.#limit === Infinity) {
      assertNotClosed(source.root)
      const items = await this.#start(() => /** @type {NonNullable<QuerySource['list']>} */ (source.list)())
      if (this.#reverse) items.reverse()
      return items
    }
    if (source.keys !== undefined) return (await this.#listed(this.#limit)).map(entry => entry[1])
    const items = []
    for await (const chunk of this.#chunks(this.#limit)) {
      for (const entry of chunk) items.push(entry[1])
    }
    return items
  }

  /**
   * Up to `limit` items and a cursor to pass back as the `cursor` option for
   * the next page, or null when there is nothing after this page.
   * @returns {Promise<{ items: any[], cursor: string | null }>}
   */
  async page () {
    const items = []
    /** @type {Uint8Array | null} */
    let last = null
    let more = false
    const wanted = this.#limit
    for await (const chunk of this.#chunks(wanted === Infinity ? Infinity : wanted + 1)) {
      for (const [, item, rawKey] of chunk) {
        if (items.length === wanted) {
          more = true
          break
        }
        items.push(item)
        last = rawKey
      }
    }
    return { items, cursor: more && last ? encodeCursor(this.#source.tag, this.#reverse, last) : null }
  }

  /** Number of entries in range (up to `limit`), without reading values. */
  async count () {
    assertNotClosed(this.#source.root)
    if (this.#source.prepare && !(await this.#source.prepare())) return 0
    const listKeys = this.#source.keys
    if (listKeys !== undefined) return Math.min((await this.#start(() => listKeys(this.#bounds))).length, this.#limit)
    if (this.#source.scan !== undefined) {
      let n = 0
      const scan = this.#source.scan(this.#bounds, false, this.#source.transaction, this.#limit)
      try {
        // Each step as the section's, as in #chunks().
        for (let step = await this.#start(() => scan.next()); step.done !== true; step = await this.#start(() => scan.next())) {
          n += step.value.length
          if (n >= this.#limit) return this.#limit
        }
      } finally {
        await scan.return(undefined)
      }
      return n
    }
    const tx = this.#source.transaction
    if (tx !== undefined) return (await this.#inTransaction(tx, false, this.#limit)).length
    const it = this.#start(() => this.#source.namespace.sublevel.keys({ ...this.#bounds, limit: backendLimit(this.#limit) }))
    let n = 0
    try {
      for (let keys = await it.nextv(CHUNK); keys.length > 0; keys = await it.nextv(CHUNK)) {
        n += keys.length
        if (n >= this.#limit) return this.#limit
      }
    } finally {
      await it.close()
    }
    return n
  }

  /**
   * `fn()`, which starts reads, as the reads of the critical section the
   * query reads in, if any (see QuerySource.scope): they must start
   * synchronously in it.
   * @template T @param {() => T} fn @returns {T}
   */
  #start (fn) {
    const scope = this.#source.scope
    return scope === undefined || scope === null ? fn() : scope.startRead(fn)
  }

  /**
   * Loaded entries, in chunks, at most `limit` of them. Loaders may drop
   * entries (an index entry whose record is gone), so the limit counts what
   * they keep, not what the iterator reads.
   * @param {number} limit
   * @returns {AsyncGenerator<Array<[any, any, Uint8Array]>>}
   */
  async * #chunks (limit) {
    const { root, namespace, values, consistent, load, prepare } = this.#source
    if (this.#source.keys !== undefined) {
      const loaded = await this.#listed(limit)
      if (loaded.length > 0) yield loaded
      return
    }
    assertNotClosed(root)
    if (prepare && !(await prepare())) return
    const tx = this.#source.transaction
    if (this.#source.scan !== undefined) {
      let remaining = limit
      if (remaining <= 0) return
      const scan = this.#source.scan(this.#bounds, this.#reverse, tx, remaining)
      try {
        // Each step as the section's: the scan starts its reads in them.
        for (let step = await this.#start(() => scan.next()); step.done !== true; step = await this.#start(() => scan.next())) {
          let loaded = await this.#start(() => load(step.value, undefined, tx))
          if (loaded.length > remaining) loaded = loaded.slice(0, remaining)
          remaining -= loaded.length
          if (loaded.length > 0) yield loaded
          if (remaining === 0) return
        }
      } finally {
        await scan.return(undefined)
      }
      return
    }
    if (tx !== undefined) {
      if (limit <= 0) return
      let loaded = await load(await this.#inTransaction(tx, values, limit), undefined, tx)
      if (loaded.length > limit) loaded = loaded.slice(0, limit)
      if (loaded.length > 0) yield loaded
      return
    }
    // A serializable section's transaction is one snapshot already, and a
    // snapshot of its own would read outside it, unwatched.
    const scope = this.#source.scope
    const inSection = scope !== undefined && scope !== null && scope.readsAs !== null && scope.open
    const snapshot = consistent && root.supports.explicitSnapshots && !inSection ? root.snapshot() : undefined
    const it = this.#start(() => namespace.sublevel.iterator({
      ...this.#bounds,
      reverse: this.#reverse,
      limit: consistent ? -1 : backendLimit(limit),
      values,
      snapshot
    }))
    try {
      let remaining = limit
      while (remaining > 0) {
        const entries = await it.nextv(Math.min(remaining, remaining === limit ? FIRST_CHUNK : CHUNK))
        if (entries.length === 0) break
        let loaded = await this.#start(() => load(entries, snapshot))
        if (loaded.length > remaining) loaded = loaded.slice(0, remaining)
        remaining -= loaded.length
        if (loaded.length > 0) yield loaded
      }
    } finally {
      await it.close()
      if (snapshot) await snapshot.close()
    }
  }

  /**
   * Up to `limit` loaded entries from a source that lists its keys.
   * @param {number} limit
   * @returns {Promise<Array<[any, any, Uint8Array]>>}
   */
  async #listed (limit) {
    const keys = await this.#inRange(limit)
    let loaded = await this.#start(() => this.#source.load(keys.map(key => [key, undefined]), undefined, this.#source.transaction))
    if (loaded.length > limit) loaded = loaded.slice(0, limit)
    return loaded
  }

  /**
   * The entries within the bounds as transaction `tx` sees them, in the
   * query's order, at most `limit`; locked first if the query asks to.
   * @param {Transaction} tx @param {boolean} values @param {number} limit
   */
  async #inTransaction (tx, values, limit) {
    const { namespace, lock } = this.#source
    if (lock !== undefined) {
      const wait = tx.lock(namespace, this.#bounds, lock)
      if (wait !== null) await wait
    }
    return tx.entries(namespace, this.#bounds, { values, reverse: this.#reverse, limit })
  }

  /**
   * The listed keys within the bounds, in the query's order, at most `limit`.
   * @param {number} limit
   * @returns {Promise<Uint8Array[]>}
   */
  async #inRange (limit) {
    const { root, prepare } = this.#source
    assertNotClosed(root)
    if (prepare && !(await prepare())) return []
    const keys = await this.#start(() => /** @type {NonNullable<QuerySource['keys']>} */ (this.#source.keys)(this.#bounds))
    const n = Math.min(keys.length, limit)
    const last = keys.length - 1
    /** @type {Uint8Array[]} */
    const taken = new Array(n)
    for (let i = 0; i < n; i++) taken[i] = /** @type {Uint8Array} */ (keys.at(this.#reverse ? last - i : i))
    return taken
  }
}

/**
 * A limit as a number of items: a non-negative integer, or Infinity. One
 * beyond the safe integers (1e300) is beyond any count of entries, so it
 * means no limit, as Infinity does (and page() can ask for one more).
 * @param {unknown} limit
 */
function assertLimit (limit) {
  if (limit === undefined) return Infinity
  if (typeof limit !== 'number' || !(Number.isInteger(limit) || limit === Infinity) || limit < 0) {
    throw invalid(`The limit option must be a non-negative integer or Infinity, got ${describe(limit)}`)
  }
  return limit > Number.MAX_SAFE_INTEGER ? Infinity : limit
}

/** The iterator limit that reads at most `limit` entries on every backend (-1: none). @param {number} limit */
function backendLimit (limit) {
  return limit > BACKEND_LIMIT ? -1 : limit
}

/** @param {unknown} value @param {string} name */
function assertBoolean (value, name) {
  if (typeof value !== 'boolean') throw invalid(`The ${name} option must be a boolean`)
  return value
}

/**
 * @param {string} tag
 * @param {boolean} reverse
 * @param {Uint8Array} key
 */
function encodeCursor (tag, reverse, key) {
  return base64url(JSON.stringify([1, tag, reverse ? 1 : 0, base64url(bytesToBinaryString(key))]))
}

/**
 * Narrow the bounds to what comes after the cursor's key.
 * @param {QuerySource} source
 * @param {boolean} reverse
 * @param {unknown} cursor
 * @returns {ByteBounds}
 */
function resume (source, reverse, cursor) {
  let parsed
  try {
    if (typeof cursor !== 'string') throw new TypeError('not a string')
    parsed = JSON.parse(unbase64url(cursor))
  } catch (err) {
    throw notACursor(err)
  }
  if (!Array.isArray(parsed) || parsed[0] !== 1 || typeof parsed[3] !== 'string') throw notACursor()
  if (parsed[1] !== source.tag || parsed[2] !== (reverse ? 1 : 0)) {
    throw invalid('The cursor belongs to a different query (another index, namespace or direction)')
  }
  const key = binaryStringToBytes(unbase64url(parsed[3]))
  if (key === null) throw notACursor()
  const bounds = { ...source.bounds }
  if (reverse) {
    if (!bounds.lt || compareBytes(key, bounds.lt) < 0) bounds.lt = key
  } else {
    const after = concatBytes(key, [0])
    if (!bounds.gte || compareBytes(after, bounds.gte) > 0) bounds.gte = after
  }
  return bounds
}

/** @param {string} s a string of any code points */
function base64url (s) {
  const utf8 = bytesToBinaryString(new TextEncoder().encode(s))
  return btoa(utf8).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

/** @param {string} s */
function unbase64url (s) {
  const bytes = binaryStringToBytes(atob(s.replace(/-/g, '+').replace(/_/g, '/')))
  if (bytes === null) throw notACursor()
  return new TextDecoder('utf-8', { fatal: true }).decode(bytes)
}

/** @param {unknown} [cause] */
function notACursor (cause) {
  return invalid('The cursor option is not a cursor returned by page()', { cause })
}
