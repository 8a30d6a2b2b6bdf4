// Helpers a verifier's checks return. A check is a function of the two
// observations (learner's and reference's) and the scenario; it returns
// pass() (or nothing) when it holds, or fail()/a failed equal() with what was
// expected and what was seen, so the report can show a diff.
import { isDeepStrictEqual } from 'node:util'

/** The check kinds a verifier may declare (shown in the report). */
export const kinds = Object.freeze(['result', 'state', 'behaviour', 'fault'])

/**
 * What a check returns: ok, or not with a message and optionally the
 * expected and actual values (shown as a diff).
 * @typedef {{ ok: boolean, message?: string, expected?: any, actual?: any }} CheckResult
 */

/** @returns {CheckResult} */
export function pass () {
  return { ok: true }
}

/**
 * @param {string} message what went wrong, in the learner's terms
 * @param {{ expected?: any, actual?: any }} [values] shown as a diff
 */
export function fail (message, values) {
  /** @type {CheckResult} */
  const result = { ok: false, message }
  if (values && 'expected' in values) result.expected = values.expected
  if (values && 'actual' in values) result.actual = values.actual
  return result
}

/**
 * Deep-equal (strict: undefined is not null) or fail with a diff.
 * @param {any} actual
 * @param {any} expected
 * @param {string} message
 */
export function equal (actual, expected, message) {
  return isDeepStrictEqual(actual, expected) ? pass() : fail(message, { expected, actual })
}

/**
 * Pass if `cond`; otherwise fail with message (and optional diff values).
 * @param {boolean} cond
 * @param {string} message
 * @param {{ expected?: any, actual?: any }} [values]
 */
export function assert (cond, message, values) {
  return cond ? pass() : fail(message, values)
}

/**
 * Apply several checks in order and return the first failure.
 * @param {...any} results
 */
export function all (...results) {
  return results.find(result => result && result.ok === false) || pass()
}

/**
 * The outcome of an `attempt()` as the learner would see it: its value, or
 * what it threw. Checks use this so a thrown error shows up in the diff.
 * @param {{ value?: any, threw?: any } | undefined} outcome
 */
export function outcome (outcome) {
  if (!outcome) return { missing: 'this part never ran (an earlier step failed or timed out)' }
  return outcome.threw ? { threw: outcome.threw } : { value: outcome.value }
}

/**
 * Validate a verifier module's declarations, so a mistake in a new exercise
 * fails loudly in the tests rather than silently passing everyone.
 * @param {string} id
 * @param {any} verifier
 */
export function validateVerifier (id, verifier) {
  const problems = []
  if (!Array.isArray(verifier.functions) || verifier.functions.length === 0) problems.push('export const functions = [...] (the names the module must export) is missing')
  if (typeof verifier.scenario !== 'function') problems.push('export function scenario (random) is missing')
  if (typeof verifier.exec !== 'function') problems.push('export async function exec (context) is missing')
  if (!Array.isArray(verifier.checks) || verifier.checks.length === 0) problems.push('export const checks = [...] is missing')
  const seen = new Set()
  for (const check of verifier.checks || []) {
    if (!/^[a-z][a-z0-9-]*$/.test(check.id || '')) problems.push(`check id ${JSON.stringify(check.id)} must be kebab-case`)
    if (seen.has(check.id)) problems.push(`check id ${check.id} is declared twice`)
    seen.add(check.id)
    if (!kinds.includes(check.kind)) problems.push(`check ${check.id}: kind must be one of ${kinds.join(', ')}`)
    if (typeof check.title !== 'string') problems.push(`check ${check.id}: title is missing`)
    if (typeof check.check !== 'function') problems.push(`check ${check.id}: check() is missing`)
  }
  if (problems.length) throw new Error(`Exercise ${id}: ${problems.join('; ')}`)
}

/**
 * Look inside an `attempt()` outcome: fn(value) if it returned, or what it
 * threw, so a thrown error shows up in the diff instead of crashing the check.
 * @param {{ value?: any, threw?: any } | undefined} result
 * @param {(value: any) => any} fn
 */
export function project (result, fn) {
  if (!result) return { missing: 'this part never ran' }
  if (result.threw) return { threw: result.threw }
  return fn(result.value)
}
