// A small, dependency-free SVG scatter plot: several series overlaid, with
// axes, ticks, grid, axis labels, a legend and a title. Linear or log y.
//
// Points are drawn as zero-length round-capped path segments ("M x y h0"), a
// dozen bytes per point, so a plot of a few series of thousands of points
// stays small. A series with more than `maxPoints` points is thinned by
// keeping the lowest and the highest point of each bucket, so spikes survive.

const PALETTE = ['#d62728', '#1f77b4', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f', '#bcbd22']

/**
 * @typedef {{ name: string, x: ArrayLike<number>, y: ArrayLike<number>, color?: string }} Series
 * @typedef {{
 *   title: string, subtitle?: string, xLabel: string, yLabel: string,
 *   series: Series[], yScale?: 'linear' | 'log' | 'auto',
 *   width?: number, height?: number, maxPoints?: number, pointSize?: number
 * }} PlotOptions
 */

/**
 * @param {PlotOptions} options
 * @returns {string} the SVG document
 */
export function scatterSvg (options) {
  const width = options.width || 1040
  const height = options.height || 560
  const maxPoints = options.maxPoints || 4000
  const pointSize = options.pointSize || 2.6
  const legendW = 30 + 6.6 * Math.max(4, ...options.series.map(s => s.name.length))
  const margin = { left: 78, right: legendW + 20, top: options.subtitle ? 62 : 44, bottom: 52 }
  const plotW = width - margin.left - margin.right
  const plotH = height - margin.top - margin.bottom

  const series = options.series.map((s, k) => ({ ...thin(s, maxPoints), name: s.name, color: s.color || PALETTE[k % PALETTE.length] }))
  let xMax = 0
  let yMin = Infinity
  let yMax = -Infinity
  for (const s of series) {
    for (let i = 0; i < s.x.length; i++) {
      if (s.x[i] > xMax) xMax = s.x[i]
      if (s.y[i] > 0 && s.y[i] < yMin) yMin = s.y[i]
      if (s.y[i] > yMax) yMax = s.y[i]
    }
  }
  if (!Number.isFinite(yMin)) { yMin = 1; yMax = 10 }
  if (xMax <= 0) xMax = 1
  const log = options.yScale === 'log' || (options.yScale !== 'linear' && yMax / yMin > 30)

  const xTicks = niceTicks(0, xMax, 8)
  const xHi = xTicks[xTicks.length - 1]
  let yTicks, yLo, yHi, yMinor
  if (log) {
    yLo = 10 ** Math.floor(Math.log10(yMin))
    yHi = 10 ** Math.ceil(Math.log10(yMax))
    if (yHi === yLo) yHi *= 10
    yTicks = []
    yMinor = []
    const decades = Math.round(Math.log10(yHi / yLo))
    for (let d = yLo; d <= yHi * 1.0001; d *= 10) {
      yTicks.push(d)
      if (d < yHi * 0.9999) for (const m of decades <= 3 ? [2, 5] : []) yMinor.push(d * m)
    }
  } else {
    yTicks = niceTicks(0, yMax, 6)
    yLo = 0
    yHi = yTicks[yTicks.length - 1]
    yMinor = []
  }

  const sx = (/** @type {number} */ x) => margin.left + (x / xHi) * plotW
  const sy = log
    ? (/** @type {number} */ y) => margin.top + plotH - (Math.log10(Math.max(y, yLo) / yLo) / Math.log10(yHi / yLo)) * plotH
    : (/** @type {number} */ y) => margin.top + plotH - ((y - yLo) / (yHi - yLo)) * plotH

  const out = []
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`)
  out.push(`<rect width="${width}" height="${height}" fill="#fff"/>`)
  out.push(`<text x="${width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(options.title)}</text>`)
  if (options.subtitle) out.push(`<text x="${width / 2}" y="42" text-anchor="middle" fill="#444">${esc(options.subtitle)}</text>`)

  // Grid and ticks.
  out.push('<g stroke="#e5e5e5" stroke-width="1">')
  for (const t of xTicks) out.push(`<line x1="${r(sx(t))}" y1="${margin.top}" x2="${r(sx(t))}" y2="${margin.top + plotH}"/>`)
  for (const t of yTicks) out.push(`<line x1="${margin.left}" y1="${r(sy(t))}" x2="${margin.left + plotW}" y2="${r(sy(t))}"/>`)
  out.push('</g><g stroke="#f2f2f2" stroke-width="1">')
  for (const t of yMinor) out.push(`<line x1="${margin.left}" y1="${r(sy(t))}" x2="${margin.left + plotW}" y2="${r(sy(t))}"/>`)
  out.push('</g>')
  out.push(`<rect x="${margin.left}" y="${margin.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333"/>`)
  out.push('<g fill="#333">')
  for (const t of xTicks) out.push(`<text x="${r(sx(t))}" y="${margin.top + plotH + 16}" text-anchor="middle">${tickLabel(t)}</text>`)
  for (const t of yTicks) out.push(`<text x="${margin.left - 6}" y="${r(sy(t)) + 4}" text-anchor="end">${tickLabel(t)}</text>`)
  for (const t of yMinor) out.push(`<text x="${margin.left - 6}" y="${r(sy(t)) + 4}" text-anchor="end" fill="#999" font-size="10">${tickLabel(t)}</text>`)
  out.push('</g>')
  out.push(`<text x="${margin.left + plotW / 2}" y="${height - 12}" text-anchor="middle">${esc(options.xLabel)}</text>`)
  out.push(`<text transform="translate(16 ${margin.top + plotH / 2}) rotate(-90)" text-anchor="middle">${esc(options.yLabel + (log ? ' (log scale)' : ''))}</text>`)

  // Points, clipped to the plot area.
  out.push(`<clipPath id="plot"><rect x="${margin.left}" y="${margin.top}" width="${plotW}" height="${plotH}"/></clipPath>`)
  out.push('<g clip-path="url(#plot)" fill="none" stroke-linecap="round">')
  for (const s of series) {
    let d = ''
    // Whole pixels: plenty for points, and a third smaller.
    for (let i = 0; i < s.x.length; i++) d += `M${Math.round(sx(s.x[i]))} ${Math.round(sy(s.y[i]))}h0`
    out.push(`<path stroke="${s.color}" stroke-opacity="0.75" stroke-width="${pointSize}" d="${d}"/>`)
  }
  out.push('</g>')

  // Legend, right of the plot.
  const legendX = margin.left + plotW + 12
  const legendY = margin.top
  out.push(`<rect x="${legendX}" y="${legendY}" width="${r(legendW)}" height="${8 + 16 * series.length}" fill="#fff" stroke="#bbb"/>`)
  series.forEach((s, k) => {
    const y = legendY + 16 + 16 * k
    out.push(`<circle cx="${legendX + 12}" cy="${y - 4}" r="4" fill="${s.color}"/><text x="${legendX + 22}" y="${y}">${esc(s.name)}</text>`)
  })
  out.push('</svg>')
  return out.join('\n') + '\n'
}

/**
 * Keep at most about `maxPoints` points: per bucket of consecutive points,
 * the lowest and the highest (in x order).
 * @param {Series} s @param {number} maxPoints
 */
function thin (s, maxPoints) {
  const n = s.x.length
  if (n <= maxPoints) return { x: s.x, y: s.y }
  const buckets = Math.floor(maxPoints / 2)
  const x = []
  const y = []
  for (let b = 0; b < buckets; b++) {
    const from = Math.floor(b * n / buckets)
    const to = Math.floor((b + 1) * n / buckets)
    let lo = from
    let hi = from
    for (let i = from; i < to; i++) {
      if (s.y[i] < s.y[lo]) lo = i
      if (s.y[i] > s.y[hi]) hi = i
    }
    for (const i of lo === hi ? [lo] : lo < hi ? [lo, hi] : [hi, lo]) {
      x.push(s.x[i])
      y.push(s.y[i])
    }
  }
  return { x, y }
}

/** About `count` round ticks from lo to at least hi. @param {number} lo @param {number} hi @param {number} count */
export function niceTicks (lo, hi, count) {
  const span = hi - lo || 1
  const raw = span / count
  const mag = 10 ** Math.floor(Math.log10(raw))
  const step = [1, 2, 2.5, 5, 10].map(m => m * mag).find(s => s >= raw) || 10 * mag
  const ticks = []
  for (let t = Math.floor(lo / step) * step; t < hi + step * 0.999; t += step) ticks.push(Number(t.toPrecision(12)))
  return ticks
}

/** @param {number} t */
function tickLabel (t) {
  if (t === 0) return '0'
  const abs = Math.abs(t)
  if (abs >= 1e6 || abs < 1e-5) return t.toExponential(0)
  return String(Number(t.toPrecision(6)))
}

/** @param {number} v */
function r (v) {
  return Math.round(v * 10) / 10
}

/** @param {string} text */
function esc (text) {
  return String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
}
