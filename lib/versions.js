import { encode } from './tuple.js'
import { invalid, levelkitError, codes } from './errors.js'
import { parseInteger } from './stored.js'
import { layout } from './names.js'
import { Namespace } from './namespace.js'
import { describe } from './common.js'
import { optionsOf } from './options.js'

/**
 * The key of a versioned collection's version counter in its sequence
 * namespace, beside the id sequence's 'last': the versions namespace is
 * keyed by ids, and a collection with an id function may use any id.
 */
export const COUNTER_KEY = encode('version')

/**
 * @typedef {import('./write-scope.js').WriteScope} WriteScope
 */

/**
 * The versions of a versioned collection's records: one counter per
 * collection, raised by every write, and per record the value the counter
 * took at its last write (0 for a record written before the collection was
 * versioned). A deleted record's entry goes with it, and the counter never
 * goes back, so a record deleted and created again never has a version it
 * had before.
 */
export class RecordVersions {
  /**
   * @param {any} root
   * @param {string} collection
   * @param {Namespace} counter the collection's sequence namespace (a cached one)
   * @param {number} readCache
   */
  constructor (root, collection, counter, readCache) {
    this.collection = collection
    this.counter = counter
    this.namespace = new Namespace(root, layout.versions(collection), 'utf8', { readCache })
    /** The highest version a transaction has taken (it may not have committed yet). */
    this.reserved = 0
  }

  /**
   * Take the next version for a write of the record under `idBytes`: raise
   * the counter and, for a put (not a delete), store it as the record's.
   * Within a group commit the counter is written once (see batchOps()).
   * @param {WriteScope} scope @param {Uint8Array} idBytes @param {boolean} deleted
   */
  async stamp (scope, idBytes, deleted) {
    const stored = await scope.peek(this.counter, COUNTER_KEY)
    const last = stored === undefined ? 0 : parseInteger(stored, this.counter, COUNTER_KEY)
    // A transaction reserves its version in memory (see CollectionModel#nextId()),
    // and so does every other write: a transaction does not see the counter
    // a db.write() scope raises until the scope ends, and must not take the
    // scope's version meanwhile. (A write that does not go through leaves
    // its version unused.)
    const version = Math.max(last, this.reserved) + 1
    this.reserved = version
    scope.raise(this.counter, COUNTER_KEY, version)
    if (deleted) scope.del(this.namespace, idBytes)
    else scope.put(this.namespace, idBytes, String(version))
  }

  /**
   * The version of a record that exists, as the scope sees it.
   * @param {WriteScope} scope @param {Uint8Array} idBytes
   * @returns {Promise<number>}
   */
  async current (scope, idBytes) {
    return this.parse(await scope.get(this.namespace, idBytes), idBytes)
  }

  /**
   * Refuse with LEVELKIT_CONFLICT unless the record is at version
   * `expected` (a record that does not exist is at none).
   * @param {WriteScope} scope @param {unknown} id @param {Uint8Array} idBytes
   * @param {boolean} exists @param {number} expected
   */
  async expect (scope, id, idBytes, exists, expected) {
    const actual = exists ? await this.current(scope, idBytes) : undefined
    if (actual === expected) return
    const now = actual === undefined ? 'does not exist' : `is at version ${actual}`
    throw levelkitError(codes.CONFLICT, `Record ${describe(id)} of "${this.collection}" ${now}, not at version ${expected}`, {
      collection: this.collection, id, expected, actual
    })
  }

  /**
   * A record's version from its stored entry (undefined: none, version 0).
   * @param {string | undefined} stored @param {Uint8Array} idBytes
   */
  parse (stored, idBytes) {
    return stored === undefined ? 0 : parseInteger(stored, this.namespace, idBytes)
  }
}

/**
 * The `ifVersion` of a write's options, read once when the write is called;
 * undefined for none. Refused with LEVELKIT_INVALID: options the call does
 * not take, and ifVersion on a collection that is not versioned or that is
 * not a version (a non-negative safe integer).
 * @param {{ name: string, versions: RecordVersions | null }} model
 * @param {unknown} options
 * @param {'collection.put()' | 'collection.update()' | 'collection.del()'} call
 * @returns {number | undefined}
 */
export function ifVersionOf (model, options, call) {
  const { ifVersion } = optionsOf(options, call)
  if (ifVersion === undefined) return undefined
  if (model.versions === null) {
    throw invalid(`ifVersion needs a versioned collection: declare "${model.name}" with versioned: true`)
  }
  if (!Number.isSafeInteger(ifVersion) || ifVersion < 0) {
    throw invalid(`ifVersion must be a version, a non-negative integer as version() gives, got ${describe(ifVersion)}`)
  }
  return ifVersion
}
