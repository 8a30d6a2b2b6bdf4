// Two worker processes (test/fixtures/postgres-shared-worker.js, role
// 'failover') write one table in shared mode while its primary fails
// (`fail()`, called once some messages are in): they send to one chat and
// race to create the same usernames, each until `after` of its messages
// are acknowledged past the last id before the failover (told once fail()
// returns), or `deadline` ms have passed (a failure of the test). Then:
// every acknowledged write is there, every write reported as failed (but
// LEVELKIT_COMMIT_UNKNOWN) is not, and nothing else failed; message ids are 1..N with no gap nor
// duplicate; each username has one owner, its acknowledged winner; each
// process's watcher saw 1..N in order, the last one written after the
// workload by another process (heard of only through its listening
// connection); check() is clean. With locking: 'serializable', only an
// outcome left unknown fails (a lost transaction's sections run again).
// test/postgres-shared-hosts-test.js (a TCP
// proxy cut) and test/failover/postgres-failover-shared-test.js (Patroni).
import { ChatStore } from '../../chat.js'
import { startWorker } from './shared-workers.js'
import { range } from './common.js'
import { FAST } from '../fixtures/postgres-shared-worker.js'

/**
 * @param {any} t @param {any} db the table, opened in shared mode by the test (on the primary, however found)
 * @param {{ connectionString: string, table: string, after: number, deadline: number, fail: () => Promise<void>, options?: object, lifetime?: number, locking?: 'table' | 'keys' | 'serializable' }} run
 *   after: messages each worker writes on the new primary; deadline: ms from
 *   the start the workers write for at most; options: more options of the
 *   workers' open(); locking: theirs (db's too)
 */
export async function sharedFailover (t, db, { connectionString, table, after, deadline, fail, options = {}, lifetime, locking = 'table' }) {
  const store = new ChatStore(db, { passwordCost: FAST })
  const senders = [await store.createUser({ username: 'sender0', password: 'x' }), await store.createUser({ username: 'sender1', password: 'x' })]
  const chatId = await store.createChat({ name: 'failover', adminId: senders[0], userIds: [senders[1]] })
  const names = range(0, 19).map(i => `racer${i}`)
  const workers = await Promise.all(senders.map((senderId, worker) => startWorker(connectionString, table, 'failover', { inFlight: 4, chatId, senderId, worker, names, after, deadline, lifetime }, locking, options)))
  for (const w of workers) w.go()
  let seq = 0
  for (let i = 0; i < 2000 && seq < 20; i++) {
    await new Promise(resolve => setTimeout(resolve, 25))
    seq = await store.messages.lastSeq(chatId)
  }
  t.comment(`the primary fails ${seq} messages in`)
  // (Workers write until told of the failover: not for ever if it fails.)
  await fail().catch(err => {
    for (const w of workers) w.child.kill()
    throw err
  })
  const atCut = await store.messages.lastSeq(chatId)
  for (const w of workers) w.child.send({ cutAt: atCut })
  await Promise.all(workers.map(w => w.next(m => m?.written === true)))
  // Heard of by the workers only through their listening connections.
  await store.addChatMessage({ chatId, senderId: senders[0], text: 'last' })
  const messages = await store.getChatMessages(chatId, { from: 1, n: 100000 })
  const total = messages.length
  for (const w of workers) w.child.send({ until: total })
  const results = await Promise.all(workers.map(w => w.result()))
  t.deepEqual(messages.map(m => m.id), range(1, total), `stored: ids 1..${total}, no gap, no duplicate`)
  const texts = messages.map(m => m.text)
  t.is(new Set(texts).size, texts.length, 'no message stored twice')
  const byId = new Map(messages.map(m => [m.id, m.text]))
  const stored = new Set(texts)
  const sent = results.flatMap(r => r.sent)
  const acked = sent.filter(s => s.id !== undefined)
  const failed = sent.filter(s => s.id === undefined)
  t.deepEqual(acked.filter(s => byId.get(s.id) !== s.text), [], `all ${acked.length} acknowledged messages are there, under their ids`)
  t.deepEqual(failed.filter(s => s.code !== 'LEVELKIT_COMMIT_UNKNOWN' && stored.has(s.text)), [], `none of the ${failed.length} reported as failed is there`)
  /** @type {Record<string, number>} */
  const kinds = {}
  for (const s of failed) kinds[`${s.code} (committed: ${s.committed})`] = (kinds[`${s.code} (committed: ${s.committed})`] ?? 0) + 1
  t.comment(`${acked.length} acknowledged; failed: ${JSON.stringify(kinds)}`)
  // Only what was in flight at the cut: the batch (or a batch sent on its dead connection) and what was decided with it.
  t.deepEqual(failed.filter(s => !(s.code === 'LEVELKIT_BACKEND_UNAVAILABLE' && s.committed === false) && s.code !== 'LEVELKIT_ABORTED' && s.code !== 'LEVELKIT_COMMIT_UNKNOWN'), [], 'nothing else failed: the writer lock, the reads and the listening connection waited for the new primary')
  if (locking === 'serializable') {
    // A transaction lost with its connection, not committed, is as a serialization failure: its sections run again.
    t.deepEqual(failed.filter(s => s.code !== 'LEVELKIT_COMMIT_UNKNOWN'), [], 'with locking: \'serializable\', sections whose transaction was lost ran again: nothing else failed')
  }
  for (const [i, r] of results.entries()) {
    const past = r.sent.filter((/** @type {any} */ s) => s.id > atCut).length
    t.ok(past >= after, `worker ${i} wrote ${past} messages on the new primary${r.stopped ? `: stopped by ${r.stopped}, before ${after}` : ''}`)
    t.deepEqual(r.watched, range(1, total), `worker ${i}'s watcher saw 1..${total} in order, the last one written by another process after the workload (it listened again)`)
  }
  const users = results.flatMap(r => r.users)
  const wrong = []
  let owners = 0
  for (const username of names) {
    const attempts = users.filter(u => u.username === username)
    const won = attempts.filter(u => u.id !== undefined)
    const owner = await store.getUser(username)
    if (owner) owners++
    // Owned by the one acknowledged winner, or by an attempt whose outcome was reported unknown.
    const right = won.length === 1 ? owner?.id === won[0].id : won.length === 0 && (!owner || attempts.some(u => u.code === 'LEVELKIT_COMMIT_UNKNOWN'))
    if (!right) wrong.push({ username, attempts, owner: owner?.id })
  }
  t.deepEqual(wrong, [], `each of ${names.length} usernames raced for is owned by its one acknowledged winner, or nobody (${owners} owned)`)
  t.is(await store.users.count(), owners + 2, 'no other user stored')
  const result = await db.check()
  t.deepEqual(result.problems, [], 'check() reports no problems')
}
