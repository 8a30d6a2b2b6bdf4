#!/usr/bin/env node
// The chat service: npm start, or levelkit-chat [--port n] [--host h]
// [--data dir | --memory | --backend postgres --connection-string url]
import { parseArgs } from 'node:util'

const USAGE = `Usage: levelkit-chat [options]

  --port <n>                 port to listen on (default: $PORT, else 3000; 0 picks a free one)
  --host <host>              address to listen on (default: $HOST, else 127.0.0.1)
  --backend <name>           leveldb (default), memory or postgres
  --data <dir>               leveldb: the database's directory (default: ./data)
  --memory                   the same as --backend memory: everything is lost on exit
  --connection-string <url>  postgres: postgresql://user:password@host:port/database
                             (default: $DATABASE_URL)
  --table <name>             postgres: the table (default: levelkit_chat); any number
                             of levelkit-chat processes may serve the same table
  --help                     show this

SIGTERM or SIGINT (Ctrl-C) stops it gracefully: requests in flight finish,
WebSockets are closed with 1001, the database is closed, and it exits 0
(1 if that takes more than 5 seconds).`

const SHUTDOWN_LIMIT = 5000
const BACKENDS = ['leveldb', 'memory', 'postgres']
const DEFAULT_TABLE = 'levelkit_chat'

/** @param {string} message @param {number} code @returns {never} */
function fail (message, code) {
  console.error(`levelkit-chat: ${message}`)
  process.exit(code)
}

/** @type {{ port?: string, host?: string, backend?: string, data?: string, memory?: boolean, 'connection-string'?: string, table?: string, help?: boolean }} */
let args
try {
  args = parseArgs({
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      backend: { type: 'string' },
      data: { type: 'string' },
      memory: { type: 'boolean' },
      'connection-string': { type: 'string' },
      table: { type: 'string' },
      help: { type: 'boolean' }
    }
  }).values
} catch (err) {
  fail(`${/** @type {Error} */ (err).message}\n\n${USAGE}`, 2)
}
if (args.help) {
  console.log(USAGE)
  process.exit(0)
}
if (args.backend !== undefined && !BACKENDS.includes(args.backend)) fail(`--backend is one of ${BACKENDS.join(', ')}, got ${JSON.stringify(args.backend)}`, 2)
if (args.memory && args.data !== undefined) fail('give --data or --memory, not both', 2)
if (args.memory && args.backend !== undefined && args.backend !== 'memory') fail(`give --memory or --backend ${args.backend}, not both`, 2)
const backend = args.memory ? 'memory' : args.backend ?? 'leveldb'
if (args.data !== undefined && backend !== 'leveldb') fail(`--data is the LevelDB directory: not with --backend ${backend}`, 2)
for (const flag of /** @type {const} */ (['connection-string', 'table'])) {
  if (args[flag] !== undefined && backend !== 'postgres') fail(`--${flag} goes with --backend postgres`, 2)
}
const portText = args.port ?? (process.env.PORT || '3000')
if (!/^[0-9]{1,5}$/.test(portText) || Number(portText) > 65535) fail(`the port must be an integer from 0 to 65535, got ${JSON.stringify(portText)}`, 2)
const port = Number(portText)
const host = args.host ?? (process.env.HOST || '127.0.0.1')
const location = args.data ?? './data'
const table = args.table ?? DEFAULT_TABLE
if (!/^[a-z_][a-z0-9_]{0,62}$/.test(table)) fail(`--table must be a lowercase SQL identifier (a-z, 0-9 and _, not starting with a digit, at most 63 characters), got ${JSON.stringify(table)}`, 2)
const connectionString = backend === 'postgres' ? postgresUrl(args['connection-string'] ?? process.env.DATABASE_URL) : ''
const where = backend === 'memory'
  ? 'in memory'
  : backend === 'leveldb' ? `LevelDB at ${location}` : `PostgreSQL table ${table} at ${redacted(connectionString)}, shared`

/**
 * The connection string, checked before anything connects: a
 * postgres:// or postgresql:// URL (pg takes anything, and reads a word it
 * cannot parse as a host name to look up). Its password is never printed.
 * @param {string | undefined} text @returns {string}
 */
function postgresUrl (text) {
  const code = 'BAD_CONNECTION_STRING'
  if (text === undefined || text === '') fail(`--backend postgres needs --connection-string <url> or $DATABASE_URL, e.g. postgresql://user:password@localhost:5432/chat (${code})`, 2)
  /** @type {URL} */
  let url
  try {
    url = new URL(text)
  } catch {
    fail(`the connection string is not a URL: give postgresql://user:password@host:port/database (${code})`, 2)
  }
  if (url.protocol !== 'postgresql:' && url.protocol !== 'postgres:') fail(`the connection string must start with postgresql:// or postgres://, got ${url.protocol}// (${code})`, 2)
  return text
}

/** The connection string without its password, to print. @param {string} text */
function redacted (text) {
  const url = new URL(text)
  if (url.password !== '') url.password = '***'
  return url.href
}

// Loaded once the arguments are known good: --help and a wrong flag answer at once.
const [{ open }, { ChatStore }, { buildApp }, { levelkitKv }] = await Promise.all([
  import('levelkit'), import('levelkit/chat'), import('../lib/app.js'), import('../lib/kv.js')
])

// Signals are handled from the start: one during start-up stops the server
// once it is up.
/** @type {any} */
let db = null
/** @type {any} */
let app = null
/** @type {() => void} */
let started = () => {}
const starting = new Promise(resolve => { started = () => resolve(undefined) })
let stopping = false
/** @param {string} signal */
async function stop (signal) {
  if (stopping) fail(`${signal} again: exiting without waiting`, 1)
  stopping = true
  console.log(`levelkit-chat: ${signal}, shutting down`)
  setTimeout(() => fail(`still shutting down after ${SHUTDOWN_LIMIT / 1000} s: exiting`, 1), SHUTDOWN_LIMIT)
  await starting
  try {
    await app.close()
    await db.close()
  } catch (err) {
    fail(`shutting down failed: ${/** @type {Error} */ (err).message}`, 1)
  }
  process.exit(0)
}
process.on('SIGTERM', () => { stop('SIGTERM') })
process.on('SIGINT', () => { stop('SIGINT') })

try {
  db = await open(backend === 'memory'
    ? { backend: 'memory' }
    : backend === 'leveldb'
      ? { backend: 'leveldb', location }
      // Shared: any number of levelkit-chat processes serve one table.
      : { backend: 'postgres', connectionString, table, shared: true })
} catch (err) {
  const { code, message } = /** @type {any} */ (err)
  if (code === 'LEVELKIT_LOCKED') {
    fail(backend === 'leveldb'
      ? `the database at ${location} is in use by another process, most likely another levelkit-chat (LEVELKIT_LOCKED): stop it, or give this one another --data`
      : `the table ${table} is open in another process without shared mode (LEVELKIT_LOCKED): levelkit-chat processes share a table, other programs must open it with shared: true too`, 1)
  }
  if (backend === 'postgres') fail(`cannot open the table ${table} at ${redacted(connectionString)} (${code ?? 'ERROR'}): ${message}`, 1)
  throw err
}

try {
  const store = await ChatStore.open(db)
  app = await buildApp({ store, kv: levelkitKv(db), logger: { level: 'warn', stream: process.stderr } })
  await app.listen({ port, host })
} catch (err) {
  await db.close()
  const { code, message } = /** @type {any} */ (err)
  fail(`${code ? `${code}: ` : ''}${message}`, 1)
}

const { port: actualPort } = app.server.address()
const url = `http://${host.includes(':') ? `[${host}]` : host}:${actualPort}`
console.log(`levelkit-chat listening on ${url} (${where})`)
started()
