// A statement with its values written into its text as literals, for the
// section transaction (postgres-section-lock.js) to send BEGIN or COMMIT in
// the same query as a statement: pg's extended protocol (a statement with
// values) takes one statement per query, the simple protocol takes several
// but no values. One round trip instead of two.

/**
 * `text` with each `$n` outside quotes (identifiers, literals) replaced by
 * `values[n - 1]` as a literal of its own type; null when a value is of a
 * type this does not write (the caller sends the statement as it is).
 * Bytes are written as hex (decode(…, 'hex'), or an array of them as one
 * E'{"\\\\x…"}' constant, whatever standard_conforming_strings is), strings by pg's escapeLiteral().
 * @param {string} text @param {readonly unknown[]} [values]
 * @returns {string | null}
 */
export function inlineValues (text, values = []) {
  const literals = []
  for (const value of values) {
    const literal = literalOf(value)
    if (literal === null) return null
    literals.push(literal)
  }
  let out = ''
  let from = 0
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c === '"' || c === '\'') {
      // To the closing quote (a doubled one closes and opens again).
      const end = text.indexOf(c, i + 1)
      if (end === -1) return null
      i = end
    } else if (c === '$') {
      let end = i + 1
      while (end < text.length && text.charCodeAt(end) >= 48 && text.charCodeAt(end) <= 57) end++
      if (end === i + 1) return null
      const n = Number(text.slice(i + 1, end)) - 1
      const literal = literals[n]
      // An array's literal has no type of its own: the statement's cast (`$1::bytea[]`) gives it one.
      if (literal === undefined || (Array.isArray(values[n]) && !text.startsWith('::', end))) return null
      out += text.slice(from, i) + literal
      from = end
      i = end - 1
    }
  }
  return out + text.slice(from)
}

/** @param {unknown} value @returns {string | null} */
function literalOf (value) {
  if (value === null || value === undefined) return 'NULL'
  if (value instanceof Uint8Array) return `decode('${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex')}', 'hex')`
  if (typeof value === 'string') return escapeLiteral(value)
  if (typeof value === 'number') return Number.isSafeInteger(value) ? String(value) : null
  if (Array.isArray(value)) {
    // Bytes as one array constant: an ARRAY[] of decode() calls is an
    // expression per element for the planner (a group's batch holds
    // hundreds: 2-3 ms of planning where the constant costs 1 ms, session
    // 19). E'' reads the backslashes whatever standard_conforming_strings is.
    if (value.length > 0 && value.every(item => item instanceof Uint8Array)) return byteaArray(value)
    const items = value.map(literalOf)
    if (items.some(item => item === null || item === 'NULL')) return null
    return items.length === 0 ? '\'{}\'' : `ARRAY[${items.join(', ')}]`
  }
  return null
}

/**
 * pg's escapeLiteral(): the same text for a string (quotes doubled; with a
 * backslash, backslashes doubled and ` E` before the quote), without its
 * concatenation of one character at a time. A batch's notification payload
 * is kilobytes of JSON: pg's loop allocated ~35 KB per createChat over
 * PostgreSQL (a string per character), the most of any function.
 * @param {string} text
 */
export function escapeLiteral (text) {
  const quoted = text.includes("'") ? text.replace(/'/g, "''") : text
  return text.includes('\\') ? ` E'${quoted.replace(/\\/g, '\\\\')}'` : `'${quoted}'`
}

/**
 * An array of bytes as one E'{"\\\\x…", …}' constant: the bytes of every
 * element converted to hex at once, then cut, rather than a conversion, a
 * copy of the quoted form and a join per element (a key-lock group's
 * batch holds hundreds of keys and values).
 * @param {Uint8Array[]} items
 */
function byteaArray (items) {
  const hex = Buffer.concat(items).toString('hex')
  // "\\\\x: E'' reads each pair of backslashes as one, the array literal reads the two left as one.
  let out = 'E\'{"\\\\\\\\x' + hex.slice(0, items[0].byteLength * 2)
  let at = items[0].byteLength * 2
  for (let i = 1; i < items.length; i++) {
    const end = at + items[i].byteLength * 2
    out += '","\\\\\\\\x' + hex.slice(at, end)
    at = end
  }
  return out + '"}\''
}
