/* eslint-env browser */
// ServerChatStore: the chat page's store (ui.js's ChatClient, the methods of
// levelkit's ChatStore the page uses) as a client of the chat server. Each
// method is a call of the server's HTTP API; watch() subscribes on its
// WebSocket, GET /api/ws.
//
// The server acts as the signed-in user: the session is the HttpOnly
// `session` cookie the server sets, which this page never sees. So the user
// ids ChatStore takes as arguments (adminId, senderId, viewerId, getChats's
// userId) are the session's user here, and the session id this store hands
// out is not a secret: it names the cookie's session, 'current', as the
// route DELETE /api/sessions/current does.

/**
 * @typedef {import('./ui.js').ChatClient} ChatClient
 * @typedef {import('./ui.js').ChatUser} ChatUser
 * @typedef {import('./ui.js').ChatListing} ChatListing
 * @typedef {import('./ui.js').ChatMessage} ChatMessage
 */

const SESSION = 'current'
// A watch whose socket closed reconnects after this long, doubling up to the
// maximum while the server stays away.
const RETRY_FIRST_MS = 250
const RETRY_MAX_MS = 8000

/**
 * An error as the server reports it: its message, with the server's `code`
 * (e.g. LEVELKIT_UNIQUE, UNAUTHORIZED, RATE_LIMITED) and the HTTP `status`
 * (0 when there was no answer).
 * @param {string} code @param {string} message @param {number} status @param {unknown} [cause]
 */
function serverError (code, message, status, cause) {
  return Object.assign(new Error(message, { cause }), { code, status })
}

/** @param {unknown} err @param {number} status */
const answered = (err, status) => /** @type {any} */ (err)?.status === status

/**
 * The chat server's API with ChatStore's methods, for the chat page.
 * @implements {ChatClient}
 */
export class ServerChatStore {
  /** @type {URL} */
  #base
  /**
   * Every user this client has been told about, by id: the API looks users
   * up by name only, and the page names senders and members by id.
   * @type {Map<number, ChatUser>}
   */
  #users = new Map()
  /** The session's user, as far as this client knows. @type {number | null} */
  #signedIn = null
  /**
   * Called with the chatbot's answer to a command this client sent (its
   * answers are not messages of the chat: no id, not stored).
   * @type {((message: { chatId: number, senderId: number, bot: true, text: string, timestamp: number, recipients: number[] }) => void) | null}
   */
  onBot = null
  /**
   * The user createUser() just registered, until setUserSession() signs
   * them in: the server opens a session only with the password.
   * @type {{ id: number, username: string, password: string } | null}
   */
  #registered = null

  /** @param {{ url?: string | URL }} [options] the server's address (default: this page's) */
  constructor ({ url = location.href } = {}) {
    this.#base = new URL('/', url)
  }

  /**
   * @param {string} method @param {string} path @param {unknown} [body]
   * @returns {Promise<any>} the answer's JSON (null for 204)
   */
  async #request (method, path, body) {
    let response
    try {
      response = await fetch(new URL(path, this.#base), {
        method,
        credentials: 'same-origin',
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body)
      })
    } catch (err) {
      throw serverError('UNREACHABLE', `Could not reach the chat server at ${this.#base.origin}`, 0, err)
    }
    const data = response.status === 204 ? null : await response.json().catch(() => null)
    if (!response.ok) {
      const error = data?.error
      throw serverError(error?.code ?? `HTTP_${response.status}`, error?.message ?? `The chat server answered ${response.status} ${response.statusText}`, response.status)
    }
    return data
  }

  /** @param {ChatUser} user */
  #know ({ id, username }) {
    this.#users.set(id, { id, username })
    return { id, username }
  }

  /** The session's user, or null when signed out. @returns {Promise<ChatUser | null>} */
  async #me () {
    try {
      const user = this.#know(await this.#request('GET', '/api/me'))
      this.#signedIn = user.id
      return user
    } catch (err) {
      if (!answered(err, 401)) throw err
      this.#signedIn = null
      return null
    }
  }

  /** @param {{ username: string, password: string }} user */
  async createUser ({ username, password }) {
    const user = this.#know(await this.#request('POST', '/api/users', { username, password }))
    this.#registered = { id: user.id, username: user.username, password }
    return user.id
  }

  /** @param {string} username */
  async getUser (username) {
    try {
      return this.#know(await this.#request('GET', `/api/users/${encodeURIComponent(username)}`))
    } catch (err) {
      if (answered(err, 404)) return null
      throw err
    }
  }

  /**
   * From the users this client has seen, else asked of the server.
   * @param {number} id
   */
  async getUserById (id) {
    const known = this.#users.get(id)
    if (known !== undefined) return known
    try {
      return this.#know(await this.#request('GET', `/api/users/by-id/${encodeURIComponent(String(id))}`))
    } catch (err) {
      if (answered(err, 404)) return null
      throw err
    }
  }

  /**
   * Signs in when the password is right: the server checks a password only
   * by opening a session with it.
   * @param {string} username @param {string} password
   */
  async verifyPassword (username, password) {
    this.#registered = null
    try {
      await this.#request('POST', '/api/sessions', { username, password })
    } catch (err) {
      if (answered(err, 401)) return null
      throw err
    }
    const user = await this.#me()
    if (!user) throw serverError('UNAUTHORIZED', 'Signed in, but this browser did not keep the session cookie (are cookies blocked for this site?)', 401)
    return user
  }

  /**
   * The session of the user just verified (or registered: then it signs
   * them in). The server sets the expiry.
   * @param {{ userId: number, expiry?: number }} session
   */
  async setUserSession ({ userId }) {
    const registered = this.#registered
    this.#registered = null
    if (registered && registered.id === userId) {
      await this.verifyPassword(registered.username, registered.password)
    }
    if (this.#signedIn !== userId) {
      throw serverError('LEVELKIT_INVALID', 'The chat server opens a session only with a password: verifyPassword() or createUser() that user first', 0)
    }
    return SESSION
  }

  /** @param {string} sessionId */
  async getUserFromSession (sessionId) {
    if (sessionId !== SESSION) return null
    return (await this.#me())?.id ?? null
  }

  /** @param {string} sessionId */
  async removeSession (sessionId) {
    if (sessionId !== SESSION) return false
    try {
      await this.#request('DELETE', '/api/sessions/current')
      return true
    } catch (err) {
      if (answered(err, 401)) return false
      throw err
    } finally {
      this.#signedIn = null
    }
  }

  /** The session user's chats. @param {number} [userId] @returns {Promise<ChatListing[]>} */
  async getChats (userId) {
    return this.#request('GET', '/api/chats')
  }

  /**
   * A chat of the session's user (its admin) with `userIds`, who must be
   * users this client has seen: the API takes members by name.
   * @param {{ name: string, adminId?: number, userIds?: number[], password?: string }} chat
   */
  async createChat ({ name, userIds = [], password }) {
    const members = userIds.map(id => {
      const user = this.#users.get(id)
      if (!user) throw serverError('LEVELKIT_NOT_FOUND', `No user with id ${id} known to this client: look them up by name first`, 0)
      return user.username
    })
    const chat = await this.#request('POST', '/api/chats', password === undefined ? { name, members } : { name, members, password })
    return /** @type {number} */ (chat.id)
  }

  /**
   * Send as the session's user; with `recipients`, a whisper.
   * @param {{ chatId: number, senderId?: number, text: string, recipients?: number[] }} message
   */
  async addChatMessage ({ chatId, text, recipients }) {
    const body = recipients === undefined ? { text } : { text, to: recipients }
    const message = await this.#request('POST', `/api/chats/${encodeURIComponent(chatId)}/messages`, body)
    // A chatbot command: its answer is for this user alone, never stored.
    if (message.bot !== undefined) {
      this.onBot?.(message.bot)
      return null
    }
    return /** @type {number} */ (message.id)
  }

  /**
   * The messages the session's user may see.
   * @param {number} chatId @param {{ from?: number, to?: number, n?: number, viewerId?: number }} [options]
   * @returns {Promise<ChatMessage[] | null>}
   */
  async getChatMessages (chatId, { from, to, n } = {}) {
    const query = new URLSearchParams()
    for (const [name, value] of Object.entries({ from, to, n })) if (value !== undefined) query.set(name, String(value))
    try {
      return await this.#request('GET', `/api/chats/${encodeURIComponent(chatId)}/messages?${query}`)
    } catch (err) {
      if (answered(err, 404)) return null
      throw err
    }
  }

  /**
   * New messages of a chat that the session's user may see, in id order,
   * after `after` (default: from when the server takes the subscription),
   * until `signal` aborts. A socket that drops (the server restarts, the
   * network fails) is opened again and subscribes after the last message
   * delivered, so no message is missed or repeated. The watch fails with the
   * server's code when the server refuses or ends the subscription (the
   * chat was deleted, the user is no longer a member), or the session is
   * gone (UNAUTHORIZED).
   * @param {number} chatId @param {{ after?: number, signal?: AbortSignal, viewerId?: number }} [options]
   * @returns {AsyncGenerator<ChatMessage>}
   */
  watch (chatId, { after, signal } = {}) {
    const url = new URL('/api/ws', this.#base)
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:'
    // Subscribe now, as ChatStore.watch() starts now.
    const subscription = new Subscription(url, chatId, after, signal, async () => (await this.#me()) !== null)
    return subscription.messages()
  }
}

/** One chat's messages over a WebSocket of its own, reopened until closed. */
class Subscription {
  /** @type {ChatMessage[]} */
  #queue = []
  /** @type {unknown} */
  #error = null
  #done = false
  /** @type {(() => void) | null} */
  #wake = null
  /** @type {WebSocket | null} */
  #socket = null
  #retry = RETRY_FIRST_MS
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #timer

  /**
   * @param {URL} url @param {number} chatId @param {number | undefined} after
   * @param {AbortSignal | undefined} signal
   * @param {() => Promise<boolean>} signedIn whether the session still holds
   */
  constructor (url, chatId, after, signal, signedIn) {
    this.url = url
    this.chatId = chatId
    this.after = after
    this.signal = signal
    this.signedIn = signedIn
    this.close = this.close.bind(this)
    if (signal?.aborted) {
      this.#done = true
      return
    }
    signal?.addEventListener('abort', this.close, { once: true })
    this.#connect()
  }

  #connect () {
    let opened = false
    const socket = new WebSocket(this.url)
    this.#socket = socket
    socket.addEventListener('open', () => {
      opened = true
      this.#retry = RETRY_FIRST_MS
      const frame = { type: 'subscribe', chatId: this.chatId }
      socket.send(JSON.stringify(this.after === undefined ? frame : { ...frame, after: this.after }))
    })
    socket.addEventListener('message', event => this.#receive(event.data))
    socket.addEventListener('close', event => {
      if (this.#done || socket !== this.#socket) return
      // 1000: the server ended the subscription on purpose.
      if (event.code === 1000) this.#finish()
      else this.#reconnect(opened)
    })
  }

  /** @param {unknown} data */
  #receive (data) {
    let frame
    try {
      frame = JSON.parse(String(data))
    } catch {
      return
    }
    if (frame?.type === 'message' && frame.chatId === this.chatId) {
      const message = /** @type {ChatMessage} */ (frame.message)
      // Delivered already, before the socket was reopened.
      if (this.after !== undefined && message.id <= this.after) return
      this.after = message.id
      this.#queue.push(message)
      this.#notify()
    } else if (frame?.type === 'error' || (frame?.type === 'unsubscribed' && frame.code !== undefined)) {
      // This socket sent one frame, the subscription: an error is its
      // answer. Or the server ended it (the chat was deleted, the user
      // removed from it): say why.
      this.#error = serverError(frame.code, frame.message, 0)
      this.#finish()
    } else if (frame?.type === 'unsubscribed') {
      this.#finish()
    }
  }

  /** @param {boolean} opened whether the socket that closed had opened */
  async #reconnect (opened) {
    // Refused before it opened: the session may be gone (the server then
    // refuses the upgrade); ask over HTTP, as a closed socket does not say.
    if (!opened) {
      let signedIn = true
      try {
        signedIn = await this.signedIn()
      } catch {
        // Unreachable: try again later.
      }
      if (this.#done) return
      if (!signedIn) {
        this.#error = serverError('UNAUTHORIZED', 'Signed out: sign in again to follow this chat', 401)
        return this.#finish()
      }
    }
    if (this.#done) return
    this.#timer = setTimeout(() => {
      if (!this.#done) this.#connect()
    }, this.#retry)
    this.#retry = Math.min(this.#retry * 2, RETRY_MAX_MS)
  }

  #notify () {
    const wake = this.#wake
    this.#wake = null
    wake?.()
  }

  /** No more messages: deliver those already here, then end. */
  #finish () {
    this.#done = true
    clearTimeout(this.#timer)
    this.signal?.removeEventListener('abort', this.close)
    this.#socket?.close(1000)
    this.#notify()
  }

  /** Stop now (aborted, or the reader stopped): no more messages. */
  close () {
    this.#queue.length = 0
    this.#finish()
  }

  /** @returns {AsyncGenerator<ChatMessage>} */
  async * messages () {
    try {
      while (true) {
        const message = this.#queue.shift()
        if (message !== undefined) {
          yield message
        } else if (this.#error !== null) {
          throw this.#error
        } else if (this.#done) {
          return
        } else {
          await new Promise(resolve => { this.#wake = () => resolve(undefined) })
        }
      }
    } finally {
      this.close()
    }
  }
}
