// node --expose-gc list-cache-heap.js <memory|leveldb> <location> <ids> <edges> [readCacheBytes]
// Reads the relation lists of <ids> ids with <edges> edges each, 10 of each
// and then whole, twice, and prints the heap each kind of read left behind
// (after a full GC), as JSON. For test/read-cache-test.js, and to measure.
import { open } from '../../index.js'
import { readCacheBudget } from '../../lib/namespace.js'

const [backend, location, ids, edges, bytes] = process.argv.slice(2)
const IDS = Number(ids)
const EDGES = Number(edges)
const gc = /** @type {() => void} */ (globalThis.gc)

const options = bytes === undefined ? {} : { readCacheBytes: Number(bytes) }
const db = backend === 'memory'
  ? await open({ backend: 'memory', ...options })
  : await open({ backend: 'leveldb', location, ...options })
const users = db.collection('users')
const groups = db.collection('groups')
const members = db.relation('members', { from: groups, to: users })
// A LevelDB location that holds the data already (an earlier run) is read as it is.
const fresh = (await groups.count()) === 0
const userIds = []
const groupIds = []
if (fresh) {
  for (let i = 0; i < EDGES; i += 10000) {
    userIds.push(...await db.write(async w => {
      const chunk = []
      for (let j = i; j < Math.min(EDGES, i + 10000); j++) chunk.push(await users.in(w).insert({}))
      return chunk
    }))
  }
  for (let i = 0; i < IDS; i++) {
    const g = await groups.insert({})
    groupIds.push(g)
    for (let j = 0; j < EDGES; j += 10000) await members.addMany(g, userIds.slice(j, j + 10000))
  }
} else {
  for await (const id of users.query().keys()) userIds.push(id)
  for await (const id of groups.query().keys()) groupIds.push(id)
}

/** The heap after a full collection. */
async function settledHeap () {
  for (let i = 0; i < 3; i++) {
    await new Promise(resolve => setTimeout(resolve, 10))
    gc()
  }
  return process.memoryUsage().heapUsed
}

/** @param {any} options */
async function readAll (options) {
  for (let round = 0; round < 2; round++) {
    for (const g of groupIds) {
      const list = await members.to(g, options).all()
      if (list.length !== Math.min(EDGES, options.limit ?? Infinity)) throw new Error(`read ${list.length} ids`)
    }
  }
}

// Once before measuring, so what the first reads compile is not counted.
await members.to(groupIds[0], { limit: 10 }).all()
await users.get(userIds[0])
const start = await settledHeap()
await readAll({ limit: 10 })
const limited = await settledHeap()
await readAll({})
const whole = await settledHeap()
console.log(JSON.stringify({ limitedRetained: limited - start, retained: whole - limited, cached: readCacheBudget(db.level)?.used }))
await db.close()
