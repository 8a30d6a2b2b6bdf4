import { HttpError } from './errors.js'

/**
 * @typedef {{ max: number, timeWindow: number, maxPerUsername?: number }} AuthLimit
 * @typedef {{ max: number, timeWindow: number }} ApiLimit
 * @typedef {{ auth?: AuthLimit | false, api?: ApiLimit | false }} RateLimitOptions
 */

/** Login and registration attempts: per IP, and per username, a minute. Other calls: none. */
export const DEFAULT_RATE_LIMIT = Object.freeze({
  auth: Object.freeze({ max: 20, maxPerUsername: 10, timeWindow: 60_000 }),
  api: false
})

/**
 * The rate-limit hooks, on counters of @fastify/rate-limit (registered on
 * `app` with `global: false`): `authByIp` (onRequest) and `authByUsername`
 * (preHandler, once the body is valid) for POST /api/users and POST
 * /api/sessions; `api` (onRequest) for every other /api route. A hook is
 * null when its limit is off.
 * @param {any} app
 * @param {RateLimitOptions} [options]
 */
export function rateLimitHooks (app, options = {}) {
  const auth = options.auth === undefined ? DEFAULT_RATE_LIMIT.auth : options.auth
  const api = options.api === undefined ? DEFAULT_RATE_LIMIT.api : options.api
  const ipKey = (/** @type {import('fastify').FastifyRequest} */ request) => request.ip
  const usernameKey = (/** @type {import('fastify').FastifyRequest} */ request) => 'username:' + /** @type {any} */ (request.body).username.trim()
  return {
    authByIp: auth ? hook(app, { max: auth.max, timeWindow: auth.timeWindow, keyGenerator: ipKey }, 'attempts from this address') : null,
    authByUsername: auth ? hook(app, { max: auth.maxPerUsername === undefined ? auth.max : auth.maxPerUsername, timeWindow: auth.timeWindow, keyGenerator: usernameKey }, 'attempts for this username') : null,
    api: api ? hook(app, { max: api.max, timeWindow: api.timeWindow, keyGenerator: ipKey }, 'requests from this address') : null
  }
}

/**
 * A hook counting requests under its own key, answering 429 RATE_LIMITED
 * with Retry-After past `max` in the window.
 * @param {any} app @param {{ max: number, timeWindow: number, keyGenerator: (request: any) => string }} limit
 * @param {string} what
 */
function hook (app, limit, what) {
  for (const key of /** @type {const} */ (['max', 'timeWindow'])) {
    if (!Number.isSafeInteger(limit[key]) || limit[key] < 1) throw new TypeError(`A rate limit's ${key} must be a positive integer, got ${limit[key]}`)
  }
  const count = app.createRateLimit(limit)
  return async (/** @type {import('fastify').FastifyRequest} */ request, /** @type {import('fastify').FastifyReply} */ reply) => {
    const result = await count(request)
    if (!result.isExceeded) return
    reply.header('retry-after', String(result.ttlInSeconds))
    throw new HttpError(429, 'RATE_LIMITED', `Too many ${what}: try again in ${result.ttlInSeconds} s`)
  }
}
