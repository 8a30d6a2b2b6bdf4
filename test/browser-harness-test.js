// The in-browser test harness (test/browser/harness.js) and the replay of
// its results, checked in Node: a failing, throwing or empty browser test
// must come back as a failure, or the browser tests could not fail.

import test from 'tape'
import { test as browserTest, run, deepEqual } from './browser/harness.js'
import { replay } from './util/browser.js'

test('harness: deepEqual is strict and structural, like tape\'s same()', t => {
  const equal = [
    [1, 1], [NaN, NaN], ['a', 'a'], [null, null], [undefined, undefined],
    [[1, [2, { a: 3 }]], [1, [2, { a: 3 }]]], [{ a: 1, b: 2 }, { b: 2, a: 1 }],
    [new Uint8Array([1, 2]), new Uint8Array([1, 2])], [new Date(5), new Date(5)], [/x/g, /x/g],
    [new Map([[1, 'a']]), new Map([[1, 'a']])]
  ]
  const different = [
    [1, '1'], [0, -0], [null, undefined], [[1, 2], [2, 1]], [{ a: 1 }, { a: 1, b: undefined }],
    [[1], { 0: 1 }], [new Uint8Array([1]), new Uint8Array([1, 0])], [new Uint8Array([1]), [1]],
    [new Date(5), new Date(6)], [{ a: [1] }, { a: [1, 2] }], [new Set([1]), new Set([2])]
  ]
  for (const [a, b] of equal) t.ok(deepEqual(a, b), `${String(a)} equals ${String(b)}`)
  for (const [a, b] of different) t.notOk(deepEqual(a, b), `${String(a)} differs from ${String(b)}`)
  t.end()
})

test('harness: failures, errors and empty tests come back as failures', async t => {
  browserTest('passes', async (/** @type {any} */ b) => { b.is(1, 1); b.same({ a: [1] }, { a: [1] }) })
  browserTest('fails', async (/** @type {any} */ b) => { b.is(1, 2, 'one is two') })
  browserTest('throws', async () => { throw Object.assign(new Error('boom'), { code: 'LEVELKIT_X' }) })
  browserTest('asserts nothing', async () => {})
  const results = await run()
  t.same(results.map(r => r.name), ['passes', 'fails', 'throws', 'asserts nothing'], 'tests run in order')
  t.same(results[1].assertions, [{ ok: false, name: 'one is two', operator: 'equal', actual: '1', expected: '2' }], 'a failed assertion keeps actual and expected')
  t.match(String(results[2].error), /\[LEVELKIT_X\]: boom/, 'a thrown error is recorded with its code')

  /** @type {Array<[boolean, string]>} */
  const replayed = []
  replay({ ok: (/** @type {boolean} */ ok, /** @type {string} */ msg) => replayed.push([!!ok, msg]), fail: (/** @type {string} */ msg) => replayed.push([false, msg]) }, results)
  t.same(replayed.filter(([ok]) => !ok).map(([, msg]) => msg.split(':')[0]), ['fails', 'throws', 'asserts nothing'], 'replay fails exactly the failing, throwing and empty tests')
  t.ok(replayed.some(([ok, msg]) => ok && msg === 'passes: should be strictly equal'), 'passing assertions replay as passes')
})
