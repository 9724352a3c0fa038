/**
 * Private redis-server instances for tests. Never touches a server the tests did not start:
 * each call spawns `redis-server` on a free loopback port chosen here (redis-server --port 0 exits
 * instead of choosing one). Tests never connect to the machine's shared Redis on 6379.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Cluster, Redis, type RedisOptions } from 'ioredis'
import { afterAll, beforeAll } from 'vitest'
import { redisStore, type RedisStore } from '../../src/stores/redis.js'

/** True when a private server can be spawned. */
export const hasRedisServer = spawnSync('redis-server', ['--version']).status === 0

/** Whether Redis-backed tests can run; in CI they must (see `requireRedis`). */
export const redisAvailable = hasRedisServer

/** Fails loudly in CI when no Redis can be had, instead of skipping silently. */
export function requireRedis(): void {
  if (!redisAvailable && process.env.CI) {
    throw new Error(
      'CI=true but redis-server is not on PATH: Redis tests must run in CI (apt-get install redis-server)',
    )
  }
}

/** Asks the OS for a free loopback port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => resolve(port))
    })
  })
}

export interface PrivateRedis {
  port: number
  url: string
  /** A fail-fast client; closed by `stop()`. */
  client(options?: RedisOptions): Redis
  /** Stops the server (for outage tests); `start()` brings it back on the same port. */
  kill(signal?: NodeJS.Signals): Promise<void>
  /** Sends a signal without waiting for an exit (SIGSTOP / SIGCONT freeze and thaw the server). */
  signal(signal: NodeJS.Signals): void
  start(): Promise<void>
  stop(): Promise<void>
}

/** Spawns a private redis-server on a free port and waits until it answers PING. */
export async function startRedis(extraArgs: string[] = []): Promise<PrivateRedis> {
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'airlock-redis-'))
  const clients: Redis[] = []
  let proc: ChildProcess | undefined

  const launch = async (): Promise<void> => {
    proc = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extraArgs],
      { stdio: 'ignore' },
    )
    const probe = new Redis({
      port,
      host: '127.0.0.1',
      lazyConnect: true,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
    })
    probe.on('error', () => {})
    const until = Date.now() + 10_000
    for (;;) {
      try {
        await probe.connect()
        await probe.ping()
        probe.disconnect()
        return
      } catch {
        if (Date.now() > until) throw new Error(`redis-server on port ${port} did not start`)
        await new Promise((r) => setTimeout(r, 50))
      }
    }
  }

  const kill = async (signal: NodeJS.Signals = 'SIGKILL'): Promise<void> => {
    const p = proc
    if (!p || p.exitCode !== null || p.signalCode !== null) return // already exited (a death by signal leaves exitCode null)
    await new Promise<void>((resolve) => {
      p.once('exit', () => resolve())
      p.kill(signal)
    })
  }

  await launch()
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    client(options: RedisOptions = {}) {
      const c = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1, ...options })
      c.on('error', () => {})
      clients.push(c)
      return c
    },
    kill,
    signal(signal) {
      proc?.kill(signal)
    },
    start: launch,
    async stop() {
      for (const c of clients) c.disconnect()
      await kill()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export interface PrivateCluster {
  ports: number[]
  /** Every node, masters first (with `replicas`, each master's replica after them). */
  nodes: PrivateRedis[]
  /** A Cluster client; closed by `stop()`. */
  client(): Cluster
  stop(): Promise<void>
}

/** Spawns a private 3-master Redis Cluster on free loopback ports (`replicas`: one replica per master, 6 nodes). */
export async function startCluster(options: { replicas?: 0 | 1 } = {}): Promise<PrivateCluster> {
  const nodes: PrivateRedis[] = []
  const replicas = options.replicas ?? 0
  for (let i = 0; i < 3 * (1 + replicas); i++) {
    nodes.push(await startRedis(['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${i}.conf`]))
  }
  const ports = nodes.map((n) => n.port)
  const created = spawnSync(
    'redis-cli',
    [
      '--cluster',
      'create',
      ...ports.map((p) => `127.0.0.1:${p}`),
      '--cluster-replicas',
      String(replicas),
      '--cluster-yes',
    ],
    { encoding: 'utf8', timeout: 30_000 },
  )
  if (created.status !== 0) throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`)
  const clients: Cluster[] = []
  const probe = new Cluster([{ host: '127.0.0.1', port: ports[0]! }])
  probe.on('error', () => {})
  const until = Date.now() + 20_000
  for (;;) {
    const info = await probe.cluster('INFO').catch(() => '')
    if (String(info).includes('cluster_state:ok')) break
    if (Date.now() > until) throw new Error('cluster did not become ready')
    await new Promise((r) => setTimeout(r, 100))
  }
  probe.disconnect()
  return {
    ports,
    nodes,
    client() {
      const c = new Cluster(
        ports.map((port) => ({ host: '127.0.0.1', port })),
        { redisOptions: { maxRetriesPerRequest: 1 } },
      )
      c.on('error', () => {})
      clients.push(c)
      return c
    },
    async stop() {
      for (const c of clients) c.disconnect()
      for (const n of nodes) await n.stop()
    },
  }
}

/**
 * For the enclosing `describe`: a private redis-server and a store on it, started before its
 * tests and stopped after them. Read `.redis` and `.store` inside tests or hooks.
 */
export function usePrivateRedis(): { readonly redis: PrivateRedis; readonly store: RedisStore } {
  let redis: PrivateRedis | undefined
  let store: RedisStore | undefined
  beforeAll(async () => {
    redis = await startRedis()
    store = redisStore({ client: redis.client() })
  })
  afterAll(async () => {
    await store?.close()
    await redis?.stop()
  })
  return {
    get redis() {
      if (!redis) throw new Error('usePrivateRedis: read .redis inside a test or hook')
      return redis
    },
    get store() {
      if (!store) throw new Error('usePrivateRedis: read .store inside a test or hook')
      return store
    },
  }
}
