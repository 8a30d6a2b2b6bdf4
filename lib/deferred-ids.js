// Ids taken inside the statement that writes their batch (deferred ids).
//
// With locking: 'keys' on PostgreSQL, an insert of a sequence collection
// read the sequence key and held its lock from the section's first query to
// its COMMIT: every other process's insert into that collection waited that
// long. A deferred insert instead takes a placeholder id, a number no real
// id reaches, and everything the section builds from it (the record's key
// and JSON, list values, edge keys) holds the placeholder's bytes. The
// backend's batch statement bumps the sequence row itself and writes every
// op holding a placeholder with the real id in its place: the sequence row
// is locked from that statement to its COMMIT, in the same query, for no
// client round trip (the hand-written SQL store's gap-free counters do the
// same). The write path then patches the ops (caches, notifications, the
// section's answer) with the real ids.
//
// A placeholder is PLACEHOLDER_BASE + k (k < 2^24), up to
// Number.MAX_SAFE_INTEGER: in a key, the tuple element 0x42 + the float64
// 43 3f ff ff ff k2 k1 k0 (its 0xff bytes occur in no UTF-8 string of a
// key); in a sequence's value and as a record's "id" in its JSON, its 16
// decimal digits (nowhere else in a JSON value: see textAt()).
import { levelkitError, codes } from './errors.js'

export const PLACEHOLDER_BASE = 2 ** 53 - 2 ** 24
const PLACEHOLDERS = 2 ** 24
const BINARY_LENGTH = 9
const TEXT_LENGTH = 16
// Every placeholder's decimal text starts so (9007199237963776 .. 9007199254740991).
const TEXT_HEAD = '90071992'

/** @param {unknown} n */
export function isPlaceholder (n) {
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= PLACEHOLDER_BASE
}

/** The placeholder numbered `count` (wrapping around after 2^24). @param {number} count */
export function placeholderAt (count) {
  return PLACEHOLDER_BASE + (count % PLACEHOLDERS)
}

/**
 * @typedef {{ offset: number, length: number, placeholder: number, text: boolean }} Occurrence
 */

/**
 * Where placeholders occur in `bytes`: as a key's tuple element (binary) or
 * as decimal text (text: a sequence's value, or a record's `"id"` in its
 * JSON, see textAt()). In increasing offset.
 * @param {Uint8Array} bytes
 * @returns {Occurrence[]}
 */
export function findPlaceholders (bytes) {
  /** @type {Occurrence[]} */
  const found = []
  const n = bytes.length
  for (let i = 0; i < n; i++) {
    const b = bytes[i]
    if (b === 0x42 && i + BINARY_LENGTH <= n && bytes[i + 1] === 0x43 && bytes[i + 2] === 0x3f && bytes[i + 3] === 0xff && bytes[i + 4] === 0xff && bytes[i + 5] === 0xff) {
      found.push({ offset: i, length: BINARY_LENGTH, placeholder: PLACEHOLDER_BASE + bytes[i + 6] * 65536 + bytes[i + 7] * 256 + bytes[i + 8], text: false })
      i += BINARY_LENGTH - 1
    } else if (b === 0x39 && i + TEXT_LENGTH <= n && textAt(bytes, i) && startsText(bytes, i)) {
      let value = 0
      let digits = true
      for (let j = i; j < i + TEXT_LENGTH; j++) {
        if (!isDigit(bytes[j])) {
          digits = false
          break
        }
        value = value * 10 + bytes[j] - 0x30
      }
      if (digits && isPlaceholder(value)) {
        found.push({ offset: i, length: TEXT_LENGTH, placeholder: value, text: true })
        i += TEXT_LENGTH - 1
      }
    }
  }
  return found
}

/** @param {Uint8Array} bytes @param {number} i */
function startsText (bytes, i) {
  for (let j = 0; j < TEXT_HEAD.length; j++) if (bytes[i + j] !== TEXT_HEAD.charCodeAt(j)) return false
  return true
}

// Where a placeholder's text is a placeholder: a whole value (a sequence's)
// or a record's own id in its JSON (`"id":` right before it, as
// withIdJson() writes it, and no digit after). A 16-digit number anywhere
// else (a message's text, another field) is left as it is.
const ID_FIELD = [0x22, 0x69, 0x64, 0x22, 0x3a]
/** @param {Uint8Array} bytes @param {number} i */
function textAt (bytes, i) {
  if (i === 0 && bytes.length === TEXT_LENGTH) return true
  if (i < ID_FIELD.length || isDigit(bytes[i + TEXT_LENGTH])) return false
  for (let j = 0; j < ID_FIELD.length; j++) if (bytes[i - ID_FIELD.length + j] !== ID_FIELD[j]) return false
  return true
}

/** @param {number | undefined} b */
function isDigit (b) {
  return b !== undefined && b >= 0x30 && b <= 0x39
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/**
 * Whether a value (bytes or a string) or key holds a placeholder.
 * @param {unknown} data
 */
export function holdsPlaceholder (data) {
  if (typeof data === 'string') return data.includes(TEXT_HEAD) && findPlaceholders(encoder.encode(data)).length > 0
  if (data instanceof Uint8Array) return findPlaceholders(data).length > 0
  return false
}

/**
 * `bytes` with each placeholder replaced by its real id (`ids`), as the
 * backend's statement wrote it.
 * @param {Uint8Array} bytes @param {Map<number, number>} ids
 * @returns {Uint8Array}
 */
export function substituteBytes (bytes, ids) {
  const found = findPlaceholders(bytes)
  if (found.length === 0) return bytes
  // Written into one array of its final size, without an array per part
  // and per id (with key locks a createChat patches dozens of keys and
  // values: 19 of its ~400 KB allocated, 13 so; session 20).
  /** @type {string[]} each text placeholder's id, in decimal */
  const texts = []
  let size = bytes.length
  for (const { placeholder, text } of found) {
    const id = ids.get(placeholder)
    if (id === undefined) throw unknownPlaceholder(placeholder)
    if (text) {
      const digits = String(id)
      texts.push(digits)
      size += digits.length - TEXT_LENGTH
    }
  }
  const out = new Uint8Array(size)
  let at = 0
  let o = 0
  let t = 0
  for (const { offset, length, placeholder, text } of found) {
    out.set(bytes.subarray(at, offset), o)
    o += offset - at
    if (text) {
      const digits = texts[t++]
      // Decimal digits are ASCII: one byte each.
      for (let i = 0; i < digits.length; i++) out[o++] = digits.charCodeAt(i)
    } else {
      writeId(out, o, /** @type {number} */ (ids.get(placeholder)))
      o += BINARY_LENGTH
    }
    at = offset + length
  }
  out.set(bytes.subarray(at), o)
  return out
}

/**
 * A key or value of an op (bytes or a string) with the real ids in place.
 * @template T @param {T} data @param {Map<number, number>} ids @returns {T}
 */
export function substitute (data, ids) {
  if (typeof data === 'string') return /** @type {any} */ (decoder.decode(substituteBytes(encoder.encode(data), ids)))
  if (data instanceof Uint8Array) return /** @type {any} */ (substituteBytes(data, ids))
  return data
}

const scratch = new DataView(new ArrayBuffer(8))

/**
 * A positive id as a tuple element, 0x42 and its float64 big-endian, into
 * `out` at `o`.
 * @param {Uint8Array} out @param {number} o @param {number} id
 */
function writeId (out, o, id) {
  out[o] = 0x42
  scratch.setFloat64(0, id)
  for (let i = 0; i < 8; i++) out[o + 1 + i] = scratch.getUint8(i)
}

/** @param {number} placeholder */
export function unknownPlaceholder (placeholder) {
  return levelkitError(codes.INVALID, `A batch holds the placeholder id ${placeholder}, which no insert of its sections took`, { placeholder })
}
