// Layout moves (a relation's `lists`, a children set's `blockSize` changed on
// existing data, lib/schema.js) on IndexedDB with two tabs of one origin, in
// a real Chromium. Both tabs reopen the database with the new layout; one
// moves the data (db.buildIndexes()), the other reads and writes that
// relation and children set meanwhile. The move runs once (the schema lock,
// lib/schema-lock.js: the other tab waits, then finds it moved), its reads
// wait and answer right, no write is lost or doubled, check() is clean in
// both tabs; a tab opened in the middle of a move and left alone when the
// moving tab is closed finishes it. The moving tab's move is held after its
// first batch until the other tab is where it should meet it (reopen()'s
// `held`): left to run, on a loaded machine the move was over before the
// other tab read (or opened), and the controls passed.
// Controls: a writing tab that takes the moves as done (neither waits for
// them nor runs them), and a schema lock that holds nothing, make the
// assertions fail. With no schema lock both tabs move at once and the data
// still ends right (each batch is atomic across tabs and finds what is left
// to move): the lock saves the work, it is not what keeps the data whole.

import test from 'tape'
import { tabsInOneChromium } from './util/browser.js'

const withTabs = tabsInOneChromium(test)

// 100 people: the move still takes over a dozen batches (256 entries
// each), so the writing tab's reads and writes queue behind it and a tab
// closed 50 ms into it has moved some, not all; 300 took three times as
// long to seed, move and read back, and showed nothing more.
const PEOPLE = 100
const NOTES = 10
// The writing tab adds edges this far ahead: beyond the seeded ones (up to 47 ahead).
const AHEAD = PEOPLE / 2
// The channel a held move waits on (each test has an origin of its own).
const GATE = 'layout-move-gate'

/** Whom person `i` follows when seeded. @param {number} i */
const follows = i => [...new Set([1, 2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47].map(d => 1 + (i - 1 + d) % PEOPLE))]

/**
 * Write people, their edges (no lists) and notes (a key per child), in the old layout.
 * @param {import('playwright-core').Page} page @param {string} location
 */
function seed (page, location) {
  return page.evaluate(async ({ location, people, notes, lists }) => {
    const { open } = /** @type {any} */ (window).levelkit
    const db = await open({ location })
    const p = db.collection('people')
    const rel = db.relation('follows', { from: p, to: p })
    const n = db.children('notes', { parent: p })
    // One batch (one IndexedDB transaction) rather than one per call: the
    // seed is not under test, only the layout it leaves.
    await db.write(async (/** @type {any} */ w) => {
      await p.in(w).insertMany(Array.from({ length: people }, (_, i) => ({ n: i + 1 })))
      for (let i = 1; i <= people; i++) {
        await rel.in(w).addMany(i, lists[i - 1])
        await n.in(w).appendMany(i, Array.from({ length: notes }, (_, k) => `${i}:${k + 1}`))
      }
    })
    await db.close()
  }, { location, people: PEOPLE, notes: NOTES, lists: Array.from({ length: PEOPLE }, (_, i) => follows(i + 1)) })
}

/**
 * Open the database in a tab with the new layout (lists both ways, blocks
 * of 16), as `window.t`, and record the most each tab's own move reported
 * done (polled). Controls: `skip` takes the moves as done in this tab
 * (never waits for them, never runs them); `noSchemaLock` makes the schema
 * lock hold nothing. `held` (not a control): once this tab's move has
 * decided its first batch, its critical sections wait (before they take
 * the cross-tab lock: the other tab's are not held up) until another tab
 * says 'go' on the BroadcastChannel GATE (readAndWrite() with `signal`),
 * or for ever if none does (a tab closed in the middle of its move); the
 * move's progress is recorded as each batch is decided (polls wait too).
 * @param {import('playwright-core').Page} page @param {string} location
 * @param {{ skip?: boolean, noSchemaLock?: boolean, held?: boolean }} [control]
 * @returns {Promise<any>} what schemaStatus() said at open
 */
function reopen (page, location, control = {}) {
  return page.evaluate(async ({ location, control, gate }) => {
    const w = /** @type {any} */ (window)
    if (control.noSchemaLock) {
      const locks = navigator.locks
      const request = locks.request.bind(locks)
      Object.defineProperty(navigator, 'locks', {
        value: {
          request: (/** @type {string} */ name, /** @type {any} */ options, /** @type {any} */ fn) => name.startsWith('levelkit-schema:') ? Promise.resolve().then(() => fn({ name })) : request(name, options, fn),
          query: () => locks.query()
        }
      })
    }
    const { open } = w.levelkit
    const db = await open({ location })
    const people = db.collection('people')
    const rel = db.relation('follows', { from: people, to: people, lists: ['from', 'to'] })
    const notes = db.children('notes', { parent: people, blockSize: 16 })
    const status = await db.schemaStatus()
    if (control.skip) {
      for (const handle of [rel, notes]) {
        const model = handle[Object.getOwnPropertySymbols(handle).find(s => s.description === 'model')]
        model.layoutState.set('ready')
        model.startLayoutMove = () => {}
      }
    }
    const most = { follows: 0, notes: 0 }
    /** @type {Promise<string> | null} */
    let held = null
    if (control.held) {
      held = new Promise(resolve => {
        const channel = new BroadcastChannel(gate)
        channel.onmessage = () => { channel.close(); resolve('opened') }
        // Not for ever if the other tab never says go: the test then fails on the gate.
        setTimeout(() => { channel.close(); resolve('timed out') }, 60000)
      })
      let batches = 0
      for (const [name, handle] of /** @type {const} */ ([['follows', rel], ['notes', notes]])) {
        const model = handle[Object.getOwnPropertySymbols(handle).find(s => s.description === 'model')]
        const move = model.moveLayoutBatch
        model.moveLayoutBatch = async (/** @type {any} */ scope, /** @type {any} */ progress, /** @type {number} */ size) => {
          batches++
          const finished = await move.call(model, scope, progress, size)
          most[name] = Math.max(most[name], progress.done)
          return finished
        }
      }
      const writer = db.writer
      const run = writer.run
      writer.run = async (/** @type {any[]} */ ...args) => {
        if (batches > 0) await held
        return run.apply(writer, args)
      }
    }
    // Each poll 5 ms after the last one answered, not every 5 ms:
    // schemaStatus() reads in a critical section, which waits for the
    // cross-tab lock behind the move's batches, so polls every 5 ms piled up
    // in the lock's queue and slowed the move and the reads under test (on
    // a loaded machine until the suite timed out).
    const poll = { stopped: false, timer: /** @type {any} */ (undefined) }
    const next = () => db.schemaStatus().then((/** @type {any} */ s) => {
      for (const name of /** @type {const} */ (['follows', 'notes'])) most[name] = Math.max(most[name], s[name]?.layout?.done ?? 0)
    }, () => {}).then(() => { if (!poll.stopped) poll.timer = setTimeout(next, 5) })
    poll.timer = setTimeout(next, 5)
    w.t = { db, people, rel, notes, most, poll, held }
    return { follows: status.follows?.layout?.state ?? 'ready', notes: status.notes?.layout?.state ?? 'ready' }
  }, { location, control, gate: GATE })
}

/** Start the move in a tab (not awaited). @param {import('playwright-core').Page} page */
function startMove (page) {
  return page.evaluate(() => {
    const t = /** @type {any} */ (window).t
    t.moved = t.db.buildIndexes().then(() => 'ok', (/** @type {any} */ err) => err.code ?? String(err))
    t.moved.then(() => { t.settled = true })
  })
}

/** What the tab's own move reported done so far, and whether it is over. @param {import('playwright-core').Page} page */
function mostDone (page) {
  return page.evaluate(() => {
    const t = /** @type {any} */ (window).t
    return { ...t.most, over: t.settled === true }
  })
}

/** Resolve once the move in `page` has moved something. @param {import('playwright-core').Page} page */
async function whenMoving (page) {
  for (let i = 0; i < 6000; i++) {
    const most = await mostDone(page)
    if (most.follows > 0 || most.notes > 0) return most
    await new Promise(resolve => setTimeout(resolve, 5))
  }
  throw new Error('the move did not start')
}

/**
 * In the writing tab, while the other tab moves: read (the read waits for
 * the move), then, none awaited before the next, add and remove edges and
 * append and delete notes of every 10th person, and a second wave once
 * those are done. Returns the reads, each with the layout states this tab
 * saw when it was made and when it was answered. The other tab's move is
 * `held`: `signal` says when to let it go on, 'reading' (once the states
 * before the reads are in) or 'writing' (once the first wave is sent; for
 * a tab whose reads do not wait), or null (never: it is closed).
 * @param {import('playwright-core').Page} page @param {'reading' | 'writing' | null} signal
 */
function readAndWrite (page, signal) {
  return page.evaluate(async ({ people, ahead, signal, gate }) => {
    const { db, rel, notes } = /** @type {any} */ (window).t
    const states = async () => {
      const s = await db.schemaStatus()
      return [s.follows?.layout?.state ?? 'ready', s.notes?.layout?.state ?? 'ready']
    }
    const go = () => {
      const channel = new BroadcastChannel(gate)
      channel.postMessage('go')
      channel.close()
    }
    const before = await states()
    if (signal === 'reading') go()
    const reads = await Promise.all([
      rel.to(5).all(),
      rel.from(5).all(),
      notes.getMany(5, [1, 7, 10])
    ])
    const after = await states()
    for (const wave of [0, 1]) {
      const writes = []
      for (let i = 1 + wave; i <= people; i += 10) {
        writes.push(rel.add(i, 1 + (i + ahead + wave) % people))
        writes.push(rel.remove(i, 1 + (i + wave * 2) % people))
        writes.push(notes.append(i, `${i}:new${wave}`))
        writes.push(notes.del(i, 2 + wave))
      }
      if (signal === 'writing' && wave === 0) go()
      await Promise.all(writes)
    }
    return { before, after, reads }
  }, { people: PEOPLE, ahead: AHEAD, signal, gate: GATE })
}

/**
 * What the writes of readAndWrite() leave: the edges "from>to" and each
 * person's notes [seq, value].
 */
function expected () {
  const edges = new Set()
  /** @type {Map<number, Array<[number, string]>>} */
  const notes = new Map()
  for (let i = 1; i <= PEOPLE; i++) {
    for (const j of follows(i)) edges.add(`${i}>${j}`)
    notes.set(i, Array.from({ length: NOTES }, (_, k) => /** @type {[number, string]} */ ([k + 1, `${i}:${k + 1}`])))
  }
  for (const wave of [0, 1]) {
    for (let i = 1 + wave; i <= PEOPLE; i += 10) {
      edges.add(`${i}>${1 + (i + AHEAD + wave) % PEOPLE}`)
      edges.delete(`${i}>${1 + (i + wave * 2) % PEOPLE}`)
      const kept = /** @type {Array<[number, string]>} */ (notes.get(i))
      kept.push([NOTES + 1, `${i}:new${wave}`])
      notes.set(i, kept.filter(([seq]) => seq !== 2 + wave))
    }
  }
  const to = []
  const from = []
  for (let i = 1; i <= PEOPLE; i++) {
    to.push([...edges].filter(e => e.startsWith(`${i}>`)).map(e => Number(e.split('>')[1])).sort((a, b) => a - b))
    from.push([...edges].filter(e => e.endsWith(`>${i}`)).map(e => Number(e.split('>')[0])).sort((a, b) => a - b))
  }
  return { to, from, notes: [...notes.values()] }
}

/**
 * Wait for the tab's move (if it started one), then read back every
 * person's edges both ways and notes (reads wait for a move under way),
 * and check().
 * @param {import('playwright-core').Page} page
 */
function inspect (page) {
  return page.evaluate(async ({ people }) => {
    const t = /** @type {any} */ (window).t
    const moved = t.moved === undefined ? 'none' : await t.moved
    const gate = t.held === null ? 'none' : await t.held
    const to = []
    const from = []
    const notes = []
    for (let i = 1; i <= people; i++) {
      to.push(await t.rel.to(i).all())
      from.push(await t.rel.from(i).all())
      const entries = []
      for await (const entry of t.notes.range(i).entries()) entries.push(entry)
      notes.push(entries)
    }
    t.poll.stopped = true
    clearTimeout(t.poll.timer)
    const status = await t.db.schemaStatus()
    const problems = (await t.db.check()).problems.map((/** @type {any} */ p) => p.type)
    return { moved, gate, most: t.most, layouts: [status.follows?.layout?.state ?? 'ready', status.notes?.layout?.state ?? 'ready'], to, from, notes, problems }
  }, { people: PEOPLE })
}

/**
 * How many people's edges (either way) or notes differ from `want`.
 * @param {any} got @param {ReturnType<typeof expected>} want
 */
function wrong (got, want) {
  let count = 0
  for (let i = 0; i < PEOPLE; i++) {
    for (const part of ['to', 'from', 'notes']) {
      if (JSON.stringify(got[part][i]) === JSON.stringify(/** @type {any} */ (want)[part][i])) continue
      if (count++ === 0) console.log(`# first difference: ${part}(${i + 1}) ${JSON.stringify(got[part][i])}, not ${JSON.stringify(/** @type {any} */ (want)[part][i])}`)
    }
  }
  return count
}

/** The seeded answers of the reads readAndWrite() makes. */
const seededReads = () => [
  follows(5).sort((a, b) => a - b),
  Array.from({ length: PEOPLE }, (_, i) => i + 1).filter(i => follows(i).includes(5)),
  ['5:1', '5:7', '5:10']
]

/**
 * The scenario: seed, reopen in both tabs, the first moves, the second
 * reads and writes meanwhile; with `closeMover`, the second tab opens once
 * the first tab's move has moved something, and the first is closed then.
 * @param {import('playwright-core').Page[]} pages @param {string} location
 * @param {{ closeMover?: boolean, writer?: { skip?: boolean, noSchemaLock?: boolean }, mover?: { noSchemaLock?: boolean } }} [options]
 */
async function scenario ([mover, writer], location, options = {}) {
  await seed(mover, location)
  // The move is held after its first batch until the second tab is where it should meet it:
  // left to run, at load 10-16 it was over (or past the people written) before.
  const opened = [await reopen(mover, location, { ...options.mover, held: true })]
  // With closeMover, the second tab opens in the middle of the move: it finds the first tab's marker.
  if (!options.closeMover) opened.push(await reopen(writer, location, options.writer))
  await startMove(mover)
  const movingAt = await whenMoving(mover)
  if (options.closeMover) opened.push(await reopen(writer, location, options.writer))
  const writing = readAndWrite(writer, options.closeMover ? null : options.writer?.skip ? 'writing' : 'reading')
  let closedAt = null
  if (options.closeMover) {
    // Let the writer's reads and writes queue behind the move, then close the moving tab.
    await new Promise(resolve => setTimeout(resolve, 50))
    closedAt = await mostDone(mover)
    await mover.close()
  }
  const during = await writing
  const after = options.closeMover ? [await inspect(writer)] : await Promise.all([inspect(mover), inspect(writer)])
  // (Else the second tab never said go: what the test asserts would be about another timing.)
  if (!options.closeMover && after[0].gate !== 'opened') throw new Error(`the first tab's move, held after its first batch, went on only when ${after[0].gate}`)
  return { opened, movingAt, closedAt, during, after }
}

/** @param {any} result */
const summary = result => JSON.stringify({ ...result, after: result.after.map((/** @type {any} */ a) => ({ moved: a.moved, gate: a.gate, most: a.most, layouts: a.layouts, problems: counted(a.problems) })) })

/** How many of each problem type. @param {string[]} problems */
function counted (problems) {
  /** @type {Record<string, number>} */
  const counts = {}
  for (const type of problems) counts[type] = (counts[type] ?? 0) + 1
  return counts
}

const same = (/** @type {unknown} */ a, /** @type {unknown} */ b) => JSON.stringify(a) === JSON.stringify(b)

/**
 * What the scenario with both tabs open must show, each as [holds, message].
 * @param {any} result
 * @returns {Record<string, [boolean, string]>}
 */
function twoTabVerdicts (result) {
  const [mover, writer] = result.after
  const want = expected()
  return {
    opened: [same(result.opened, [{ follows: 'moving', notes: 'moving' }, { follows: 'moving', notes: 'moving' }]), 'both tabs find the data in the old layout at open (schemaStatus() reports the moves)'],
    readDuring: [same(result.during.before, ['moving', 'moving']), 'the writing tab reads while the move runs'],
    readAfter: [same(result.during.after, ['ready', 'ready']), 'its reads were answered once the data was moved'],
    reads: [same(result.during.reads, seededReads()), 'and answer as before the move'],
    moverMoved: [mover.most.follows > 0 && mover.most.notes > 0, `the first tab moved both (${JSON.stringify(mover.most)})`],
    once: [same(writer.most, { follows: 0, notes: 0 }), `the second moved nothing: it waited and found them moved (${JSON.stringify(writer.most)})`],
    over: [same([mover.moved, mover.layouts, writer.layouts], ['ok', ['ready', 'ready'], ['ready', 'ready']]), 'the moves are over in both tabs'],
    keptMover: [wrong(mover, want) === 0, `every edge (both ways) and note of the ${PEOPLE} people, read in the first tab: each write kept once`],
    keptWriter: [wrong(writer, want) === 0, 'and in the second'],
    checkMover: [same(mover.problems, []), `check() is clean in the first tab (${JSON.stringify(counted(mover.problems))})`],
    checkWriter: [same(writer.problems, []), `and in the second (${JSON.stringify(counted(writer.problems))})`]
  }
}

/**
 * What the scenario with the moving tab closed must show.
 * @param {any} result
 * @returns {Record<string, [boolean, string]>}
 */
function closedTabVerdicts (result) {
  const [writer] = result.after
  return {
    openedMidMove: [same(result.opened[1], { follows: 'moving', notes: 'moving' }), 'the second tab, opened in the middle of the move, reports it'],
    closedMidMove: [result.closedAt.follows + result.closedAt.notes > 0 && !result.closedAt.over, `the first tab had moved some, not all, when it was closed (${JSON.stringify(result.closedAt)})`],
    readAfter: [same(result.during.after, ['ready', 'ready']), 'the second tab\'s reads were answered once the data was moved'],
    reads: [same(result.during.reads, seededReads()), 'and answer as before the move'],
    finished: [writer.most.follows > result.closedAt.follows || writer.most.notes > result.closedAt.notes, `the second tab moved the rest (${JSON.stringify(writer.most)})`],
    over: [same(writer.layouts, ['ready', 'ready']), 'the moves are over'],
    kept: [wrong(writer, expected()) === 0, `every edge (both ways) and note of the ${PEOPLE} people: each write kept once`],
    check: [same(writer.problems, []), `check() is clean (${JSON.stringify(counted(writer.problems))})`]
  }
}

/**
 * Assert every verdict, or (a control) that the verdicts named in `failing`
 * fail (others may too: a control's timing varies).
 * @param {import('tape').Test} t @param {Record<string, [boolean, string]>} verdicts @param {string[]} [failing]
 */
function judge (t, verdicts, failing) {
  if (failing === undefined) {
    for (const [holds, message] of Object.values(verdicts)) t.ok(holds, message)
    return
  }
  const failed = Object.entries(verdicts).filter(([, [holds]]) => !holds).map(([name]) => name)
  t.comment(`failed: ${failed.join(', ')}`)
  for (const name of failing) t.ok(failed.includes(name), `fails: ${verdicts[name][1]}`)
}

test('IndexedDB, two tabs: one moves a relation\'s edges and a children set\'s children into their new layouts while the other reads and writes them', { timeout: 180000 }, async t => {
  await withTabs(2, async pages => {
    const result = await scenario(pages, 'layout-move-two-tabs')
    t.comment(summary(result))
    judge(t, twoTabVerdicts(result))
  })
})

test('IndexedDB, two tabs: a tab closed in the middle of a move lets the other finish it', { timeout: 180000 }, async t => {
  await withTabs(2, async pages => {
    const result = await scenario(pages, 'layout-move-closed-tab', { closeMover: true })
    t.comment(summary(result))
    judge(t, closedTabVerdicts(result))
  })
})

test('control: a writing tab that takes the moves as done reads before they are, and its writes are lost or undone (so the test above can fail)', { timeout: 180000 }, async t => {
  await withTabs(2, async pages => {
    const result = await scenario(pages, 'layout-move-skip', { writer: { skip: true } })
    t.comment(summary(result))
    judge(t, twoTabVerdicts(result), ['readDuring', 'reads', 'keptMover', 'keptWriter'])
  })
})

test('control: with a schema lock that holds nothing both tabs move (so the test above can fail)', { timeout: 180000 }, async t => {
  await withTabs(2, async pages => {
    const noLock = { noSchemaLock: true }
    const result = await scenario(pages, 'layout-move-no-lock', { mover: noLock, writer: noLock })
    t.comment(summary(result))
    judge(t, twoTabVerdicts(result), ['once'])
  })
})

test('control: a tab closed in the middle of a move, and one that takes the moves as done, leave them unfinished (so the test above can fail)', { timeout: 180000 }, async t => {
  await withTabs(2, async pages => {
    const result = await scenario(pages, 'layout-move-closed-skip', { closeMover: true, writer: { skip: true } })
    t.comment(summary(result))
    judge(t, closedTabVerdicts(result), ['reads', 'finished', 'kept', 'check'])
  })
})
