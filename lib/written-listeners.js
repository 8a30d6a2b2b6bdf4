// Listeners of the batches a writer writes that concern some namespaces
// only (a children set's purge marks, a layout record waiting to be
// stored, an index build's records): each of them used to look at every op
// of every batch, a call per op and listener, several calls per record of
// a bulk load that touches none of their namespaces. Here one listener per
// writer looks each batch's ops up once, by namespace, and calls only the
// listeners of the namespaces it wrote.

/**
 * @typedef {import('./namespace.js').Namespace} Namespace
 * @typedef {import('./write-scope.js').Op} Op
 * @typedef {(ops: Op[]) => void} Listener
 */

/** @type {WeakMap<import('./writer.js').Writer, Dispatcher>} */
const dispatchers = new WeakMap()

/**
 * Call `listener` with the ops of every batch `writer` writes (as
 * Writer#onWritten() does) that has an op in one of `namespaces`, the
 * batches it hears another tab or process wrote included; never for others.
 * @param {import('./writer.js').Writer} writer @param {Array<Namespace | null>} namespaces nulls left out
 * @param {Listener} listener
 * @returns {() => void} removes the listener
 */
export function onWrittenTo (writer, namespaces, listener) {
  let dispatcher = dispatchers.get(writer)
  if (dispatcher === undefined) dispatchers.set(writer, dispatcher = new Dispatcher(writer))
  return dispatcher.add(namespaces, listener)
}

class Dispatcher {
  /** @param {import('./writer.js').Writer} writer */
  constructor (writer) {
    this.writer = writer
    /** @type {Map<Namespace, Set<Listener>>} */
    this.byNamespace = new Map()
    /** @type {Set<Listener>} the listeners registered, each once */
    this.listeners = new Set()
    /** @type {(() => void) | null} removes this from the writer's listeners, while it has some */
    this.stop = null
  }

  /** @param {Array<Namespace | null>} namespaces @param {Listener} listener */
  add (namespaces, listener) {
    // Each registration its own (a function registered twice is called twice, and each stop() removes one).
    /** @type {Listener} */
    const own = ops => listener(ops)
    const used = namespaces.filter(namespace => namespace !== null)
    for (const namespace of /** @type {Namespace[]} */ (used)) {
      let set = this.byNamespace.get(namespace)
      if (set === undefined) this.byNamespace.set(namespace, set = new Set())
      set.add(own)
    }
    this.listeners.add(own)
    if (this.stop === null) this.stop = this.writer.onWritten(ops => this.notify(ops))
    return () => {
      if (!this.listeners.delete(own)) return
      for (const namespace of /** @type {Namespace[]} */ (used)) {
        const set = this.byNamespace.get(namespace)
        if (set === undefined) continue
        set.delete(own)
        if (set.size === 0) this.byNamespace.delete(namespace)
      }
      if (this.listeners.size === 0 && this.stop !== null) {
        this.stop()
        this.stop = null
      }
    }
  }

  /** @param {Op[]} ops */
  notify (ops) {
    const byNamespace = this.byNamespace
    /** @type {Set<Listener> | null} */
    let called = null
    // One pass over the batch: a lookup per op, no call.
    for (let i = 0; i < ops.length; i++) {
      const set = byNamespace.get(ops[i].namespace)
      if (set === undefined) continue
      if (called === null) called = new Set(set)
      else for (const listener of set) called.add(listener)
    }
    if (called === null) return
    for (const listener of called) {
      // One that an earlier listener removed is not called (as the writer's own set would skip it).
      if (!this.listeners.has(listener)) continue
      try {
        listener(ops)
      } catch {
        // A listener's failure must not fail the write it observes, nor keep the others from hearing of it.
      }
    }
  }
}
