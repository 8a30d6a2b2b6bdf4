// A relation kept by IndexedDB's index (lists: ['from', 'to'] over sequence
// ids, on a database levelkit opened) keeps its forward lists either in the
// lists store's entries only (stored layout native: ['from', 'to'], the
// default for a new relation) or in browser-level's store too (native:
// ['from']). Which one, and the moves between them: the entries hold every
// list in both layouts (a list written in the second one is written to its
// entry too), so a move only adds or deletes the copies in browser-level's
// store, in batches, each with its progress in the stored layout record
// (lib/schema.js): a tab closed mid-move leaves a marker the next open
// resumes from, whatever that tab's choice (it then moves on from there).

/** Deletes the lists in browser-level's store (into native: ['from', 'to']). */
export const UNLIST = 'unlist'
/** Writes the lists into browser-level's store from the entries (into native: ['from']). */
export const RELIST = 'relist'

/**
 * @typedef {import('./write-scope.js').WriteScope} WriteScope
 * @typedef {import('./namespace.js').Namespace} Namespace
 * @typedef {import('./idb-direct.js').IdbDirect} IdbDirect
 * @typedef {'entries' | 'lists' | undefined} Choice open()'s relationIndexes ('entries', 'lists', or neither: the default)
 */

/**
 * Where a relation kept by IndexedDB's index keeps its forward lists, from
 * its stored layout (`stored`, undefined for a new relation) and the tab's
 * choice; `move` is the move that takes them there, if any. A new relation
 * takes the entries unless told 'lists', or browser-level's store holds
 * lists of it already (a database levelkit made before it kept a layout).
 * An existing one keeps its stored layout unless the choice names the
 * other; one not in the index kind yet, or whose move into it is not over
 * (its forward lists not all in the entries), goes there with its lists in
 * browser-level's store first, whatever the choice.
 * @param {IdbDirect} idb @param {Namespace} forward the forward lists' namespace (mirrored)
 * @param {Record<string, unknown> | undefined} stored @param {Choice} choice
 * @returns {Promise<{ entries: boolean, move: string | null }>}
 */
export async function entriesLayout (idb, forward, stored, choice) {
  if (stored === undefined) {
    if (choice === 'lists') return { entries: false, move: null }
    return { entries: (await storedLists(idb, forward, 1)).length === 0, move: null }
  }
  const native = Array.isArray(stored.native) ? stored.native : []
  const storedEntries = native.includes('to')
  if (choice === undefined || (choice === 'entries') === storedEntries) return { entries: storedEntries, move: null }
  // Only a layout whose entries hold every list moves (a move between the
  // two, resumed or turned back, included). Reverse lists, or a move into
  // the index kind not over, go into the index with their lists in
  // browser-level's store first (the entries are not full until that move
  // is over); an open with 'entries' after it moves them on.
  const phase = stored.state === 'moving' ? stored.phase ?? null : null
  if (!native.includes('from') || (stored.state === 'moving' && phase !== UNLIST && phase !== RELIST)) return { entries: false, move: null }
  return { entries: choice === 'entries', move: choice === 'entries' ? UNLIST : RELIST }
}

/**
 * The keys (unprefixed) of the lists of `forward` in browser-level's store,
 * at most `limit`, in key order, read in the write path's transaction.
 * @param {IdbDirect} idb @param {Namespace} forward @param {number} limit
 * @returns {Promise<Uint8Array[]>}
 */
export async function storedLists (idb, forward, limit) {
  const found = await idb.entries(idb.storedSide(forward), {}, { values: false, limit }, true)
  return found.map(([key]) => key)
}

/**
 * One batch of a move between the two layouts (`progress.phase` says
 * which), of about `size` lists: UNLIST deletes that many lists from
 * browser-level's store (what is left is where it is: no marker), RELIST
 * writes the next lists after `progress.after` there, read from their
 * entries (the write path writes each entry again with it, as it was).
 * Either is idempotent, so a batch that did not land is made again.
 * @param {IdbDirect} idb @param {Namespace} forward @param {WriteScope} scope
 * @param {import('./layout-moves.js').LayoutProgress} progress @param {number} size
 * @returns {Promise<boolean>} true after the last batch
 */
export async function moveEntriesBatch (idb, forward, scope, progress, size) {
  if (progress.phase === UNLIST) {
    const side = idb.storedSide(forward)
    const keys = await storedLists(idb, forward, size)
    for (const key of keys) scope.del(side, key)
    progress.done += keys.length
    return keys.length < size
  }
  const bounds = progress.after === null ? {} : { gt: progress.after }
  const page = await idb.listEntries(forward, bounds, { limit: size }, true)
  for (const [key, value] of page) scope.put(forward, key, value)
  progress.done += page.length
  if (page.length < size) return true
  progress.after = page[page.length - 1][0]
  return false
}
