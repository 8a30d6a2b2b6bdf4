// Where other tabs (IndexedDB) or processes (PostgreSQL, shared) write the
// database too, one of them may declare a model differently and change its
// stored schema (move a relation to lists, build a new index) while this one
// keeps its older declarations: written as those say, its edges, children
// and records would be in the old layout, or miss the new index. Every change
// of the stored schema is written under the shared writer lock, and every
// writer learns of each batch of the others, by hearing it or, when it did
// not hear them all, as it takes the lock (lib/writer.js). So a batch that
// wrote in the schema's namespace, or writes not heard of, make this writer
// read the stored schema again before its next critical section, and a
// model whose stored schema another writer changed since this one compared
// its declaration with it is refused from then on: its writes (and reads of
// what they would get wrong) reject with LEVELKIT_SCHEMA_CHANGED, as Dexie's
// connections close on `versionchange`. Nothing is read while nothing is
// heard: a write pays nothing.

import { levelkitError, codes } from './errors.js'
import { parseJson, decodeKey } from './stored.js'
import { namespaceByPrefix } from './namespace.js'
import { declarationOf, sameDeclaration, sameLayout } from './schema.js'
import { noop } from './common.js'

/**
 * @typedef {import('./collection.js').CollectionModel} CollectionModel
 * @typedef {import('./layout-moves.js').LayoutModel} LayoutModel
 * @typedef {import('./write-scope.js').Op} Op
 */

// What a stored record says of how far work got, not of what was declared.
const PROGRESS = new Set(['after', 'done', 'total', 'error', 'phase'])

export class SchemaWatch {
  #namespace
  #writer
  /** @type {Map<CollectionModel, Map<string, string>>} per collection compared, its stored indexes then (see norm()) */
  #indexes = new Map()
  /** @type {Map<LayoutModel, string | undefined>} per relation or children set compared, its stored layout then */
  #layouts = new Map()
  /** @type {Set<string>} the names of the models refused */
  #changed = new Set()
  /** how many times something said to look again, and how many of those the last look covered */
  #asked = 0
  #seen = 0
  /** @type {Promise<void> | null} */
  #looking = null
  /** @type {Set<CollectionModel>} collections whose comparison must run again before the next critical section */
  #recheck = new Set()
  #recompare
  #root
  #hook = () => this.#beforeSection()
  #guard = (/** @type {Op[]} */ ops) => this.#check(ops)

  /**
   * @param {import('./writer.js').Writer} writer
   * @param {import('./namespace.js').Namespace} namespace the stored schema's
   * @param {object} root the database's level, where its namespaces are found by prefix
   * @param {(model: CollectionModel) => Promise<void>} recompare compares a collection with the stored schema again, in the critical section running
   */
  constructor (writer, namespace, root, recompare) {
    this.#writer = writer
    this.#namespace = namespace
    this.#root = root
    this.#recompare = recompare
    const stop = writer.onRemote(message => this.#heard(message))
    writer.onClose(stop)
  }

  /**
   * A collection was compared with the stored schema, in a critical section:
   * what was stored for its indexes then.
   * @param {CollectionModel} model @param {Map<string, { stored: object }>} stored by index name
   */
  indexesCompared (model, stored) {
    this.#indexes.set(model, new Map(Array.from(stored, ([name, { stored: record }]) => [name, norm(record)])))
  }

  /**
   * A relation or children set was first compared with the stored schema,
   * in a critical section: what was stored for its layout then.
   * @param {LayoutModel} model @param {object | undefined} stored
   */
  layoutCompared (model, stored) {
    if (!this.#layouts.has(model)) this.#layouts.set(model, stored === undefined ? undefined : norm(stored))
  }

  /**
   * Another writer's batch (null: writes not heard of): if it may have
   * written in the stored schema, look again before the next critical
   * section, and now for reads.
   * @param {import('./cross-tab.js').RemoteMessage | null} message
   */
  #heard (message) {
    this.#touched(message)
    const prefix = this.#namespace.prefix
    if (message !== null) {
      if (message.ops !== null ? !message.ops.some(op => op.prefix === prefix) : message.prefixes !== null && !message.prefixes.includes(prefix)) return
    }
    this.#asked++
    this.#writer.sectionHook = this.#hook
    // At the lock (null), the critical section about to run looks.
    if (message !== null && !this.#writer.closed) this.refresh().catch(noop)
  }

  /**
   * A collection whose comparison found an index with nothing to build
   * (the collection was empty) stores that with its first write: another
   * writer that does not keep the index may fill it first. Such a
   * collection written by another writer (or any, after writes not heard
   * of) is compared again before the next critical section.
   * @param {import('./cross-tab.js').RemoteMessage | null} message
   */
  #touched (message) {
    const waiting = Array.from(this.#indexes.keys()).filter(deferred)
    if (waiting.length === 0) return
    /** @type {Set<string> | null} null: any */
    let names = null
    if (message !== null && (message.ops !== null || message.prefixes !== null)) {
      names = new Set()
      for (const prefix of message.ops !== null ? message.ops.map(op => op.prefix) : /** @type {string[]} */ (message.prefixes)) {
        const namespace = namespaceByPrefix(this.#root, prefix)
        const owner = namespace === undefined ? null : ownerName(namespace.name)
        if (owner !== null) names.add(owner)
      }
    }
    for (const model of waiting) {
      if (names === null || names.has(model.name)) this.#recheck.add(model)
    }
    if (this.#recheck.size > 0) this.#writer.sectionHook = this.#hook
  }

  /** In a critical section, before it runs: look again, compare again, as asked. */
  async #beforeSection () {
    await this.refresh()
    for (const model of this.#recheck) {
      this.#recheck.delete(model)
      if (deferred(model) && !this.#changed.has(model.name)) await this.#recompare(model)
    }
    if (this.#seen >= this.#asked && this.#recheck.size === 0) this.#writer.sectionHook = null
  }

  /**
   * Resolves once the stored schema was read again after the last time
   * something said to: the models it shows changed by another writer are
   * refused.
   */
  async refresh () {
    while (this.#seen < this.#asked) {
      if (this.#looking === null) {
        const asked = this.#asked
        this.#looking = this.#look().then(() => { this.#seen = Math.max(this.#seen, asked) }).finally(() => { this.#looking = null })
      }
      await this.#looking
    }
    if (this.#recheck.size === 0) this.#writer.sectionHook = null
  }

  /** Read the stored schema once, and refuse the models another writer changed. */
  async #look () {
    if (this.#indexes.size === 0 && this.#layouts.size === 0) return
    const namespace = this.#namespace
    /** @type {Map<string, Map<string, any>>} */
    const indexes = new Map()
    /** @type {Map<string, any>} */
    const layouts = new Map()
    for (const [key, value] of await namespace.sublevel.iterator().all()) {
      const tuple = ownerTuple(key, namespace)
      if (tuple === null) continue
      const record = parse(value, namespace, key)
      if (tuple[0] === 'index' && tuple.length === 3) {
        let found = indexes.get(tuple[1])
        if (found === undefined) indexes.set(tuple[1], found = new Map())
        found.set(tuple[2], record)
      } else if (tuple.length === 2) {
        layouts.set(`${tuple[0]}/${tuple[1]}`, record)
      }
    }
    for (const [model, then] of this.#indexes) {
      if (!this.#changed.has(model.name)) this.#compareIndexes(model, then, indexes.get(model.name) ?? new Map())
    }
    for (const [model, then] of this.#layouts) {
      if (this.#changed.has(model.name)) continue
      const stored = layouts.get(`${model.layoutKind}/${model.name}`)
      const same = stored === undefined
        ? then === undefined
        : sameLayout(stored, model.declaredLayout()) || norm(stored) === then
      if (!same) {
        this.#refuse(model.name)
        model.layoutState.set('failed', this.#error(model.name, model.layoutKind))
      }
    }
  }

  /**
   * An index stored as this writer declares it, or as it was when compared
   * (what this writer does about it is still to come), is as this writer
   * left it. Any other (another declaration, one built or no longer kept
   * elsewhere, one gone) refuses writes to the collection, and reads of
   * its declared indexes so changed.
   * @param {CollectionModel} model @param {Map<string, string>} then @param {Map<string, any>} now
   */
  #compareIndexes (model, then, now) {
    /** @type {import('./indexes.js').SecondaryIndex[]} */
    const wrong = []
    let changed = false
    for (const [name, stored] of now) {
      const index = model.indexes.get(name)
      if (index !== undefined) {
        if (!(sameDeclaration(stored, declarationOf(index)) && kept(stored)) && norm(stored) !== then.get(name)) wrong.push(index)
      } else if (kept(stored) && norm(stored) !== then.get(name)) {
        changed = true
      }
    }
    for (const [name, index] of model.indexes) {
      if (!now.has(name) && then.has(name)) wrong.push(index)
    }
    if (!changed && wrong.length === 0) return
    this.#refuse(model.name)
    for (const index of wrong) index.status.set('failed', this.#error(model.name, 'collection', index.name))
  }

  /** @param {string} name */
  #refuse (name) {
    this.#changed.add(name)
    this.#writer.commitGuard = this.#guard
  }

  /**
   * Refuse a critical section that writes in a refused model's namespaces,
   * or its stored schema.
   * @param {Op[]} ops
   */
  #check (ops) {
    for (const op of ops) {
      const name = this.#ownerOf(op)
      if (name !== null && this.#changed.has(name)) throw this.#error(name)
    }
  }

  /**
   * The model an op writes for: every namespace of a model is named after
   * it (lib/names.js); in the stored schema, the key names it.
   * @param {Op} op @returns {string | null}
   */
  #ownerOf (op) {
    const namespace = op.namespace
    if (namespace === this.#namespace) {
      const tuple = ownerTuple(op.key, namespace)
      return tuple === null ? null : tuple[1]
    }
    return ownerName(namespace.name)
  }

  /**
   * @param {string} name @param {string} [kind] @param {string} [index]
   */
  #error (name, kind, index) {
    const what = index === undefined ? `"${name}"` : `index "${index}" of "${name}"`
    /** @type {Record<string, unknown>} */
    const details = { model: name }
    if (kind !== undefined) details[kind] = name
    if (index !== undefined) details.index = index
    return levelkitError(codes.SCHEMA_CHANGED, `The database's schema was changed by another tab or process: ${what} is no longer stored as this one declares it. Reopen the database (reload the page) with the new declarations`, details)
  }
}

/**
 * The model a namespace is named after (lib/names.js); null for levelkit's own.
 * @param {string} name @returns {string | null}
 */
function ownerName (name) {
  if (name.startsWith(':')) return null
  const dot = name.indexOf('.')
  return dot === -1 ? name : name.slice(0, dot)
}

/** Whether a collection's comparison left something to store with its next write. @param {CollectionModel} model */
function deferred (model) {
  return model.schemaWork !== null && model.schemaWork.ops.size > 0
}

/**
 * A stored schema key naming a model: ['index', collection, index],
 * [kind, name]; null for others (a migration's version).
 * @param {Uint8Array} key @param {import('./namespace.js').Namespace} namespace
 * @returns {string[] | null}
 */
function ownerTuple (key, namespace) {
  let tuple
  try {
    tuple = decodeKey(key, namespace)
  } catch {
    return null
  }
  if (!Array.isArray(tuple) || tuple.length < 2 || !tuple.every(part => typeof part === 'string')) return null
  if (tuple[0] === 'index' ? tuple.length !== 3 : tuple.length !== 2) return null
  return tuple
}

/** @param {string} value @param {import('./namespace.js').Namespace} namespace @param {Uint8Array} key */
function parse (value, namespace, key) {
  try {
    const record = parseJson(value, namespace, key)
    return record !== null && typeof record === 'object' ? record : {}
  } catch {
    // Damaged: unlike any declaration.
    return {}
  }
}

/** Whether the writes of those that declare an index keep it. @param {any} stored */
function kept (stored) {
  return stored.state !== 'undeclared' && stored.state !== 'dropping'
}

/**
 * A stored record without its progress: what it says was declared, and the
 * state of its build or move.
 * @param {any} stored
 */
function norm (stored) {
  return JSON.stringify(Object.entries(stored).filter(([name]) => !PROGRESS.has(name)))
}
