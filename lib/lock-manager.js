import { compareBytes } from './bytes.js'
import { levelkitError, codes, invalid } from './errors.js'

// The lock table of the transactions of one database, in process.
//
// Held locks and queued requests are kept per space (a namespace prefix) in
// plain arrays, and every check scans the space's array: a transaction locks
// the few keys and ranges it touches, and few transactions overlap in one
// space at a time, so a scan is over a handful of entries: cheap, and
// simpler than keeping a tree balanced. If the scans show in profiles (many
// concurrent transactions or long-lived range locks in one space), an
// interval tree per space is the next step; the interface does not change.
//
// Deadlocks are found when they form (no detector on a timer): the wait-for
// relation is computed on demand from the arrays each time a request has to
// wait, and each time a grant gives a waiter a new lock to wait for.

/**
 * @typedef {{ age: number }} LockOwner any object; larger age = younger (started later)
 * @typedef {{ gte?: Uint8Array, lt?: Uint8Array }} LockBounds a half-open byte range; a missing bound is unbounded
 * @typedef {'read' | 'shared' | 'soft' | 'hard' | 'write'} LockMode
 * @typedef {{ timeout?: number }} LockOptions
 */

const READ = 1
const SHARED = 2
const SOFT = 4
const HARD = 8
const WRITE = 16

/** @type {Record<string, number>} */
const BIT = { read: READ, shared: SHARED, soft: SOFT, hard: HARD, write: WRITE }

// The modes each mode conflicts with, between different owners. Symmetric:
// a queued request and a new one conflict as a held one and a new one do.
/** @type {Record<string, number>} */
const CONFLICTS = {
  read: HARD,
  shared: SOFT | HARD | WRITE,
  soft: SHARED | SOFT | HARD | WRITE,
  hard: READ | SHARED | SOFT | HARD | WRITE,
  write: SHARED | SOFT | HARD | WRITE
}

// How much a held mode keeps others out: a lock of at least the requested
// rank over the requested range already grants the request. 'soft' and
// 'write' keep out the same modes.
/** @type {Record<string, number>} */
const RANK = { read: 0, shared: 1, soft: 2, write: 2, hard: 3 }

class Held {
  /** @param {LockOwner} owner @param {Uint8Array | undefined} gte @param {Uint8Array | undefined} lt @param {LockMode} mode */
  constructor (owner, gte, lt, mode) {
    this.owner = owner
    this.gte = gte
    this.lt = lt
    this.mode = mode
  }
}

class Request extends Held {
  /**
   * @param {LockOwner} owner @param {string} space
   * @param {Uint8Array | undefined} gte @param {Uint8Array | undefined} lt @param {LockMode} mode
   */
  constructor (owner, space, gte, lt, mode) {
    super(owner, gte, lt, mode)
    this.space = space
    /** @type {(value: void) => void} */
    this.resolve = noop
    /** @type {(reason: unknown) => void} */
    this.reject = noop
    /** @type {any} */
    this.timer = null
    /** @type {number | undefined} */
    this.timeout = undefined
    this.queued = false
  }
}

class OwnerState {
  constructor () {
    /** @type {Set<string>} spaces where the owner holds locks */
    this.spaces = new Set()
    /** @type {Request[]} its pending requests, in the order they were made */
    this.waits = []
  }
}

function noop () {}

const MAX_TIMEOUT = 2 ** 31 - 1

/**
 * Whether [aGte, aLt) and [bGte, bLt) share a key.
 * @param {Uint8Array | undefined} aGte @param {Uint8Array | undefined} aLt
 * @param {Uint8Array | undefined} bGte @param {Uint8Array | undefined} bLt
 */
function overlaps (aGte, aLt, bGte, bLt) {
  return (aGte === undefined || bLt === undefined || compareBytes(aGte, bLt) < 0) &&
    (bGte === undefined || aLt === undefined || compareBytes(bGte, aLt) < 0)
}

/**
 * Whether `lock` covers [gte, lt).
 * @param {Held} lock @param {Uint8Array | undefined} gte @param {Uint8Array | undefined} lt
 */
function covers (lock, gte, lt) {
  return (lock.gte === undefined || (gte !== undefined && compareBytes(lock.gte, gte) <= 0)) &&
    (lock.lt === undefined || (lt !== undefined && compareBytes(lt, lock.lt) <= 0))
}

/** @param {Uint8Array | undefined} a @param {Uint8Array | undefined} b */
function sameBound (a, b) {
  return a === undefined ? b === undefined : b !== undefined && compareBytes(a, b) === 0
}

export class LockManager {
  /** @type {Map<string, Held[]>} */
  #held = new Map()
  /** @type {Map<string, Request[]>} per space, in FIFO order */
  #queues = new Map()
  /** @type {Map<LockOwner, OwnerState>} */
  #owners = new Map()
  // Held locks plus pending requests: `active` is one comparison.
  #count = 0
  #waits = 0
  #timeouts = 0
  #deadlocks = 0

  /** true while any lock is held or awaited (callers skip all lock work when false) */
  get active () {
    return this.#count !== 0
  }

  /**
   * Lock `bounds` of `space` for `owner` in `mode`. Returns null when granted
   * at once, else a promise that resolves when granted or rejects with
   * LEVELKIT_LOCK_TIMEOUT, LEVELKIT_DEADLOCK or the reason given to release().
   * The bounds' byte arrays are kept, not copied: do not change them.
   * @param {LockOwner} owner
   * @param {string} space
   * @param {LockBounds} bounds
   * @param {LockMode} mode
   * @param {LockOptions} [options]
   * @returns {Promise<void> | null}
   */
  acquire (owner, space, bounds, mode, options) {
    const conflicts = CONFLICTS[mode]
    if (conflicts === undefined) throw invalid(`Unknown lock mode: ${String(mode)}`, { mode })
    const gte = bounds.gte
    const lt = bounds.lt
    const held = this.#held.get(space)
    const rank = RANK[mode]
    /** @type {Held | null} */
    let same = null
    if (held !== undefined) {
      for (let i = 0; i < held.length; i++) {
        const lock = held[i]
        if (lock.owner === owner) {
          if (RANK[lock.mode] >= rank && covers(lock, gte, lt)) return null
          if (sameBound(lock.gte, gte) && sameBound(lock.lt, lt)) same = lock
        } else if ((conflicts & BIT[lock.mode]) !== 0 && overlaps(gte, lt, lock.gte, lock.lt)) {
          return this.#wait(owner, space, gte, lt, mode, options)
        }
      }
    }
    if (mode === 'read') return null
    const queue = this.#queues.get(space)
    if (queue !== undefined && this.#behind(owner, gte, lt, mode, held, queue, queue.length)) {
      return this.#wait(owner, space, gte, lt, mode, options)
    }
    this.#record(owner, space, held, gte, lt, mode, same)
    return null
  }

  /**
   * Drop every lock `owner` holds and every wait it has (rejecting those
   * waits with `reason` if given, else with LEVELKIT_ABORTED), then grant
   * what can be granted, in FIFO order.
   * @param {LockOwner} owner
   * @param {unknown} [reason]
   */
  release (owner, reason) {
    const state = this.#owners.get(owner)
    if (state === undefined) return
    // The spaces whose queues may move: where it held locks or waited.
    const touched = state.waits.length === 0 ? state.spaces : new Set(state.spaces)
    for (const req of state.waits.slice()) {
      this.#dequeue(req)
      touched.add(req.space)
      req.reject(reason !== undefined
        ? reason
        : levelkitError(codes.ABORTED, 'The lock wait was abandoned: its owner released its locks', { space: req.space, mode: req.mode }))
    }
    this.#owners.delete(owner)
    for (const space of state.spaces) {
      const held = /** @type {Held[]} */ (this.#held.get(space))
      let kept = 0
      for (let i = 0; i < held.length; i++) {
        if (held[i].owner !== owner) held[kept++] = held[i]
      }
      this.#count -= held.length - kept
      held.length = kept
      if (kept === 0) this.#held.delete(space)
    }
    this.#settle(touched)
  }

  /**
   * Whether an owner other than `owner` holds a lock on `space` overlapping
   * `bounds` whose mode conflicts with `mode`. Queued requests do not count.
   * @param {LockOwner} owner
   * @param {string} space
   * @param {LockBounds} bounds
   * @param {LockMode} mode
   */
  isBlocked (owner, space, bounds, mode) {
    const held = this.#held.get(space)
    return held !== undefined && this.#heldBlocks(owner, bounds.gte, bounds.lt, mode, held)
  }

  /** Requests that had to wait, waits that timed out, deadlocks broken: since construction. */
  stats () {
    return { waits: this.#waits, timeouts: this.#timeouts, deadlocks: this.#deadlocks }
  }

  /**
   * Whether another owner's lock in `held` keeps the request out.
   * @param {LockOwner} owner @param {Uint8Array | undefined} gte @param {Uint8Array | undefined} lt
   * @param {LockMode} mode @param {Held[]} held
   */
  #heldBlocks (owner, gte, lt, mode, held) {
    const conflicts = CONFLICTS[mode]
    for (let i = 0; i < held.length; i++) {
      const lock = held[i]
      if (lock.owner !== owner && (conflicts & BIT[lock.mode]) !== 0 && overlaps(gte, lt, lock.gte, lock.lt)) return true
    }
    return false
  }

  /**
   * Whether the request must queue behind one of queue[0, end): an earlier
   * conflicting request of another owner. Except one that waits for a lock
   * `owner` holds: that one cannot be granted before `owner` releases
   * everything, so going ahead of it delays it by nothing, while queueing
   * behind it would be a deadlock (a reader upgrading while a writer waits).
   * Plain reads never queue behind anything.
   * @param {LockOwner} owner @param {Uint8Array | undefined} gte @param {Uint8Array | undefined} lt
   * @param {LockMode} mode @param {Held[] | undefined} held @param {Request[]} queue @param {number} end
   */
  #behind (owner, gte, lt, mode, held, queue, end) {
    if (mode === 'read') return false
    const conflicts = CONFLICTS[mode]
    for (let i = 0; i < end; i++) {
      const req = queue[i]
      if (req.owner !== owner && (conflicts & BIT[req.mode]) !== 0 && overlaps(gte, lt, req.gte, req.lt) &&
        !this.#waitsFor(req, owner, held)) return true
    }
    return false
  }

  /**
   * Whether `req` waits for a lock that `owner` holds (in `held`, its space's).
   * @param {Request} req @param {LockOwner} owner @param {Held[] | undefined} held
   */
  #waitsFor (req, owner, held) {
    if (held === undefined) return false
    const conflicts = CONFLICTS[req.mode]
    for (let i = 0; i < held.length; i++) {
      const lock = held[i]
      if (lock.owner === owner && (conflicts & BIT[lock.mode]) !== 0 && overlaps(req.gte, req.lt, lock.gte, lock.lt)) return true
    }
    return false
  }

  /**
   * Hold a granted lock: nothing if the owner already holds one at least as
   * strong over the range, the stronger mode on a lock with the same bounds,
   * else a new entry. A plain read holds nothing.
   * @param {LockOwner} owner @param {string} space @param {Held[] | undefined} held
   * @param {Uint8Array | undefined} gte @param {Uint8Array | undefined} lt @param {LockMode} mode
   * @param {Held | null} same the owner's lock with these bounds, if the caller found it
   */
  #record (owner, space, held, gte, lt, mode, same) {
    if (same !== null) {
      same.mode = mode
      return
    }
    if (held === undefined) {
      held = []
      this.#held.set(space, held)
    }
    held.push(new Held(owner, gte, lt, mode))
    this.#count++
    let state = this.#owners.get(owner)
    if (state === undefined) {
      state = new OwnerState()
      this.#owners.set(owner, state)
    }
    state.spaces.add(space)
  }

  /**
   * The slow path: queue a request that cannot be granted now, unless it
   * closes a wait-for cycle in which it is the youngest.
   * @param {LockOwner} owner @param {string} space
   * @param {Uint8Array | undefined} gte @param {Uint8Array | undefined} lt
   * @param {LockMode} mode @param {LockOptions | undefined} options
   * @returns {Promise<void> | null}
   */
  #wait (owner, space, gte, lt, mode, options) {
    this.#waits++
    const req = new Request(owner, space, gte, lt, mode)
    let brokeCycle = false
    // No one waits for an owner that holds nothing and asks for nothing
    // else, so its wait cannot close a cycle: the common case of a hot key's
    // queue, whose length would make every search longer.
    const known = this.#owners.get(owner)
    const free = known === undefined || (known.spaces.size === 0 && known.waits.length === 0)
    for (let cycle = free ? null : this.#cycle(owner, req); cycle !== null; cycle = this.#cycle(owner, req)) {
      this.#deadlocks++
      const victim = youngest(cycle)
      if (victim === owner) {
        // It will abort: its other waits would only hold others up.
        this.#settle(this.#abandon(owner, cycle.length))
        return Promise.reject(deadlockError(req, cycle.length))
      }
      this.#settle(this.#abandon(victim, cycle.length))
      brokeCycle = true
    }
    if (brokeCycle && this.#grantable(req, this.#queues.get(space))) {
      // A victim's request was what it waited behind.
      this.#grant(req)
      return null
    }
    const promise = new Promise((resolve, reject) => {
      req.resolve = resolve
      req.reject = reject
    })
    let queue = this.#queues.get(space)
    if (queue === undefined) {
      queue = []
      this.#queues.set(space, queue)
    }
    queue.push(req)
    req.queued = true
    let state = this.#owners.get(owner)
    if (state === undefined) {
      state = new OwnerState()
      this.#owners.set(owner, state)
    }
    state.waits.push(req)
    this.#count++
    const timeout = options?.timeout
    // Beyond setTimeout's 32-bit range a delay would fire at once.
    if (timeout !== undefined && Number.isFinite(timeout) && timeout <= MAX_TIMEOUT) {
      req.timeout = timeout
      req.timer = setTimeout(() => this.#expire(req), timeout)
      req.timer.unref?.()
    }
    return promise
  }

  /** @param {Request} req @param {Request[] | undefined} queue */
  #grantable (req, queue) {
    const held = this.#held.get(req.space)
    if (held !== undefined && this.#heldBlocks(req.owner, req.gte, req.lt, req.mode, held)) return false
    if (queue === undefined) return true
    let end = queue.indexOf(req)
    if (end === -1) end = queue.length
    return !this.#behind(req.owner, req.gte, req.lt, req.mode, held, queue, end)
  }

  /** Record a request's lock (it is not queued). @param {Request} req */
  #grant (req) {
    const { owner, space, gte, lt, mode } = req
    if (mode === 'read') return
    const held = this.#held.get(space)
    const rank = RANK[mode]
    /** @type {Held | null} */
    let same = null
    if (held !== undefined) {
      for (const lock of held) {
        if (lock.owner !== owner) continue
        if (RANK[lock.mode] >= rank && covers(lock, gte, lt)) return
        if (sameBound(lock.gte, gte) && sameBound(lock.lt, lt)) same = lock
      }
    }
    this.#record(owner, space, held, gte, lt, mode, same)
  }

  /** Take a pending request out of the queue and its owner's waits. @param {Request} req */
  #dequeue (req) {
    const queue = /** @type {Request[]} */ (this.#queues.get(req.space))
    queue.splice(queue.indexOf(req), 1)
    if (queue.length === 0) this.#queues.delete(req.space)
    const state = /** @type {OwnerState} */ (this.#owners.get(req.owner))
    req.queued = false
    state.waits.splice(state.waits.indexOf(req), 1)
    if (state.waits.length === 0 && state.spaces.size === 0) this.#owners.delete(req.owner)
    if (req.timer !== null) clearTimeout(req.timer)
    this.#count--
  }

  /** @param {Request} req */
  #expire (req) {
    req.timer = null
    this.#timeouts++
    this.#dequeue(req)
    req.reject(levelkitError(codes.LOCK_TIMEOUT, `Timed out after ${req.timeout} ms waiting for a ${req.mode} lock`, {
      space: req.space, mode: req.mode, timeout: req.timeout
    }))
    this.#settle([req.space])
  }

  /**
   * Reject every pending wait of a deadlock victim. Its held locks stay
   * until it releases them.
   * @param {LockOwner} victim @param {number} length of the cycle
   * @returns {Set<string>} the spaces whose queues changed
   */
  #abandon (victim, length) {
    const spaces = new Set()
    const state = this.#owners.get(victim)
    if (state === undefined) return spaces
    for (const req of state.waits.slice()) {
      this.#dequeue(req)
      spaces.add(req.space)
      req.reject(deadlockError(req, length))
    }
    return spaces
  }

  /**
   * Grant, in FIFO order, what the queues of `spaces` can grant.
   *
   * A grant gives no waiter an owner to wait for that it did not wait for
   * already (through the request that was granted, or because the waiter
   * waits for that owner's held locks, which is why the grant could pass it),
   * except a plain read: it queues behind nobody, so a hard lock granted
   * after it is a new wait, which may close a cycle. Those cycles are broken
   * here, and their victims' queues settled in turn.
   * @param {Iterable<string>} spaces
   */
  #settle (spaces) {
    if (this.#queues.size === 0) return
    const pending = new Set(spaces)
    for (const space of pending) {
      pending.delete(space)
      const queue = this.#queues.get(space)
      if (queue === undefined) continue
      let hard = false
      for (let i = 0; i < queue.length;) {
        const req = queue[i]
        if (!this.#grantable(req, queue)) {
          i++
          continue
        }
        this.#dequeue(req)
        this.#grant(req)
        req.resolve()
        if (req.mode === 'hard') hard = true
      }
      if (!hard) continue
      for (const req of queue.slice()) {
        if (req.mode !== 'read') continue
        for (let cycle; req.queued && (cycle = this.#cycle(req.owner, null)) !== null;) {
          this.#deadlocks++
          for (const changed of this.#abandon(youngest(cycle), cycle.length)) pending.add(changed)
        }
      }
    }
  }

  /**
   * The owners that `req` waits for: holders of conflicting locks, and of
   * earlier conflicting requests that it queues behind.
   * @param {Request} req
   * @param {Set<LockOwner>} into
   */
  #blockers (req, into) {
    const held = this.#held.get(req.space)
    const conflicts = CONFLICTS[req.mode]
    if (held !== undefined) {
      for (const lock of held) {
        if (lock.owner !== req.owner && (conflicts & BIT[lock.mode]) !== 0 && overlaps(req.gte, req.lt, lock.gte, lock.lt)) into.add(lock.owner)
      }
    }
    const queue = this.#queues.get(req.space)
    if (queue === undefined || req.mode === 'read') return into
    for (const other of queue) {
      if (other === req) break
      if (other.owner !== req.owner && (conflicts & BIT[other.mode]) !== 0 && overlaps(req.gte, req.lt, other.gte, other.lt) &&
        !this.#waitsFor(other, req.owner, held)) into.add(other.owner)
    }
    return into
  }

  /**
   * A wait-for cycle through `start`, as its owners from `start` on, or null.
   * With `first`, a request of `start`'s not queued yet, only cycles through
   * it: a cycle elsewhere was broken when it formed.
   * @param {LockOwner} start @param {Request | null} first
   * @returns {LockOwner[] | null}
   */
  #cycle (start, first) {
    /** @param {LockOwner} owner */
    const next = owner => {
      const into = new Set()
      for (const req of this.#owners.get(owner)?.waits ?? []) this.#blockers(req, into)
      return [...into]
    }
    const path = [start]
    const stack = [first !== null ? [...this.#blockers(first, new Set())] : next(start)]
    const visited = new Set([start])
    while (stack.length > 0) {
      const options = stack[stack.length - 1]
      if (options.length === 0) {
        stack.pop()
        path.pop()
        continue
      }
      const owner = /** @type {LockOwner} */ (options.pop())
      if (owner === start) return path
      if (visited.has(owner)) continue
      visited.add(owner)
      path.push(owner)
      stack.push(next(owner))
    }
    return null
  }
}

/** The youngest owner of a cycle (largest age), the first one on a tie. @param {LockOwner[]} cycle */
function youngest (cycle) {
  let victim = cycle[0]
  for (const owner of cycle) if (owner.age > victim.age) victim = owner
  return victim
}

/** @param {Request} req @param {number} length */
function deadlockError (req, length) {
  return levelkitError(codes.DEADLOCK, `Deadlock: this ${req.mode} lock wait closed a cycle of ${length} transactions, and this one is the youngest`, {
    space: req.space, mode: req.mode, cycle: length
  })
}
