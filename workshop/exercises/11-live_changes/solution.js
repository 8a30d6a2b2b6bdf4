// Reference solution: listen where every write shows up — the root's 'write'
// event — and keep the ops whose key starts with the sublevel's prefix.
// A sublevel's own 'write' event misses root batches that use the
// `sublevel` option; the root sees them all, with prefixed, encoded keys.
const decoder = new TextDecoder()
const text = (data) => typeof data === 'string' ? data : decoder.decode(data)

export function watch (db, sublevelName, onChange) {
  const prefix = db.sublevel(sublevelName).prefix // '!todos!'
  const listener = (ops) => {
    for (const op of ops) {
      const key = text(op.key)
      if (!key.startsWith(prefix)) continue // another sublevel, or a root key
      const change = { type: op.type, key: key.slice(prefix.length) }
      if (op.type === 'put') change.value = JSON.parse(text(op.value))
      onChange(change)
    }
  }
  db.on('write', listener)
  // Remove exactly this listener: off() needs the same function.
  return () => db.off('write', listener)
}
