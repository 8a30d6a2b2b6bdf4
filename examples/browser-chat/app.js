/* eslint-env browser */
// A local-first chat page on levelkit's browser bundle: the whole chat
// service (users, sessions, chats, members, messages) lives in this
// browser's IndexedDB. Two tabs of the page are two clients of one database:
// levelkit serializes their writes and wakes each tab's watchers.
//
// Everything a user typed is shown with textContent, never as HTML.
//
// The page (index.html) is there at once, saying the database is opening;
// its forms are enabled once it is open.

import { open, ChatStore } from './levelkit.js'

const SESSION_KEY = 'levelkit-chat-session'
const SESSION_DAYS = 7

/** Set once the database is open (the forms are disabled until then). @type {ChatStore} */
let chat

/** @type {{ id: number, username: string } | null} */
let me = null
/** @type {{ id: number, abort: AbortController, shown: Set<number> } | null} */
let current = null
/** @type {Map<number, string>} usernames by id */
const names = new Map()

const $ = (/** @type {string} */ selector) => /** @type {HTMLElement} */ (document.querySelector(selector))

/**
 * Run an event handler, showing its error (if any) in `where`: the form's
 * own error line, or the page's status line.
 * @param {() => Promise<void>} fn @param {HTMLElement} [where]
 */
async function guarded (fn, where = $('#status')) {
  for (const line of document.querySelectorAll('.error, #status')) line.textContent = ''
  try {
    await fn()
  } catch (err) {
    where.textContent = /** @type {Error} */ (err).message
  }
}

/** @param {string} id @param {(data: FormData, form: HTMLFormElement) => Promise<void>} handler */
function onSubmit (id, handler) {
  const form = /** @type {HTMLFormElement} */ ($(id))
  form.addEventListener('submit', event => {
    event.preventDefault()
    guarded(() => handler(new FormData(form), form), /** @type {HTMLElement} */ (form.querySelector('.error')))
  })
}

/** @param {number} userId */
async function nameOf (userId) {
  if (!names.has(userId)) names.set(userId, (await chat.getUserById(userId))?.username ?? `user ${userId}`)
  return /** @type {string} */ (names.get(userId))
}

async function startSession (/** @type {number} */ userId) {
  const sessionId = await chat.setUserSession({ userId, expiry: Date.now() + SESSION_DAYS * 86400000 })
  localStorage.setItem(SESSION_KEY, sessionId)
  await show(userId)
}

/** Show the signed-in view for `userId`, or the sign-up/sign-in forms. @param {number | null} userId */
async function show (userId) {
  me = userId === null ? null : { id: userId, username: await nameOf(userId) }
  closeChat()
  $('#auth').hidden = me !== null
  $('#app').hidden = me === null
  $('#whoami').hidden = me === null
  if (me) {
    $('#username').textContent = me.username
    await renderChats()
  }
}

async function renderChats () {
  const list = $('#chats')
  const chats = await chat.getChats(/** @type {{ id: number }} */ (me).id)
  list.replaceChildren(...chats.map(({ id, name }) => {
    const item = document.createElement('li')
    const button = document.createElement('button')
    button.type = 'button'
    button.textContent = name
    button.dataset.chatId = String(id)
    button.setAttribute('aria-current', String(current?.id === id))
    button.addEventListener('click', () => guarded(() => openChat(id, name)))
    item.append(button)
    return item
  }))
}

/** Show no chat: nothing to read, nowhere to send. */
function closeChat () {
  current?.abort.abort()
  current = null
  $('#chat-title').textContent = 'Pick a chat'
  $('#messages').replaceChildren()
  $('#send').hidden = true
}

/** @param {number} chatId @param {string} name */
async function openChat (chatId, name) {
  current?.abort.abort()
  const viewerId = /** @type {{ id: number }} */ (me).id
  current = { id: chatId, abort: new AbortController(), shown: new Set() }
  $('#chat-title').textContent = name
  $('#messages').replaceChildren()
  $('#send').hidden = false
  for (const button of document.querySelectorAll('#chats button')) {
    button.setAttribute('aria-current', String(/** @type {HTMLElement} */ (button).dataset.chatId === String(chatId)))
  }
  // Watch first, then read the last page: a message written in between
  // comes through both, and is shown once.
  const updates = chat.watch(chatId, { viewerId, signal: current.abort.signal })
  const page = await chat.getChatMessages(chatId, { viewerId, n: 50 })
  for (const message of page || []) await append(message)
  follow(updates, current)
}

/**
 * Append messages as they are written, by this tab or another, until the
 * chat is switched.
 * @param {AsyncGenerator<import('./levelkit.js').Message>} updates
 * @param {NonNullable<typeof current>} view
 */
async function follow (updates, view) {
  try {
    for await (const message of updates) {
      if (current !== view) return
      await append(message)
    }
  } catch (err) {
    if (!view.abort.signal.aborted) $('#status').textContent = /** @type {Error} */ (err).message
  }
}

/** @param {import('./levelkit.js').Message} message */
async function append (message) {
  if (!current || current.id !== message.chatId || current.shown.has(message.id)) return
  current.shown.add(message.id)
  const item = document.createElement('li')
  item.dataset.messageId = String(message.id)
  const sender = document.createElement('span')
  sender.className = 'sender'
  sender.textContent = await nameOf(message.senderId)
  const text = document.createElement('span')
  text.className = 'text'
  text.textContent = message.text
  const time = document.createElement('time')
  time.dateTime = new Date(message.timestamp).toISOString()
  time.textContent = new Date(message.timestamp).toLocaleTimeString()
  item.append(sender, text, time)
  $('#messages').append(item)
}

onSubmit('#sign-up', async (data) => {
  const username = String(data.get('username'))
  const userId = await chat.createUser({ username, password: String(data.get('password')) })
  await startSession(userId)
})

onSubmit('#sign-in', async (data) => {
  const user = await chat.verifyPassword(String(data.get('username')), String(data.get('password')))
  if (!user) throw new Error('Wrong username or password')
  await startSession(user.id)
})

onSubmit('#new-chat', async (data, form) => {
  const usernames = String(data.get('members')).split(',').map(name => name.trim()).filter(Boolean)
  const userIds = []
  for (const username of usernames) {
    const user = await chat.getUser(username)
    if (!user) throw new Error(`No user named ${username}`)
    userIds.push(user.id)
  }
  const name = String(data.get('name'))
  const chatId = await chat.createChat({ name, adminId: /** @type {{ id: number }} */ (me).id, userIds })
  form.reset()
  await renderChats()
  await openChat(chatId, name)
})

onSubmit('#send', async (data, form) => {
  if (!current || !me) return
  await chat.addChatMessage({ chatId: current.id, senderId: me.id, text: String(data.get('text')) })
  form.reset()
})

$('#sign-out').addEventListener('click', () => guarded(async () => {
  const sessionId = localStorage.getItem(SESSION_KEY)
  if (sessionId) await chat.removeSession(sessionId)
  localStorage.removeItem(SESSION_KEY)
  await show(null)
}))

/** An error's message and those of its causes ("failed to open: denied"). @param {unknown} err */
function reasons (err) {
  const messages = []
  for (let e = /** @type {any} */ (err); e; e = e.cause) messages.push(e.message ?? String(e))
  return messages.join(': ')
}

/** Open the database, then enable the forms; or say why it cannot open. */
async function start () {
  try {
    chat = await ChatStore.open(await open({ location: 'levelkit-chat' }))
  } catch (err) {
    const opening = $('#opening')
    opening.textContent = `This browser could not open the chat's database (IndexedDB): ${reasons(err)}. ` +
      'Storage may be blocked for this site (private browsing, or a setting), or the database may hold another program\'s data.'
    opening.className = 'failed'
    opening.setAttribute('role', 'alert')
    document.body.dataset.ready = 'false'
    console.error(err)
    return
  }
  $('#opening').hidden = true
  for (const fieldset of document.querySelectorAll('fieldset')) fieldset.disabled = false
  // A returning visitor is still signed in, until the session expires.
  const sessionId = localStorage.getItem(SESSION_KEY)
  await show(sessionId ? await chat.getUserFromSession(sessionId) : null)
  document.body.dataset.ready = 'true'
}

await start()
