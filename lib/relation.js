import { encode, decode } from './tuple.js'
import { invalid, levelkitError, codes } from './errors.js'
import { assertName, layout } from './names.js'
import { Space } from './space.js'
import { Query } from './query.js'
import { tupleBounds } from './bounds.js'
import { ModelFace, modelOf, writeThrough, readThrough, scopedPrepare, after, promised } from './scope.js'
import { describe } from './collection.js'

const EMPTY = ''
const ON_DELETE = ['cascade', 'restrict']
// Options that narrow a relation query's range (see tupleBounds).
const RANGE_OPTIONS = ['gt', 'gte', 'lt', 'lte', 'eq', 'prefix']

/**
 * @typedef {import('./transaction.js').Transaction} Transaction
 * @typedef {import('./collection.js').CollectionModel} CollectionModel
 */

/**
 * A many-to-many relation between two collections, stored in both
 * directions: `<name>.fwd` holds [from, to] and `<name>.rev` holds [to, from].
 * Both are always written in the same batch, and both endpoints must exist.
 */
export class RelationModel {
  /**
   * @param {import('./database.js').Database} db
   * @param {string} name
   * @param {any} options
   * @param {(collection: unknown) => import('./collection.js').CollectionModel} modelOf
   */
  constructor (db, name, options, modelOf) {
    assertName(name, 'Relation')
    if (options === null || typeof options !== 'object') throw invalid(`Relation "${name}" needs { from, to } collections`)
    const { from, to, onDelete = 'cascade', ...rest } = options
    const unknown = Object.keys(rest)
    if (unknown.length > 0) throw invalid(`Relation "${name}" has unknown option(s): ${unknown.join(', ')}`)
    this.name = name
    this.writer = db.writer
    this.root = db.level
    this.from = modelOf(from)
    this.to = modelOf(to)
    const policy = typeof onDelete === 'string' ? { from: onDelete, to: onDelete } : onDelete
    if (policy === null || typeof policy !== 'object' || !ON_DELETE.includes(policy.from) || !ON_DELETE.includes(policy.to)) {
      throw invalid(`The onDelete option of relation "${name}" must be 'cascade', 'restrict' or { from, to } of those`)
    }
    this.onDelete = { from: policy.from, to: policy.to }
    // Point reads of edges (has) go to the forward direction; lists of
    // edges (to, from) to both.
    this.forward = new Space(this.root, layout.forward(name), 'utf8', { readCache: db.readCache, listCache: db.readCache })
    this.reverse = new Space(this.root, layout.reverse(name), 'utf8', { listCache: db.readCache })
    this.from.dependents.push({ name, beforeDelete: (tx, id) => this.beforeDelete(tx, id, this.forward, this.reverse, this.onDelete.from, this.from) })
    this.to.dependents.push({ name, beforeDelete: (tx, id) => this.beforeDelete(tx, id, this.reverse, this.forward, this.onDelete.to, this.to) })
  }

  /**
   * @param {Transaction} tx @param {unknown} fromId @param {unknown} toId
   * @returns {Promise<boolean>} true if the edge is new
   */
  async add (tx, fromId, toId) {
    const [fwdKey, revKey] = this.keys(fromId, toId)
    if (await tx.get(this.from.records, this.from.keyOf(fromId)) === undefined) throw this.missing(this.from, fromId)
    if (await tx.get(this.to.records, this.to.keyOf(toId)) === undefined) throw this.missing(this.to, toId)
    if (await tx.get(this.forward, fwdKey) !== undefined) return false
    tx.put(this.forward, fwdKey, EMPTY)
    tx.put(this.reverse, revKey, EMPTY)
    return true
  }

  /**
   * @param {Transaction} tx @param {unknown} fromId @param {unknown} toId
   * @returns {Promise<boolean>} true if the edge existed
   */
  async remove (tx, fromId, toId) {
    const [fwdKey, revKey] = this.keys(fromId, toId)
    if (await tx.get(this.forward, fwdKey) === undefined) return false
    tx.del(this.forward, fwdKey)
    tx.del(this.reverse, revKey)
    return true
  }

  /**
   * Cascade or refuse the deletion of a record that edges point at.
   * @param {Transaction} tx
   * @param {unknown} id
   * @param {Space} near the direction keyed by `id` first
   * @param {Space} far the other direction
   * @param {string} policy
   * @param {CollectionModel} collection
   */
  async beforeDelete (tx, id, near, far, policy, collection) {
    const bounds = tupleBounds([id], {})
    if (policy === 'restrict') {
      const edges = await tx.entries(near, { ...bounds }, { values: false })
      if (edges.length > 0) {
        throw levelkitError(codes.RESTRICT, `Cannot delete ${describe(id)} from "${collection.name}": relation "${this.name}" has ${edges.length} edge(s) to it (onDelete: 'restrict')`, {
          collection: collection.name, relation: this.name, id
        })
      }
      return
    }
    for (const [key] of await tx.entries(near, bounds, { values: false })) {
      const [a, b] = /** @type {unknown[]} */ (decode(key))
      tx.del(near, key)
      tx.del(far, encode([b, a]))
    }
  }

  /**
   * The forward key alone (for has()): one encode instead of four when both
   * sides use sequence ids, whose validity is a plain integer check.
   * @param {unknown} fromId @param {unknown} toId
   */
  forwardKey (fromId, toId) {
    if (!(this.from.sequential && this.to.sequential && isSequenceId(fromId) && isSequenceId(toId))) {
      this.from.keyOf(fromId)
      this.to.keyOf(toId)
    }
    return encode([fromId, toId])
  }

  /** @param {unknown} fromId @param {unknown} toId */
  keys (fromId, toId) {
    this.from.keyOf(fromId)
    this.to.keyOf(toId)
    return [encode([fromId, toId]), encode([toId, fromId])]
  }

  /** @param {CollectionModel} collection @param {unknown} id */
  missing (collection, id) {
    return levelkitError(codes.NOT_FOUND, `Relation "${this.name}": "${collection.name}" has no record with id ${describe(id)}`, {
      relation: this.name, collection: collection.name, id
    })
  }

  /**
   * @param {Space} space @param {CollectionModel} keyed @param {unknown} id
   * @param {any} options
   * @param {(() => Promise<boolean>) | undefined} prepare
   */
  query (space, keyed, id, options, prepare) {
    if (options === undefined) options = {}
    if (options === null || typeof options !== 'object') throw invalid('Relation queries take an options object')
    keyed.keyOf(id)
    const whole = space.listCache !== null && prepare === undefined && !RANGE_OPTIONS.some(name => options[name] !== undefined)
    return new Query({
      list: whole ? () => space.keysUnder(id) : undefined,
      root: this.root,
      space,
      bounds: tupleBounds([id], options),
      tag: space.name,
      values: false,
      consistent: false,
      prepare,
      load: entries => entries.map(([key]) => {
        const other = /** @type {unknown[]} */ (decode(key))[1]
        return [other, other, key]
      })
    }, options)
  }
}

/** @param {unknown} value */
function isDefined (value) {
  return value !== undefined
}

/** @param {unknown} id */
function isSequenceId (id) {
  return Number.isSafeInteger(id) && /** @type {number} */ (id) > 0
}

/** The public face of a relation (one per relation, plus one per `in(w)` scope). */
export class Relation extends ModelFace {
  /** @param {unknown} fromId @param {unknown} toId @returns {Promise<boolean>} true if the edge is new */
  add (fromId, toId) {
    return writeThrough(this, tx => modelOf(this).add(tx, fromId, toId))
  }

  /** @param {unknown} fromId @param {unknown} toId @returns {Promise<boolean>} true if the edge existed */
  remove (fromId, toId) {
    return writeThrough(this, tx => modelOf(this).remove(tx, fromId, toId))
  }

  /** @param {unknown} fromId @param {unknown} toId @returns {Promise<boolean>} */
  has (fromId, toId) {
    return promised(() => {
      const model = modelOf(this)
      return after(readThrough(this, model.forward, model.forwardKey(fromId, toId)), isDefined)
    })
  }

  /**
   * Ids of the `to` side that `fromId` points at, in id order.
   * @param {unknown} fromId @param {any} [options] range over the `to` ids, limit, reverse, cursor
   */
  to (fromId, options) {
    return modelOf(this).query(modelOf(this).forward, modelOf(this).from, fromId, options, scopedPrepare(this))
  }

  /**
   * Ids of the `from` side that point at `toId`, in id order.
   * @param {unknown} toId @param {any} [options]
   */
  from (toId, options) {
    return modelOf(this).query(modelOf(this).reverse, modelOf(this).to, toId, options, scopedPrepare(this))
  }
}
