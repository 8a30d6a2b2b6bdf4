// Hostile values for the door of the public API (test/hostile/suite.js):
// every kind of value a caller can pass that is not what a parameter takes,
// or that reads differently each time it is read. Environment-free, so the
// suites that use them can also run in a browser.
//
// Each value says in which kinds of parameter it may be accepted (`accepts`):
//   key      any tuple value (function ids, counter keys, bounds, index values)
//   ids      an array of sequence ids or sequence numbers
//   idsIterable  any iterable (or async iterable) of sequence ids: arrays, typed arrays
//   username a username (trimmed, 1-64 characters, a valid key)
//   cursor   a cursor (null: none)
//   keys     an array of tuple values (a prefix)
//   json     any JSON value (a child, a field of a record)
//   record   a plain object stored as a record (or a patch)
//   options  an options object (unknown options may be ignored)
//   fn       a function
//   nonneg   a non-negative integer (a limit, `after`) where -0 means 0
//   limit    a limit: a non-negative integer or Infinity
//   int      a safe integer (a counter's delta)
//   number   a finite number (an expiry, a timestamp)
//   string   any string (a password, a message text: lengths are the callee's business)
//   any      passed through to the backend, which may ignore it
// Everywhere else (ids of sequence collections, sequence numbers, names,
// booleans, cursors, ...) a hostile value must be refused.

const OPTION_NAMES = [
  'id', 'indexes', 'validate', 'key', 'unique', 'multi', 'covering', 'from', 'to', 'onDelete', 'lists',
  'parent', 'blockSize', 'repair', 'index', 'gt', 'gte', 'lt', 'lte', 'eq', 'prefix', 'limit', 'reverse',
  'cursor', 'after', 'signal', 'backend', 'location', 'db', 'syncReads', 'readCache', 'keyEncoding',
  'valueEncoding', 'username', 'password', 'name', 'email', 'sessionId', 'userId', 'expiry', 'adminId',
  'userIds', 'chatId', 'senderId', 'text', 'timestamp', 'recipients', 'n', 'viewerId', 'maxMembers',
  'maxMessageLength', 'maxUsernameLength', 'maxChatNameLength', 'passwordCost', 'scryptN', 'pbkdf2Iterations',
  'age', 'city', 'tags', 'then'
]

/** A handler whose every trap throws. */
const THROWING_TRAPS = Object.fromEntries([
  'get', 'set', 'has', 'deleteProperty', 'ownKeys', 'getOwnPropertyDescriptor', 'defineProperty',
  'getPrototypeOf', 'setPrototypeOf', 'isExtensible', 'preventExtensions', 'apply', 'construct'
].map(trap => [trap, () => { throw new Error(`the ${trap} trap throws`) }]))

let deepArray = /** @type {unknown} */ (null)
let deepObject = /** @type {unknown} */ (null)

/** 1e6 levels of nesting, built once (they are never changed). */
function deep (/** @type {'array' | 'object'} */ shape) {
  if (shape === 'array') {
    if (deepArray === null) {
      let value = /** @type {unknown} */ ([])
      for (let i = 0; i < 1e6; i++) value = [value]
      deepArray = value
    }
    return deepArray
  }
  if (deepObject === null) {
    let value = /** @type {unknown} */ ({})
    for (let i = 0; i < 1e6; i++) value = { a: value }
    deepObject = value
  }
  return deepObject
}

/** An array whose first element is a getter returning 0, 1, 2, ... on each read. */
function countingArray () {
  let n = 0
  const array = [0]
  Object.defineProperty(array, 0, { get: () => n++, enumerable: true })
  return array
}

/** @param {unknown} target */
function revoked (target) {
  const { proxy, revoke } = Proxy.revocable(/** @type {object} */ (target), {})
  revoke()
  return proxy
}

class Point {
  constructor () {
    this.x = 1
  }
}

class Tuple extends Array {}

/**
 * @typedef {{ name: string, make: () => unknown, accepts: string[] }} Hostile
 * @type {Hostile[]}
 */
export const HOSTILE = [
  { name: 'a BigInt', make: () => 10n, accepts: ['any'] },
  { name: 'a Symbol', make: () => Symbol('hostile'), accepts: ['any'] },
  { name: 'a function', make: () => function hostile () { return 1 }, accepts: ['fn', 'any'] },
  { name: 'an object with no prototype', make: () => Object.create(null), accepts: ['json', 'record', 'options', 'any'] },
  { name: 'an object with no prototype and a field', make: () => Object.assign(Object.create(null), { username: 'np' }), accepts: ['json', 'record', 'options', 'any'] },
  { name: 'a cyclic object', make: () => { const o = /** @type {any} */ ({ a: 1 }); o.self = o; return o }, accepts: ['options', 'any'] },
  { name: 'a cyclic array', make: () => { const a = /** @type {any[]} */ ([1]); a.push(a); return a }, accepts: ['options', 'any'] },
  { name: 'an array nested 1e6 deep', make: () => deep('array'), accepts: ['options', 'any'] },
  { name: 'an object nested 1e6 deep', make: () => deep('object'), accepts: ['options', 'any'] },
  { name: 'a Proxy whose traps throw', make: () => new Proxy({}, THROWING_TRAPS), accepts: ['any'] },
  { name: 'a Proxy of an array whose traps throw', make: () => new Proxy([1], THROWING_TRAPS), accepts: ['any'] },
  { name: 'a Proxy whose get trap throws', make: () => new Proxy({ a: 1 }, { get () { throw new Error('get trap') } }), accepts: ['any'] },
  {
    name: 'an object whose getters throw',
    make: () => Object.defineProperties({}, Object.fromEntries(OPTION_NAMES.map(name => [name, { get () { throw new Error(`getter ${name}`) }, enumerable: true }]))),
    accepts: ['any']
  },
  { name: 'an array whose element getter throws', make: () => Object.defineProperty([1], 0, { get () { throw new Error('element getter') }, enumerable: true }), accepts: ['options', 'any'] },
  {
    name: 'an object whose toString, valueOf and Symbol.toPrimitive throw',
    make: () => ({ toString () { throw new Error('toString') }, valueOf () { throw new Error('valueOf') }, [Symbol.toPrimitive] () { throw new Error('toPrimitive') } }),
    accepts: ['options', 'any']
  },
  { name: 'a huge string', make: () => 'x'.repeat(1 << 16), accepts: ['key', 'json', 'string', 'any'] },
  { name: 'a lone surrogate', make: () => '\ud800', accepts: ['json', 'string', 'any'] },
  { name: 'a string with NUL', make: () => 'a\u0000b', accepts: ['key', 'json', 'string', 'username', 'any'] },
  { name: 'NaN', make: () => NaN, accepts: ['any'] },
  { name: '-0', make: () => -0, accepts: ['key', 'nonneg', 'limit', 'int', 'number', 'any'] },
  { name: 'Infinity', make: () => Infinity, accepts: ['key', 'limit', 'any'] },
  { name: '-Infinity', make: () => -Infinity, accepts: ['key', 'any'] },
  { name: 'null', make: () => null, accepts: ['key', 'json', 'cursor', 'any'] },
  { name: 'a Date', make: () => new Date(0), accepts: ['options', 'any'] },
  { name: 'a Map', make: () => new Map([[1, 2]]), accepts: ['options', 'any'] },
  { name: 'a RegExp', make: () => /x/g, accepts: ['options', 'any'] },
  { name: 'a Float64Array', make: () => new Float64Array([1, 2]), accepts: ['options', 'any', 'idsIterable'] },
  { name: 'a Uint16Array', make: () => new Uint16Array([1]), accepts: ['options', 'any', 'idsIterable'] },
  { name: 'an ArrayBuffer', make: () => new ArrayBuffer(2), accepts: ['options', 'any'] },
  { name: 'a revoked Proxy', make: () => revoked({}), accepts: ['any'] },
  { name: 'a revoked Proxy of an array', make: () => revoked([1]), accepts: ['any'] },
  { name: 'a boxed number', make: () => Object(1), accepts: ['options', 'any'] },
  { name: 'a class instance', make: () => new Point(), accepts: ['options', 'any'] },
  { name: 'an Array subclass', make: () => Tuple.from([1, 2]), accepts: ['key', 'keys', 'ids', 'idsIterable', 'options', 'any'] },
  { name: 'an array whose element changes on every read', make: countingArray, accepts: ['key', 'keys', 'json', 'options', 'any'] },
  {
    name: 'a Proxy of an array whose element changes on every read',
    make: () => { let n = 0; return new Proxy([0], { get: (target, key) => key === '0' ? n++ : Reflect.get(target, key) }) },
    accepts: ['key', 'keys', 'json', 'options', 'any']
  },
  { name: 'an object with toJSON', make: () => ({ a: 1, toJSON () { return { b: 2 } } }), accepts: ['options', 'any'] },
  { name: 'an array with toJSON', make: () => Object.assign([1], { toJSON () { return 'x' } }), accepts: ['key', 'keys', 'ids', 'idsIterable', 'options', 'any'] },
  { name: 'a thenable that never settles', make: () => ({ then () {} }), accepts: ['options', 'any'] },
  { name: 'an object with a symbol key', make: () => ({ a: 1, [Symbol('s')]: 2 }), accepts: ['options', 'any'] },
  { name: 'an object with a non-enumerable property', make: () => Object.defineProperty({ a: 1 }, 'b', { value: 2 }), accepts: ['options', 'any'] },
  { name: 'an array with an extra property', make: () => Object.assign([1], { extra: true }), accepts: ['key', 'keys', 'ids', 'idsIterable', 'options', 'any'] },
  { name: 'a sparse array', make: () => [, 1], accepts: ['options', 'any'] }, // eslint-disable-line no-sparse-arrays
  { name: 'an array holding -0', make: () => [-0], accepts: ['key', 'keys', 'options', 'any'] },
  { name: 'an Error', make: () => new Error('hostile'), accepts: ['options', 'any'] },
  { name: 'a Promise', make: () => Promise.resolve(1), accepts: ['options', 'any'] }
]
