import { encode, decode, encodeItems, concatBytes, ARRAY_START, HIGH } from './tuple.js'
import { invalid, levelkitError, codes } from './errors.js'
import { encodeJson } from './json-value.js'
import { assertName, layout } from './names.js'
import { Space } from './space.js'
import { Query } from './query.js'
import { tupleBounds } from './bounds.js'
import { ModelFace, modelOf, writeThrough, readThrough } from './scope.js'
import { describe } from './collection.js'

const ON_DELETE = ['cascade', 'restrict']

/** @typedef {import('./transaction.js').Transaction} Transaction */

/**
 * Ordered children of a parent record (messages of a chat): `<name>` holds
 * [parentId, seq] -> value and `<name>.seq` holds the last seq per parent.
 * Sequence numbers start at 1 per parent and have no gaps: they are assigned
 * in the critical section and persisted in the same batch as the child.
 */
export class ChildrenModel {
  /**
   * @param {import('./database.js').Database} db
   * @param {string} name
   * @param {any} options
   * @param {(collection: unknown) => import('./collection.js').CollectionModel} modelOf
   */
  constructor (db, name, options, modelOf) {
    assertName(name, 'Children')
    if (options === null || typeof options !== 'object') throw invalid(`Children "${name}" needs a { parent } collection`)
    const { parent, onDelete = 'cascade', ...rest } = options
    const unknown = Object.keys(rest)
    if (unknown.length > 0) throw invalid(`Children "${name}" has unknown option(s): ${unknown.join(', ')}`)
    if (!ON_DELETE.includes(onDelete)) throw invalid(`The onDelete option of children "${name}" must be 'cascade' or 'restrict'`)
    this.name = name
    this.writer = db.writer
    this.root = db.level
    this.parent = modelOf(parent)
    this.onDelete = onDelete
    this.items = new Space(this.root, layout.records(name), 'utf8')
    this.sequence = new Space(this.root, layout.sequence(name), 'utf8', { cache: true })
    this.writer.registerCache(this.sequence)
    this.parent.dependents.push({ name, beforeDelete: (tx, id) => this.beforeDelete(tx, id) })
  }

  /** @param {Transaction} tx @param {unknown} parentId */
  async lastSeq (tx, parentId) {
    const stored = await tx.get(this.sequence, encode(parentId))
    return stored === undefined ? 0 : Number(stored)
  }

  /** @param {Transaction} tx @param {unknown} parentId @param {string} json */
  async append (tx, parentId, json) {
    const parentKey = this.parent.keyOf(parentId)
    if (await tx.get(this.parent.records, parentKey) === undefined) {
      throw levelkitError(codes.NOT_FOUND, `Children "${this.name}": parent "${this.parent.name}" has no record with id ${describe(parentId)}`, {
        children: this.name, collection: this.parent.name, id: parentId
      })
    }
    const seq = (await this.lastSeq(tx, parentId)) + 1
    tx.put(this.items, encode([parentId, seq]), json)
    tx.put(this.sequence, parentKey, String(seq))
    return seq
  }

  /** @param {Transaction} tx @param {unknown} parentId @param {unknown} seq @param {string} json */
  async put (tx, parentId, seq, json) {
    const key = this.key(parentId, seq)
    if (await tx.get(this.items, key) === undefined) {
      throw levelkitError(codes.NOT_FOUND, `Children "${this.name}" of ${describe(parentId)} has no item ${describe(seq)}`, { children: this.name, id: parentId, seq })
    }
    tx.put(this.items, key, json)
  }

  /** @param {Transaction} tx @param {unknown} parentId @param {unknown} seq */
  async del (tx, parentId, seq) {
    const key = this.key(parentId, seq)
    if (await tx.get(this.items, key) === undefined) return false
    tx.del(this.items, key)
    return true
  }

  /** @param {Transaction} tx @param {unknown} parentId */
  async beforeDelete (tx, parentId) {
    const prefix = concatBytes([ARRAY_START], encodeItems([parentId]))
    const bounds = { gte: prefix, lt: concatBytes(prefix, [HIGH]) }
    const children = await tx.entries(this.items, bounds, { values: false })
    if (this.onDelete === 'restrict' && children.length > 0) {
      throw levelkitError(codes.RESTRICT, `Cannot delete ${describe(parentId)} from "${this.parent.name}": it has ${children.length} "${this.name}" (onDelete: 'restrict')`, {
        collection: this.parent.name, children: this.name, id: parentId
      })
    }
    for (const [key] of children) tx.del(this.items, key)
    tx.del(this.sequence, encode(parentId))
  }

  /** @param {unknown} parentId @param {unknown} seq */
  key (parentId, seq) {
    this.parent.keyOf(parentId)
    if (!Number.isSafeInteger(seq) || /** @type {number} */ (seq) < 1) throw invalid(`Sequence numbers of "${this.name}" are positive integers, got ${describe(seq)}`)
    return encode([parentId, seq])
  }
}

/** The public face of a children set (one per set, plus one per `in(w)` scope). */
export class Children extends ModelFace {
  /**
   * Append a value to a parent's children.
   * @param {unknown} parentId @param {unknown} value any JSON value
   * @returns {Promise<number>} its sequence number: 1 for the first child, then +1
   */
  async append (parentId, value) {
    const json = encodeJson(value, `Value for "${this.name}"`)
    return writeThrough(this, tx => modelOf(this).append(tx, parentId, json))
  }

  /** Replace an existing child. @param {unknown} parentId @param {number} seq @param {unknown} value */
  async put (parentId, seq, value) {
    const json = encodeJson(value, `Value for "${this.name}"`)
    return writeThrough(this, tx => modelOf(this).put(tx, parentId, seq, json))
  }

  /** @param {unknown} parentId @param {number} seq @returns {Promise<boolean>} true if it existed */
  async del (parentId, seq) {
    return writeThrough(this, tx => modelOf(this).del(tx, parentId, seq))
  }

  /** @param {unknown} parentId @param {number} seq @returns {Promise<any>} the value, or undefined */
  async get (parentId, seq) {
    const model = modelOf(this)
    const key = model.key(parentId, seq)
    const value = await readThrough(this, model.items, key)
    return value === undefined ? undefined : JSON.parse(value)
  }

  /**
   * A parent's children in sequence order; iterate `entries()` for [seq, value].
   * @param {unknown} parentId
   * @param {any} [options] gt/gte/lt/lte over seq, limit, reverse, cursor
   */
  range (parentId, options = {}) {
    const model = modelOf(this)
    if (options === null || typeof options !== 'object') throw invalid('range() takes an options object')
    model.parent.keyOf(parentId)
    return new Query({
      root: model.root,
      space: model.items,
      bounds: tupleBounds([parentId], options),
      tag: model.items.name,
      values: true,
      consistent: false,
      load: entries => entries.map(([key, value]) => [(decode(key))[1], JSON.parse(value)])
    }, options)
  }

  /** The last sequence number handed out for `parentId` (0 if none). @param {unknown} parentId */
  async lastSeq (parentId) {
    const model = modelOf(this)
    const key = model.parent.keyOf(parentId)
    const value = await readThrough(this, model.sequence, key)
    return value === undefined ? 0 : Number(value)
  }
}
