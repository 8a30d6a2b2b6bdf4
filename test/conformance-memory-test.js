import test from 'tape'
import { open } from '../index.js'
import { conformance } from './conformance/index.js'

conformance(test, {
  backend: 'memory',
  open: () => open({ backend: 'memory' })
})
