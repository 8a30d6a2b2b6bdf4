// End-to-end test of examples/browser-chat in headless Chromium: the page is
// served by the example's own server (as `npm run example:browser` does), and
// driven like a person would: sign up, create a chat, send messages, reload,
// open a second tab. It renders before its database opens, shows each form's
// errors next to that form, never shows the message box without a chat, and
// says so when IndexedDB cannot open. Saves a screenshot under
// test/artifacts/.

/* global getComputedStyle, IDBFactory */
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

/** @param {import('playwright-core').Page} page @param {string} selector */
function display (page, selector) {
  return page.$eval(selector, element => getComputedStyle(element).display)
}

/**
 * The error shown for a form: its role="alert" element, which must sit just
 * below the form's last field.
 * @param {any} t @param {import('playwright-core').Page} page @param {string} form
 */
async function formError (t, page, form) {
  await page.waitForFunction(selector => document.querySelector(`${selector} [role="alert"]`)?.textContent, form)
  const field = /** @type {{ x: number, y: number, width: number, height: number }} */ (await page.locator(`${form} input`).last().boundingBox())
  const alert = /** @type {{ x: number, y: number, width: number, height: number }} */ (await page.locator(`${form} [role="alert"]`).boundingBox())
  const gap = alert.y - (field.y + field.height)
  t.ok(gap >= 0 && gap < 80 && alert.x < field.x + field.width && field.x < alert.x + alert.width, `${form}: the error is right below its last field (${Math.round(gap)} px)`)
  t.is(await page.textContent('#status'), '', `${form}: not in the page-wide status line`)
  return page.textContent(`${form} [role="alert"]`)
}

/** @param {number} ms */
const delay = ms => new Promise(resolve => setTimeout(resolve, ms))

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
    // The bundle (and so the database) comes late: the page is there before.
    await page.route('**/levelkit.js', async route => {
      await delay(1500)
      await route.continue()
    })
    await page.goto(server.url, { waitUntil: 'commit' })
    await page.waitForSelector('#sign-up', { state: 'attached' })
    t.ok(await page.isVisible('#sign-up'), 'the page renders before the database opens')
    t.ok(await page.isDisabled('#sign-up button[type="submit"]'), 'its forms wait for the database')
    t.match(String(await page.textContent('#opening', { timeout: 5000 })), /Opening/, 'and it says the database is opening')
    await page.waitForSelector('body[data-ready="true"]')
    await page.unroute('**/levelkit.js')
    t.notOk(await page.isDisabled('#sign-up button[type="submit"]'), 'the forms work once it is open')
    t.notOk(await page.isVisible('#opening'), 'and the opening message is gone')
    t.ok(await page.isVisible('#sign-up'), 'a new visitor sees the sign-up form')

    await submit(page, '#sign-up', { username: 'bob', password: 'bob-password' })
    await page.waitForSelector('#whoami:not([hidden])')
    t.is(await page.textContent('#username'), 'bob', 'signed up and signed in as bob')
    t.notOk(await page.isVisible('#sign-up'), 'the sign-up form is gone once signed in')
    t.is(await display(page, '#send'), 'none', 'no message box while no chat is selected')
    await page.click('#sign-out')
    await page.waitForSelector('#sign-up')

    await submit(page, '#sign-in', { username: 'bob', password: 'not-bob-password' })
    t.is(await formError(t, page, '#sign-in'), 'Wrong username or password', 'a wrong password is said next to the sign-in form')
    await submit(page, '#sign-up', { username: 'bob', password: 'other' })
    t.match(String(await formError(t, page, '#sign-up')), /taken/, 'a taken username next to the sign-up form')
    t.is(await page.textContent('#sign-in [role="alert"]'), '', 'and the sign-in error is not left standing elsewhere')

    await submit(page, '#sign-up', { username: 'alice', password: 'alice-password' })
    await page.waitForFunction(() => document.querySelector('#username')?.textContent === 'alice')
    await submit(page, '#new-chat', { name: 'Nobody', members: 'carol' })
    t.is(await formError(t, page, '#new-chat'), 'No user named carol', 'an unknown member next to the new-chat form')
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
    t.is(await page.textContent('#new-chat [role="alert"]'), '', 'a form\'s error is gone once it succeeds')

    mkdirSync(artifacts, { recursive: true })
    const file = join(artifacts, 'browser-chat.png')
    await page.screenshot({ path: file, fullPage: true })
    t.pass(`screenshot saved to ${file}`)

    // Another user on this browser: nothing of alice's chat is left on screen.
    await other.click('#sign-out')
    await other.waitForSelector('#sign-in')
    await submit(other, '#sign-in', { username: 'bob', password: 'bob-password' })
    await other.waitForFunction(() => document.querySelector('#username')?.textContent === 'bob')
    t.is(await display(other, '#send'), 'none', 'after signing out and in again: no message box')
    t.is(await other.$$eval('#messages li', items => items.length), 0, 'and no message of the chat open before')

    // A whisper from bob to alice: the first tab still shows alice's view.
    await other.click('#chats button')
    await other.waitForFunction(() => document.querySelectorAll('#messages li').length === 3)
    await submit(other, '#send', { to: 'alice', text: 'psst, alice' })
    await page.waitForFunction(() => document.querySelectorAll('#messages li').length === 4)
    t.same(await page.$eval('#messages li:last-child', item => [item.className, item.querySelector('.sender')?.textContent, item.querySelector('.to')?.textContent, item.querySelector('.text')?.textContent]),
      ['whisper', 'bob', 'whispers to alice', 'psst, alice'], 'a whisper is shown as one, to whom, live')
    await submit(other, '#send', { to: 'carol', text: 'to nobody' })
    t.is(await formError(t, other, '#send'), 'No user named carol', 'a whisper to an unknown user is refused next to the message box')
    t.same(errors, [], 'no uncaught error in the page')
  } finally {
    await browser.close()
    server.stop()
  }
})

test('browser chat example: a clear message when IndexedDB cannot open', { timeout: 60000 }, async t => {
  const server = /** @type {{ url: string, stop: () => void }} */ (await startServer())
  const browser = await launchChromium()
  try {
    const page = await browser.newPage()
    // As when storage is blocked for the site.
    await page.addInitScript(() => {
      IDBFactory.prototype.open = () => { throw new DOMException('The user denied permission to access the database.', 'SecurityError') }
    })
    await page.goto(server.url)
    await page.waitForSelector('body[data-ready="false"]', { timeout: 10000 })
    t.match(String(await page.textContent('#opening')), /could not open.*IndexedDB.*denied permission/s, 'the page says the database could not open, and why')
    t.is(await page.getAttribute('#opening', 'role'), 'alert', 'as an alert')
    t.ok(await page.isDisabled('#sign-up button[type="submit"]'), 'and its forms stay disabled')
  } finally {
    await browser.close()
    server.stop()
  }
})
