// Small helpers every module uses.

const MAX_TEXT = 60
const MAX_ITEMS = 5
const MAX_DEPTH = 2

/**
 * A short, safe description of any value for an error message: never
 * throws and stays short, whatever it is given (a BigInt, a Symbol, a
 * Proxy whose traps throw, an object with no prototype, a cycle, an array
 * nested a million deep).
 * @param {unknown} value
 * @returns {string}
 */
export function describe (value) {
  try {
    return describeAt(value, 0)
  } catch {
    return 'a value that cannot be described'
  }
}

/** @param {unknown} value @param {number} depth @returns {string} */
function describeAt (value, depth) {
  switch (typeof value) {
    case 'string': {
      const text = JSON.stringify(value.length > MAX_TEXT ? value.slice(0, MAX_TEXT) : value)
      return value.length > MAX_TEXT ? `${text.slice(0, -1)}..." (${value.length} characters)` : text
    }
    case 'number': return Object.is(value, -0) ? '-0' : String(value)
    case 'bigint': return `${String(value)}n (a bigint)`
    case 'boolean': return String(value)
    case 'undefined': return 'undefined'
    case 'symbol': return 'a symbol'
    case 'function': return 'a function'
  }
  if (value === null) return 'null'
  if (value instanceof Uint8Array) return `bytes(${value.length})`
  if (Array.isArray(value)) {
    if (depth >= MAX_DEPTH) return `an array of ${value.length}`
    const items = []
    for (let i = 0; i < value.length && i < MAX_ITEMS; i++) items.push(describeAt(value[i], depth + 1))
    if (value.length > MAX_ITEMS) items.push(`... ${value.length - MAX_ITEMS} more`)
    return `[${items.join(', ')}]`
  }
  const tag = Object.prototype.toString.call(value).slice(8, -1)
  return tag === 'Object' ? 'an object' : `a ${tag}`
}

/** @param {unknown} value */
export function isDefined (value) {
  return value !== undefined
}

export function noop () {}
