import test from 'tape'
import { open } from '../index.js'
import { conformance } from './conformance/index.js'
import { postgresForTests } from './util/postgres.js'

const server = await postgresForTests(test)

conformance(test, {
  backend: 'postgres',
  open: () => open({ backend: 'postgres', pool: server.pool, table: server.table() })
})
