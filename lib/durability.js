/**
 * How to ask the backend for a durable write beyond LevelDB's `sync`
 * option. browser-level 3 opens each batch's IndexedDB transaction with the
 * browser's default durability (Chromium's is 'relaxed': the commit is
 * reported before it is flushed) and takes no option for it; its `_batch()`
 * opens that transaction synchronously when the batch is made, so a durable
 * batch is made while the database's transaction() asks for 'strict'.
 * @param {any} level
 * @returns {(<T>(write: () => T) => T) | null} runs `write` with strict IndexedDB transactions, or null where there is nothing to do
 */
export function strictWrites (level) {
  if (level.type !== 'browser-level') return null
  return write => {
    const idb = level.db
    const transaction = idb.transaction
    idb.transaction = function (/** @type {any} */ stores, /** @type {any} */ mode, /** @type {any} */ options) {
      return transaction.call(this, stores, mode, mode === 'readwrite' ? { ...options, durability: 'strict' } : options)
    }
    try {
      return write()
    } finally {
      idb.transaction = transaction
    }
  }
}
