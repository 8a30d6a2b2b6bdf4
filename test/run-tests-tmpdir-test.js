// scripts/test-tmpdir.js: npm test's temporary directory on a RAM file
// system, reachable by the postgres user (mode 1777), or none where there is
// no tmpfs with room (the suites then use the default).

import test from 'tape'
import { existsSync, statSync, statfsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ramTmpdir } from '../scripts/test-tmpdir.js'

const TMPFS_MAGIC = 0x01021994
const shmIsTmpfs = (() => {
  try {
    return statfsSync('/dev/shm').type === TMPFS_MAGIC
  } catch {
    return false
  }
})()

test('run-tests tmpdir: a fresh directory on /dev/shm, mode 1777, removed with what is in it', { skip: !shmIsTmpfs && 'no tmpfs at /dev/shm' }, t => {
  const first = ramTmpdir()
  const second = ramTmpdir()
  t.ok(first && second, 'made')
  if (!first || !second) return t.end()
  try {
    t.ok(first.dir.startsWith('/dev/shm/levelkit-tests-'), first.dir)
    t.not(first.dir, second.dir, 'each run its own')
    t.is(statfsSync(first.dir).type, TMPFS_MAGIC, 'on the tmpfs')
    t.is(statSync(first.dir).mode & 0o7777, 0o1777, 'mode 1777, like /tmp')
    writeFileSync(join(first.dir, 'left-behind'), 'x')
    first.remove()
    t.notOk(existsSync(first.dir), 'removed, with what a suite left in it')
  } finally {
    first.remove()
    second.remove()
  }
  t.end()
})

test('run-tests tmpdir: none on a file system that is not a tmpfs, or a missing path', t => {
  const checkout = fileURLToPath(new URL('.', import.meta.url))
  if (statfsSync(checkout).type === TMPFS_MAGIC) t.comment('the checkout is on a tmpfs: not a disk to try')
  else t.is(ramTmpdir(checkout), null, 'the checkout\'s file system (a disk)')
  t.is(ramTmpdir('/no/such/levelkit/dir'), null, 'a path that does not exist')
  t.end()
})
