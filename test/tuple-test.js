import test from 'tape'
import fc from 'fast-check'
import os from 'node:os'
import path from 'node:path'
import fs from 'node:fs/promises'
import { createRequire } from 'node:module'
import { MemoryLevel } from 'memory-level'
import { ClassicLevel } from 'classic-level'
import { encode, decode, encodeItems, tupleEncoding, ARRAY_START, ARRAY_END, HIGH } from '../lib/tuple.js'
import { concatBytes, compareBytes, bytesToBinaryString } from '../lib/bytes.js'
import { reference } from 'levelkit-testkit/reference-order'

const require = createRequire(import.meta.url)
const bytewise = require('bytewise')

const RUNS = 2000

// ---------------------------------------------------------------------------
// Arbitraries

const specialNumber = fc.constantFrom(
  0, -0, 1, -1, 0.5, -0.5, 0.1, -0.1, 255, 256, 1e300, -1e-300,
  Infinity, -Infinity,
  Number.MIN_VALUE, -Number.MIN_VALUE, // smallest subnormals
  2.2250738585072014e-308, -2.2250738585072014e-308, // smallest normals
  Number.MAX_VALUE, -Number.MAX_VALUE,
  Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER,
  2 ** 53, -(2 ** 53), 2 ** 53 + 2, -(2 ** 53 + 2)
)
const number = fc.oneof(
  fc.double({ noNaN: true }), // includes -0, ±Infinity and subnormals
  fc.double({ noNaN: true, min: -1, max: 1 }),
  fc.integer(),
  fc.maxSafeInteger(),
  specialNumber
)

// Characters at the edges of escaping and of the UTF-8 length classes.
const specialChar = fc.constantFrom(
  '\x00', '\x01', '\x02', 'a', '\x7f', '\x80', 'é', '\u07ff', '\u0800',
  '\ud7ff', '\ue000', '\ufeff', '\ufffd', '\uffff', '😀', '\u{10000}', '\u{10ffff}'
)
const string = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }), // any code point, astral included, no lone surrogates
  fc.string({ unit: specialChar }),
  fc.string({ unit: specialChar, minLength: 190, maxLength: 260 }) // long-string (TextEncoder) path
)

const bytes = fc.oneof(
  fc.uint8Array({ maxLength: 12 }),
  fc.array(fc.constantFrom(0, 1, 2, 0x7f, 0x80, 0xfd, 0xfe, 0xff), { maxLength: 8 })
    .map((a) => Uint8Array.from(a))
)

const scalar = fc.oneof(fc.constant(null), fc.boolean(), number, string, bytes)

const { value } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, scalar, scalar, tie('array')),
  array: fc.array(tie('value'), { maxLength: 5 })
}))
const tuple = fc.array(value, { maxLength: 5 })

// Pairs that are likely to be close: same type, shared prefixes.
const pair = fc.oneof(
  fc.tuple(value, value),
  fc.tuple(number, number),
  fc.tuple(string, string),
  fc.tuple(bytes, bytes),
  fc.tuple(string, string, string).map(([p, a, b]) => [p + a, p + b]),
  fc.tuple(bytes, bytes, bytes).map(([p, a, b]) => [concatBytes(p, a), concatBytes(p, b)]),
  fc.tuple(tuple, tuple, tuple).map(([p, a, b]) => [p.concat(a), p.concat(b)]),
  value.map((v) => [v, v])
).chain(([a, b]) => fc.constantFrom([a, b], [[a], [b]], [[a, 1], [b]]))

// ---------------------------------------------------------------------------
// Helpers

/** bytewise wants Buffers for binary values (Buffer.isBuffer). */
const toBuffers = (v) => v instanceof Uint8Array ? Buffer.from(v) : Array.isArray(v) ? v.map(toBuffers) : v
const bytewiseEncode = (v) => new Uint8Array(bytewise.encode(toBuffers(v)))
const hex = (b) => Buffer.from(b).toString('hex')
const sign = (n) => n < 0 ? -1 : n > 0 ? 1 : 0

/**
 * Does a decoded value equal the original? Byte arrays by content and as
 * plain Uint8Array; -0 is expected back as +0 (see lib/tuple.js).
 */
function same (actual, expected) {
  if (typeof expected === 'number') return Object.is(actual, expected === 0 ? 0 : expected)
  if (expected instanceof Uint8Array) {
    return actual instanceof Uint8Array && actual.constructor === Uint8Array &&
      compareBytes(actual, expected) === 0
  }
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length &&
      expected.every((e, i) => same(actual[i], e))
  }
  return actual === expected
}

/** Run a fast-check property as one tape assertion. */
function property (t, name, arb, predicate, numRuns = RUNS) {
  try {
    fc.assert(fc.property(arb, predicate), { numRuns })
    t.pass(name)
  } catch (err) {
    t.fail(`${name}\n${err.message}`)
  }
}

function isPrefix (a, b) {
  return a.length < b.length && compareBytes(a, b.subarray(0, a.length)) === 0
}

function rejects (t, fn, pattern, name) {
  try {
    fn()
    t.fail(`${name}: did not throw`)
  } catch (err) {
    t.is(err.code, 'LEVELKIT_INVALID', `${name}: LEVELKIT_INVALID`)
    if (pattern) t.match(err.message, pattern, `${name}: message ${err.message}`)
  }
}

const nest = (depth) => {
  let v = []
  for (let i = 1; i < depth; i++) v = [v]
  return v
}

// ---------------------------------------------------------------------------
// 1. Byte-identical to bytewise

test('encode is byte-identical to bytewise.encode', (t) => {
  const cases = [
    null, true, false, 0, -0, 1, -1, 0.5, -0.5, Infinity, -Infinity,
    Number.MIN_VALUE, -Number.MIN_VALUE, Number.MAX_VALUE, -Number.MAX_VALUE, 2 ** 53, -(2 ** 53),
    '', 'a', '\x00', '\x01', 'a\x00\x01b', '\uffff', '😀', '\ufeffbom', 'é'.repeat(300) + '\x00\x01',
    new Uint8Array(0), new Uint8Array([0, 1, 2, 0xfd, 0xfe, 0xff]),
    [], [[]], [null, true, false], ['', '\x00', '\x01\x00', 'é\x00😀'.repeat(80)],
    [new Uint8Array([0, 1, 2, 0xfd, 0xfe, 0xff]), new Uint8Array(0)], [-0, 0, -1.5, Infinity, -Infinity],
    ['user', 42, 3.14], [['nested', [1, ['deep']]], 'x'], nest(100)
  ]
  for (const v of cases) {
    t.is(hex(encode(v)), hex(bytewiseEncode(v)), `bytewise format: ${hex(bytewiseEncode(v)).slice(0, 60)}`)
  }
  property(t, 'arbitrary values', value, (v) => compareBytes(encode(v), bytewiseEncode(v)) === 0)
  property(t, 'arbitrary tuples', tuple, (v) => compareBytes(encode(v), bytewiseEncode(v)) === 0)
  property(t, 'Buffer input encodes like Uint8Array input', value, (v) => compareBytes(encode(toBuffers(v)), encode(v)) === 0, 500)
  t.ok(encode('x') instanceof Uint8Array && !Buffer.isBuffer(encode('x')), 'returns a plain Uint8Array')
  t.end()
})

// ---------------------------------------------------------------------------
// 2. Round trip

test('decode(encode(v)) equals v', (t) => {
  property(t, 'arbitrary values', value, (v) => same(decode(encode(v)), v))
  property(t, 'arbitrary tuples', tuple, (v) => same(decode(encode(v)), v))
  property(t, 'decodes bytewise output (Buffer input)', value, (v) => same(decode(bytewise.encode(toBuffers(v))), v), 500)

  t.ok(Object.is(decode(encode(-0)), 0), '-0 decodes as +0')
  t.is(hex(encode(-0)), hex(encode(0)), '-0 and 0 are the same key')
  t.ok(Object.is(decode(encode([-0]))[0], 0), '-0 in an array decodes as +0')
  t.is(decode(encode('\ufeffx')), '\ufeffx', 'leading BOM kept at top level')
  t.is(decode(encode(['\ufeffx']))[0], '\ufeffx', 'leading BOM kept in an array')

  const input = encode([new Uint8Array([1, 2])])
  const output = decode(input)[0]
  output[0] = 99
  t.is(input[3], 2, 'decoded bytes do not alias the key')
  const top = new Uint8Array([0x60, 7])
  decode(top)[0] = 1
  t.is(top[1], 7, 'decoded top-level bytes do not alias the key')
  t.end()
})

// ---------------------------------------------------------------------------
// 3. Order

test('byte order follows bytewise and the reference order', (t) => {
  property(t, 'sign(compareBytes) equals sign of comparing bytewise buffers', pair, ([a, b]) =>
    compareBytes(encode(a), encode(b)) === sign(Buffer.compare(bytewise.encode(toBuffers(a)), bytewise.encode(toBuffers(b)))))
  property(t, 'sign(compareBytes) equals the reference comparator', pair, ([a, b]) =>
    compareBytes(encode(a), encode(b)) === reference(a, b))
  property(t, 'sorting by key bytes equals sorting by the reference comparator',
    fc.array(fc.oneof(value, tuple), { maxLength: 30 }), (list) => {
      const keys = list.map(encode)
      const idx = list.map((_, i) => i)
      const byBytes = [...idx].sort((i, j) => compareBytes(keys[i], keys[j]))
      const byReference = [...idx].sort((i, j) => reference(list[i], list[j]))
      return byBytes.every((v, i) => v === byReference[i])
    }, 500)

  // The documented type order, strictly increasing.
  const ordered = [
    null, false, true,
    -Infinity, -Number.MAX_VALUE, -1, -Number.MIN_VALUE, 0, Number.MIN_VALUE, 1, 2 ** 53, Number.MAX_VALUE, Infinity,
    new Uint8Array(0), new Uint8Array([0]), new Uint8Array([0, 0]), new Uint8Array([1]), new Uint8Array([0xff]),
    '', '\x00', '\x01', 'a', 'a\x00', 'b', '\uffff', '😀',
    [], [null], [null, null], [false], [-1], [0], [new Uint8Array(0)], [new Uint8Array([0xff])],
    [''], ['\x00'], ['a'], ['a', null], ['a\x00'], ['\uffff'], ['😀'], [[]], [[], null], [['a']]
  ]
  for (let i = 1; i < ordered.length; i++) {
    t.is(compareBytes(encode(ordered[i - 1]), encode(ordered[i])), -1,
      `${hex(encode(ordered[i - 1]))} < ${hex(encode(ordered[i]))}`)
  }

  // Code point order, not JavaScript's UTF-16 code unit order.
  t.ok('😀' < '\uffff', 'JS < puts U+1F600 before U+FFFF (surrogate 0xD83D < 0xFFFF)')
  t.is(compareBytes(encode('\uffff'), encode('😀')), -1, 'the codec puts U+FFFF first (UTF-8 EF BF BF < F0 9F 98 80)')
  t.is(bytewise.compare('😀', '\uffff'), -1, 'bytewise.compare uses JS < and disagrees with its own bytes, so we compare its buffers')
  t.end()
})

// ---------------------------------------------------------------------------
// 4. Real backends

// Hand-picked keys where naive orders go wrong, plus generated ones.
const ACCOUNTS = [
  ['acct', -Infinity], ['acct', -1.5], ['acct', -1], ['acct', -0.5], ['acct', -Number.MIN_VALUE], ['acct', 0],
  ['acct', 0.25], ['acct', 1], ['acct', 3, 'a'], ['acct', 3, 'b'], ['acct', 9.999], ['acct', 10], ['acct', 1e21]
]
const fixedKeys = [
  ['😀'], ['\uffff'], '😀', '\uffff', ['a😀'], ['a\uffff'], ['\ue000'],
  ['user'], ['user', -Infinity], ['user', -1e6], ['user', -1.5], ['user', -1], ['user', -0.5], ['user', -Number.MIN_VALUE],
  ['user', 0], ['user', 0.25], ['user', 1], ['user', 1.5], ['user', 10], ['user', 2 ** 53], ['user', Infinity],
  ['user', 3, 'a'], ['user', 3, 'b'], ['user', 'x'], ['user', [1, 2]], ['user', [1, 2], 'z'], ['user', null], ['user', true],
  ...ACCOUNTS, ['user\x00'], ['usera'], ['use'], ['user', new Uint8Array([0xff])], ['user', new Uint8Array([0, 1])],
  [[1, [2, [3]]]], [[1, [2, [3]]], -1], [], [null], true, -1.5, 1.5, new Uint8Array([0xff, 0])
]

function uniqueKeys (list) {
  const seen = new Map()
  for (const k of list) {
    // abstract-level refuses a null key before encoding it, so a bare null
    // cannot be a database key (null inside a tuple is fine).
    if (k === null) continue
    const id = bytesToBinaryString(encode(k))
    if (!seen.has(id)) seen.set(id, k)
  }
  return [...seen.values()]
}

async function checkBackend (t, db) {
  const sub = db.sublevel('tuples', { keyEncoding: tupleEncoding, valueEncoding: 'json' })
  const generated = fc.sample(fc.oneof(tuple, value, fc.tuple(fc.constantFrom('user', 'x'), number)), 300)
  const keys = uniqueKeys([...fixedKeys, ...generated])
  await sub.batch(keys.map((key, i) => ({ type: 'put', key, value: i })))

  const entries = await sub.iterator().all()
  const byBytes = keys.map((_, i) => i).sort((i, j) => compareBytes(encode(keys[i]), encode(keys[j])))
  const byReference = keys.map((_, i) => i).sort((i, j) => reference(keys[i], keys[j]))
  t.same(entries.map(([, i]) => i), byBytes, `${keys.length} keys iterate in codec byte order`)
  t.same(byBytes, byReference, 'which is the reference order')
  t.ok(entries.every(([key, i]) => same(key, keys[i])), 'keys decode to the originals')
  // JS would sort '😀' < '\uffff'; the store has them the other way round.
  const position = (k) => entries.findIndex(([key]) => same(key, k))
  t.ok(position('\uffff') >= 0 && position('\uffff') < position('😀'), 'U+FFFF is stored before 😀')
  t.ok(position(['\uffff']) >= 0 && position(['\uffff']) < position(['😀']), "['\uffff'] is stored before ['😀']")

  const reverse = await sub.iterator({ reverse: true }).all()
  t.same(reverse.map(([, i]) => i), [...byBytes].reverse(), 'reverse iteration')

  // Range queries with tuple bounds.
  const ranges = [
    [['user', -1], ['user', 10]],
    [['user', -Infinity], ['user', Infinity]],
    [['\uffff'], ['😀', null]],
    ...fc.sample(fc.tuple(fc.constantFrom(...keys), fc.constantFrom(...keys)), 10)
  ]
  for (const [gte, lt] of ranges) {
    const got = await sub.iterator({ gte, lt }).all()
    const want = byReference.filter((i) => reference(keys[i], gte) >= 0 && reference(keys[i], lt) < 0)
    t.same(got.map(([, i]) => i), want, `range gte ${hex(encode(gte)).slice(0, 24)} lt ${hex(encode(lt)).slice(0, 24)}: ${want.length} keys`)
  }
  const accounts = await sub.iterator({ gte: ['acct', -1], lt: ['acct', 10] }).all()
  t.same(accounts.map(([k]) => k), ACCOUNTS.slice(2, -2), 'explicit range: -1 <= n < 10, negative and fractional included')

  // Prefix range with raw bounds: every tuple starting with 'user'.
  const start = concatBytes([ARRAY_START], encodeItems(['user']))
  const raw = await sub.iterator({ gte: start, lt: concatBytes(start, [HIGH]), keyEncoding: 'view' }).all()
  const wantPrefix = byReference.filter((i) => Array.isArray(keys[i]) && keys[i].length > 0 && reference(keys[i][0], 'user') === 0)
  t.same(raw.map(([, i]) => i), wantPrefix, `prefix ['user'] via ARRAY_START + encodeItems + HIGH: ${wantPrefix.length} keys`)
  t.ok(raw.every(([key, i]) => same(decode(key), keys[i])), 'raw keys decode')
}

test('order on memory-level', async (t) => {
  const db = new MemoryLevel()
  await db.open()
  try {
    await checkBackend(t, db)
  } finally {
    await db.close()
  }
})

test('order on classic-level', async (t) => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'levelkit-tuple-'))
  const db = new ClassicLevel(dir)
  await db.open()
  try {
    await checkBackend(t, db)
  } finally {
    await db.close()
    await fs.rm(dir, { recursive: true, force: true })
  }
})

test('tupleEncoding shape', (t) => {
  t.is(tupleEncoding.name, 'tuple')
  t.is(tupleEncoding.format, 'view')
  t.is(tupleEncoding.encode, encode)
  t.is(tupleEncoding.decode, decode)
  t.end()
})

// ---------------------------------------------------------------------------
// 5. Rejection

test('encode rejects unsupported values', (t) => {
  const long = 'é'.repeat(300)
  const cyclic = ['a']
  cyclic.push(cyclic)
  // eslint-disable-next-line no-sparse-arrays
  const sparse = [1, , 2]
  const cases = [
    ['undefined', undefined, /undefined/],
    ['NaN', NaN, /NaN/],
    ['object', {}, /object/],
    ['null-prototype object', Object.create(null), /object/],
    ['Date', new Date(0), /Date/],
    ['function', () => {}, /function/],
    ['symbol', Symbol('s'), /symbol/],
    ['bigint', 1n, /bigint/],
    ['boxed number', Object(1), /Number/],
    ['boxed string', Object('a'), /String/],
    ['Error', new Error('x'), /Error/],
    ['Map', new Map(), /Map/],
    ['Uint16Array', new Uint16Array(2), /Uint16Array/],
    ['Uint8ClampedArray', new Uint8ClampedArray(2), /Uint8ClampedArray/],
    ['ArrayBuffer', new ArrayBuffer(2), /ArrayBuffer/],
    ['DataView', new DataView(new ArrayBuffer(2)), /DataView/],
    ['lone high surrogate', '\ud800', /lone surrogate/],
    ['lone low surrogate', 'a\udc00b', /lone surrogate/],
    ['two high surrogates', '\ud83d\ud83d', /lone surrogate/],
    ['reversed pair', '\ude00\ud83d', /lone surrogate/],
    ['lone surrogate after non-ASCII', ['x', 'é\ud800'], /index \[1\].*lone surrogate/],
    ['lone surrogate in a long string', long + '\ud800', /lone surrogate/],
    ['lone surrogate in a long nested string', [long + '\udfff' + long], /index \[0\].*lone surrogate/],
    ['undefined element', ['a', undefined], /index \[1\]: unsupported value: undefined/],
    ['sparse array hole', sparse, /index \[1\]: sparse array hole/],
    ['nested NaN', [[1, [NaN]]], /index \[0\]\[1\]\[0\]: unsupported value: NaN/],
    ['nested object', ['a', { b: 1 }], /index \[1\]: unsupported value: an object/],
    ['cyclic array', cyclic, /nested more than 100 deep/],
    ['too deep', nest(101), /nested more than 100 deep/]
  ]
  for (const [name, v, pattern] of cases) rejects(t, () => encode(v), pattern, name)

  rejects(t, () => encodeItems('a'), /expects an array, got "a"/, 'encodeItems(non-array)')
  rejects(t, () => encodeItems([1, undefined]), /index \[1\]/, 'encodeItems([1, undefined])')
  t.ok(same(decode(encode(nest(100))), nest(100)), '100 levels of nesting are fine')

  // A failed encode leaves no trace in the next one.
  rejects(t, () => encode(['x'.repeat(5000), 'y', NaN]), /NaN/, 'fails late in a long key')
  t.is(hex(encode(['ok', 1])), hex(bytewiseEncode(['ok', 1])), 'next encode is unaffected')

  const anything = fc.anything({
    withBoxedValues: true,
    withMap: true,
    withSet: true,
    withDate: true,
    withTypedArray: true,
    withSparseArray: true,
    withBigInt: true,
    withNullPrototype: true,
    withUnicodeString: true
  })
  property(t, 'anything either round-trips or throws LEVELKIT_INVALID', anything, (v) => {
    let key
    try {
      key = encode(v)
    } catch (err) {
      return err.code === 'LEVELKIT_INVALID'
    }
    return same(decode(key), v)
  }, 1000)
  t.end()
})

test('decode rejects malformed keys', (t) => {
  const num = (n) => [...encode(n)]
  const cases = [
    ['empty', [], /empty/],
    ['unknown tag', [0x00], /type tag 0x00/],
    ['0xff', [0xff], /type tag 0xff/],
    ['undefined tag', [0xf0], /type tag 0xf0/],
    ['date tag', [0x52, 0, 0, 0, 0, 0, 0, 0, 0], /type tag 0x52/],
    ['trailing byte', [0x10, 0x00], /after the value/],
    ['truncated number', num(1).slice(0, 8), /truncated number/],
    ['long number', [...num(1), 0], /after the value/],
    ['NaN body', [0x42, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0], /invalid number/],
    ['Infinity body', [0x42, 0x7f, 0xf0, 0, 0, 0, 0, 0, 0], /invalid number/],
    ['-0 body', [0x42, 0x80, 0, 0, 0, 0, 0, 0, 0], /invalid number/],
    ['negative body under positive tag', [0x42, ...num(-1).slice(1)], /invalid number/],
    ['zero under negative tag', [0x41, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], /invalid number/],
    ['positive body under negative tag', [0x41, ...num(1).slice(1)], /invalid number/],
    ['unterminated array', [0xa0], /unterminated array/],
    ['unterminated nested array', [0xa0, 0xa0, 0x00], /unterminated array/],
    ['array then garbage', [0xa0, 0x00, 0x00], /after the value/],
    ['unterminated nested string', [0xa0, 0x70, 0x61], /unterminated string/],
    ['unterminated nested bytes', [0xa0, 0x60, 0x61], /unterminated byte array/],
    ['bad string escape', [0xa0, 0x70, 0x01, 0x05, 0x00, 0x00], /invalid escape/],
    ['dangling string escape', [0xa0, 0x70, 0x01, 0x00, 0x00], /invalid escape/],
    ['bad bytes escape', [0xa0, 0x60, 0xfe, 0x05, 0x00, 0x00], /invalid escape/],
    ['raw 0xff in nested bytes', [0xa0, 0x60, 0xff, 0x00, 0x00], /invalid escape/],
    ['overlong UTF-8', [0x70, 0xc0, 0x80], /invalid UTF-8/],
    ['encoded surrogate', [0x70, 0xed, 0xa0, 0x80], /invalid UTF-8/],
    ['truncated UTF-8', [0xa0, 0x70, 0xe2, 0x82, 0x00, 0x00], /invalid UTF-8/],
    ['0xff in string', [0x70, 0xff], /invalid UTF-8/],
    ['too deep', new Array(101).fill(0xa0).concat(new Array(101).fill(0)), /nested more than 100 deep/],
    ['very deep', new Array(100000).fill(0xa0), /nested more than 100 deep/]
  ]
  for (const [name, b, pattern] of cases) rejects(t, () => decode(Uint8Array.from(b)), pattern, name)
  for (const v of ['a0', [0xa0, 0], null, undefined, new ArrayBuffer(2), new Uint16Array(2)]) {
    rejects(t, () => decode(v), /expects a Uint8Array/, `decode(${Object.prototype.toString.call(v)})`)
  }

  // Strictness: whatever decode accepts re-encodes to the same bytes.
  const mutated = fc.tuple(value, fc.nat(), fc.nat(255), fc.constantFrom('delete', 'insert', 'replace', 'truncate'))
    .map(([v, at, byte, how]) => {
      const b = [...encode(v)]
      const i = at % (b.length + 1)
      if (how === 'delete') b.splice(i, 1)
      else if (how === 'insert') b.splice(i, 0, byte)
      else if (how === 'replace') b[Math.min(i, b.length - 1)] = byte
      else b.length = i
      return Uint8Array.from(b)
    })
  property(t, 'decode accepts only canonical keys', fc.oneof(mutated, fc.uint8Array({ maxLength: 12 })), (b) => {
    let v
    try {
      v = decode(b)
    } catch (err) {
      return err.code === 'LEVELKIT_INVALID'
    }
    return compareBytes(encode(v), b) === 0
  })
  t.end()
})

// ---------------------------------------------------------------------------
// 6. encodeItems and HIGH

test('encodeItems, ARRAY_START, ARRAY_END and HIGH', (t) => {
  t.is(ARRAY_START, 0xa0)
  t.is(ARRAY_END, 0x00)
  t.is(HIGH, 0xff)
  t.is(hex(bytewiseEncode([])), 'a000', 'bytewise opens arrays with 0xa0 and closes them with 0x00')

  property(t, 'encode(vs) = ARRAY_START + encodeItems(vs) + ARRAY_END', tuple, (vs) =>
    compareBytes(encode(vs), concatBytes([ARRAY_START], encodeItems(vs), [ARRAY_END])) === 0)

  // Every element encoding starts with one of these tags; none is 0x00 or 0xff.
  const tags = new Set([0x10, 0x20, 0x21, 0x40, 0x41, 0x42, 0x43, 0x60, 0x70, 0xa0])
  property(t, 'element encodings start with a type tag, never 0xff or 0x00', value, (v) => {
    const items = encodeItems([v])
    return tags.has(items[0]) && items[0] !== HIGH && items[0] !== ARRAY_END
  })

  property(t, 'element encodings are self-delimiting (no proper prefixes)', pair, ([a, b]) => {
    const x = encodeItems([a])
    const y = encodeItems([b])
    return reference(a, b) === 0 ? compareBytes(x, y) === 0 : !isPrefix(x, y) && !isPrefix(y, x)
  })

  // The model layer's bounds: with P = ARRAY_START + items([...head, b]),
  // P <= key < P + HIGH exactly for keys [...head, v, ...rest] with v == b,
  // keys with v < b sort below P and keys with v > b at or above P + HIGH.
  const boundCase = fc.tuple(fc.array(value, { maxLength: 2 }), pair, value, fc.array(tuple, { minLength: 3, maxLength: 3 }))
  property(t, 'prefix bounds with HIGH', boundCase, ([head, [b, c], d, rests]) => {
    const lower = concatBytes([ARRAY_START], encodeItems([...head, b]))
    const upper = concatBytes(lower, [HIGH])
    const candidates = [[...head, b, ...rests[0]], [...head, c, ...rests[1]], [...head, d, ...rests[2]], [...head, b], head]
    return candidates.every((key) => {
      const k = encode(key)
      const c = key.length > head.length ? reference(key[head.length], b) : -1
      if (c < 0) return compareBytes(k, lower) < 0
      if (c > 0) return compareBytes(k, upper) >= 0
      return compareBytes(k, lower) >= 0 && compareBytes(k, upper) < 0
    })
  })
  t.end()
})

// ---------------------------------------------------------------------------
// Byte helpers

test('compareBytes, concatBytes, bytesToBinaryString', (t) => {
  const bytePair = fc.oneof(
    fc.tuple(fc.uint8Array({ maxLength: 8 }), fc.uint8Array({ maxLength: 8 })),
    fc.tuple(fc.uint8Array({ maxLength: 8 }), fc.uint8Array({ maxLength: 4 }), fc.uint8Array({ maxLength: 4 }))
      .map(([p, a, b]) => [concatBytes(p, a), concatBytes(p, b)])
  )
  property(t, 'compareBytes equals Buffer.compare', bytePair, ([a, b]) =>
    compareBytes(a, b) === Buffer.compare(Buffer.from(a), Buffer.from(b)))
  property(t, 'bytesToBinaryString is one char per byte and injective', bytePair, ([a, b]) => {
    const x = bytesToBinaryString(a)
    const y = bytesToBinaryString(b)
    return x.length === a.length && (x === y) === (compareBytes(a, b) === 0) &&
      Array.from(x).every((ch, i) => ch.charCodeAt(0) === a[i])
  }, 1000)
  const big = Uint8Array.from({ length: 20000 }, (_, i) => (i * 7) & 0xff)
  const s = bytesToBinaryString(big)
  t.ok(s.length === big.length && big.every((b, i) => s.charCodeAt(i) === b), 'long input (chunked path)')

  const joined = concatBytes(new Uint8Array([1, 2]), [3], [], new Uint8Array(0), [0xff])
  t.ok(joined instanceof Uint8Array, 'concatBytes returns a Uint8Array')
  t.same([...joined], [1, 2, 3, 0xff], 'concatBytes joins Uint8Arrays and number arrays')
  t.is(concatBytes().length, 0, 'concatBytes() is empty')
  t.end()
})
