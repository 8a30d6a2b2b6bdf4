import { InstrumentedLevel, attempt } from '../../lib/backends.js'
import { failTupleWrites } from '../../lib/probes.js'
import { equal, all, assert } from '../../lib/checks.js'
import { tupleEncoding } from 'levelkit'

export const functions = ['join', 'leave', 'membersOf', 'groupsOf']

// Names where one is a prefix of another ('dev', 'devops'): a range that
// treats the first element as a string prefix reads (and returns) both.
function names (random, count) {
  const base = random.word(3, 4)
  const set = new Set([base, base + random.word(2, 3)])
  while (set.size < count) set.add(random.word(3, 7))
  return [...set]
}

const pairs = (model) => [...model].map(k => k.split('\u0000')).sort(cmp)
const cmp = (a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0

export function scenario (random) {
  const users = names(random, random.int(6, 8))
  const groups = names(random, random.int(4, 5))
  const model = new Set() // 'group\0user'
  const ops = []
  const queries = []
  const query = (fn, arg) => {
    const answer = [...model].map(k => k.split('\u0000'))
      .filter(([g, u]) => fn === 'membersOf' ? g === arg : u === arg)
      .map(([g, u]) => fn === 'membersOf' ? u : g)
      .sort()
    queries.push({ fn, arg, expected: answer, after: ops.length })
  }
  const apply = (op, user, group) => {
    const key = group + '\u0000' + user
    const had = model.has(key)
    if (op === 'join') model.add(key)
    else model.delete(key)
    ops.push({ op, user, group, changes: had !== (op === 'join'), groupUsers: pairs(model), userGroups: pairs(model).map(([g, u]) => [u, g]).sort(cmp) })
  }
  for (let i = 0; i < 40; i++) {
    const members = [...model].map(k => k.split('\u0000'))
    const r = random.next()
    if (r < 0.5 || members.length === 0) {
      apply('join', random.pick(users), random.pick(groups))
    } else if (r < 0.87) {
      // a duplicate join, or a member leaving
      const [g, u] = random.pick(members)
      apply(r < 0.62 ? 'join' : 'leave', u, g)
    } else {
      apply('leave', random.pick(users), random.pick(groups)) // often not a member
    }
    if (i % 8 === 7) {
      query('membersOf', random.pick(groups))
      query('groupsOf', random.pick(users))
    }
  }
  // Make sure the prefix pairs end with members: ('dev', 'devops'), ('ann', 'annika').
  apply('join', users[2], groups[1])
  apply('join', users[1], groups[2])
  apply('leave', users[3], groups[0])
  for (const g of groups) query('membersOf', g)
  for (const u of users) query('groupsOf', u)
  query('membersOf', 'zz-' + random.word()) // nobody
  query('groupsOf', 'zz-' + random.word()) // nobody
  // Faults: a new membership and an existing one, failing on either direction.
  const faultUser = random.pick(users.slice(1))
  const faultGroup = random.pick(groups)
  return { users, groups, ops, queries, fault: { user: faultUser, group: faultGroup, other: [users[0], groups[0]] } }
}

async function fresh () {
  const db = new InstrumentedLevel()
  await db.open()
  return db
}

const sublevels = (db) => [db.sublevel('groupUsers', { keyEncoding: tupleEncoding }), db.sublevel('userGroups', { keyEncoding: tupleEncoding })]

// Both directions as [a, b] pairs (or what reading them threw).
async function contents (db) {
  const [gu, ug] = sublevels(db)
  const outcome = await attempt(async () => ({ groupUsers: await gu.keys().all(), userGroups: await ug.keys().all() }))
  return outcome.threw ? { threw: outcome.threw } : outcome.value
}

export async function exec ({ mod, scenario }) {
  // 1. The sequence, with the state after every op and queries in between.
  const db = await fresh()
  const ops = []
  const queries = []
  const runQueries = async (after) => {
    for (const q of scenario.queries.filter(q => q.after === after)) {
      queries.push({ fn: q.fn, arg: q.arg, ...await db.measure(() => mod[q.fn](db, q.arg)) })
    }
  }
  for (const [i, { op, user, group }] of scenario.ops.entries()) {
    await runQueries(i)
    const m = await db.measure(() => mod[op](db, user, group))
    ops.push({ op, user, group, ...m, state: await contents(db) })
  }
  await runQueries(scenario.ops.length)

  // 2. Faults: each direction's write fails, for a join and for a leave.
  const faults = []
  const { user, group, other } = scenario.fault
  const cases = [
    ['join', user, group, '!groupUsers!', [group, user]],
    ['join', user, group, '!userGroups!', [user, group]],
    ['leave', other[0], other[1], '!groupUsers!', [other[1], other[0]]],
    ['leave', other[0], other[1], '!userGroups!', [other[0], other[1]]]
  ]
  for (const [op, u, g, prefix, key] of cases) {
    const f = await fresh()
    const [gu, ug] = sublevels(f)
    // Start from a membership of `other` only, written by the verifier.
    await f.batch([{ type: 'put', sublevel: gu, key: [other[1], other[0]], value: '' }, { type: 'put', sublevel: ug, key: other, value: '' }])
    const before = await contents(f)
    // Either key order, so a layout mistake shows up in both-directions only.
    const removers = [failTupleWrites(f, prefix, key), failTupleWrites(f, prefix, [key[1], key[0]])]
    const outcome = await attempt(() => mod[op](f, u, g))
    for (const remove of removers) remove()
    const after = await contents(f)
    // The same call without the fault must then go through.
    const retried = !(await attempt(() => mod[op](f, u, g))).threw
    faults.push({ call: `${op}(${u}, ${g}) while writes to ${prefix.slice(1, -1)} ${JSON.stringify(key)} fail`, before, after, rejected: !!outcome.threw, retried })
  }
  return { ops, queries, faults }
}

const callText = (o) => `${o.op}(${o.user}, ${o.group})`
const answers = (obs, fn) => obs.queries.filter(q => q.fn === fn).map(q => ({ call: `${fn}(${q.arg})`, ...(q.threw ? { threw: q.threw } : { returned: q.value }) }))
const expectedAnswers = (scenario, fn) => scenario.queries.filter(q => q.fn === fn).map(q => ({ call: `${fn}(${q.arg})`, returned: q.expected }))
const returnedCount = (q) => Array.isArray(q.value) ? q.value.length : 0

export const checks = [
  {
    id: 'members-of',
    kind: 'result',
    title: 'membersOf returns the group\'s members, in order',
    check: ({ learner, scenario }) => equal(answers(learner, 'membersOf'), expectedAnswers(scenario, 'membersOf'), 'membersOf(db, group) should resolve with the user ids of that group, sorted, and nothing else (a group named like the start of another must not pick up its members)')
  },
  {
    id: 'groups-of',
    kind: 'result',
    title: 'groupsOf returns the user\'s groups, in order',
    check: ({ learner, scenario }) => equal(answers(learner, 'groupsOf'), expectedAnswers(scenario, 'groupsOf'), 'groupsOf(db, user) should resolve with the group ids of that user, sorted, and nothing else')
  },
  {
    id: 'both-directions',
    kind: 'state',
    title: 'after every join and leave both sublevels hold exactly the memberships',
    check: ({ learner, scenario }) => {
      const i = scenario.ops.findIndex((op, i) => !learner.ops[i] || !equal(learner.ops[i].state, { groupUsers: op.groupUsers, userGroups: op.userGroups }).ok)
      if (i === -1) return equal(learner.ops.length, scenario.ops.length, 'not every op ran')
      const op = scenario.ops[i]
      return equal(
        { after: `op #${i + 1}: ${callText(op)}`, ...learner.ops[i].state },
        { after: `op #${i + 1}: ${callText(op)}`, groupUsers: op.groupUsers, userGroups: op.userGroups },
        'groupUsers must hold [group, user] and userGroups [user, group] for every membership, and nothing else (a duplicate join adds nothing; leaving a group you are not in changes nothing)'
      )
    }
  },
  {
    id: 'one-batch-per-op',
    kind: 'behaviour',
    title: 'each join and leave is one atomic batch',
    check: ({ learner, scenario }) => {
      const actual = learner.ops.map(o => ({ call: callText(o), batches: o.counts.batches, puts: o.counts.puts, dels: o.counts.dels }))
      const expected = actual.map((a, i) => ({ ...a, batches: scenario.ops[i].changes ? 1 : Math.min(a.batches, 1), puts: 0, dels: 0 }))
      return equal(actual, expected, 'write both directions with one db.batch() (sublevel option) per join or leave: two writes can be torn apart by a crash')
    }
  },
  {
    id: 'fault-no-half-membership',
    kind: 'fault',
    title: 'when one direction cannot be written, neither is',
    check: ({ learner }) => all(
      ...learner.faults.map(f => equal({ call: f.call, state: f.after }, { call: f.call, state: f.before }, 'one direction failed to write, yet the other changed: a half-written membership')),
      ...learner.faults.map(f => assert(f.rejected, `${f.call}: the write failed but the call resolved: let the error reach the caller`, { expected: 'rejects', actual: 'resolved' })),
      ...learner.faults.map(f => assert(f.retried, `${f.call.replace(/ while .*/, '')}: without the fault, the same call should then succeed`, { expected: 'resolves', actual: 'rejects' }))
    )
  },
  {
    id: 'tight-reads',
    kind: 'behaviour',
    title: 'each query reads only its own range',
    check: ({ learner }) => {
      const actual = learner.queries.map(q => ({ call: `${q.fn}(${q.arg})`, returned: returnedCount(q), read: q.counts.entriesRead }))
      return equal(actual, actual.map(a => ({ ...a, read: Math.min(a.read, a.returned + 1) })), 'some queries read more entries than they returned: range over [x] .. [x, \'\\uffff\'] of one direction instead of scanning and filtering')
    }
  }
]
