import bytewise from 'bytewise'

/** FNV-1a of a string: derives a per-test seed from its name. @param {string} s */
export function hash (s) {
  let h = 2166136261
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619)
  return h >>> 0
}

/** The integers from `from` to `to`, inclusive. @param {number} from @param {number} to */
export function range (from, to) {
  const out = []
  for (let i = from; i <= to; i++) out.push(i)
  return out
}

export const numeric = (/** @type {number} */ a, /** @type {number} */ b) => a - b

/**
 * Settle every promise; describe each outcome as { ok, value } or
 * { ok: false, code, message }.
 * @param {Promise<unknown>[]} promises
 */
export async function outcomes (promises) {
  const settled = await Promise.allSettled(promises)
  return settled.map(s => s.status === 'fulfilled'
    ? { ok: true, value: s.value }
    : { ok: false, code: s.reason && s.reason.code, message: s.reason && s.reason.message })
}

/**
 * Every [decodedKey, rawValue] of a namespace, read through the root database
 * and decoded with the bytewise package: independent of levelkit's codec.
 * @param {any} db a levelkit database @param {string} name
 */
export async function rawEntries (db, name) {
  const sublevel = db.level.sublevel(name, { keyEncoding: 'view', valueEncoding: 'view' })
  const entries = await sublevel.iterator().all()
  return entries.map((/** @type {[Uint8Array, Uint8Array]} */ [key, value]) => [bytewise.decode(Buffer.from(key)), value])
}

/**
 * Every child of a children set as [[parentId, seq], raw value bytes], in key
 * order, from either layout: one key per child (`<name>`) or blocks
 * (`<name>.blocks`, each block's JSON pairs split here). Keys decoded with
 * bytewise, like rawEntries().
 * @param {any} db a levelkit database @param {string} name
 */
export async function rawChildren (db, name) {
  const children = await rawEntries(db, name)
  for (const [[parentId], value] of await rawEntries(db, `${name}.blocks`)) {
    for (const [seq, child] of JSON.parse(Buffer.from(value).toString('utf8'))) {
      children.push([[parentId, seq], Buffer.from(JSON.stringify(child))])
    }
  }
  return children.sort((a, b) => Buffer.compare(bytewise.encode(a[0]), bytewise.encode(b[0])))
}
