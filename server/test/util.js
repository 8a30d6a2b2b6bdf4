// What the server tests share: a server on a free port over a fresh
// ChatStore, and a small JSON client over fetch.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { open } from 'levelkit'
import { ChatStore } from 'levelkit/chat'
import { buildApp } from '../lib/app.js'
import { levelkitKv } from '../lib/kv.js'

export const BIN = fileURLToPath(new URL('../bin/levelkit-chat.js', import.meta.url))

/** Cheap password hashing: the tests hash thousands of passwords. */
export const STORE_OPTIONS = Object.freeze({ passwordCost: { scryptN: 1024, pbkdf2Iterations: 1000 } })

/**
 * A server over a fresh ChatStore (in memory, or LevelDB at `location`),
 * listening on a free port of 127.0.0.1. Rate limits are off unless given.
 * @param {{ location?: string, storeOptions?: object, [key: string]: any }} [options] and buildApp()'s options
 */
export async function startServer ({ location, storeOptions = {}, ...appOptions } = {}) {
  const db = await open(location === undefined ? { backend: 'memory' } : { backend: 'leveldb', location })
  const store = await ChatStore.open(db, { ...STORE_OPTIONS, ...storeOptions })
  const app = await buildApp({ store, kv: levelkitKv(db), rateLimit: { auth: false }, ...appOptions })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${/** @type {any} */ (app.server.address()).port}`
  return {
    db,
    store,
    app,
    base,
    api: client(base),
    async close () {
      await app.close()
      await db.close()
    }
  }
}

/**
 * @typedef {{ status: number, body: any, headers: Headers, text: string }} Answer
 * @typedef {{ body?: any, raw?: string | Buffer, token?: string, cookie?: string, headers?: Record<string, string> }} RequestOptions
 */

/**
 * A JSON client of the server at `base`: `api(method, path, options)`.
 * `body` is sent as JSON, `raw` as it is (with a JSON content type unless
 * `headers` say otherwise); `token` as a bearer token, `cookie` as the
 * session cookie.
 * @param {string} base
 */
export function client (base) {
  /**
   * @param {string} method @param {string} path @param {RequestOptions} [options]
   * @returns {Promise<Answer>}
   */
  return async function api (method, path, { body, raw, token, cookie, headers = {} } = {}) {
    /** @type {Record<string, string>} */
    const sent = {}
    if (body !== undefined || raw !== undefined) sent['content-type'] = 'application/json'
    if (token !== undefined) sent.authorization = `Bearer ${token}`
    if (cookie !== undefined) sent.cookie = `session=${cookie}`
    const payload = raw !== undefined ? raw : body === undefined ? undefined : JSON.stringify(body)
    // Given, the length goes out with the headers and the body in one write:
    // without it, each request waits on the socket for tens of milliseconds.
    if (payload !== undefined) sent['content-length'] = String(Buffer.byteLength(payload))
    Object.assign(sent, headers)
    // A Buffer is a body as it is; the cast is for the DOM lib's types
    // (page-test.js's), whose BodyInit does not name Buffer.
    const response = await fetch(base + path, { method, headers: sent, body: /** @type {RequestInit['body']} */ (/** @type {unknown} */ (payload)) })
    const text = await response.text()
    let parsed = null
    try {
      parsed = text === '' ? null : JSON.parse(text)
    } catch {}
    return { status: response.status, body: parsed, headers: response.headers, text }
  }
}

/**
 * Register and log in: the user's id and session token.
 * @param {ReturnType<typeof client>} api @param {string} username
 */
export async function signUp (api, username, password = `pw-${username}`) {
  const created = await api('POST', '/api/users', { body: { username, password } })
  if (created.status !== 201) throw new Error(`registering ${username}: ${created.status} ${created.text}`)
  const session = await api('POST', '/api/sessions', { body: { username, password } })
  if (session.status !== 201) throw new Error(`logging in ${username}: ${session.status} ${session.text}`)
  return { id: /** @type {number} */ (created.body.id), username, password, token: /** @type {string} */ (session.body.token) }
}

/**
 * Start the levelkit-chat bin in a child process and wait for its URL.
 * @param {string[]} args
 * @param {{ cwd?: string, env?: Record<string, string> }} [options]
 */
export function startBin (args, { cwd, env = {} } = {}) {
  const child = spawn(process.execPath, [BIN, ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', chunk => { stdout += chunk })
  child.stderr.setEncoding('utf8').on('data', chunk => { stderr += chunk })
  /** @type {Promise<{ code: number | null, signal: string | null, at: number }>} */
  const exited = new Promise(resolve => child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })))
  /** @type {Promise<string | null>} the URL it prints, or null if it exits first */
  const url = new Promise(resolve => {
    const look = () => {
      const match = /listening on (http:\/\/\S+)/.exec(stdout)
      if (match) resolve(match[1])
    }
    child.stdout.on('data', look)
    exited.then(() => resolve(null))
  })
  return { child, exited, url, output: () => ({ stdout, stderr }) }
}
