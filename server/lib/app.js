// The chat service as a fastify app: the HTTP API (routes.js), the live
// WebSocket (live.js) and the chat page, over a store with ChatStore's
// methods. Not listening: the caller does that (bin/levelkit-chat.js, tests).
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import Fastify from 'fastify'
import cookie from '@fastify/cookie'
import rateLimit from '@fastify/rate-limit'
import fastifyStatic from '@fastify/static'
import { authenticator } from './auth.js'
import { clientErrorHandler, errorHandler, notFoundHandler } from './errors.js'
import { rateLimitHooks } from './limits.js'
import { routes } from './routes.js'
import { schemaErrorFormatter } from './schemas.js'
import { live } from './live.js'

const DEFAULT_STATIC_DIR = fileURLToPath(new URL('../public', import.meta.url))
const HOUR = 3600 * 1000

/**
 * @typedef {object} AppOptions
 * @property {any} store ChatStore, or a store with its methods
 * @property {any} [kv] the chatbot's key-value store: `{ put (chatId, key, value), get (chatId, key), del (chatId, key) }`
 * @property {boolean | object} [logger] fastify's logger option (default: none)
 * @property {string} [staticDir] the chat page's directory, served at `/` (default: server/public, if it exists)
 * @property {import('./limits.js').RateLimitOptions} [rateLimit] login and registration per IP and per username (default 20 and 10 a minute), other API calls per IP (default: none)
 * @property {number} [sessionDays] how long a session lasts (default 7)
 * @property {number} [bodyLimit] largest request body in bytes (default 16 KiB)
 * @property {number} [purgeEvery] how often expired sessions are deleted, in ms (default: hourly)
 * @property {import('./live.js').LiveOptions} [live] the WebSocket's limits and heartbeat (live.js), e.g. `{ pingInterval: 30000 }`
 */

/**
 * Build the app: ready, not listening. Decorates `app.store`, `app.kv`,
 * `app.authenticate(request)` and `app.sessionUser(token)`. `app.close()`
 * closes WebSockets with 1001 and lets requests in flight finish; the
 * store's database stays open.
 * @param {AppOptions} options
 */
export async function buildApp (options) {
  const { store, kv, logger = false, staticDir = DEFAULT_STATIC_DIR, rateLimit: limits, sessionDays = 7, bodyLimit = 16 * 1024, purgeEvery = HOUR, live: liveOptions } = options
  if (store === null || typeof store !== 'object') throw new TypeError('buildApp() needs a store (a ChatStore, or an object with its methods)')
  if (typeof sessionDays !== 'number' || !(sessionDays > 0)) throw new TypeError('sessionDays must be a positive number')

  const app = Fastify({
    logger,
    bodyLimit,
    // A body or its headers trickling in for longer is dropped.
    requestTimeout: 30_000,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    // While closing, a request that still arrives on an open connection is
    // answered (with Connection: close) rather than refused in another format.
    return503OnClosing: false,
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
    schemaErrorFormatter,
    clientErrorHandler,
    // A path that does not decode (a bad %-escape) is answered like any error.
    frameworkErrors: errorHandler
  })
  app.decorate('store', store)
  app.decorate('kv', kv)
  app.decorate('authenticate', authenticator(store))
  // For live.js's heartbeat: a session signed out through another process
  // ends its sockets here too.
  app.decorate('sessionUser', (/** @type {string} */ token) => store.getUserFromSession(token))
  app.decorateRequest('auth', null)
  app.setErrorHandler(errorHandler)
  app.setNotFoundHandler(notFoundHandler)
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-content-type-options', 'nosniff')
    if (request.url.startsWith('/api/')) reply.header('cache-control', 'no-store')
  })

  await app.register(cookie)
  await app.register(rateLimit, { global: false })
  const { authByIp, authByUsername, api } = rateLimitHooks(app, limits)
  if (api) {
    app.addHook('onRequest', async (request, reply) => {
      const path = request.routeOptions.url
      if (path !== undefined && path.startsWith('/api/') && path !== '/api/users' && path !== '/api/sessions') await api(request, reply)
    })
  }

  await app.register(routes, { authByIp, authByUsername, sessionDays })
  // live.js registers @fastify/websocket with its limits, and on close tells
  // every socket the server is going away (1001).
  await app.register(live, liveOptions ?? {})
  if (existsSync(staticDir)) await app.register(fastifyStatic, { root: staticDir })

  // Expired sessions are deleted now and then (a ChatStore's purge is a range
  // read over their expiry index).
  if (typeof store.purgeExpiredSessions === 'function') {
    const purge = () => store.purgeExpiredSessions().catch((/** @type {Error} */ err) => app.log.warn({ err }, 'purging expired sessions failed'))
    const timer = setInterval(purge, purgeEvery).unref()
    app.addHook('onClose', async () => clearInterval(timer))
  }

  await app.ready()
  return app
}
