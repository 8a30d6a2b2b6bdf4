// The model conformance suite and the chat suite, unchanged, on IndexedDB in
// a browser page: test/browser-suites-test.js bundles this file, opens it in
// Chromium and calls window.levelkitTests.run().

import { test, run } from './harness.js'
import { open } from '../../browser.js'
import { conformance } from '../conformance/index.js'
import { chatSuite } from '../chat/suite.js'

// A fresh IndexedDB database for every open(): the suites expect empty ones.
const run_ = Math.random().toString(36).slice(2)
let opened = 0
const common = {
  backend: 'indexeddb',
  open: () => open({ location: `levelkit-suite-${run_}-${++opened}` })
}

conformance(/** @type {any} */ (test), common)
chatSuite(/** @type {any} */ (test), common)

Object.assign(globalThis, { levelkitTests: { run } })
