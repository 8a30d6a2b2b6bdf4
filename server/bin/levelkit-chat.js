#!/usr/bin/env node
// The chat service: npm start, or levelkit-chat [--port n] [--host h] [--data dir | --memory]
import { parseArgs } from 'node:util'

const USAGE = `Usage: levelkit-chat [options]

  --port <n>     port to listen on (default: $PORT, else 3000; 0 picks a free one)
  --host <host>  address to listen on (default: $HOST, else 127.0.0.1)
  --data <dir>   the LevelDB database (default: ./data)
  --memory       keep everything in memory instead (lost on exit)
  --help         show this

SIGTERM or SIGINT (Ctrl-C) stops it gracefully: requests in flight finish,
WebSockets are closed with 1001, the database is closed, and it exits 0
(1 if that takes more than 5 seconds).`

const SHUTDOWN_LIMIT = 5000

/** @param {string} message @param {number} code @returns {never} */
function fail (message, code) {
  console.error(`levelkit-chat: ${message}`)
  process.exit(code)
}

/** @type {{ port?: string, host?: string, data?: string, memory?: boolean, help?: boolean }} */
let args
try {
  args = parseArgs({
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      data: { type: 'string' },
      memory: { type: 'boolean' },
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
if (args.memory && args.data !== undefined) fail('give --data or --memory, not both', 2)
const portText = args.port ?? (process.env.PORT || '3000')
if (!/^[0-9]{1,5}$/.test(portText) || Number(portText) > 65535) fail(`the port must be an integer from 0 to 65535, got ${JSON.stringify(portText)}`, 2)
const port = Number(portText)
const host = args.host ?? (process.env.HOST || '127.0.0.1')
const location = args.data ?? './data'

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
  db = await open(args.memory ? { backend: 'memory' } : { backend: 'leveldb', location })
} catch (err) {
  if (/** @type {any} */ (err).code === 'LEVELKIT_LOCKED') {
    fail(`the database at ${location} is in use by another process, most likely another levelkit-chat (LEVELKIT_LOCKED): stop it, or give this one another --data`, 1)
  }
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
console.log(`levelkit-chat listening on ${url} (${args.memory ? 'in memory' : `LevelDB at ${location}`})`)
started()
