import { invalid } from '../errors.js'
import { describe } from '../common.js'
import { optionsObject } from '../options.js'
import { LruCache } from './lru.js'
import { TwoQueueCache } from './two-queue.js'
import { ArcCache } from './arc.js'
import { TinyLfuCache } from './tinylfu.js'

/** The policies createCache() offers, by name. */
const CLASSES = {
  lru: LruCache,
  '2q': TwoQueueCache,
  arc: ArcCache,
  tinylfu: TinyLfuCache
}

/** @typedef {keyof typeof CLASSES} CachePolicy */

export const policies = Object.freeze(/** @type {CachePolicy[]} */ (Object.keys(CLASSES)))

/** The policy of createCache() without one. */
export const DEFAULT_POLICY = /** @type {CachePolicy} */ ('lru')

const OPTIONS = ['policy', 'size']

/**
 * A bounded cache of `size` entries evicting by `policy`: get, set, delete
 * and has in O(1).
 * @param {{ policy?: CachePolicy, size: number }} options
 */
export function createCache (options) {
  const { policy, size } = cacheOptions(options, 'createCache()')
  return cacheOf(policy, size)
}

/**
 * The policy and size of `options`, checked; throws LEVELKIT_INVALID.
 * @param {unknown} options @param {string} what names the caller in messages
 * @returns {{ policy: CachePolicy, size: number }}
 */
export function cacheOptions (options, what) {
  if (options === null || typeof options !== 'object') {
    throw invalid(`${what} takes an options object { policy, size }, not ${describe(options)}`)
  }
  // Read once, and refused with LEVELKIT_INVALID if it cannot be read.
  const object = /** @type {Record<string, unknown>} */ (optionsObject(options, what))
  const unknown = Object.keys(object).filter(name => !OPTIONS.includes(name))
  if (unknown.length > 0) {
    throw invalid(`${what} has unknown option(s): ${unknown.map(describe).join(', ')} (it takes ${OPTIONS.join(', ')})`, { options: unknown })
  }
  const policy = object.policy === undefined ? DEFAULT_POLICY : object.policy
  if (typeof policy !== 'string' || !Object.hasOwn(CLASSES, policy)) {
    throw invalid(`${what}: policy is one of ${policies.join(', ')}, not ${describe(policy)}`)
  }
  const size = object.size
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 1) {
    throw invalid(`${what}: size is a whole number of entries, at least 1, not ${describe(size)}`)
  }
  return /** @type {{ policy: CachePolicy, size: number }} */ ({ policy, size })
}

/**
 * A cache of a known policy and size, telling `onEvict` of each entry it
 * evicts (not of those deleted or replaced).
 * @param {CachePolicy} policy @param {number} size
 * @param {((key: any, value: any) => void) | null} [onEvict]
 * @returns {LruCache | TwoQueueCache | ArcCache | TinyLfuCache}
 */
export function cacheOf (policy, size, onEvict = null) {
  return new CLASSES[policy](size, onEvict)
}
