// A TCP proxy to the tests' PostgreSQL server (its unix socket, or its
// host) that can cut the connection carrying the next batch (a statement
// with a commit id, lib/backends/postgres-hosts.js, or another marker):
// before forwarding it, or once the server answers it. With { all: true }
// the cut takes every connection through the proxy, and with { refuse: true }
// new ones are refused from then on: the proxy stands in for a primary that died.
import { createServer, connect } from 'node:net'

/**
 * @param {string} connectionString
 * @param {{ marker?: string }} [options] what a batch's statement contains (a commit id's CTE by default)
 */
export async function cutter (connectionString, { marker = 'lk_commit AS' } = {}) {
  const url = new URL(connectionString)
  const host = decodeURIComponent(url.hostname)
  const port = Number(url.port || 5432)
  /** @type {{ mode: 'before' | 'after' | null, refuse: boolean, all: boolean, cuts: number }} */
  const state = { mode: null, refuse: false, all: false, cuts: 0 }
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
      if (state.mode !== null && chunk.includes(marker)) {
        if (state.mode === 'before') return cutBoth()
        armed = true
      }
      upstream.write(chunk)
    })
    upstream.on('data', chunk => {
      if (armed) return cutBoth()
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
    /** @param {'before' | 'after'} mode @param {{ refuse?: boolean, all?: boolean }} [options] */
    cut (mode, options = {}) {
      state.mode = mode
      refuseAfter = !!options.refuse
      state.all = !!options.all
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
