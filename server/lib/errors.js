// Every error leaves the server as { error: { code, message } } with a 4xx
// status for anything a client can cause: levelkit's codes keep their name,
// the server's own are UNAUTHORIZED, RATE_LIMITED, BAD_REQUEST,
// PAYLOAD_TOO_LARGE, UNSUPPORTED_MEDIA_TYPE and NOT_FOUND. A 503 means the
// database is out of reach for now (closing, busy, or PostgreSQL down). A
// 500 means a bug, and says nothing more than that.
import http from 'node:http'

/** HTTP status of each levelkit code a client's request can cause. */
export const LEVELKIT_STATUS = Object.freeze({
  LEVELKIT_INVALID: 400,
  LEVELKIT_UNIQUE: 409,
  LEVELKIT_EXISTS: 409,
  LEVELKIT_NOT_FOUND: 404,
  LEVELKIT_FORBIDDEN: 403,
  LEVELKIT_LIMIT: 403,
  LEVELKIT_RESTRICT: 409,
  LEVELKIT_CONFLICT: 409,
  LEVELKIT_NOT_OPEN: 503,
  LEVELKIT_LOCK_TIMEOUT: 503
})

/**
 * levelkit's codes for a database that is out of reach (PostgreSQL down, or
 * a connection lost mid-commit): 503, and a message of the server's, since
 * levelkit's names hosts and addresses a client has no business knowing.
 */
export const UNAVAILABLE = Object.freeze({
  LEVELKIT_BACKEND_UNAVAILABLE: 'The database is unavailable: try again',
  LEVELKIT_COMMIT_UNKNOWN: 'The database became unavailable while this was being written: it may or may not have been'
})

/** Fastify's own client errors with a code of the server's instead of BAD_REQUEST. */
const FASTIFY_CODES = Object.freeze({
  FST_ERR_CTP_BODY_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE'
})

/** An error the server answers with as it is: its status, code and message. */
export class HttpError extends Error {
  /** @param {number} statusCode @param {string} code @param {string} message */
  constructor (statusCode, code, message) {
    super(message)
    this.statusCode = statusCode
    this.code = code
  }
}

/** @param {string} message */
export const unauthorized = message => new HttpError(401, 'UNAUTHORIZED', message)
/** @param {string} message */
export const forbidden = message => new HttpError(403, 'FORBIDDEN', message)
/** @param {string} message */
export const notFound = message => new HttpError(404, 'NOT_FOUND', message)
/** @param {string} message */
export const badRequest = message => new HttpError(400, 'BAD_REQUEST', message)

/**
 * The status, code and message to answer an error with.
 * @param {any} err
 * @returns {{ statusCode: number, code: string, message: string }}
 */
export function describeError (err) {
  if (err instanceof HttpError) return { statusCode: err.statusCode, code: err.code, message: err.message }
  const code = err && typeof err.code === 'string' ? err.code : undefined
  if (code !== undefined && Object.hasOwn(LEVELKIT_STATUS, code)) {
    return { statusCode: LEVELKIT_STATUS[/** @type {keyof typeof LEVELKIT_STATUS} */ (code)], code, message: err.message }
  }
  if (code !== undefined && Object.hasOwn(UNAVAILABLE, code)) {
    return { statusCode: 503, code, message: UNAVAILABLE[/** @type {keyof typeof UNAVAILABLE} */ (code)] }
  }
  const status = err && err.statusCode
  if (Number.isInteger(status) && status >= 400 && status < 500) {
    const own = code !== undefined && Object.hasOwn(FASTIFY_CODES, code) ? FASTIFY_CODES[/** @type {keyof typeof FASTIFY_CODES} */ (code)] : undefined
    return { statusCode: status, code: own || (status === 404 ? 'NOT_FOUND' : 'BAD_REQUEST'), message: err.message }
  }
  return { statusCode: 500, code: 'INTERNAL', message: 'Internal server error' }
}

/**
 * Fastify's error handler: the error as JSON; a 500 is logged, since it is a
 * bug.
 * @param {any} err
 * @param {import('fastify').FastifyRequest} request
 * @param {import('fastify').FastifyReply} reply
 */
export function errorHandler (err, request, reply) {
  const { statusCode, code, message } = describeError(err)
  if (statusCode >= 500) request.log.error({ err }, 'request failed')
  return reply.code(statusCode).send({ error: { code, message } })
}

/**
 * Fastify's handler of unknown routes.
 * @param {import('fastify').FastifyRequest} request
 * @param {import('fastify').FastifyReply} reply
 */
export function notFoundHandler (request, reply) {
  return reply.code(404).send({ error: { code: 'NOT_FOUND', message: `No route ${request.method} ${request.url.split('?')[0].slice(0, 200)}` } })
}

/**
 * Fastify's clientErrorHandler: a request too malformed for HTTP to parse
 * (Node's parser refused it), answered in the same JSON before the socket
 * is closed.
 * @param {any} err
 * @param {import('node:net').Socket} socket
 */
export function clientErrorHandler (err, socket) {
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  const [status, code, message] = err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
    ? [408, 'REQUEST_TIMEOUT', 'The request took too long to arrive']
    : err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'HEADERS_TOO_LARGE', 'The request\'s headers are too large']
      : [400, 'BAD_REQUEST', 'Malformed HTTP request']
  const body = JSON.stringify({ error: { code, message } })
  if (socket.writable) socket.write(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`)
  socket.destroy()
}
