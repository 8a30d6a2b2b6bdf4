// A TCP proxy to the tests' PostgreSQL server (its unix socket, or its
// host) that can cut the connection carrying the next batch (a statement
// with a commit id, lib/backends/postgres-hosts.js, or another marker):
// before forwarding it, or once the server answers it. With { all: true }
// the cut takes every connection through the proxy, and with { refuse: true }
// new ones are refused from then on: the proxy stands in for a primary that died.
// With { commit: 'COMMIT' }, 'after' waits, on the batch's connection, for
// the statement that commits it (a COMMIT sent after the batch, as in a
// section transaction, or in the batch's own message) and cuts once it is
// answered. 'mid' cuts a section transaction midway (locking: 'keys' or
// 'serializable'): at the next statement on the writer connection, once a
// statement of its transaction was answered, that is neither a batch nor its end.
import { createServer, connect } from 'node:net'

const READY = Buffer.from([0x5a, 0, 0, 0, 5])

/**
 * @param {string} connectionString
 * @param {{ marker?: string }} [options] what a batch's statement contains (a commit id's CTE by default)
 */
export async function cutter (connectionString, { marker = 'lk_commit AS' } = {}) {
  const url = new URL(connectionString)
  const host = decodeURIComponent(url.hostname)
  const port = Number(url.port || 5432)
  /** @type {{ mode: 'before' | 'after' | 'mid' | null, refuse: boolean, all: boolean, cuts: number, commit: string | null }} */
  const state = { mode: null, refuse: false, all: false, cuts: 0, commit: null }
  /** @type {Set<import('node:net').Socket>} */
  const sockets = new Set()
  let refuseAfter = false
  /** @type {Array<() => void>} */
  let onCut = []
  const proxy = createServer(client => {
    if (state.refuse) {
      client.destroy()
      return
    }
    const upstream = host.startsWith('/') ? connect(`${host}/.s.PGSQL.${port}`) : connect(port, host)
    sockets.add(client)
    sockets.add(upstream)
    let armed = false
    // The batch went by: its COMMIT is awaited (state.commit).
    let batched = false
    // The writer connection (its startup message names it), and whether the server said it is in a transaction.
    let writer = false
    let inTransaction = false
    const cutBoth = () => {
      state.cuts++
      state.mode = null
      if (refuseAfter) state.refuse = true
      client.destroy()
      upstream.destroy()
      if (state.all) for (const socket of sockets) socket.destroy()
      for (const wake of onCut) wake()
      onCut = []
    }
    client.on('data', chunk => {
      if (chunk.includes('levelkit writer')) writer = true
      if (state.mode === 'mid' && writer && inTransaction && !chunk.includes(marker) && !chunk.includes('COMMIT') && !chunk.includes('ROLLBACK')) return cutBoth()
      if (state.mode !== null && state.mode !== 'mid' && chunk.includes(marker)) {
        if (state.mode === 'before') return cutBoth()
        if (state.commit === null) armed = true
        else batched = true
      }
      if (batched && state.mode === 'after' && chunk.includes(/** @type {string} */ (state.commit))) armed = true
      upstream.write(chunk)
    })
    upstream.on('data', chunk => {
      if (armed) return cutBoth()
      // ReadyForQuery: its status byte is T in a transaction.
      const ready = chunk.lastIndexOf(READY)
      if (ready !== -1 && ready + READY.length < chunk.length) inTransaction = chunk[ready + READY.length] === 0x54
      client.write(chunk)
    })
    for (const socket of [client, upstream]) {
      socket.on('error', () => {})
      socket.on('close', () => { sockets.delete(socket); client.destroy(); upstream.destroy() })
    }
  })
  await new Promise(resolve => proxy.listen(0, '127.0.0.1', () => resolve(undefined)))
  const address = /** @type {import('node:net').AddressInfo} */ (proxy.address())
  return {
    /** host:port of the proxy */
    address: `127.0.0.1:${address.port}`,
    connectionString: `${url.protocol}//${url.username ? `${url.username}@` : ''}127.0.0.1:${address.port}${url.pathname}`,
    /** @param {'before' | 'after' | 'mid'} mode @param {{ refuse?: boolean, all?: boolean, commit?: string }} [options] */
    cut (mode, options = {}) {
      state.mode = mode
      refuseAfter = !!options.refuse
      state.all = !!options.all
      state.commit = options.commit ?? null
    },
    /** Resolves at the next cut. @returns {Promise<void>} */
    cutDone () {
      return new Promise(resolve => onCut.push(() => resolve()))
    },
    get cuts () { return state.cuts },
    get refuse () { return state.refuse },
    set refuse (value) { state.refuse = value },
    async close () {
      for (const socket of sockets) socket.destroy()
      await new Promise(resolve => proxy.close(() => resolve(undefined)))
    }
  }
}
