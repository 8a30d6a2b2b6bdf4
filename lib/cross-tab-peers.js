// Which other tabs listen on a cross-tab channel (lib/cross-tab.js), so
// that a tab alone posts nothing: a BroadcastChannel message costs the
// browser process about 0.4 ms of CPU and the write about 0.5 ms of wall
// time even when nobody hears it (bench/RESULTS.md, browser-workload,
// session 18), once per batch.
//
// Each tab says 'hello' as it starts listening; a tab that hears one
// answers 'here', so the newcomer knows of it too; 'bye' as it closes. A
// message of any other kind from a tab also makes it known (a tab of an
// earlier levelkit says no 'hello', but says 'want' before it writes).
// While a tab knows of no other, it posts nothing of what it writes, and
// remembers that it skipped something: then, once it learns of another
// tab, it posts a gap notice (nothing known of what was written: forget
// and look again), because the newcomer was listening since just before
// its 'hello' and may have missed batches written meanwhile. What was
// written before that, the newcomer reads from the database as it opens.
// A tab that vanishes without a 'bye' (crashed, killed) stays known: the
// others keep posting, which costs, but is never wrong.

/** Tab ids heard without a 'bye' to come (a tab of an earlier levelkit sends none). */
const UNNAMED = '?'

/**
 * @typedef {object} Peers
 * @property {(data: any) => boolean} heard called with each message's data: true if it was only about presence
 * @property {() => boolean} any whether another tab may listen: post then
 * @property {() => void} skipped a message was not posted because no other tab listens
 * @property {() => void} close says 'bye'
 */

/**
 * @param {(data: object) => void} post posts on the channel (never throws)
 * @param {() => void} gap posts a gap notice
 * @param {string} self this tab's id, which its other messages carry (`tab`)
 * @returns {Peers}
 */
export function peersOn (post, gap, self) {
  /** @type {Set<string>} */
  const peers = new Set()
  let missed = false
  /** @param {string} id */
  const know = id => {
    const first = peers.size === 0
    peers.add(id)
    if (first && missed) {
      missed = false
      gap()
    }
  }
  post({ hello: self })
  return {
    heard (data) {
      const tab = typeof data?.tab === 'string' ? data.tab : null
      if (typeof data?.hello === 'string') {
        if (data.hello === self) return true
        // Answered before the gap notice: the newcomer learns of this tab first.
        post({ here: self })
        know(data.hello)
        return true
      }
      if (typeof data?.here === 'string') {
        if (data.here !== self) know(data.here)
        return true
      }
      if (typeof data?.bye === 'string') {
        peers.delete(data.bye)
        return true
      }
      know(tab ?? UNNAMED)
      return false
    },
    any () {
      return peers.size > 0
    },
    skipped () {
      missed = true
    },
    close () {
      post({ bye: self })
    }
  }
}

/** An id for a tab's channel: unique among the tabs of an origin. */
export function tabId () {
  const crypto = globalThis.crypto
  if (typeof crypto?.randomUUID === 'function') return crypto.randomUUID()
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`
}
