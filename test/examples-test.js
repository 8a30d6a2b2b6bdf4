import test from 'tape'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runScript } from './util/worker.js'

/**
 * @param {string} script @param {string[]} args @param {{ cwd?: string, execArgv?: string[] }} [options]
 * @returns {Promise<{ code: number, stdout: string, stderr: string }>}
 */
function run (script, args, options) {
  return runScript(fileURLToPath(new URL(`../examples/${script}`, import.meta.url)), args, options)
}

const slowWatch = ['--import', fileURLToPath(new URL('./fixtures/slow-watch.js', import.meta.url))]

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

test('the demo\'s live watch reports every message it sent, also when the watch delivers late', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-demo-'))
  try {
    for (const ids of ['1, 3', '4, 6']) {
      const result = await run('chat-demo.js', ['--location', dir], { execArgv: slowWatch })
      t.is(result.code, 0, `exits 0 ${result.stderr}`)
      t.match(result.stdout, new RegExp(`received 2 message\\(s\\) as they were committed: ids ${ids}\\n`), `ids ${ids}, though each arrived 100 ms late`)
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('the demo and the quick start keep their data apart by default, and refuse each other\'s', async t => {
  const cwd = mkdtempSync(join(tmpdir(), 'levelkit-examples-'))
  try {
    // As a newcomer runs them: npm run demo, npm run example:quick-start, again.
    for (const round of [1, 2]) {
      const quick = await run('quick-start.js', [], { cwd })
      t.is(quick.code, 0, `round ${round}: the quick start exits 0 ${quick.stderr}`)
      t.match(quick.stdout, /check: ok/)
      const demo = await run('chat-demo.js', [], { cwd })
      t.is(demo.code, 0, `round ${round}: the demo exits 0 ${demo.stderr}`)
      t.match(demo.stdout, round === 1 ? /created user alice/ : /found user {3}alice/)
      t.match(demo.stdout, /no problems/)
    }
    t.ok(existsSync(join(cwd, 'data', 'chat-demo')) && existsSync(join(cwd, 'data', 'quick-start')), 'in ./data/chat-demo and ./data/quick-start')

    // Told to use the other's data, each refuses it and leaves it as it was.
    const quickData = join(cwd, 'quick')
    t.is((await run('quick-start.js', ['--location', quickData])).code, 0)
    const demoThere = await run('chat-demo.js', ['--location', quickData])
    t.is(demoThere.code, 2, 'the demo on the quick start\'s data exits 2')
    t.match(demoThere.stderr, /LEVELKIT_FOREIGN_DATA/, 'with a coded error')
    t.match(demoThere.stderr, /not a ChatStore's: it holds data in chats, .*members\.fwd.*users/, 'naming what it found')
    t.doesNotMatch(demoThere.stdout, /moved data|created/, 'before repairing or writing anything')
    const quickAgain = await run('quick-start.js', ['--location', quickData])
    t.is(quickAgain.code, 0, `the quick start still runs on its data ${quickAgain.stderr}`)
    t.match(quickAgain.stdout, /check: ok/)

    const demoData = join(cwd, 'demo')
    t.is((await run('chat-demo.js', ['--location', demoData])).code, 0)
    const quickThere = await run('quick-start.js', ['--location', demoData])
    t.is(quickThere.code, 2, 'the quick start on the demo\'s data exits 2')
    t.match(quickThere.stderr, /its data is not this program's/, 'saying so')
    const demoAgain = await run('chat-demo.js', ['--location', demoData])
    t.is(demoAgain.code, 0, `the demo still runs on its data ${demoAgain.stderr}`)
    t.match(demoAgain.stdout, /found user {3}alice/)
    t.match(demoAgain.stdout, /no problems/)
  } finally {
    rmSync(cwd, { recursive: true, force: true })
  }
})
