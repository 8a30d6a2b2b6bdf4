// CPU time from Linux /proc, for benchmarks that must show whether the
// machine is saturated: a process tree's (PostgreSQL's postmaster and its
// backends) and the whole machine's. Null where /proc is not there.
import fs from 'node:fs'

// Clock ticks per second of /proc's CPU times (USER_HZ): 100 on every Linux
// architecture Node runs on.
const CLOCK_TICKS = 100

/** The fields of /proc/<pid>/stat after the command name (field 3 on), or null. @param {number | string} pid */
function statFields (pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  } catch {
    return null
  }
}

/** The parent pid of `pid`, or null. @param {number} pid */
export function parentPid (pid) {
  const fields = statFields(pid)
  return fields === null ? null : Number(fields[1])
}

/**
 * CPU ms so far of process `pid` and of its children: theirs, live ones'
 * read one by one, and the exited ones' that it waited for (cutime and
 * cstime: PostgreSQL backends come and go as the pools open and close
 * connections). A child that exited since the last call counts once (in
 * the parent's). Null where /proc is not there or `pid` is gone.
 * @param {number} pid
 * @returns {number | null}
 */
export function processTreeCpuMs (pid) {
  const own = statFields(pid)
  if (own === null) return null
  // utime, stime, cutime, cstime: fields 14-17 of stat, 12-15 after the name.
  const ticks = (/** @type {string[]} */ f) => Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])
  let total = ticks(own)
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const fields = statFields(name)
    if (fields !== null && Number(fields[1]) === pid) total += ticks(fields)
  }
  return total * 1000 / CLOCK_TICKS
}

/**
 * The machine's CPU time so far, ms summed over its cores: busy (every
 * state but idle and iowait) and in all. Null where /proc is not there.
 * @returns {{ busyMs: number, totalMs: number } | null}
 */
export function machineCpuMs () {
  let line
  try {
    line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]
  } catch {
    return null
  }
  // cpu user nice system idle iowait irq softirq steal (guest time is in user)
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number)
  const busy = user + nice + system + irq + softirq + (steal || 0)
  return { busyMs: busy * 1000 / CLOCK_TICKS, totalMs: (busy + idle + iowait) * 1000 / CLOCK_TICKS }
}
