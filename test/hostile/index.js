import ids from './ids.js'
import json from './json.js'
import stored from './stored.js'
import indexKeys from './index-keys.js'
import { hostileSuite } from './suite.js'

/**
 * Hostile input at the door of the public API, environment-free (the runner
 * passes tape's `test` and `common = { backend, open }`, as for
 * test/conformance/): ids that read differently each time, values JSON would
 * change, stored data that does not parse, index key errors, and the table
 * of every public method with every hostile value.
 * @param {any} test
 * @param {{ backend: string, open: () => Promise<any> }} common
 * @param {{ onCount?: (failures: number, calls: number) => void }} [report]
 */
export function hostile (test, common, report) {
  hostileCases(test, common)
  hostileSuite(test, common, report)
}

/**
 * The cases without the table (which takes minutes on IndexedDB).
 * @param {any} test
 * @param {{ backend: string, open: () => Promise<any> }} common
 */
export function hostileCases (test, common) {
  for (const suite of [ids, json, stored, indexKeys]) suite(test, common)
}
