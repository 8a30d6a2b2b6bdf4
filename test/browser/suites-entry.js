/* global indexedDB */
// The model conformance suite, the chat suite and the hostile-input cases
// (test/hostile/), unchanged, on IndexedDB in a browser page:
// test/browser-suites-test.js bundles this file, opens it in Chromium and
// calls window.levelkitTests.run().

import { test, run } from './harness.js'
import { open } from '../../browser.js'
import { conformance } from '../conformance/index.js'
import { chatSuite } from '../chat/suite.js'
import { hostileCases } from '../hostile/index.js'

// A fresh IndexedDB database for every open(): the suites expect empty ones.
const run_ = Math.random().toString(36).slice(2)
let opened = 0
const common = {
  backend: 'indexeddb',
  // Relations on the lists layout: the suites watch batches with a 'write'
  // listener on the root, which the IndexedDB index kind refuses
  // (test/browser-idb-native-test.js tests that kind).
  open: () => open({ location: `levelkit-suite-${run_}-${++opened}`, relationIndexes: false })
}

conformance(/** @type {any} */ (test), common)
chatSuite(/** @type {any} */ (test), common)
hostileCases(/** @type {any} */ (test), common)

test('browser: open() picks IndexedDB and explains what it cannot do', async (/** @type {any} */ t) => {
  const db = await open()
  t.is(db.level.type, 'browser-level', 'open() with no options opens IndexedDB')
  t.is(db.level.location, 'levelkit', "in the database named 'levelkit'")
  await db.close()
  const named = await open({ location: `levelkit-named-${run_}` })
  t.is(named.level.location, `levelkit-named-${run_}`, 'or in the one named by location')
  await named.close()
  const names = (await indexedDB.databases()).map(d => d.name)
  t.ok(names.includes('levelkit') && names.includes(`levelkit-named-${run_}`), `the IndexedDB databases have exactly those names (${names.filter(n => n !== undefined && n.includes('named')).join(', ')})`)
  // A database made with browser-level's default prefix (levelkit 0.1) opens with it.
  const old = await open({ location: `old-${run_}`, prefix: 'level-js-' })
  await old.collection('things').insert({ kept: true })
  await old.close()
  t.ok((await indexedDB.databases()).some(d => d.name === `level-js-old-${run_}`), 'prefix: \'level-js-\' opens the prefixed name')
  const again = await open({ location: `old-${run_}`, prefix: 'level-js-' })
  t.same(await again.collection('things').get(1), { kept: true, id: 1 }, 'and finds its data again')
  await again.close()
  const memory = await open({ backend: 'memory' })
  t.is(memory.level.type, undefined, 'memory on request')
  t.is(memory.level.supports.permanence, false, 'a memory database is not permanent')
  await memory.close()
  try {
    await open({ backend: 'leveldb', location: 'x' })
    t.fail('leveldb should be refused')
  } catch (err) {
    t.is(/** @type {any} */ (err).code, 'LEVELKIT_BACKEND_UNAVAILABLE', 'leveldb is refused with LEVELKIT_BACKEND_UNAVAILABLE')
  }
})

Object.assign(globalThis, { levelkitTests: { run } })
