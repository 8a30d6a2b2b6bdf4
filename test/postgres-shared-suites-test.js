// levelkit's conformance and chat suites on the postgres backend with the
// shared option: every write goes through the shared writer lock (its own
// connection, a generation per lock holding, a notification per batch), in one
// process; test/postgres-shared-test.js runs several.
import test from 'tape'
import { open } from '../index.js'
import { conformance } from './conformance/index.js'
import { chatSuite } from './chat/suite.js'
import { postgresForTests } from './util/postgres.js'

const server = await postgresForTests(test)
// 'keys' when test/postgres-keylocks-test.js imports this file with ?locking=keys,
// 'serializable' when test/postgres-serializable-test.js does with ?locking=serializable.
const asked = new URL(import.meta.url).searchParams.get('locking')
const locking = asked === 'keys' || asked === 'serializable' ? asked : 'table'
const openShared = () => open({ backend: 'postgres', pool: server.pool, table: server.table(), shared: true, locking })

// 500 watchers in the watcher tests, not 5,000: conformance-postgres-test.js
// proves 5,000 on postgres let go of everything; 500 here are as many
// listeners on the shared writer (25 times the pool) at a tenth of the CPU.
conformance(test, { backend: 'postgres', open: openShared, watchers: 500 })
chatSuite(test, { backend: 'postgres', open: openShared })
