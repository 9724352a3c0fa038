/**
 * A failover that loses the last writes, and a restart that loses everything (issue 22). Before:
 * replication cut, 10 slots taken on the primary, 10 more after the cut, the replica promoted and
 * the clients pointed at it (as a managed endpoint does): the new primary admitted 10 more while
 * the earlier 20 were still held (30 holders for limit 20), and 10 fence numbers were handed out
 * twice.
 *
 * Real redis-servers on loopback (a primary and its replica), a small TCP forwarder the test moves
 * from the old primary to the promoted replica (as a managed endpoint or a DNS switch does), and an
 * independent count of holders: every lease a holder believes it holds (it stops believing when a
 * refresh says the slot is gone), sampled every 20 ms.
 */
import { createServer, connect, type Server, type Socket } from 'node:net'
import diagnostics from 'node:diagnostics_channel'
import { Redis } from 'ioredis'
import { afterEach, describe, expect, it } from 'vitest'
import { createSemaphore, type Semaphore } from '../../src/core/semaphore.js'
import type { Lease } from '../../src/core/lease.js'
import type { FailoverEvent } from '../../src/base/events.js'
import { redisStore } from '../../src/stores/redis.js'
import { createGate } from '../../src/gate/gate.js'
import { freePort, requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'
import { sleep, until } from '../helpers/wait.js'

requireRedis()

const closers: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})

/** A TCP forwarder on a free port to `target`; `moveTo(port)` cuts every connection and forwards new ones there. */
async function forwarder(target: number): Promise<{ port: number; moveTo(port: number): void }> {
  const sockets = new Set<Socket>()
  const server: Server = createServer((client) => {
    const upstream = connect(target, '127.0.0.1')
    sockets.add(client).add(upstream)
    client.pipe(upstream).pipe(client)
    const close = () => {
      client.destroy()
      upstream.destroy()
    }
    client.on('error', close).on('close', close)
    upstream.on('error', close).on('close', close)
  })
  const port = await freePort()
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r))
  closers.push(() => new Promise((r) => server.close(r)))
  closers.push(() => {
    for (const s of sockets) s.destroy()
  })
  return {
    port,
    moveTo(next) {
      target = next
      for (const s of sockets) s.destroy()
      sockets.clear()
    },
  }
}

/** A Redis store whose client connects through the forwarder on `port` (closed after the test). */
function storeBehind(port: number) {
  const client = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 5 })
  client.on('error', () => {})
  const store = redisStore({ client })
  closers.push(() => client.disconnect())
  closers.push(() => store.close())
  return store
}

/** Holders that refresh every ttl / 3 and stop believing when a refresh says the slot is gone; `peak` is sampled every 20 ms. */
function holders() {
  const held = new Set<Lease>()
  let peak = 0
  const timer = setInterval(() => (peak = Math.max(peak, held.size)), 20)
  const refresher = setInterval(() => {
    for (const lease of held)
      void lease.refresh().then(
        (ok) => ok || held.delete(lease),
        () => {},
      )
  }, 300)
  closers.push(() => {
    clearInterval(timer)
    clearInterval(refresher)
  })
  return {
    add: (lease: Lease | null) => lease && held.add(lease),
    get size() {
      return held.size
    },
    get peak() {
      return Math.max(peak, held.size)
    },
  }
}

async function take(sem: Semaphore, n: number, into: ReturnType<typeof holders>, fences: number[]): Promise<number> {
  let got = 0
  for (let i = 0; i < n; i++) {
    const lease = await sem.acquire()
    if (lease) {
      got++
      fences.push(lease.fence!)
      into.add(lease)
    }
  }
  return got
}

describe('a store that lost its last writes', () => {
  let primary: PrivateRedis | undefined
  let replica: PrivateRedis | undefined
  afterEach(async () => {
    await replica?.stop()
    await primary?.stop()
    primary = replica = undefined
  })

  it('a replica promoted behind the endpoint: never more than the limit held, fences never repeat, detected once and published', {
    timeout: 30_000,
  }, async () => {
    primary = await startRedis()
    replica = await startRedis(['--replicaof', '127.0.0.1', '0'])
    const admin = replica.client()
    await admin.call('REPLICAOF', '127.0.0.1', String(primary.port))
    await until(async () => /master_link_status:up/.test(await admin.info('replication')))
    const endpoint = await forwarder(primary.port)
    const store = storeBehind(endpoint.port)
    const events: FailoverEvent[] = []
    const onFailover = (m: unknown) => void events.push(m as FailoverEvent)
    diagnostics.subscribe('airlock:failover', onFailover)
    closers.push(() => diagnostics.unsubscribe('airlock:failover', onFailover))

    const sem = createSemaphore({ name: 'failover', limit: 20, ttl: 1500, store })
    const held = holders()
    const fences: number[] = []
    expect(await take(sem, 10, held, fences)).toBe(10)
    await until(async () => Number((await admin.hget('{airlock:failover}:m', '#used')) ?? 0) === 10)
    // The replication link is cut (the replica becomes a primary of its own, as a promotion does),
    // then 10 more are taken on the old primary: writes the promoted replica never receives.
    await admin.call('REPLICAOF', 'NO', 'ONE')
    expect(await take(sem, 10, held, fences)).toBe(10)
    expect(held.size).toBe(20)
    // The endpoint now leads to the promoted replica.
    endpoint.moveTo(replica.port)
    // Before: the new primary granted 10 more at once (it counts 10): 30 holders for a limit of 20.
    const during = await take(sem, 10, held, fences)
    expect(during).toBe(0)
    expect(sem.quarantined()).toBe(true)
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({ store: 'redis', reason: 'another server' })
    // The holders whose slots the replica never had learn it at their refresh; after a ttl the
    // gate grants again, up to the limit.
    await until(() => !sem.quarantined(), 5_000)
    await until(async () => (await take(sem, 1, held, fences)) === 1, 5_000)
    await take(sem, 20, held, fences)
    await sleep(400)
    expect(held.peak).toBeLessThanOrEqual(20)
    // Back to full capacity: the 10 the replica had, and 10 new ones in place of those it lacked.
    await take(sem, 20, held, fences)
    expect(held.size).toBe(20)
    // Fences: unique and increasing across the loss.
    expect(new Set(fences).size).toBe(fences.length)
    for (let i = 1; i < fences.length; i++) expect(fences[i]!).toBeGreaterThan(fences[i - 1]!)
    expect(events).toHaveLength(1) // one detection per event
  })

  it('Redis restarted empty: detected, no slot granted for a ttl, fences go on above the old ones', {
    timeout: 30_000,
  }, async () => {
    primary = await startRedis()
    const store = redisStore({ client: primary.client({ maxRetriesPerRequest: 5 }) })
    closers.push(() => store.close())
    const sem = createSemaphore({ name: 'restart', limit: 5, ttl: 1000, store })
    const held = holders()
    const fences: number[] = []
    expect(await take(sem, 5, held, fences)).toBe(5)
    await primary.kill()
    await primary.start()
    await until(async () => {
      // The first call after the restart reconnects: the store then knows the server is another.
      await sem.getState().catch(() => {})
      return sem.quarantined()
    }, 5_000)
    expect(await take(sem, 5, held, fences)).toBe(0)
    await until(() => !sem.quarantined(), 3_000)
    await sleep(400) // the old holders' refreshes have told them
    expect(await take(sem, 5, held, fences)).toBe(5)
    expect(held.peak).toBeLessThanOrEqual(5)
    expect(new Set(fences).size).toBe(10)
    expect(Math.min(...fences.slice(5))).toBeGreaterThan(Math.max(...fences.slice(0, 5)))
  })

  it('the gate: for a ttl newcomers are decided as in an outage (the local quota, counted without the store), logged once at error level', {
    timeout: 30_000,
  }, async () => {
    primary = await startRedis()
    replica = await startRedis()
    const endpoint = await forwarder(primary.port)
    const store = storeBehind(endpoint.port)
    const lines: { level: string; msg?: string }[] = []
    const logger = {
      warn: (_: object, msg?: string) => void lines.push({ level: 'warn', msg }),
      error: (_: object, msg?: string) => void lines.push({ level: 'error', msg }),
    }
    const gate = createGate({
      name: 'failover-gate',
      mode: 'request',
      limit: 5,
      ttl: 1500,
      store,
      logger,
      secret: 'a-test-secret-that-is-at-least-32-bytes-long',
      reuseWindow: 0,
    })
    closers.push(() => gate.close())
    const view = { method: 'GET', url: '/', headers: {}, secure: false, request: undefined }
    // Two requests in flight on the old server.
    const before = [await gate.decide(view), await gate.decide(view)]
    expect(before.map((d) => d.kind === 'admit' && d.reason)).toEqual(['slot', 'slot'])
    endpoint.moveTo(replica.port)
    // The other server counts none of them: the gate does not ask it, and lets in 3 more (5 in all).
    const during = []
    for (let i = 0; i < 5; i++) during.push(await gate.decide(view))
    expect(during.map((d) => (d.kind === 'admit' ? d.reason : d.kind))).toEqual([
      'store-unavailable',
      'store-unavailable',
      'store-unavailable',
      'busy',
      'busy',
    ])
    expect(lines.filter((l) => l.level === 'error' && /different Redis/.test(l.msg ?? ''))).toHaveLength(1)
    for (const d of [...before, ...during]) if (d.kind === 'admit') await d.slot?.release()
    // After a ttl, the store decides again.
    await until(async () => {
      const d = await gate.decide(view)
      if (d.kind === 'admit') await d.slot?.release()
      return d.kind === 'admit' && d.reason === 'slot'
    }, 5_000)
    expect(lines.filter((l) => l.level === 'error' && /different Redis/.test(l.msg ?? ''))).toHaveLength(1)
  })

  it('replicas: 1 grants a slot only once a replica holds it; with the replica gone, nothing is granted (busy within replicaTimeout)', {
    timeout: 30_000,
  }, async () => {
    primary = await startRedis()
    replica = await startRedis(['--replicaof', '127.0.0.1', String(primary.port)])
    const admin = replica.client()
    await until(async () => /master_link_status:up/.test(await admin.info('replication')))
    const store = redisStore({ client: primary.client(), replicas: 1, replicaTimeout: 500 })
    closers.push(() => store.close())
    const sem = createSemaphore({ name: 'acked', limit: 5, ttl: 5_000, store })
    // On a busy host the replica's acknowledgement can miss the budget (then nothing is granted,
    // as it should be): the first grant is the first acknowledged in time.
    await until(async () => (await sem.acquire()) !== null, 10_000)
    // The replica already has it: a failover to it now would not lose it.
    expect(Number(await admin.hget('{airlock:acked}:m', '#used'))).toBe(1)
    await replica.kill()
    const t0 = Date.now()
    expect(await sem.acquire()).toBeNull()
    expect(Date.now() - t0).toBeLessThan(1_500)
    // The slot the replicas did not acknowledge was given back: only the first is held.
    await until(async () => (await sem.getState()).held === 1, 2_000)
    replica = undefined
  })

  it('replicas: checked at startup, with a sentence naming the option', () => {
    const client = { defineCommand() {}, duplicate() {}, isCluster: true }
    expect(() => redisStore({ client: client as never, replicas: 1 })).toThrow(
      /replicas is not supported on a Cluster client/,
    )
    expect(() => redisStore({ client: { defineCommand() {}, duplicate() {} } as never, replicas: -1 })).toThrow(
      /replicas/,
    )
    expect(() =>
      redisStore({ client: { defineCommand() {}, duplicate() {} } as never, replicas: 1, replicaTimeout: 1000 }),
    ).toThrow(/replicaTimeout must be below commandTimeout \(1000 ms\)/)
    // Without replicas, the timeout is not in play: a short commandTimeout alone is fine.
    expect(() =>
      redisStore({ client: { defineCommand() {}, duplicate() {} } as never, commandTimeout: 1 }),
    ).not.toThrow()
  })
})
