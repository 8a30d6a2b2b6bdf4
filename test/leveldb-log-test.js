// test/util/leveldb-log.js tells where a LevelDB log's last complete record
// ends (browser-crash-test drops what follows, a record a kill cut short):
// logs written here with LevelDB's framing, cut at every kind of place.

import test from 'tape'
import { logTail } from './util/leveldb-log.js'

const BLOCK = 32768
const HEADER = 7

const table = new Uint32Array(256)
for (let i = 0; i < 256; i++) {
  let c = i
  for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1
  table[i] = c >>> 0
}

/** @param {Uint8Array} bytes */
function crc32c (bytes) {
  let crc = ~0 >>> 0
  for (const byte of bytes) crc = (table[(crc ^ byte) & 0xff] ^ (crc >>> 8)) >>> 0
  return ~crc >>> 0
}

/**
 * A log of `payloads`, framed as LevelDB's log::Writer does: fragments at
 * block ends, zero trailers under a header's size. Returns the bytes and
 * where each record starts and ends.
 * @param {Uint8Array[]} payloads
 */
function writeLog (payloads) {
  /** @type {number[]} */
  const out = []
  const spans = []
  for (const payload of payloads) {
    let left = payload.length
    let at = 0
    let begin = true
    let start = -1
    do {
      const room = BLOCK - (out.length % BLOCK)
      if (room < HEADER) {
        for (let i = 0; i < room; i++) out.push(0)
        continue
      }
      if (start < 0) start = out.length
      const length = Math.min(left, room - HEADER)
      const end = length === left
      const type = begin && end ? 1 : begin ? 2 : end ? 4 : 3
      const fragment = payload.subarray(at, at + length)
      const crc = crc32c(new Uint8Array([type, ...fragment]))
      const masked = ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0
      out.push(masked & 0xff, (masked >>> 8) & 0xff, (masked >>> 16) & 0xff, masked >>> 24, length & 0xff, length >>> 8, type)
      for (const byte of fragment) out.push(byte)
      left -= length
      at += length
      begin = false
    } while (left > 0)
    spans.push([start, out.length])
  }
  return { bytes: new Uint8Array(out), spans }
}

/** @param {number} n @param {number} size */
function payloads (n, size) {
  return Array.from({ length: n }, (_, i) => new Uint8Array(size).fill(i % 251))
}

test('leveldb log: a complete log ends at its size, across blocks and trailers', t => {
  for (const size of [1, 100, 32761, 40000]) {
    const { bytes } = writeLog(payloads(12, size))
    t.same(logTail(bytes), { size: bytes.length, end: bytes.length, records: 12, corrupt: null }, `records of ${size} bytes`)
  }
  t.same(logTail(new Uint8Array(0)), { size: 0, end: 0, records: 0, corrupt: null }, 'an empty log')
  t.end()
})

test('leveldb log: a record cut anywhere ends the log at the record before it', t => {
  for (const size of [100, 5000, 40000]) {
    const { bytes, spans } = writeLog(payloads(20, size))
    const [start, end] = spans[spans.length - 1]
    // In its header, in its payload, between two fragments.
    for (let cut = start + 1; cut < end; cut += Math.max(1, Math.floor((end - start) / 97))) {
      const tail = logTail(bytes.subarray(0, cut))
      if (tail.end !== start || tail.records !== 19 || tail.corrupt !== null) {
        t.fail(`records of ${size} bytes, cut at ${cut}: ${JSON.stringify(tail)}`)
        return t.end()
      }
    }
    t.pass(`records of ${size} bytes: every cut inside the last record`)
  }
  t.end()
})

test('leveldb log: a partial record with newer records after it is a corruption', t => {
  const { bytes, spans } = writeLog(payloads(30, 300))
  const [, end] = spans[9]
  // What a reused log holds after a kill cut a header short.
  const joined = new Uint8Array([...bytes.subarray(0, end), 1, 2, 3, 4, 200, 0, 1, ...bytes.subarray(end)])
  const tail = logTail(joined)
  t.is(tail.corrupt, end, 'found where the partial record is')
  t.ok(tail.records < 30, 'the rest of its block is not counted')
  t.end()
})
