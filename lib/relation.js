import { encode, encodeEach } from './tuple.js'
import { invalid, levelkitError, codes } from './errors.js'
import { decodeKey, decodeList, parseRecord } from './stored.js'
import { IndexState } from './index-state.js'
import { layoutReady, layoutPrepare, layoutWrite } from './layout-moves.js'
import { assertName, layout } from './names.js'
import { RelationQuery } from './relation-query.js'
import { tupleBounds, within } from './bounds.js'
import { ModelHandle, modelOf, scopeOf, readThrough, after, promised, transactionIn, allOf } from './model-handle.js'
import { assertNotClosed } from './namespace.js'
import { describe, isDefined, elementsOf, noop } from './common.js'
import { batchSizeOf, loadInBatches } from './bulk.js'
import { optionsOf, optionsObject, RANGE } from './options.js'
import { EdgeDirection, ListDirection, IndexDirection, compareIds } from './relation-directions.js'
import { entriesLayout, storedLists, moveEntriesBatch, UNLIST, RELIST } from './idb-entries-move.js'

const ON_DELETE = ['cascade', 'restrict']
const LIST_SIDES = ['from', 'to']

/**
 * @typedef {import('./write-scope.js').WriteScope} WriteScope
 * @typedef {import('./collection.js').CollectionModel} CollectionModel
 */

/**
 * A many-to-many relation between two collections, stored in both
 * directions, both always written in the same batch; both endpoints must
 * exist. A direction is stored as edges (`<name>.fwd` holds [from, to],
 * `<name>.rev` holds [to, from]) or, with the `lists` option, as one list
 * per id (`<name>.list.to` holds each from id's to ids, `<name>.list.from`
 * each to id's from ids), so that reading a whole list is one point read.
 *
 * On a database levelkit opened on IndexedDB, a new relation with both
 * `lists` keeps its reverse direction in IndexedDB's own index over the
 * forward lists instead (IndexDirection, `native: ['from']` in its stored
 * layout): an edge is then one list written, not two.
 *
 * @typedef {EdgeDirection | ListDirection | IndexDirection} Direction
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
    const { from, to, onDelete = 'cascade', lists: listsOption = [] } = optionsOf(options, 'db.relation()', `Relation "${name}"`)
    this.name = name
    this.writer = db.writer
    this.root = db.level
    this.from = modelOf(from)
    this.to = modelOf(to)
    const policy = typeof onDelete === 'string' ? { from: onDelete, to: onDelete } : optionsObject(onDelete, `The onDelete option of relation "${name}"`)
    if (!ON_DELETE.includes(policy.from) || !ON_DELETE.includes(policy.to)) {
      throw invalid(`The onDelete option of relation "${name}" must be 'cascade', 'restrict' or { from, to } of those`)
    }
    this.onDelete = { from: policy.from, to: policy.to }
    const lists = elementsOf(listsOption, `The lists option of relation "${name}"`)
    if (lists.some(side => !LIST_SIDES.includes(/** @type {string} */ (side))) || new Set(lists).size !== lists.length) {
      throw invalid(`The lists option of relation "${name}" must be an array of 'from' and/or 'to'`)
    }
    const cache = db.readCache
    /** Keyed by from id: what to(id) lists, and what has() reads unless it keeps lists and the reverse does not. @type {Direction} */
    this.forward = lists.includes('to') ? new ListDirection(this.root, layout.list(name, 'to'), cache, this.to.sequential) : new EdgeDirection(this.root, layout.forward(name), cache, true)
    /** Keyed by to id: what from(id) lists, and what has() reads when the forward direction keeps lists. @type {Direction} */
    this.reverse = lists.includes('from') ? new ListDirection(this.root, layout.list(name, 'from'), cache, this.from.sequential) : new EdgeDirection(this.root, layout.reverse(name), cache, lists.includes('to'))
    // The namespaces of the other layout of each direction: check() looks
    // there for edges an earlier declaration left, and a repair moves them.
    this.unused = {
      forward: lists.includes('to') ? new EdgeDirection(this.root, layout.forward(name), 0, false) : new ListDirection(this.root, layout.list(name, 'to'), 0, this.to.sequential),
      reverse: lists.includes('from') ? new EdgeDirection(this.root, layout.reverse(name), 0, false) : new ListDirection(this.root, layout.list(name, 'from'), 0, this.from.sequential)
    }
    // The reverse lists, which the index kind replaces: a move into it
    // (moveLayoutBatch()) reads and drops them.
    this.reverseLists = this.reverse
    this.lists = LIST_SIDES.filter(side => lists.includes(side))
    // Whether the reverse lists may be IndexedDB's index over the forward
    // ones (settleLayout() decides, from the stored layout): both directions
    // lists, on IndexedDB through the direct layer.
    this.idb = lists.includes('to') && lists.includes('from') ? db.writer.idb : null
    // A new database takes the index kind unless open() was told not to.
    this.indexNew = db.relationIndexes
    // And where it keeps its forward lists: the index's entries only, or browser-level's store too (lib/idb-entries-move.js).
    this.entriesChoice = db.relationEntries
    /** The move between the two that settleLayout() found needed (UNLIST, RELIST), or null. @type {string | null} */
    this.entriesMove = null
    /** The sides kept by IndexedDB's lists store (['from'], ['from', 'to'] where the forward lists are its entries only, or none). @type {string[]} */
    this.native = []
    // A record created under a new sequence id has no list yet: its edges
    // read none (a relation writes a record's lists in the record's
    // batches, and sequence ids are never handed out twice).
    this.from.dependents.push({ name, beforeDelete: (scope, id) => this.beforeDelete(scope, id, this.forward, this.reverse, this.onDelete.from, this.from), created: (scope, id) => noListYet(scope, this.forward, id) })
    this.to.dependents.push({ name, beforeDelete: (scope, id) => this.beforeDelete(scope, id, this.reverse, this.forward, this.onDelete.to, this.to), created: (scope, id) => noListYet(scope, this.reverse, id) })
    this.layoutKind = /** @type {const} */ ('relation')
    /** Whether its edges are in the declared layout: reads and writes wait for it (lib/layout-moves.js). */
    this.layoutState = new IndexState()
    /** @type {((scope: WriteScope) => void) | null} */
    this.layoutRecord = null
    /** Start the move of its data into the declared layout, if one is waiting (lib/schema.js). */
    this.startLayoutMove = noop
    db.schema.declareLayout(this)
  }

  /**
   * What the stored schema keeps of the declaration. Where the reverse
   * direction may be the index kind, whether it is (`native`, [] if not),
   * so that two tabs that chose differently on a new database tell (the
   * one that did not write the layout first is refused, lib/schema-watch.js).
   */
  declaredLayout () {
    return this.idb !== null ? { lists: this.lists, native: this.native } : { lists: this.lists }
  }

  /**
   * Before the declared layout is compared with the stored one `stored`
   * (in its critical section): whether the reverse direction is the index
   * kind. A database whose layout says so keeps it (whatever this tab
   * prefers: its data is there); any other takes it where the database has
   * levelkit's lists store, unless open() was told not to: a new one at
   * once, one with reverse lists (or edges) by a move (moveLayoutBatch()).
   * @param {WriteScope} scope @param {Record<string, unknown> | undefined} stored
   */
  async settleLayout (scope, stored) {
    const storedNative = Array.isArray(stored?.native) && stored.native.includes('from')
    const storedEntries = Array.isArray(stored?.native) && stored.native.includes('to')
    // The index's keys are the listed `to` ids: sequence ids (positive integers) are IndexedDB keys, any id is not.
    // mirror() says whether the database has levelkit's lists store.
    const native = storedNative || (this.indexNew && this.to.sequential && this.idb !== null && this.idb.ready && this.idb.mirror(this.forward.namespace))
    if (!native) {
      if (storedEntries) throw this.entriesRefused()
      return
    }
    // The forward lists in the entries only, or in browser-level's store
    // too: the stored layout's, or the tab's choice by a move.
    const { entries, move } = await entriesLayout(/** @type {any} */ (this.idb), this.forward.namespace, stored, this.entriesChoice)
    this.entriesMove = move
    // Each mirror entry carries its from-record too: from(id).records() is
    // then one request. Entries written before they did are read around
    // (IdbDirect.listingRecords()) until a write of the record or its list fills them.
    if (this.idb === null || !this.idb.mirror(this.forward.namespace, this.from.records, entries)) {
      throw levelkitError(codes.INVALID, `Relation "${this.name}" keeps its reverse direction in an IndexedDB index of a database levelkit opened (its stored layout says native: ['from']): declare it with lists: ['from', 'to'] and open the database with open({ location }), not a database brought with { db }`, { relation: this.name })
    }
    // Where its entries are (IdbDirect's slots), known before its first read or write.
    await this.idb.learnSlots(true)
    if (this.reverse.kind !== 'index') this.reverse = new IndexDirection(/** @type {ListDirection} */ (this.forward), /** @type {ListDirection} */ (this.reverseLists), this.idb)
    this.native = entries ? ['from', 'to'] : ['from']
  }

  /** The phase a move into the declared layout starts with (lib/schema.js stores it with the move's first marker). */
  firstLayoutPhase () {
    return this.entriesMove
  }

  /**
   * The error of a tab that cannot keep the relation in IndexedDB's index
   * (a database brought with { db }, ids that are not sequence ids) on a database
   * whose stored layout keeps its forward lists in the lists store only.
   */
  entriesRefused () {
    return levelkitError(codes.INVALID, `Relation "${this.name}" keeps its forward lists in IndexedDB's lists store only (its stored layout says native: ['from', 'to']): open the database with open({ location }) (relationIndexes: 'lists' moves them into browser-level's store)`, { relation: this.name })
  }

  /**
   * Whether the edges are in the declared layout: none in the namespaces of
   * the other layout of each direction (what `lists` does not use). Exact,
   * and two reads: a layout's namespaces hold nothing once it is not used.
   * @param {WriteScope} scope
   */
  async layoutMatches (scope) {
    /** @type {Direction[]} */
    const unused = [this.unused.forward, this.unused.reverse]
    // The index kind's namespace (the reverse lists') holds nothing either.
    if (this.reverse.kind === 'index') unused.push(this.reverse)
    for (const direction of unused) {
      if ((await direction.namespace.sublevel.keys({ limit: 1 }).all()).length > 0) return false
    }
    // Kept in the entries only: and none left in browser-level's store.
    if (this.native.includes('to')) return this.idb === null || (await storedLists(this.idb, this.forward.namespace, 1)).length === 0
    if (this.reverse.kind === 'index' && this.idb !== null) {
      // And the mirror holds every forward list.
      await this.writer.drain()
      const namespace = this.forward.namespace
      const mirrored = (await this.idb.mirrored(namespace, true)).map(([key]) => namespace.keyId(key))
      const lists = (await namespace.sublevel.keys().all()).map((/** @type {Uint8Array} */ key) => namespace.keyId(key))
      if (mirrored.join('\n') !== lists.join('\n')) return false
    }
    return true
  }

  /**
   * Move about `size` edges (or lists) out of the namespaces of the layout
   * not in use, through the directions in use (as add() writes them), and
   * delete them there, in the critical section of one batch: the old
   * namespaces shrink as the move goes, so where it is needs no marker.
   * Into the index kind, two more phases follow (moveIntoIndex()).
   * @param {WriteScope} scope @param {import('./layout-moves.js').LayoutProgress} progress @param {number} size
   */
  async moveLayoutBatch (scope, progress, size) {
    await this.writer.drain()
    if (progress.phase === UNLIST || progress.phase === RELIST) return moveEntriesBatch(/** @type {any} */ (this.idb), this.forward.namespace, scope, progress, size)
    if (progress.phase !== null) return this.moveIntoIndex(scope, progress, size)
    let budget = size
    for (const [old, now] of /** @type {Array<[Direction, Direction]>} */ ([[this.unused.forward, this.forward], [this.unused.reverse, this.reverse]])) {
      const namespace = old.namespace
      const page = await namespace.sublevel.iterator({ limit: budget }).all()
      for (const [key, value] of page) {
        if (old.kind === 'edges') {
          const [head, other] = /** @type {unknown[]} */ (decodeKey(key, namespace))
          await now.add(scope, head, other)
        } else {
          const head = decodeKey(key, namespace)
          for (const other of decodeList(value, namespace, key)) await now.add(scope, head, other)
        }
        scope.del(namespace, key)
      }
      progress.done += page.length
      budget -= page.length
      if (budget === 0) return false
    }
    if (this.reverse.kind !== 'index') return true
    progress.phase = 'mirror'
    progress.after = null
    return false
  }

  /**
   * The move into the index kind, in batches of about `size` lists: first
   * (phase 'mirror') every forward list is written again, in key order
   * from `progress.after`, which mirrors it (the namespace is mirrored:
   * settleLayout()); then (phase 'drop') the reverse lists are deleted.
   * Until the move is over, reads and writes of the relation wait for it
   * (lib/layout-moves.js) and a record's deletion keeps the reverse lists
   * right too (beforeDeleteMoving()): whichever batch a closed tab stopped
   * at, the next open resumes from the stored progress.
   * @param {WriteScope} scope @param {import('./layout-moves.js').LayoutProgress} progress @param {number} size
   */
  async moveIntoIndex (scope, progress, size) {
    if (progress.phase === 'mirror') {
      const namespace = this.forward.namespace
      const range = progress.after === null ? { limit: size } : { gt: progress.after, limit: size }
      const page = await namespace.sublevel.iterator(range).all()
      for (const [key, value] of page) scope.put(namespace, key, value)
      progress.done += page.length
      if (page.length === size) {
        progress.after = page[page.length - 1][0]
        return false
      }
      progress.phase = 'drop'
      progress.after = null
    }
    const namespace = this.reverseLists.namespace
    const keys = await namespace.sublevel.keys({ limit: size }).all()
    for (const key of keys) scope.del(namespace, key)
    progress.done += keys.length
    return keys.length < size
  }

  /**
   * @param {WriteScope} scope @param {unknown} fromId @param {unknown} toId
   * @returns {boolean | Promise<boolean>} true if the edge is new (a value where reads are synchronous)
   */
  add (scope, fromId, toId) {
    this.checkIds(fromId, toId)
    return after(this.exists(scope, this.from, this.forward, fromId), fromExists => {
      if (!fromExists) throw this.missing(this.from, fromId)
      return after(this.exists(scope, this.to, this.reverse, toId), toExists => {
        if (!toExists) throw this.missing(this.to, toId)
        return this.change(scope, fromId, toId, 'add')
      })
    })
  }

  /**
   * Add edges from `fromId` to each of `toIds`, in order, as one operation:
   * all of them or, if one endpoint is missing, none.
   * @param {WriteScope} scope @param {unknown} fromId @param {unknown[]} toIds read at the door (see Relation.addMany())
   * @returns {number | Promise<number>} how many edges are new
   */
  addMany (scope, fromId, toIds) {
    this.checkAllIds(fromId, toIds)
    // Each edge reads the list of its `to` id: where a read is a round
    // trip (IndexedDB), make them all at once.
    let lists = null
    if (this.reverse.kind === 'lists') {
      const keys = toIds.map(id => encode(id))
      if (scope.writer.sectionCache !== null) this.prefetchAdds(scope, toIds)
      else if (scope.prefetch(this.reverse.namespace, keys)) {
        // Elsewhere (IndexedDB, a request per key), the records only of
        // ids without a list, once the lists are read (below).
        lists = { namespace: this.reverse.namespace, keys }
      }
    } else {
      // Edges keyed by the `to` ids (or kept by an IndexedDB index) are
      // written blind, but each `to` record is read (exists()): all at once
      // (one statement where reads made together go so), not a round trip
      // per edge, one after the other.
      const keys = encodeEach(toIds)
      // The checks take the keys just encoded, and read the records
      // themselves (WriteScope#getMany()).
      if (this.forward.kind === 'lists') return this.#addToList(scope, fromId, toIds, keys)
      scope.prefetch(this.to.records, keys, true)
    }
    let added = 0
    /** @param {number} i @returns {number | Promise<number>} */
    const from = (i) => {
      for (; i < toIds.length; i++) {
        const result = this.add(scope, fromId, toIds[i])
        if (result instanceof Promise) return result.then(isNew => { if (isNew) added++; return from(i + 1) })
        if (result) added++
      }
      return added
    }
    if (lists === null) return from(0)
    // Not one by one as the edges go.
    const { namespace, keys } = lists
    return Promise.all(keys.map(key => scope.get(namespace, key))).then(values => {
      scope.prefetch(this.to.records, keys.filter((key, i) => values[i] === undefined), true)
      return from(0)
    })
  }

  /**
   * addMany() where the forward direction keeps lists and the reverse does
   * not (IndexedDB's index, or edges): what add() of each edge in turn
   * decides, in one pass per step instead of one per edge (a bulk load of
   * chats, 20 members each, made thousands of calls per chat): the `to`
   * records read together (WriteScope#getMany()), the list of `fromId`
   * read, changed and put once (ListDirection#addAll()), and the reverse
   * halves written for the edges new to it, in order, where the reverse
   * direction writes any (the index kind writes none). The endpoints are
   * checked in the same order and refused with the same error.
   * @param {WriteScope} scope @param {unknown} fromId @param {unknown[]} toIds checked by the caller
   * @param {Uint8Array[]} toKeys the encodings of `toIds`
   * @returns {number | Promise<number>} how many edges are new
   */
  #addToList (scope, fromId, toIds, toKeys) {
    if (toIds.length === 0) return 0
    const forward = /** @type {import('./relation-directions.js').ListDirection} */ (this.forward)
    return after(this.exists(scope, this.from, forward, fromId), fromExists => {
      if (!fromExists) throw this.missing(this.from, fromId)
      // The reverse direction keeps no lists: a `to` record exists if it is stored (exists()).
      return after(scope.getMany(this.to.records, toKeys, true), (/** @type {any[]} */ records) => {
        for (let i = 0; i < records.length; i++) if (records[i] === undefined) throw this.missing(this.to, toIds[i])
        if (this.layoutRecord !== null) this.layoutRecord(scope)
        return after(forward.addAll(scope, fromId, toIds, toKeys), (/** @type {unknown[]} */ added) => {
          if (this.reverse.kind === 'index') return added.length
          /** @param {number} k @returns {number | Promise<number>} */
          const reverse = k => {
            for (; k < added.length; k++) {
              const done = this.reverse.add(scope, added[k], fromId)
              if (done instanceof Promise) return done.then(() => reverse(k + 1))
            }
            return added.length
          }
          return reverse(0)
        })
      })
    })
  }

  /**
   * Start reading what addMany(scope, any id, toIds) reads of the `to`
   * side, where the section cache is kept (a read is a round trip and
   * reads made together go as one statement: postgres): each `to` id's list
   * and, for an id without one, its record (exists()), all at once. Called
   * ahead of the writes that decide the `from` id (a new record's id from
   * its sequence), the reads go in the same statement as the sequence's.
   * Elsewhere it does nothing.
   * @param {WriteScope} scope @param {unknown[]} toIds checked by the caller
   */
  prefetchAdds (scope, toIds) {
    if (this.reverse.kind !== 'lists' || scope.writer.sectionCache === null) return
    const keys = toIds.map(id => encode(id))
    if (scope.prefetch(this.reverse.namespace, keys)) scope.prefetch(this.to.records, keys, true)
  }

  /**
   * What addMany(scope, a new id, toIds) reads, as a read hint
   * (lib/writer.js readHints): each `to` id's list where the reverse
   * direction keeps lists, and each `to` record.
   * @param {unknown[]} toIds checked by the caller
   * @returns {import('./writer.js').ReadHint[]}
   */
  addsReads (toIds) {
    const keys = toIds.map(id => encode(id))
    const records = { namespace: this.to.records, keys }
    return this.reverse.kind === 'lists' ? [{ namespace: this.reverse.namespace, keys }, records] : [records]
  }

  /**
   * Whether the record `id` exists. Where the direction keyed by it keeps
   * lists, its list (which the edge change reads anyway) answers when there
   * is one: a record's edges go in the same batch as the record (cascade or
   * restrict), so a list means a record, and the record need not be read.
   * @param {WriteScope} scope @param {CollectionModel} collection
   * @param {Direction} direction keyed by ids of `collection` @param {unknown} id
   * @param {Uint8Array} [key] the encoding of `id`, where the caller has it
   * @returns {boolean | Promise<boolean>}
   */
  exists (scope, collection, direction, id, key = encode(id)) {
    if (direction.kind === 'lists') {
      return after(scope.get(direction.namespace, key), list => list !== undefined || after(scope.getShared(collection.records, key), isDefined))
    }
    // Only checked: a shared key lock where there are such (a deletion of
    // the record, which reads it exclusively, waits for this section's end).
    return after(scope.getShared(collection.records, key), isDefined)
  }

  /**
   * @param {WriteScope} scope @param {unknown} fromId @param {unknown} toId
   * @returns {boolean | Promise<boolean>} true if the edge existed
   */
  remove (scope, fromId, toId) {
    this.checkIds(fromId, toId)
    return this.change(scope, fromId, toId, 'remove')
  }

  /**
   * Add or remove an edge in both directions, if that changes anything. A
   * direction kept as lists is read anyway, so it answers whether the edge
   * is there; else the forward edge is read.
   * @param {WriteScope} scope @param {unknown} fromId @param {unknown} toId
   * @param {'add' | 'remove'} change
   * @returns {boolean | Promise<boolean>} whether it changed
   */
  change (scope, fromId, toId, change) {
    if (this.layoutRecord !== null) this.layoutRecord(scope)
    const { forward, reverse } = this
    if (reverse.kind === 'lists') {
      return after(reverse[change](scope, toId, fromId), changed => changed && after(forward[change](scope, fromId, toId), () => true))
    }
    if (forward.kind === 'lists') {
      return after(forward[change](scope, fromId, toId), changed => changed && reverse[change](scope, toId, fromId))
    }
    return after(forward.has((namespace, key) => scope.get(namespace, key), fromId, toId), exists => {
      if (exists === (change === 'add')) return false
      forward[change](scope, fromId, toId)
      return reverse[change](scope, toId, fromId)
    })
  }

  /**
   * Cascade or refuse the deletion of a record that edges point at.
   * @param {WriteScope} scope
   * @param {unknown} id
   * @param {Direction} near the direction keyed by `id`
   * @param {Direction} far the other direction
   * @param {string} policy
   * @param {CollectionModel} collection
   */
  async beforeDelete (scope, id, near, far, policy, collection) {
    const others = await near.others(scope, id)
    // While its edges move between layouts, an edge may be in either: both are looked at.
    if (this.layoutState.state !== 'ready') return this.beforeDeleteMoving(scope, id, near, far, policy, collection, others)
    if (policy === 'restrict') {
      if (others.length > 0) {
        throw levelkitError(codes.RESTRICT, `Cannot delete ${describe(id)} from "${collection.name}": relation "${this.name}" has ${others.length} edge(s) to it (onDelete: 'restrict')`, {
          collection: collection.name, relation: this.name, id
        })
      }
      return
    }
    for (const other of others) await far.remove(scope, other, id)
    near.removeAll(scope, id, others)
  }

  /**
   * beforeDelete() while the edges move: each direction may hold an edge
   * in its declared layout or in the other one (not yet moved).
   * @param {WriteScope} scope @param {unknown} id @param {Direction} near @param {Direction} far
   * @param {string} policy @param {CollectionModel} collection @param {unknown[]} others what `near` holds
   */
  async beforeDeleteMoving (scope, id, near, far, policy, collection, others) {
    // Into the index kind, the reverse lists stay right until dropped: the
    // index answers only once every forward list is mirrored.
    const olds = (/** @type {Direction} */ direction) => direction === this.forward
      ? [this.unused.forward]
      : direction.kind === 'index' ? [this.unused.reverse, this.reverseLists] : [this.unused.reverse]
    const oldNear = olds(near)
    const oldFar = olds(far)
    /** @type {unknown[][]} */
    const oldOthers = []
    for (const direction of oldNear) oldOthers.push(await direction.others(scope, id))
    const all = [...others]
    for (const other of oldOthers.flat()) if (!all.some(known => compareIds(known, other) === 0)) all.push(other)
    if (policy === 'restrict') {
      if (all.length > 0) {
        throw levelkitError(codes.RESTRICT, `Cannot delete ${describe(id)} from "${collection.name}": relation "${this.name}" has ${all.length} edge(s) to it (onDelete: 'restrict')`, {
          collection: collection.name, relation: this.name, id
        })
      }
      return
    }
    for (const other of all) {
      for (const direction of [far, ...oldFar]) {
        if (await direction.has((namespace, key) => scope.get(namespace, key), other, id)) await direction.remove(scope, other, id)
      }
    }
    near.removeAll(scope, id, others)
    oldNear.forEach((direction, i) => direction.removeAll(scope, id, oldOthers[i]))
  }

  /** Check both ids (the edge keys encode them). @param {unknown} fromId @param {unknown} toId */
  checkIds (fromId, toId) {
    if (!(this.from.sequential && this.to.sequential && isSequenceId(fromId) && isSequenceId(toId))) {
      this.from.keyOf(fromId)
      this.to.keyOf(toId)
    }
  }

  /**
   * checkIds() of `fromId` with each of `toIds`, in order: the same error
   * for the first bad one, with sequence ids checked in one loop.
   * @param {unknown} fromId @param {unknown[]} toIds
   */
  checkAllIds (fromId, toIds) {
    let i = 0
    if (this.from.sequential && this.to.sequential && isSequenceId(fromId)) {
      while (i < toIds.length && isSequenceId(toIds[i])) i++
    }
    for (; i < toIds.length; i++) this.checkIds(fromId, toIds[i])
  }

  /** @param {CollectionModel} collection @param {unknown} id */
  missing (collection, id) {
    return levelkitError(codes.NOT_FOUND, `Relation "${this.name}": "${collection.name}" has no record with id ${describe(id)}`, {
      relation: this.name, collection: collection.name, id
    })
  }

  /**
   * @param {Direction} direction @param {CollectionModel} keyed @param {unknown} id
   * @param {any} options checked by the caller
   * @param {(() => Promise<boolean>) | undefined} prepare
   * @param {import('./transaction.js').Transaction} [transaction] the transaction the query reads in
   * @param {import('./write-scope.js').WriteScope | null} [scope] the write scope of the critical section it reads in, if any
   */
  query (direction, keyed, id, options, prepare, transaction, scope = null) {
    id = keyed.idArg(id)
    keyed.keyOf(id)
    const namespace = direction.namespace
    /** @type {import('./query.js').QuerySource['keys']} */
    let keys
    /** @type {import('./query.js').QuerySource['list']} */
    let list
    const plain = !RANGE.some(name => options[name] !== undefined)
    const whole = prepare === undefined && plain
    if (direction.kind === 'index') {
      const index = direction
      // Outside a write, the index over committed batches; in a transaction, its own reads.
      const others = transaction === undefined ? () => index.stored(id) : () => index.inTransaction(transaction, id)
      if (whole) list = others
      keys = bounds => others().then(ids => ids.map(other => encode([id, other])).filter(key => within(key, bounds)))
    } else if (direction.kind === 'lists') {
      const lists = direction
      const syncReads = this.writer.syncReads
      const read = transaction === undefined
        ? scope !== null
          ? (/** @type {import('./namespace.js').Namespace} */ listNamespace, /** @type {Uint8Array} */ key) => scope.startRead(() => listNamespace.read(key, syncReads))
          : (/** @type {import('./namespace.js').Namespace} */ listNamespace, /** @type {Uint8Array} */ key) => listNamespace.read(key, syncReads)
        : (/** @type {import('./namespace.js').Namespace} */ listNamespace, /** @type {Uint8Array} */ key) => transaction.get(listNamespace, key)
      // The whole list as it is; else its ids as the keys an edge direction
      // would hold, so ranges and cursors mean the same on both layouts.
      if (whole) list = () => promised(() => lists.list(read, id))
      keys = bounds => promised(() => lists.keysWithin(read, id, bounds))
    } else if (namespace.listCache !== null && whole) {
      const edges = /** @type {EdgeDirection} */ (direction)
      // A copy: the cache keeps the list, and all() may reverse what it gets.
      list = () => edges.namespace.listUnder(id, keys => keys.map(key => /** @type {unknown[]} */ (decodeKey(key, namespace))[1])).then(others => others.slice())
    }
    // The records of the other side. From the index kind's reverse
    // direction with entries that carry them, a whole list's records are
    // one request; else the ids, then the records.
    const other = keyed === this.from ? this.to : this.from
    const entire = plain && options.limit === undefined && options.cursor == null
    const records = (/** @type {import('./query.js').Query} */ query) => this.recordsOf(query, other, direction === this.forward ? null : id, entire, options.reverse === true, prepare, transaction, scope)
    return new RelationQuery({
      list,
      keys,
      root: this.root,
      namespace,
      bounds: tupleBounds([id], options),
      tag: namespace.name,
      values: false,
      consistent: false,
      prepare,
      scope,
      transaction,
      load: entries => entries.map(([key]) => {
        const other = /** @type {unknown[]} */ (decodeKey(key, namespace))[1]
        return [other, other, key]
      })
    }, options, records)
  }

  /**
   * What RelationQuery#records() answers: the records of `other` that the
   * query's ids name, in its order, those that exist.
   * @param {import('./query.js').Query} query @param {CollectionModel} other
   * @param {unknown} toId for a query of from(toId), else null
   * @param {boolean} whole the query lists the whole direction (no range, limit or cursor)
   * @param {boolean} reverse @param {(() => Promise<boolean>) | undefined} prepare
   * @param {import('./transaction.js').Transaction} [transaction]
   * @param {import('./write-scope.js').WriteScope | null} [scope] the write scope of the critical section it reads in, if any
   * @returns {Promise<any[]>}
   */
  async recordsOf (query, other, toId, whole, reverse, prepare, transaction, scope = null) {
    if (toId !== null && whole && transaction === undefined && this.idb !== null) {
      assertNotClosed(this.root)
      // The layout decides the direction's kind (the index, once moved).
      if (prepare !== undefined && !(await prepare())) return []
      const direction = this.reverse
      if (direction.kind === 'index' && this.idb.carries(direction.forward.namespace)) {
        const found = await direction.storedRecords(toId)
        /** @type {any[]} */
        const records = []
        for (const [key, value] of found) if (value !== undefined) records.push(parseRecord(value, other.records, key))
        return reverse ? records.reverse() : records
      }
    }
    if (toId !== null && whole && transaction === undefined && scope === null && other.sequential && this.reverse.kind === 'edges') {
      const pg = this.reverse.namespace.pg
      if (pg !== null && pg.status === 'open') return this.#referencedRecords(pg, other, toId, reverse, prepare)
    }
    const ids = await query.all()
    const keys = ids.map(id => encode(id))
    const values = transaction !== undefined
      ? await allOf(keys, key => transaction.get(other.records, key))
      : await (scope !== null ? scope.startRead(() => other.records.readMany(keys, this.writer.syncReads)) : other.records.readMany(keys, this.writer.syncReads))
    /** @type {any[]} */
    const records = []
    for (let i = 0; i < keys.length; i++) if (values[i] !== undefined) records.push(parseRecord(values[i], other.records, keys[i]))
    return records
  }

  /**
   * recordsOf() of a whole reverse direction of edges to a collection with
   * sequence ids, on PostgreSQL: the edges and the records they name in one
   * statement (PostgresLevel#levelkitReadReferenced()), not the edges and
   * then the records, two round trips. An edge key of `toId` is its tuple
   * [toId, other id]: the other id's bytes (a number's, as its record's key
   * holds them) between the tuple's head and its end.
   * @param {any} pg the table @param {CollectionModel} other @param {unknown} toId
   * @param {boolean} reverse @param {(() => Promise<boolean>) | undefined} prepare
   * @returns {Promise<any[]>}
   */
  async #referencedRecords (pg, other, toId, reverse, prepare) {
    if (prepare !== undefined && !(await prepare())) return []
    const edges = this.reverse.namespace.sublevel
    const bounds = tupleBounds([toId], {})
    /** @type {Record<string, Buffer>} */
    const range = {}
    for (const [bound, key] of Object.entries(bounds)) range[bound] = edges.prefixKey(key, 'buffer', false)
    // The head's encoding, less its end: where the other id starts.
    const start = edges.prefixKey(encode([toId]), 'buffer', false).length - 1
    const prefix = other.records.sublevel.prefixKey(new Uint8Array(0), 'buffer', false)
    const rows = await pg.levelkitReadReferenced(range, reverse, prefix, start)
    /** @type {any[]} */
    const records = []
    for (const { key, value } of rows) records.push(parseRecord(value.toString('utf8'), other.records, key.subarray(prefix.length)))
    return records
  }
}

/**
 * idArg() of each of `ids`, in one loop: a primitive id is what idArg()
 * answers for it (snapshot() copies only arrays), so only others are passed.
 * @param {CollectionModel} collection @param {unknown[]} ids
 */
function idsArg (collection, ids) {
  const args = []
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i]
    args.push(id !== null && typeof id === 'object' ? collection.idArg(id) : id)
  }
  return args
}

/** @param {unknown} id */
function isSequenceId (id) {
  return Number.isSafeInteger(id) && /** @type {number} */ (id) > 0
}

/** The public handle of a relation (one per relation, plus one per `in(w)` scope). */
export class Relation extends ModelHandle {
  /** @param {unknown} fromId @param {unknown} toId @returns {Promise<boolean>} true if the edge is new */
  add (fromId, toId) {
    return promised(() => {
      const model = modelOf(this)
      const from = model.from.idArg(fromId)
      const to = model.to.idArg(toId)
      return layoutWrite(this, model, scope => model.add(scope, from, to))
    })
  }

  /**
   * Add the edges from `fromId` to each of `toIds` (an array, an iterable
   * or an async iterable), in batches of `batchSize`, each one atomic: all
   * of its edges, or none if an endpoint is missing; see loadInBatches() in
   * lib/bulk.js.
   * @param {unknown} fromId @param {Iterable<unknown> | AsyncIterable<unknown>} toIds
   * @param {{ batchSize?: number }} [options]
   * @returns {Promise<number>} how many of the edges are new
   */
  addMany (fromId, toIds, options) {
    return promised(() => {
      const model = modelOf(this)
      const from = model.from.idArg(fromId)
      const size = batchSizeOf(options, 'relation.addMany()')
      let added = 0
      return after(layoutReady(model, scopeOf(this) !== null), () => loadInBatches(this, toIds, size, `The "${model.to.name}" ids passed to addMany() of relation "${model.name}"`,
        items => idsArg(model.to, items),
        // Counted as each batch is decided: the sum is answered only once every batch is written.
        (scope, to) => after(model.addMany(scope, from, to), n => { added += n }))
        .then(() => added))
    })
  }

  /** @param {unknown} fromId @param {unknown} toId @returns {Promise<boolean>} true if the edge existed */
  remove (fromId, toId) {
    return promised(() => {
      const model = modelOf(this)
      const from = model.from.idArg(fromId)
      const to = model.to.idArg(toId)
      return layoutWrite(this, model, scope => model.remove(scope, from, to))
    })
  }

  /** @param {unknown} fromId @param {unknown} toId @returns {Promise<boolean>} */
  has (fromId, toId) {
    return promised(() => {
      const model = modelOf(this)
      const from = model.from.idArg(fromId)
      const to = model.to.idArg(toId)
      model.checkIds(from, to)
      const read = (/** @type {import('./namespace.js').Namespace} */ namespace, /** @type {Uint8Array} */ key) => readThrough(this, namespace, key)
      return after(layoutReady(model, scopeOf(this) !== null), () => {
        if (model.forward.kind === 'lists' && model.reverse.kind === 'edges') return model.reverse.has(read, to, from)
        return model.forward.has(read, from, to)
      })
    })
  }

  /**
   * Ids of the `to` side that `fromId` points at, in id order.
   * @param {unknown} fromId @param {any} [options] range over the `to` ids, limit, reverse, cursor
   */
  to (fromId, options) {
    const model = modelOf(this)
    return model.query(model.forward, model.from, fromId, optionsOf(options, 'relation.to()'), layoutPrepare(this, model), transactionIn(this), scopeOf(this))
  }

  /**
   * Ids of the `from` side that point at `toId`, in id order.
   * @param {unknown} toId @param {any} [options]
   */
  from (toId, options) {
    const model = modelOf(this)
    return model.query(model.reverse, model.to, toId, optionsOf(options, 'relation.from()'), layoutPrepare(this, model), transactionIn(this), scopeOf(this))
  }
}

/**
 * The list of `id` in `direction`, if it keeps lists, holds nothing: the
 * record `id` is new (see Dependent `created`).
 * @param {WriteScope} scope @param {Direction} direction @param {unknown} id
 */
function noListYet (scope, direction, id) {
  if (direction.kind === 'lists') scope.absent(direction.namespace, encode(id))
}
