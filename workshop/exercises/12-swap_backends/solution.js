// Reference solution: only the abstract-level API of the db it is given, so
// it runs unchanged on memory-level, classic-level and browser-level. The one
// optional capability it uses (explicit snapshots) is feature-detected.
import { tupleEncoding } from 'levelkit'

export function createTodoStore (db) {
  // Tuple keys: numeric ids in numeric order on every backend.
  const todos = db.sublevel('todos', { keyEncoding: tupleEncoding, valueEncoding: 'json' })
  const meta = db.sublevel('meta', { valueEncoding: 'json' })

  // Read-then-write steps must not interleave (see the counters exercise).
  let queue = Promise.resolve()
  const serialize = (fn) => {
    const result = queue.then(fn)
    queue = result.catch(() => {})
    return result
  }

  return {
    add (text) {
      return serialize(async () => {
        const id = ((await meta.get('lastId')) || 0) + 1
        await db.batch([
          { type: 'put', sublevel: meta, key: 'lastId', value: id },
          { type: 'put', sublevel: todos, key: [id], value: { id, text, done: false } }
        ])
        return id
      })
    },

    complete (id) {
      return serialize(async () => {
        const todo = await todos.get([id])
        if (!todo || todo.done) return false
        await todos.put([id], { ...todo, done: true })
        return true
      })
    },

    async list ({ done } = {}) {
      const all = await todos.values().all()
      return done === undefined ? all : all.filter(todo => todo.done === done)
    },

    async stats () {
      // Where the backend has explicit snapshots (memory-level, classic-level),
      // read from one; IndexedDB (browser-level) has none: read directly.
      const snapshot = db.supports.explicitSnapshots ? db.snapshot() : null
      try {
        const all = await todos.values(snapshot ? { snapshot } : {}).all()
        const done = all.filter(todo => todo.done).length
        return { total: all.length, done, open: all.length - done }
      } finally {
        if (snapshot) await snapshot.close()
      }
    }
  }
}
