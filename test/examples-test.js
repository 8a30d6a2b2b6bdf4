import test from 'tape'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runScript } from './util/worker.js'

/** @param {string} script @param {string[]} args @returns {Promise<{ code: number, stdout: string, stderr: string }>} */
function run (script, args) {
  return runScript(fileURLToPath(new URL(`../examples/${script}`, import.meta.url)), args)
}

test('the chat demo runs on LevelDB, twice on the same data, and in memory', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-demo-'))
  try {
    const first = await run('chat-demo.js', ['--location', dir])
    t.is(first.code, 0, `first run exits 0 ${first.stderr}`)
    t.match(first.stdout, /created user alice/)
    t.match(first.stdout, /a second "alice" is refused: LEVELKIT_UNIQUE/)
    t.match(first.stdout, /no problems/)
    const second = await run('chat-demo.js', ['--location', dir])
    t.is(second.code, 0, `second run exits 0 ${second.stderr}`)
    t.match(second.stdout, /found user {3}alice/, 'the second run finds the users')
    t.doesNotMatch(second.stdout, /created chat/, 'and the chats')
    t.match(second.stdout, /received 2 message\(s\) as they were committed: ids 4, 6/, 'message ids continue')
    t.match(second.stdout, /no problems/)
    const memory = await run('chat-demo.js', ['--memory'])
    t.is(memory.code, 0)
    t.match(memory.stdout, /on memory/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('the quick start runs as the README shows it', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-quick-'))
  try {
    for (const round of [1, 2]) {
      const result = await run('quick-start.js', ['--location', dir])
      t.is(result.code, 0, `run ${round} exits 0 ${result.stderr}`)
      t.match(result.stdout, /users in their thirties: ann \(31, Oslo\), bob \(35, Rome\)/)
      t.match(result.stdout, /check: ok/)
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
