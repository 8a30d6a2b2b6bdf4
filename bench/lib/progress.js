// A one-line progress bar on stderr, drawn only when stderr is a terminal
// (never in CI logs, pipes or tests). Redrawn at most every 100 ms, so it
// costs nothing measurable inside a write loop that calls `update()` every
// 1000 writes.

import { performance } from 'node:perf_hooks'

export class Progress {
  /**
   * @param {string} label
   * @param {number} total
   * @param {{ stream?: NodeJS.WriteStream, enabled?: boolean }} [options]
   */
  constructor (label, total, options = {}) {
    this.stream = options.stream || process.stderr
    this.enabled = options.enabled ?? !!this.stream.isTTY
    this.label = label
    this.total = total
    this.start = performance.now()
    this.last = 0
  }

  /** @param {number} done */
  update (done) {
    if (!this.enabled) return
    const now = performance.now()
    if (now - this.last < 100 && done < this.total) return
    this.last = now
    const width = Math.max(10, Math.min(40, (this.stream.columns || 80) - this.label.length - 40))
    const frac = Math.min(1, done / this.total)
    const filled = Math.round(frac * width)
    const secs = (now - this.start) / 1000
    const rate = done / Math.max(secs, 1e-9)
    const eta = frac > 0 ? secs / frac - secs : 0
    const bar = '#'.repeat(filled) + '-'.repeat(width - filled)
    this.stream.write(`\r${this.label} [${bar}] ${(frac * 100).toFixed(0).padStart(3)}% ${Math.round(rate).toLocaleString('en-US')}/s eta ${eta.toFixed(0)}s \x1b[K`)
  }

  done () {
    if (!this.enabled) return
    this.stream.write('\r\x1b[K')
  }
}
