// The HTTP load of bench/chat-server.js: the seed's three operations as
// request sequences, driven by autocannon (programmatic, keep-alive
// connections), and the same operations through Debian's siege, the seed's
// own tool.

import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import autocannon from 'autocannon'
import { prng } from 'levelkit-testkit/prng'
import { quantile } from './stats.js'

/** The measured operations, in the order the issue names them. */
export const OPERATIONS = Object.freeze([
  { key: 'chatList', label: 'get chat list', route: 'GET /api/chats' },
  { key: 'send', label: 'send message', route: 'POST /api/chats/:id/messages' },
  { key: 'messages', label: 'get messages (last 50)', route: 'GET /api/chats/:id/messages?n=50' }
])

// Requests per sequence: a measurement cycles through it.
const FEED_LENGTH = 20000
const WORDS = ['hello', 'ok', 'see', 'you', 'at', 'the', 'meeting', 'tomorrow', 'thanks', 'sure', 'lunch', 'deploy', 'is', 'done', 'ship', 'it']

/**
 * @typedef {{ method: string, path: string, headers: Record<string, string>, body?: string }} Request
 */

/**
 * The request sequence of an operation: random users (chat list) or random
 * chats and one of their members (send, messages), each request with that
 * user's bearer token. The same seed gives the same sequence, so every
 * server gets the same requests.
 * @param {string} op an OPERATIONS key
 * @param {{ tokens: string[], members: number[][], chats: number }} data
 *   `members[chatId - 1]`: the member ids of each chat; tokens[userId - 1]
 * @param {number} seed
 * @returns {Request[]}
 */
export function requestFeed (op, data, seed) {
  const random = prng(seed)
  const auth = (/** @type {number} */ userId) => `Bearer ${data.tokens[userId - 1]}`
  const member = () => {
    const chatId = 1 + random.int(data.chats)
    return { chatId, userId: random.pick(data.members[chatId - 1]) }
  }
  return Array.from({ length: FEED_LENGTH }, () => {
    if (op === 'chatList') {
      return { method: 'GET', path: '/api/chats', headers: { authorization: auth(1 + random.int(data.tokens.length)) } }
    }
    const { chatId, userId } = member()
    if (op === 'messages') {
      return { method: 'GET', path: `/api/chats/${chatId}/messages?n=50`, headers: { authorization: auth(userId) } }
    }
    if (op !== 'send') throw new Error(`Unknown operation ${op}`)
    let text = random.pick(WORDS)
    const length = 10 + random.int(140)
    while (text.length < length) text += ' ' + random.pick(WORDS)
    return {
      method: 'POST',
      path: `/api/chats/${chatId}/messages`,
      headers: { authorization: auth(userId), 'content-type': 'application/json' },
      body: JSON.stringify({ text: text.slice(0, length) })
    }
  })
}

/**
 * @typedef {{
 *   requests: number, seconds: number, reqPerSec: number, p50: number, p99: number,
 *   errors: number, timeouts: number, non2xx: number, statusCodes: Record<string, number>
 * }} LoadResult
 */

/**
 * Drive `feed` at `url` with `connections` keep-alive connections for
 * `duration` seconds, after `warmup` seconds of the same (not counted);
 * `timed()` is called between the two, and resolves before the timed part.
 * @param {{ url: string, feed: Request[], connections: number, duration: number, warmup: number, timed?: () => Promise<unknown> }} options
 * @returns {Promise<LoadResult>}
 */
export async function runLoad ({ url, feed, connections, duration, warmup, timed }) {
  let next = 0
  const options = {
    url,
    connections,
    pipelining: 1,
    timeout: 10,
    requests: [{
      setupRequest: (/** @type {any} */ request) => {
        const r = feed[next++ % feed.length]
        // A copy of the headers: autocannon adds Content-Length to the object.
        return { ...request, method: r.method, path: r.path, headers: { ...r.headers }, body: r.body }
      }
    }]
  }
  if (warmup > 0) await autocannon({ ...options, duration: warmup })
  if (timed) await timed()
  // autocannon's own percentiles are whole milliseconds; these are its
  // per-response times as measured (hrtime), 2xx only like its own.
  /** @type {number[]} */
  const latencies = []
  const instance = autocannon({ ...options, duration })
  instance.on('response', (/** @type {any} */ client, /** @type {number} */ status, /** @type {number} */ bytes, /** @type {number} */ ms) => {
    if (status >= 200 && status < 300) latencies.push(ms)
  })
  const result = await instance
  // Each status counted, from autocannon's per-code stats.
  /** @type {Record<string, number>} */
  const statusCodes = {}
  for (const [code, { count }] of Object.entries(result.statusCodeStats || {})) statusCodes[code] = Number(count)
  const requests = result.requests.total
  return {
    requests,
    seconds: result.duration,
    reqPerSec: requests / result.duration,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    statusCodes
  }
}

/** Whether Debian's siege is installed: its version, or null. */
export function siegeVersion () {
  // siege 4 prints its version on stderr.
  const { error, stdout, stderr } = spawnSync('siege', ['--version'], { encoding: 'utf8' })
  if (error) return null
  return (/SIEGE\s+(\S+)/.exec(stdout + stderr) || [])[1] || 'unknown'
}

// Siege's settings, spelled out rather than taken from ~/.siege/siege.conf
// (made on first run, and edited by hand on some machines): its defaults,
// except benchmark mode (no delay between requests), JSON output and no
// HTML parsing or log. `connection = close` is siege's default: a new TCP
// connection per request.
const SIEGE_RC = `verbose = false
quiet = false
json_output = true
logging = false
show-logfile = false
parser = false
protocol = HTTP/1.1
connection = close
delay = 0.0
benchmark = true
internet = false
accept-encoding = gzip, deflate
`

/**
 * Write siege's settings file in `dir`, and return its path.
 * @param {string} dir
 */
export function writeSiegeRc (dir) {
  const file = `${dir}/siegerc`
  fs.writeFileSync(file, SIEGE_RC)
  return file
}

/**
 * @typedef {{ transactions: number, elapsed: number, transPerSec: number, successful: number, failed: number, availability: number, responseTime: number }} SiegeResult
 */

/**
 * One siege run: 1 user (-c1), `reps` requests (-r), benchmark mode, one
 * URL (the request of `request`).
 * @param {{ url: string, request: Request, reps: number, rc: string }} options
 * @returns {Promise<SiegeResult>}
 */
export function runSiege ({ url, request, reps, rc }) {
  const args = ['-R', rc, '-c1', `-r${reps}`, '-b']
  for (const [name, value] of Object.entries(request.headers)) {
    if (name === 'content-type') args.push('-T', value)
    else args.push('-H', `${name}: ${value}`)
  }
  args.push(request.method === 'GET' ? url + request.path : `${url}${request.path} ${request.method} ${request.body}`)
  return new Promise((resolve, reject) => {
    const child = spawn('siege', args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', chunk => { stdout += chunk })
    child.stderr.on('data', chunk => { stderr += chunk })
    child.on('error', reject)
    child.on('close', code => {
      const json = stdout.slice(stdout.indexOf('{'), stdout.lastIndexOf('}') + 1)
      let stats
      try {
        stats = JSON.parse(json)
      } catch {
        return reject(new Error(`siege exited with ${code} and printed no statistics: ${(stderr || stdout).trim().slice(0, 500)}`))
      }
      resolve({
        transactions: stats.transactions,
        elapsed: stats.elapsed_time,
        transPerSec: stats.transaction_rate,
        successful: stats.successful_transactions,
        failed: stats.failed_transactions,
        availability: stats.availability,
        responseTime: stats.response_time
      })
    })
  })
}
