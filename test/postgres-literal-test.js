// lib/backends/postgres-literal.js writes a statement's values into its text
// as literals, so that BEGIN and COMMIT can go in the same query: the text
// must mean to PostgreSQL exactly what the statement with its values meant.
// Each case is sent both ways to the tests' server and the answers compared;
// what it cannot write safely it declines (null), and the statement is sent
// with its values.
import test from 'tape'
import pg from 'pg'
import { inlineValues, escapeLiteral } from '../lib/backends/postgres-literal.js'
import { prng } from 'levelkit-testkit/prng'
import { postgresForTests } from './util/postgres.js'

const server = await postgresForTests(test)

const bytes = (/** @type {number[]} */ ...b) => new Uint8Array(b)

/** Send `text` with `values`, and its inlined text alone: same rows. */
async function sameAnswer (/** @type {any} */ t, /** @type {string} */ text, /** @type {unknown[]} */ values, /** @type {string} */ name) {
  const inlined = inlineValues(text, values)
  t.is(typeof inlined, 'string', `${name}: inlined`)
  if (typeof inlined !== 'string') return
  t.notOk(/\$\d/.test(inlined.replace(/'[^']*'/g, '')), `${name}: no placeholder left outside literals`)
  const expected = await server.pool.query({ text, values, rowMode: 'array' })
  const actual = await server.pool.query({ text: inlined, rowMode: 'array' })
  t.same(actual.rows, expected.rows, `${name}: the same answer as with its values`)
}

test('postgres literals: values written into the text answer as the values do', async t => {
  await sameAnswer(t, 'SELECT $1::bytea, $2::bytea, $3::bytea', [bytes(), bytes(0, 1, 39, 92, 255), Buffer.from('\'\\"$1')], 'bytes (empty, quote, backslash, 0xff, a subarray of a Buffer)')
  const big = new Uint8Array(16)
  big.set([1, 2, 3, 4], 8)
  await sameAnswer(t, 'SELECT $1::bytea', [big.subarray(8, 12)], 'a view into a larger buffer: its own bytes only')
  await sameAnswer(t, 'SELECT $1::text, $2::text, $3::text, $4::text', ['', 'it\'s', 'back\\slash \\\' end', 'dollar $1 and "quotes" and ünïcødé 😀'], 'strings with quotes, backslashes, placeholders and astral characters')
  await sameAnswer(t, 'SELECT $1::int, $2::bigint, $3::int', [0, Number.MAX_SAFE_INTEGER, -7], 'safe integers')
  await sameAnswer(t, 'SELECT $1::text IS NULL', [null], 'null')
  await sameAnswer(t, 'SELECT $1::bytea[], $2::bytea[], $3::text[]', [[bytes(1), bytes(2, 3)], [], ['a', 'b\'c']], 'arrays with a cast, empty included')
  await sameAnswer(t, 'SELECT \'$1\', "c" FROM (SELECT $1::text AS "c") AS q', ['x'], 'a $n inside quotes is left as it is')
  await sameAnswer(t, 'SELECT $10::text || $2::text || $1::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, $9::text', ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'], 'placeholders out of order and of two digits')
})

test('postgres literals: an array of bytes is one constant, read alike whatever standard_conforming_strings is', async t => {
  const tricky = [bytes(), bytes(0, 1, 255), Buffer.from('a,b}{"\\\'$1 NULL'), bytes(92, 92, 120)]
  const inlined = inlineValues('SELECT $1::bytea[]', [tricky])
  // A decode() per element was an expression each for the planner: a group's batch holds hundreds (session 19).
  t.notOk(String(inlined).includes('decode('), 'no decode() per element')
  await sameAnswer(t, 'SELECT $1::bytea[], $2::bytea[]', [tricky, [bytes(7)]], 'empty bytes, 0x00 and 0xff, commas, braces, quotes, backslashes, the word NULL')
  const client = await server.pool.connect()
  try {
    await client.query('SET standard_conforming_strings = off')
    const { rows } = await client.query({ text: String(inlined), rowMode: 'array' })
    t.same(rows[0][0].map((/** @type {Buffer} */ b) => b.toString('hex')), tricky.map(b => Buffer.from(b).toString('hex')), 'the same bytes with standard_conforming_strings off')
  } finally {
    await client.query('RESET standard_conforming_strings').catch(() => {})
    client.release()
  }
})

// The literals are built without a string per character or per element
// (session 20: pg's escapeLiteral() was the most allocating function of a
// createChat over PostgreSQL): the text must stay what it was, the same
// statement for the server (its plans and what it stores).
test('postgres literals: the same text as pg\'s escapeLiteral() and as an element-by-element array constant', t => {
  const random = prng(20)
  const alphabet = ['a', 'é', '😀', '\'', '\\', '"', '{', ',', '$1', ' ', '\n', 'E']
  let strings = 0
  let arrays = 0
  for (let k = 0; k < 500; k++) {
    const text = Array.from({ length: random.int(40) }, () => alphabet[random.int(alphabet.length)]).join('')
    if (escapeLiteral(text) !== pg.escapeLiteral(text)) t.fail(`escapeLiteral(${JSON.stringify(text)}): ${escapeLiteral(text)}, pg's ${pg.escapeLiteral(text)}`)
    else strings++
    const big = Buffer.from(Array.from({ length: 200 }, () => random.int(256)))
    // Views into a larger buffer (at an offset), plain Uint8Arrays, empty ones.
    const items = Array.from({ length: 1 + random.int(12) }, () => {
      const from = random.int(100)
      const view = big.subarray(from, from + random.int(60))
      return random.int(2) === 0 ? view : new Uint8Array(view)
    })
    const expected = `E'{${items.map(item => `"\\\\\\\\x${Buffer.from(item).toString('hex')}"`).join(',')}}'`
    const inlined = inlineValues('SELECT $1::bytea[]', [items])
    if (inlined !== `SELECT ${expected}::bytea[]`) t.fail(`array of ${items.length}: ${inlined}, expected ${expected}`)
    else arrays++
  }
  t.is(strings, 500, 'every string escaped as pg escapes it')
  t.is(arrays, 500, 'every array of bytes written as one constant of its elements\' hex, in order')
  t.is(escapeLiteral('it\'s a \\ path'), ' E\'it\'\'s a \\\\ path\'', 'quotes and backslashes doubled, E before a backslash\'s literal')
  t.end()
})

test('postgres literals: what it cannot write as it means, it declines (null)', t => {
  t.is(inlineValues('SELECT $1', [1.5]), null, 'a number that is not a safe integer')
  t.is(inlineValues('SELECT $1', [2 ** 53]), null, 'an integer past 2^53')
  t.is(inlineValues('SELECT $1', [10n]), null, 'a bigint')
  t.is(inlineValues('SELECT $1', [{ a: 1 }]), null, 'an object')
  t.is(inlineValues('SELECT $1', [true]), null, 'a boolean')
  t.is(inlineValues('SELECT $1', [[bytes(1)]]), null, 'an array without a cast (no type to give it)')
  t.is(inlineValues('SELECT $1::text[]', [['a', null]]), null, 'an array holding null')
  t.is(inlineValues('SELECT $2', ['a']), null, 'a placeholder with no value')
  t.is(inlineValues('SELECT $', []), null, 'a $ with no number')
  t.is(inlineValues('SELECT \'unclosed $1', ['a']), null, 'an unclosed quote')
  t.is(inlineValues('SELECT 1', []), 'SELECT 1', 'a text without values is itself')
  t.end()
})
