// The levelkit-chat bin in a child process: its flags and defaults, a
// graceful shutdown on SIGTERM and SIGINT (the request in flight finishes,
// exit 0 within 5 s; a request that never finishes makes it exit 1 after
// 5 s), and a second server on the same data failing fast with
// LEVELKIT_LOCKED.
import test from 'tape'
import http from 'node:http'
import net from 'node:net'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open } from 'levelkit'
import { ChatStore } from 'levelkit/chat'
import { startBin, client, signUp } from './util.js'

const sleep = (/** @type {number} */ ms) => new Promise(resolve => setTimeout(resolve, ms))

/** @param {string} prefix */
function tempDir (prefix) {
  return mkdtempSync(join(tmpdir(), `levelkit-chat-${prefix}-`))
}

/**
 * Start a POST whose body is only half sent: the request is in flight until
 * `finish()` sends the rest.
 * @param {string} url @param {string} token @param {any} body
 */
function halfSentPost (url, token, body) {
  const data = Buffer.from(JSON.stringify(body))
  const request = http.request(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': data.length, authorization: `Bearer ${token}` } })
  /** @type {Promise<{ status: number, body: any, connection: string | undefined }>} */
  const answer = new Promise((resolve, reject) => {
    request.on('response', response => {
      let text = ''
      response.setEncoding('utf8').on('data', chunk => { text += chunk }).on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text), connection: response.headers.connection }))
    })
    request.on('error', reject)
  })
  answer.catch(() => {})
  request.flushHeaders()
  request.write(data.subarray(0, 10))
  return { answer, finish: () => request.end(data.subarray(10)), abort: () => request.destroy() }
}

test('SIGTERM: the request in flight finishes, new connections are refused, the database closes, exit 0 within 5 s', async t => {
  const dir = tempDir('graceful')
  const data = join(dir, 'db')
  try {
    const server = startBin(['--port', '0', '--data', data])
    const url = await server.url
    t.ok(url, `listening: ${url}`)
    if (!url) return
    const api = client(url)
    const ann = await signUp(api, 'ann')
    const chat = (await api('POST', '/api/chats', { token: ann.token, body: { name: 'x', members: [] } })).body

    const inFlight = halfSentPost(`${url}/api/chats/${chat.id}/messages`, ann.token, { text: 'sent during shutdown' })
    // And on a raw connection: a request in flight, then one more sent after it.
    const raw = net.connect(Number(new URL(url).port), '127.0.0.1')
    let rawReply = ''
    raw.setEncoding('utf8').on('data', chunk => { rawReply += chunk })
    const rawClosed = new Promise(resolve => raw.on('close', resolve))
    const rawBody = JSON.stringify({ text: 'also during shutdown' })
    raw.write(`POST /api/chats/${chat.id}/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ann.token}\r\nContent-Type: application/json\r\nContent-Length: ${rawBody.length}\r\n\r\n${rawBody.slice(0, 5)}`)
    await sleep(300)
    const signalled = Date.now()
    server.child.kill('SIGTERM')
    await sleep(300)
    t.is(server.child.exitCode, null, 'still running while a request is in flight')
    const refused = await fetch(`${url}/api/me`).then(() => 'answered', (/** @type {any} */ err) => err.cause?.code ?? err.message)
    t.is(refused, 'ECONNREFUSED', 'new connections are refused')
    inFlight.finish()
    const answer = await inFlight.answer
    t.same([answer.status, answer.body.text], [201, 'sent during shutdown'], 'the request in flight is answered')
    raw.write(rawBody.slice(5) + `GET /api/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ann.token}\r\n\r\n`)
    await rawClosed
    const replies = rawReply.split(/(?=HTTP\/1\.1 )/)
    t.match(replies[0] ?? '', /^HTTP\/1\.1 201 /, 'on a raw connection too')
    t.match(replies[1] ?? '', /^HTTP\/1\.1 200 [^]*Connection: close[^]*"username":"ann"/, 'and a request that arrives after it on that connection is answered, then the connection closed')
    const exit = await server.exited
    t.same([exit.code, exit.signal], [0, null], 'exit 0')
    t.ok(exit.at - signalled < 5000, `within 5 s (${exit.at - signalled} ms)`)
    t.match(server.output().stdout, /SIGTERM, shutting down/)
    t.is(server.output().stderr, '', 'nothing on stderr')

    const db = await open({ backend: 'leveldb', location: data })
    try {
      const store = await ChatStore.open(db)
      t.same((await store.getChatMessages(chat.id))?.map(m => m.text).sort(), ['also during shutdown', 'sent during shutdown'], 'the database was closed with the messages in it')
      t.same((await store.check()).problems, [])
    } finally {
      await db.close()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('SIGINT too; a request that never finishes makes it give up after 5 s with exit 1', async t => {
  const dir = tempDir('forced')
  try {
    const quick = startBin(['--port', '0', '--data', join(dir, 'quick')])
    const server = startBin(['--port', '0', '--data', join(dir, 'stuck')])
    t.ok(await quick.url)
    quick.child.kill('SIGINT')
    const quickExit = await quick.exited
    t.same([quickExit.code, quickExit.signal], [0, null], 'SIGINT: exit 0')
    t.match(quick.output().stdout, /SIGINT, shutting down/)

    const url = await server.url
    if (!url) return t.fail('no URL')
    const ann = await signUp(client(url), 'ann')
    const stuck = halfSentPost(`${url}/api/chats`, ann.token, { name: 'never', members: [] })
    await sleep(300)
    const signalled = Date.now()
    server.child.kill('SIGTERM')
    const exit = await server.exited
    const took = exit.at - signalled
    t.same([exit.code, exit.signal], [1, null], 'exit 1')
    t.ok(took >= 4900 && took < 6500, `after 5 s (${took} ms)`)
    t.match(server.output().stderr, /still shutting down after 5 s: exiting/)
    stuck.abort()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a second server on the same --data fails fast with LEVELKIT_LOCKED and exit 1', async t => {
  const dir = tempDir('locked')
  const data = join(dir, 'db')
  try {
    const first = startBin(['--port', '0', '--data', data])
    t.ok(await first.url, 'the first one runs')
    const started = Date.now()
    const second = startBin(['--port', '0', '--data', data])
    const exit = await second.exited
    t.same([exit.code, exit.signal], [1, null], 'the second exits 1')
    t.ok(exit.at - started < 5000, `fast (${exit.at - started} ms)`)
    t.match(second.output().stderr, /LEVELKIT_LOCKED/, 'naming LEVELKIT_LOCKED')
    t.ok(second.output().stderr.includes(data), 'and the data directory')
    t.doesNotMatch(second.output().stdout, /listening/, 'without listening')
    const api = client(/** @type {string} */ (await first.url))
    t.is((await api('POST', '/api/users', { body: { username: 'ann', password: 'pw' } })).status, 201, 'the first one still answers')
    first.child.kill('SIGTERM')
    t.is((await first.exited).code, 0)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('flags and defaults: ./data, PORT and HOST, --memory, --help, bad flags', async t => {
  const cwd = tempDir('flags')
  // All at once: each start takes a second.
  const byDefault = startBin(['--port', '0'], { cwd })
  const byEnv = startBin(['--memory'], { cwd, env: { PORT: '0', HOST: 'localhost' } })
  const flagsWin = startBin(['--memory', '--port', '0', '--host', '127.0.0.1'], { cwd, env: { PORT: '1', HOST: 'nowhere.invalid' } })
  const port3000 = startBin(['--memory'], { cwd, env: { PORT: '', HOST: '' } })
  const help = startBin(['--help'])
  const bad = [[['--port', 'x'], /port must be an integer/], [['--port', '70000'], /port must be an integer/], [['--memory', '--data', 'x'], /not both/], [['--what'], /Unknown option/]]
    .map(([args, message]) => ({ args, message, run: startBin(/** @type {string[]} */ (args), { cwd }) }))
  const servers = [byDefault, byEnv, flagsWin, port3000]
  try {
    t.match(await byDefault.url ?? '', /^http:\/\/127\.0\.0\.1:\d+$/, 'on 127.0.0.1 by default')
    t.match(byDefault.output().stdout, /LevelDB at \.\/data/)
    t.ok(existsSync(join(cwd, 'data', 'CURRENT')), 'LevelDB in ./data')

    const envUrl = await byEnv.url
    t.match(envUrl ?? '', /^http:\/\/localhost:\d+$/, 'PORT and HOST')
    t.match(byEnv.output().stdout, /in memory/, '--memory')
    t.is((await client(/** @type {string} */ (envUrl))('POST', '/api/users', { body: { username: 'ann', password: 'pw' } })).status, 201, 'and it answers')

    t.match(await flagsWin.url ?? '', /^http:\/\/127\.0\.0\.1:\d+$/, 'flags over PORT and HOST')

    // Port 3000 unless told otherwise (if something else has it, the bin says so).
    const defaultUrl = await port3000.url
    if (defaultUrl) t.is(defaultUrl, 'http://127.0.0.1:3000', 'port 3000 by default')
    else t.match(port3000.output().stderr, /EADDRINUSE.*3000/, 'port 3000 by default (taken here)')

    t.is((await help.exited).code, 0)
    t.match(help.output().stdout, /--data <dir>/)
    for (const { args, message, run } of bad) {
      const exit = await run.exited
      t.is(exit.code, 2, `${/** @type {string[]} */ (args).join(' ')}: exit 2`)
      t.match(run.output().stderr, /** @type {RegExp} */ (message))
    }
  } finally {
    for (const server of servers) server.child.kill('SIGTERM')
    const exits = await Promise.all(servers.map(server => server.exited))
    t.ok(exits.every(exit => exit.code === 0 || exit.code === 1), 'all stopped')
    t.is(exits[0].code, 0, 'the one on ./data exits 0')
    rmSync(cwd, { recursive: true, force: true })
  }
})
