import { InstrumentedLevel, attempt, failWritesTo } from '../../lib/backends.js'
import { equal, assert, all, project } from '../../lib/checks.js'

export const functions = ['putUser', 'updateEmail', 'delUser', 'byEmail']

export function scenario (random) {
  const names = random.words(random.int(5, 7), 3, 7)
  const emails = random.words(40, 4, 9).map(w => `${w}@example.com`)
  const users = names.map((name, i) => ({ id: `u${String(i + 1).padStart(2, '0')}`, name, email: emails.pop() }))
  const ops = users.map(user => ({ op: 'putUser', args: [user] }))
  const current = new Map(users.map(u => [u.id, u]))
  const ids = () => [...current.keys()]
  let changed
  for (let i = 0; i < 6; i++) {
    const id = random.pick(ids())
    if (i === 0) changed = id
    if (i === 2) {
      // Replace a whole record with a new email: putUser must drop the old entry too.
      const user = { ...current.get(id), name: random.word(), email: emails.pop() }
      current.set(id, user)
      ops.push({ op: 'putUser', args: [user] })
    } else {
      const email = emails.pop()
      current.set(id, { ...current.get(id), email })
      ops.push({ op: 'updateEmail', args: [id, email] })
    }
  }
  // The user whose email changed first is kept: a lookup of its old email
  // is what shows a stale index entry (a deleted user's would read nothing).
  for (const id of random.shuffle(ids().filter(id => id !== changed)).slice(0, 2)) {
    current.delete(id)
    ops.push({ op: 'delUser', args: [id] })
  }
  const faultUser = { id: 'u99', name: random.word(), email: emails.pop() }
  const raceUser = { id: 'u42', name: random.word(), email: emails.pop() }
  return { ops, faultUser, faultEmail: emails.pop(), raceUser, raceEmails: emails.splice(0, 8) }
}

async function fresh () {
  const db = new InstrumentedLevel()
  await db.open()
  return db
}

// The state an index check needs: records by id, and index entries.
async function contents (db) {
  return {
    records: await db.sublevel('users', { valueEncoding: 'json' }).iterator().all(),
    index: await db.sublevel('byEmail').iterator().all()
  }
}

export async function exec ({ mod, scenario, random }) {
  // 1. A sequence of writes, one at a time, then lookups of every email.
  const db = await fresh()
  const writes = []
  for (const { op, args } of scenario.ops) {
    const m = await db.measure(() => mod[op](db, ...args))
    writes.push({ call: `${op}(${args.map(a => typeof a === 'string' ? a : a.id).join(', ')})`, ...m })
  }
  const emails = [...new Set(scenario.ops.flatMap(({ op, args }) => op === 'putUser' ? [args[0].email] : op === 'updateEmail' ? [args[1]] : []))].sort()
  const lookups = []
  for (const email of emails) lookups.push({ email, ...await attempt(() => mod.byEmail(db, email)) })
  const sequence = await contents(db)

  // 2. An index write that fails.
  const f = await fresh()
  const faultSetup = await attempt(() => mod.putUser(f, scenario.faultUser))
  const beforeFault = await contents(f)
  const removeFault = failWritesTo(f, `!byEmail!${scenario.faultEmail}`)
  const fault = await attempt(() => mod.updateEmail(f, scenario.faultUser.id, scenario.faultEmail))
  removeFault()
  const afterFault = await contents(f)

  // 3. Concurrent updates of one user, with slow reads to widen the race.
  const r = await fresh()
  const raceSetup = await attempt(() => mod.putUser(r, scenario.raceUser))
  r.getLatency = () => random.int(1, 6)
  const race = await attempt(() => Promise.all(scenario.raceEmails.map(email => mod.updateEmail(r, scenario.raceUser.id, email))))
  r.getLatency = null
  const afterRace = await contents(r)

  return { writes, lookups, sequence, faultSetup, fault, beforeFault, afterFault, raceSetup, race, afterRace }
}

// The index a set of records implies: one [email, id] per record, in key order.
const implied = (records) => records.map(([id, user]) => [user.email, id]).sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)

export const checks = [
  {
    id: 'lookups',
    kind: 'result',
    title: 'byEmail finds the right user (or undefined) for every email',
    check: ({ learner, reference }) => equal(learner.lookups, reference.lookups, 'byEmail(db, email) should resolve with the user object that has that email now, or undefined')
  },
  {
    id: 'index-matches-records',
    kind: 'state',
    title: 'after puts, replacements, email changes and deletes the index matches the records',
    check: ({ learner, reference }) => all(
      equal(learner.sequence.records, reference.sequence.records, 'the user records differ from the reference run'),
      equal(learner.sequence.index, implied(learner.sequence.records), 'the index must hold exactly one [email, id] entry per user: stale or missing entries are shown below')
    )
  },
  {
    id: 'one-batch-per-op',
    kind: 'behaviour',
    title: 'each write operation is one physical batch',
    check: ({ learner }) => {
      const actual = learner.writes.map(w => ({ call: w.call, batches: w.counts.batches, puts: w.counts.puts, dels: w.counts.dels, ...(w.threw ? { threw: w.threw } : {}) }))
      return equal(actual, actual.map(w => ({ call: w.call, batches: 1, puts: 0, dels: 0 })), 'write the record and its index entries with one db.batch() per operation (and without throwing)')
    }
  },
  {
    id: 'fault-leaves-primary',
    kind: 'fault',
    title: 'a failed index write leaves the record and the index unchanged',
    check: ({ learner }) => all(
      equal(project(learner.faultSetup, () => 'resolved'), 'resolved', 'putUser failed while setting up this check'),
      equal(learner.afterFault, learner.beforeFault, 'the index write failed, yet the data changed: record and index must be written in one batch'),
      assert(project(learner.fault, () => 'resolved') !== 'resolved', 'the write failed but updateEmail resolved: let the error reach the caller', { expected: 'rejects', actual: 'resolved' })
    )
  },
  {
    id: 'concurrent-updates',
    kind: 'behaviour',
    title: 'concurrent updateEmail calls on one user leave exactly one index entry',
    check: ({ learner }) => all(
      equal(project(learner.raceSetup, () => 'resolved'), 'resolved', 'putUser failed while setting up this check'),
      equal(project(learner.race, () => 'resolved'), 'resolved', 'the concurrent updateEmail calls should all succeed'),
      equal(learner.afterRace.index, implied(learner.afterRace.records), 'stale index entries after concurrent updates: serialize the read-old-record-then-write steps (a promise queue per database)')
    )
  }
]
