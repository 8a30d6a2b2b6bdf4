import { invalid } from './errors.js'
import { describe, unreadable } from './common.js'

// Bounds over the keys a query ranges over (lib/bounds.js), and how much of
// the range it reads, in which order, from where.
export const RANGE = ['gt', 'gte', 'lt', 'lte', 'eq', 'prefix']
const READ = ['limit', 'reverse', 'cursor']

/**
 * The options each call of the public API takes, by the name its errors
 * give it: one table, for the code that checks them and the docs that list
 * them. An option not in its call's row is refused with LEVELKIT_INVALID
 * (a misspelt `lmit` would otherwise read everything), except where noted.
 */
export const OPTIONS = Object.freeze({
  'collection.query()': Object.freeze(['index', ...RANGE, ...READ, 'lock', 'wait']),
  'collection.count()': Object.freeze(['index', ...RANGE, ...READ, 'wait']),
  'collection.put()': Object.freeze(['ifVersion']),
  'collection.update()': Object.freeze(['ifVersion']),
  'collection.del()': Object.freeze(['ifVersion']),
  'collection.insertMany()': Object.freeze(['batchSize']),
  'collection.putMany()': Object.freeze(['batchSize']),
  'children.appendMany()': Object.freeze(['batchSize']),
  'relation.addMany()': Object.freeze(['batchSize']),
  'relation.to()': Object.freeze([...RANGE, ...READ]),
  'relation.from()': Object.freeze([...RANGE, ...READ]),
  'children.range()': Object.freeze([...RANGE, ...READ]),
  'children.watch()': Object.freeze(['after', 'signal']),
  'counter.query()': Object.freeze([...RANGE, ...READ]),
  'db.check()': Object.freeze(['repair']),
  'db.migrate()': Object.freeze(['onProgress']),
  'modify()': Object.freeze(['batchSize']),
  'db.write()': Object.freeze(['sync', 'rerunnable']),
  'db.transaction()': Object.freeze(['maxRetries', 'timeout', 'lockTimeout', 'signal', 'sync', 'maxOps', 'maxBytes', 'readOnly']),
  'collection.get()': Object.freeze(['lock']),
  'collection.getBy()': Object.freeze(['lock', 'wait']),
  // open() passes any other option to the backend it opens (classic-level's
  // cacheSize, ...); with `db`, there is no backend to pass them to.
  'open()': Object.freeze(['backend', 'location', 'db', 'syncReads', 'readCache', 'readCacheBytes', 'durability']),
  'db.collection()': Object.freeze(['id', 'indexes', 'validate', 'versioned']),
  'db.relation()': Object.freeze(['from', 'to', 'onDelete', 'lists']),
  'db.children()': Object.freeze(['parent', 'onDelete', 'blockSize'])
})

/** @typedef {keyof typeof OPTIONS} Call */

/**
 * The options object passed to `call`, read once (see optionsObject()), or
 * {} for none; throws LEVELKIT_INVALID for anything but a plain object
 * (null, an array, a string...) or an option the call does not take, naming
 * it.
 * @param {unknown} options
 * @param {Call} call
 * @param {string} [what] names the call in messages, e.g. a model's declaration
 * @returns {any}
 */
export function optionsOf (options, call, what = call) {
  const object = optionsObject(options, what)
  const allowed = OPTIONS[call]
  const unknown = Object.keys(object).filter(name => !allowed.includes(name))
  if (unknown.length > 0) {
    throw invalid(`${what} has unknown option(s): ${unknown.map(describe).join(', ')} (it takes ${allowed.join(', ')})`, { options: unknown })
  }
  return object
}

/**
 * An options object whose every option is the caller's to judge (passed
 * through): a plain object, or {} for none. What is returned is a copy of
 * its own enumerable properties, each read once, when the call is made:
 * nothing reads the caller's object again, so an option cannot change
 * between being checked and being used, and a getter or a Proxy trap that
 * throws is LEVELKIT_INVALID.
 * @param {unknown} options @param {string} what
 * @returns {any}
 */
export function optionsObject (options, what) {
  if (options === undefined) return {}
  // Read inline, not through readInput(): called on every write, and the
  // sentence naming the input is only needed if a read throws.
  if (options !== null && typeof options === 'object') {
    try {
      if (!Array.isArray(options)) return { ...options }
    } catch (err) {
      throw unreadable(`The options of ${what}`, err)
    }
  }
  throw invalid(`${what} takes an options object, got ${describe(options)}`)
}
