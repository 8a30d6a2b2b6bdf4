// A PostgreSQL pair that fails over, for the failover test: one etcd member
// and two Patroni nodes (PostgreSQL from Debian, synchronous streaming
// replication), all on loopback in a temporary directory, stopped and
// removed at the end, also when the process ends early. PostgreSQL refuses
// to run as root, so as root every process runs as Debian's `postgres` user
// (etcd too: nothing here needs root).
import { spawn, spawnSync } from 'node:child_process'
import { appendFileSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, openSync, closeSync } from 'node:fs'
import { createServer, connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { postgresBinaries } from './postgres.js'

const SCOPE = 'levelkit'
const SUPERUSER = 'postgres'

/**
 * @typedef {object} FailoverNode
 * @property {string} name n1 or n2
 * @property {number} port PostgreSQL's port on 127.0.0.1
 * @property {number} api Patroni's REST port
 * @property {import('node:child_process').ChildProcess | null} patroni its Patroni process, null while it is down
 */

/**
 * @typedef {object} FailoverCluster
 * @property {string} connectionString both hosts, target_session_attrs=read-write
 * @property {Array<{ host: string, port: number }>} hosts
 * @property {FailoverNode[]} nodes
 * @property {string} dir the temporary directory (logs in <dir>/<node>/patroni.log)
 * @property {(timeoutMs?: number) => Promise<FailoverNode>} waitForPrimary the node Patroni says leads, once it accepts writes
 * @property {(timeoutMs?: number) => Promise<FailoverNode>} waitForSyncStandby the node that is the synchronous standby (with synchronous: false, the replica), once it is
 * @property {(node: FailoverNode) => Promise<void>} killNode kill -9 the node's Patroni and its postmaster
 * @property {(node: FailoverNode) => Promise<void>} killPostgres kill -9 the node's postmaster only (Patroni restarts it)
 * @property {(node: FailoverNode) => void} startNode start a killed node's Patroni again (it rejoins as a replica)
 * @property {() => Promise<{ name: string, role: string, state: string, lag?: number | string }[]>} members Patroni's view
 * @property {() => Promise<void>} stop stop everything and remove the directory; idempotent
 */

/**
 * Start etcd and two Patroni nodes; resolves once one node is the primary
 * and the other its synchronous standby.
 * `synchronous: false` turns Patroni's synchronous_mode off (asynchronous
 * replication: a promotion may lose acknowledged commits), to see the
 * failover test fail.
 * @param {{ log?: (line: string) => void, ttl?: number, synchronous?: boolean }} [options]
 * @returns {Promise<FailoverCluster>}
 */
export async function startFailoverCluster (options = {}) {
  const log = options.log || (() => {})
  const ttl = options.ttl || 10
  const synchronous = options.synchronous !== false
  const bin = postgresBinaries()
  if (!existsSync('/usr/bin/patroni') && !onPath('patroni')) throw new Error('patroni not found: install Debian\'s patroni package (scripts/install-system-packages.sh --failover does)')
  if (!onPath('etcd')) throw new Error('etcd not found: install Debian\'s etcd-server package (scripts/install-system-packages.sh --failover does)')
  const user = runAs()
  const dir = mkdtempSync(join(tmpdir(), 'levelkit-failover-'))
  if (user) chownSync(dir, user.uid, user.gid)
  /** @type {Set<import('node:child_process').ChildProcess>} */
  const children = new Set()
  /** @type {FailoverNode[]} */
  const nodes = []
  let stopped = false

  /** @type {NodeJS.ProcessEnv} */
  const env = { ...process.env, HOME: dir, LC_ALL: 'C.UTF-8', LANG: 'C.UTF-8', PATRONICTL_CONFIG_FILE: '' }
  for (const name of Object.keys(env)) if (name.startsWith('PG')) delete env[name]

  /** @param {string} name @param {string} file @param {string[]} args */
  const start = (name, file, args) => {
    const out = openSync(join(dir, `${name}.out`), 'a')
    if (user) chownSync(join(dir, `${name}.out`), user.uid, user.gid)
    const child = spawn(file, args, {
      cwd: dir,
      env,
      stdio: ['ignore', out, out],
      // Its own process group, so a signal to the test's group does not reach it first.
      detached: true,
      ...(user ? { uid: user.uid, gid: user.gid } : {})
    })
    closeSync(out)
    children.add(child)
    child.on('exit', () => children.delete(child))
    // For the watchdog (below).
    if (child.pid) appendFileSync(join(dir, 'pids'), `${child.pid}\n`)
    return child
  }

  // A process killed with SIGKILL runs no exit handler: a watchdog, in a
  // process group of its own, kills what this one started (the pids it
  // wrote, and the postmasters) and removes the directory once it is gone.
  writeFileSync(join(dir, 'pids'), '')
  const watchdog = spawn('sh', ['-c', `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done
for pid in $(cat "$1/pids"); do kill -9 "$pid" 2>/dev/null; done
for file in "$1"/n*/data/postmaster.pid; do [ -f "$file" ] && kill -9 "$(head -n 1 "$file")" 2>/dev/null; done
rm -rf "$1"`, 'watchdog', dir], { detached: true, stdio: 'ignore' })
  watchdog.unref()

  const stopSync = () => {
    if (stopped) return
    stopped = true
    process.removeListener('exit', stopSync)
    for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM'])) process.removeListener(signal, onSignal)
    for (const child of children) signal(child.pid, 'SIGKILL')
    for (const node of nodes) signal(postmasterPid(dir, node), 'SIGKILL')
    signal(watchdog.pid, 'SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
  const onSignal = (/** @type {NodeJS.Signals} */ name) => {
    stopSync()
    process.kill(process.pid, name)
  }
  process.on('exit', stopSync)
  for (const name of /** @type {const} */ (['SIGINT', 'SIGTERM'])) process.once(name, onSignal)

  try {
    const [etcdClient, etcdPeer, api1, api2, pg1, pg2] = await freePorts(6)
    const etcd = start('etcd', 'etcd', [
      '--name', 'e1',
      '--data-dir', join(dir, 'etcd'),
      '--listen-client-urls', `http://127.0.0.1:${etcdClient}`,
      '--advertise-client-urls', `http://127.0.0.1:${etcdClient}`,
      '--listen-peer-urls', `http://127.0.0.1:${etcdPeer}`,
      '--initial-advertise-peer-urls', `http://127.0.0.1:${etcdPeer}`,
      '--initial-cluster', `e1=http://127.0.0.1:${etcdPeer}`,
      '--initial-cluster-state', 'new',
      '--log-level', 'warn'
    ])
    await waitFor(async () => etcd.exitCode === null ? (await httpOk(etcdClient, '/health')) : fail(`etcd exited (${etcd.exitCode}): ${tail(join(dir, 'etcd.out'))}`), 30000, 'etcd to answer')
    log(`etcd on 127.0.0.1:${etcdClient}`)

    for (const [name, api, port] of /** @type {const} */ ([['n1', api1, pg1], ['n2', api2, pg2]])) {
      const home = join(dir, name)
      mkdirSync(home)
      if (user) chownSync(home, user.uid, user.gid)
      writeFileSync(join(home, 'patroni.yml'), patroniConfig({ name, api, port, home, bin, etcdClient, ttl, synchronous }))
      nodes.push({ name, port, api, patroni: null })
    }

    const startNode = (/** @type {FailoverNode} */ node) => {
      if (node.patroni && node.patroni.exitCode === null) return
      node.patroni = start(`${node.name}/patroni`, 'patroni', [join(dir, node.name, 'patroni.yml')])
    }

    /** @returns {Promise<any[]>} */
    const members = async () => {
      for (const node of nodes) {
        const cluster = await httpJson(node.api, '/cluster').catch(() => null)
        if (cluster && Array.isArray(cluster.members)) return cluster.members
      }
      return []
    }

    /** @param {number} [timeoutMs] */
    const waitForPrimary = async (timeoutMs = 60000) => {
      return waitFor(async () => {
        for (const node of nodes) {
          // 200 from /primary: Patroni holds the leader key here and PostgreSQL runs read-write.
          if (await httpOk(node.api, '/primary')) return node
        }
        return null
      }, timeoutMs, 'a primary')
    }

    /** @param {number} [timeoutMs] */
    const waitForSyncStandby = async (timeoutMs = 120000) => {
      return waitFor(async () => {
        // The leader's view (a restarted node's own /sync may answer from a
        // stale sync key), and the standby itself streaming.
        const list = await members()
        const sync = list.find(member => member.role === (synchronous ? 'sync_standby' : 'replica') && member.state === 'running')
        const node = sync && nodes.find(node => node.name === sync.name)
        return node && list.some(member => member.role === 'leader') && await httpOk(node.api, '/replica') ? node : null
      }, timeoutMs, 'a synchronous standby')
    }

    const killPostgres = async (/** @type {FailoverNode} */ node) => {
      const pid = postmasterPid(dir, node)
      if (pid === null) throw new Error(`${node.name} has no postmaster to kill`)
      signal(pid, 'SIGKILL')
      await waitFor(async () => !alive(pid), 10000, `${node.name}'s postmaster to die`)
    }

    const killNode = async (/** @type {FailoverNode} */ node) => {
      const patroni = node.patroni
      const pid = postmasterPid(dir, node)
      // Patroni first, or it would restart the postmaster.
      if (patroni) signal(patroni.pid, 'SIGKILL')
      signal(pid, 'SIGKILL')
      await waitFor(async () => (!patroni || patroni.exitCode !== null || patroni.signalCode !== null) && (pid === null || !alive(pid)), 10000, `${node.name} to die`)
      node.patroni = null
    }

    startNode(nodes[0])
    const first = await waitForPrimary(120000)
    log(`${first.name} is the primary`)
    startNode(nodes[1])
    await waitForSyncStandby(180000)
    log(synchronous ? 'the other node is its synchronous standby' : 'the other node is its (asynchronous) standby')

    const hosts = nodes.map(node => ({ host: '127.0.0.1', port: node.port }))
    return {
      connectionString: `postgresql://${SUPERUSER}@${hosts.map(h => `${h.host}:${h.port}`).join(',')}/postgres?target_session_attrs=read-write`,
      hosts,
      nodes,
      dir,
      waitForPrimary,
      waitForSyncStandby,
      killNode,
      killPostgres,
      startNode,
      members,
      async stop () {
        if (stopped) return
        // Patroni stops its PostgreSQL on SIGTERM; then etcd.
        const patronis = nodes.map(node => node.patroni).filter(child => child && child.exitCode === null && child.signalCode === null)
        for (const child of patronis) signal(child?.pid, 'SIGTERM')
        await Promise.all(patronis.map(child => exited(child, 20000)))
        for (const node of nodes) {
          const pid = postmasterPid(dir, node)
          if (pid !== null && alive(pid)) {
            signal(pid, 'SIGQUIT')
            await waitFor(async () => !alive(pid), 10000, `${node.name}'s postmaster to stop`).catch(() => signal(pid, 'SIGKILL'))
          }
        }
        signal(etcd.pid, 'SIGTERM')
        await exited(etcd, 10000)
        stopSync()
      }
    }
  } catch (err) {
    const logs = nodes.map(node => `${node.name}: ${tail(join(dir, node.name, 'patroni.log'))}`).join('\n')
    stopSync()
    throw new Error(`${/** @type {Error} */ (err).message}\n${logs}`)
  }
}

/**
 * Patroni's configuration of one node: short timeouts (the test waits for
 * a promotion several times), synchronous mode, pg_rewind so that a killed
 * primary rejoins as a replica, and trust on loopback (nothing else listens).
 * @param {{ name: string, api: number, port: number, home: string, bin: string, etcdClient: number, ttl: number, synchronous: boolean }} o
 */
function patroniConfig (o) {
  return `scope: ${SCOPE}
namespace: /levelkit/
name: ${o.name}
log:
  level: INFO
  dir: ${o.home}
  file_num: 1
restapi:
  listen: 127.0.0.1:${o.api}
  connect_address: 127.0.0.1:${o.api}
etcd3:
  hosts: 127.0.0.1:${o.etcdClient}
bootstrap:
  dcs:
    ttl: ${o.ttl}
    loop_wait: 1
    retry_timeout: 3
    maximum_lag_on_failover: 1048576
    synchronous_mode: ${o.synchronous}
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_level: replica
        hot_standby: 'on'
        wal_log_hints: 'on'
        max_wal_senders: 10
        max_replication_slots: 10
        max_connections: 100
        # Processes are killed, never the machine: the page cache survives.
        fsync: 'off'
        full_page_writes: 'on'
  initdb:
    - encoding: UTF8
    - locale: C
    - auth-local: trust
    - auth-host: trust
postgresql:
  listen: 127.0.0.1:${o.port}
  connect_address: 127.0.0.1:${o.port}
  data_dir: ${o.home}/data
  bin_dir: ${o.bin}
  pgpass: ${o.home}/pgpass
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
  authentication:
    superuser:
      username: ${SUPERUSER}
      password: levelkit
    replication:
      username: replicator
      password: levelkit
    rewind:
      username: ${SUPERUSER}
      password: levelkit
  parameters:
    unix_socket_directories: '${o.home}'
tags:
  nofailover: false
  noloadbalance: false
  clonefrom: false
  nosync: false
`
}

/** @param {string} dir @param {FailoverNode} node @returns {number | null} */
function postmasterPid (dir, node) {
  try {
    const pid = Number(readFileSync(join(dir, node.name, 'data', 'postmaster.pid'), 'utf8').split('\n')[0])
    return Number.isSafeInteger(pid) && pid > 0 && alive(pid) ? pid : null
  } catch {
    return null
  }
}

/** @param {number} pid */
function alive (pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return /** @type {any} */ (err).code === 'EPERM'
  }
}

/** @param {number | null | undefined} pid @param {NodeJS.Signals} name */
function signal (pid, name) {
  if (typeof pid !== 'number') return
  try {
    process.kill(pid, name)
  } catch {}
}

/** @param {import('node:child_process').ChildProcess | null | undefined} child @param {number} ms */
async function exited (child, ms) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return
  const done = new Promise(resolve => child.once('exit', resolve))
  const timer = new Promise(resolve => setTimeout(resolve, ms).unref())
  if (await Promise.race([done.then(() => true), timer.then(() => false)])) return
  signal(child.pid, 'SIGKILL')
  await done
}

/**
 * @template T
 * @param {() => Promise<T | null | false>} probe @param {number} ms @param {string} what
 * @returns {Promise<T>}
 */
async function waitFor (probe, ms, what) {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await probe()
    if (value) return /** @type {T} */ (value)
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 200))
  }
}

/** @param {string} message @returns {never} */
function fail (message) {
  throw new Error(message)
}

/** @param {number} port @param {string} path @returns {Promise<boolean>} */
async function httpOk (port, path) {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(2000) })
    await res.arrayBuffer()
    return res.status === 200
  } catch {
    return false
  }
}

/** @param {number} port @param {string} path */
async function httpJson (port, path) {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(2000) })
  return res.json()
}

/** @param {string} file */
function tail (file) {
  try {
    return '\n' + readFileSync(file, 'utf8').split('\n').slice(-30).join('\n')
  } catch {
    return '(no log)'
  }
}

/** @param {string} name */
function onPath (name) {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0
}

/**
 * The unprivileged user every process runs as: none unless this process is
 * root, then Debian's `postgres`.
 * @returns {{ uid: number, gid: number } | null}
 */
function runAs () {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return null
  const id = (/** @type {string} */ flag) => {
    const result = spawnSync('id', [flag, SUPERUSER], { encoding: 'utf8' })
    if (result.status !== 0) throw new Error(`PostgreSQL refuses to run as root, and there is no '${SUPERUSER}' user to run it as: install Debian's postgresql package (it creates one)`)
    return Number(result.stdout.trim())
  }
  return { uid: id('-u'), gid: id('-g') }
}

/**
 * Ports nothing listens on now. Held open together, so no two are the same.
 * @param {number} count @returns {Promise<number[]>}
 */
async function freePorts (count) {
  const servers = []
  try {
    for (let i = 0; i < count; i++) {
      const server = createServer()
      servers.push(server)
      await new Promise((resolve, reject) => {
        server.once('error', reject)
        server.listen(0, '127.0.0.1', () => resolve(undefined))
      })
    }
    return servers.map(server => /** @type {import('node:net').AddressInfo} */ (server.address()).port)
  } finally {
    await Promise.all(servers.map(server => new Promise(resolve => server.close(resolve))))
  }
}

/**
 * Whether something listens on 127.0.0.1:port (the test checks that the
 * ports are free again after stop()).
 * @param {number} port @returns {Promise<boolean>}
 */
export function listening (port) {
  return new Promise(resolve => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('error', () => resolve(false))
  })
}
