// The cache policies of levelkit/cache (lib/cache/): each one gives the same
// hits and misses as a plain, obviously correct model of the same policy
// (arrays scanned with indexOf and spliced, front = most recent) on random
// traces with sets and deletes; none grows past its bound (entries and
// ghosts) under traces made to grow it; and the module's API and errors.
import test from 'tape'
import { prng } from 'levelkit-testkit/prng'
import { createCache, policies } from '../cache.js'
import { cacheOf } from '../lib/cache/index.js'
import { FrequencySketch, hashOf } from '../lib/cache/sketch.js'

/** Remove `key` from `list` if it is there. @param {any[]} list @param {any} key */
function drop (list, key) {
  const i = list.indexOf(key)
  if (i >= 0) list.splice(i, 1)
  return i >= 0
}

class Model {
  /** @param {number} max */
  constructor (max) {
    this.max = max
    /** @type {Map<any, any>} values of the entries held */
    this.values = new Map()
    this.hits = 0
    this.misses = 0
    this.evictions = 0
  }

  get size () { return this.values.size }
  /** @param {any} key */
  has (key) { return this.values.has(key) }
  stats () { return { hits: this.hits, misses: this.misses, evictions: this.evictions } }
  /** @param {any} key */
  get (key) {
    if (!this.values.has(key)) {
      this.misses++
      return undefined
    }
    this.hits++
    this.touch(key)
    return this.values.get(key)
  }

  /** @param {any} key */
  touch (key) {}
  /** @param {any} key */
  evict (key) {
    this.values.delete(key)
    this.evictions++
  }
}

class LruModel extends Model {
  /** @param {number} max */
  constructor (max) {
    super(max)
    /** @type {any[]} */
    this.order = []
  }

  /** @param {any} key */
  touch (key) {
    drop(this.order, key)
    this.order.unshift(key)
  }

  /** @param {any} key @param {any} value */
  set (key, value) {
    if (!this.values.has(key) && this.values.size >= this.max) this.evict(/** @type {any} */ (this.order.pop()))
    this.values.set(key, value)
    this.touch(key)
  }

  /** @param {any} key */
  delete (key) {
    drop(this.order, key)
    return this.values.delete(key)
  }

  ghosts () { return 0 }
}

class TwoQueueModel extends Model {
  /** @param {number} max */
  constructor (max) {
    super(max)
    this.kin = Math.max(1, Math.floor(max / 4))
    this.kout = Math.max(1, Math.floor(max / 2))
    /** @type {any[]} */ this.in = []
    /** @type {any[]} */ this.main = []
    /** @type {any[]} */ this.out = []
  }

  /** @param {any} key */
  touch (key) {
    if (drop(this.main, key)) this.main.unshift(key)
  }

  /** @param {any} key @param {any} value */
  set (key, value) {
    if (this.values.has(key)) {
      this.values.set(key, value)
      this.touch(key)
      return
    }
    const ghost = drop(this.out, key)
    if (this.in.length + this.main.length >= this.max) {
      if (this.in.length > this.kin || this.main.length === 0) {
        const old = this.in.pop()
        this.evict(old)
        this.out.unshift(old)
        if (this.out.length > this.kout) this.out.pop()
      } else {
        this.evict(this.main.pop())
      }
    }
    this.values.set(key, value)
    if (ghost) this.main.unshift(key)
    else this.in.unshift(key)
  }

  /** @param {any} key */
  delete (key) {
    drop(this.in, key)
    drop(this.main, key)
    drop(this.out, key)
    return this.values.delete(key)
  }

  ghosts () { return this.out.length }
}

class ArcModel extends Model {
  /** @param {number} max */
  constructor (max) {
    super(max)
    this.p = 0
    /** @type {any[]} */ this.t1 = []
    /** @type {any[]} */ this.t2 = []
    /** @type {any[]} */ this.b1 = []
    /** @type {any[]} */ this.b2 = []
  }

  /** @param {any} key */
  touch (key) {
    drop(this.t1, key)
    drop(this.t2, key)
    this.t2.unshift(key)
  }

  full () { return this.t1.length + this.t2.length >= this.max }

  /** @param {boolean} inB2 */
  replace (inB2) {
    const t1 = this.t1.length
    if (t1 > 0 && ((inB2 && t1 === this.p) || t1 > this.p || this.t2.length === 0)) {
      const old = this.t1.pop()
      this.evict(old)
      this.b1.unshift(old)
    } else {
      const old = this.t2.pop()
      this.evict(old)
      this.b2.unshift(old)
    }
  }

  /** @param {any} key @param {any} value */
  set (key, value) {
    if (this.values.has(key)) {
      this.values.set(key, value)
      this.touch(key)
      return
    }
    const { t1, t2, b1, b2, max } = this
    if (b1.includes(key)) {
      this.p = Math.min(max, this.p + Math.max(b2.length / b1.length, 1))
      if (this.full()) this.replace(false)
      drop(b1, key)
      t2.unshift(key)
    } else if (b2.includes(key)) {
      this.p = Math.max(0, this.p - Math.max(b1.length / b2.length, 1))
      if (this.full()) this.replace(true)
      drop(b2, key)
      t2.unshift(key)
    } else {
      if (t1.length + b1.length >= max) {
        if (t1.length < max) {
          b1.pop()
          if (this.full()) this.replace(false)
        } else {
          this.evict(t1.pop())
        }
      } else if (t1.length + t2.length + b1.length + b2.length >= max) {
        if (t1.length + t2.length + b1.length + b2.length >= 2 * max) b2.pop()
        if (this.full()) this.replace(false)
      }
      t1.unshift(key)
    }
    this.values.set(key, value)
  }

  /** @param {any} key */
  delete (key) {
    for (const list of [this.t1, this.t2, this.b1, this.b2]) drop(list, key)
    return this.values.delete(key)
  }

  ghosts () { return this.b1.length + this.b2.length }
}

// The sketch is shared with the policy: it is checked on its own below.
class TinyLfuModel extends Model {
  /** @param {number} max */
  constructor (max) {
    super(max)
    this.maxWindow = max - Math.floor(0.99 * max)
    this.maxProtected = Math.floor((max - this.maxWindow) * 0.8)
    this.sketch = new FrequencySketch(max)
    /** @type {any[]} */ this.window = []
    /** @type {any[]} */ this.probation = []
    /** @type {any[]} */ this.protected = []
    this.sampleHits = 0
    this.sampleMisses = 0
    this.previousHitRate = 0
    this.step = 0.0625 * max
  }

  /** @param {any} key */
  touch (key) {
    this.sketch.increment(hashOf(key))
    if (drop(this.window, key)) {
      this.window.unshift(key)
    } else if (drop(this.protected, key)) {
      this.protected.unshift(key)
    } else {
      drop(this.probation, key)
      this.protected.unshift(key)
      this.demote()
    }
    this.sampleHits++
    this.climb()
  }

  demote () {
    while (this.protected.length > this.maxProtected) this.probation.unshift(this.protected.pop())
  }

  // Caffeine's hill climber, as BoundedLocalCache.climb() has it, but
  // growing the window first.
  climb () {
    if (2 * this.values.size < this.max) {
      this.sampleHits = this.sampleMisses = 0
      return
    }
    const requests = this.sampleHits + this.sampleMisses
    if (requests < 10 * this.max) return
    const hitRate = this.sampleHits / requests
    const change = hitRate - this.previousHitRate
    const amount = change >= 0 ? this.step : -this.step
    this.step = Math.abs(change) >= 0.05 ? 0.0625 * this.max * Math.sign(amount || 1) : 0.98 * amount
    this.previousHitRate = hitRate
    this.sampleHits = this.sampleMisses = 0
    const adjustment = Math.trunc(amount)
    if (adjustment > 0) {
      let quota = Math.min(adjustment, this.maxProtected)
      this.maxProtected -= quota
      this.maxWindow += quota
      this.demote()
      while (quota > 0 && this.probation.length + this.protected.length > 0) {
        this.window.unshift(this.probation.length > 0 ? this.probation.pop() : this.protected.pop())
        quota--
      }
      this.maxProtected += quota
      this.maxWindow -= quota
    } else if (adjustment < 0) {
      let quota = Math.min(-adjustment, Math.max(0, this.maxWindow - 1))
      this.maxProtected += quota
      this.maxWindow -= quota
      while (quota > 0 && this.window.length > 0) {
        this.probation.unshift(this.window.pop())
        quota--
      }
      this.maxProtected -= quota
      this.maxWindow += quota
    }
  }

  /** @param {any} key @param {any} value */
  set (key, value) {
    if (this.values.has(key)) {
      this.values.set(key, value)
      this.touch(key)
      return
    }
    if (2 * (this.values.size + 1) >= this.max) this.sketch.allocate()
    this.sketch.increment(hashOf(key))
    this.values.set(key, value)
    this.window.unshift(key)
    if (this.window.length > this.maxWindow) {
      const candidate = this.window.pop()
      this.probation.unshift(candidate)
      if (this.values.size > this.max) {
        const victim = this.probation[this.probation.length - 1]
        const f = (/** @type {any} */ k) => this.sketch.frequency(hashOf(k))
        const evicted = f(candidate) > f(victim) ? victim : candidate
        drop(this.probation, evicted)
        this.evict(evicted)
      }
    }
    this.sampleMisses++
    this.climb()
  }

  /** @param {any} key */
  delete (key) {
    for (const list of [this.window, this.probation, this.protected]) drop(list, key)
    return this.values.delete(key)
  }

  ghosts () { return 0 }
}

const MODELS = { lru: LruModel, '2q': TwoQueueModel, arc: ArcModel, tinylfu: TinyLfuModel }

/** Entries and ghosts a policy holds: its Map has both. @param {any} cache */
const held = cache => cache.map.size

/**
 * A random trace: `keys` keys, some much hotter than others (a hot set
 * that drifts), with reads that fill the cache on a miss, writes and
 * deletes.
 * @param {ReturnType<typeof prng>} random @param {number} length @param {number} keys
 */
function randomTrace (random, length, keys) {
  const trace = []
  let hot = 0
  for (let i = 0; i < length; i++) {
    if (i % 500 === 0) hot = random.int(keys)
    const r = random()
    const key = r < 0.5 ? (hot + random.int(Math.max(1, keys >> 3))) % keys : random.int(keys)
    const op = random()
    trace.push({ op: op < 0.9 ? 'read' : op < 0.96 ? 'set' : 'delete', key: random() < 0.5 ? key : `k${key}` })
  }
  return trace
}

for (const policy of policies) {
  test(`${policy}: the same hits, misses, evictions and contents as a plain model of the policy, on random traces`, t => {
    const random = prng(policy.length * 7919 + 1)
    let steps = 0
    let first = null
    for (const [max, keys] of [[1, 4], [2, 6], [3, 10], [5, 12], [8, 30], [16, 60], [50, 120], [125, 250], [200, 2000]]) {
      for (let round = 0; round < 3 && first === null; round++) {
        const cache = cacheOf(policy, max)
        const model = new MODELS[policy](max)
        const trace = randomTrace(random, 3000, keys)
        for (const [i, { op, key }] of trace.entries()) {
          steps++
          let same = true
          if (op === 'read') {
            const got = cache.get(key)
            same = got === model.get(key)
            if (got === undefined) {
              cache.set(key, i)
              model.set(key, i)
            }
          } else if (op === 'set') {
            cache.set(key, -i)
            model.set(key, -i)
          } else {
            same = cache.delete(key) === model.delete(key)
          }
          same &&= cache.size === model.size && cache.has(key) === model.has(key) && held(cache) === model.size + model.ghosts()
          if (!same) {
            first = `size ${max}, step ${i} (${op} ${key}): cache ${JSON.stringify(cache.stats())} size ${cache.size}, model ${JSON.stringify(model.stats())} size ${model.size}`
            break
          }
        }
        if (first === null) {
          t.same(cache.stats(), model.stats(), `size ${max}, ${keys} keys, round ${round}: same stats ${JSON.stringify(cache.stats())}`)
          const contents = [...model.values.keys()].filter(key => cache.get(key) !== model.values.get(key))
          t.same(contents, [], 'and the same entries with the same values')
        }
      }
    }
    t.is(first, null, `no difference in ${steps} steps`)
    t.end()
  })

  test(`${policy}: never holds more than its bound of entries and ghosts, whatever the trace`, t => {
    // Ghosts: 2Q keeps half the size, ARC as many as the size, LRU and
    // W-TinyLFU none.
    const bound = (/** @type {number} */ max) => policy === 'arc' ? 2 * max : policy === '2q' ? max + Math.max(1, Math.floor(max / 2)) : max
    const random = prng(42)
    /** @type {Record<string, (i: number, max: number) => any>} */
    const traces = {
      'a scan of new keys': i => i,
      'a loop of twice the size': (i, max) => i % (2 * max),
      'a loop of the size + 1': (i, max) => i % (max + 1),
      'alternating hot keys and new keys': (i, max) => i % 2 ? i : i % max,
      'uniform over 10× the size': (i, max) => random.int(10 * max),
      'read twice, then never again': i => i >> 1
    }
    for (const [name, key] of Object.entries(traces)) {
      for (const max of [1, 2, 7, 100]) {
        const cache = cacheOf(policy, max)
        let over = 0
        let overHeld = 0
        for (let i = 0; i < 20000; i++) {
          const k = key(i, max)
          if (cache.get(k) === undefined) cache.set(k, i)
          if (i % 97 === 0) cache.delete(key(i + 13, max))
          if (cache.size > max) over++
          if (held(cache) > bound(max)) overHeld++
        }
        if (over || overHeld) t.fail(`${name}, size ${max}: ${over} steps above the size, ${overHeld} above the bound of ${bound(max)}`)
      }
    }
    t.pass(`at most size entries, and at most ${policy === 'arc' ? '2 × size' : policy === '2q' ? 'size + size / 2' : 'size'} entries and ghosts in all, on ${Object.keys(traces).length} traces at 4 sizes`)
    t.end()
  })

  test(`${policy}: the API`, t => {
    const cache = createCache({ policy, size: 4 })
    t.is(cache.size, 0)
    t.is(cache.get('a'), undefined, 'a miss is undefined')
    t.is(cache.set('a', 1), cache, 'set() returns the cache')
    cache.set('b', undefined)
    t.ok(cache.has('b') && cache.get('b') === undefined, 'an undefined value is held: has() tells it from a miss')
    t.is(cache.get('a'), 1)
    cache.set('a', 2)
    t.is(cache.get('a'), 2, 'set() replaces a value')
    t.is(cache.size, 2)
    t.is(cache.delete('a'), true, 'delete() says it deleted')
    t.is(cache.delete('a'), false, 'and that there was nothing to delete')
    t.notOk(cache.has('a'))
    t.is(cache.size, 1)
    t.same(cache.stats(), { hits: 3, misses: 1, evictions: 0 }, 'stats() counts hits and misses of get()')
    for (let i = 0; i < 100; i++) cache.set(i, i)
    t.is(cache.size, 4, 'size is the entries held')
    t.is(cache.stats().evictions, 97, 'stats() counts evictions, not deletes')
    t.notOk(cache.has(-1))
    t.end()
  })
}

for (const policy of policies) {
  test(`${policy}: what the read cache uses: peek() and replace() neither count nor move, evict() evicts as a miss would`, t => {
    const a = cacheOf(policy, 50)
    const b = cacheOf(policy, 50)
    const random = prng(3)
    for (let i = 0; i < 3000; i++) {
      const key = random.int(120)
      // a also peeks and replaces: a and b must stay the same cache.
      if (a.peek(key) !== b.peek(key)) return t.fail(`peek(${key}) differs`)
      if (i % 5 === 0 && a.replace(key, -i) !== b.has(key)) return t.fail(`replace(${key}) said wrong`)
      if (i % 5 === 0 && b.has(key)) b.replace(key, -i)
      for (const c of [a, b]) if (c.get(key) === undefined) c.set(key, i)
    }
    t.same(a.stats(), b.stats(), 'the same stats')
    t.same([...a.map.keys()].filter(k => a.has(k)).map(k => a.peek(k)), [...b.map.keys()].filter(k => b.has(k)).map(k => b.peek(k)), 'the same entries and values')
    /** @type {any[]} */
    const evicted = []
    const c = cacheOf(policy, 20, (key, value) => evicted.push([key, value]))
    for (let i = 0; i < 40; i++) if (c.get(i % 25) === undefined) c.set(i % 25, `v${i % 25}`)
    const before = c.stats().evictions
    const held = [...c.map.keys()].filter(k => c.has(k))
    let n = 0
    while (c.evict()) n++
    t.is(n, held.length, 'evict() evicts every entry, one a call, then says false')
    t.is(c.size, 0, 'and the cache is empty')
    t.is(c.stats().evictions, before + n, 'each counted as an eviction')
    t.ok(evicted.slice(-n).every(([key, value]) => held.includes(key) && value === `v${key}`), 'and told to onEvict with its value')
    c.set('x', 1)
    t.is(c.get('x'), 1, 'and it fills again')
    t.end()
  })
}

test('createCache() refuses bad options with LEVELKIT_INVALID', t => {
  const bad = [undefined, null, 3, 'lru', [], {}, { size: 0 }, { size: -1 }, { size: 1.5 }, { size: '10' }, { size: Infinity }, { size: NaN },
    { policy: 'LRU', size: 10 }, { policy: 'lfu', size: 10 }, { policy: null, size: 10 }, { policy: 'toString', size: 10 }, { size: 10, max: 5 }]
  for (const options of bad) {
    try {
      createCache(/** @type {any} */ (options))
      t.fail(`accepted ${JSON.stringify(options)}`)
    } catch (err) {
      t.is(/** @type {any} */ (err).code, 'LEVELKIT_INVALID', `refuses ${JSON.stringify(options) ?? String(options)}: ${/** @type {Error} */ (err).message}`)
    }
  }
  t.same(createCache({ size: 2 }).stats(), { hits: 0, misses: 0, evictions: 0 }, 'policy has a default')
  t.same([...policies], ['lru', '2q', 'arc', 'tinylfu'], 'the policies')
  t.end()
})

test('the frequency sketch never counts below the true count, ages, and stays its size', t => {
  const sketch = new FrequencySketch(1000)
  sketch.increment(hashOf('before'))
  t.is(sketch.frequency(hashOf('before')), 0, 'it counts nothing until allocated')
  sketch.allocate()
  const bytes = /** @type {Uint8Array} */ (sketch.table).length
  const random = prng(7)
  const counts = new Map()
  let under = 0
  for (let i = 0; i < 5000; i++) {
    const key = random() < 0.5 ? random.int(20) : `key${random.int(3000)}`
    sketch.increment(hashOf(key))
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  for (const [key, count] of counts) if (sketch.frequency(hashOf(key)) < Math.min(15, count)) under++
  t.is(under, 0, 'no key below its count (capped at 15)')
  t.is(sketch.frequency(hashOf('never seen')) <= 2, true, 'a key never seen counts near 0')
  const before = sketch.frequency(hashOf(3))
  for (let i = 0; i < 10000; i++) sketch.increment(hashOf(`new${i}`))
  t.ok(sketch.frequency(hashOf(3)) < before, `counts halve as new accesses come (${before} → ${sketch.frequency(hashOf(3))})`)
  t.ok(sketch.additions < sketch.sampleSize, 'additions stay under the sample size')
  t.is(/** @type {Uint8Array} */ (sketch.table).length, bytes, 'and its table never grows')
  t.is(hashOf('abc'), hashOf('abc'))
  t.not(hashOf(1), hashOf('1'), 'numbers and strings hash apart')
  t.end()
})
