import { InstrumentedLevel, attempt, dump, failWritesTo } from '../../lib/backends.js'
import { equal, assert, project } from '../../lib/checks.js'

export const functions = ['applyChanges', 'transfer']

export function scenario (random) {
  const keys = random.words(random.int(18, 30), 4, 9)
  const del = keys.splice(0, random.int(4, 8))
  const modify = keys.splice(0, random.int(3, 6))
  const untouched = keys.splice(0, 3)
  const added = keys.splice(0, random.int(2, 5))
  const phrase = () => random.words(2).join(' ')
  const initial = [...del, ...modify, ...untouched].map(key => [key, phrase()])
  const put = Object.fromEntries([...modify, ...added].map(key => [key, phrase()]))
  const accounts = random.words(4, 4, 8).map(name => [name, random.int(500, 1000)])
  const transfers = []
  for (let i = 0; i < 5; i++) {
    const [from, to] = random.shuffle(accounts.map(a => a[0]))
    transfers.push({ from, to, amount: random.int(1, 80) })
  }
  return { initial, changes: { del: random.shuffle(del), put }, accounts, transfers, fault: transfers[0] }
}

async function fresh (entries) {
  const db = new InstrumentedLevel({ valueEncoding: 'json' })
  await db.open()
  await db.batch(entries.map(([key, value]) => ({ type: 'put', key, value })))
  db.resetCounts()
  return db
}

export async function exec ({ mod, scenario }) {
  const a = await fresh(scenario.initial)
  const apply = await a.measure(() => mod.applyChanges(a, scenario.changes))
  const applyState = await dump(a)

  const b = await fresh(scenario.accounts)
  const transfers = []
  for (const t of scenario.transfers) transfers.push(await b.measure(() => mod.transfer(b, t.from, t.to, t.amount)))
  const transferState = await dump(b)

  const c = await fresh(scenario.accounts)
  const removeFault = failWritesTo(c, scenario.fault.to)
  const fault = await attempt(() => mod.transfer(c, scenario.fault.from, scenario.fault.to, scenario.fault.amount))
  removeFault()
  const faultState = await dump(c)

  return { apply, applyState, transfers, transferState, fault, faultState }
}

const writes = (label, m) => ({ call: label, batches: m.counts.batches, puts: m.counts.puts, dels: m.counts.dels })

export const checks = [
  {
    id: 'apply-state',
    kind: 'state',
    title: 'applyChanges leaves the same contents as the reference',
    check: ({ learner, reference }) => equal(learner.applyState, reference.applyState, 'after applyChanges the database differs from the reference run (every del applied? every put?)')
  },
  {
    id: 'transfer-state',
    kind: 'state',
    title: 'transfers leave the right balances',
    check: ({ learner, reference }) => equal(learner.transferState, reference.transferState, 'after the transfers the balances differ from the reference run')
  },
  {
    id: 'one-batch',
    kind: 'behaviour',
    title: 'one physical batch per call, no single put/del',
    check: ({ learner }) => {
      const actual = [writes('applyChanges', learner.apply), ...learner.transfers.map((m, i) => writes(`transfer #${i + 1}`, m))]
      return equal(actual, actual.map(w => ({ ...w, batches: 1, puts: 0, dels: 0 })), 'each call must write with exactly one db.batch() (array or chained form)')
    }
  },
  {
    id: 'fault-atomic',
    kind: 'fault',
    title: 'a failed transfer rejects and changes no balance',
    check: ({ learner, reference }) => {
      const rejected = project(learner.fault, () => 'resolved') !== 'resolved'
      const balances = equal(learner.faultState, reference.faultState, 'the write to the `to` account failed, yet a balance changed: the two writes were not one atomic batch')
      if (!balances.ok) return balances
      return assert(rejected, 'the write failed but transfer() resolved: let the error reach the caller', { expected: 'rejects', actual: 'resolved' })
    }
  }
]
