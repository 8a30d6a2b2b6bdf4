// Model-based property test: random sequences of operations are applied both
// to levelkit and to a plain in-memory reference model (Maps and Sets written
// from the documented semantics). After every command the results (or error
// codes) must agree; at the end of every run the whole state is compared
// through every read path, and db.check() must find nothing wrong. The
// commands, the reference and the runner are in test/util/model-*.js, shared
// with the PostgreSQL (model-property-postgres-test.js) and IndexedDB
// (browser-model-property-test.js) versions.
//
// A failure prints the shrunk counterexample, the mismatch, and a command
// line that replays it:
//   LEVELKIT_MODEL_ONLY=<memory|leveldb> LEVELKIT_MODEL_SEED=<seed> LEVELKIT_MODEL_PATH=<path> npx tape test/model-property-test.js
// LEVELKIT_MODEL_RUNS=<n> sets the number of runs (a quarter of it on classic-level).

import test from 'tape'
import os from 'node:os'
import path from 'node:path'
import fs from 'node:fs/promises'
import { open } from '../index.js'
import { modelProperty, MODEL_RUNS } from './util/model-node.js'

const MEMORY_RUNS = MODEL_RUNS ?? 100
const LEVELDB_RUNS = MODEL_RUNS === null ? 25 : Math.max(1, Math.ceil(MODEL_RUNS / 4))

const FILE = 'test/model-property-test.js'

modelProperty(test, {
  name: 'memory',
  title: 'model: levelkit on memory-level behaves like the reference model',
  file: FILE,
  numRuns: MEMORY_RUNS,
  seedOffset: 0,
  makeTarget: async () => ({ open: options => open({ backend: 'memory', ...options }), durable: false, other: null })
})

modelProperty(test, {
  name: 'leveldb',
  title: 'model: levelkit on classic-level behaves like the reference model (and survives reopening)',
  file: FILE,
  numRuns: LEVELDB_RUNS,
  seedOffset: 1,
  async makeTarget () {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'levelkit-model-'))
    return {
      open: options => open({ backend: 'leveldb', location: dir, ...options }),
      durable: true,
      other: null,
      destroy: () => fs.rm(dir, { recursive: true, force: true })
    }
  }
})
