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
 */

/**
 * The server LEVELKIT_PG_URL names, or a throwaway cluster.
 * @param {{ maxConnections?: number }} [options] the throwaway cluster's max_connections (200 by default;
 *   a server LEVELKIT_PG_URL names keeps its own)
 * @returns {Promise<PostgresServer>}
 */
export async function postgres (options = {}) {
  const url = process.env.LEVELKIT_PG_URL
  if (url) return { connectionString: url, throwaway: false, async stop () {} }
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

  const stopSync = () => {
    if (stopped) return
    stopped = true
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
    const connectionString = `postgresql://${SUPERUSER}@${encodeURIComponent(dir)}:${port}/${DATABASE}`
    return {
      connectionString,
      throwaway: true,
      async stop () {
        if (stopped) return
        stopped = true
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
