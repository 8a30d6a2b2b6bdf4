/* global IDBObjectStore, IDBTransaction */
// Two tabs of one origin writing one IndexedDB database at once, in a real
// Chromium: the write path must serialize across tabs (Web Locks), and a
// watcher in one tab must see what the other tab writes (BroadcastChannel).
// A control run with Web Locks hidden shows the same workload breaking, so
// these tests can fail.

import test from 'tape'
import { tabsInOneChromium } from './util/browser.js'

const withTabs = tabsInOneChromium(test)

/**
 * One tab's share of the workload: 150 inserts of usernames that the other
 * tab inserts too (one winner each), interleaved with 150 updates of records
 * either tab may have created (index entries diffed old against new).
 * @param {any} page @param {string} location @param {number} tab @param {boolean} hideLocks
 */
function workload (page, location, tab, hideLocks) {
  return page.evaluate(async ({ location, tab, hideLocks }) => {
    if (hideLocks) Object.defineProperty(navigator, 'locks', { value: undefined })
    const { open } = /** @type {any} */ (window).levelkit
    const db = await open({ location })
    const users = db.collection('users', {
      indexes: {
        username: { unique: true, key: (/** @type {any} */ u) => u.username },
        team: { key: (/** @type {any} */ u) => u.team }
      }
    })
    // A timer between a write's reads and its batch: on IndexedDB a
    // write's reads and batch share one readwrite transaction when nothing
    // else is awaited in between, and IndexedDB alone then keeps the tabs
    // apart; with the timer they are two transactions, as in any db.write()
    // callback that awaits something else, and only the lock does.
    const write = (/** @type {(w: any) => Promise<any>} */ fn) => db.write(async (/** @type {any} */ w) => {
      const result = await fn(w)
      await new Promise(resolve => setTimeout(resolve, 0))
      return result
    })
    const ops = []
    for (let i = 0; i < 150; i++) {
      ops.push(write(w => users.in(w).insert({ username: `user-${i}`, team: `t${tab}` })).then((/** @type {number} */ id) => ({ id }), (/** @type {any} */ err) => ({ code: err.code })))
      ops.push(write(w => users.in(w).update(150 - i, { username: `user-${150 - i - 1}`, team: `t${tab}-${i % 7}` })).then(() => ({ updated: true }), (/** @type {any} */ err) => ({ code: err.code })))
    }
    const outcomes = await Promise.all(ops)
    await db.close()
    return outcomes
  }, { location, tab, hideLocks })
}

/** Inspect the database after the workload, from one tab. @param {any} page @param {string} location */
function inspect (page, location) {
  return page.evaluate(async (location) => {
    const { open } = /** @type {any} */ (window).levelkit
    const db = await open({ location })
    const users = db.collection('users', {
      indexes: {
        username: { unique: true, key: (/** @type {any} */ u) => u.username },
        team: { key: (/** @type {any} */ u) => u.team }
      }
    })
    const records = await users.query().all()
    const report = await db.check()
    await db.close()
    return { records, problems: report.problems.map((/** @type {any} */ p) => p.type) }
  }, location)
}

/** @param {Array<Array<{ id?: number, code?: string, updated?: boolean }>>} perTab */
function summarize (perTab) {
  const ids = perTab.flat().filter(o => o.id !== undefined).map(o => o.id)
  const codes = new Set(perTab.flat().map(o => o.code).filter(Boolean))
  return { ids, codes }
}

test('two tabs writing at once: no duplicate id, no duplicate unique value, no stale index entry', { timeout: 120000 }, async t => {
  await withTabs(2, async pages => {
    const location = 'cross-tab-locked'
    const perTab = await Promise.all(pages.map((page, tab) => workload(page, location, tab, false)))
    const { ids, codes } = summarize(perTab)
    t.is(new Set(ids).size, ids.length, `no id handed out twice (${ids.length} inserts succeeded)`)
    t.is(ids.length, 150, 'each of the 150 usernames was inserted by exactly one tab')
    t.same([...codes].sort(), ['LEVELKIT_NOT_FOUND', 'LEVELKIT_UNIQUE'].filter(code => codes.has(code)), 'the only refusals are a taken username and an update before the insert')
    t.ok(codes.has('LEVELKIT_UNIQUE'), 'the tabs did race for the same usernames')
    const { records, problems } = await inspect(pages[0], location)
    t.is(records.length, 150, 'every acknowledged insert is stored')
    t.same(records.map((/** @type {any} */ r) => r.id).sort((/** @type {number} */ a, /** @type {number} */ b) => a - b), [...ids].sort((a, b) => a - b), 'the stored ids are the acknowledged ones')
    t.is(new Set(records.map((/** @type {any} */ r) => r.username)).size, 150, 'usernames are unique')
    t.same(problems, [], 'check() finds nothing: no stale or missing index entry')
  })
})

test('control: the same workload without Web Locks breaks (so the test above can fail)', { timeout: 120000 }, async t => {
  await withTabs(2, async pages => {
    const location = 'cross-tab-unlocked'
    const perTab = await Promise.all(pages.map((page, tab) => workload(page, location, tab, true)))
    const { ids } = summarize(perTab)
    const { records, problems } = await inspect(pages[0], location)
    const broken = new Set(ids).size !== ids.length || records.length !== ids.length || problems.length > 0
    t.ok(broken, `without the cross-tab lock: ${ids.length} inserts acknowledged, ${new Set(ids).size} distinct ids, ${records.length} stored, check() problems: ${[...new Set(problems)].join(', ') || 'none'}`)
  })
})

test('a watcher in one tab sees the messages another tab writes, in order, without gap or duplicate', { timeout: 120000 }, async t => {
  await withTabs(2, async pages => {
    const location = 'cross-tab-watch'
    const [watcher, writer] = pages
    const chatId = await writer.evaluate(async (location) => {
      const { open, ChatStore } = /** @type {any} */ (window).levelkit
      const db = await open({ location })
      const chat = new ChatStore(db, { passwordCost: { pbkdf2Iterations: 1000 } })
      const alice = await chat.createUser({ username: 'alice', password: 'pw-alice' })
      const bob = await chat.createUser({ username: 'bob', password: 'pw-bob' })
      const chatId = await chat.createChat({ name: 'tabs', adminId: alice, userIds: [bob] })
      Object.assign(window, { db, chat, alice, bob })
      return chatId
    }, location)

    // The watcher tab starts watching, then both tabs write: 30 messages
    // from the other tab and 10 from the watcher's own, at once; then 10
    // more from the other tab alone, which only a cross-tab notice can wake
    // the watcher for.
    await watcher.evaluate(async ({ location, chatId }) => {
      const { open, ChatStore } = /** @type {any} */ (window).levelkit
      const db = await open({ location })
      const chat = new ChatStore(db)
      /** @type {any[]} */
      const seen = []
      const done = (async () => {
        // From the start: without `after`, the starting point is read
        // asynchronously on IndexedDB, and a message the other tab commits
        // before that read runs counts as before the watch.
        for await (const message of chat.watch(chatId, { after: 0 })) {
          seen.push({ id: message.id, text: message.text })
          if (seen.length === 50) return
        }
      })()
      Object.assign(window, { db, chat, seen, done })
    }, { location, chatId })

    await Promise.all([
      writer.evaluate(async (chatId) => {
        const { chat, alice } = /** @type {any} */ (window)
        for (let i = 0; i < 30; i++) await chat.addChatMessage({ chatId, senderId: alice, text: `from the other tab ${i}` })
      }, chatId),
      watcher.evaluate(async (chatId) => {
        const { chat } = /** @type {any} */ (window)
        for (let i = 0; i < 10; i++) await chat.addChatMessage({ chatId, senderId: 2, text: `from this tab ${i}` })
      }, chatId)
    ])
    await writer.evaluate(async (chatId) => {
      const { chat, alice } = /** @type {any} */ (window)
      for (let i = 30; i < 40; i++) await chat.addChatMessage({ chatId, senderId: alice, text: `from the other tab ${i}` })
    }, chatId)

    const seen = await watcher.evaluate(async (chatId) => {
      const { done, seen, chat } = /** @type {any} */ (window)
      const finished = await Promise.race([done.then(() => true), new Promise(resolve => setTimeout(() => resolve(false), 10000))])
      if (!finished) {
        // Say what is stored, so a failure tells a lost wake-up from lost data.
        const stored = (await chat.getChatMessages(chatId, { from: 1, n: 100 })).map((/** @type {any} */ m) => m.id)
        throw new Error(`watch saw only ${seen.length} of 50 messages (ids ${seen.map((/** @type {any} */ m) => m.id).join(',')}); stored now: ${stored.length} (ids ${stored.join(',')})`)
      }
      return seen
    }, chatId)
    t.same(seen.map((/** @type {any} */ m) => m.id), Array.from({ length: 50 }, (_, i) => i + 1), 'ids 1..50, in order, no gap, no duplicate')
    t.is(seen.filter((/** @type {any} */ m) => m.text.startsWith('from the other tab')).length, 40, 'all 40 messages of the other tab were seen')
    const other = seen.filter((/** @type {any} */ m) => m.text.startsWith('from the other tab')).map((/** @type {any} */ m) => m.text)
    t.same(other, Array.from({ length: 40 }, (_, i) => `from the other tab ${i}`), 'in the order they were sent')
  })
})

test('reads stay consistent without snapshots while another tab writes: index queries, message pages, check()', { timeout: 120000 }, async t => {
  await withTabs(2, async pages => {
    const location = 'cross-tab-reads'
    const [reader, writer] = pages
    // The writer tab keeps moving records between teams (each move deletes
    // one index entry and writes another) and appending messages.
    const writing = writer.evaluate(async (location) => {
      const { open } = /** @type {any} */ (window).levelkit
      const db = await open({ location })
      const users = db.collection('users', { indexes: { team: { key: (/** @type {any} */ u) => u.team } } })
      const messages = db.children('messages', { parent: users })
      for (let i = 0; i < 40; i++) await users.insert({ name: `u${i}`, team: 'a' })
      window.localStorage.setItem('seeded', 'yes')
      const until = Date.now() + 3000
      let moves = 0
      while (Date.now() < until) {
        const id = 1 + (moves % 40)
        await Promise.all([
          users.update(id, { team: moves % 2 ? 'a' : 'b' }),
          messages.append(1, { n: moves })
        ])
        moves++
      }
      await db.close()
      return moves
    }, location)

    const observed = await reader.evaluate(async (location) => {
      while (window.localStorage.getItem('seeded') !== 'yes') await new Promise(resolve => setTimeout(resolve, 20))
      const { open } = /** @type {any} */ (window).levelkit
      const db = await open({ location })
      const users = db.collection('users', { indexes: { team: { key: (/** @type {any} */ u) => u.team } } })
      const messages = db.children('messages', { parent: users })
      const result = { rounds: 0, wrongTeam: 0, brokenPages: 0, problems: /** @type {string[]} */ ([]) }
      const until = Date.now() + 2500
      while (Date.now() < until) {
        for (const team of ['a', 'b']) {
          for (const user of await users.query({ index: 'team', eq: team }).all()) {
            if (user.team !== team) result.wrongTeam++
          }
        }
        /** @type {number[]} */
        const seqs = []
        for await (const [seq] of messages.range(1, { reverse: true, limit: 50 }).entries()) seqs.push(seq)
        if (seqs.some((seq, i) => i > 0 && seq !== seqs[i - 1] - 1)) result.brokenPages++
        const report = await db.check()
        result.problems.push(...report.problems.map((/** @type {any} */ p) => p.type))
        result.rounds++
      }
      await db.close()
      return result
    }, location).catch(err => { writing.catch(() => {}); throw err })
    const moves = await writing
    t.ok(moves > 20 && observed.rounds > 3, `the tabs overlapped (${moves} moves written, ${observed.rounds} rounds of reads)`)
    t.is(observed.wrongTeam, 0, 'an index query never returns a record whose value moved away')
    t.is(observed.brokenPages, 0, 'a page of messages is contiguous')
    t.same(observed.problems, [], 'check() finds nothing while the other tab writes')
  })
})

/**
 * Two tabs run transactions that read a record and write it back changed
 * (counting transfers between two accounts): a commit in one tab must make
 * a transaction of the other that read what it changed run again.
 * @param {any} page @param {string} location @param {number} tab
 */
function transfers (page, location, tab) {
  return page.evaluate(async ({ location, tab }) => {
    const { open } = /** @type {any} */ (window).levelkit
    const db = await open({ location })
    const accounts = db.collection('accounts')
    let attempts = 0
    const done = await Promise.all(Array.from({ length: 30 }, (_, i) => db.transaction(async (/** @type {any} */ tx) => {
      attempts++
      const [from, to] = (i + tab) % 2 === 0 ? [1, 2] : [2, 1]
      const a = await accounts.in(tx).get(from)
      const b = await accounts.in(tx).get(to)
      if (a === undefined || b === undefined) return false
      // Let the other tab commit in between.
      await new Promise(resolve => setTimeout(resolve, 1))
      await accounts.in(tx).update(from, { balance: a.balance - 3, moves: a.moves + 1 })
      await accounts.in(tx).update(to, { balance: b.balance + 3, moves: b.moves + 1 })
      return true
    }, { maxRetries: 1000 })))
    await db.close()
    return { committed: done.filter(Boolean).length, attempts }
  }, { location, tab })
}

test('transactions in two tabs: a commit in one makes a transaction of the other that read what it changed run again', { timeout: 120000 }, async t => {
  await withTabs(2, async pages => {
    const location = 'cross-tab-transactions'
    // The first tab creates the accounts before the second starts.
    await pages[0].evaluate(async (location) => {
      const { open } = /** @type {any} */ (window).levelkit
      const db = await open({ location })
      const accounts = db.collection('accounts')
      await accounts.put(1, { balance: 1000, moves: 0 })
      await accounts.put(2, { balance: 1000, moves: 0 })
      await db.close()
    }, location)
    const results = await Promise.all(pages.map((page, tab) => transfers(page, location, tab)))
    const committed = results.reduce((sum, r) => sum + r.committed, 0)
    const stored = await pages[1].evaluate(async (location) => {
      const { open } = /** @type {any} */ (window).levelkit
      const db = await open({ location })
      const accounts = db.collection('accounts')
      const all = await accounts.query().all()
      await db.close()
      return all
    }, location)
    t.is(committed, 60, 'every transaction committed')
    t.is(stored[0].balance + stored[1].balance, 2000, 'the total is unchanged')
    t.is(stored[0].moves + stored[1].moves, 120, 'no transfer was lost: each counted on both accounts')
    t.ok(results.some(r => r.attempts > 30), `the tabs did conflict (attempts per tab: ${results.map(r => r.attempts).join(', ')})`)
  })
})

test('a leased lock: writes awaited one at a time take it once; another tab still gets it promptly; close() lets it go', { timeout: 120000 }, async t => {
  await withTabs(2, async pages => {
    const location = 'cross-tab-lease'
    const first = await pages[0].evaluate(async (location) => {
      const w = /** @type {any} */ (window)
      // Count this tab's requests for levelkit's lock.
      const locks = navigator.locks
      const request = locks.request.bind(locks)
      w.lockRequests = 0
      locks.request = (/** @type {any[]} */ ...args) => {
        if (String(args[0]).startsWith('levelkit:')) w.lockRequests++
        return /** @type {any} */ (request)(...args)
      }
      w.db = await w.levelkit.open({ location })
      const items = w.items = w.db.collection('items')
      for (let i = 1; i <= 20; i++) await items.insert({ tab: 0, i })
      const held = await locks.query()
      return { requests: w.lockRequests, held: (held.held ?? []).filter(lock => String(lock.name).startsWith('levelkit:')).length }
    }, location)
    t.is(first.requests, 1, `20 writes awaited one at a time made ${first.requests} lock request(s)`)
    t.is(first.held, 1, 'the idle tab keeps the lock')

    // The first tab holds the lock idle: the second asks for it and gets it.
    const second = await pages[1].evaluate(async (location) => {
      const db = await /** @type {any} */ (window).levelkit.open({ location })
      const items = db.collection('items')
      const start = performance.now()
      const id = await items.insert({ tab: 1 })
      const ms = performance.now() - start
      await db.close()
      return { id, ms }
    }, location)
    t.ok(second.ms < 1000, `the second tab's write went through in ${second.ms.toFixed(1)} ms while the first held the lease`)
    t.is(second.id, 21, 'it got the next id')

    const again = await pages[0].evaluate(async () => {
      const w = /** @type {any} */ (window)
      const items = w.items
      // Its cached sequence must have learned of the other tab's insert.
      const id = await items.insert({ tab: 0, i: 21 })
      const all = await items.query().all()
      const requests = w.lockRequests
      await w.db.close()
      const held = await navigator.locks.query()
      return { id, count: all.length, requests, held: (held.held ?? []).filter(lock => String(lock.name).startsWith('levelkit:')).length }
    })
    t.is(again.id, 22, 'the first tab took the lock again and the next id is 22')
    t.is(again.count, 22, 'every record is stored')
    t.is(again.requests, 2, 'one more lock request, after the other tab wrote')
    t.is(again.held, 0, 'close() lets the leased lock go')

    const frozen = await pages[0].evaluate(async (location) => {
      const db = await /** @type {any} */ (window).levelkit.open({ location })
      await db.collection('items').insert({ tab: 0, i: 22 })
      const count = async () => ((await navigator.locks.query()).held ?? []).filter(lock => String(lock.name).startsWith('levelkit:')).length
      const before = await count()
      document.dispatchEvent(new Event('freeze'))
      // The lock manager lets go a moment after the release.
      let after = await count()
      for (let i = 0; i < 50 && after > 0; i++) {
        await new Promise(resolve => setTimeout(resolve, 10))
        after = await count()
      }
      await db.close()
      return { before, after }
    }, location)
    t.same(frozen, { before: 1, after: 0 }, 'a tab about to be frozen lets its idle lease go')
  })
})

/**
 * In tab `page`: open `location` with a counter 'hits' and an items
 * collection, as window.lease; count the tab's IndexedDB get requests.
 * With `deaf`, the tab hears nothing the other tabs post (as when a
 * message is missed).
 * @param {any} page @param {string} location @param {boolean} deaf
 */
function openLeased (page, location, deaf) {
  return page.evaluate(async ({ location, deaf }) => {
    const w = /** @type {any} */ (window)
    if (deaf) {
      // levelkit's channel listens with onmessage: let it hear only that
      // another tab wants the lock, not what the others wrote.
      const onmessage = /** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(BroadcastChannel.prototype, 'onmessage'))
      Object.defineProperty(BroadcastChannel.prototype, 'onmessage', {
        configurable: true,
        get () { return onmessage.get?.call(this) },
        set (/** @type {any} */ listener) {
          onmessage.set?.call(this, (/** @type {MessageEvent} */ event) => { if (event.data?.want === true) listener(event) })
        }
      })
    }
    if (w.getRequests === undefined) {
      w.getRequests = 0
      for (const name of ['get', 'getAll', 'getAllRecords']) {
        const method = /** @type {any} */ (IDBObjectStore.prototype)[name]
        if (typeof method !== 'function') continue
        /** @type {any} */ (IDBObjectStore.prototype)[name] = function (/** @type {any[]} */ ...args) {
          w.getRequests++
          return method.apply(this, args)
        }
      }
    }
    const db = await w.levelkit.open({ location })
    w.lease = { db, hits: db.counter('hits'), items: db.collection('items') }
    // A first write: what declaring the models writes is written by then.
    await w.lease.hits.add('opened')
  }, { location, deaf })
}

/**
 * In a tab opened by openLeased(): run `what` ('add', 'get', 'getMany',
 * 'insert') and answer its value and the get requests it made.
 * @param {any} page @param {string} what
 */
function leased (page, what) {
  return page.evaluate(async (what) => {
    const w = /** @type {any} */ (window)
    const { hits, items } = w.lease
    const before = w.getRequests
    let value
    if (what === 'settle') {
      // A 'want' heard up to WANT_REPEAT_MS before this tab took the lock
      // lets it go once idle: after a pause, a write takes it to keep.
      await new Promise(resolve => setTimeout(resolve, 250))
      value = await hits.add('settle')
    } else if (what === 'add') value = await hits.add('k')
    else if (what === 'get') value = await hits.get('k')
    else if (what === 'insert') value = await items.insert({ at: Date.now() })
    else if (what === 'item') value = (await items.get(1))?.n ?? null
    else if (what === 'update') value = (await items.update(1, { n: Math.floor(Math.random() * 1e9) }), (await items.get(1)).n)
    else if (what === 'item2') value = (await items.get(2))?.n ?? null
    else if (what === 'update2') value = (await items.update(2, { n: Math.floor(Math.random() * 1e9) }), (await items.get(2)).n)
    else if (what === 'mute') {
      // From here on this tab tells the others nothing but that it wants
      // the lock: as if it died right after each batch it writes
      // committed, before telling of it (or of its holding's end).
      const post = BroadcastChannel.prototype.postMessage
      BroadcastChannel.prototype.postMessage = function (/** @type {any} */ data) {
        if (data?.want === true) post.call(this, data)
      }
    } else throw new Error(what)
    return { value, requests: w.getRequests - before }
  }, what)
}

for (const deaf of [false, true]) {
  test(`the lease cache: the tab holding the lock answers reads from memory; what another tab writes is read afresh${deaf ? ' (its messages unheard)' : ''}`, { timeout: 120000 }, async t => {
    await withTabs(2, async ([a, b]) => {
      const location = `cross-tab-lease-cache-${deaf}`
      await openLeased(a, location, deaf)
      await openLeased(b, location, false)

      t.is((await leased(a, 'add')).value, 1, 'tab A counts 1')
      await leased(a, 'settle')
      const cached = await leased(a, 'get')
      t.same(cached, { value: 1, requests: 0 }, 'tab A, holding the lock, reads the counter without a request')

      t.is((await leased(b, 'add')).value, 2, 'tab B takes the lock and counts 2')
      t.is((await leased(a, 'get')).value, 2, 'tab A, no longer holding the lock, reads what B wrote')
      t.is((await leased(a, 'add')).value, 3, 'tab A takes the lock again: its write reads what B wrote, and counts 3')
      await leased(a, 'settle')
      t.same(await leased(a, 'get'), { value: 3, requests: 0 }, 'and keeps it')

      // A record: A reads it while holding, B changes it, A writes something else (takes the lock back) and reads it.
      t.is((await leased(a, 'insert')).value, 1, 'tab A inserts item 1')
      const first = await leased(a, 'update')
      await leased(a, 'settle')
      t.same(await leased(a, 'item'), { value: first.value, requests: 0 }, 'tab A reads item 1 from memory')
      const changed = await leased(b, 'update')
      t.not(changed.value, first.value, 'tab B changes item 1')
      t.is((await leased(a, 'add')).value, 4, 'tab A takes the lock again (counts 4)')
      t.is((await leased(a, 'item')).value, changed.value, 'tab A reads item 1 as B left it')
      t.same(await checkAndClose(a, 'lease'), { ok: true, problems: [] }, 'check() is clean')
      await b.evaluate(() => /** @type {any} */ (window).lease.db.close())
    })
  })
}

test('the lease cache while the holder\'s batch commits: a read called after another tab saw the batch sees it too', { timeout: 120000 }, async t => {
  await withTabs(2, async ([a, b]) => {
    const location = 'cross-tab-lease-landing'
    // In tab A, the 'complete' events of readwrite transactions are held
    // back while window.held is an array: as in a tab that has not yet run
    // the task that tells it its batch committed (a busy tab; the other
    // tab's reads see the batch from the commit on). levelkit listens with
    // addEventListener(), browser-level with oncomplete.
    await a.evaluate(() => {
      const w = /** @type {any} */ (window)
      w.held = null
      const late = (/** @type {IDBTransaction} */ transaction, /** @type {any} */ listener) => function (/** @type {Event} */ event) {
        if (w.held !== null && transaction.mode === 'readwrite') w.held.push(() => listener.call(transaction, event))
        else listener.call(transaction, event)
      }
      const add = IDBTransaction.prototype.addEventListener
      IDBTransaction.prototype.addEventListener = function (/** @type {string} */ type, /** @type {any} */ listener, /** @type {any} */ options) {
        return add.call(this, type, type === 'complete' ? late(this, listener) : listener, options)
      }
      const oncomplete = /** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(IDBTransaction.prototype, 'oncomplete'))
      Object.defineProperty(IDBTransaction.prototype, 'oncomplete', {
        configurable: true,
        get () { return oncomplete.get?.call(this) },
        set (/** @type {any} */ listener) { oncomplete.set?.call(this, listener === null ? null : late(this, listener)) }
      })
    })
    await openLeased(a, location, false)
    await openLeased(b, location, false)

    t.is((await leased(a, 'insert')).value, 1, 'tab A inserts item 1')
    const first = await leased(a, 'update')
    await leased(a, 'settle')
    t.same(await leased(a, 'item'), { value: first.value, requests: 0 }, 'tab A, holding the lock, reads item 1 from memory')

    // Tab A updates item 1; its batch commits, unannounced in tab A.
    const next = await updateHeld(a, false)
    const seen = await readUntil(b, next)
    t.is(seen, next, 'tab B reads item 1 as tab A\'s update left it: the batch committed')

    // Called after that, a read in tab A sees the update too (from memory
    // it would answer the value before it until tab A hears of the commit).
    const read = await readReleasingHeld(a)
    t.ok(read.held > 0, `tab A had not heard of the commit (${read.held} 'complete' event(s) held back)`)
    t.is(read.value, next, 'tab A\'s read called after tab B saw the update sees it')
    t.same(await leased(a, 'item'), { value: next, requests: 0 }, 'then tab A reads item 1 from memory again')

    // The same with a 'write' listener on the database: batches go through browser-level's batch().
    const bypassed = await updateHeld(a, true)
    t.is(await readUntil(b, bypassed), bypassed, 'tab B reads item 1 as tab A\'s update past the direct layer left it')
    const late = await readReleasingHeld(a)
    t.ok(late.held > 0, `tab A had not heard of the commit (${late.held} 'complete' event(s) held back)`)
    t.is(late.value, bypassed, 'tab A\'s read called after tab B saw that update sees it')

    // A relation kept by IndexedDB's index (lists both ways): tab A keeps from()'s answers.
    for (const page of [a, b]) {
      await page.evaluate(() => {
        const w = /** @type {any} */ (window)
        w.lease.links = w.lease.db.relation('links', { from: w.lease.items, to: w.lease.items, lists: ['from', 'to'] })
      })
    }
    const before = await a.evaluate(async () => {
      const { items, links } = /** @type {any} */ (window).lease
      await items.insert({ n: 2 })
      await items.insert({ n: 3 })
      await links.add(2, 1)
      return [await links.from(1).all(), await links.from(1).all()]
    })
    await leased(a, 'settle')
    t.same(before, [[2], [2]], 'tab A links 2 to 1 and reads from(1)')
    await a.evaluate(() => {
      const w = /** @type {any} */ (window)
      w.held = []
      w.updating = w.lease.links.add(3, 1)
    })
    const listed = await b.evaluate(async () => {
      const { links } = /** @type {any} */ (window).lease
      let ids = await links.from(1).all()
      for (const start = Date.now(); !ids.includes(3) && Date.now() - start < 5000;) {
        await new Promise(resolve => setTimeout(resolve, 5))
        ids = await links.from(1).all()
      }
      return ids
    })
    t.same(listed, [2, 3], 'tab B lists 2 and 3 from(1): tab A\'s link committed')
    const again = await readReleasingHeld(a, 'links')
    t.ok(again.held > 0, `tab A had not heard of the commit (${again.held} 'complete' event(s) held back)`)
    t.same(again.value, [2, 3], 'tab A\'s from(1) called after tab B listed the link lists it')
    t.same(await checkAndClose(a, 'lease'), { ok: true, problems: [] }, 'check() is clean')
    await b.evaluate(() => /** @type {any} */ (window).lease.db.close())
  })
})

test('the lease cache after a holder that died mid-holding: batches heard, one not, no end: the next holder reads afresh', { timeout: 120000 }, async t => {
  await withTabs(2, async ([a, b]) => {
    const location = 'cross-tab-lease-crash'
    await openLeased(a, location, false)
    await openLeased(b, location, false)

    // Tab B holds the lock with items 1 and 2 in its lease cache.
    t.is((await leased(b, 'insert')).value, 1, 'tab B inserts item 1')
    t.is((await leased(b, 'insert')).value, 2, 'tab B inserts item 2')
    const first = await leased(b, 'update')
    const second = await leased(b, 'update2')
    await leased(b, 'settle')
    t.same(await leased(b, 'item'), { value: first.value, requests: 0 }, 'tab B reads item 1 from memory')
    t.same(await leased(b, 'item2'), { value: second.value, requests: 0 }, 'and item 2')

    // A holding of tab A that ends normally: B hears its batch and its end.
    t.is((await leased(a, 'add')).value, 1, 'tab A takes the lock and counts 1')
    const changed = await leased(a, 'update2')
    t.not(changed.value, second.value, 'tab A changes item 2')
    await leased(a, 'settle')
    t.is((await leased(b, 'add')).value, 2, 'tab B takes the lock back (counts 2)')
    t.is((await leased(b, 'item2')).value, changed.value, 'tab B reads item 2 as A left it')
    const kept = await leased(b, 'item')
    t.is(kept.value, first.value, 'and item 1, which A did not touch')
    t.comment(`item 1 read with ${kept.requests} request(s): 0 when B heard A's holding end before it got the lock`)
    await leased(b, 'settle')
    t.is((await leased(b, 'item')).requests, 0, 'tab B holds the lock with item 1 in memory again')

    // Tab A again: B hears its first batch, not its second, nor its end.
    t.is((await leased(a, 'add')).value, 3, 'tab A takes the lock and counts 3 (B hears of it)')
    await leased(a, 'mute')
    const unheard = await leased(a, 'update')
    t.not(unheard.value, first.value, 'tab A changes item 1, and dies before telling (no more messages, no end)')
    await a.evaluate(() => /** @type {any} */ (window).lease.db.close())

    t.is((await leased(b, 'add')).value, 4, 'tab B takes the lock (counts 4)')
    await leased(b, 'settle')
    t.is((await leased(b, 'item')).value, unheard.value, 'tab B reads item 1 as A left it, not from its cache')
    t.same(await checkAndClose(b, 'lease'), { ok: true, problems: [] }, 'check() is clean')
  })
})

/**
 * Check the database a page keeps at `window[name].db`, then close it.
 * @param {any} page @param {string} name
 * @returns {Promise<{ ok: boolean, problems: unknown[] }>}
 */
function checkAndClose (page, name) {
  return page.evaluate(async (name) => {
    const { db } = /** @type {any} */ (window)[name]
    const { ok, problems } = await db.check()
    await db.close()
    return { ok, problems }
  }, name)
}

/**
 * In tab `page`: count what levelkit posts on its channels by kind, open
 * `location` as window.alone (a counter 'hits', rooms and their children
 * 'notes'). With `hold`, the tab hears nothing another tab posts until
 * window.release() (then all of it, in order): as a tab that has not yet
 * run the task that delivers another tab's 'hello'.
 * @param {any} page @param {string} location @param {boolean} hold
 */
function openCounted (page, location, hold) {
  return page.evaluate(async ({ location, hold }) => {
    const w = /** @type {any} */ (window)
    w.posted = { hello: 0, here: 0, bye: 0, want: 0, batch: 0, end: 0, gap: 0 }
    const post = BroadcastChannel.prototype.postMessage
    BroadcastChannel.prototype.postMessage = function (/** @type {any} */ data) {
      const kind = ['hello', 'here', 'bye', 'want', 'end', 'gap'].find(k => data?.[k] !== undefined) ?? 'batch'
      w.posted[kind]++
      return post.call(this, data)
    }
    if (hold) {
      /** @type {Array<() => void>} */
      const held = []
      let holding = true
      w.release = () => {
        holding = false
        for (const deliver of held.splice(0)) deliver()
      }
      const onmessage = /** @type {PropertyDescriptor} */ (Object.getOwnPropertyDescriptor(BroadcastChannel.prototype, 'onmessage'))
      Object.defineProperty(BroadcastChannel.prototype, 'onmessage', {
        configurable: true,
        get () { return onmessage.get?.call(this) },
        set (/** @type {any} */ listener) {
          onmessage.set?.call(this, (/** @type {MessageEvent} */ event) => {
            if (holding) held.push(() => listener(event))
            else listener(event)
          })
        }
      })
    }
    const db = await w.levelkit.open({ location })
    const rooms = db.collection('rooms')
    w.alone = { db, hits: db.counter('hits'), rooms, notes: db.children('notes', { parent: rooms }) }
  }, { location, hold })
}

/**
 * In tab `page`: watch room `room`'s notes after `after` into window.seen
 * (window.stop ends it), and resolve once the watcher has read what is
 * there and waits for news. The watcher's read of the room's last sequence
 * number is its last read before it waits (with nothing new, it reads no
 * child): once that read has answered and the page's microtasks have run,
 * it is waiting. A fixed sleep stood for that read before, and a loaded
 * machine could outlast it: the watcher then read the other tab's writes
 * from the database instead of hearing of them.
 * @param {any} page @param {number} room @param {number} after
 */
function watchNotes (page, room, after) {
  return page.evaluate(async ({ room, after }) => {
    const w = /** @type {any} */ (window)
    const { notes } = w.alone
    w.seen = []
    w.stop = new AbortController()
    /** @type {() => void} */
    let answered = () => {}
    const read = new Promise(resolve => { answered = () => resolve(undefined) })
    const lastSeq = notes.lastSeq
    // An own property in front of the method the watcher calls as this.lastSeq.
    notes.lastSeq = function (/** @type {any[]} */ ...args) {
      const seq = lastSeq.apply(this, args)
      Promise.resolve(seq).then(answered, answered)
      return seq
    }
    ;(async () => {
      for await (const [seq, note] of notes.watch(room, { after, signal: w.stop.signal })) w.seen.push([seq, note])
    })().catch((/** @type {any} */ err) => { if (err.name !== 'AbortError') w.watchError = String(err) })
    await read
    delete notes.lastSeq
    await new Promise(resolve => setTimeout(resolve, 0))
  }, { room, after })
}

/** @param {any} page @returns {Promise<Record<string, number>>} */
const postedIn = page => page.evaluate(() => ({ ...(/** @type {any} */ (window).posted) }))

/**
 * What tab `page`'s watcher (watchNotes()) has delivered, once it holds `n`
 * notes or 5 s have passed.
 * @param {any} page @param {number} n @returns {Promise<any[]>}
 */
async function seenNotes (page, n) {
  let seen = await page.evaluate(() => /** @type {any} */ (window).seen)
  for (let waited = 0; seen.length < n && waited < 5000; waited += 20) {
    await new Promise(resolve => setTimeout(resolve, 20))
    seen = await page.evaluate(() => /** @type {any} */ (window).seen)
  }
  return seen
}

/** In tab `page`: the watcher's error if it failed (null if not); then stop it and close the database. @param {any} page */
function stopWatching (page) {
  return page.evaluate(async () => {
    const w = /** @type {any} */ (window)
    w.stop.abort()
    await w.alone.db.close()
    return w.watchError ?? null
  })
}

/** In tab `page`: `n` counter writes awaited one by one; the value after. @param {any} page @param {number} n */
function addHits (page, n) {
  return page.evaluate(async (n) => {
    const { hits } = /** @type {any} */ (window).alone
    let value = 0
    for (let i = 0; i < n; i++) value = await hits.add('k')
    return value
  }, n)
}

test('a tab alone posts nothing of what it writes; it posts while another tab listens, and stops once that tab closes', { timeout: 120000 }, async t => {
  await withTabs(2, async ([a, b]) => {
    const location = 'cross-tab-alone'
    await openCounted(a, location, false)
    t.is(await addHits(a, 20), 20, 'tab A, alone, counts to 20')
    const alone = await postedIn(a)
    t.is(alone.batch + alone.end + alone.gap, 0, 'and posts none of its 20 batches (nor an end, nor a gap notice)')
    t.is(alone.hello, 1, 'only its hello (and its want of the lock: ' + alone.want + ')')

    await openCounted(b, location, false)
    // B's hello and A's answer cross the browser: wait until A knows B.
    for (let waited = 0; (await postedIn(a)).here === 0 && waited < 5000; waited += 20) await new Promise(resolve => setTimeout(resolve, 20))
    const known = await postedIn(a)
    t.is(known.here, 1, 'tab A answers tab B\'s hello')
    t.is(known.gap, 1, 'with one gap notice (it wrote unheard before)')
    t.is(await addHits(a, 5), 25, 'tab A counts 5 more')
    t.is((await postedIn(a)).batch - known.batch, 5, 'and posts each of the 5 batches, tab B listening')
    t.is(await b.evaluate(() => /** @type {any} */ (window).alone.hits.get('k')), 25, 'tab B reads 25')

    await b.evaluate(() => /** @type {any} */ (window).alone.db.close())
    t.is((await postedIn(b)).bye, 1, 'tab B says bye as it closes')
    await new Promise(resolve => setTimeout(resolve, 200))
    const before = await postedIn(a)
    t.is(await addHits(a, 5), 30, 'tab A counts 5 more')
    t.is((await postedIn(a)).batch - before.batch, 0, 'and posts none of them: tab B is gone')
    t.same(await checkAndClose(a, 'alone'), { ok: true, problems: [] }, 'check() is clean')
  })
})

test('a tab that opens while the other writes without posting: its watcher sees every write (the gap notice)', { timeout: 120000 }, async t => {
  await withTabs(2, async ([a, b]) => {
    const location = 'cross-tab-gap'
    await openCounted(a, location, true)
    const room = await a.evaluate(async () => {
      const { rooms, notes } = /** @type {any} */ (window).alone
      const room = await rooms.insert({ name: 'r' })
      await notes.append(room, 'before B')
      return room
    })
    t.is((await postedIn(a)).batch, 0, 'tab A, alone, posts nothing')

    // Tab B opens and watches the room; tab A hears nothing of it yet. (A
    // lets its lease go first, as on pagehide: it would not hear B's want.)
    await a.evaluate(() => window.dispatchEvent(new Event('pagehide')))
    await openCounted(b, location, false)
    await watchNotes(b, room, 1)
    await a.evaluate(async (room) => {
      const { notes } = /** @type {any} */ (window).alone
      for (let i = 2; i <= 4; i++) await notes.append(room, `unheard ${i}`)
    }, room)
    t.is((await postedIn(a)).batch, 0, 'tab A takes the lock back and writes 3 notes, posting nothing (it knows no other tab)')
    await new Promise(resolve => setTimeout(resolve, 300))
    t.same(await b.evaluate(() => /** @type {any} */ (window).seen), [], 'tab B\'s watcher has seen nothing of them yet')

    // Tab A hears B's hello: it answers, and tells of the gap.
    await a.evaluate(() => /** @type {any} */ (window).release())
    let seen = await seenNotes(b, 3)
    t.same(seen, [[2, 'unheard 2'], [3, 'unheard 3'], [4, 'unheard 4']], 'then tab B\'s watcher delivers the 3 notes, with no further write')
    t.is((await postedIn(a)).gap, 1, 'tab A posted one gap notice')

    await a.evaluate(async (room) => { await /** @type {any} */ (window).alone.notes.append(room, 'heard 5') }, room)
    seen = await seenNotes(b, 4)
    t.same(seen.slice(3), [[5, 'heard 5']], 'and the next note, posted')
    t.is(await stopWatching(b), null, 'the watcher did not fail')
    t.same(await checkAndClose(a, 'alone'), { ok: true, problems: [] }, 'check() is clean')
  })
})

test('a tab that opens second and writes: the first tab, which wrote nothing, hears its writes (the answer to its hello)', { timeout: 120000 }, async t => {
  await withTabs(2, async ([a, b]) => {
    const location = 'cross-tab-here'
    // Room 1, made by tab B, which then closes.
    await openCounted(b, location, false)
    await b.evaluate(async () => {
      const { db, rooms } = /** @type {any} */ (window).alone
      await rooms.insert({ name: 'r' })
      await db.close()
    })
    // Tab A opens and watches room 1, writing nothing: no batch, no end of
    // a holding, no gap notice tells tab B, opened next, that A is there.
    await openCounted(a, location, false)
    await watchNotes(a, 1, 0)
    const quiet = await postedIn(a)
    t.is(quiet.batch + quiet.end + quiet.gap, 0, 'tab A has posted no batch, end or gap notice')

    await openCounted(b, location, false)
    await b.evaluate(async () => {
      const { notes } = /** @type {any} */ (window).alone
      for (let i = 1; i <= 3; i++) await notes.append(1, `from B ${i}`)
    })
    t.ok((await postedIn(b)).batch >= 3, 'tab B posts its batches: it knows tab A from A\'s answer')
    const seen = await seenNotes(a, 3)
    t.same(seen, [[1, 'from B 1'], [2, 'from B 2'], [3, 'from B 3']], 'tab A\'s watcher delivers the 3 notes')
    t.is(await stopWatching(a), null, 'the watcher did not fail')
    t.same(await checkAndClose(b, 'alone'), { ok: true, problems: [] }, 'check() is clean')
  })
})

/**
 * Tab `page` updates item 1 with a random n, its 'complete' events held
 * back (past its direct IndexedDB layer: with a 'write' listener on the
 * database, so the batch goes through browser-level's batch()).
 * @param {import('playwright-core').Page} page @param {boolean} pastLayer
 * @returns {Promise<number>} the new n
 */
function updateHeld (page, pastLayer) {
  return page.evaluate((pastLayer) => {
    const w = /** @type {any} */ (window)
    if (pastLayer) {
      w.listener = () => {}
      w.lease.db.level.on('write', w.listener)
    }
    w.held = []
    w.next = Math.floor(Math.random() * 1e9)
    w.updating = w.lease.items.update(1, { n: w.next })
    return w.next
  }, pastLayer)
}

/**
 * Item 1's n as tab `page` reads it, read again until it is `next` (5 s at most).
 * @param {import('playwright-core').Page} page @param {number} next
 * @returns {Promise<number>}
 */
function readUntil (page, next) {
  return page.evaluate(async (next) => {
    const { items } = /** @type {any} */ (window).lease
    let n = (await items.get(1)).n
    for (const start = Date.now(); n !== next && Date.now() - start < 5000;) {
      await new Promise(resolve => setTimeout(resolve, 5))
      n = (await items.get(1)).n
    }
    return n
  }, next)
}

/**
 * Tab `page` reads item 1's n (or `links`: from(1)'s ids) while its
 * 'complete' events are held, then lets them go 20 ms later: what it read
 * and how many events were held.
 * @param {import('playwright-core').Page} page @param {'item' | 'links'} [what]
 * @returns {Promise<{ value: any, held: number }>}
 */
function readReleasingHeld (page, what = 'item') {
  return page.evaluate(async (what) => {
    const w = /** @type {any} */ (window)
    const reading = what === 'links' ? w.lease.links.from(1).all() : w.lease.items.get(1).then((/** @type {any} */ item) => item.n)
    await new Promise(resolve => setTimeout(resolve, 20))
    const held = w.held.length
    for (const deliver of w.held.splice(0)) deliver()
    w.held = null
    const value = await reading
    await w.updating
    if (w.listener) {
      w.lease.db.level.off('write', w.listener)
      w.listener = null
    }
    return { value, held }
  }, what)
}
