// Compiled by `tsc` in `npm test`: the declarations of levelkit/cache.
import { createCache, policies } from '../../cache.js'
import type { Cache, CachePolicy, CacheStats } from '../../cache.js'

export function cacheUsage (): number {
  const cache: Cache<string, number> = createCache<string, number>({ policy: 'tinylfu', size: 100 })
  cache.set('a', 1).set('b', 2)
  const a: number | undefined = cache.get('a')
  const held: boolean = cache.has('b') && cache.delete('b')
  const stats: CacheStats = cache.stats()
  const first: CachePolicy = policies[0]
  createCache({ size: 10 })
  // @ts-expect-error the policies are lru, 2q, arc and tinylfu
  createCache({ policy: 'lfu', size: 10 })
  // @ts-expect-error size is required
  createCache({ policy: 'lru' })
  // @ts-expect-error keys are strings here
  cache.get(1)
  cache.clear()
  return (a ?? 0) + stats.hits + stats.misses + stats.evictions + cache.size + (held ? 1 : 0) + first.length
}
