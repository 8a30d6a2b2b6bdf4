import { encode, snapshot } from './tuple.js'
import { parseInteger, decodeKey } from './stored.js'
import { Query } from './query.js'
import { valueBounds } from './bounds.js'
import { invalid } from './errors.js'
import { assertName, layout } from './names.js'
import { Namespace } from './namespace.js'
import { ModelHandle, modelOf, scopeOf, writeThrough, readThrough, scopedPrepare, after, promised, transactionIn } from './model-handle.js'
import { describe } from './common.js'
import { optionsOf } from './options.js'

/** @typedef {import('./write-scope.js').WriteScope} WriteScope */

/**
 * Named integer counters in their own namespace, one value per key. Each
 * add() is a read-modify-write in the critical section, so concurrent adds
 * never lose an increment.
 */
export class CounterModel {
  /** @param {import('./database.js').Database} db @param {string} name */
  constructor (db, name) {
    assertName(name, 'Counter')
    this.name = name
    this.writer = db.writer
    this.namespace = new Namespace(db.level, layout.counter(name), 'utf8', { readCache: db.readCache })
  }

  /** @param {unknown} key */
  keyOf (key) {
    try {
      return encode(key)
    } catch (err) {
      throw invalid(`Not a valid key for counter "${this.name}": ${/** @type {Error} */ (err).message}`, { cause: err })
    }
  }

  /**
   * What get() or add() of `key` reads, as a read hint (lib/writer.js
   * readHints); none for a key it refuses (the call tells why).
   * @param {unknown} key
   * @returns {import('./writer.js').ReadHint[]}
   */
  readsOf (key) {
    try {
      return [{ namespace: this.namespace, keys: [encode(key)] }]
    } catch {
      return []
    }
  }

  /** @param {WriteScope} scope @param {unknown} key @param {number} delta */
  async add (scope, key, delta) {
    const bytes = this.keyOf(key)
    const stored = await scope.get(this.namespace, bytes)
    const value = (stored === undefined ? 0 : parseInteger(stored, this.namespace, bytes)) + delta
    if (!Number.isSafeInteger(value)) throw invalid(`Counter "${this.name}" ${describe(key)} would leave the safe integer range`)
    if (value === 0) scope.del(this.namespace, bytes)
    else scope.put(this.namespace, bytes, String(value))
    return value
  }
}

/** The public handle of a counter (one per counter, plus one per `in(w)` scope). */
export class Counter extends ModelHandle {
  /**
   * Add `delta` (default 1) to the counter at `key` and resolve with the new value.
   * @param {unknown} key @param {number} [delta]
   */
  add (key, delta = 1) {
    return promised(() => {
      if (!Number.isSafeInteger(delta)) throw invalid(`Counter "${this.name}": delta must be a safe integer, got ${describe(delta)}`)
      // Read now: the add itself may run later, after other writes.
      const counted = snapshot(key, modelOf(this))
      return writeThrough(this, scope => modelOf(this).add(scope, counted, delta))
    })
  }

  /** @param {unknown} key @returns {Promise<number>} the value (0 if never added to) */
  get (key) {
    return promised(() => {
      const model = modelOf(this)
      const bytes = model.keyOf(key)
      return after(readThrough(this, model.namespace, bytes), (/** @type {string | undefined} */ value) => value === undefined ? 0 : parseInteger(value, model.namespace, bytes))
    })
  }

  /**
   * The counters in key order (keys never added to, or back at 0, are absent);
   * iterate `entries()` for [key, value].
   * @param {any} [given] gt/gte/lt/lte/eq/prefix over keys, limit, reverse, cursor
   */
  query (given) {
    const options = optionsOf(given, 'counter.query()')
    const model = modelOf(this)
    return new Query({
      root: model.namespace.sublevel.db,
      namespace: model.namespace,
      bounds: valueBounds(options),
      tag: model.namespace.name,
      values: true,
      consistent: false,
      prepare: scopedPrepare(this),
      scope: scopeOf(this),
      transaction: transactionIn(this),
      load: entries => entries.map(([key, value]) => [decodeKey(key, model.namespace), parseInteger(value, model.namespace, key), key])
    }, options)
  }
}
