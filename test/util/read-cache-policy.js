// Preload (node --import) that runs a test suite with the read caches'
// default policy set to $LEVELKIT_READ_CACHE_POLICY and, if given, their
// default size to $LEVELKIT_READ_CACHE_SIZE entries: the suites that open
// databases without naming them then run under those
// (test/read-cache-policies-test.js).
import { readCacheDefaults } from '../../lib/read-cache.js'
import { policies } from '../../lib/cache/index.js'

const policy = process.env.LEVELKIT_READ_CACHE_POLICY
if (policy !== undefined) {
  if (!policies.includes(/** @type {any} */ (policy))) throw new Error(`LEVELKIT_READ_CACHE_POLICY is one of ${policies.join(', ')}, not ${policy}`)
  readCacheDefaults.policy = /** @type {any} */ (policy)
}
const size = process.env.LEVELKIT_READ_CACHE_SIZE
if (size !== undefined) {
  if (!/^[1-9]\d*$/.test(size)) throw new Error(`LEVELKIT_READ_CACHE_SIZE is a whole number of entries, not ${size}`)
  readCacheDefaults.size = Number(size)
}
