// The batch statement of a group whose sections took placeholder ids
// (deferred inserts, lib/deferred-ids.js): one statement bumps each
// sequence row (INSERT ... ON CONFLICT DO UPDATE ... RETURNING, so the row
// is locked from there to the COMMIT sent in the same query) and writes
// every op holding a placeholder with the real id in its place, computed
// from the value the bump returned:
// - in a key or a list value, the tuple element (0x42 and a float64) by
//   overlay() with '\x42' || float8send(id);
// - in a JSON value or a sequence's value, the decimal text by overlay()
//   with the id's text (of another length, hence `for`);
// - in the notifications, each key's base64 text in place of a token.
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
  /** @type {string[]} rows (key, value) computed from the bases */
  const computed = []
  /** @param {Uint8Array} bytes */
  const expression = bytes => {
    const found = findPlaceholders(bytes)
    let sql = literal(bytes)
    // From the last occurrence back: an overlay leaves the offsets before it as they were.
    for (let i = found.length - 1; i >= 0; i--) {
      const { offset, length, placeholder, text } = found[i]
      const at = where.get(placeholder)
      if (at === undefined) throw unknownPlaceholder(placeholder)
      const id = `(b${at.sequence} + ${at.rank})`
      const replacement = text ? `convert_to(${id}::text, 'UTF8')` : `('\\x42'::bytea || float8send(${id}::float8))`
      sql = `overlay(${sql} placing ${replacement} from ${offset + 1} for ${length})`
    }
    return found.length === 0 ? null : sql
  }
  for (const op of ops) {
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
    const key = expression(op.key)
    const value = expression(/** @type {Buffer} */ (op.value))
    if (key === null && value === null) {
      putKeys.push(op.key)
      putValues.push(op.value)
    } else {
      computed.push(`(${key ?? literal(op.key)}, ${value ?? literal(/** @type {Buffer} */ (op.value))})`)
    }
  }
  if (sequenceKeys.some(key => key === null)) throw levelkitError(codes.INVALID, 'A batch holds placeholder ids of a sequence it does not raise')
  const { payloads, tokens } = tokenize(notices)
  /** @type {unknown[]} */
  const values = [putKeys, putValues, delKeys, payloads]
  // Each sequence: its row raised by as many ids as its placeholders; `b<i>` is the first of them.
  const bumps = deferred.sequences.map((placeholders, i) => {
    values.push(sequenceKeys[i])
    const n = placeholders.length
    return `seq${i} AS (INSERT INTO ${table} (key, value) VALUES ($${values.length}::bytea, convert_to('${n}', 'UTF8')) ON CONFLICT (key) DO UPDATE SET value = convert_to((convert_from(${table}.value, 'UTF8')::bigint + ${n})::text, 'UTF8') RETURNING convert_from(value, 'UTF8')::bigint - ${n - 1} AS b${i})`
  })
  const from = deferred.sequences.map((_, i) => `seq${i}`).join(', ')
  const rows = computed.length === 0 ? '' : ` UNION ALL SELECT d.k, d.v FROM ${from}, LATERAL (VALUES ${computed.join(', ')}) AS d(k, v)`
  let payload = 'payload'
  for (const { token, key } of tokens) {
    payload = `replace(${payload}, '${token}', translate(encode(${expression(key) ?? literal(key)}, 'base64'), chr(10), ''))`
  }
  const bases = deferred.sequences.map((_, i) => `(SELECT b${i} FROM seq${i})`).join(', ')
  const text = `WITH ${bumps.join(', ')}, removed AS (DELETE FROM ${table} WHERE key = ANY($3::bytea[])), ` +
    `written AS (INSERT INTO ${table} (key, value) SELECT * FROM unnest($1::bytea[], $2::bytea[])${rows} ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value) ` +
    `SELECT ARRAY[${bases}] AS ${BASES}, (SELECT count(pg_notify(${pg.escapeLiteral(channel)}, ${payload})) FROM ${from}, unnest($4::text[]) AS n(payload)) AS notified`
  return { text, values }
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

/** @param {Uint8Array} bytes */
function literal (bytes) {
  return `decode('${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')}', 'hex')`
}

/**
 * The notification payloads, each key holding a placeholder in them (a
 * payload's ops are [prefix, type, base64 key]) as a token, no base64
 * character, that the statement replaces by the key's base64 as written.
 * @param {string[]} notices
 * @returns {{ payloads: string[], tokens: Array<{ token: string, key: Buffer }> }}
 */
function tokenize (notices) {
  /** @type {Array<{ token: string, key: Buffer }>} */
  const tokens = []
  const payloads = notices.map(notice => {
    const message = JSON.parse(notice)
    if (!Array.isArray(message.o)) return notice
    let changed = false
    for (const op of message.o) {
      const key = Buffer.from(op[2], 'base64')
      if (findPlaceholders(key).length === 0) continue
      const token = `~${tokens.length}~`
      tokens.push({ token, key })
      op[2] = token
      changed = true
    }
    return changed ? JSON.stringify(message) : notice
  })
  return { payloads, tokens }
}
