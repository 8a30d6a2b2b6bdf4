// The tests of several processes on one table (test/postgres-shared-test.js)
// and the conformance and chat suites (test/postgres-shared-suites-test.js),
// with open({ backend: 'postgres', shared: true, locking: 'keys' }): the
// processes lock the keys their critical sections read
// (lib/backends/postgres-keylocks.js) instead of taking turns with the
// table's writer lock.
const keys = '?locking=keys'
await import('./postgres-shared-test.js' + keys)
await import('./postgres-shared-suites-test.js' + keys)
