import fs from 'node:fs'

/**
 * CPU time of this process's main thread so far, in ms (Linux: from
 * /proc/self/task/<pid>/stat), or null elsewhere. Unlike process.cpuUsage()
 * it leaves out LevelDB's compaction thread and libuv's thread pool: it is
 * the JavaScript side's own cost.
 * @returns {number | null}
 */
export function mainThreadCpuMs () {
  const file = `/proc/self/task/${process.pid}/stat`
  if (!fs.existsSync(file)) return null
  const stat = fs.readFileSync(file, 'utf8')
  // After the command name (which may hold spaces), in parentheses: field 3
  // (state) onwards; utime and stime are fields 14 and 15, in clock ticks.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 1000 / CLOCK_TICKS
}

// Clock ticks per second of /proc's CPU times (USER_HZ): 100 on every Linux
// architecture Node runs on.
const CLOCK_TICKS = 100
