// Wrong-solution fixtures declare, in a header comment, which checks they must
// fail: `// expect-fail: check-id[, other-id]`. Every other check must pass.
import { readFileSync } from 'node:fs'

/**
 * @param {string} file
 * @returns {string[]} the check ids the fixture must fail, sorted
 */
export function expectedFailures (file) {
  const text = readFileSync(file, 'utf8')
  const match = /^\/\/\s*expect-fail:\s*(.+)$/m.exec(text)
  if (!match) throw new Error(`${file}: no "// expect-fail: <check-id>" header`)
  return match[1].split(',').map(s => s.trim()).filter(Boolean).sort()
}
