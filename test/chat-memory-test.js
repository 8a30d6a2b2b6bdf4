import test from 'tape'
import { open } from '../index.js'
import { chatSuite } from './chat/suite.js'

chatSuite(test, {
  backend: 'memory',
  open: () => open({ backend: 'memory' })
})
