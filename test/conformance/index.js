import collection from './collection.js'
import indexes from './indexes.js'
import query from './query.js'
import relation from './relation.js'
import children, { purgeAndWatch } from './children.js'
import counter from './counter.js'
import write from './write.js'
import check from './check.js'
import lifecycle from './lifecycle.js'
import sublevel from './sublevel.js'
import watch from './watch.js'
import versions from './versions.js'
import transactions from './transactions.js'
import queries, { options } from './queries.js'
import schema from './schema.js'

/**
 * The model conformance suite. It imports nothing environment-specific: the
 * runner passes tape's `test` and a `common` object whose `open()` resolves
 * to a fresh, empty levelkit database on the backend under test.
 *
 * @param {typeof import('tape')} test
 * @param {{ backend: string, open: () => Promise<import('../../index.js').Database>, watchers?: number }} common
 */
export function conformance (test, common) {
  for (const suite of [collection, indexes, query, relation, children, purgeAndWatch, counter, write, check, lifecycle, sublevel, queries, options, watch, versions, transactions, schema]) {
    suite(test, common)
  }
}

/**
 * Assert that `promise` rejects with `code`.
 * @param {any} t @param {Promise<unknown>} promise @param {string} code @param {string} [message]
 */
export async function rejects (t, promise, code, message) {
  try {
    await promise
    t.fail(`${message || 'should reject'}: resolved instead of rejecting with ${code}`)
  } catch (err) {
    t.is(/** @type {any} */ (err).code, code, message || `rejects with ${code}`)
    return err
  }
}

/**
 * What `promise` settles to, or 'hung' if it has not settled after `ms`: to
 * assert that something answers rather than waits forever.
 * @template T
 * @param {Promise<T>} promise @param {number} ms
 * @returns {Promise<T | 'hung'>}
 */
export async function settlesWithin (promise, ms) {
  /** @type {any} */
  let timer
  const hung = new Promise(resolve => { timer = setTimeout(() => resolve('hung'), ms) })
  try {
    return await Promise.race([promise, /** @type {Promise<'hung'>} */ (hung)])
  } finally {
    clearTimeout(timer)
  }
}

/** Declare the reference schema used by several suites. @param {any} db */
export function usersSchema (db) {
  return db.collection('users', {
    indexes: {
      username: { unique: true, key: u => u.username },
      byAge: { key: u => u.age === undefined ? undefined : u.city === undefined ? [u.age] : [u.age, u.city] },
      tags: { key: u => u.tags, multi: true }
    },
    validate (u) {
      if (typeof u.username !== 'string' || u.username.length === 0) throw new Error('username must be a non-empty string')
    }
  })
}

/** The namespace of a root key: `!name!...`. @param {string | Uint8Array} key */
export function namespaceOf (key) {
  const text = typeof key === 'string' ? key : String.fromCharCode(...key)
  return text.slice(1, text.indexOf('!', 1))
}

/**
 * Listen to the batches `db` writes, with the models' ops only: where other
 * tabs or processes write the database too (IndexedDB, postgres with
 * shared: true), the first batch of each lock holding also writes levelkit's generation.
 * @param {any} db @param {(ops: any[]) => void} listener
 */
export function onModelWrite (db, listener) {
  db.level.on('write', (/** @type {any[]} */ ops) => listener(modelOps(ops)))
}

/** A batch's ops without levelkit's generation. @param {any[]} ops */
export function modelOps (ops) {
  return ops.filter(op => namespaceOf(op.key) !== ':levelkit.writes')
}
