// Benchmark: levelkit's tuple codec (lib/tuple.js) vs the bytewise package,
// which defines the byte format we implement. Both codecs run on the same
// data in the same process, alternating, for several rounds; we report the
// median ops/s of each and the ratio levelkit/bytewise.
//
// Usage: node bench/tuple-codec.js [count] [rounds]

import os from 'node:os'
import { createRequire } from 'node:module'
import { encode, decode, compareBytes } from '../lib/tuple.js'

const require = createRequire(import.meta.url)
const bytewise = require('bytewise')

const COUNT = Number(process.argv[2]) || 200_000
const ROUNDS = Number(process.argv[3]) || 5

// Deterministic PRNG (mulberry32) so runs are comparable.
let seed = 0x9e3779b9
function random () {
  seed = (seed + 0x6d2b79f5) | 0
  let t = seed
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}
const int = (lo, hi) => lo + Math.floor(random() * (hi - lo + 1))
const pick = (list) => list[int(0, list.length - 1)]
const word = (min, max) => {
  let s = ''
  for (let i = int(min, max); i > 0; i--) s += String.fromCharCode(int(97, 122))
  return s
}

const CITIES = ['Zürich', 'São Paulo', 'Kraków', '東京', 'Ελλάδα', 'Montréal 😀']

const datasets = {
  // A typical secondary index key: [indexed string, signed int, float].
  '[string, int, float]': () => ['user:' + word(4, 12), int(-1e6, 1e6), (random() - 0.5) * 1e4],
  // A typical primary key: [collection, id].
  '[string, uint]': () => [word(3, 10), int(0, 2 ** 32)],
  // Non-ASCII strings take the TextEncoder/TextDecoder path.
  '[unicode string, uint]': () => [pick(CITIES) + ' ' + word(0, 6), int(0, 1e6)],
  // Nested tuples, booleans, null and bytes.
  nested: () => [word(2, 6), [int(1970, 2100), int(1, 12), int(1, 28)], [pick([true, false]), null, word(1, 8)], Buffer.from([int(0, 255), 0, 255, int(0, 255)])]
}

let sink = 0 // consumed results, so the work cannot be optimised away

function time (fn, input) {
  const start = process.hrtime.bigint()
  fn(input)
  const ns = Number(process.hrtime.bigint() - start)
  return input.length / (ns / 1e9)
}

function encodeAll (encodeFn) {
  return (values) => {
    for (let i = 0; i < values.length; i++) sink += encodeFn(values[i]).length
  }
}

function decodeAll (decodeFn) {
  return (keys) => {
    for (let i = 0; i < keys.length; i++) sink += decodeFn(keys[i]).length
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}

const fmt = (n) => Math.round(n).toLocaleString('en-US').padStart(12)

console.log(`node ${process.version}, ${os.cpus()[0].model}`)
console.log(`${COUNT} tuples per dataset, ${ROUNDS} rounds, median ops/s\n`)
console.log('dataset'.padEnd(24) + 'op'.padEnd(8) + 'levelkit'.padStart(12) + 'bytewise'.padStart(12) + '   ratio   avg key bytes')

const lkEncode = encodeAll(encode)
const bwEncode = encodeAll(bytewise.encode)
const lkDecode = decodeAll(decode)
const bwDecode = decodeAll(bytewise.decode)

for (const [name, make] of Object.entries(datasets)) {
  const values = Array.from({ length: COUNT }, make)
  const ours = values.map(encode)
  const theirs = values.map((v) => bytewise.encode(v))

  // Sanity: same bytes as bytewise, and decode inverts encode.
  let keyBytes = 0
  for (let i = 0; i < COUNT; i++) {
    keyBytes += ours[i].length
    if (compareBytes(ours[i], new Uint8Array(theirs[i])) !== 0 ||
        compareBytes(encode(decode(ours[i])), ours[i]) !== 0) {
      throw new Error(`Codec mismatch for ${JSON.stringify(values[i])}`)
    }
  }

  const results = { encode: [[], []], decode: [[], []] }
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate which codec goes first, so neither always runs on a warmer heap.
    const first = round % 2
    for (const which of [first, 1 - first]) {
      results.encode[which].push(time(which === 0 ? lkEncode : bwEncode, values))
      results.decode[which].push(time(which === 0 ? lkDecode : bwDecode, which === 0 ? ours : theirs))
    }
  }

  for (const op of ['encode', 'decode']) {
    const lk = median(results[op][0])
    const bw = median(results[op][1])
    console.log(
      name.padEnd(24) + op.padEnd(8) + fmt(lk) + fmt(bw) +
      `${(lk / bw).toFixed(1).padStart(7)}x` +
      (op === 'encode' ? (keyBytes / COUNT).toFixed(1).padStart(16) : '')
    )
  }
}

if (sink === 42) console.log('') // keep sink observable
