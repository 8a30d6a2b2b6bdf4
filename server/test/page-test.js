/// <reference lib="dom" />
// The chat page the server serves at / (server/public/: the UI of the
// local-first example on ServerChatStore), driven in headless Chromium
// against the server on a random port: three people in three browser
// contexts sign up, sign in, make a chat and chat live (each sees the others'
// messages appear without a reload); a whisper shows only to its sender and
// recipient, live and in the history; the session is the HttpOnly cookie and
// survives a reload; a watch picks up again, without gap or duplicate, after
// the server restarts. Saves a screenshot under test/artifacts/ of the
// repository.
//
// (The DOM lib is for Playwright's types and the functions run in the page.)
/* global localStorage */

import test from 'tape'
import { existsSync, mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import { buildApp } from '../lib/app.js'
import { startServer } from './util.js'

const artifacts = fileURLToPath(new URL('../../test/artifacts/', import.meta.url))
const HOSTILE = '<img src=x onerror="window.pwned=1"> hello & <b>bye</b>'

/**
 * Debian's Chromium (or $LEVELKIT_CHROMIUM), as the library's browser tests
 * launch it (test/util/browser.js): headless, no sandbox, no background
 * connections.
 */
function launchChromium () {
  const executablePath = process.env.LEVELKIT_CHROMIUM || '/usr/bin/chromium'
  if (!existsSync(executablePath)) {
    throw new Error(`Chromium is not installed at ${executablePath}: run \`bash scripts/install-system-packages.sh\` (npm test does it first), or set LEVELKIT_CHROMIUM`)
  }
  const args = [
    '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    '--disable-default-apps', '--disable-extensions', '--mute-audio'
  ]
  return chromium.launch({ executablePath, headless: true, args })
}

/** @param {import('playwright-core').Page} page @param {string} form @param {Record<string, string>} fields */
async function submit (page, form, fields) {
  for (const [name, value] of Object.entries(fields)) await page.fill(`${form} [name="${name}"]`, value)
  await page.click(`${form} button[type="submit"]`)
}

/** @param {import('playwright-core').Page} page */
function messages (page) {
  return page.$$eval('#messages li', items => items.map(item => [
    item.querySelector('.sender')?.textContent,
    item.querySelector('.to')?.textContent ?? null,
    item.querySelector('.text')?.textContent
  ]))
}

/** Wait until `page` shows `count` messages. @param {import('playwright-core').Page} page @param {number} count */
function showing (page, count) {
  return page.waitForFunction(n => document.querySelectorAll('#messages li').length === n, count)
}

/** @param {import('playwright-core').Page} page @param {string} username */
function signedInAs (page, username) {
  return page.waitForFunction(name => document.querySelector('#username')?.textContent === name && !document.querySelector('#app')?.hasAttribute('hidden'), username)
}

/** @param {import('playwright-core').Page} page @param {string} form */
async function formError (page, form) {
  await page.waitForFunction(selector => document.querySelector(`${selector} [role="alert"]`)?.textContent, form)
  return page.textContent(`${form} [role="alert"]`)
}

test('the server\'s chat page: three people chat live, a whisper, a reload, a restart', { timeout: 180000 }, async t => {
  const server = await startServer()
  const { store } = server
  const url = `${server.base}/`
  /** The server after its restart. @type {import('fastify').FastifyInstance | null} */
  let restarted = null
  const browser = await launchChromium()
  try {
    /** @type {string[]} */
    const errors = []
    const people = await Promise.all(['alice', 'bob', 'carol'].map(async name => {
      const context = await browser.newContext({ viewport: { width: 1000, height: 700 } })
      const page = await context.newPage()
      page.on('pageerror', err => errors.push(`${name}: ${err.message}`))
      await page.goto(url)
      await page.waitForSelector('body[data-ready="true"]')
      return page
    }))
    const [alice, bob, carol] = people
    t.match(String(await alice.textContent('#hint')), /server/, 'the page says the chats live on the server')

    for (const [page, name] of /** @type {const} */ ([[alice, 'alice'], [bob, 'bob'], [carol, 'carol']])) {
      await submit(page, '#sign-up', { username: name, password: `${name}-password` })
      await signedInAs(page, name)
    }
    t.pass('three people signed up, each in a browser of their own, and are signed in')
    t.ok(await store.getUser('carol'), 'the users are the server\'s')
    t.is(await alice.evaluate(() => document.cookie), '', 'the session cookie is out of the page\'s reach (HttpOnly)')
    t.is(await alice.evaluate(() => localStorage.getItem('levelkit-chat-session')), 'current', 'and the page keeps no token, only that it is signed in')

    await bob.click('#sign-out')
    await bob.waitForSelector('#sign-in')
    await submit(bob, '#sign-up', { username: 'alice', password: 'other' })
    t.match(String(await formError(bob, '#sign-up')), /taken/, 'a taken username is said next to the sign-up form (the server\'s message)')
    await submit(bob, '#sign-in', { username: 'bob', password: 'wrong' })
    t.is(await formError(bob, '#sign-in'), 'Wrong username or password', 'a wrong password next to the sign-in form')
    await submit(bob, '#sign-in', { username: 'bob', password: 'bob-password' })
    await signedInAs(bob, 'bob')
    t.pass('bob signed out and in again')

    await submit(alice, '#new-chat', { name: 'Nobody', members: 'dave' })
    t.is(await formError(alice, '#new-chat'), 'No user named dave', 'an unknown member next to the new-chat form')
    await submit(alice, '#new-chat', { name: 'Plans <i>2027</i>', members: 'bob, carol' })
    await alice.waitForSelector('#send:not([hidden])')
    t.is(await alice.textContent('#chat-title'), 'Plans <i>2027</i>', 'alice made a chat with bob and carol, shown as typed')
    const [chat] = await store.getChats(/** @type {any} */ (await store.getUser('alice')).id)
    t.same(chat.members.length, 3, 'on the server, with the three of them')

    // Bob and carol see the new chat once they reload: the session is the cookie.
    for (const page of [bob, carol]) {
      await page.reload()
      await page.waitForSelector('body[data-ready="true"]')
      await page.click('#chats button')
      await page.waitForSelector('#send:not([hidden])')
    }
    t.is(await bob.textContent('#username'), 'bob', 'still signed in after a reload')

    await submit(alice, '#send', { text: 'hello both' })
    await Promise.all(people.map(page => showing(page, 1)))
    t.pass('alice\'s message appears for bob and carol without a reload')
    await submit(bob, '#send', { text: HOSTILE })
    await Promise.all(people.map(page => showing(page, 2)))
    t.same((await messages(alice)).map(([, , text]) => text), ['hello both', HOSTILE], 'and bob\'s for alice and carol, in order, as typed')
    t.is(await carol.$$eval('#messages img, #messages b, #chats i', nodes => nodes.length), 0, 'typed text is never parsed as HTML')
    t.is(await carol.evaluate(() => /** @type {any} */ (window).pwned), undefined, 'no script from a message ran')

    await submit(alice, '#send', { to: 'bob', text: 'psst, bob' })
    await showing(bob, 3)
    await showing(alice, 3)
    await submit(alice, '#send', { text: 'after the whisper' })
    await Promise.all([showing(alice, 4), showing(bob, 4), showing(carol, 3)])
    t.same((await messages(alice))[2], ['alice', 'whispers to bob', 'psst, bob'], 'alice sees her whisper as one')
    t.same((await messages(bob))[2].slice(1), ['whispers to bob', 'psst, bob'], 'bob gets it live, as a whisper to him')
    t.same((await messages(carol)).map(([, , text]) => text), ['hello both', HOSTILE, 'after the whisper'], 'carol never sees it')

    await carol.reload()
    await carol.waitForSelector('body[data-ready="true"]')
    await carol.click('#chats button')
    await showing(carol, 3)
    t.same((await messages(carol)).map(([, , text]) => text), ['hello both', HOSTILE, 'after the whisper'], 'nor in the history after a reload')
    await bob.reload()
    await bob.waitForSelector('body[data-ready="true"]')
    await bob.click('#chats button')
    await showing(bob, 4)
    t.same((await messages(bob)).map(([, to, text]) => [to, text])[2], ['whispers to bob', 'psst, bob'], 'bob has it in the history')

    await submit(carol, '#send', { to: 'dave', text: 'hello?' })
    t.is(await formError(carol, '#send'), 'No user named dave', 'a whisper to an unknown user is refused next to the message box')

    // The server restarts on the same port and data: the pages' watches
    // reconnect and pick up after the last message they showed, including
    // one written while the server was down.
    const { port } = /** @type {import('node:net').AddressInfo} */ (server.app.server.address())
    await server.app.close()
    const bobId = /** @type {any} */ (await store.getUser('bob')).id
    await store.addChatMessage({ chatId: chat.id, senderId: bobId, text: 'while the server was down' })
    restarted = await buildApp({ store, rateLimit: { auth: false } })
    await restarted.listen({ port, host: '127.0.0.1' })
    await Promise.all([showing(alice, 5), showing(carol, 4)])
    await submit(bob, '#send', { text: 'after the restart' })
    await Promise.all([showing(alice, 6), showing(bob, 6), showing(carol, 5)])
    t.same((await messages(alice)).map(([, , text]) => text).slice(3), ['after the whisper', 'while the server was down', 'after the restart'],
      'after a restart: no message missed, none twice')

    mkdirSync(artifacts, { recursive: true })
    const file = `${artifacts}server-chat.png`
    await bob.screenshot({ path: file, fullPage: true })
    t.pass(`screenshot saved to ${file}`)

    // The chat is deleted (by its admin, through the API or here the
    // store): the server ends the subscriptions, and the pages say why.
    await store.deleteChat(chat.id)
    await Promise.all(people.map(page => page.waitForFunction(() => document.querySelector('#status')?.textContent)))
    t.match(String(await carol.textContent('#status')), /deleted/, 'a deleted chat: the page says so')

    await alice.click('#sign-out')
    await alice.waitForSelector('#sign-in')
    await alice.reload()
    await alice.waitForSelector('body[data-ready="true"]')
    t.ok(await alice.isVisible('#sign-in'), 'signed out for good: after a reload, the sign-in form')
    t.same(errors, [], 'no uncaught error in the pages')
  } finally {
    await browser.close()
    await restarted?.close()
    // Closes the first app (again, if it was closed for the restart) and the database.
    await server.close()
  }
})
