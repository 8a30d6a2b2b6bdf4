import { invalid } from './errors.js'
import { describe, errorMessage, isLevelkitError } from './common.js'

/**
 * Ordered tuple key codec.
 *
 * The byte format is bytewise's (bytewise 1.1.0 / bytewise-core 1.2.3), so
 * keys written by either are interchangeable and sort identically, but this
 * implementation works on Uint8Array only (no Buffer) and is faster
 * (bench/RESULTS.md, tuple-codec).
 *
 * Every value starts with a one-byte type tag; the tags alone give the order
 * across types (bytewise-core/base.js):
 *
 *   null 0x10 < false 0x20 < true 0x21 < -Infinity 0x40 < negative 0x41
 *   < positive 0x42 < +Infinity 0x43 < bytes 0x60 < string 0x70 < array 0xa0
 *
 * (bytewise also has dates 0x51/0x52 and undefined 0xf0; we reject those.)
 *
 * Bodies:
 * - null, booleans, ±Infinity: the tag only.
 * - Finite numbers: 8 bytes of big-endian IEEE 754 float64. For positive
 *   numbers (and zero) the bit pattern already sorts like the number. For
 *   negative numbers bytewise writes the bits of the absolute value with
 *   every byte inverted: a larger magnitude has a larger bit pattern, so
 *   inverting makes it sort lower, which is what a more negative number must.
 *   -0 is written as +0 (tag 0x42, eight zero bytes) exactly as bytewise
 *   does, so -0 and 0 are the same key and -0 decodes as 0.
 * - Strings: UTF-8. Byte order of UTF-8 equals code point order (which is
 *   NOT JavaScript's `<` order: that compares UTF-16 code units, so '😀'
 *   < '\uffff' in JS while its key sorts after).
 * - Bytes: the raw bytes.
 * - Arrays: 0xa0, then each element's in-array encoding, then 0x00.
 *
 * At the top level a string or byte array is not escaped: it simply runs to
 * the end of the key. Inside an array it must be terminated, so its body is
 * escaped and followed by 0x00. The escapes keep 0x00 out of the body and
 * keep the order (0x00 terminator < 01 01 < 01 02 < 02 ...):
 *   strings: 0x00 -> 01 01, 0x01 -> 01 02 (UTF-8 never contains 0xfe/0xff)
 *   bytes:   0x00 -> 01 01, 0x01 -> 01 02, 0xfe -> fe fd, 0xff -> fe fe
 * Numbers, null, booleans and arrays are encoded the same at any level.
 *
 * Consequences relied on by the model layer (see encodeItems):
 * - Every in-array element encoding starts with its tag, and no tag is 0x00
 *   or 0xff.
 * - Element encodings are self-delimiting (a prefix-free set): fixed length
 *   for null/booleans/numbers; string/bytes bodies end at their first 0x00;
 *   arrays end at the 0x00 that follows their (self-delimiting) elements.
 *
 * Not supported (rejected with LEVELKIT_INVALID): undefined, NaN, bigint,
 * symbols, functions, objects (incl. Date, boxed primitives, other typed
 * arrays), sparse array holes, strings with lone surrogates (UTF-8 cannot
 * represent them; Buffer would silently turn them into U+FFFD), and arrays
 * nested more than MAX_DEPTH deep (which also catches cyclic arrays).
 *
 * Decoding is strict: it accepts exactly the bytes `encode` can produce, so
 * any accepted key re-encodes to the same bytes.
 */

const NULL = 0x10
const FALSE = 0x20
const TRUE = 0x21
const NEG_INF = 0x40
const NEG = 0x41
const POS = 0x42
const POS_INF = 0x43
const BYTES = 0x60
const STRING = 0x70

/** Tag that opens an array. */
export const ARRAY_START = 0xa0

/** Tag of a number above zero (eight bytes follow: its float64, big-endian). */
export const POSITIVE = POS

/** Byte that closes an array (and terminates strings and bytes inside one). */
export const ARRAY_END = 0x00

/**
 * Greater than the first byte of every element encoding, so for a tuple
 * prefix P = ARRAY_START + encodeItems(items), P + HIGH is an exclusive upper
 * bound of all keys that start with those items.
 */
export const HIGH = 0xff

/** Deepest array nesting accepted by encode and decode. */
const MAX_DEPTH = 100

/** Non-ASCII strings longer than this (in UTF-16 units) use TextEncoder. */
const LONG_STRING = 200

const INITIAL_SCRATCH = 1024
const MAX_KEPT_SCRATCH = 64 * 1024

const textEncoder = new TextEncoder()
const textDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
const hasWellFormed = typeof String.prototype.isWellFormed === 'function'
const LONE_SURROGATE = /\p{Surrogate}/u

// Encoder state: one growable scratch buffer shared by all calls. encode()
// is synchronous; the only user code it can run is array index getters and
// Proxy traps, and one of those that encodes a key itself gets a scratch of
// its own (see aside()), so the outer key is not corrupted.
let buf = new Uint8Array(INITIAL_SCRATCH)
let view = new DataView(buf.buffer)
let pos = 0
let busy = false

// Decoder state, also module-level to avoid passing a cursor around.
/** @type {Uint8Array} */
let input = buf
let at = 0

// Eight bytes to assemble a float64 in when decoding, big-endian via DataView.
const f64 = new Uint8Array(8)
const f64View = new DataView(f64.buffer)

/**
 * Internal error carrying the path (array indexes) to the bad element; turned
 * into a LEVELKIT_INVALID error at the public entry point.
 */
class Rejection {
  /** @param {string} reason @param {unknown} [cause] what reading the value threw */
  constructor (reason, cause) {
    this.reason = reason
    this.cause = cause
    /** @type {number[]} */
    this.path = []
  }
}

/** A Rejection for what reading a value threw. @param {unknown} err */
function unreadable (err) {
  return err instanceof Rejection ? err : new Rejection(`a value that threw when read (${errorMessage(err)})`, err)
}

/**
 * Encode a value to a key that sorts like the value.
 * @param {unknown} value null, boolean, number (not NaN), well-formed string,
 *   Uint8Array (incl. Buffer) or an array of these (nested arbitrarily)
 * @returns {Uint8Array} a new, right-sized array, byte-identical to bytewise
 * @throws {Error} code LEVELKIT_INVALID for unsupported values
 */
export function encode (value) {
  if (busy) return aside(() => encode(value))
  busy = true
  pos = 0
  try {
    writeValue(value, false, 0)
  } catch (err) {
    throw translate(err, 'encode')
  } finally {
    busy = false
  }
  return finish()
}

// encodeEach()'s scratch for a number's float64, big-endian.
const numberScratch = new DataView(new ArrayBuffer(8))
const numberBytes = new Uint8Array(numberScratch.buffer)

/**
 * encode() of each of `values`, in order. A number above zero (a sequence
 * id) is its tag and its float64, as writeNumber() writes it, made without
 * the scratch's calls: a bulk load encodes thousands of ids.
 * @param {unknown[]} values
 * @returns {Uint8Array[]}
 */
export function encodeEach (values) {
  const keys = []
  for (let i = 0; i < values.length; i++) {
    const value = values[i]
    if (typeof value === 'number' && value > 0 && value < Infinity) {
      const key = new Uint8Array(9)
      key[0] = POS
      numberScratch.setFloat64(0, value)
      key.set(numberBytes, 1)
      keys.push(key)
    } else keys.push(encode(value))
  }
  return keys
}

/**
 * Run an encode that user code started while another one is writing into
 * the scratch (a getter of the outer value that encodes a key), on a scratch
 * of its own.
 * @param {() => Uint8Array} encodeIt
 */
function aside (encodeIt) {
  const outer = { buf, view, pos }
  buf = new Uint8Array(INITIAL_SCRATCH)
  view = new DataView(buf.buffer)
  busy = false
  try {
    return encodeIt()
  } finally {
    buf = outer.buf
    view = outer.view
    pos = outer.pos
    busy = true
  }
}

/**
 * A key value a caller passed, read once: a value that is not a primitive
 * (an array, bytes) is replaced by a frozen copy decoded from its encoding,
 * so every later encoding of it gives the same bytes, whatever the caller's
 * value does (an element getter, a Proxy, a change after the call).
 * Primitives cannot change: they are returned as they are (and checked
 * where they are encoded).
 * @param {unknown} value
 * @param {{ keyOf: (value: unknown) => Uint8Array }} model encodes it, with the model's error message
 * @returns {unknown}
 */
export function snapshot (value, model) {
  if (value === null || typeof value !== 'object') return value
  return freezeArrays(decode(model.keyOf(value)))
}

/** @param {unknown} value */
function freezeArrays (value) {
  if (Array.isArray(value)) {
    for (const item of value) freezeArrays(item)
    Object.freeze(value)
  }
  return value
}

/**
 * Encode array elements as they appear inside an array, without the opening
 * tag and closing terminator: encode([a, b]) equals
 * ARRAY_START + encodeItems([a, b]) + ARRAY_END.
 *
 * Every element encoding begins with a type tag (never 0x00 or 0xff) and is
 * self-delimiting, so with P = ARRAY_START + encodeItems(items) every key
 * encode([...items, ...more]) satisfies P <= key < P + HIGH, and no other key
 * does.
 * @param {unknown[]} values
 * @returns {Uint8Array}
 * @throws {Error} code LEVELKIT_INVALID for unsupported values
 */
export function encodeItems (values) {
  if (!Array.isArray(values)) {
    throw invalid(`encodeItems() expects an array, got ${describe(values)}`)
  }
  if (busy) return aside(() => encodeItems(values))
  busy = true
  pos = 0
  try {
    writeItems(values, 1)
  } catch (err) {
    throw translate(err, 'encodeItems')
  } finally {
    busy = false
  }
  return finish()
}

/**
 * Decode a key produced by encode (or bytewise.encode, for supported types).
 * Byte arrays decode as plain Uint8Array copies, -0 as 0.
 * @param {Uint8Array} bytes
 * @returns {any}
 * @throws {Error} code LEVELKIT_INVALID if the bytes are not a valid key
 */
export function decode (bytes) {
  if (!isBytes(bytes)) {
    throw invalid(`decode() expects a Uint8Array, got ${describe(bytes)}`)
  }
  const end = bytes.length
  if (end === 0) throw invalid('Cannot decode an empty key')

  input = bytes
  at = 1
  let value
  const tag = bytes[0]
  switch (tag) {
    case STRING:
      value = readString(false)
      break
    case BYTES:
      value = new Uint8Array(end - 1)
      value.set(bytes.subarray(1))
      at = end
      break
    case ARRAY_START:
      value = readArray(0)
      break
    default:
      value = readScalar(tag)
  }
  input = buf // don't keep the caller's bytes alive
  if (at !== end) throw malformed('unexpected bytes after the value', at)
  return value
}

/**
 * decode() for bytes a caller passed (the exported decodeTuple): whatever
 * reading them throws (a Proxy of a Uint8Array, say) is LEVELKIT_INVALID.
 * @param {Uint8Array} bytes
 * @returns {any}
 */
export function decodeTuple (bytes) {
  let copy
  try {
    if (!isBytes(bytes)) throw invalid(`decodeTuple() expects a Uint8Array, got ${describe(bytes)}`)
    // A copy of our own: decoding it runs no code of the caller's (a Proxy
    // trap that decodes too would move the shared cursor).
    copy = new Uint8Array(bytes)
  } catch (err) {
    if (isLevelkitError(err)) throw err
    throw invalid(`decodeTuple() could not read its argument: ${errorMessage(err)}`, { cause: err })
  }
  return decode(copy)
}

/**
 * abstract-level 3 encoding, e.g.
 * db.sublevel('x', { keyEncoding: tupleEncoding }). Works on classic-level,
 * memory-level and browser-level (they all support the 'view' format, or
 * transcode it).
 */
export const tupleEncoding = Object.freeze({
  name: 'tuple',
  format: 'view',
  encode,
  decode
})

// ---------------------------------------------------------------------------
// Encoding

/** Return a right-sized copy of the scratch, shrinking it if it grew large. */
function finish () {
  const out = buf.slice(0, pos)
  if (buf.length > MAX_KEPT_SCRATCH) {
    buf = new Uint8Array(INITIAL_SCRATCH)
    view = new DataView(buf.buffer)
  }
  return out
}

/** Make room for n more bytes in the scratch. @param {number} n */
function reserve (n) {
  if (pos + n > buf.length) grow(pos + n)
}

/** @param {number} min */
function grow (min) {
  let size = buf.length * 2
  while (size < min) size *= 2
  const next = new Uint8Array(size)
  next.set(buf.subarray(0, pos))
  buf = next
  view = new DataView(buf.buffer)
}

/**
 * @param {unknown} value
 * @param {boolean} nested inside an array (strings and bytes get escaped)
 * @param {number} depth
 */
function writeValue (value, nested, depth) {
  switch (typeof value) {
    case 'string':
      writeString(value, nested)
      return
    case 'number':
      writeNumber(value)
      return
    case 'boolean':
      reserve(1)
      buf[pos++] = value ? TRUE : FALSE
      return
    case 'object':
      if (value === null) {
        reserve(1)
        buf[pos++] = NULL
        return
      }
      if (Array.isArray(value)) {
        if (depth >= MAX_DEPTH) {
          throw new Rejection(`arrays nested more than ${MAX_DEPTH} deep (cyclic?)`)
        }
        reserve(1)
        buf[pos++] = ARRAY_START
        writeItems(value, depth + 1)
        reserve(1)
        buf[pos++] = ARRAY_END
        return
      }
      if (isBytes(value)) {
        writeBytes(/** @type {Uint8Array} */ (value), nested)
        return
      }
  }
  throw new Rejection(`unsupported value: ${describe(value)}`)
}

/** @param {unknown[]} values @param {number} depth */
function writeItems (values, depth) {
  let i = 0
  try {
    for (const n = values.length; i < n; i++) {
      const item = values[i]
      if (item === undefined) {
        throw new Rejection(i in values ? 'unsupported value: undefined' : 'sparse array hole')
      }
      writeValue(item, true, depth)
    }
  } catch (err) {
    const rejection = unreadable(err)
    rejection.path.unshift(i)
    throw rejection
  }
}

/** @param {number} n */
function writeNumber (n) {
  reserve(9)
  if (n > -Infinity && n < Infinity) {
    if (n < 0) {
      buf[pos] = NEG
      view.setFloat64(pos + 1, -n)
      // Invert so that larger magnitudes (larger bit patterns) sort lower.
      for (let i = pos + 1, e = pos + 9; i < e; i++) buf[i] = ~buf[i]
    } else {
      buf[pos] = POS
      view.setFloat64(pos + 1, n + 0) // n + 0 turns -0 into +0, like bytewise
    }
    pos += 9
  } else if (n === Infinity) {
    buf[pos++] = POS_INF
  } else if (n === -Infinity) {
    buf[pos++] = NEG_INF
  } else {
    throw new Rejection('unsupported value: NaN')
  }
}

/** @param {string} str @param {boolean} nested */
function writeString (str, nested) {
  const len = str.length
  // Worst case: 3 bytes per UTF-16 unit (escapes take 2, pairs 4 per 2
  // units), plus tag and terminator.
  reserve(len * 3 + 2)
  const b = buf
  let p = pos
  b[p++] = STRING
  let i = 0
  // ASCII fast path.
  for (; i < len; i++) {
    const c = str.charCodeAt(i)
    if (c >= 0x80) break
    if (c < 2 && nested) {
      b[p++] = 0x01 // 00 -> 01 01, 01 -> 01 02: frees 0x00 for the terminator
      b[p++] = c + 1
    } else {
      b[p++] = c
    }
  }
  if (i < len) {
    // Hand-written UTF-8 beats TextEncoder's call overhead on short strings,
    // typical keys; TextEncoder's bulk speed wins on long ones.
    p = len - i > LONG_STRING ? writeLongUtf8(str, i, p, nested) : writeUtf8(str, i, p, nested)
  }
  if (nested) b[p++] = ARRAY_END
  pos = p
}

/**
 * UTF-8 encode str[i..] into the scratch at p; returns the new end.
 * @param {string} str @param {number} i @param {number} p @param {boolean} nested
 */
function writeUtf8 (str, i, p, nested) {
  const b = buf
  for (const len = str.length; i < len; i++) {
    let c = str.charCodeAt(i)
    if (c < 0x80) {
      if (c < 2 && nested) {
        b[p++] = 0x01
        b[p++] = c + 1
      } else {
        b[p++] = c
      }
    } else if (c < 0x800) {
      b[p++] = 0xc0 | (c >> 6)
      b[p++] = 0x80 | (c & 0x3f)
    } else if (c < 0xd800 || c > 0xdfff) {
      b[p++] = 0xe0 | (c >> 12)
      b[p++] = 0x80 | ((c >> 6) & 0x3f)
      b[p++] = 0x80 | (c & 0x3f)
    } else {
      // A surrogate: must be a high one followed by a low one.
      const d = c < 0xdc00 && i + 1 < len ? str.charCodeAt(i + 1) : 0
      if (d < 0xdc00 || d > 0xdfff) throw loneSurrogate()
      i++
      c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00)
      b[p++] = 0xf0 | (c >> 18)
      b[p++] = 0x80 | ((c >> 12) & 0x3f)
      b[p++] = 0x80 | ((c >> 6) & 0x3f)
      b[p++] = 0x80 | (c & 0x3f)
    }
  }
  return p
}

/**
 * Like writeUtf8, using TextEncoder.
 * @param {string} str @param {number} i @param {number} p @param {boolean} nested
 */
function writeLongUtf8 (str, i, p, nested) {
  // TextEncoder would replace lone surrogates with U+FFFD (as bytewise's
  // Buffer does), giving a key that cannot decode to the original string.
  if (hasWellFormed ? !str.isWellFormed() : LONE_SURROGATE.test(str)) throw loneSurrogate()
  const { written } = textEncoder.encodeInto(i === 0 ? str : str.slice(i), buf.subarray(p))
  // Only U+0000 and U+0001 need escapes; rare, so fix them up afterwards.
  return nested ? escapeLow(buf, p, p + written) : p + written
}

function loneSurrogate () {
  return new Rejection('string with a lone surrogate (not well-formed UTF-16)')
}

/**
 * Escape 0x00 and 0x01 in b[start..end) in place, shifting right (there is
 * room: writeString reserved 3 bytes per UTF-16 unit). Returns the new end.
 * @param {Uint8Array} b @param {number} start @param {number} end
 */
function escapeLow (b, start, end) {
  let extra = 0
  for (let i = start; i < end; i++) if (b[i] < 2) extra++
  if (extra === 0) return end
  let w = end + extra
  const newEnd = w
  for (let r = end - 1; r >= start; r--) {
    const c = b[r]
    if (c < 2) {
      b[--w] = c + 1
      b[--w] = 0x01
    } else {
      b[--w] = c
    }
  }
  return newEnd
}

/** @param {Uint8Array} bytes @param {boolean} nested */
function writeBytes (bytes, nested) {
  const len = bytes.length
  if (!nested) {
    reserve(len + 1)
    buf[pos++] = BYTES
    buf.set(bytes, pos)
    pos += len
    return
  }
  reserve(len * 2 + 2)
  const b = buf
  let p = pos
  b[p++] = BYTES
  for (let i = 0; i < len; i++) {
    const c = bytes[i]
    if (c < 2) {
      b[p++] = 0x01 // 00 -> 01 01, 01 -> 01 02: frees 0x00 for the terminator
      b[p++] = c + 1
    } else if (c > 0xfd) {
      b[p++] = 0xfe // fe -> fe fd, ff -> fe fe (bytewise's choice; fd < fe fd < fe fe keeps order)
      b[p++] = c - 1
    } else {
      b[p++] = c
    }
  }
  b[p++] = ARRAY_END
  pos = p
}

// ---------------------------------------------------------------------------
// Decoding (cursor in `at`, bytes in `input`)

/** @param {number} depth @returns {any[]} */
function readArray (depth) {
  if (depth >= MAX_DEPTH) throw malformed(`arrays nested more than ${MAX_DEPTH} deep`, at - 1)
  const bytes = input
  const end = bytes.length
  const list = []
  while (true) {
    if (at >= end) throw malformed('unterminated array', end)
    const tag = bytes[at++]
    if (tag === ARRAY_END) return list
    if (tag === STRING) {
      list.push(readString(true))
    } else if (tag === ARRAY_START) {
      list.push(readArray(depth + 1))
    } else if (tag === BYTES) {
      list.push(readNestedBytes())
    } else {
      list.push(readScalar(tag))
    }
  }
}

/** Tags with no variable-length body. @param {number} tag */
function readScalar (tag) {
  switch (tag) {
    case NULL: return null
    case FALSE: return false
    case TRUE: return true
    case NEG_INF: return -Infinity
    case POS_INF: return Infinity
    case POS:
    case NEG: {
      const bytes = input
      if (at + 8 > bytes.length) throw malformed('truncated number', at)
      const invert = tag === NEG ? 0xff : 0
      for (let i = 0; i < 8; i++) f64[i] = bytes[at + i] ^ invert
      const n = f64View.getFloat64(0)
      // Only canonical bodies: a finite magnitude > 0 for NEG; for POS a
      // finite value with the sign bit clear (bytewise never writes -0, NaN
      // or Infinity as a float body).
      if (tag === NEG ? !(n > 0 && n < Infinity) : !(f64[0] < 0x80 && n < Infinity)) {
        throw malformed('invalid number', at)
      }
      at += 8
      return tag === NEG ? -n : n
    }
  }
  throw malformed(`unsupported type tag 0x${tag.toString(16).padStart(2, '0')}`, at - 1)
}

/**
 * Read a string body at `at`: up to the end of the key (top level) or up to
 * its 0x00 terminator, undoing escapes (nested). Leaves `at` after it.
 * @param {boolean} nested
 */
function readString (nested) {
  const bytes = input
  const end = bytes.length
  const start = at
  let stop = start
  let flags = 0 // 0x80 set: non-ASCII seen; 0x100 set: escape seen
  if (nested) {
    for (; stop < end; stop++) {
      const c = bytes[stop]
      if (c > 0x01) flags |= c
      else if (c === 0x00) break
      else flags |= 0x100
    }
    if (stop === end) throw malformed('unterminated string', end)
    at = stop + 1
  } else {
    for (; stop < end; stop++) flags |= bytes[stop]
    at = end
  }
  if (flags < 0x80 && stop - start <= 32) {
    // Short ASCII: no validation needed, and cheaper than a TextDecoder call.
    let s = ''
    for (let i = start; i < stop; i++) s += String.fromCharCode(bytes[i])
    return s
  }
  if (flags & 0x100) return decodeUtf8(unescape(bytes, start, stop, false), start)
  return decodeUtf8(bytes.subarray(start, stop), start)
}

/**
 * Strict UTF-8 decoding (no replacement characters, BOM kept).
 * @param {Uint8Array} bytes @param {number} offset for the error message
 */
function decodeUtf8 (bytes, offset) {
  try {
    return textDecoder.decode(bytes)
  } catch {
    throw malformed('invalid UTF-8 in string', offset)
  }
}

function readNestedBytes () {
  const stop = input.indexOf(0x00, at)
  if (stop === -1) throw malformed('unterminated byte array', input.length)
  const out = unescape(input, at, stop, true)
  at = stop + 1
  return out
}

/**
 * Undo the in-array escapes of input[start..stop) into a new array,
 * rejecting anything encode would not have produced.
 * @param {Uint8Array} bytes @param {number} start @param {number} stop
 * @param {boolean} high also undo fe fd / fe fe (byte arrays)
 */
function unescape (bytes, start, stop, high) {
  let n = 0
  for (let i = start; i < stop; i++) {
    const c = bytes[i]
    if (c === 0x01) {
      const d = bytes[++i]
      if (d !== 0x01 && d !== 0x02) throw malformed('invalid escape', i - 1)
    } else if (high && c > 0xfd) {
      const d = bytes[++i]
      if (c === 0xff || (d !== 0xfd && d !== 0xfe)) throw malformed('invalid escape', i - 1)
    }
    n++
  }
  const out = new Uint8Array(n)
  for (let i = start, o = 0; i < stop; i++) {
    const c = bytes[i]
    if (c === 0x01) out[o++] = bytes[++i] - 1
    else if (high && c === 0xfe) out[o++] = bytes[++i] + 1
    else out[o++] = c
  }
  return out
}

// ---------------------------------------------------------------------------
// Helpers

/** @param {unknown} value */
function isBytes (value) {
  // The toStringTag check admits Uint8Arrays from other realms (and Buffer).
  return value instanceof Uint8Array ||
    (ArrayBuffer.isView(value) && Object.prototype.toString.call(value) === '[object Uint8Array]')
}

/**
 * The error for a value encode() refused, or that threw while it was read
 * (a getter, a Proxy trap): LEVELKIT_INVALID either way, with `path` (the
 * array indexes to the bad element) and `reason`.
 * @param {unknown} err
 * @param {string} fn
 */
function translate (err, fn) {
  // A failed encode may have grown the scratch for a huge value.
  if (buf.length > MAX_KEPT_SCRATCH) {
    buf = new Uint8Array(INITIAL_SCRATCH)
    view = new DataView(buf.buffer)
  }
  const rejection = unreadable(err)
  const where = rejection.path.length ? ` at index [${rejection.path.join('][')}]` : ''
  return invalid(`${fn}() cannot encode${where}: ${rejection.reason}`, { cause: rejection.cause, path: rejection.path, reason: rejection.reason })
}

/** @param {string} what @param {number} offset */
function malformed (what, offset) {
  input = buf
  return invalid(`Cannot decode key: ${what} at byte ${offset}`, { offset })
}
