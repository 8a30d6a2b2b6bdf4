import test from 'tape'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open } from '../index.js'
import { conformance } from './conformance/index.js'

const root = mkdtempSync(join(tmpdir(), 'levelkit-conformance-'))
let n = 0

conformance(test, {
  backend: 'leveldb',
  open: () => open({ backend: 'leveldb', location: join(root, String(n++)) })
})

test.onFinish(() => rmSync(root, { recursive: true, force: true }))
