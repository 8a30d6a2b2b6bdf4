// The chat model's crash test, through HTTP: the levelkit-chat bin on
// LevelDB in a child process, clients here sending messages (whispers too)
// and recording each 201, and a SIGKILL at a random moment; several times on
// the same data. After each kill the database must pass ChatStore.check()
// and hold every acknowledged message as acknowledged, with gap-free ids and
// nothing that was never sent; after each restart the server must answer
// with all of them over HTTP. SERVER_CRASH_SEED=<n> replays the random
// choices (not the timing).
import test from 'tape'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open } from 'levelkit'
import { ChatStore } from 'levelkit/chat'
import { prng } from 'levelkit-testkit/prng'
import { startBin, client, signUp } from './util.js'

const SEED = process.env.SERVER_CRASH_SEED ? Number(process.env.SERVER_CRASH_SEED) : Date.now() % 0x7fffffff
const CYCLES = 5
const SENDERS = 8

/** @typedef {{ id: number, senderId: number, text: string, recipients?: number[] }} Acked */

test('SIGKILL while clients send messages over HTTP: every acknowledged message is kept, check() is clean', async t => {
  t.comment(`seed ${SEED} (replay with SERVER_CRASH_SEED=${SEED})`)
  const rand = prng(SEED)
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-chat-crash-'))
  const data = join(dir, 'db')
  /** @type {Map<number, Acked>} acknowledged messages by id */
  const acked = new Map()
  /** @type {Set<string>} the text of every message sent, acknowledged or not */
  const sent = new Set()
  /** @type {any[]} */
  let users = []
  let chatId = 0
  let inFlightAtKills = 0
  let failed = false
  try {
    for (let cycle = 0; cycle < CYCLES && !failed; cycle++) {
      const server = startBin(['--port', '0', '--data', data])
      const url = await server.url
      if (!url) {
        t.fail(`cycle ${cycle}: the server did not start: ${server.output().stderr}`)
        failed = true
        break
      }
      const api = client(url)
      if (cycle === 0) {
        users = [await signUp(api, 'ann'), await signUp(api, 'bob'), await signUp(api, 'carol')]
        chatId = (await api('POST', '/api/chats', { token: users[0].token, body: { name: 'crash', members: ['bob', 'carol'] } })).body.id
      } else {
        // Through HTTP after the restart: ann is in every whisper, so she sees all.
        const seen = await allMessages(api, chatId, users[0].token)
        const missing = [...acked.values()].filter(m => !seen.has(m.id))
        t.same(missing, [], `cycle ${cycle}: after the restart the server answers with all ${acked.size} acknowledged messages`)
        if (missing.length > 0) failed = true
      }

      // Senders until the kill, each recording its 201s.
      const state = { killed: false }
      let inFlight = 0
      const sender = async (/** @type {number} */ s) => {
        for (let n = 0; !state.killed; n++) {
          const from = users[s % 3]
          const text = `c${cycle} s${s} n${n}`
          // A third of them whispers between ann and another member.
          const whisper = rand.int(3) === 0
          const body = whisper ? { text, to: from === users[0] ? [users[1 + rand.int(2)].id] : [users[0].id] } : { text }
          sent.add(text)
          inFlight++
          try {
            const answer = await api('POST', `/api/chats/${chatId}/messages`, { token: from.token, body })
            if (answer.status !== 201) throw new Error(`${answer.status} ${answer.text}`)
            acked.set(answer.body.id, { id: answer.body.id, senderId: from.id, text, ...(whisper ? { recipients: body.to } : {}) })
          } catch (err) {
            if (!state.killed) throw err
            inFlightAtKills++
          } finally {
            inFlight--
          }
        }
      }
      const ackedBefore = acked.size
      const senders = Array.from({ length: SENDERS }, (_, s) => sender(s))
      // The kill comes after real work however loaded the machine is, then
      // at a random moment.
      for (const deadline = Date.now() + 30000; acked.size - ackedBefore <= 20 && Date.now() < deadline;) {
        await new Promise(resolve => setTimeout(resolve, 20))
      }
      await new Promise(resolve => setTimeout(resolve, rand.int(600)))
      const pending = inFlight
      state.killed = true
      server.child.kill('SIGKILL')
      const exit = await server.exited
      await Promise.all(senders)
      t.is(exit.signal, 'SIGKILL', `cycle ${cycle}: killed with ${pending} requests in flight, ${acked.size} messages acknowledged so far`)

      const problems = await verify(data, chatId, acked, sent)
      t.same(problems, [], `cycle ${cycle}: the database is consistent and holds every acknowledged message`)
      if (problems.length > 0) failed = true
    }
    if (!failed) {
      t.ok(acked.size > CYCLES * 20, `many messages were acknowledged (${acked.size})`)
      t.ok(inFlightAtKills > 0, `kills hit requests in flight (${inFlightAtKills})`)
    }
  } finally {
    if (failed) t.comment(`seed ${SEED}; database kept in ${dir}`)
    else rmSync(dir, { recursive: true, force: true })
  }
})

/**
 * Every message of the chat the user sees, by id, read in pages of 100.
 * @param {ReturnType<typeof client>} api @param {number} chatId @param {string} token
 * @returns {Promise<Map<number, any>>}
 */
async function allMessages (api, chatId, token) {
  const seen = new Map()
  for (let from = 1; ; from += 100) {
    const page = await api('GET', `/api/chats/${chatId}/messages?from=${from}&n=100`, { token })
    if (page.status !== 200) throw new Error(`${page.status} ${page.text}`)
    for (const message of page.body) seen.set(message.id, message)
    if (page.body.length === 0) return seen
  }
}

/**
 * Open the killed server's database here: check() and the messages against
 * the acknowledgements. Returns the problems found.
 * @param {string} location @param {number} chatId @param {Map<number, Acked>} acked @param {Set<string>} sent
 */
async function verify (location, chatId, acked, sent) {
  const problems = []
  const db = await open({ backend: 'leveldb', location })
  try {
    const store = await ChatStore.open(db)
    const { problems: found } = await store.check()
    for (const p of found) problems.push(`check(): ${p.type}: ${p.message}`)
    const ann = /** @type {any} */ (await store.getUser('ann'))
    const stored = []
    for (let from = 1; ; from += 500) {
      const page = await store.getChatMessages(chatId, { from, n: 500, viewerId: ann.id })
      if (!page || page.length === 0) break
      stored.push(...page)
    }
    const ids = stored.map(m => m.id)
    if (ids.some((id, i) => id !== i + 1)) problems.push(`message ids are not 1..${ids.length} without gaps`)
    const byId = new Map(stored.map(m => [m.id, m]))
    for (const message of acked.values()) {
      const found = byId.get(message.id)
      const { id, senderId, text, recipients } = found ?? {}
      if (!found) problems.push(`acknowledged message ${message.id} (${message.text}) is missing`)
      else if (JSON.stringify({ id, senderId, text, recipients }) !== JSON.stringify(message)) problems.push(`message ${message.id} is ${JSON.stringify(found)}, acknowledged as ${JSON.stringify(message)}`)
    }
    const texts = new Set()
    for (const message of stored) {
      if (!sent.has(message.text)) problems.push(`message ${message.id} (${message.text}) was never sent`)
      if (texts.has(message.text)) problems.push(`${message.text} is stored twice`)
      texts.add(message.text)
    }
  } finally {
    await db.close()
  }
  return problems
}
