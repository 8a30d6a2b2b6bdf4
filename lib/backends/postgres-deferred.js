// The batch statement of a group whose sections took placeholder ids
// (deferred inserts, lib/deferred-ids.js): one statement bumps each
// sequence row (INSERT ... ON CONFLICT DO UPDATE ... RETURNING, so the row
// is locked from there to the COMMIT sent in the same query) and writes
// every op holding a placeholder with the real id in its place, computed
// from the value the bump returned. Each key or value holding placeholders
// (an "item") goes as segments, rows of array parameters: the bytes up to
// a placeholder and which id goes there, and the item is their
// concatenation (string_agg) with each id written
// - in a key or a list value as the tuple element (0x42 and a float64,
//   '\x42' || float8send(id));
// - in a JSON value or a sequence's value as its decimal text.
// The notification payloads naming keys that hold a placeholder go as
// parts too: text, then the base64 of an item, and so on.
// The statement's text depends only on the number of sequences, however
// many ops and placeholders the group holds: an expression per
// placeholder (overlay()) and a replace() per key in the notifications,
// nested, cost PostgreSQL's planner up to 230 ms for a group of 16
// createChat() calls of 20 members (session 19, bench/RESULTS.md).
// It answers with the first id each sequence gave (levelkit_bases), for the
// write path to patch its ops and answer its callers (lib/writer.js).
import pg from 'pg'
import { findPlaceholders, unknownPlaceholder } from '../deferred-ids.js'
import { levelkitError, codes } from '../errors.js'

/** The name of the statement's column that answers the bases. */
export const BASES = 'levelkit_bases'

/**
 * @typedef {{ type: 'put' | 'del', key: Buffer, value?: Buffer, deferredSequence?: boolean }} BatchOp
 * @typedef {{ sequences: number[][], bases: number[] | null }} Deferred
 */

/**
 * The statement writing `ops` (each key's last op) with the placeholders of
 * `deferred` replaced, and the notification payloads `notices` (their keys
 * too) sent in it.
 * @param {string} table quoted @param {string} channel @param {BatchOp[]} ops @param {Deferred} deferred @param {string[]} notices
 * @returns {{ text: string, values: unknown[] }}
 */
export function deferredStatement (table, channel, ops, deferred, notices) {
  /** @type {Map<number, { sequence: number, rank: number }>} */
  const where = new Map()
  deferred.sequences.forEach((placeholders, sequence) => placeholders.forEach((placeholder, rank) => where.set(placeholder, { sequence, rank })))
  /** @type {Array<Buffer | null>} each sequence's key */
  const sequenceKeys = deferred.sequences.map(() => null)
  const putKeys = []
  const putValues = []
  const delKeys = []
  const segments = new Segments(where)
  /** @type {number[]} the items of the ops computed from the bases: keys */
  const rowKeys = []
  /** @type {number[]} and values */
  const rowValues = []
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]
    if (op.type === 'del') {
      delKeys.push(op.key)
      continue
    }
    if (op.deferredSequence === true) {
      // Raised to its last placeholder: which sequence's that is.
      const at = where.get(Number(/** @type {Buffer} */ (op.value).toString('utf8')))
      if (at === undefined || at.rank !== deferred.sequences[at.sequence].length - 1 || sequenceKeys[at.sequence] !== null) {
        throw levelkitError(codes.INVALID, 'A batch raises a sequence to a placeholder id that is not the last its sections took')
      }
      sequenceKeys[at.sequence] = op.key
      continue
    }
    const key = findPlaceholders(op.key)
    const value = findPlaceholders(/** @type {Buffer} */ (op.value))
    if (key.length === 0 && value.length === 0) {
      putKeys.push(op.key)
      putValues.push(op.value)
    } else {
      rowKeys.push(segments.item(op.key, key))
      rowValues.push(segments.item(/** @type {Buffer} */ (op.value), value))
    }
  }
  if (sequenceKeys.some(key => key === null)) throw levelkitError(codes.INVALID, 'A batch holds placeholder ids of a sequence it does not raise')
  const parts = payloadParts(notices, segments)
  /** @type {unknown[]} */
  const values = [putKeys, putValues, delKeys, segments.items, segments.bytes, segments.sequences, segments.ranks, segments.texts, rowKeys, rowValues, parts.payloads, parts.texts, parts.items]
  // Each sequence: its row raised by as many ids as its placeholders; `b<i>` is the first of them.
  const bumps = deferred.sequences.map((placeholders, i) => {
    values.push(sequenceKeys[i], placeholders.length)
    const key = `$${values.length - 1}::bytea`
    const n = `$${values.length}::bigint`
    return `seq${i} AS (INSERT INTO ${table} (key, value) VALUES (${key}, convert_to(${n}::text, 'UTF8')) ON CONFLICT (key) DO UPDATE SET value = convert_to((convert_from(${table}.value, 'UTF8')::bigint + ${n})::text, 'UTF8') RETURNING convert_from(value, 'UTF8')::bigint - (${n} - 1) AS b${i})`
  })
  const from = deferred.sequences.map((_, i) => `seq${i}`).join(', ')
  // A segment's id: its sequence's base (q, from 1; 0 for none) plus its rank.
  const id = '(s.b[s.q] + s.r)'
  const text = `WITH ${bumps.join(', ')}, ` +
    `items AS (SELECT s.i, string_agg(s.p || CASE WHEN s.q = 0 THEN ''::bytea WHEN s.t = 1 THEN convert_to(${id}::text, 'UTF8') ELSE '\\x42'::bytea || float8send(${id}::float8) END, ''::bytea ORDER BY s.o) AS v ` +
    `FROM (SELECT u.*, ARRAY[${deferred.sequences.map((_, i) => `b${i}`).join(', ')}]::bigint[] AS b FROM ${from}, unnest($4::int[], $5::bytea[], $6::int[], $7::int[], $8::int[]) WITH ORDINALITY AS u(i, p, q, r, t, o)) AS s GROUP BY s.i), ` +
    `removed AS (DELETE FROM ${table} WHERE key = ANY($3::bytea[])), ` +
    `written AS (INSERT INTO ${table} (key, value) SELECT * FROM unnest($1::bytea[], $2::bytea[]) UNION ALL SELECT k.v, v.v FROM unnest($9::int[], $10::int[]) AS c(k, v) JOIN items AS k ON k.i = c.k JOIN items AS v ON v.i = c.v ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value) ` +
    `SELECT ARRAY[${deferred.sequences.map((_, i) => `(SELECT b${i} FROM seq${i})`).join(', ')}] AS ${BASES}, ` +
    `(SELECT count(pg_notify(${pg.escapeLiteral(channel)}, x.payload)) FROM (SELECT string_agg(n.part || coalesce(translate(encode(m.v, 'base64'), chr(10), ''), ''), '' ORDER BY n.o) AS payload ` +
    `FROM ${from}, unnest($11::int[], $12::text[], $13::int[]) WITH ORDINALITY AS n(p, part, i, o) LEFT JOIN items AS m ON m.i = n.i GROUP BY n.p ORDER BY n.p) AS x) AS notified`
  return { text, values }
}

/**
 * The segments of the items (keys and values holding placeholders) of a
 * statement, as its array parameters: per segment its item, the bytes
 * before its placeholder, the placeholder's sequence (from 1; 0 for the
 * item's last segment, which has none), rank and form (1: decimal text).
 */
class Segments {
  /** @param {Map<number, { sequence: number, rank: number }>} where */
  constructor (where) {
    this.where = where
    /** @type {number[]} */
    this.items = []
    /** @type {Uint8Array[]} */
    this.bytes = []
    /** @type {number[]} */
    this.sequences = []
    /** @type {number[]} */
    this.ranks = []
    /** @type {number[]} */
    this.texts = []
    this.count = 0
  }

  /**
   * A new item of `bytes`, whose placeholders are `found`: its number.
   * @param {Uint8Array} bytes @param {import('../deferred-ids.js').Occurrence[]} found
   */
  item (bytes, found) {
    const item = this.count++
    let at = 0
    // Indexed: for...of allocates a result per step where this runs unoptimized.
    for (let i = 0; i < found.length; i++) {
      const { offset, length, placeholder, text } = found[i]
      const place = this.where.get(placeholder)
      if (place === undefined) throw unknownPlaceholder(placeholder)
      this.#push(item, bytes.subarray(at, offset), place.sequence + 1, place.rank, text ? 1 : 0)
      at = offset + length
    }
    this.#push(item, bytes.subarray(at), 0, 0, 0)
    return item
  }

  /** @param {number} item @param {Uint8Array} bytes @param {number} sequence @param {number} rank @param {number} text */
  #push (item, bytes, sequence, rank, text) {
    this.items.push(item)
    this.bytes.push(bytes)
    this.sequences.push(sequence)
    this.ranks.push(rank)
    this.texts.push(text)
  }
}

/**
 * The notification payloads as parts (rows of array parameters): per part
 * its payload's number, its text and the item (a key holding a
 * placeholder, as written: its base64 follows the text) or -1. A
 * payload's ops are [prefix, type, base64 key].
 * @param {string[]} notices @param {Segments} segments
 */
function payloadParts (notices, segments) {
  /** @type {number[]} */
  const payloads = []
  /** @type {string[]} */
  const texts = []
  /** @type {number[]} */
  const items = []
  notices.forEach((notice, p) => {
    const message = JSON.parse(notice)
    /** @type {number[]} */
    const marked = []
    // A marker the notice does not hold: the payload is cut where it is.
    let marker = '~'
    while (notice.includes(marker)) marker += '~'
    if (Array.isArray(message.o)) {
      for (const op of message.o) {
        const key = Buffer.from(op[2], 'base64')
        const found = findPlaceholders(key)
        if (found.length === 0) continue
        marked.push(segments.item(key, found))
        op[2] = marker
      }
    }
    if (marked.length === 0) {
      payloads.push(p)
      texts.push(notice)
      items.push(-1)
      return
    }
    const cut = JSON.stringify(message).split(marker)
    cut.forEach((text, i) => {
      payloads.push(p)
      texts.push(text)
      items.push(i < marked.length ? marked[i] : -1)
    })
  })
  return { payloads, texts, items }
}

/**
 * The bases a deferred statement answered with, from the results of the
 * query it was sent in (one result, or one per statement).
 * @param {any} results
 * @returns {number[] | null}
 */
export function basesOf (results) {
  for (const result of Array.isArray(results) ? results : [results]) {
    if (result?.fields?.some((/** @type {any} */ field) => field.name === BASES)) return result.rows[0][BASES].map(Number)
  }
  return null
}
