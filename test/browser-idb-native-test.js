/* global indexedDB */
// The object stores levelkit keeps beside browser-level's on a database it
// opens itself (lib/idb-open.js), in a real headless Chromium: made by a
// version upgrade that keeps the data; user-brought databases untouched;
// a tab on an older version gives way to one that upgrades (its database
// closes, LEVELKIT_NOT_OPEN) and works again after a reload, with the other
// tab. The user-brought case, whose connection is not closed, is the
// control: the same upgrade then waits.

import test from 'tape'
import { oneChromium } from './util/browser.js'

// One launch for the file's tests, each in a browser context of its own.
const { runEntry, withTabs } = oneChromium(test)

test('idb-native in Chromium on IndexedDB', { timeout: 300000 }, t => runEntry(t, 'test/browser/idb-native-entry.js'))

/** @param {any} page @param {string} location @param {string} username */
function insertIn (page, location, username) {
  return page.evaluate(async ({ location, username }) => {
    const w = /** @type {any} */ (window)
    if (w.db === undefined) {
      w.db = await w.levelkit.open({ location })
      w.users = w.db.collection('users', { indexes: { username: { unique: true, key: (/** @type {any} */ u) => u.username } } })
    }
    try {
      return { id: await w.users.insert({ username }) }
    } catch (err) {
      return { code: /** @type {any} */ (err).code }
    }
  }, { location, username })
}

test('two tabs: one upgrading the database closes the other\'s instead of waiting; after a reload both write', { timeout: 120000 }, async t => {
  await withTabs(2, async ([a, b]) => {
    const location = 'idb-native-tabs'
    t.same(await insertIn(a, location, 'ada'), { id: 1 }, 'tab A writes')
    t.same(await insertIn(b, location, 'bob'), { id: 2 }, 'tab B writes (same version: no upgrade)')
    // Tab B's code wants a newer layout: it opens the database one version up.
    const upgrade = await b.evaluate(async (location) => {
      const w = /** @type {any} */ (window)
      await w.db.close()
      const version = await new Promise((resolve, reject) => {
        const request = indexedDB.open(location)
        request.onsuccess = () => { request.result.close(); resolve(request.result.version) }
        request.onerror = () => reject(request.error)
      })
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => resolve('blocked'), 5000)
        const request = indexedDB.open(location, /** @type {number} */ (version) + 1)
        request.onupgradeneeded = () => request.result.createObjectStore('future')
        request.onsuccess = () => { clearTimeout(timer); request.result.close(); resolve('opened') }
        request.onerror = () => reject(request.error)
      })
    }, location)
    t.is(upgrade, 'opened', 'tab B\'s upgrade is not blocked by tab A')
    t.same(await insertIn(a, location, 'late'), { code: 'LEVELKIT_NOT_OPEN' }, 'tab A\'s database is closed')
    await a.reload()
    await a.waitForFunction(() => /** @type {any} */ (window).levelkit !== undefined)
    await b.evaluate(() => { /** @type {any} */ (window).db = undefined })
    t.same(await insertIn(a, location, 'carol'), { id: 3 }, 'after a reload tab A writes')
    t.same(await insertIn(b, location, 'dan'), { id: 4 }, 'and tab B, reopened')
    t.same(await insertIn(a, location, 'dan'), { code: 'LEVELKIT_UNIQUE' }, 'unique values hold across the tabs')
    const { names, problems } = await a.evaluate(async () => {
      const w = /** @type {any} */ (window)
      const records = await w.users.query().all()
      const report = await w.db.check()
      return { names: records.map((/** @type {any} */ r) => r.username), problems: report.problems.length }
    })
    t.same(names, ['ada', 'bob', 'carol', 'dan'], 'every acknowledged write is there')
    t.is(problems, 0, 'check() is clean')
  })
})

test('a tab on code that does not give way (browser-level itself) holds the upgrade back until it closes; the open then completes', { timeout: 120000 }, async t => {
  await withTabs(2, async ([old, fresh]) => {
    const location = 'idb-native-old-tab'
    // browser-level as levelkit before this change opened it: one store, version 1, no versionchange handler.
    await old.evaluate(async (location) => {
      const w = /** @type {any} */ (window)
      await new Promise((resolve, reject) => {
        const request = indexedDB.open(location, 1)
        request.onupgradeneeded = () => request.result.createObjectStore(location)
        request.onsuccess = () => { w.old = request.result; resolve(undefined) }
        request.onerror = () => reject(request.error)
      })
    }, location)
    const pending = await fresh.evaluate(async (location) => {
      const w = /** @type {any} */ (window)
      w.opening = w.levelkit.open({ location }).then((/** @type {any} */ db) => { w.db = db; return 'opened' }, (/** @type {any} */ err) => err.code)
      return Promise.race([w.opening, new Promise(resolve => setTimeout(() => resolve('waiting'), 1000))])
    }, location)
    t.is(pending, 'waiting', 'open() waits while the old tab holds the database')
    await old.evaluate(() => /** @type {any} */ (window).old.close())
    t.is(await fresh.evaluate(() => /** @type {any} */ (window).opening), 'opened', 'once it closed, open() completes')
    const { version, stores } = await fresh.evaluate(async () => {
      const w = /** @type {any} */ (window)
      const idb = w.db.level.db
      return { version: idb.version, stores: Array.from(idb.objectStoreNames) }
    })
    t.is(version, 2, 'upgraded to version 2')
    t.same(stores.sort(), [location, `${location}/levelkit-lists`].sort(), 'with the lists store')
  })
})

/**
 * In tab `page`, a ChatStore on `location` (opened once per page load), and `fn(w)` run there.
 * @param {any} page @param {string} location @param {string} fn the body of an async function of w
 */
function inChat (page, location, fn) {
  return page.evaluate(async ({ location, fn }) => {
    const w = /** @type {any} */ (window)
    if (w.chat === undefined) {
      const { open, ChatStore } = w.levelkit
      w.db = await open({ location })
      w.chat = await ChatStore.open(w.db, { passwordCost: { scryptN: 1024, pbkdf2Iterations: 1 } })
    }
    // eslint-disable-next-line no-new-func
    return new Function('w', `return (async () => { ${fn} })()`)(w)
  }, { location, fn })
}

test('two tabs on a ChatStore whose members use the IndexedDB index: each sees the other\'s chats; after a reload too; check() is clean', { timeout: 120000 }, async t => {
  await withTabs(2, async ([a, b]) => {
    const location = 'idb-native-chat-tabs'
    const users = await inChat(a, location, `
      const ids = []
      for (let i = 0; i < 6; i++) ids.push(await w.chat.createUser({ username: 'u' + i, password: 'secret-password' }))
      return ids`)
    const kind = await inChat(a, location, 'return w.db.models().find(m => m.kind === \'relation\' && m.model.name === \'members\').model.reverse.kind')
    t.is(kind, 'index', 'tab A: the index kind')
    const first = await inChat(a, location, `return w.chat.createChat({ name: 'a', adminId: ${users[0]}, userIds: [${users[1]}, ${users[2]}] })`)
    t.same(await inChat(b, location, `return (await w.chat.getChats(${users[1]})).map(c => c.id)`), [first], 'tab B sees tab A\'s chat')
    const second = await inChat(b, location, `return w.chat.createChat({ name: 'b', adminId: ${users[3]}, userIds: [${users[1]}] })`)
    t.same(await inChat(a, location, `return w.chat.members.from(${users[1]}).all()`), [first, second], 'tab A sees tab B\'s chat')
    t.same(await inChat(a, location, `try { await w.chat.users.del(${users[3]}); return 'deleted' } catch (err) { return err.code }`), 'LEVELKIT_RESTRICT', 'tab A cannot delete a member of tab B\'s chat')
    await inChat(b, location, `return w.chat.deleteChat(${second})`)
    t.same(await inChat(a, location, `return w.chat.members.from(${users[1]}).all()`), [first], 'tab B\'s delete is seen in tab A')
    await a.reload()
    await a.waitForFunction(() => /** @type {any} */ (window).levelkit !== undefined)
    t.same(await inChat(a, location, `return w.chat.members.from(${users[1]}).all()`), [first], 'after a reload')
    t.is(await inChat(a, location, 'return (await w.db.check()).problems.length'), 0, 'check() is clean')
  })
})
