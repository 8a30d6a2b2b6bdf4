import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { MemoryLevel } from 'memory-level'
import { ClassicLevel } from 'classic-level'
import { attempt } from '../../lib/backends.js'
import { equal, all } from '../../lib/checks.js'

export const functions = ['createTodoStore']

export function scenario (random) {
  const steps = []
  let added = 0
  for (let i = 0; i < 34; i++) {
    const r = random.next()
    if (added < 3 || r < 0.35) {
      steps.push(['add', random.words(random.int(1, 4)).join(' ')])
      added++
    } else if (r < 0.65) {
      // sometimes one already done, sometimes one that does not exist
      steps.push(['complete', random.next() < 0.1 ? added + 50 : random.int(1, added)])
    } else if (r < 0.85) {
      steps.push(['list', random.pick([undefined, true, false])])
    } else {
      steps.push(['stats'])
    }
  }
  // Ids past 9, so string keys ('10' < '2') show their order.
  for (; added < 11; added++) steps.push(['add', random.words(random.int(1, 4)).join(' ')])
  steps.push(['list', undefined], ['stats'])
  return { steps, after: [['list', undefined], ['stats'], ['add', random.words(2).join(' ')], ['list', undefined], ['stats']] }
}

async function play (store, steps) {
  const results = []
  for (const [op, arg] of steps) {
    const outcome = await attempt(() => op === 'list' ? store.list(arg === undefined ? undefined : { done: arg }) : store[op](arg))
    const call = `${op}(${arg === undefined ? '' : op === 'list' ? `{ done: ${arg} }` : JSON.stringify(arg)})`
    results.push(outcome.threw ? { call, threw: outcome.threw.code || outcome.threw.message } : { call, returned: outcome.value })
  }
  return results
}

async function run (mod, db, steps) {
  const store = await attempt(() => mod.createTodoStore(db))
  if (store.threw) return { threw: store.threw }
  return play(store.value, steps)
}

// Backend packages a learner's module must not import: it gets its db.
const backends = ['level', 'memory-level', 'classic-level', 'browser-level', 'rocks-level', 'leveldown', 'memdown', 'level-mem', 'level-js', 'many-level']

export async function exec ({ mod, scenario, seed, tempDir, moduleFile }) {
  // 1. memory-level
  const memory = new MemoryLevel()
  await memory.open()
  const onMemory = await run(mod, memory, scenario.steps)

  // 2. classic-level (LevelDB in a temporary directory), then reopened
  const dir = join(await tempDir(), 'todos')
  const classic = new ClassicLevel(dir)
  await classic.open()
  const onLevelDB = await run(mod, classic, scenario.steps)
  await classic.close()
  const reopened = new ClassicLevel(dir)
  await reopened.open()
  const afterReopen = await run(mod, reopened, scenario.after)
  await reopened.close()

  // 3. browser-level (IndexedDB, here the in-memory fake-indexeddb)
  try {
    await import('fake-indexeddb/auto')
  } catch (err) {
    throw new Error(`This exercise needs the package fake-indexeddb to run browser-level in Node: ${err.message}`)
  }
  const { BrowserLevel } = await import('browser-level')
  const browser = new BrowserLevel(`todos-${seed}`)
  await browser.open()
  const onIndexedDB = await run(mod, browser, scenario.steps)
  await browser.close()

  // 4. What the module imports (read from its source).
  const file = moduleFile
  const source = readFileSync(file, 'utf8')
  const imported = []
  for (const m of source.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)['"]([^'"]+)['"]/g)) {
    const name = m[1].startsWith('@') ? m[1].split('/').slice(0, 2).join('/') : m[1].split('/')[0]
    if (backends.includes(name)) imported.push(m[1])
  }
  return { onMemory, onLevelDB, onIndexedDB, afterReopen, imported }
}

// What a store on the reopened database should answer, from what this same
// module answered on LevelDB before the close (lists compared by id, so an
// ordering mistake shows up in results only).
function reopenExpected (learner, scenario) {
  if (!Array.isArray(learner.onLevelDB)) return 'the LevelDB run did not finish'
  const last = (op) => [...learner.onLevelDB].reverse().find(r => r.call.startsWith(op + '('))
  const todos = last('list').returned
  const stats = last('stats').returned
  if (!Array.isArray(todos) || !stats) return 'the LevelDB run did not finish'
  const id = Math.max(0, ...todos.map(t => t.id)) + 1
  const text = scenario.after[2][1]
  return byId([
    { call: 'list()', returned: todos },
    { call: 'stats()', returned: stats },
    { call: `add(${JSON.stringify(text)})`, returned: id },
    { call: 'list()', returned: [...todos, { id, text, done: false }] },
    { call: 'stats()', returned: { ...stats, total: stats.total + 1, open: stats.open + 1 } }
  ])
}

const byId = (results) => Array.isArray(results)
  ? results.map(r => Array.isArray(r.returned) ? { ...r, returned: [...r.returned].sort((a, b) => a.id - b.id) } : r)
  : results

export const checks = [
  {
    id: 'results',
    kind: 'result',
    title: 'the todo store gives the right answers (on memory-level)',
    check: ({ learner, reference }) => equal(learner.onMemory, reference.onMemory, 'add(text) resolves with the new id (1, 2, ...), complete(id) with true if it was open (false if done already or unknown), list() the todos { id, text, done } in id order (list({ done }) only those), stats() { total, done, open }')
  },
  {
    id: 'same-on-every-backend',
    kind: 'result',
    title: 'the same answers on classic-level and browser-level (IndexedDB)',
    check: ({ learner }) => all(
      equal(learner.onLevelDB, learner.onMemory, 'on classic-level (LevelDB) the answers differ from yours on memory-level'),
      equal(learner.onIndexedDB, learner.onMemory, 'on browser-level (IndexedDB) the answers differ from yours on memory-level: IndexedDB has no explicit snapshots and no getSync — check db.supports (db.supports.explicitSnapshots, db.supports.getSync) before using them')
    )
  },
  {
    id: 'persisted',
    kind: 'state',
    title: 'a store created on the reopened LevelDB database continues where it left off',
    check: ({ learner, scenario }) => equal(byId(learner.afterReopen), reopenExpected(learner, scenario), 'after closing and reopening the LevelDB database, a new store must see every todo and hand out new ids after the last one: keep everything (the last id too) in the database')
  },
  {
    id: 'no-backend-import',
    kind: 'behaviour',
    title: 'the module does not import a backend: it uses the db it is given',
    check: ({ learner }) => equal(learner.imported, [], 'a backend-agnostic module must not import a backend package (not even to test instanceof): use the db it is given, and feature-detect capabilities with db.supports')
  }
]
