/**
 * Private redis-server instances for tests. Never touches a server the tests did not start:
 * each call spawns `redis-server` on a free loopback port chosen here (redis-server --port 0 exits
 * instead of choosing one). With REDIS_URL set instead, tests use that server under a unique key
 * prefix and never flush it.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis, type RedisOptions } from 'ioredis'

/** True when a private server can be spawned. */
export const hasRedisServer = spawnSync('redis-server', ['--version']).status === 0

/** Whether Redis-backed tests can run; in CI they must (see `requireRedis`). */
export const redisAvailable = hasRedisServer || Boolean(process.env.REDIS_URL)

/** Fails loudly in CI when no Redis can be had, instead of skipping silently. */
export function requireRedis(): void {
  if (!redisAvailable && process.env.CI) {
    throw new Error('CI=true but neither redis-server is on PATH nor REDIS_URL is set: Redis tests must run in CI')
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
    const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 })
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
    if (!p || p.exitCode !== null) return
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
    start: launch,
    async stop() {
      for (const c of clients) c.disconnect()
      await kill()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
