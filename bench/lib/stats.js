// Small statistics and formatting helpers for the benchmarks.

/**
 * The q-quantile (0..1) of the numbers, by linear interpolation between the
 * closest ranks (the same definition as numpy's default).
 * @param {ArrayLike<number>} values
 * @param {number} q
 */
export function quantile (values, q) {
  const sorted = Float64Array.from(values).sort()
  if (sorted.length === 0) return NaN
  const pos = (sorted.length - 1) * q
  const lo = Math.floor(pos)
  const hi = Math.ceil(pos)
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo)
}

/** @param {ArrayLike<number>} values */
export function median (values) {
  return quantile(values, 0.5)
}

/** @param {ArrayLike<number>} values */
export function max (values) {
  let m = -Infinity
  for (let i = 0; i < values.length; i++) if (values[i] > m) m = values[i]
  return m
}

/** @param {ArrayLike<number>} values */
export function min (values) {
  let m = Infinity
  for (let i = 0; i < values.length; i++) if (values[i] < m) m = values[i]
  return m
}

/** A number with thousands separators and `digits` decimals. @param {number} n @param {number} [digits] */
export function fmt (n, digits = 0) {
  if (!Number.isFinite(n)) return String(n)
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
}

/** Bytes as MB (10^6) with one decimal. @param {number} bytes */
export function mb (bytes) {
  return `${fmt(bytes / 1e6, 1)} MB`
}

/**
 * Parse a size such as `4194304`, `4M`, `64k`, `1.5G` (powers of 1024).
 * @param {string} text
 * @returns {number}
 */
export function parseSize (text) {
  const match = /^(\d+(?:\.\d+)?)\s*([kmg]?)i?b?$/i.exec(String(text).trim())
  if (!match) throw new Error(`Not a size: ${JSON.stringify(text)} (use e.g. 4194304, 4M, 64k)`)
  const scale = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[match[2].toLowerCase()] || 1
  return Math.round(Number(match[1]) * scale)
}

/**
 * Parse a count such as `1000000`, `1e6`, `1M`, `10m`, `3000`, `1_000_000`
 * (k/M/G are powers of 1000 here).
 * @param {string} text
 * @returns {number}
 */
export function parseCount (text) {
  const match = /^(\d+(?:\.\d+)?(?:e\d+)?)\s*([kmg]?)$/i.exec(String(text).replace(/[_,]/g, '').trim())
  const n = match ? Math.round(Number(match[1]) * ({ '': 1, k: 1e3, m: 1e6, g: 1e9 }[match[2].toLowerCase()] || 1)) : NaN
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`Not a positive count: ${JSON.stringify(text)} (use e.g. 1000000, 1e6, 1M)`)
  return n
}
