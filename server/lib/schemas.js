// JSON schemas of the HTTP API. Validated without type coercion and without
// dropping unknown properties (app.js sets Ajv so): a wrong type or an unknown
// field is a 400, not something quietly fixed. Path and query values are
// strings, so ids there are checked as digits: 1 to 15 of them, no leading
// zero, always a safe integer.

const ID_DIGITS = '^[1-9][0-9]{0,14}$'

/** A positive integer id in JSON. */
const id = { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER }
/** A positive integer id in a path or query string. */
const idString = { type: 'string', pattern: ID_DIGITS }
const username = { type: 'string', minLength: 1, maxLength: 64 }
const password = { type: 'string', minLength: 1, maxLength: 1024 }

/** @param {Record<string, object>} properties @param {string[]} [required] */
function object (properties, required = Object.keys(properties)) {
  return { type: 'object', additionalProperties: false, required, properties }
}

const user = object({ id, username: { type: 'string' } })
const chat = object({
  id,
  name: { type: 'string' },
  adminId: id,
  members: { type: 'array', items: id },
  lastActivity: { type: 'number' },
  createdAt: { type: 'number' },
  private: { type: 'boolean' }
})
const message = object({
  id,
  chatId: id,
  senderId: id,
  text: { type: 'string' },
  timestamp: { type: 'number' },
  recipients: { type: 'array', items: id }
}, ['id', 'chatId', 'senderId', 'text', 'timestamp'])

const error = object({ error: object({ code: { type: 'string' }, message: { type: 'string' } }) })
const empty = { type: 'null' }

/** @param {number} status @param {object} schema */
function answers (status, schema) {
  return { [status]: schema, '4xx': error, '5xx': error }
}

const noQuery = object({}, [])
const chatParams = object({ id: idString })

export const schemas = {
  createUser: {
    body: object({ username, password }),
    querystring: noQuery,
    response: answers(201, user)
  },
  createSession: {
    body: object({ username, password }),
    querystring: noQuery,
    response: answers(201, object({ token: { type: 'string' }, userId: id, expiry: { type: 'number' } }))
  },
  deleteSession: {
    querystring: noQuery,
    response: answers(204, empty)
  },
  me: {
    querystring: noQuery,
    response: answers(200, user)
  },
  getUser: {
    params: object({ username }),
    querystring: noQuery,
    response: answers(200, user)
  },
  getUserById: {
    params: object({ userId: idString }),
    querystring: noQuery,
    response: answers(200, user)
  },
  getChats: {
    querystring: noQuery,
    response: answers(200, { type: 'array', items: chat })
  },
  createChat: {
    body: object({
      name: { type: 'string', minLength: 1, maxLength: 200 },
      members: { type: 'array', maxItems: 100, items: username },
      private: { type: 'boolean' },
      password
    }, ['name', 'members']),
    querystring: noQuery,
    response: answers(201, chat)
  },
  getChat: {
    params: chatParams,
    querystring: noQuery,
    response: answers(200, chat)
  },
  deleteChat: {
    params: chatParams,
    querystring: noQuery,
    response: answers(204, empty)
  },
  addMember: {
    params: chatParams,
    body: object({ username, password }, ['username']),
    querystring: noQuery,
    response: answers(204, empty)
  },
  removeMember: {
    params: object({ id: idString, userId: idString }),
    querystring: noQuery,
    response: answers(204, empty)
  },
  getMessages: {
    params: chatParams,
    querystring: object({
      from: idString,
      to: idString,
      // 1 to 100 messages a page.
      n: { type: 'string', pattern: '^(100|[1-9][0-9]?)$' }
    }, []),
    response: answers(200, { type: 'array', items: message })
  },
  sendMessage: {
    params: chatParams,
    body: object({
      text: { type: 'string', minLength: 1, maxLength: 2000 },
      to: { type: 'array', minItems: 1, maxItems: 100, items: id }
    }, ['text']),
    querystring: noQuery,
    response: answers(201, message)
  },
  directChat: {
    params: object({ userId: idString }),
    querystring: noQuery,
    response: answers(200, object({ chatId: id }))
  }
}

/**
 * Fastify's schemaErrorFormatter: Ajv's messages, but saying what a pattern
 * means and naming an unknown field.
 * @param {Array<{ keyword: string, instancePath?: string, message?: string, params: any }>} errors
 * @param {string} dataVar body, params or querystring
 */
export function schemaErrorFormatter (errors, dataVar) {
  const text = errors.map(e => {
    const where = dataVar + (e.instancePath || '')
    if (e.keyword === 'pattern') return `${where} must be ${e.params.pattern === ID_DIGITS ? 'a positive integer' : 'an integer from 1 to 100'}`
    if (e.keyword === 'additionalProperties') return `${where} has an unknown field ${JSON.stringify(String(e.params.additionalProperty).slice(0, 64))}`
    return `${where} ${e.message}`
  })
  return new Error(text.join(', '))
}
