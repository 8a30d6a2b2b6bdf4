// The workshop's verifiers run learners' code on InstrumentedLevel, a
// memory-level subclass that counts reads and batches and can inject latency
// and faults. With no latency or fault set, it must be a compliant
// abstract-level 3 database: run abstract-level's own compliance suite on it.

import test from 'tape'
import suite from 'abstract-level/test/index.js'
import { InstrumentedLevel } from '../lib/backends.js'

suite({
  test,
  factory: (/** @type {any} */ options) => new InstrumentedLevel(options)
})
