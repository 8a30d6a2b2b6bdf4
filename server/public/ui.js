/* eslint-env browser */
// The chat page's UI, on a store with ChatStore's methods: levelkit's
// ChatStore on this browser's IndexedDB (examples/browser-chat/, local-first)
// or ServerChatStore, a client of the chat server (server-store.js). The
// markup is index.html; each page's entry (app.js) says how to open its
// store and calls startChat().
//
// Everything a user typed is shown with textContent, never as HTML.
//
// The page is there at once, saying the store is opening; its forms are
// enabled once it is open.

/**
 * @typedef {{ id: number, username: string }} ChatUser
 * @typedef {{ id: number, name: string }} ChatListing
 * @typedef {{ id: number, chatId: number, senderId: number, text: string, timestamp: number, recipients?: number[] }} ChatMessage
 */

/**
 * The store interface: the methods of levelkit's ChatStore (docs/chat.md)
 * that the UI calls, with their arguments and answers. ChatStore has them;
 * ServerChatStore makes them HTTP and WebSocket calls to the server.
 * @typedef {object} ChatClient
 * @property {(user: { username: string, password: string }) => Promise<number>} createUser
 *   the new user's id
 * @property {(username: string) => Promise<ChatUser | null>} getUser
 * @property {(id: number) => Promise<ChatUser | null>} getUserById
 * @property {(username: string, password: string) => Promise<ChatUser | null>} verifyPassword
 *   the user if the password is theirs
 * @property {(session: { userId: number, expiry: number }) => Promise<string>} setUserSession
 *   the session id, to keep for getUserFromSession() and removeSession()
 * @property {(sessionId: string) => Promise<number | null>} getUserFromSession
 *   the session's user id; null when missing or expired
 * @property {(sessionId: string) => Promise<boolean>} removeSession
 * @property {(userId: number) => Promise<ChatListing[]>} getChats
 *   most recent activity first
 * @property {(chat: { name: string, adminId: number, userIds: number[] }) => Promise<number>} createChat
 *   the new chat's id
 * @property {(message: { chatId: number, senderId: number, text: string, recipients?: number[] }) => Promise<number | null>} addChatMessage
 *   the message id (with `recipients`, a whisper), or null when the server's chatbot answered a command (nothing stored)
 * @property {(chatId: number, options: { viewerId: number, n: number }) => Promise<ChatMessage[] | null>} getChatMessages
 *   the newest `n` messages that `viewerId` may see, oldest first
 * @property {(chatId: number, options: { after: number, viewerId: number, signal: AbortSignal }) => AsyncIterable<ChatMessage>} watch
 *   each new message after `after` that `viewerId` may see, until `signal` aborts
 */

/**
 * What a page says about its store, and how it opens it.
 * @typedef {object} ChatPage
 * @property {string} hint where the chat lives, under the page's title
 * @property {string} opening shown while the store opens
 * @property {() => Promise<ChatClient>} open
 * @property {(err: unknown) => string} unavailable what to tell the user when open() fails
 */

const SESSION_KEY = 'levelkit-chat-session'
const SESSION_DAYS = 7
const PAGE_SIZE = 50

/** Set once the store is open (the forms are disabled until then). @type {ChatClient} */
let chat

/** @type {ChatUser | null} */
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

/** The ids of comma-separated usernames. @param {FormDataEntryValue | null} list */
async function userIdsOf (list) {
  const ids = []
  for (const username of String(list ?? '').split(',').map(name => name.trim()).filter(Boolean)) {
    const user = await chat.getUser(username)
    if (!user) throw new Error(`No user named ${username}`)
    names.set(user.id, user.username)
    ids.push(user.id)
  }
  return ids
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
  const chats = await chat.getChats(/** @type {ChatUser} */ (me).id)
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
  const viewerId = /** @type {ChatUser} */ (me).id
  const view = { id: chatId, abort: new AbortController(), shown: new Set() }
  current = view
  $('#chat-title').textContent = name
  $('#messages').replaceChildren()
  $('#send').hidden = false
  for (const button of document.querySelectorAll('#chats button')) {
    button.setAttribute('aria-current', String(/** @type {HTMLElement} */ (button).dataset.chatId === String(chatId)))
  }
  // The last page, then every message after it: no gap and no duplicate,
  // whichever store (a server's watch starts later than the read).
  const page = await chat.getChatMessages(chatId, { viewerId, n: PAGE_SIZE }) || []
  for (const message of page) await append(message)
  if (current !== view) return
  const after = page.length > 0 ? page[page.length - 1].id : 0
  follow(chat.watch(chatId, { after, viewerId, signal: view.abort.signal }), view)
}

/**
 * Append messages as they are written, by this tab or another, until the
 * chat is switched.
 * @param {AsyncIterable<ChatMessage>} updates
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

/**
 * The chatbot's answer to a command of this user (a server store's): shown
 * in the open chat, marked as the bot's, never stored.
 * @param {{ chatId: number, text: string, timestamp: number }} answer
 */
function appendBot (answer) {
  if (!current || current.id !== answer.chatId) return
  const item = document.createElement('li')
  item.className = 'whisper bot'
  const sender = document.createElement('span')
  sender.className = 'sender'
  sender.textContent = 'bot'
  const text = document.createElement('span')
  text.className = 'text'
  text.textContent = answer.text
  const time = document.createElement('time')
  time.dateTime = new Date(answer.timestamp).toISOString()
  time.textContent = new Date(answer.timestamp).toLocaleTimeString()
  item.append(sender, text, time)
  $('#messages').append(item)
}

/** @param {ChatMessage} message */
async function append (message) {
  if (!current || current.id !== message.chatId || current.shown.has(message.id)) return
  current.shown.add(message.id)
  const item = document.createElement('li')
  item.dataset.messageId = String(message.id)
  const sender = document.createElement('span')
  sender.className = 'sender'
  sender.textContent = await nameOf(message.senderId)
  item.append(sender)
  if (message.recipients) {
    item.classList.add('whisper')
    const to = document.createElement('span')
    to.className = 'to'
    const recipients = []
    for (const id of message.recipients) recipients.push(await nameOf(id))
    to.textContent = `whispers to ${recipients.join(', ')}`
    item.append(to)
  }
  const text = document.createElement('span')
  text.className = 'text'
  text.textContent = message.text
  const time = document.createElement('time')
  time.dateTime = new Date(message.timestamp).toISOString()
  time.textContent = new Date(message.timestamp).toLocaleTimeString()
  item.append(text, time)
  $('#messages').append(item)
}

function wire () {
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
    const userIds = await userIdsOf(data.get('members'))
    const name = String(data.get('name'))
    const chatId = await chat.createChat({ name, adminId: /** @type {ChatUser} */ (me).id, userIds })
    form.reset()
    await renderChats()
    await openChat(chatId, name)
  })

  onSubmit('#send', async (data, form) => {
    if (!current || !me) return
    const recipients = await userIdsOf(data.get('to'))
    const message = { chatId: current.id, senderId: me.id, text: String(data.get('text')) }
    await chat.addChatMessage(recipients.length > 0 ? { ...message, recipients } : message)
    form.reset()
  })

  $('#sign-out').addEventListener('click', () => guarded(async () => {
    const sessionId = localStorage.getItem(SESSION_KEY)
    if (sessionId) await chat.removeSession(sessionId)
    localStorage.removeItem(SESSION_KEY)
    await show(null)
  }))
}

/** An error's message and those of its causes ("failed to open: denied"). @param {unknown} err */
export function reasons (err) {
  const messages = []
  for (let e = /** @type {any} */ (err); e; e = e.cause) messages.push(e.message ?? String(e))
  return messages.join(': ')
}

/**
 * Open the page's store, then enable the forms; or say why it cannot open.
 * @param {ChatPage} page
 */
export async function startChat (page) {
  $('#hint').textContent = page.hint
  const opening = $('#opening')
  opening.textContent = page.opening
  try {
    chat = await page.open()
    if ('onBot' in chat) /** @type {any} */ (chat).onBot = appendBot
  } catch (err) {
    opening.textContent = page.unavailable(err)
    opening.className = 'failed'
    opening.setAttribute('role', 'alert')
    document.body.dataset.ready = 'false'
    console.error(err)
    return
  }
  wire()
  opening.hidden = true
  for (const fieldset of document.querySelectorAll('fieldset')) fieldset.disabled = false
  // A returning visitor is still signed in, until the session expires.
  await guarded(async () => {
    const sessionId = localStorage.getItem(SESSION_KEY)
    await show(sessionId ? await chat.getUserFromSession(sessionId) : null)
  })
  document.body.dataset.ready = 'true'
}
