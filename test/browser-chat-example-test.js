// End-to-end test of examples/browser-chat in headless Chromium: the page is
// served by the example's own server (as `npm run example:browser` does), and
// driven like a person would: sign up, create a chat, send messages, reload,
// open a second tab. Saves a screenshot under test/artifacts/.

import test from 'tape'
import { spawn } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { launchChromium, root } from './util/browser.js'

const artifacts = join(root, 'test', 'artifacts')

/** Start the example's server on a free port; resolves with its URL. */
function startServer () {
  const child = spawn(process.execPath, [join(root, 'examples', 'browser-chat', 'serve.js'), '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] })
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout.on('data', chunk => {
      out += chunk
      const match = /http:\/\/localhost:\d+\//.exec(out)
      if (match) resolve({ url: match[0], stop: () => child.kill() })
    })
    child.stderr.on('data', chunk => { out += chunk })
    child.on('exit', code => reject(new Error(`serve.js exited with ${code}: ${out}`)))
  })
}

/** @param {import('playwright-core').Page} page @param {string} form @param {Record<string, string>} fields */
async function submit (page, form, fields) {
  for (const [name, value] of Object.entries(fields)) await page.fill(`${form} [name="${name}"]`, value)
  await page.click(`${form} button[type="submit"]`)
}

/** @param {import('playwright-core').Page} page */
function messageTexts (page) {
  return page.$$eval('#messages li .text', items => items.map(item => item.textContent))
}

const HOSTILE = '<img src=x onerror="window.pwned=1"> hello & <b>bye</b>'

test('browser chat example: sign up, chat, reload, second tab', { timeout: 180000 }, async t => {
  const server = /** @type {{ url: string, stop: () => void }} */ (await startServer())
  const browser = await launchChromium()
  try {
    const context = await browser.newContext({ viewport: { width: 1000, height: 700 } })
    const page = await context.newPage()
    /** @type {string[]} */
    const errors = []
    page.on('pageerror', err => errors.push(err.message))
    await page.goto(server.url)
    await page.waitForSelector('body[data-ready="true"]')
    t.ok(await page.isVisible('#sign-up'), 'a new visitor sees the sign-up form')

    await submit(page, '#sign-up', { username: 'bob', password: 'bob-password' })
    await page.waitForSelector('#whoami:not([hidden])')
    t.is(await page.textContent('#username'), 'bob', 'signed up and signed in as bob')
    t.notOk(await page.isVisible('#sign-up'), 'the sign-up form is gone once signed in')
    await page.click('#sign-out')
    await page.waitForSelector('#sign-up')

    await submit(page, '#sign-up', { username: 'alice', password: 'alice-password' })
    await page.waitForFunction(() => document.querySelector('#username')?.textContent === 'alice')
    await submit(page, '#new-chat', { name: 'Plans <i>2027</i>', members: 'bob' })
    await page.waitForSelector('#send:not([hidden])')
    t.is(await page.textContent('#chat-title'), 'Plans <i>2027</i>', 'the chat name is shown as typed')

    await submit(page, '#send', { text: HOSTILE })
    await page.waitForFunction(() => document.querySelectorAll('#messages li').length === 1)
    await submit(page, '#send', { text: 'second message' })
    await page.waitForFunction(() => document.querySelectorAll('#messages li').length === 2)
    t.same(await messageTexts(page), [HOSTILE, 'second message'], 'messages are shown in order, as typed')
    t.is(await page.$$eval('#messages img, #messages b, #chats i', nodes => nodes.length), 0, 'typed text is never parsed as HTML')
    t.is(await page.evaluate(() => /** @type {any} */ (window).pwned), undefined, 'no script from a message ran')

    await page.reload()
    await page.waitForSelector('body[data-ready="true"]')
    t.is(await page.textContent('#username'), 'alice', 'still signed in after a reload (session in IndexedDB)')
    t.notOk(await page.isVisible('#sign-in'), 'no sign-in form after a reload')
    t.same(await page.$$eval('#chats button', buttons => buttons.map(b => b.textContent)), ['Plans <i>2027</i>'], 'the chat is listed after a reload')
    await page.click('#chats button')
    await page.waitForFunction(() => document.querySelectorAll('#messages li').length === 2)
    t.same(await messageTexts(page), [HOSTILE, 'second message'], 'the messages are there after a reload')

    // A second tab of the same origin: same database, same session.
    const other = await context.newPage()
    await other.goto(server.url)
    await other.waitForSelector('body[data-ready="true"]')
    await other.click('#chats button')
    await other.waitForFunction(() => document.querySelectorAll('#messages li').length === 2)
    await submit(other, '#send', { text: 'from the second tab' })
    await page.waitForFunction(() => document.querySelectorAll('#messages li').length === 3)
    t.same(await messageTexts(page), [HOSTILE, 'second message', 'from the second tab'], 'the first tab shows what the second tab sent, live')

    mkdirSync(artifacts, { recursive: true })
    const file = join(artifacts, 'browser-chat.png')
    await page.screenshot({ path: file, fullPage: true })
    t.pass(`screenshot saved to ${file}`)
    t.same(errors, [], 'no uncaught error in the page')
  } finally {
    await browser.close()
    server.stop()
  }
})
