// Smoke test of bench/chat-server.js: one run against the real server
// (server/) with a tiny data set and half-second measurements, then the
// shape of what it prints and writes. It never asserts a rate or a latency:
// a benchmark measures, it is not a timed test. And the WebSocket fan-out
// driver against a minimal server speaking the live protocol, where a
// dropped message must show.

import test from 'tape'
import http from 'node:http'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { WebSocketServer } from 'ws'
import { fanOut, probeWebSocket } from '../lib/chat-server-fanout.js'
import { siegeVersion } from '../lib/chat-server-load.js'

const script = fileURLToPath(new URL('../chat-server.js', import.meta.url))
const OPS = ['chatList', 'send', 'messages']
const SERVERS = ['levelkit', 'sqlite', 'maps', 'noop']

/** @param {string[]} args @returns {Promise<{ code: number, stdout: string, stderr: string }>} */
function run (args) {
  return new Promise(resolve => {
    execFile(process.execPath, [script, ...args], { timeout: 180000 }, (err, stdout, stderr) => {
      resolve({ code: err ? /** @type {any} */ (err).code ?? 1 : 0, stdout, stderr })
    })
  })
}

test('bench/chat-server.js with a tiny data set, against the server of server/', async t => {
  const out = mkdtempSync(join(tmpdir(), 'levelkit-bench-chat-server-'))
  const siege = siegeVersion()
  try {
    const { code, stdout, stderr } = await run([
      '--runs', '1', '--duration', '0.5', '--warmup', '0', '--users', '120', '--chats', '10', '--messages', '300',
      '--ws-rooms', '2', '--ws-rate', '5', '--ws-duration', '1', '--siege-reps', '20', '--siege-runs', '1',
      '--out', out, '--db-dir', out
    ])
    t.is(code, 0, `exit 0${code ? `: ${stderr}\n${stdout}` : ''}`)
    for (const label of ['get chat list', 'send message', 'get messages (last 50)']) t.ok(stdout.includes(label), `summary row: ${label}`)
    t.match(stdout, /lk\/SQLite/, 'prints levelkit/SQLite')
    t.match(stdout, /lk\/no-op/, 'prints levelkit/no-op')
    t.match(stdout, /maps\/no-op/, 'prints the server over Maps against the no-op')
    t.is((stdout.match(/^ {4}.*, levelkit\/(SQLite|no-op): .* (met|MISSED)$/gm) || []).length, 6, 'each goal at 64 connections, met or missed')

    const dirs = readdirSync(out).filter(name => name.startsWith('chat-server-'))
    t.is(dirs.length, 1, 'one output folder')
    const dir = join(out, dirs[0])

    const lines = readFileSync(join(dir, 'results.csv'), 'utf8').trimEnd().split('\n')
    t.is(lines[0], 'operation,connections,run,server,requests,seconds,req_per_sec,p50_ms,p99_ms,errors,timeouts,non2xx,server_cpu_ms,client_cpu_ms', 'CSV header')
    const rows = lines.slice(1).map(line => line.split(','))
    t.is(rows.length, OPS.length * 2 * SERVERS.length, 'one row per operation, connection count and server')
    for (const op of OPS) {
      for (const c of ['1', '64']) {
        t.same(rows.filter(r => r[0] === op && r[1] === c).map(r => r[3]).sort(), [...SERVERS].sort(), `${op} ×${c}: every server`)
      }
    }
    t.ok(rows.every(r => Number(r[4]) > 0 && Number(r[6]) > 0 && Number(r[7]) > 0 && Number(r[8]) >= Number(r[7])), 'requests, rate and latencies of every row')
    t.ok(rows.every(r => r[9] === '0' && r[11] === '0'), 'no errors and no non-2xx answers')

    const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8'))
    t.is(summary.benchmark, 'chat-server')
    t.is(summary.summary.length, OPS.length * 2, 'a summary per operation and connection count')
    for (const entry of summary.summary) {
      t.ok(SERVERS.every(s => entry.targets[s].reqPerSec > 0 && entry.targets[s].serverCpuUsPerReq > 0 && entry.targets[s].clientCores > 0), `${entry.op} ×${entry.connections}: req/s and CPU of every server and of the client`)
      t.ok(entry.levelkitOverSqlite > 0 && entry.levelkitOverNoop > 0 && entry.mapsOverNoop > 0, `${entry.op} ×${entry.connections}: the ratios`)
    }
    t.same(summary.goals.map((/** @type {any} */ g) => `${g.op} ${g.what}`), OPS.flatMap(op => [`${op} levelkit/SQLite`, `${op} levelkit/no-op`]), 'the goals')
    t.ok(summary.goals.every((/** @type {any} */ g) => typeof g.met === 'boolean' && g.value > 0), 'each goal met or not')
    t.ok(summary.servers.levelkit.dbBytes > 0 && summary.servers.sqlite.dbBytes > 0, 'database sizes')
    t.same(summary.problems, [], 'no problems')

    t.same(summary.fanout.summary.map((/** @type {any} */ s) => s.target), ['levelkit', 'sqlite'], 'fan-out on both stores')
    t.ok(summary.fanout.summary.every((/** @type {any} */ s) => s.deliveredPerSec > 0 && s.missing === 0 && s.gaps === 0 && s.duplicates === 0), 'every message delivered, in order')
    t.match(stdout, /WebSocket fan-out +clients/, 'the fan-out table')

    if (siege) {
      t.match(stdout, /siege: trans\/s/, 'the siege table')
      t.ok(stdout.includes('1,033.00') && stdout.includes('12.81'), 'beside the seed\'s figures')
      const siegeRows = readFileSync(join(dir, 'siege.csv'), 'utf8').trimEnd().split('\n').slice(1).map(line => line.split(','))
      t.is(siegeRows.length, OPS.length * SERVERS.length, 'one siege row per operation and server')
      t.ok(siegeRows.every(r => r[3] === '20' && r[6] === '20' && r[7] === '0'), 'every siege transaction successful')
      t.ok(readFileSync(join(dir, 'chat-server-siege.svg'), 'utf8').includes('seed 000, LevelDB'), 'the siege plot')
    } else {
      t.match(stdout, /siege: not installed, skipped/, 'siege missing: said so')
    }

    const svg = readFileSync(join(dir, 'chat-server.svg'), 'utf8')
    t.ok(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"') && svg.trimEnd().endsWith('</svg>'), 'SVG document')
    t.is((svg.match(/<rect class="bar"/g) || []).length, OPS.length * 2 * SERVERS.length, 'one bar per operation, connection count and server')
    t.ok(svg.includes('levelkit (LevelDB)') && svg.includes('SQLite (better-sqlite3)') && svg.includes('no-op route') && svg.includes('the server over Maps'), 'legend')

    t.same(readdirSync(out).filter(name => name.startsWith('levelkit-chat-server-')), [], 'the databases are removed')
  } finally {
    rmSync(out, { recursive: true, force: true })
  }
})

test('bench/chat-server.js refuses bad options', async t => {
  const { code, stderr } = await run(['--ops', 'nope'])
  t.is(code, 2, 'exit 2')
  t.match(stderr, /Unknown op "nope"/)
})

/**
 * A minimal server of the live protocol for the fan-out driver: tokens are
 * user ids, subscribe replays the history after `after`, send appends and
 * broadcasts to the chat's subscribers.
 */
async function liveStub () {
  const server = http.createServer((request, response) => response.writeHead(404).end())
  const wss = new WebSocketServer({ noServer: true })
  /** @type {Map<number, Array<any>>} */
  const history = new Map()
  /** @type {Map<number, Set<import('ws').WebSocket>>} */
  const subscribers = new Map()
  server.on('upgrade', (request, socket, head) => {
    const url = new URL(request.url || '', 'http://localhost')
    if (url.pathname !== '/api/ws') return socket.end('HTTP/1.1 404 Not Found\r\n\r\n')
    const userId = Number(url.searchParams.get('token'))
    wss.handleUpgrade(request, socket, head, client => {
      client.on('message', data => {
        const frame = JSON.parse(String(data))
        const messages = history.get(frame.chatId) || []
        history.set(frame.chatId, messages)
        if (frame.type === 'subscribe') {
          if (!subscribers.has(frame.chatId)) subscribers.set(frame.chatId, new Set())
          subscribers.get(frame.chatId)?.add(client)
          for (const message of messages.slice(frame.after)) client.send(JSON.stringify({ type: 'message', chatId: frame.chatId, message }))
        } else if (frame.type === 'send') {
          const message = { id: messages.length + 1, chatId: frame.chatId, senderId: userId, text: frame.text, timestamp: Date.now() }
          messages.push(message)
          for (const other of subscribers.get(frame.chatId) || []) other.send(JSON.stringify({ type: 'message', chatId: frame.chatId, message }))
        }
      })
    })
  })
  await new Promise(resolve => server.listen(0, '127.0.0.1', () => resolve(undefined)))
  const address = /** @type {import('node:net').AddressInfo} */ (server.address())
  return { url: `http://127.0.0.1:${address.port}`, close: () => { wss.close(); server.close() } }
}

test('the fan-out driver: every member of every room gets every message, in order, with its latency', async t => {
  const stub = await liveStub()
  try {
    const rooms = [1, 2, 3].map(chatId => ({ chatId, members: Array.from({ length: 30 }, (_, i) => ({ userId: chatId * 100 + i, token: String(chatId * 100 + i) })) }))
    t.is(await probeWebSocket(stub.url, '1'), null, 'probe: the server has /api/ws')
    t.match(String(await probeWebSocket(stub.url.replace(/:\d+$/, ':1'), '1')), /GET \/api\/ws failed/, 'probe: no server')
    const result = await fanOut({ url: stub.url, rooms, rate: 20, duration: 1 })
    t.is(result.clients, 90, '90 clients')
    t.ok(result.sent >= 50 && result.sent <= 63, `about 20 messages/s per room for 1 s (${result.sent})`)
    t.is(result.expected, result.sent * 30, 'each to 30 members')
    t.is(result.delivered, result.expected, 'all delivered')
    t.is(result.missing, 0)
    t.same([result.gaps, result.duplicates], [0, 0], 'no gap, no duplicate')
    t.ok(result.deliveredPerSec > 0 && result.p50 > 0 && result.p99 >= result.p50 && result.max >= result.p99, 'rate and latencies')
  } finally {
    stub.close()
  }
})
