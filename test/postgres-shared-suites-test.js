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

conformance(test, { backend: 'postgres', open: openShared })
chatSuite(test, { backend: 'postgres', open: openShared })
