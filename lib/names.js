import { invalid } from './errors.js'
import { describe } from './common.js'

// Sublevel names may only use bytes 0x23..0x7E. Model names are narrower still:
// '.' is reserved so that a model's own namespaces ('users.idx.email',
// 'members.rev') can never collide with another model's name.
const MODEL_NAME = /^[A-Za-z0-9_][A-Za-z0-9_:-]{0,63}$/

/**
 * @param {unknown} name
 * @param {string} kind
 * @returns {string}
 */
export function assertName (name, kind) {
  if (typeof name !== 'string' || !MODEL_NAME.test(name)) {
    throw invalid(`${kind} name must be 1-64 characters of A-Z a-z 0-9 _ : - (not starting with : or -), got ${describe(name)}`, { name })
  }
  return name
}

/**
 * The on-disk layout: every namespace is a flat sublevel of the root, so no
 * namespace's range contains another's.
 */
export const layout = Object.freeze({
  records: (/** @type {string} */ name) => name,
  sequence: (/** @type {string} */ name) => `${name}.seq`,
  versions: (/** @type {string} */ name) => `${name}.versions`,
  blocks: (/** @type {string} */ name) => `${name}.blocks`,
  index: (/** @type {string} */ name, /** @type {string} */ index) => `${name}.idx.${index}`,
  forward: (/** @type {string} */ name) => `${name}.fwd`,
  reverse: (/** @type {string} */ name) => `${name}.rev`,
  list: (/** @type {string} */ name, /** @type {'from' | 'to'} */ side) => `${name}.list.${side}`,
  counter: (/** @type {string} */ name) => name,
  purge: (/** @type {string} */ name) => `${name}.purge`,
  // What a store built of several models knows about the database as a whole
  // (ChatStore's ownership marker): named like a derived namespace, so no
  // model's name is ever the same.
  meta: (/** @type {string} */ name) => `${name}.meta`,
  // levelkit's own record of what each database was declared with (its
  // stored schema, lib/schema.js): a meta namespace under a name no model can
  // take (model names never start with ':'), so no store's marker either.
  schema: () => ':levelkit.meta',
  // The generation of a database that other tabs or processes write too
  // (lib/writer.js), written with every batch.
  writes: () => ':levelkit.writes'
})
