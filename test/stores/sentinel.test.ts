/**
 * A real Redis Sentinel failover (issue 22): one primary, one replica, three sentinels on loopback
 * (`redis-server --sentinel`). The primary is killed; the sentinels promote the replica; ioredis
 * (in Sentinel mode) follows them to it. The store must notice that another server answers, the
 * semaphore must grant no new slot until every slot that may have been lost has expired, and an
 * independent count of holders must never pass the limit.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { createSemaphore } from '../../src/core/semaphore.js'
import type { Lease } from '../../src/core/lease.js'
import { redisStore } from '../../src/stores/redis.js'
import { freePort, requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'
import { sleep, until } from '../helpers/wait.js'

requireRedis()

const closers: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})

async function sentinel(primaryPort: number): Promise<number> {
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'airlock-sentinel-'))
  const conf = join(dir, 'sentinel.conf')
  writeFileSync(
    conf,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `sentinel monitor airlock 127.0.0.1 ${primaryPort} 2`,
      'sentinel down-after-milliseconds airlock 400',
      'sentinel failover-timeout airlock 3000',
      'sentinel parallel-syncs airlock 1',
    ].join('\n'),
  )
  const proc: ChildProcess = spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' })
  closers.push(async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return
    await new Promise<void>((r) => {
      proc.once('exit', () => r())
      proc.kill('SIGKILL')
    })
    rmSync(dir, { recursive: true, force: true })
  })
  // A fresh probe each try: one whose first connect failed keeps reconnecting and refuses connect().
  await until(
    async () => {
      const probe = new Redis({
        port,
        host: '127.0.0.1',
        lazyConnect: true,
        retryStrategy: () => null,
        maxRetriesPerRequest: 0,
      })
      probe.on('error', () => {})
      const answer = await probe.connect().then(
        () => probe.ping(),
        () => null,
      )
      probe.disconnect()
      return answer === 'PONG'
    },
    20_000,
    50,
  )
  return port
}

describe('Redis Sentinel failover', () => {
  let primary: PrivateRedis | undefined
  let replica: PrivateRedis | undefined
  afterEach(async () => {
    await replica?.stop()
    await primary?.stop()
  })

  it('the store notices the promoted replica, grants nothing new for a ttl, and never more than the limit are held', {
    timeout: 60_000,
  }, async () => {
    primary = await startRedis()
    replica = await startRedis(['--replicaof', '127.0.0.1', String(primary.port)])
    const admin = replica.client()
    await until(async () => /master_link_status:up/.test(await admin.info('replication')))
    const sentinels = await Promise.all([0, 1, 2].map(() => sentinel(primary!.port)))
    const client = new Redis({
      sentinels: sentinels.map((port) => ({ host: '127.0.0.1', port })),
      name: 'airlock',
      maxRetriesPerRequest: 20,
      sentinelRetryStrategy: () => 100,
    })
    client.on('error', () => {})
    closers.push(() => client.disconnect())
    const store = redisStore({ client })
    closers.push(() => store.close())
    const sem = createSemaphore({ name: 'sentinel', limit: 10, ttl: 2000, store })

    // Holders refresh every ttl / 3 and stop believing when a refresh says the slot is gone.
    const held = new Set<Lease>()
    let peak = 0
    const sample = setInterval(() => (peak = Math.max(peak, held.size)), 20)
    const refresh = setInterval(() => {
      for (const l of held)
        void l.refresh().then(
          (ok) => ok || held.delete(l),
          () => {},
        )
    }, 600)
    closers.push(() => {
      clearInterval(sample)
      clearInterval(refresh)
    })
    // A steady stream of acquisitions, before, during and after the failover.
    let stop = false
    const fences: number[] = []
    const grantedAt: number[] = []
    const stream = (async () => {
      while (!stop) {
        const lease = await sem.acquire().catch(() => null)
        if (lease) {
          held.add(lease)
          fences.push(lease.fence)
          grantedAt.push(Date.now())
          setTimeout(
            () =>
              void lease.release().then(
                () => held.delete(lease),
                () => held.delete(lease),
              ),
            300,
          )
        }
        await sleep(20)
      }
    })()
    await sleep(1_000)
    expect(held.size).toBeGreaterThan(0)
    await primary.kill()
    // The sentinels promote the replica; the client follows; the store notices.
    await until(async () => /role:master/.test(await admin.info('replication').catch(() => '')), 20_000)
    await until(() => store.lostAt() !== undefined, 20_000)
    const lostAt = store.lostAt()!
    await until(() => !sem.quarantined(), 5_000)
    await sleep(1_500)
    stop = true
    await stream
    expect(peak).toBeLessThanOrEqual(10)
    // Nothing acquired within the quarantine (a ttl from the loss); acquisitions went on after it.
    expect(grantedAt.filter((t) => t >= lostAt && t < lostAt + 2_000)).toEqual([])
    expect(grantedAt.filter((t) => t >= lostAt + 2_000).length).toBeGreaterThan(0)
    expect(fences.length).toBeGreaterThan(5)
    expect(new Set(fences).size).toBe(fences.length)
    expect(Date.now() - lostAt).toBeGreaterThan(2_000)
  })
})
