import { unauthorized } from './errors.js'

/** The session cookie's name. */
export const SESSION_COOKIE = 'session'

// Tokens are 128-bit random ids, as hex (ChatStore's) or base64url: anything
// else is no token, and costs no read.
const TOKEN = /^[A-Za-z0-9_-]{16,128}$/
const BEARER = /^Bearer +(\S+) *$/i

/**
 * The session token a request carries: `Authorization: Bearer <token>`, else
 * the session cookie, else (for a WebSocket upgrade only, which a browser
 * cannot give a header) `?token=`. Null if none, or not shaped like one.
 * @param {import('fastify').FastifyRequest} request
 * @returns {string | null}
 */
export function tokenOf (request) {
  const header = request.headers.authorization
  if (header !== undefined) {
    const match = BEARER.exec(header)
    return match && TOKEN.test(match[1]) ? match[1] : null
  }
  const cookie = request.cookies && request.cookies[SESSION_COOKIE]
  if (typeof cookie === 'string') return TOKEN.test(cookie) ? cookie : null
  if (request.ws) {
    const token = /** @type {any} */ (request.query).token
    if (typeof token === 'string' && TOKEN.test(token)) return token
  }
  return null
}

/**
 * `app.authenticate(request)`: the session's user and token, or null.
 * @param {{ getUserFromSession (token: string): Promise<number | null> }} store
 * @returns {(request: import('fastify').FastifyRequest) => Promise<{ userId: number, token: string } | null>}
 */
export function authenticator (store) {
  return async request => {
    const token = tokenOf(request)
    if (token === null) return null
    const userId = await store.getUserFromSession(token)
    return userId === null ? null : { userId, token }
  }
}

/**
 * An onRequest hook for the routes that need a session: 401 without one,
 * else the session in `request.auth`.
 * @param {import('fastify').FastifyRequest} request
 */
export async function requireSession (request) {
  const auth = await request.server.authenticate(request)
  if (auth === null) throw unauthorized('This needs a session: log in with POST /api/sessions, then send its cookie or Authorization: Bearer <token>')
  request.auth = auth
}

/**
 * The caller's session, on a route with requireSession.
 * @param {import('fastify').FastifyRequest} request
 */
export function sessionOf (request) {
  return /** @type {{ userId: number, token: string }} */ (request.auth)
}
