// The interactive menu in a real terminal: tmux gives it a pseudo-terminal;
// we press keys with send-keys and read the screen with capture-pane.
import test from 'tape'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, delimiter } from 'node:path'
import { fileURLToPath } from 'node:url'

const bin = fileURLToPath(new URL('../bin/levelkit-workshop.js', import.meta.url))
const tmux = [...(process.env.PATH || '').split(delimiter).map(dir => join(dir, 'tmux')), '/usr/bin/tmux'].find(existsSync)
const sleep = (ms) => new Promise(resolve => setTimeout(resolve, ms))
const quote = (s) => `'${String(s).replace(/'/g, "'\\''")}'`

test('workshop menu: select an exercise with the arrow keys under a real terminal (tmux)', async t => {
  if (!tmux) {
    // Not a skip: without a terminal test the menu is untested. The project's
    // set-up script (scripts/install-system-packages.sh) installs tmux.
    t.fail('tmux is not installed: install it (apt-get install tmux) to test the workshop menu under a pseudo-terminal')
    return
  }
  const config = mkdtempSync(join(tmpdir(), 'levelkit-workshop-menu-'))
  // A private tmux server: never touches a user's sessions.
  const socket = `levelkit-workshop-test-${process.pid}`
  const run = (...args) => execFileSync(tmux, ['-L', socket, '-f', '/dev/null', ...args], { encoding: 'utf8' })
  const screen = () => run('capture-pane', '-p', '-J', '-t', 'menu', '-S', '-200')
  async function waitFor (pattern, what) {
    const deadline = Date.now() + 10000
    let text = ''
    while (Date.now() < deadline) {
      text = screen()
      if (pattern.test(text)) return text
      await sleep(100)
    }
    t.fail(`timed out waiting for ${what}; the screen was:\n${text}`)
    return text
  }
  try {
    const command = `env XDG_CONFIG_HOME=${quote(config)} ${quote(process.execPath)} ${quote(bin)}; echo "[exit $?]"; sleep 60`
    run('new-session', '-d', '-x', '120', '-y', '40', '-s', 'menu', command)

    const menu = await waitFor(/Choose an exercise[\s\S]*7\. A secondary index[\s\S]*Exit/, 'the menu')
    t.match(menu, /1\. Hello, Level/, 'lists the exercises')

    run('send-keys', '-t', 'menu', 'Down')
    await sleep(200)
    run('send-keys', '-t', 'menu', 'Enter')
    const printed = await waitFor(/\[exit \d+\]/, 'the program to finish')
    t.match(printed, /Exercise 2 of \d+: open_and_close/, 'the second exercise was selected')
    t.match(printed, /Open and close/, 'and its problem printed')
    t.match(printed, /readValue \(dir, key\)/, 'the problem text, rendered')
    t.match(printed, /\[exit 0\]/, 'exit 0')
    const progress = JSON.parse(readFileSync(join(config, 'levelkit-workshop', 'progress.json'), 'utf8'))
    t.is(progress.current, 'open_and_close', 'the selection is saved')
  } finally {
    try { run('kill-server') } catch {}
    rmSync(config, { recursive: true, force: true })
  }
})
