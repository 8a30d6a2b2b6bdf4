import { rejects, usersSchema, settlesWithin, onModelWrite } from './index.js'

/** A promise and the functions that settle it. */
function deferred () {
  /** @type {(value?: any) => void} */
  let settle = () => {}
  /** @type {Promise<any>} */
  const promise = new Promise(resolve => { settle = resolve })
  return { promise, resolve: settle }
}

/**
 * Start a transaction that takes a lock with `lock(tx)` and holds it until
 * released, then runs `after(tx, what lock() read)` and commits. Resolves
 * once the lock is held, with the function that releases it (which resolves
 * when that transaction has committed).
 * @param {any} db @param {(tx: any) => Promise<any>} lock
 * @param {(tx: any, read: any) => Promise<unknown>} [after]
 * @returns {Promise<() => Promise<unknown>>}
 */
async function holdLock (db, lock, after) {
  const locked = deferred()
  const released = deferred()
  const done = db.transaction(async (/** @type {any} */ tx) => {
    const read = await lock(tx)
    locked.resolve()
    await released.promise
    if (after) await after(tx, read)
  })
  await locked.promise
  return () => {
    released.resolve()
    return done
  }
}

/** @param {number} ms */
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

// What must not wait gets seconds (a wait on a lock is forever, and a loaded
// CI machine with PostgreSQL behind a pool took over 500 ms once); what must
// wait is seen waiting after a short while.
const ANSWERS_MS = 5000
const WAITS_MS = 50

/** @param {any} test @param {any} common */
export default function (test, common) {
  async function bank (n = 10, balance = 100) {
    const db = await common.open()
    const accounts = db.collection('accounts', { indexes: { status: { key: a => a.status } } })
    await db.write(async w => {
      for (let i = 0; i < n; i++) await accounts.in(w).insert({ balance, status: 'open' })
    })
    return { db, accounts }
  }

  test(`${common.backend}: transaction() commits its writes as one batch and returns the callback's value`, async t => {
    const db = await common.open()
    const users = usersSchema(db)
    const chats = db.collection('chats')
    const members = db.relation('members', { from: chats, to: users })
    const messages = db.children('messages', { parent: chats, blockSize: 4 })
    const counts = db.counter('counts')
    const batches = []
    onModelWrite(db, ops => batches.push(ops.length))
    const result = await db.transaction(async (tx, attempt) => {
      const u = await users.in(tx).insert({ username: 'ann', age: 30 })
      const c = await chats.in(tx).insert({ name: 'general' })
      await members.in(tx).add(c, u)
      for (let i = 0; i < 6; i++) await messages.in(tx).append(c, { text: `m${i}` })
      await counts.in(tx).add('messages', 6)
      t.same(await users.in(tx).get(u), { id: u, username: 'ann', age: 30 }, 'get sees its own insert')
      t.same((await users.in(tx).getBy('username', 'ann')).id, u, 'getBy sees it')
      t.same((await users.in(tx).query({ index: 'byAge', gte: [30] }).all()).map(r => r.username), ['ann'], 'an index query sees it')
      t.same((await users.in(tx).query().all()).length, 1, 'a query by id sees it')
      t.is(await users.in(tx).count(), 1, 'count sees it')
      t.same(await members.in(tx).to(c).all(), [u], 'relation.to sees its edge')
      t.same((await messages.in(tx).range(c, { reverse: true, limit: 2 }).all()).map(m => m.text), ['m5', 'm4'], 'children.range sees its appends')
      t.is(await counts.in(tx).get('messages'), 6, 'counter.get sees its add')
      t.is(await users.get(u), undefined, 'outside, nothing is visible before the commit')
      return { u, c, attempt }
    })
    t.is(result.attempt, 1, 'the first attempt is 1')
    t.same(batches, [batches[0]], 'one batch')
    t.is((await users.get(result.u)).username, 'ann')
    t.same((await messages.range(result.c).all()).length, 6)
    t.same(await db.check(), { ok: true, problems: [], repaired: 0 })
    await db.close()
  })

  test(`${common.backend}: a transaction that throws writes nothing`, async t => {
    const { db, accounts } = await bank(2)
    const err = new Error('changed my mind')
    try {
      await db.transaction(async tx => {
        await accounts.in(tx).update(1, { balance: 0 })
        throw err
      })
      t.fail('should reject')
    } catch (e) {
      t.is(e, err, 'rejects with the callback\'s error, not retried')
    }
    t.is((await accounts.get(1)).balance, 100)
    await db.close()
  })

  test(`${common.backend}: a read that changed before the commit makes the transaction run again`, async t => {
    const { db, accounts } = await bank(2)
    const attempts = []
    const read = deferred()
    const written = deferred()
    const done = db.transaction(async (tx, attempt) => {
      attempts.push(attempt)
      const a = await accounts.in(tx).get(1)
      if (attempt === 1) {
        read.resolve()
        await written.promise
      }
      await accounts.in(tx).update(2, { balance: a.balance })
      return a.balance
    })
    await read.promise
    await accounts.update(1, { balance: 7 })
    written.resolve()
    t.is(await done, 7, 'the second attempt read the new value')
    t.same(attempts, [1, 2])
    t.is((await accounts.get(2)).balance, 7)
    await db.close()
  })

  test(`${common.backend}: reading a key that changed again is a conflict, reading one that changed before it was read is not`, async t => {
    const { db, accounts } = await bank(3)
    const attempts = []
    await db.transaction(async (tx, attempt) => {
      attempts.push(attempt)
      await accounts.in(tx).get(1)
      // Changed after the attempt began, before it was read: read as of now.
      if (attempt === 1) await accounts.update(2, { balance: 50 })
      t.is((await accounts.in(tx).get(2)).balance, 50, 'sees the value committed before it read the key')
      if (attempt === 1) await accounts.update(1, { balance: 60 })
      // Read again after it changed: the attempt cannot go on.
      return accounts.in(tx).get(1)
    })
    t.same(attempts, [1, 2], 'only the changed re-read made it run again')
    await db.close()
  })

  test(`${common.backend}: transactions inserting side by side do not conflict on the id sequence`, async t => {
    const { db, accounts } = await bank(2)
    let attempts = 0
    const ids = await Promise.all(Array.from({ length: 20 }, (_, i) => db.transaction(async tx => {
      attempts++
      const id = await accounts.in(tx).insert({ balance: i, status: 'new' })
      await sleep(1)
      return id
    })))
    t.is(attempts, 20, 'no attempt ran twice')
    t.is(new Set(ids).size, 20, 'twenty ids')
    t.ok(ids.every(id => id > 2), 'none of them taken before')
    t.is(await accounts.insert({ balance: 0, status: 'new' }), Math.max(...ids) + 1, 'the sequence is past all of them')
    t.same((await db.check()).problems, [])
    await db.close()
  })

  test(`${common.backend}: a put() of the id a transaction took for an insert makes it run again with another`, async t => {
    const { db, accounts } = await bank(2)
    const took = deferred()
    const go = deferred()
    const ids = []
    const inserting = db.transaction(async (tx, attempt) => {
      const id = await accounts.in(tx).insert({ balance: 1, status: 'tx' })
      ids.push(id)
      if (attempt === 1) {
        took.resolve(id)
        await go.promise
      }
      return id
    })
    const id = await took.promise
    t.is(await accounts.put(id, { balance: 2, status: 'put' }), true, 'the put creates the record')
    go.resolve()
    const final = await inserting
    t.is(ids.length, 2, 'the transaction ran again')
    t.isNot(final, id, 'with another id')
    t.is((await accounts.get(id)).status, 'put', 'the put is kept')
    t.is((await accounts.get(final)).status, 'tx')
    t.same((await db.check()).problems, [])
    await db.close()
  })

  // The sequence as the attempt sees it after its own insert is the value it
  // raises it to: an insert outside the transaction that takes the next id
  // raises it further, and the attempt's next insert must see that.
  for (const lock of [undefined, 'shared', 'soft', 'hard']) {
    test(`${common.backend}: an insert after an insert outside the transaction took the next id gets a new one (${lock ?? 'no'} lock)`, async t => {
      const { db, accounts } = await bank(2)
      const first = deferred()
      const go = deferred()
      const ids = []
      const inserting = db.transaction(async (tx, attempt) => {
        const a = accounts.in(tx)
        if (lock !== undefined) await a.get(1, { lock })
        const id = await a.insert({ balance: 1, status: 'tx' })
        if (attempt === 1) {
          first.resolve(id)
          await go.promise
        }
        return [id, await a.insert({ balance: 2, status: 'tx' })]
      })
      const id = await first.promise
      const outside = await accounts.insert({ balance: 3, status: 'outside' })
      t.isNot(outside, id, 'the insert outside takes another id than the transaction\'s')
      go.resolve()
      ids.push(...await inserting)
      t.is(new Set([...ids, outside]).size, 3, `three ids (${ids}, ${outside})`)
      t.is((await accounts.get(outside)).status, 'outside', 'the record inserted outside is kept')
      for (const [i, mine] of ids.entries()) t.is((await accounts.get(mine))?.balance, i + 1, `the transaction's record ${mine} is there`)
      t.is(await accounts.count(), 5)
      t.same((await db.check()).problems, [])
      await db.close()
    })
  }

  test(`${common.backend}: an insert whose id a locked transaction put meanwhile gets another`, async t => {
    const { db, accounts } = await bank(2)
    // It puts the id the sequence hands out next, holding a hard lock on it,
    // so the insert's read of its new record's key waits for its commit.
    const release = await holdLock(db, tx => accounts.in(tx).get(3, { lock: 'hard' }), tx => accounts.in(tx).put(3, { balance: 2, status: 'put' }))
    const inserting = db.transaction(tx => accounts.in(tx).insert({ balance: 1, status: 'tx' }))
    t.is(await settlesWithin(inserting, WAITS_MS), 'hung', 'the insert waits for the lock')
    await release()
    const id = await inserting
    t.isNot(id, 3, `the insert took another id (${id})`)
    t.is((await accounts.get(3)).status, 'put', 'the put is kept')
    t.is((await accounts.get(id))?.status, 'tx', 'the inserted record is there')
    t.is(await accounts.count(), 4)
    t.ok(await accounts.insert({ balance: 0, status: 'new' }) > id, 'the sequence is past both')
    t.same((await db.check()).problems, [])
    await db.close()
  })

  test(`${common.backend}: a put() of the id a transaction took and did not commit raises the sequence`, async t => {
    const { db, accounts } = await bank(2)
    const took = []
    await rejects(t, db.transaction(async tx => {
      took.push(await accounts.in(tx).insert({ balance: 1, status: 'tx' }))
      throw Object.assign(new Error('give up'), { code: 'TEST_ABORT' })
    }), 'TEST_ABORT')
    t.is(await accounts.put(took[0], { balance: 2, status: 'put' }), true, `the put of ${took[0]} creates the record`)
    t.same((await db.check()).problems, [], 'the sequence is not behind it')
    t.ok(await accounts.insert({ balance: 0, status: 'new' }) > took[0], 'an insert takes an id past it')
    await db.close()
  })

  test(`${common.backend}: a write outside a transaction between two of its writes of a versioned collection takes a version of its own`, async t => {
    const db = await common.open()
    const items = db.collection('items', { versioned: true })
    for (let i = 0; i < 3; i++) await items.insert({ n: 0 })
    const first = deferred()
    const go = deferred()
    const writing = db.transaction(async (tx, attempt) => {
      await items.in(tx).update(1, { n: 1 })
      if (attempt === 1) {
        first.resolve()
        await go.promise
      }
      await items.in(tx).update(3, { n: 1 })
    })
    await first.promise
    await items.update(2, { n: 1 })
    go.resolve()
    await writing
    const versions = await Promise.all([1, 2, 3].map(id => items.version(id)))
    t.is(new Set(versions).size, 3, `three versions (${versions})`)
    t.same((await db.check()).problems, [])
    await db.close()
  })

  test(`${common.backend}: a transaction writing a versioned collection while a db.write() scope that wrote it is open takes a version of its own`, async t => {
    const db = await common.open()
    const items = db.collection('items', { versioned: true })
    for (let i = 0; i < 2; i++) await items.insert({ n: 0 })
    const wrote = deferred()
    const go = deferred()
    // The scope has taken its version, and decides it only when it ends.
    const writing = db.write(async w => {
      await items.in(w).update(2, { n: 1 })
      wrote.resolve()
      await go.promise
    })
    await wrote.promise
    const committing = db.transaction(tx => items.in(tx).update(1, { n: 1 }))
    await sleep(5)
    go.resolve()
    await Promise.all([writing, committing])
    const versions = await Promise.all([1, 2].map(id => items.version(id)))
    t.is(new Set(versions).size, 2, `two versions (${versions})`)
    t.same((await db.check()).problems, [])
    await db.close()
  })

  test(`${common.backend}: transactions writing a versioned collection side by side do not conflict on its version counter`, async t => {
    const db = await common.open()
    const items = db.collection('items', { versioned: true })
    for (let i = 0; i < 10; i++) await items.insert({ n: 0 })
    let attempts = 0
    await Promise.all(Array.from({ length: 10 }, (_, i) => db.transaction(async tx => {
      attempts++
      const item = await items.in(tx).get(i + 1)
      await sleep(1)
      await items.in(tx).update(i + 1, { n: item.n + 1 })
    })))
    t.is(attempts, 10, 'no attempt ran twice')
    const versions = await Promise.all(Array.from({ length: 10 }, (_, i) => items.version(i + 1)))
    t.is(new Set(versions).size, 10, 'every record got a version of its own')
    t.ok(versions.every(v => v > 10), 'each newer than the inserts\' versions')
    await items.update(1, { n: 5 })
    t.ok(await items.version(1) > Math.max(...versions), 'a later write takes a newer version still')
    t.same((await db.check()).problems, [])
    await db.close()
  })

  test(`${common.backend}: a transaction gives up after maxRetries with LEVELKIT_CONFLICT`, async t => {
    const { db, accounts } = await bank(2)
    let runs = 0
    const err = await rejects(t, db.transaction(async tx => {
      runs++
      const a = await accounts.in(tx).get(1)
      await accounts.update(1, { balance: a.balance + 1 })
      await accounts.in(tx).update(2, { balance: a.balance })
    }, { maxRetries: 2 }), 'LEVELKIT_CONFLICT')
    t.is(runs, 3, 'ran once and retried twice')
    t.is(err.attempts, 3, 'the error says how many attempts')
    t.is((await accounts.get(2)).balance, 100, 'nothing of it was written')
    await db.close()
  })

  test(`${common.backend}: write skew is prevented (two doctors on call)`, async t => {
    const db = await common.open()
    const doctors = db.collection('doctors', { indexes: { onCall: { key: d => d.onCall ? [true] : undefined } } })
    for (const round of [0, 1, 2]) {
      const a = await doctors.insert({ onCall: true })
      const b = await doctors.insert({ onCall: true })
      const both = deferred()
      let reads = 0
      const goOff = (/** @type {number} */ me) => db.transaction(async (tx, attempt) => {
        const onCall = await doctors.in(tx).query({ index: 'onCall', eq: [true] }).all()
        if (attempt === 1 && ++reads === 2) both.resolve()
        if (attempt === 1) await both.promise
        if (onCall.filter(d => d.id === a || d.id === b).length < 2) return false
        await doctors.in(tx).update(me, { onCall: false })
        return true
      })
      const results = await Promise.all([goOff(a), goOff(b)])
      const still = [await doctors.get(a), await doctors.get(b)].filter(d => d.onCall).length
      t.is(still, 1, `round ${round}: one doctor is still on call`)
      t.same(results.slice().sort(), [false, true], 'one went off call, the other saw it and stayed')
    }
    await db.close()
  })

  test(`${common.backend}: a phantom insert into a range read is a conflict`, async t => {
    const { db, accounts } = await bank(0)
    // At most 3 open accounts, opened by concurrent transactions.
    const open = () => db.transaction(async tx => {
      const n = await accounts.in(tx).count({ index: 'status', eq: 'open' })
      if (n >= 3) return false
      await sleep(1)
      await accounts.in(tx).insert({ balance: 0, status: 'open' })
      return true
    }, { maxRetries: 50 })
    const results = await Promise.all(Array.from({ length: 8 }, open))
    t.is(results.filter(Boolean).length, 3, 'three opened')
    t.is(await accounts.count({ index: 'status', eq: 'open' }), 3, 'and no more')
    await db.close()
  })

  test(`${common.backend}: bank transfers keep the total (optimistic, soft and hard locks)`, async t => {
    // 1,000 accounts; half of the 200 transfers of each round between the
    // first ten, so transactions meet.
    const n = 1000
    const { db, accounts } = await bank(n)
    for (const lock of [undefined, 'soft', 'hard']) {
      const transfers = Array.from({ length: 200 }, (_, i) => {
        const among = i % 2 === 0 ? 10 : n
        const from = 1 + (i * 7919) % among
        const to = 1 + (i * 104729 + 1) % among
        if (from === to) return Promise.resolve(false)
        // Locks in id order: no deadlock to retry.
        const [first, second] = from < to ? [from, to] : [to, from]
        return db.transaction(async tx => {
          const one = await accounts.in(tx).get(first, lock && { lock })
          const two = await accounts.in(tx).get(second, lock && { lock })
          const [a, b] = first === from ? [one, two] : [two, one]
          const amount = 1 + (i % 40)
          if (a.balance < amount) return false
          await accounts.in(tx).update(from, { balance: a.balance - amount })
          await accounts.in(tx).update(to, { balance: b.balance + amount })
          return true
        // 200 at once: an attempt's time is mostly its wait behind the
        // others' commits, ~200 times one transaction's, past the default
        // 5 s on a loaded machine (postgres, load 20+). Not what is tested.
        }, { maxRetries: 100, lockTimeout: 10000, timeout: 60000 })
      })
      const done = await Promise.all(transfers)
      const all = await accounts.query().all()
      t.is(all.reduce((sum, a) => sum + a.balance, 0), n * 100, `${lock || 'optimistic'}: the total is unchanged`)
      t.ok(all.every(a => a.balance >= 0), 'no balance is negative')
      t.ok(done.filter(Boolean).length > 50, `transfers went through (${done.filter(Boolean).length} of 200)`)
    }
    t.same((await db.check()).problems, [])
    await db.close()
  })

  test(`${common.backend}: a soft lock makes a second locker wait, not retry; plain transaction reads pass`, async t => {
    const { db, accounts } = await bank(2)
    const attempts = []
    const release = await holdLock(db, tx => accounts.in(tx).get(1, { lock: 'soft' }), (tx, a) => accounts.in(tx).update(1, { balance: a.balance + 1 }))
    const plain = db.transaction(async tx => (await accounts.in(tx).get(1)).balance)
    t.is(await settlesWithin(plain, ANSWERS_MS), 100, 'a plain read in another transaction does not wait for a soft lock')
    const second = db.transaction(async (tx, attempt) => {
      attempts.push(attempt)
      const a = await accounts.in(tx).get(1, { lock: 'soft' })
      await accounts.in(tx).update(1, { balance: a.balance + 1 })
      return a.balance
    })
    t.is(await settlesWithin(second, WAITS_MS), 'hung', 'the second locker waits')
    await release()
    t.is(await second, 101, 'then reads what the first committed')
    t.same(attempts, [1], 'without running again')
    t.is((await accounts.get(1)).balance, 102)
    await db.close()
  })

  test(`${common.backend}: a hard lock makes plain transaction reads wait; reads outside transactions never wait`, async t => {
    const { db, accounts } = await bank(2)
    const release = await holdLock(db, tx => accounts.in(tx).get(1, { lock: 'hard' }), tx => accounts.in(tx).update(1, { balance: 5 }))
    t.is((await settlesWithin(accounts.get(1), ANSWERS_MS)).balance, 100, 'a read outside transactions answers at once')
    const plain = db.transaction(async tx => (await accounts.in(tx).get(1)).balance)
    t.is(await settlesWithin(plain, WAITS_MS), 'hung', 'a plain read in a transaction waits')
    await release()
    t.is(await plain, 5, 'and then reads the committed value')
    await db.close()
  })

  test(`${common.backend}: a model operation outside transactions waits for a lock on what it writes`, async t => {
    const { db, accounts } = await bank(2)
    const release = await holdLock(db, tx => accounts.in(tx).get(1, { lock: 'soft' }), (tx, a) => accounts.in(tx).update(1, { balance: a.balance + 10 }))
    const plain = accounts.update(1, change => ({ ...change, balance: change.balance * 2 }))
    t.is(await settlesWithin(plain, WAITS_MS), 'hung', 'an update of the locked record waits')
    t.isNot(await settlesWithin(accounts.update(2, { balance: 1 }), ANSWERS_MS), 'hung', 'an update of another record does not')
    await release()
    await plain
    t.is((await accounts.get(1)).balance, 220, 'the update ran after the holder committed, on its value')
    await db.close()
  })

  test(`${common.backend}: shared locks do not exclude each other; a writer waits for them`, async t => {
    const { db, accounts } = await bank(2)
    const held = deferred()
    const release = deferred()
    let holders = 0
    const readers = [0, 1].map(() => db.transaction(async tx => {
      await accounts.in(tx).get(1, { lock: 'shared' })
      if (++holders === 2) held.resolve()
      await release.promise
    }))
    t.isNot(await settlesWithin(held.promise, ANSWERS_MS), 'hung', 'two shared locks at once')
    const writer = db.transaction(async tx => {
      await accounts.in(tx).update(1, { balance: 1 })
    })
    t.is(await settlesWithin(writer, WAITS_MS), 'hung', 'a transaction writing the key waits for the shared locks')
    release.resolve()
    await Promise.all(readers)
    await writer
    t.is((await accounts.get(1)).balance, 1)
    await db.close()
  })

  test(`${common.backend}: a locked range makes a phantom insert wait`, async t => {
    const { db, accounts } = await bank(2)
    const locked = deferred()
    const release = deferred()
    const reader = db.transaction(async tx => {
      const open = await accounts.in(tx).query({ index: 'status', eq: 'open', lock: 'shared' }).all()
      locked.resolve()
      await release.promise
      return open.length
    })
    await locked.promise
    const inserter = db.transaction(async tx => accounts.in(tx).insert({ balance: 0, status: 'open' }))
    t.is(await settlesWithin(inserter, WAITS_MS), 'hung', 'the insert into the locked range waits')
    const outside = db.transaction(async tx => accounts.in(tx).insert({ balance: 0, status: 'closed' }))
    t.isNot(await settlesWithin(outside, ANSWERS_MS), 'hung', 'an insert outside the range does not')
    release.resolve()
    t.is(await reader, 2)
    await inserter
    t.is(await accounts.count({ index: 'status', eq: 'open' }), 3)
    await db.close()
  })

  test(`${common.backend}: a deadlock fails the youngest with LEVELKIT_DEADLOCK, which runs again`, async t => {
    const { db, accounts } = await bank(2)
    const both = deferred()
    let locked = 0
    const attempts = { 1: [], 2: [] }
    const run = (/** @type {1 | 2} */ me) => db.transaction(async (tx, attempt) => {
      attempts[me].push(attempt)
      await accounts.in(tx).get(me, { lock: 'soft' })
      if (++locked === 2) both.resolve()
      await both.promise
      await accounts.in(tx).get(3 - me, { lock: 'soft' })
      await accounts.in(tx).update(me, { balance: 0 })
    })
    await Promise.all([run(1), run(2)])
    t.same(attempts[1], [1], 'the older transaction ran once')
    t.same(attempts[2], [1, 2], 'the younger was the victim and ran again')
    t.is(db.writer.locks.stats().deadlocks, 1)
    await db.close()
  })

  test(`${common.backend}: a lock wait times out with LEVELKIT_LOCK_TIMEOUT`, async t => {
    const { db, accounts } = await bank(1)
    const release = await holdLock(db, tx => accounts.in(tx).get(1, { lock: 'hard' }))
    await rejects(t, db.transaction(async tx => accounts.in(tx).get(1, { lock: 'soft' }), { lockTimeout: 30 }), 'LEVELKIT_LOCK_TIMEOUT')
    await release()
    await db.close()
  })

  test(`${common.backend}: an expired or aborted transaction writes nothing and releases its locks`, async t => {
    const { db, accounts } = await bank(1)
    await rejects(t, db.transaction(async tx => {
      await accounts.in(tx).get(1, { lock: 'hard' })
      await accounts.in(tx).update(1, { balance: 0 })
      await sleep(200)
    }, { timeout: 30 }), 'LEVELKIT_TX_EXPIRED')
    t.is((await settlesWithin(db.transaction(async tx => accounts.in(tx).get(1, { lock: 'hard' })), ANSWERS_MS)).balance, 100, 'its lock is free and nothing was written')

    const controller = new AbortController()
    const locked = deferred()
    const aborted = db.transaction(async tx => {
      await accounts.in(tx).get(1, { lock: 'soft' })
      await accounts.in(tx).update(1, { balance: 0 })
      locked.resolve()
      await sleep(200)
    }, { signal: controller.signal })
    await locked.promise
    controller.abort(new Error('user left'))
    const err = await rejects(t, aborted, 'LEVELKIT_ABORTED')
    t.is(err.cause?.message, 'user left', 'the cause is the signal\'s reason')
    t.is((await settlesWithin(db.transaction(async tx => accounts.in(tx).get(1, { lock: 'soft' })), ANSWERS_MS)).balance, 100, 'its lock is free and nothing was written')
    let ran = false
    await rejects(t, db.transaction(async () => { ran = true }, { signal: controller.signal }), 'LEVELKIT_ABORTED', 'an aborted signal refuses at once')
    t.is(ran, false, 'without running the callback')
    await db.close()
  })

  test(`${common.backend}: a transaction past maxOps or maxBytes rejects with LEVELKIT_TX_TOO_LARGE`, async t => {
    const { db, accounts } = await bank(0)
    await rejects(t, db.transaction(async tx => {
      for (let i = 0; i < 4; i++) await accounts.in(tx).insert({ balance: i, status: 'x' })
    }, { maxOps: 6 }), 'LEVELKIT_TX_TOO_LARGE', 'too many keys')
    await rejects(t, db.transaction(async tx => {
      await accounts.in(tx).insert({ balance: 0, status: 'x'.repeat(2000) })
    }, { maxBytes: 1000 }), 'LEVELKIT_TX_TOO_LARGE', 'too many bytes')
    t.is(await accounts.count(), 0, 'nothing written')
    await db.close()
  })

  test(`${common.backend}: transaction and lock options are checked`, async t => {
    const { db, accounts } = await bank(1)
    const ok = async () => {}
    await rejects(t, db.transaction('no'), 'LEVELKIT_INVALID', 'a function is needed')
    for (const options of [{ maxRetries: -1 }, { timeout: 0 }, { lockTimeout: 1.5 }, { sync: 'yes' }, { signal: {} }, { maxOps: '10' }, { retries: 3 }, null]) {
      await rejects(t, db.transaction(ok, /** @type {any} */ (options)), 'LEVELKIT_INVALID', `refuses ${JSON.stringify(options)}`)
    }
    await rejects(t, accounts.get(1, { lock: 'soft' }), 'LEVELKIT_INVALID', 'a lock outside a transaction')
    t.throws(() => accounts.query({ lock: 'soft' }), /needs a transaction/, 'a locked query outside a transaction')
    await rejects(t, db.write(async w => accounts.in(w).get(1, { lock: 'soft' })), 'LEVELKIT_INVALID', 'a lock in a db.write() scope')
    await rejects(t, db.transaction(async tx => accounts.in(tx).get(1, { lock: 'exclusive' })), 'LEVELKIT_INVALID', 'an unknown lock mode')
    await rejects(t, db.transaction(async tx => accounts.in(tx).get(1, { lok: 'soft' })), 'LEVELKIT_INVALID', 'an unknown read option')
    // Browsers cannot tell which callback a call comes from (no AsyncLocalStorage).
    if (common.backend !== 'indexeddb') await rejects(t, db.write(async () => db.transaction(ok)), 'LEVELKIT_INVALID', 'a transaction inside a db.write() callback')
    let kept
    await db.transaction(async tx => { kept = tx })
    t.throws(() => accounts.in(kept), /transaction has ended/, 'a transaction used after it ended')
    await db.close()
  })

  // With synchronous reads, a read of several records can find a conflict
  // (and throw) while the read before it waits for a lock: that wait must not
  // be left without a handler when the attempt releases it (in Node, an
  // unhandled rejection ends the test run).
  test(`${common.backend}: a read of several records that conflicts while one of them waits for a lock`, async t => {
    const { db, accounts } = await bank(3)
    const release = await holdLock(db, tx => accounts.in(tx).get(1, { lock: 'hard' }))
    const reads = {
      getMany: (/** @type {any} */ tx) => accounts.in(tx).getMany([1, 2]),
      'a locked index query': (/** @type {any} */ tx) => accounts.in(tx).query({ index: 'status', eq: 'open', lock: 'soft', limit: 2 }).all()
    }
    for (const [name, read] of Object.entries(reads)) {
      await rejects(t, db.transaction(async tx => {
        await accounts.in(tx).get(3)
        // What the attempt read changes, and so does record 2 before it is read.
        await accounts.update(3, change => ({ ...change, balance: change.balance + 1 }))
        await accounts.update(2, change => ({ ...change, balance: change.balance + 1 }))
        return read(tx)
      }, { maxRetries: 0 }), 'LEVELKIT_CONFLICT', `${name}: the attempt fails with the conflict`)
      await sleep(10)
    }
    await release()
    t.is((await accounts.get(1)).balance, 100)
    await db.close()
  })

  test(`${common.backend}: durable writes ask the backend to flush`, async t => {
    const { db, accounts } = await bank(2)
    /** @type {boolean[]} */
    const synced = []
    const batch = db.level.batch.bind(db.level)
    db.level.batch = (/** @type {any} */ ops, /** @type {any} */ opts) => { synced.push(opts?.sync === true); return batch(ops, opts) }
    // On PostgreSQL batches go to the table directly (PostgresLevel#levelkitWriteBatch()), with the same options.
    const level = /** @type {any} */ (db.level)
    if (typeof level.levelkitWriteBatch === 'function') {
      const direct = level.levelkitWriteBatch.bind(level)
      level.levelkitWriteBatch = (/** @type {any} */ ops, /** @type {any} */ opts) => { synced.push(opts?.sync === true); return direct(ops, opts) }
    }
    /** @type {Array<string | undefined>} */
    const durability = []
    if (common.backend === 'indexeddb') {
      // IndexedDB's own durability hint, on each readwrite transaction.
      const idb = db.level.db
      const transaction = idb.transaction
      idb.transaction = function (/** @type {any} */ stores, /** @type {any} */ mode, /** @type {any} */ opts) {
        if (mode === 'readwrite') durability.push(opts?.durability)
        return transaction.call(this, stores, mode, opts)
      }
    }
    await accounts.update(1, { balance: 1 })
    await db.write(async w => accounts.in(w).update(1, { balance: 2 }), { sync: true })
    await db.transaction(async tx => accounts.in(tx).update(1, { balance: 3 }), { sync: true })
    await db.transaction(async tx => accounts.in(tx).update(1, { balance: 4 }))
    // On IndexedDB batches go to IndexedDB directly (lib/idb-direct.js): its durability hint tells.
    if (common.backend !== 'indexeddb') t.same(synced, [false, true, true, false], 'relaxed unless asked')
    if (common.backend === 'indexeddb') t.same(durability, [undefined, 'strict', 'strict', undefined], 'IndexedDB transactions are strict when asked')
    await rejects(t, db.write(async () => {}, { sync: 1 }), 'LEVELKIT_INVALID')
    await db.close()
  })
}
