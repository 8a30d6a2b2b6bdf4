/* global indexedDB */
// The model property test (test/util/model-*.js) in a browser page, on
// IndexedDB through the built bundle: levelkit's own IndexedDB layer
// (lib/idb-direct.js), the lease cache, the mirror store of the members'
// reverse direction, unique claims, the move into the index at a reopen
// with relationIndexes: true. test/browser-model-property-test.js opens two
// tabs of this page: the second calls window.model.serve() and runs the
// scenarios' 'other' commands on its own database of each run's location;
// the first calls window.model.check(), which runs fast-check here, sends
// those commands to the second over a BroadcastChannel, and answers with the
// result (a failure's counterexample and its path in `report`).

import { open } from '../../browser.js'
import { checkModel, localOther, portable, revive, Mismatch } from '../util/model-run.js'

const CHANNEL = 'levelkit-model-driver'
const prefix = `levelkit-model-${Math.random().toString(36).slice(2)}`
let runs = 0
// Commands the serving tab ran (the Node side checks that it ran some).
let served = 0

/** @param {string} name */
function deleteDatabase (name) {
  const deleted = new Promise((resolve, reject) => {
    const request = indexedDB.deleteDatabase(name)
    request.onsuccess = () => resolve(undefined)
    request.onerror = () => reject(request.error)
  })
  // A run that failed may leave a connection open somewhere: don't wait on it.
  return Promise.race([deleted, new Promise(resolve => setTimeout(resolve, 5000))])
}

/**
 * The driving tab's end of the channel: requests to the serving tab, each
 * answered once.
 */
function driver () {
  const channel = new BroadcastChannel(CHANNEL)
  let next = 0
  /** @type {Map<number, { resolve: (value: any) => void, reject: (err: Error) => void }>} */
  const pending = new Map()
  channel.onmessage = ({ data }) => {
    if (data.to !== 'driver') return
    const waiting = pending.get(data.id)
    if (waiting === undefined) return
    pending.delete(data.id)
    if (data.error !== undefined) waiting.reject(new Error(`in the other tab: ${data.error}`))
    else waiting.resolve(data.result)
  }
  /** @param {object} request */
  return request => new Promise((resolve, reject) => {
    const id = next++
    pending.set(id, { resolve, reject })
    channel.postMessage({ to: 'other', id, ...request })
  })
}

/**
 * The other tab's handle on a location, as the runner uses it.
 * @param {(request: object) => Promise<any>} request @param {string} location
 * @returns {import('../util/model-run.js').OtherHandle}
 */
function remoteOther (request, location) {
  return {
    run: async (ops, setup) => (await request({ kind: 'run', location, ops, setup })).map(revive),
    async compare (state, probes, where, setup) {
      const mismatch = await request({ kind: 'compare', location, state, probes, where, setup })
      if (mismatch !== null) throw new Mismatch(mismatch)
    },
    close: () => request({ kind: 'close', location })
  }
}

/** The serving tab: runs the driver's requests one at a time, in order. */
function serve () {
  const channel = new BroadcastChannel(CHANNEL)
  /** @type {Map<string, import('../util/model-run.js').OtherHandle>} */
  const handles = new Map()
  let queue = Promise.resolve()
  /** @param {any} data */
  const handle = async data => {
    let handle = handles.get(data.location)
    if (handle === undefined) {
      handle = localOther(options => open({ location: data.location, ...options }))
      handles.set(data.location, handle)
    }
    switch (data.kind) {
      case 'run':
        served += data.ops.length
        return (await handle.run(data.ops, data.setup)).map(portable)
      case 'compare':
        try {
          await handle.compare(data.state, data.probes, data.where, data.setup)
          return null
        } catch (err) {
          if (err instanceof Mismatch) return err.message
          throw err
        }
      case 'close':
        handles.delete(data.location)
        return handle.close()
    }
  }
  channel.onmessage = ({ data }) => {
    if (data.to !== 'other') return
    queue = queue.then(() => handle(data)).then(
      result => channel.postMessage({ to: 'driver', id: data.id, result }),
      (/** @type {any} */ err) => channel.postMessage({ to: 'driver', id: data.id, error: `${err?.code ? `[${err.code}] ` : ''}${err?.stack ?? err}` })
    )
  }
  return true
}

Object.assign(window, {
  model: {
    serve,
    served: () => served,
    /**
     * @param {{ seed: number, numRuns: number, path?: string, timeout?: number, tabs: number }} options
     */
    check ({ seed, numRuns, path, timeout, tabs }) {
      const request = tabs > 1 ? driver() : null
      return checkModel(async () => {
        const location = `${prefix}-${++runs}`
        return {
          open: options => open({ location, ...options }),
          durable: true,
          other: request ? remoteOther(request, location) : null,
          destroy: () => deleteDatabase(location)
        }
      }, { seed, numRuns, path, timeout })
    }
  }
})
