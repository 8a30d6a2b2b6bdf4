/* global IDBTransaction */
// One tab of test/browser-realtime-test.js: the models and operations of
// test/util/realtime-ops.js over the built bundle, as window.realtime.
import { open } from '../../browser.js'
import { declare, seed, run } from '../util/realtime-ops.js'

/** @type {ReturnType<typeof declare> | null} */
let models = null

Object.assign(window, {
  realtime: {
    /**
     * Before open(): each readwrite transaction's `complete` listeners run
     * up to `ms` later (at random) than IndexedDB fires the event, as in a
     * tab busy with other tasks: the other tab sees a batch from its
     * commit on, this one only once it has run that task.
     * @param {number} ms
     */
    lateComplete (ms) {
      const add = IDBTransaction.prototype.addEventListener
      IDBTransaction.prototype.addEventListener = function (/** @type {string} */ type, /** @type {any} */ listener, /** @type {any} */ options) {
        if (type !== 'complete' || this.mode !== 'readwrite') return add.call(this, type, listener, options)
        const transaction = this
        const late = Math.random() * ms
        return add.call(this, type, (/** @type {Event} */ event) => { setTimeout(() => listener.call(transaction, event), late) }, options)
      }
    },
    /** @param {string} location @param {object} options @param {{ lists?: boolean, blockSize?: number }} layout */
    async open (location, options, layout) {
      models = declare(await open({ location, ...options }), layout)
    },
    /** @param {number} registers */
    seed (registers) {
      return seed(/** @type {any} */ (models), registers)
    },
    /**
     * An error's code does not cross page.evaluate(): it is told beside its message.
     * @param {string} op @param {any} args
     */
    run (op, args) {
      return run(/** @type {any} */ (models), op, args).then(result => ({ result }), err => ({ error: { code: err?.code, message: String(err?.message ?? err) } }))
    },
    async check () {
      return (await /** @type {any} */ (models).db.check()).problems
    },
    async close () {
      await /** @type {any} */ (models).db.close()
    }
  }
})
