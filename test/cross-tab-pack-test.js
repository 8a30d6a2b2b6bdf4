// The ops of a batch as a tab tells the others of it on IndexedDB
// (lib/cross-tab.js packOps()): one buffer and a list of prefixes, read
// back as they were. (test/browser-cross-tab-test.js posts them between tabs.)

import test from 'tape'
import { packOps, unpackOps } from '../lib/cross-tab.js'

/** @param {number} length @param {number} seed */
const bytes = (length, seed) => Uint8Array.from({ length }, (_, i) => (i * 31 + seed) & 0xff)

test('packOps() and unpackOps(): ops read back as packed, each key a view of one buffer', t => {
  /** @type {import('../lib/cross-tab.js').RemoteOp[]} */
  const ops = [
    { prefix: '!users!', type: 'put', key: bytes(5, 1) },
    { prefix: '!users~last!', type: 'put', key: bytes(0, 2) },
    { prefix: '!users!', type: 'del', key: bytes(127, 3) },
    { prefix: '!chats!', type: 'put', key: bytes(128, 4) },
    { prefix: '!chats!', type: 'put', key: bytes(70000, 5) }
  ]
  for (let i = 0; i < 200; i++) ops.push({ prefix: `!p${i}!`, type: i % 3 === 0 ? 'del' : 'put', key: bytes(i % 40, i) })
  const { prefixes, keys } = packOps(ops)
  t.is(prefixes.length, 203, 'each prefix once')
  t.ok(keys instanceof Uint8Array, 'one buffer')
  const back = /** @type {import('../lib/cross-tab.js').RemoteOp[]} */ (unpackOps(prefixes, keys))
  t.is(back.length, ops.length, 'as many ops')
  t.ok(back.every((op, i) => op.prefix === ops[i].prefix && op.type === ops[i].type && Buffer.from(op.key).equals(Buffer.from(ops[i].key))), 'each op as it was: prefix, type, key')
  t.ok(back.every(op => op.key.buffer === keys.buffer), 'keys are views of the buffer')
  t.same(unpackOps(...Object.values(packOps([]))), [], 'no ops: none')
  t.end()
})

test('unpackOps(): a buffer that is not packOps()\'s is refused (null), not read past its end', t => {
  const { prefixes, keys } = packOps([{ prefix: '!a!', type: 'put', key: bytes(10, 1) }])
  t.is(unpackOps(prefixes, keys.subarray(0, keys.length - 1)), null, 'a key cut short')
  t.is(unpackOps([], keys), null, 'a prefix index past the list')
  t.is(unpackOps(prefixes, Uint8Array.of(0, 7, 0)), null, 'a type that is neither put nor del')
  t.is(unpackOps(prefixes, Uint8Array.of(0, 0, 0x80)), null, 'a length cut short')
  t.end()
})
