// The part of tape's API that the environment-free suites use (test/conformance/,
// test/chat/suite.js), for running them in a browser page. tape itself needs
// Node's stream, path and events modules there; this needs nothing. Results
// are plain objects that the Node side turns back into tape assertions
// (test/util/browser.js), so a failure in the browser fails `npm test`.

/**
 * @typedef {{ ok: boolean, name: string, operator: string, actual?: string, expected?: string }} Assertion
 * @typedef {{ name: string, assertions: Assertion[], error?: string, ms: number }} TestResult
 */

const TEST_TIMEOUT_MS = 60000

/** @type {Array<{ name: string, fn: (t: any) => any }>} */
const queue = []

/**
 * Declare a test, as tape's `test(name, fn)`.
 * @param {string} name @param {(t: any) => any} fn
 */
export function test (name, fn) {
  queue.push({ name, fn })
}

/**
 * Run the declared tests one at a time, in order, as tape does.
 * @param {(result: TestResult) => void} [onResult]
 * @returns {Promise<TestResult[]>}
 */
export async function run (onResult) {
  const results = []
  for (const { name, fn } of queue.splice(0)) {
    const t = new Assert(name)
    const start = performance.now()
    /** @type {TestResult} */
    const result = { name, assertions: t.assertions, ms: 0 }
    try {
      let timer
      const timeout = new Promise((resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${TEST_TIMEOUT_MS} ms`)), TEST_TIMEOUT_MS)
      })
      try {
        await Promise.race([fn(t), timeout])
      } finally {
        clearTimeout(timer)
      }
    } catch (err) {
      result.error = describeError(err)
    }
    result.ms = performance.now() - start
    results.push(result)
    onResult?.(result)
  }
  return results
}

class Assert {
  /** @param {string} name */
  constructor (name) {
    this.name = name
    /** @type {Assertion[]} */
    this.assertions = []
  }

  /** @param {boolean} ok @param {string} name @param {string} operator @param {unknown} [actual] @param {unknown} [expected] */
  #record (ok, name, operator, actual, expected) {
    /** @type {Assertion} */
    const assertion = { ok: !!ok, name, operator }
    if (!ok && arguments.length > 3) {
      assertion.actual = inspect(actual)
      assertion.expected = inspect(expected)
    }
    this.assertions.push(assertion)
  }

  /** @param {unknown} actual @param {unknown} expected @param {string} [msg] */
  is (actual, expected, msg) { this.#record(Object.is(actual, expected), msg || 'should be strictly equal', 'equal', actual, expected) }
  /** @param {unknown} actual @param {unknown} expected @param {string} [msg] */
  isNot (actual, expected, msg) { this.#record(!Object.is(actual, expected), msg || 'should not be strictly equal', 'notEqual', actual, expected) }
  /** @param {unknown} actual @param {unknown} expected @param {string} [msg] */
  same (actual, expected, msg) { this.#record(deepEqual(actual, expected), msg || 'should be deeply equivalent', 'deepEqual', actual, expected) }
  /** @param {unknown} value @param {string} [msg] */
  ok (value, msg) { this.#record(!!value, msg || 'should be truthy', 'ok', value, true) }
  /** @param {unknown} value @param {string} [msg] */
  notOk (value, msg) { this.#record(!value, msg || 'should be falsy', 'notOk', value, false) }
  /** @param {string} [msg] */
  pass (msg) { this.#record(true, msg || '(unnamed assert)', 'pass') }
  /** @param {string} [msg] */
  fail (msg) { this.#record(false, msg || 'fail', 'fail') }

  /** @param {unknown} actual @param {RegExp} regex @param {string} [msg] */
  match (actual, regex, msg) {
    this.#record(typeof actual === 'string' && regex.test(actual), msg || 'should match', 'match', actual, regex)
  }

  /** @param {() => unknown} fn @param {RegExp | Function | object | string} [expected] @param {string} [msg] */
  throws (fn, expected, msg) {
    if (typeof expected === 'string') [msg, expected] = [expected, undefined]
    try {
      fn()
    } catch (err) {
      this.#record(expected === undefined || errorMatches(err, expected), msg || 'should throw', 'throws', err, expected)
      return
    }
    this.#record(false, msg || 'should throw', 'throws', 'did not throw', expected)
  }
}

/** @param {any} err @param {RegExp | Function | object} expected */
function errorMatches (err, expected) {
  if (expected instanceof RegExp) return expected.test(String(err && err.message))
  if (typeof expected === 'function') return err instanceof expected
  return Object.entries(expected).every(([key, value]) => deepEqual(err?.[key], value))
}

/**
 * Strict structural equality, as tape's `same` (deep-equal with strict):
 * same types and prototypes, same own enumerable keys, primitives by Object.is.
 * @param {any} a @param {any} b
 * @returns {boolean}
 */
export function deepEqual (a, b) {
  if (Object.is(a, b)) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false
  if (a instanceof Date) return Object.is(a.getTime(), b.getTime())
  if (a instanceof RegExp) return String(a) === String(b)
  if (ArrayBuffer.isView(a)) {
    const x = /** @type {any} */ (a)
    const y = /** @type {any} */ (b)
    if (x.length !== y.length) return false
    for (let i = 0; i < x.length; i++) if (!Object.is(x[i], y[i])) return false
    return true
  }
  if (a instanceof Map || a instanceof Set) {
    if (a.size !== b.size) return false
    return deepEqual([...a], [...b])
  }
  const keysA = Object.keys(a)
  const keysB = Object.keys(b)
  if (keysA.length !== keysB.length) return false
  for (const key of keysA) {
    if (!Object.prototype.hasOwnProperty.call(b, key) || !deepEqual(a[key], b[key])) return false
  }
  return true
}

/** A readable rendering of a value, for failure reports. @param {unknown} value */
function inspect (value) {
  if (value instanceof Error) return describeError(value)
  if (value instanceof RegExp) return String(value)
  try {
    const text = JSON.stringify(value, (key, v) => {
      if (v === undefined) return '[undefined]'
      if (typeof v === 'bigint') return `${v}n`
      if (ArrayBuffer.isView(v)) return `${v.constructor.name}[${Array.from(/** @type {any} */ (v)).join(',')}]`
      return v
    })
    return text === undefined ? String(value) : text
  } catch {
    return String(value)
  }
}

/** @param {any} err */
function describeError (err) {
  if (!(err instanceof Error)) return String(err)
  const code = /** @type {any} */ (err).code
  return `${err.name}${code ? ` [${code}]` : ''}: ${err.message}\n${err.stack || ''}`
}
