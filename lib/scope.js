import { Transaction } from './transaction.js'
import { invalid } from './errors.js'
import { currentScope } from '#context'

/**
 * Runs a model operation: on its own (one critical section, one batch), or
 * as part of a db.write() scope. Within a scope, operations run one after the
 * other and each is all-or-nothing, so a failed operation that the callback
 * catches leaves nothing of itself in the batch.
 *
 * @template T
 * @param {import('./writer.js').Writer} writer
 * @param {Transaction | null} scope
 * @param {(tx: Transaction) => Promise<T> | T} fn
 * @returns {Promise<T>}
 */
export function runWrite (writer, scope, fn) {
  if (scope === null) {
    const enclosing = currentScope()
    if (enclosing && enclosing.writer === writer && enclosing.open) {
      return Promise.reject(invalid('Inside a db.write() callback, call models through their in(w) form, e.g. users.in(w).insert(...): a direct call would wait for the callback to finish'))
    }
    return writer.run(fn)
  }
  scope.assertOpen()
  return scope.atomic(fn)
}

/**
 * @param {import('./writer.js').Writer} writer
 * @param {unknown} w
 * @returns {Transaction}
 */
export function assertScope (writer, w) {
  if (!(w instanceof Transaction) || w.writer !== writer) {
    throw invalid('in(w) takes the write scope that db.write() passes to its callback, for the same database')
  }
  w.assertOpen()
  return w
}
