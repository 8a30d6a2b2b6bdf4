import test from 'tape'
import { open } from '../index.js'
import { chatSuite } from './chat/suite.js'
import { postgresForTests } from './util/postgres.js'

const server = await postgresForTests(test)

chatSuite(test, {
  backend: 'postgres',
  open: () => open({ backend: 'postgres', pool: server.pool, table: server.table() })
})
