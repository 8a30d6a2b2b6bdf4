// A PostgreSQL server for tests and benchmarks: the one LEVELKIT_PG_URL
// names, or else a throwaway cluster (initdb into a temporary directory,
// pg_ctl start on a unix socket there), stopped and removed at the end, also
// when the process ends early. PostgreSQL refuses to run as root, so as root
// the server runs as the `postgres` user Debian's package creates.
// initdb is most of a start (seconds, for the same files every time), so a
// run of many test processes makes one cluster with postgresTemplate() and
// names its data directory in LEVELKIT_PG_TEMPLATE: each throwaway cluster
// is then a copy of it (scripts/run-tests.js does so).
import { execFileSync, spawnSync } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, appendFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const DATABASE = 'levelkit'
const SUPERUSER = 'postgres'

/**
 * @typedef {object} PostgresServer
 * @property {string} connectionString what `pg` connects with
 * @property {boolean} throwaway whether it is a cluster this process started (and will remove)
 * @property {() => Promise<void>} stop stop and remove the cluster (nothing for LEVELKIT_PG_URL); idempotent
 * @property {() => number | null} cpuSeconds the CPU time the throwaway cluster's processes used so far
 *   (the postmaster, its backends ended and running, its background workers; null for LEVELKIT_PG_URL
 *   or where /proc is not readable)
 */

/**
 * The server LEVELKIT_PG_URL names, or a throwaway cluster.
 * @param {{ maxConnections?: number }} [options] the throwaway cluster's max_connections (200 by default;
 *   a server LEVELKIT_PG_URL names keeps its own)
 * @returns {Promise<PostgresServer>}
 */
export async function postgres (options = {}) {
  const url = process.env.LEVELKIT_PG_URL
  if (url) return { connectionString: url, throwaway: false, async stop () {}, cpuSeconds: () => null }
  const { maxConnections = 200 } = options
  if (!Number.isSafeInteger(maxConnections) || maxConnections < 10) throw new TypeError(`maxConnections must be an integer of at least 10, got ${maxConnections}`)
  return startCluster(maxConnections)
}

/**
 * The directory holding initdb and pg_ctl: `pg_config --bindir` (Debian's
 * pg_config says where the server of its version is), else the newest
 * /usr/lib/postgresql/<version>/bin.
 */
export function postgresBinaries () {
  const has = (/** @type {string} */ dir) => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl'))
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
    if (dir && has(dir)) return dir
  } catch {}
  const base = '/usr/lib/postgresql'
  const versions = existsSync(base) ? readdirSync(base).filter(v => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a)) : []
  for (const version of versions) {
    const dir = join(base, version, 'bin')
    if (has(dir)) return dir
  }
  throw new Error('PostgreSQL server binaries (initdb, pg_ctl) not found: install Debian\'s postgresql package (scripts/install-system-packages.sh does), or set LEVELKIT_PG_URL to a server to test on')
}

/** @param {number} maxConnections @returns {Promise<PostgresServer>} */
async function startCluster (maxConnections) {
  const bin = postgresBinaries()
  const asUser = runAs()
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-pg-'))
  const data = join(dir, 'data')
  const log = join(dir, 'server.log')
  let started = false
  let stopped = false

  /** @type {number | null} the postmaster's pid, once started */
  let postmaster = null
  const cpuSeconds = () => postmaster === null ? null : processCpuSeconds(postmaster)
  const stopSync = () => {
    if (stopped) return
    stopped = true
    reportCpu(cpuSeconds())
    process.removeListener('exit', stopSync)
    for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM'])) process.removeListener(signal, onSignal)
    if (started) spawnSync(...command(asUser, join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']), { stdio: 'ignore' })
    rmSync(dir, { recursive: true, force: true })
  }
  const onSignal = (/** @type {NodeJS.Signals} */ signal) => {
    stopSync()
    process.kill(process.pid, signal)
  }
  process.on('exit', stopSync)
  for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM'])) process.once(signal, onSignal)

  try {
    if (asUser) chownSync(dir, asUser.uid, asUser.gid)
    const template = process.env.LEVELKIT_PG_TEMPLATE
    // A copy made as the server's user is owned by it, as PostgreSQL requires.
    if (template) run(asUser, 'cp', ['-a', template, data])
    else run(asUser, join(bin, 'initdb'), ['-D', data, '-U', SUPERUSER, '--auth=trust', '--no-sync', '--encoding=UTF8', '--locale=C'])
    const port = await freePort()
    // No TCP listener: only this process (through the socket in its
    // directory) reaches the server. Durability is not what tests measure.
    appendFileSync(join(data, 'postgresql.conf'), [
      '',
      "listen_addresses = ''",
      `port = ${port}`,
      `unix_socket_directories = '${dir}'`,
      'fsync = off',
      'synchronous_commit = off',
      'full_page_writes = off',
      `max_connections = ${maxConnections}`,
      ''
    ].join('\n'))
    started = true
    run(asUser, join(bin, 'pg_ctl'), ['-D', data, '-l', log, '-w', '-t', '60', 'start'], () => tail(log))
    // The template holds the database already.
    if (!template) run(asUser, join(bin, 'createdb'), ['-h', dir, '-p', String(port), '-U', SUPERUSER, DATABASE])
    postmaster = postmasterPid(data)
    const connectionString = `postgresql://${SUPERUSER}@${encodeURIComponent(dir)}:${port}/${DATABASE}`
    return {
      connectionString,
      throwaway: true,
      cpuSeconds,
      async stop () {
        if (stopped) return
        stopped = true
        reportCpu(cpuSeconds())
        process.removeListener('exit', stopSync)
        for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM'])) process.removeListener(signal, onSignal)
        spawnSync(...command(asUser, join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop']), { stdio: 'ignore' })
        rmSync(dir, { recursive: true, force: true })
      }
    }
  } catch (err) {
    stopSync()
    throw err
  }
}

/** @param {string} data @returns {number | null} */
function postmasterPid (data) {
  try {
    const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0])
    return Number.isSafeInteger(pid) && pid > 0 ? pid : null
  } catch {
    return null
  }
}

/** Clock ticks per second of /proc's times (sysconf(_SC_CLK_TCK); 100 on Linux). */
let ticks = 0

/**
 * A server's CPU seconds from /proc: the postmaster's own, its ended
 * children's (each backend is a process it forks per connection and waits
 * for), and its running children's (background workers, open sessions).
 * A daemon that pg_ctl starts is no child of the test process, so the
 * CPU time its runner reports leaves it out.
 * @param {number} pid @returns {number | null}
 */
function processCpuSeconds (pid) {
  /** @param {number} id @param {boolean} waited with the children it waited for */
  const times = (id, waited) => {
    const fields = readFileSync(`/proc/${id}/stat`, 'utf8').split(') ')[1].split(' ')
    // utime, stime, cutime, cstime: fields 14-17 of proc(5), after pid and comm.
    return Number(fields[11]) + Number(fields[12]) + (waited ? Number(fields[13]) + Number(fields[14]) : 0)
  }
  try {
    if (ticks === 0) {
      try {
        ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()) || 100
      } catch {
        ticks = 100
      }
    }
    let total = times(pid, true)
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
    for (const child of children) {
      try {
        total += times(child, true)
      } catch {}
    }
    return total / ticks
  } catch {
    return null
  }
}

/**
 * At a cluster's stop, its CPU seconds are appended to the file
 * LEVELKIT_PG_CPU_FILE names, if any: scripts/run-tests.js adds them to
 * the suite's CPU time.
 * @param {number | null} seconds
 */
function reportCpu (seconds) {
  const file = process.env.LEVELKIT_PG_CPU_FILE
  if (!file || seconds === null) return
  try {
    appendFileSync(file, `${seconds}\n`)
  } catch {}
}

/**
 * Make the data directory that LEVELKIT_PG_TEMPLATE names for the throwaway
 * clusters of other processes: initdb, and the database created (so a copy
 * skips both), the server stopped cleanly. Nothing when LEVELKIT_PG_URL is
 * set. `remove()` deletes it; it is also removed when this process exits.
 * @returns {Promise<{ data: string, remove: () => void } | null>}
 */
export async function postgresTemplate () {
  if (process.env.LEVELKIT_PG_URL) return null
  const bin = postgresBinaries()
  const asUser = runAs()
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-pg-template-'))
  const data = join(dir, 'data')
  const remove = () => {
    process.removeListener('exit', remove)
    rmSync(dir, { recursive: true, force: true })
  }
  process.on('exit', remove)
  try {
    if (asUser) chownSync(dir, asUser.uid, asUser.gid)
    run(asUser, join(bin, 'initdb'), ['-D', data, '-U', SUPERUSER, '--auth=trust', '--no-sync', '--encoding=UTF8', '--locale=C'])
    // Started once, on a socket in its own directory only, to create the
    // database; the settings each copy needs are appended to the copy's
    // postgresql.conf (the last setting of a name wins).
    const port = await freePort()
    const log = join(dir, 'server.log')
    const options = `-c listen_addresses= -c port=${port} -c unix_socket_directories=${dir} -c fsync=off`
    run(asUser, join(bin, 'pg_ctl'), ['-D', data, '-l', log, '-o', options, '-w', '-t', '60', 'start'], () => tail(log))
    try {
      run(asUser, join(bin, 'createdb'), ['-h', dir, '-p', String(port), '-U', SUPERUSER, DATABASE])
    } finally {
      run(asUser, join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop'])
    }
    rmSync(log, { force: true })
    return { data, remove }
  } catch (err) {
    remove()
    throw err
  }
}

/**
 * The unprivileged user to run the server as: none unless this process is
 * root, then Debian's `postgres`.
 * @returns {{ name: string, uid: number, gid: number } | null}
 */
function runAs () {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return null
  const id = (/** @type {string} */ flag) => {
    try {
      return Number(execFileSync('id', [flag, SUPERUSER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim())
    } catch {
      throw new Error(`PostgreSQL refuses to run as root, and there is no '${SUPERUSER}' user to run it as: install Debian's postgresql package (it creates one), run the tests as another user, or set LEVELKIT_PG_URL`)
    }
  }
  return { name: SUPERUSER, uid: id('-u'), gid: id('-g') }
}

/**
 * @param {{ name: string } | null} asUser @param {string} file @param {string[]} args
 * @returns {[string, string[]]}
 */
function command (asUser, file, args) {
  if (!asUser) return [file, args]
  if (existsSync('/usr/sbin/runuser') || existsSync('/sbin/runuser')) return ['runuser', ['-u', asUser.name, '--', file, ...args]]
  return ['setpriv', ['--reuid', asUser.name, '--regid', asUser.name, '--init-groups', '--', file, ...args]]
}

/**
 * @param {{ name: string } | null} asUser @param {string} file @param {string[]} args
 * @param {() => string} [more] what else to say when it fails
 */
function run (asUser, file, args, more) {
  const result = spawnSync(...command(asUser, file, args), { encoding: 'utf8', cwd: tmpdir() })
  if (result.status !== 0) {
    const output = `${result.stdout || ''}${result.stderr || ''}${more ? more() : ''}`.trim()
    throw new Error(`${file} ${args.join(' ')} failed (${result.error ? result.error.message : `exit ${result.status}`}):\n${output}`)
  }
}

/** @param {string} file */
function tail (file) {
  try {
    return '\n' + readFileSync(file, 'utf8').split('\n').slice(-20).join('\n')
  } catch {
    return ''
  }
}

/** A TCP port nothing listens on now, for the socket's name (.s.PGSQL.<port>). @returns {Promise<number>} */
function freePort () {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')))
    })
  })
}
