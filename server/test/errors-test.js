// What an error is answered with: a database out of reach is a 503 that
// names no host, not a 500.
import test from 'tape'
import { codes } from 'levelkit'
import { describeError } from '../lib/errors.js'

test('a database out of reach: 503 with levelkit\'s code and a message of the server\'s', t => {
  for (const code of [codes.BACKEND_UNAVAILABLE, codes.COMMIT_UNKNOWN]) {
    const { statusCode, code: answered, message } = describeError(Object.assign(new Error('PostgreSQL could not commit: connect ECONNREFUSED 10.1.2.3:5432'), { code }))
    t.same([statusCode, answered], [503, code], `${code}: 503`)
    t.doesNotMatch(message, /10\.1\.2\.3|ECONNREFUSED/, `${code}: without the host: ${message}`)
  }
  t.same(describeError(new Error('boom')), { statusCode: 500, code: 'INTERNAL', message: 'Internal server error' }, 'anything else is still a 500')
  t.end()
})
