// Memory and LevelDB, each as a factory of new open databases, for the
// tests that run the same cases on both and reopen what they made. The
// LevelDB directories are removed once tape has run every test.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { open } from '../../index.js'

/**
 * @param {string} prefix the temporary directories' name prefix (LevelDB)
 * @param {{ onFinish (fn: () => void): void }} test tape's test, to remove them at the end
 * @returns {Array<{ name: string, base: () => Promise<import('../../lib/database.js').Database> }>}
 */
export function memoryAndLevelDB (prefix, test) {
  /** @type {string[]} */
  const dirs = []
  test.onFinish(() => {
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
  })
  return [
    { name: 'memory', base: () => open({ backend: 'memory' }) },
    {
      name: 'leveldb',
      base () {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
        dirs.push(dir)
        return open({ backend: 'leveldb', location: path.join(dir, 'db') })
      }
    }
  ]
}
