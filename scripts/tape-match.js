// Preloaded by scripts/repeat-test.js (node --import): runs only the tape
// tests whose name holds LEVELKIT_TEST_MATCH (case-sensitive), the others
// reported as skipped, so that one test of a suite can be run again and
// again without editing the file to add test.only.
import { createRequire } from 'node:module'

const match = process.env.LEVELKIT_TEST_MATCH
if (match) {
  const require = createRequire(import.meta.url)
  const Test = require('tape/lib/test')
  const run = Test.prototype.run
  Test.prototype.run = function () {
    // Subtests (t.test()) run with the test that made them.
    if (this._parentMatched !== true && !String(this.name).includes(match)) this._skip = true
    else this.on('test', (/** @type {any} */ sub) => { sub._parentMatched = true })
    return run.call(this)
  }
}
