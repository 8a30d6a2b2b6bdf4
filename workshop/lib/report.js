// Human-readable output: check lists with ✓/✗ and expected-vs-actual diffs.
// Colour only when the stream is a terminal (and NO_COLOR is not set).
import { inspect, styleText } from 'node:util'
import { diffLines } from 'diff'

/**
 * @param {NodeJS.WriteStream | { isTTY?: boolean }} stream
 */
export function colours (stream) {
  const enabled = !process.env.NO_COLOR && (Boolean(process.env.FORCE_COLOR) || Boolean(stream && stream.isTTY))
  const style = (/** @type {Parameters<typeof styleText>[0]} */ format) => (/** @type {string} */ text) => enabled ? styleText(format, text) : text
  return {
    enabled,
    green: style('green'),
    red: style('red'),
    dim: style('dim'),
    bold: style('bold'),
    yellow: style('yellow'),
    cyan: style('cyan')
  }
}

/**
 * A stable, multi-line rendering of any value (undefined stays visible).
 * @param {any} value
 * @param {{ maxArrayLength?: number }} [options] shorter for `run` overviews
 */
export function show (value, { maxArrayLength = 200 } = {}) {
  return inspect(value, { depth: 8, sorted: true, breakLength: 72, maxArrayLength, maxStringLength: 400, colors: false, compact: 3 })
}

/**
 * A line diff of expected vs actual: "- expected" lines and "+ actual" lines,
 * with unchanged context shortened.
 * @param {any} expected
 * @param {any} actual
 * @param {ReturnType<typeof colours>} c
 */
export function formatDiff (expected, actual, c) {
  const parts = diffLines(show(expected) + '\n', show(actual) + '\n')
  const lines = []
  for (const part of parts) {
    const text = part.value.replace(/\n$/, '').split('\n')
    if (part.added) lines.push(...text.map(l => c.green('+ ' + l)))
    else if (part.removed) lines.push(...text.map(l => c.red('- ' + l)))
    else if (text.length > 6) lines.push(...text.slice(0, 2).map(l => '  ' + l), c.dim(`  ... ${text.length - 4} unchanged lines`), ...text.slice(-2).map(l => '  ' + l))
    else lines.push(...text.map(l => '  ' + l))
  }
  return [c.red('- expected') + '  ' + c.green('+ actual'), ...lines].join('\n')
}

/**
 * @param {Awaited<ReturnType<typeof import('./harness.js').verifyFile>>} result
 * @param {ReturnType<typeof colours>} c
 */
export function formatVerify (result, c) {
  const out = []
  out.push(c.bold(`Verifying ${result.file}`) + c.dim(` (exercise ${result.number}: ${result.exercise}, seed ${result.seed}; replay with --seed ${result.seed})`))
  out.push('')
  if (result.error) {
    out.push(c.red(`✗ your module did not run to the end (${result.error.stage})`))
    out.push(indent(result.error.message, 4))
    if (result.error.stack && result.error.stage !== 'exports') out.push(c.dim(indent(shortStack(result.error.stack), 4)))
    out.push('')
  }
  for (const check of result.checks) {
    const mark = check.ok ? c.green('✓') : c.red('✗')
    out.push(`${mark} ${check.id} ${c.dim(`[${check.kind}]`)} ${check.title}`)
    if (!check.ok && !check.skipped) {
      if (check.message) out.push(indent(check.message, 4))
      if ('expected' in check || 'actual' in check) out.push(indent(formatDiff(check.expected, check.actual, c), 4))
    }
  }
  if (result.output && result.output.trim() && !result.passed) {
    out.push('', c.dim('Your program printed:'), indent(result.output.trim(), 4))
  }
  const failed = result.checks.filter(ch => !ch.ok).length
  out.push('')
  out.push(result.passed
    ? c.green(c.bold(`PASS: all ${result.checks.length} checks passed.`))
    : c.red(c.bold(`FAIL: ${failed} of ${result.checks.length} checks failed.`)))
  return out.join('\n')
}

/** @param {string} text @param {number} n */
export function indent (text, n) {
  const pad = ' '.repeat(n)
  return String(text).split('\n').map(l => pad + l).join('\n')
}

/** @param {string} stack */
function shortStack (stack) {
  return stack.split('\n').filter(l => !l.includes('/workshop/lib/') && !l.includes('node:internal')).slice(0, 6).join('\n')
}
