// The read caches serve exactly what is written whatever their policy: the
// conformance suite (memory-level) runs again under each policy with caches
// of 4 entries, which evict all the time (test/util/read-cache-policy.js
// sets them), and open({ readCache: { policy, size } }) and db.stats() are
// checked here. Run any suite so by hand, e.g.
//   LEVELKIT_READ_CACHE_POLICY=arc LEVELKIT_READ_CACHE_SIZE=4 node --import ./test/util/read-cache-policy.js node_modules/tape/bin/tape test/chat-memory-test.js
import test from 'tape'
import { execFile } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'
import { open } from '../index.js'
import { policies } from '../cache.js'
import { readCacheDefaults } from '../lib/read-cache.js'
import { readCacheBudget } from '../lib/namespace.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const tape = join(dirname(createRequire(import.meta.url).resolve('tape')), 'bin', 'tape')
const SUITES = ['test/conformance-memory-test.js']
// Under two policies in npm test, under all four with LEVELKIT_TEST_SUITES=1
// (npm run test:cache-policies). The suite proves how namespaces use a cache,
// which is one code path whatever the policy (lib/read-cache.js); what each
// policy holds, serves and evicts is test/cache-policies-test.js's, against
// a model of each on random traces (a delete that keeps the entry, seeded in
// lru.js or two-queue.js, fails it). The two: the default (W-TinyLFU: its
// window, segments and sketch) and ARC (ghost entries that come back).
const RUN = process.env.LEVELKIT_TEST_SUITES === '1' ? policies : policies.filter(policy => policy === readCacheDefaults.policy || policy === 'arc')

// Two at a time (a child process each): the suites wait on timers and I/O
// as much as they compute.
const runs = new Map()
let started = 0
/** @param {string} policy */
function runSuites (policy) {
  const run = () => new Promise(resolve => {
    execFile(process.execPath, ['--import', './test/util/read-cache-policy.js', tape, ...SUITES], {
      // 500 watchers, not 5,000: the watchers' garbage is conformance-memory-test.js's to
      // prove, and 500 read through the caches as 5,000 do. Indexes built on 300
      // records, not 1,000: the 1,000 are for the build's batches (256, then 512 read
      // ahead: schema.js), which the plain runs prove on every backend; caches of 4
      // entries evict at every read from the fifth record on, so 300 go through them
      // as 1,000 do (a tenth of each run's CPU was the other 700).
      cwd: root, env: { ...process.env, LEVELKIT_READ_CACHE_POLICY: policy, LEVELKIT_READ_CACHE_SIZE: '4', LEVELKIT_WATCHERS: '500', LEVELKIT_SCHEMA_RECORDS: '300' }, timeout: 300000, maxBuffer: 64 * 1024 * 1024
    }, (err, stdout, stderr) => resolve({ code: err ? /** @type {any} */ (err).code ?? 1 : 0, stdout, stderr }))
  })
  const index = started++
  // The policy two places before this one has finished.
  const before = index >= 2 ? runs.get(RUN[index - 2]) : Promise.resolve()
  runs.set(policy, before.then(run))
}

for (const policy of RUN) {
  test(`the conformance suite passes with read caches of 4 entries, policy ${policy}`, async t => {
    if (!runs.has(policy)) for (const p of RUN) if (!runs.has(p)) runSuites(p)
    const { code, stdout, stderr } = await runs.get(policy)
    const pass = /^# pass +(\d+)/m.exec(stdout)?.[1]
    const failures = stdout.split('\n').filter((/** @type {string} */ line) => line.startsWith('not ok')).slice(0, 5)
    t.is(code, 0, `exit 0${code ? `: ${failures.join(' | ')} ${stderr.slice(-500)}` : ''}`)
    t.ok(Number(pass) > 1000, `${pass} assertions passed`)
  })
}

test('open({ readCache: { policy, size } }) picks the policy, a number keeps the default, and db.stats() counts per namespace', async t => {
  for (const policy of policies) {
    const db = await open({ backend: 'memory', readCache: { policy, size: 50 } })
    t.is(db.readCache, 50)
    t.is(db.readCachePolicy, policy)
    t.is(readCacheBudget(db.level)?.policy, policy, `the caches evict by ${policy}`)
    const docs = db.collection('docs', { indexes: { name: { unique: true, key: (/** @type {any} */ d) => d.name } } })
    const ids = []
    for (let i = 0; i < 100; i++) ids.push(await docs.insert({ name: `n${i}` }))
    for (let round = 0; round < 3; round++) for (const id of ids.slice(0, 20)) await docs.get(id)
    for (const id of ids) await docs.get(id)
    t.is((await docs.getBy('name', 'n3'))?.name, 'n3')
    const stats = db.stats()
    t.ok(stats.docs.hits >= 40, `${policy}: hits counted (${JSON.stringify(stats.docs)})`)
    t.ok(stats.docs.misses >= 20, 'and misses')
    t.ok(stats.docs.size <= 50 && stats.docs.size > 0, 'size: the entries held, at most the size')
    t.ok(stats.docs.evictions > 0, 'evictions: reading 100 records into a cache of 50 evicts')
    t.same(Object.keys(stats.docs), ['hits', 'misses', 'evictions', 'size'])
    t.ok('docs.idx.name' in stats, 'a unique index has its own')
    await db.close()
  }
  const plain = await open({ backend: 'memory', readCache: 20 })
  t.same([plain.readCache, plain.readCachePolicy], [20, readCacheDefaults.policy], 'a number is entries with the default policy')
  await plain.close()
  const off = await open({ backend: 'memory', readCache: { policy: 'arc', size: 0 } })
  off.collection('docs')
  t.same(off.stats(), {}, 'size 0: no cache, no statistics')
  await off.close()
  for (const bad of [{ policy: 'lfu' }, { size: -1 }, { size: 1.5 }, { policy: 'lru', size: 10, max: 3 }, null, [], 'lru', -1]) {
    try {
      await open({ backend: 'memory', readCache: bad })
      t.fail(`accepted readCache ${JSON.stringify(bad)}`)
    } catch (err) {
      t.is(/** @type {any} */ (err).code, 'LEVELKIT_INVALID', `refuses readCache ${JSON.stringify(bad)}`)
    }
  }
})
