import { encode } from './tuple.js'
import { bytesToHex, hexToBytes } from './bytes.js'
import { invalid, levelkitError, codes } from './errors.js'
import { parseJson, parseRecord, decodeKey } from './stored.js'
import { encodeJson } from './json-value.js'
import { describe, readInput, noop } from './common.js'
import { optionsOf } from './options.js'
import { modelOf } from './model-handle.js'
import { Collection } from './collection.js'
import { schemaLockFor } from './schema-lock.js'
import { paced } from './schema.js'

/**
 * @typedef {import('./collection.js').CollectionModel} CollectionModel
 * @typedef {import('./write-scope.js').WriteScope} WriteScope
 * @typedef {{ version: number, up: (m: MigrationContext) => unknown }} Migration
 * @typedef {{ kind: 'modify', collection: string, after: string | null, done: number, changed: number, removed: number, finished: boolean }} ModifyStep
 * @typedef {{ kind: 'write', finished: boolean }} WriteStep
 * @typedef {ModifyStep | WriteStep} Step
 * @typedef {{ version: number, step: number, collection: string, done: number }} Progress
 * @typedef {{ from: number, to: number, ran: number[] }} MigrateResult
 */

// Records a batch of modify() rewrites: each batch is one critical section
// (as an index build's, lib/schema.js), and writes queued meanwhile go first.
const DEFAULT_BATCH_SIZE = 256
const MAX_BATCH_SIZE = 100000

// Keys in the stored schema's namespace (:levelkit.meta): the database's
// schema version, and the progress of the migration under way.
const VERSION_KEY = encode(['version'])
const PROGRESS_KEY = encode(['migration'])

/** What a modify() function returns to delete the record. */
export const REMOVE = Symbol.for('levelkit.migration.remove')

/**
 * A database's versioned migrations: each runs once, in version order, and
 * a migration interrupted (a crash, an error) resumes where it stopped.
 * Each step of a migration (a modify() over a collection, a write()) has
 * its progress in the stored schema, written in the batch of what it did:
 * a completed step is not run again, a modify() resumes after the last
 * record it rewrote. The version is stored once the last step is done.
 */
export class Migrations {
  /** @type {import('./database.js').Database} */
  #db
  /** @type {Promise<unknown>} the migrate() call before: the next waits for it */
  #last = Promise.resolve()

  /** @param {import('./database.js').Database} db */
  constructor (db) {
    this.#db = db
  }

  /**
   * Run the migrations of `list` the database has not run yet.
   * @param {unknown} list @param {unknown} options
   * @returns {Promise<MigrateResult>}
   */
  migrate (list, options) {
    const migrations = migrationsOf(list)
    const settings = settingsOf(options)
    // One at a time in this process (and, on IndexedDB, across tabs: the
    // schema lock): the second finds what the first ran stored.
    const run = this.#last.then(() => schemaLockFor(this.#db.level).hold(() => this.#run(migrations, settings)))
    this.#last = run.catch(noop)
    return run
  }

  /** The database's schema version: that of the last migration it ran (0 before any). */
  version () {
    return this.#read(storedVersion)
  }

  /**
   * Read the stored schema as every write decided so far left it: in a
   * critical section (which writes nothing), since outside one, under a
   * steady stream of writes, there is always a batch being written.
   * @template T
   * @param {(namespace: import('./namespace.js').Namespace) => Promise<T>} read
   * @returns {Promise<T>}
   */
  #read (read) {
    const writer = this.#db.writer
    return writer.run(async () => {
      await writer.drain()
      return read(this.#namespace())
    })
  }

  #namespace () {
    return this.#db.schema.namespace
  }

  /**
   * @param {Migration[]} migrations
   * @param {{ onProgress: ((progress: Progress) => void) | null }} settings
   * @returns {Promise<MigrateResult>}
   */
  async #run (migrations, settings) {
    const db = this.#db
    if (db.writer.closed) throw levelkitError(codes.NOT_OPEN, 'The database is closed')
    // Writes see each index's state (lib/schema.js) once declarations are compared.
    await db.schema.compared()
    const namespace = this.#namespace()
    const from = await this.#read(storedVersion)
    const latest = migrations.length === 0 ? 0 : migrations[migrations.length - 1].version
    if (from > latest) {
      throw invalid(`The database is at schema version ${from}, past the last migration given (${latest}): a newer version of the program migrated it`, { version: from, latest })
    }
    const ran = []
    let version = from
    for (const migration of migrations) {
      if (migration.version <= from) continue
      const progress = await this.#read(storedProgress)
      // Progress of another version is of a migration since taken out of
      // the list (or renumbered): this one starts from its first step.
      const steps = progress !== null && progress.version === migration.version ? progress.steps : []
      const m = new MigrationContext(db, migration.version, steps, settings.onProgress)
      try {
        await migration.up(m)
      } catch (err) {
        // Rejects once nothing of it runs any more (a step it did not await).
        m.close()
        await m.settled().catch(noop)
        throw err
      }
      m.close()
      await m.settled()
      await db.writer.run(scope => {
        scope.put(namespace, VERSION_KEY, JSON.stringify({ version: migration.version }))
        scope.del(namespace, PROGRESS_KEY)
      })
      version = migration.version
      ran.push(version)
    }
    return { from, to: version, ran }
  }
}

/**
 * What a migration's up(m) gets: `m.collection(c).modify(fn)` to rewrite
 * every record of a collection, `m.write(fn)` for other writes that must
 * happen once, `m.db` for anything else (reads; writes there are not kept
 * track of, and run again if the migration is resumed).
 */
export class MigrationContext {
  #db
  /** @type {Step[]} the steps as far as they are done, in the order up() starts them */
  #steps
  #next = 0
  #open = true
  #onProgress
  /** @type {Set<Promise<unknown>>} steps running */
  #running = new Set()

  /**
   * @param {import('./database.js').Database} db @param {number} version
   * @param {Step[]} steps @param {((progress: Progress) => void) | null} onProgress
   */
  constructor (db, version, steps, onProgress) {
    this.#db = db
    /** The version of the migration running. */
    this.version = version
    this.#steps = steps
    this.#onProgress = onProgress
    /** Returned by a modify() function: delete the record. */
    this.remove = REMOVE
  }

  /** The database (its declared models, reads, writes). */
  get db () {
    return this.#db
  }

  /**
   * The steps of a collection.
   * @param {unknown} collection a collection declared on this database
   */
  collection (collection) {
    const model = collection instanceof Collection ? modelOf(collection) : undefined
    if (model === undefined || model.db !== this.#db) {
      throw invalid(`m.collection() takes a collection declared on the migrated database, got ${describe(collection)}`)
    }
    const m = this
    return Object.freeze({
      /**
       * @param {(record: any) => any} fn
       * @param {{ batchSize?: number }} [options]
       */
      modify (fn, options) {
        return m.#modify(/** @type {CollectionModel} */ (model), fn, options)
      }
    })
  }

  /**
   * Run `fn(w)` as one db.write(), atomic with the mark that this step is
   * done: resumed, the migration does not run it again (it resolves with
   * undefined then).
   * @template T
   * @param {(w: WriteScope) => Promise<T> | T} fn
   * @returns {Promise<T | undefined>}
   */
  write (fn) {
    if (typeof fn !== 'function') return Promise.reject(invalid('m.write() takes a function (w) => { ... }'))
    return this.#step({ kind: 'write', finished: false }, 'm.write()', async (index, step) => {
      if (step.finished) return undefined
      const db = this.#db
      return db.write(async w => {
        const result = await fn(w)
        w.put(db.schema.namespace, PROGRESS_KEY, this.#progressJson(index, { kind: 'write', finished: true }))
        // The mark is decided with the batch; it is written with it.
        this.#steps[index] = { kind: 'write', finished: true }
        return result
      })
    })
  }

  /**
   * Take the next step of up(): the step stored at its place (resumed), or
   * `fresh`. A step of another kind there means up() does not start the
   * same steps in the same order as when it was interrupted.
   * @template T
   * @param {Step} fresh @param {string} what
   * @param {(index: number, step: Step) => Promise<T>} run
   * @returns {Promise<T>}
   */
  #step (fresh, what, run) {
    if (!this.#open) return Promise.reject(invalid(`${what} was called after migration ${this.version}'s up() settled: await every step inside up()`))
    const index = this.#next++
    const stored = this.#steps[index]
    if (stored !== undefined && (stored.kind !== fresh.kind || (stored.kind === 'modify' && stored.collection !== /** @type {ModifyStep} */ (fresh).collection))) {
      return Promise.reject(invalid(`Migration ${this.version} was interrupted and resumes, but its step ${index + 1} is ${describeStep(fresh)} where it was ${describeStep(stored)}: up() must take the same steps in the same order every time it runs`, { version: this.version, step: index + 1 }))
    }
    if (stored === undefined) this.#steps[index] = fresh
    const running = run(index, this.#steps[index])
    this.#running.add(running)
    running.catch(noop).finally(() => { this.#running.delete(running) })
    return running
  }

  /**
   * @param {CollectionModel} model @param {unknown} fn @param {unknown} options
   * @returns {Promise<{ done: number, changed: number, removed: number }>}
   */
  #modify (model, fn, options) {
    if (typeof fn !== 'function') return Promise.reject(invalid('modify() takes a function record => new record, undefined (keep it) or m.remove'))
    let batchSize
    try {
      batchSize = batchSizeOf(options)
    } catch (err) {
      return Promise.reject(err)
    }
    /** @type {ModifyStep} */
    const fresh = { kind: 'modify', collection: model.name, after: null, done: 0, changed: 0, removed: 0, finished: false }
    return this.#step(fresh, 'modify()', async (index, step) => {
      const writer = this.#db.writer
      let current = /** @type {ModifyStep} */ (step)
      while (!current.finished) {
        if (writer.closed) throw levelkitError(codes.NOT_OPEN, `The database was closed during migration ${this.version} (the next migrate() resumes it)`)
        await paced(writer, scope => this.#modifyBatch(scope, model, /** @type {any} */ (fn), batchSize, index))
        current = /** @type {ModifyStep} */ (this.#steps[index])
        this.#onProgress?.({ version: this.version, step: index + 1, collection: model.name, done: current.done })
      }
      return { done: current.done, changed: current.changed, removed: current.removed }
    })
  }

  /**
   * Rewrite the next batch of records after the step's marker, with their
   * index entries, and advance the marker, in one critical section: what
   * it reads is what every write before it decided, and a write after it
   * keeps the entries of what it writes. A record is rewritten exactly
   * once: its batch and the marker past it are written together.
   * @param {WriteScope} scope @param {CollectionModel} model
   * @param {(record: any) => any} fn @param {number} batchSize @param {number} index
   */
  async #modifyBatch (scope, model, fn, batchSize, index) {
    await model.writer.drain()
    const step = /** @type {ModifyStep} */ (this.#steps[index])
    const records = model.records
    /** @type {any} */
    const range = { limit: batchSize }
    if (step.after !== null) range.gt = hexToBytes(step.after)
    const page = await records.sublevel.iterator(range).all()
    let changed = 0
    let removed = 0
    for (const [key, json] of page) {
      const id = decodeKey(key, records)
      // Its own copy: the function may change it and return it.
      const next = fn(parseRecord(json, records, key))
      if (next === undefined) continue
      if (next === REMOVE) {
        await model.del(scope, id)
        removed++
        continue
      }
      const what = `The record returned by the modify() function for "${model.name}"`
      if (next === null || typeof next !== 'object' || readInput(what, () => Array.isArray(next) || next instanceof Promise)) {
        throw invalid(`${what} must be a plain object (or undefined to keep the record, or m.remove), got ${describe(next)}: the function must return synchronously`, { collection: model.name, id })
      }
      const text = encodeJson(next, what)
      if (text === json) continue
      await model.put(scope, id, text)
      changed++
    }
    /** @type {ModifyStep} */
    const advanced = {
      ...step,
      after: page.length > 0 ? bytesToHex(page[page.length - 1][0]) : step.after,
      done: step.done + page.length,
      changed: step.changed + changed,
      removed: step.removed + removed,
      finished: page.length < batchSize
    }
    scope.put(this.#db.schema.namespace, PROGRESS_KEY, this.#progressJson(index, advanced))
    // Advanced as the batch is decided (nothing awaited after this): a batch
    // another step decides next stores this marker with its own.
    this.#steps[index] = advanced
  }

  /** The progress of this migration with step `index` as `step`. @param {number} index @param {Step} step */
  #progressJson (index, step) {
    const steps = this.#steps.slice()
    steps[index] = step
    return JSON.stringify({ version: this.version, steps })
  }

  /** Resolves once every step up() started has settled (one it forgot to await too). */
  async settled () {
    while (this.#running.size > 0) await Promise.allSettled(this.#running)
    // A step that failed after up() returned still fails the migration.
    for (let i = 0; i < this.#next; i++) {
      if (!this.#steps[i].finished) throw invalid(`Migration ${this.version}'s up() returned before its step ${i + 1} (${describeStep(this.#steps[i])}) was done: await it`, { version: this.version, step: i + 1 })
    }
  }

  close () {
    this.#open = false
  }
}

/**
 * The migration list, checked before anything is written.
 * @param {unknown} list @returns {Migration[]}
 */
function migrationsOf (list) {
  if (!readInput('The migrations of db.migrate()', () => Array.isArray(list))) {
    throw invalid(`db.migrate() takes an array of migrations [{ version, up }], got ${describe(list)}`)
  }
  /** @type {Migration[]} */
  const migrations = []
  let last = 0
  for (const [i, given] of /** @type {unknown[]} */ (list).entries()) {
    if (given === null || typeof given !== 'object') throw invalid(`Migration ${i} of db.migrate() must be an object { version, up }, got ${describe(given)}`)
    const { version, up } = readInput(`Migration ${i} of db.migrate()`, () => ({ version: /** @type {any} */ (given).version, up: /** @type {any} */ (given).up }))
    if (!Number.isSafeInteger(version) || version < 1) throw invalid(`The version of migration ${i} of db.migrate() must be an integer of at least 1, got ${describe(version)}`, { index: i })
    if (version <= last) throw invalid(`The versions of db.migrate()'s migrations must be strictly increasing: migration ${i} has version ${version} after ${last}`, { index: i, version })
    if (typeof up !== 'function') throw invalid(`Migration ${version} of db.migrate() must have a function up(m), got ${describe(up)}`, { version })
    migrations.push({ version, up })
    last = version
  }
  return migrations
}

/** @param {unknown} options */
function settingsOf (options) {
  const { onProgress } = optionsOf(options, 'db.migrate()')
  if (onProgress !== undefined && typeof onProgress !== 'function') throw invalid(`The onProgress option of db.migrate() must be a function, got ${describe(onProgress)}`)
  return { onProgress: onProgress ?? null }
}

/** @param {unknown} options */
function batchSizeOf (options) {
  const { batchSize = DEFAULT_BATCH_SIZE } = optionsOf(options, 'modify()')
  if (!Number.isSafeInteger(batchSize) || batchSize < 1 || batchSize > MAX_BATCH_SIZE) {
    throw invalid(`The batchSize option of modify() must be an integer from 1 to ${MAX_BATCH_SIZE}, got ${describe(batchSize)}`)
  }
  return batchSize
}

/** @param {import('./namespace.js').Namespace} namespace */
async function storedVersion (namespace) {
  const stored = await namespace.read(VERSION_KEY, false)
  if (stored === undefined) return 0
  const parsed = parseJson(stored, namespace, VERSION_KEY)
  if (!Number.isSafeInteger(parsed?.version) || parsed.version < 0) throw damaged(namespace, parsed)
  return /** @type {number} */ (parsed.version)
}

/** @param {import('./namespace.js').Namespace} namespace @returns {Promise<{ version: number, steps: Step[] } | null>} */
async function storedProgress (namespace) {
  const stored = await namespace.read(PROGRESS_KEY, false)
  if (stored === undefined) return null
  const parsed = parseJson(stored, namespace, PROGRESS_KEY)
  if (!Number.isSafeInteger(parsed?.version) || !Array.isArray(parsed.steps) || !parsed.steps.every((/** @type {any} */ step) => step !== null && typeof step === 'object' && typeof step.kind === 'string')) {
    throw damaged(namespace, parsed)
  }
  return parsed
}

/** @param {import('./namespace.js').Namespace} namespace @param {unknown} value */
function damaged (namespace, value) {
  return levelkitError(codes.DECODE_ERROR, `"${namespace.name}" holds ${describe(value)} where levelkit keeps the schema version or a migration's progress: it was written behind levelkit's back, or is damaged`, { namespace: namespace.name })
}

/** @param {Step} step */
function describeStep (step) {
  return step.kind === 'modify' ? `modify() of "${step.collection}"` : 'm.write()'
}
