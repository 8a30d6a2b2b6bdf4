// Byte arrays as Level stores them: compared, joined, and named by strings.

/**
 * Concatenate byte arrays (or arrays of byte values) into a new Uint8Array.
 * @param {...(Uint8Array|number[])} parts
 * @returns {Uint8Array}
 */
export function concatBytes (...parts) {
  let length = 0
  for (let i = 0; i < parts.length; i++) length += parts[i].length
  const out = new Uint8Array(length)
  let offset = 0
  for (let i = 0; i < parts.length; i++) {
    out.set(parts[i], offset)
    offset += parts[i].length
  }
  return out
}

/**
 * Unsigned lexicographic comparison, the order of keys in a Level store.
 * @param {Uint8Array} a
 * @param {Uint8Array} b
 * @returns {-1|0|1}
 */
export function compareBytes (a, b) {
  const n = a.length < b.length ? a.length : b.length
  for (let i = 0; i < n; i++) {
    if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1
  }
  return a.length < b.length ? -1 : a.length > b.length ? 1 : 0
}

/**
 * One char (U+0000..U+00FF) per byte: an injective mapping of byte arrays to
 * strings, for use as Map keys and in cursors. Not a text decoding.
 * @param {Uint8Array} bytes
 * @returns {string}
 */
export function bytesToBinaryString (bytes) {
  const n = bytes.length
  if (n <= 8192) {
    // One apply() call rather than a loop: it took time off every lookup key
    // (bench/RESULTS.md, model-overhead, "After").
    return String.fromCharCode.apply(null, /** @type {any} */ (bytes))
  }
  let s = ''
  // Chunked so that apply() stays far below engine argument limits.
  for (let i = 0; i < n; i += 8192) {
    s += String.fromCharCode.apply(null, /** @type {any} */ (bytes.subarray(i, i + 8192)))
  }
  return s
}

/**
 * The bytes a binary string names, or null if it has a char above U+00FF
 * (so it is not one bytesToBinaryString() made).
 * @param {string} s
 * @returns {Uint8Array | null}
 */
export function binaryStringToBytes (s) {
  const bytes = new Uint8Array(s.length)
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c > 255) return null
    bytes[i] = c
  }
  return bytes
}

/** Bytes as hex (markers stored in JSON). @param {Uint8Array} bytes */
export function bytesToHex (bytes) {
  let hex = ''
  for (const byte of bytes) hex += byte.toString(16).padStart(2, '0')
  return hex
}

/** @param {string} hex */
export function hexToBytes (hex) {
  const bytes = new Uint8Array(hex.length / 2)
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16)
  return bytes
}
