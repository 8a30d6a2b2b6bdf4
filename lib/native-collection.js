import { nativeLayoutOf } from './native-layouts.js'
import { parseRecord } from './stored.js'
import { encode, decode } from './tuple.js'

// What a native collection's object store needs from its model (see
// lib/idb-records.js): its indexes' entries computed from a record as
// stored, as writeIndexEntries() computes them, and which record an
// entry belongs to.

const textDecoder = new TextDecoder()

/** A record's JSON as a native store holds it (text, or bytes: see NativeLayout#recordObject()). @param {string | Uint8Array} value */
function textOf (value) {
  return typeof value === 'string' ? value : textDecoder.decode(value)
}

/**
 * Give the native layout of the collection's database, if it keeps the
 * collection native, the collection's indexes (and have its record puts
 * carry the entries the model computed: Op.entries). Throws
 * LEVELKIT_NATIVE_LAYOUT if the indexes are not those the database was
 * opened with.
 * @param {import('./collection.js').CollectionModel} collection
 */
export function bindNative (collection) {
  const native = nativeLayoutOf(collection.root)
  if (native === null || native.collection(collection.name) === undefined) return
  /** @type {Map<string, import('./idb-records.js').IndexBinding>} */
  const bindings = new Map()
  for (const [name, index] of collection.indexes) {
    bindings.set(name, {
      keys (value, key, computed) {
        // While the entries of an older declaration are cleared (its key
        // function changed), the index is left alone, as in one store: a
        // record written then, or by the clearing, has no entry in it;
        // the build that follows writes every record again.
        if (!index.status.maintained) return []
        // The model's, from the record it stored: no parse, no key function run twice.
        if (computed !== undefined) {
          for (const [own, entries] of computed) if (own === index) return entries.map(entry => entry.key)
          return []
        }
        const json = textOf(value)
        const record = parseRecord(json, collection.records, key)
        return index.entries(record, decode(key), key, json).map(entry => entry.key)
      },
      value: index.covering ? 'record' : index.unique ? 'id' : 'empty',
      owner (key, value) {
        // A covering entry holds the record; a unique one its id's key; a
        // non-unique one's key ends with the id.
        if (index.covering) return encode(collection.idOf(parseRecord(textOf(value), index.namespace, key)))
        if (index.unique) return /** @type {Uint8Array} */ (value)
        const items = /** @type {unknown[]} */ (decode(key))
        return encode(items[items.length - 1])
      }
    })
  }
  native.bind(collection.name, bindings)
  collection.carriesEntries = true
}
