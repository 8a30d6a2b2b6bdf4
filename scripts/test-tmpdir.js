// The temporary directory of a test run: on a RAM file system when the
// machine has one with room, so that the suites' LevelDB databases, child
// processes' files and Chromium profiles (all under os.tmpdir()) do not wait
// on the disk. LevelDB syncs its files when a database is created, opened and
// compacted, and on every `sync: true` write; on a loaded disk each sync took
// ~6 ms (hostile-input-test.js alone: 1,992 syncs, ~12 s of its wall). No
// test can tell a synced file from one in the page cache: their crash tests
// kill processes (SIGKILL), not the machine, and the page cache outlives a
// process either way. PostgreSQL's throwaway clusters already run with
// fsync off (testkit/postgres.js).

import { mkdtempSync, chmodSync, rmSync, statfsSync } from 'node:fs'
import { join } from 'node:path'

// statfs's f_type of tmpfs (linux/magic.h).
const TMPFS_MAGIC = 0x01021994
// Below this much free space, the disk: a full RAM file system would fail
// suites that pass on disk.
const MIN_FREE_BYTES = 4 * 1024 ** 3

/**
 * A fresh directory for the run's temporary files on /dev/shm if it is a
 * tmpfs with at least 4 GiB free, else null (the suites use the default).
 * Mode 1777 like /tmp: the PostgreSQL clusters run as the `postgres` user
 * when the tests run as root, and must reach their directories inside it.
 * @param {string} [base] where to look for the RAM file system
 * @returns {{ dir: string, remove: () => void } | null}
 */
export function ramTmpdir (base = '/dev/shm') {
  let stats
  try {
    stats = statfsSync(base)
  } catch {
    return null
  }
  if (stats.type !== TMPFS_MAGIC || stats.bavail * stats.bsize < MIN_FREE_BYTES) return null
  const dir = mkdtempSync(join(base, 'levelkit-tests-'))
  chmodSync(dir, 0o1777)
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) }
}
