// Hostile input at the door of the public API (test/hostile/), on memory and
// on LevelDB: the table-driven suite of every public method and argument,
// open() with hostile options, ids and values that read differently each
// time, values JSON would silently change, stored data that does not parse,
// and the error of a compound index key with a missing field.

import test from 'tape'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open } from '../index.js'
import { attempt } from './hostile/suite.js'
import { hostile } from './hostile/index.js'
import { HOSTILE } from './hostile/values.js'

const root = mkdtempSync(join(tmpdir(), 'levelkit-hostile-'))
let n = 0
const location = () => join(root, String(n++))

const backends = [
  { backend: 'memory', open: () => open({ backend: 'memory' }) },
  { backend: 'leveldb', open: () => open({ backend: 'leveldb', location: location() }) }
]

/** @type {import('./hostile/suite.js').Position[]} */
const OPEN_POSITIONS = [
  { where: 'open(options)', kinds: ['options'], call: (f, v) => open(v).then(closeIt) },
  { where: 'open({ backend })', kinds: ['backend'], call: (f, v) => open({ backend: v }).then(closeIt) },
  { where: 'open({ backend: \'memory\', location })', kinds: ['string'], call: (f, v) => open({ backend: 'memory', location: v }).then(closeIt) },
  { where: 'open({ backend: \'leveldb\', location })', kinds: ['string'], call: (f, v) => open({ backend: 'leveldb', location: typeof v === 'string' ? join(location(), v) : v }).then(closeIt) },
  { where: 'open({ db })', kinds: ['level'], call: (f, v) => open({ db: v }).then(closeIt) },
  { where: 'open({ syncReads })', kinds: ['bool'], call: (f, v) => open({ syncReads: v }).then(closeIt) },
  { where: 'open({ readCache })', kinds: ['nonneg'], call: (f, v) => open({ readCache: v }).then(closeIt) },
  { where: 'open({ backend: \'memory\', <backend option> })', kinds: ['any'], call: (f, v) => open({ backend: 'memory', storeEncoding: v }).then(closeIt) },
  { where: 'open({ backend: \'leveldb\', <backend option> })', kinds: ['any'], call: (f, v) => open({ backend: 'leveldb', location: location(), cacheSize: v }).then(closeIt) },
  { where: 'open({ keyEncoding })', kinds: ['any'], call: (f, v) => open({ backend: 'memory', keyEncoding: v }).then(closeIt) }
]

/** @param {any} db */
function closeIt (db) {
  return db.close()
}

/** @type {Record<string, [number, number]>} */
const counts = {}
for (const common of backends) hostile(test, common, { onCount: (failures, calls) => { counts[common.backend] = [failures, calls] } })

test('hostile input: open()', async t => {
  let failures = 0
  for (const hostile of HOSTILE) {
    for (const position of OPEN_POSITIONS) {
      for (const problem of await attempt({ db: null }, position, hostile)) {
        failures++
        t.comment(`${position.where} with ${hostile.name}: ${problem}`)
      }
    }
  }
  counts.open = [failures, HOSTILE.length * OPEN_POSITIONS.length]
  t.is(failures, 0, 'open() refuses hostile options with a documented code, or opens')
})

test('hostile input: failures per backend', async t => {
  for (const [name, [failures, calls]] of Object.entries(counts)) t.comment(`${name}: ${failures} failure(s) in ${calls} calls`)
  t.pass('reported')
})

test.onFinish(() => rmSync(root, { recursive: true, force: true }))
