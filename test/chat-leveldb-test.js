import test from 'tape'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open } from '../index.js'
import { chatSuite } from './chat/suite.js'

const root = mkdtempSync(join(tmpdir(), 'levelkit-chat-'))
let n = 0

chatSuite(test, {
  backend: 'leveldb',
  open: () => open({ backend: 'leveldb', location: join(root, String(n++)) })
})

const cleanup = () => rmSync(root, { recursive: true, force: true })
test.onFinish(cleanup)
// Also when a failing test ends the process before tape finishes.
process.on('exit', cleanup)
