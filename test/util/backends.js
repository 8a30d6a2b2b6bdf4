// Memory and LevelDB, each as a factory of new open databases, for the
// tests that run the same cases on both and reopen what they made.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { open } from '../../index.js'

/**
 * @param {string} prefix the temporary directories' name prefix (LevelDB)
 * @returns {Array<{ name: string, base: () => Promise<import('../../lib/database.js').Database>, done: () => void }>}
 */
export function memoryAndLevelDB (prefix) {
  /** @type {string[]} */
  const dirs = []
  return [
    { name: 'memory', base: () => open({ backend: 'memory' }), done: () => {} },
    {
      name: 'leveldb',
      base () {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
        dirs.push(dir)
        return open({ backend: 'leveldb', location: path.join(dir, 'db') })
      },
      done () {
        for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
      }
    }
  ]
}
