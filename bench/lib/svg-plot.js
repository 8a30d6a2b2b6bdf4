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

  const out = svgStart(width, height, options.title, options.subtitle)

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

/**
 * @typedef {{ name: string, values: Array<number | null>, color?: string }} BarSeries
 * @typedef {{
 *   title: string, subtitle?: string, xLabel: string,
 *   categories: string[], series: BarSeries[], xScale?: 'linear' | 'log',
 *   width?: number, barHeight?: number, labels?: Array<Array<string | null>>
 * }} BarOptions
 */

/**
 * A horizontal grouped bar chart: one group per category, one bar per series
 * in each group, the value written at the end of each bar. A null value
 * draws no bar ("n/a"). Linear or log x. `labels[s][c]`, when given,
 * replaces the printed value of series s in category c.
 * @param {BarOptions} options
 * @returns {string} the SVG document
 */
export function barSvg (options) {
  const width = options.width || 1040
  const barH = options.barHeight || 16
  const nSeries = options.series.length
  const groupH = barH * nSeries + 14
  const labelW = 14 + 6.6 * Math.max(6, ...options.categories.map(c => c.length))
  const legendW = 30 + 6.6 * Math.max(4, ...options.series.map(s => s.name.length))
  const margin = { left: labelW, right: legendW + 90, top: options.subtitle ? 62 : 44, bottom: 52 }
  const plotW = width - margin.left - margin.right
  const plotH = groupH * options.categories.length
  const height = margin.top + plotH + margin.bottom
  const series = options.series.map((s, k) => ({ ...s, color: s.color || PALETTE[k % PALETTE.length] }))

  const { ticks, log, at } = valueAxis(series.flatMap(s => s.values), options.xScale === 'log' ? 'log' : 'linear', 8)
  const sx = (/** @type {number} */ v) => margin.left + at(v) * plotW

  const out = svgStart(width, height, options.title, options.subtitle)
  out.push('<g stroke="#e5e5e5" stroke-width="1">')
  for (const t of ticks) out.push(`<line x1="${r(sx(t))}" y1="${margin.top}" x2="${r(sx(t))}" y2="${margin.top + plotH}"/>`)
  out.push('</g>')
  out.push(`<rect x="${margin.left}" y="${margin.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333"/>`)
  out.push('<g fill="#333">')
  for (const t of ticks) out.push(`<text x="${r(sx(t))}" y="${margin.top + plotH + 16}" text-anchor="middle">${tickLabel(t)}</text>`)
  out.push('</g>')
  out.push(`<text x="${margin.left + plotW / 2}" y="${height - 12}" text-anchor="middle">${esc(options.xLabel + (log ? ' (log scale)' : ''))}</text>`)

  options.categories.forEach((category, c) => {
    const top = margin.top + c * groupH + 7
    out.push(`<text x="${margin.left - 8}" y="${r(top + barH * nSeries / 2 + 4)}" text-anchor="end">${esc(category)}</text>`)
    series.forEach((s, k) => {
      const v = s.values[c]
      const y = top + k * barH
      const label = options.labels?.[k]?.[c] ?? (v === null || v === undefined ? 'n/a' : Number(v.toPrecision(3)).toLocaleString('en-US'))
      if (v === null || v === undefined || !Number.isFinite(v)) {
        out.push(`<text x="${margin.left + 4}" y="${r(y + barH - 4)}" fill="#999">${esc(label)}</text>`)
        return
      }
      const x1 = sx(v)
      out.push(`<rect x="${margin.left}" y="${r(y + 1)}" width="${r(Math.max(1, x1 - margin.left))}" height="${barH - 2}" fill="${s.color}" fill-opacity="0.85"/>`)
      out.push(`<text x="${r(x1 + 4)}" y="${r(y + barH - 4)}" fill="#333" font-size="11">${esc(label)}</text>`)
    })
  })

  const legendX = margin.left + plotW + 90
  out.push(`<rect x="${legendX}" y="${margin.top}" width="${r(legendW)}" height="${8 + 16 * series.length}" fill="#fff" stroke="#bbb"/>`)
  series.forEach((s, k) => {
    const y = margin.top + 16 + 16 * k
    out.push(`<rect x="${legendX + 8}" y="${y - 9}" width="10" height="10" fill="${s.color}"/><text x="${legendX + 22}" y="${y}">${esc(s.name)}</text>`)
  })
  out.push('</svg>')
  return out.join('\n') + '\n'
}

/**
 * @typedef {{
 *   title: string, subtitle?: string, yLabel: string,
 *   categories: string[],
 *   series: Array<{ name: string, values: number[], color?: string }>,
 *   notes?: string[], yScale?: 'linear' | 'log' | 'auto',
 *   width?: number, height?: number
 * }} BarChartOptions
 */

/**
 * A grouped bar chart: one group of bars per category (one bar per series),
 * with the value on each bar and an optional note under each group (e.g. a
 * ratio). Linear or log y (auto: log when the values span more than 30×).
 * @param {BarChartOptions} options
 * @returns {string} the SVG document
 */
export function barChartSvg (options) {
  const { categories, series } = options
  const width = options.width || Math.max(720, 110 + categories.length * (34 + 26 * series.length) + 170)
  const height = options.height || 600
  const legendW = 30 + 6.6 * Math.max(4, ...series.map(s => s.name.length))
  const margin = { left: 86, right: legendW + 24, top: options.subtitle ? 62 : 44, bottom: 120 }
  const plotW = width - margin.left - margin.right
  const plotH = height - margin.top - margin.bottom
  const colors = series.map((s, k) => s.color || PALETTE[(k + 1) % PALETTE.length])

  const { ticks: yTicks, log, at } = valueAxis(series.flatMap(s => s.values), options.yScale || 'auto', 6)
  const sy = (/** @type {number} */ y) => margin.top + plotH - at(y) * plotH
  const groupW = plotW / Math.max(1, categories.length)
  const barW = Math.min(34, (groupW * 0.8) / Math.max(1, series.length))

  const out = svgStart(width, height, options.title, options.subtitle)
  out.push('<g stroke="#e5e5e5" stroke-width="1">')
  for (const t of yTicks) out.push(`<line x1="${margin.left}" y1="${r(sy(t))}" x2="${margin.left + plotW}" y2="${r(sy(t))}"/>`)
  out.push('</g>')
  out.push('<g fill="#333">')
  for (const t of yTicks) out.push(`<text x="${margin.left - 6}" y="${r(sy(t)) + 4}" text-anchor="end">${compact(t)}</text>`)
  out.push('</g>')
  out.push(`<text transform="translate(16 ${margin.top + plotH / 2}) rotate(-90)" text-anchor="middle">${esc(options.yLabel + (log ? ' (log scale)' : ''))}</text>`)

  categories.forEach((category, c) => {
    const x0 = margin.left + c * groupW + (groupW - barW * series.length) / 2
    series.forEach((s, k) => {
      const v = s.values[c]
      if (!(v > 0)) return
      const x = x0 + k * barW
      const y = sy(v)
      out.push(`<rect class="bar" x="${r(x)}" y="${r(y)}" width="${r(barW - 2)}" height="${r(margin.top + plotH - y)}" fill="${colors[k]}"><title>${esc(`${s.name}, ${category}: ${compact(v)}`)}</title></rect>`)
      out.push(`<text x="${r(x + (barW - 2) / 2)}" y="${r(y - 3)}" text-anchor="middle" font-size="9" fill="#333">${compact(v)}</text>`)
    })
    const cx = margin.left + (c + 0.5) * groupW
    out.push(`<text transform="translate(${r(cx)} ${margin.top + plotH + 12}) rotate(30)" font-size="11">${esc(category)}</text>`)
    if (options.notes && options.notes[c]) {
      out.push(`<text x="${r(cx)}" y="${margin.top + 14}" text-anchor="middle" font-size="11" font-weight="bold" fill="#333">${esc(options.notes[c])}</text>`)
    }
  })
  out.push(`<rect x="${margin.left}" y="${margin.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#333"/>`)
  if (options.notes && options.notesLabel) {
    out.push(`<text x="${margin.left + plotW + 12}" y="${margin.top + 14 + 16 * series.length + 20}" font-size="11" fill="#333">${esc(options.notesLabel)}</text>`)
  }

  const legendX = margin.left + plotW + 12
  const legendY = margin.top
  out.push(`<rect x="${legendX}" y="${legendY}" width="${r(legendW)}" height="${8 + 16 * series.length}" fill="#fff" stroke="#bbb"/>`)
  series.forEach((s, k) => {
    const y = legendY + 16 + 16 * k
    out.push(`<rect x="${legendX + 8}" y="${y - 9}" width="10" height="10" fill="${colors[k]}"/><text x="${legendX + 24}" y="${y}">${esc(s.name)}</text>`)
  })
  out.push('</svg>')
  return out.join('\n') + '\n'
}

/** 1234 -> 1.2k, 123456 -> 123k. @param {number} v */
function compact (v) {
  if (v >= 1e6) return `${Number((v / 1e6).toPrecision(3))}M`
  if (v >= 1e3) return `${Number((v / 1e3).toPrecision(3))}k`
  return String(Number(v.toPrecision(3)))
}

/**
 * The value axis of a bar chart: its ticks, and where a value falls on it
 * (0 at the start, 1 at the end). Log when asked, or for 'auto' when the
 * positive values span more than 30×; linear from 0 otherwise.
 * @param {Array<number | null>} values nulls and non-finite values are left out
 * @param {'log' | 'linear' | 'auto'} scale
 * @param {number} count about how many ticks on a linear axis
 */
function valueAxis (values, scale, count) {
  let min = Infinity
  let max = 0
  for (const v of values) {
    if (v === null || !Number.isFinite(v)) continue
    if (v > max) max = v
    if (v > 0 && v < min) min = v
  }
  if (max <= 0) max = 1
  if (!Number.isFinite(min)) min = 1
  const log = scale === 'log' || (scale === 'auto' && max / min > 30)
  if (log) {
    const lo = 10 ** Math.floor(Math.log10(min))
    let hi = 10 ** Math.ceil(Math.log10(max))
    if (hi === lo) hi *= 10
    const ticks = []
    for (let d = lo; d <= hi * 1.0001; d *= 10) ticks.push(d)
    return { ticks, log, at: (/** @type {number} */ v) => Math.log10(Math.max(v, lo) / lo) / Math.log10(hi / lo) }
  }
  const ticks = niceTicks(0, max, count)
  const hi = ticks[ticks.length - 1]
  return { ticks, log, at: (/** @type {number} */ v) => v / hi }
}

/**
 * The opening of a chart: the svg element, a white background, the title
 * and the subtitle, as lines of SVG.
 * @param {number} width @param {number} height @param {string} title @param {string} [subtitle]
 * @returns {string[]}
 */
function svgStart (width, height, title, subtitle) {
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(title)}</text>`
  ]
  if (subtitle) out.push(`<text x="${width / 2}" y="42" text-anchor="middle" fill="#444">${esc(subtitle)}</text>`)
  return out
}
