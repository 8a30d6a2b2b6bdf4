// memory-level and classic-level as levelkit sees browser-level: without
// explicit snapshots and without getSync(), so the paths levelkit takes on
// IndexedDB run in Node, on memory and on real LevelDB. Hooks run the test's
// code after a point read or a range read of a namespace, so that a write
// can be made to land exactly between two reads: races forced, not hoped for.
import { MemoryLevel } from 'memory-level'
import { ClassicLevel } from 'classic-level'

/**
 * @typedef {(namespace: string) => unknown} ReadHook
 *   called with the namespace (sublevel name) of the key read; awaited
 */

/**
 * The namespace of a key or range bound of the root: `!name!...`.
 * @param {unknown} key
 */
function namespaceOf (key) {
  if (key === undefined || key === null) return ''
  const text = typeof key === 'string' ? key : String.fromCharCode(...Array.from(/** @type {Uint8Array} */ (key)))
  return text.slice(1, text.indexOf('!', 1))
}

/**
 * `Base` with read hooks, and (unless `snapshots`) without explicit
 * snapshots and getSync().
 * @param {any} Base MemoryLevel or ClassicLevel
 * @param {{ snapshots: boolean }} options
 */
function hooked (Base, { snapshots }) {
  return class extends Base {
    /** @param {...any} args */
    constructor (...args) {
      super(...args)
      if (!snapshots) {
        this.supports.explicitSnapshots = false
        this.supports.getSync = false
      }
      /** @type {ReadHook | null} after each point read (get, and each key of getMany), before it answers */
      this.afterGet = null
      /**
       * @type {ReadHook | null} after each read of an iterator (next, nextv,
       * all), before it answers. (Not before: an iterator reads from an
       * implicit snapshot taken when it is created.)
       */
      this.afterScan = null
    }

    /** @param {any} key @param {any} options */
    async get (key, options) {
      const value = await super.get(key, options)
      if (this.afterGet) await this.afterGet(namespaceOf(key))
      return value
    }

    /** @param {any[]} keys @param {any} options */
    async getMany (keys, options) {
      const values = await super.getMany(keys, options)
      for (const key of keys) if (this.afterGet) await this.afterGet(namespaceOf(key))
      return values
    }

    /** @param {any} options */
    iterator (options) {
      return this.#scanned(super.iterator(options), options)
    }

    /** @param {any} options */
    keys (options) {
      return this.#scanned(super.keys(options), options)
    }

    /**
     * Run afterScan after each read of the iterator.
     * @param {any} iterator @param {any} options
     */
    #scanned (iterator, options) {
      const namespace = namespaceOf(options?.gte ?? options?.gt ?? options?.lte ?? options?.lt)
      for (const method of ['next', 'nextv', 'all']) {
        const read = iterator[method].bind(iterator)
        iterator[method] = async (/** @type {any[]} */ ...args) => {
          const result = await read(...args)
          if (this.afterScan) await this.afterScan(namespace)
          return result
        }
      }
      return iterator
    }
  }
}

/** memory-level without explicit snapshots or getSync(), with read hooks. */
export const NoSnapshotMemoryLevel = hooked(MemoryLevel, { snapshots: false })

/** classic-level without explicit snapshots or getSync(), with read hooks. */
export const NoSnapshotClassicLevel = hooked(ClassicLevel, { snapshots: false })

/** classic-level as it is (snapshots, getSync()), with read hooks. */
export const HookedClassicLevel = hooked(ClassicLevel, { snapshots: true })
