/**
 * `onStoreError: 'local'` (the default): a Redis that stalls during a crowd never lets more than the
 * limit reach the site (issue 22: before, every request the store could not answer in time was let
 * in, and a 300 ms `CLIENT PAUSE` cost a fragile backend tens of thousands of failed runs).
 *
 * Real Fastify in front of a handler that counts who is inside, a real private redis-server paused
 * with `CLIENT PAUSE ... ALL`.
 */
import { afterEach, describe, expect, it } from 'vitest'
import Fastify from 'fastify'
import { airlockShield } from '../../src/fastify.js'
import type { Gate } from '../../src/gate/gate.js'
import { LocalQuota } from '../../src/gate/local-quota.js'
import { pooledSlot, requestSlot } from '../../src/gate/slot-pool.js'
import type { Lease } from '../../src/core/semaphore.js'
import { redisStore } from '../../src/stores/redis.js'
import { requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'
import { sleep, until } from '../helpers/wait.js'
import { hit, nextAddress } from '../http/harness.js'

requireRedis()

const SECRET = 'a-test-secret-that-is-at-least-32-bytes-long'
const silent = { warn() {}, info() {}, error() {} }
const closers: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c()
})

/** One site: the handler takes 30 ms and counts who is inside (`inside.peak`), shared by the instances given the same counter. */
async function site(
  redis: PrivateRedis,
  name: string,
  options: { limit: number; [option: string]: unknown },
  inside: { now: number; peak: number; runs: number; failed: number },
) {
  const capacity = options.limit + 2
  const store = redisStore({ client: redis.client({ maxRetriesPerRequest: 0 }) })
  const fastify = Fastify()
  await fastify.register(airlockShield, {
    name,
    secret: SECRET,
    store,
    statusInterval: 200,
    logger: silent,
    ...options,
  })
  fastify.get('/', async (_req, reply) => {
    // A backend that throws at once past its capacity (2 over the limit here): an extra request
    // inside turns into instant 500s that free their place at once, as in a hug.
    if (inside.now >= capacity) {
      inside.failed++
      return reply.code(500).send('refused')
    }
    inside.now++
    inside.runs++
    inside.peak = Math.max(inside.peak, inside.now)
    await sleep(30)
    inside.now--
    return 'ok'
  })
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  closers.push(async () => {
    await fastify.close()
    await store.close()
  })
  return {
    url: `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}/`,
    gate: fastify.airlockGate as unknown as Gate,
  }
}

/** `clients` send requests back to back (a visitor keeps its pass cookie) until `ms` have passed; the statuses. */
async function crowd(urls: string[], clients: number, ms: number): Promise<Record<number, number>> {
  const end = Date.now() + ms
  const statuses: Record<number, number> = {}
  await Promise.all(
    Array.from({ length: clients }, async (_, i) => {
      let cookie: string | undefined
      const from = nextAddress() // each client a visitor of its own (the client share counts by address)
      while (Date.now() < end) {
        const res = await hit(urls[i % urls.length]!, { headers: cookie ? { cookie } : {}, from, timeout: 20_000 })
        cookie = res.cookies[0]?.split(';')[0] ?? cookie
        statuses[res.status] = (statuses[res.status] ?? 0) + 1
        if (res.status === 503) await sleep(10)
      }
    }),
  )
  return statuses
}

describe("onStoreError: 'local' (the default) during a Redis stall", () => {
  let redis: PrivateRedis
  afterEach(async () => {
    await redis?.stop()
  })

  it('request mode: the site keeps serving during a 1.5 s pause, never more than the limit inside', {
    timeout: 30_000,
  }, async () => {
    redis = await startRedis()
    const inside = { now: 0, peak: 0, runs: 0, failed: 0 }
    const { url } = await site(redis, 'stall-request', { mode: 'request', limit: 15 }, inside)
    // Paused before the crowd: the gate holds no slot to reuse, every decision falls to onStoreError.
    const admin = redis.client()
    await admin.call('CLIENT', 'PAUSE', '1500', 'ALL')
    await crowd([url], 200, 1_300)
    const served = inside.runs
    await crowd([url], 50, 500)
    admin.disconnect()
    // Before: every request the store did not answer within storeTimeout went in (the peak was the crowd).
    expect(inside.peak).toBeLessThanOrEqual(15)
    expect(inside.failed).toBe(0)
    // ...and it kept serving ('closed' serves nobody here: see below).
    expect(served).toBeGreaterThan(20)
  })

  it('request mode, two instances: each keeps to its quota of the limit (the fleet size from the instance reports)', {
    timeout: 30_000,
  }, async () => {
    redis = await startRedis()
    const inside = { now: 0, peak: 0, runs: 0, failed: 0 }
    const a = await site(redis, 'stall-fleet', { mode: 'request', limit: 6, reuseWindow: 0 }, inside)
    const b = await site(redis, 'stall-fleet', { mode: 'request', limit: 6, reuseWindow: 0 }, inside)
    await until(async () => (await a.gate.status()).instances.length === 2)
    await crowd([a.url, b.url], 20, 600)
    const admin = redis.client()
    await admin.call('CLIENT', 'PAUSE', '1500', 'ALL')
    const before = inside.runs
    inside.peak = 0
    await crowd([a.url, b.url], 20, 1_300)
    const served = inside.runs - before
    admin.disconnect()
    // Two instances, a limit of 6: 3 each while the store cannot count (the whole limit, not twice it).
    expect(inside.peak).toBeLessThanOrEqual(6)
    expect(served).toBeGreaterThan(30)
  })

  it('session mode: the passes already out count against the quota; a full site lets no newcomer in', {
    timeout: 30_000,
  }, async () => {
    redis = await startRedis()
    const inside = { now: 0, peak: 0, runs: 0, failed: 0 }
    const { url } = await site(redis, 'stall-session', { mode: 'session', limit: 5, recheckInterval: 100 }, inside)
    // Five visitors hold passes; fifteen more wait outside.
    const passes = crowd([url], 5, 3_000)
    await until(() => inside.runs > 10)
    const admin = redis.client()
    await admin.call('CLIENT', 'PAUSE', '1500', 'ALL')
    const newcomers = await crowd([url], 15, 1_300)
    await passes
    admin.disconnect()
    expect(inside.peak).toBeLessThanOrEqual(5)
    expect(newcomers[200] ?? 0).toBe(0)
    expect(newcomers[503]).toBeGreaterThan(0)
  })

  it("'closed' serves nobody while a stall finds the gate with nothing held", { timeout: 30_000 }, async () => {
    redis = await startRedis()
    const inside = { now: 0, peak: 0, runs: 0, failed: 0 }
    const { url } = await site(redis, 'stall-closed', { mode: 'request', limit: 15, onStoreError: 'closed' }, inside)
    const admin = redis.client()
    await admin.call('CLIENT', 'PAUSE', '1500', 'ALL')
    const statuses = await crowd([url], 50, 1_000)
    admin.disconnect()
    expect(inside.runs).toBe(0)
    expect(statuses[503]).toBeGreaterThan(0)
  })

  it("'open' is still there for whoever chooses it: then the crowd goes in", { timeout: 30_000 }, async () => {
    redis = await startRedis()
    const inside = { now: 0, peak: 0, runs: 0, failed: 0 }
    const { url } = await site(
      redis,
      'stall-open',
      { mode: 'request', limit: 5, onStoreError: 'open', reuseWindow: 0 },
      inside,
    )
    const admin = redis.client()
    await admin.call('CLIENT', 'PAUSE', '1000', 'ALL')
    await crowd([url], 20, 800)
    admin.disconnect()
    expect(inside.peak).toBeGreaterThan(5)
  })
})

describe('LocalQuota', () => {
  it('counts store slots and local admits together; while local admits are in flight, a full quota takes no pooled or granted slot', () => {
    let limit = 6
    const quota = new LocalQuota(() => limit, false, 60_000)
    quota.fleet = 2
    expect(quota.quota).toBe(3)
    // A request's slot as the gate makes it: counted in, and out once when its slot is freed.
    const slot = (token: string) => {
      quota.entered()
      const lease = { token, release: async () => true } as unknown as Lease
      return requestSlot(pooledSlot(lease, 0), undefined, () => {}, undefined, quota.left)
    }
    const a = slot('a')
    slot('b')
    const local = quota.admitLocal(0)!
    expect(local).toBeDefined()
    // Three in flight: no more local admits, and (one being local) no pooled or granted slot either.
    expect(quota.admitLocal(0)).toBeUndefined()
    expect(quota.full(0)).toBe(true)
    void a.release()
    void a.release() // counted out once
    expect(quota.full(0)).toBe(false)
    void local.release()
    // No local admit in flight: the store alone decides again, whatever is in flight.
    slot('c')
    slot('d')
    expect(quota.full(0)).toBe(false)
    limit = 1
    expect(quota.quota).toBe(0)
    expect(quota.admitLocal(0)).toBeUndefined()
  })

  it('session mode: the passes given within passTtl count against the quota, and age out after it', () => {
    const quota = new LocalQuota(() => 4, true, 60_000)
    for (let i = 0; i < 4; i++) quota.passGiven(1_000)
    expect(quota.admitLocal(2_000)).toBeUndefined()
    // A passTtl later (and a bucket), those passes cannot be out any more.
    expect(quota.admitLocal(1_000 + 60_000 + 1_000)).toBeDefined()
  })
})

describe("onStoreError: 'local' never reopens a gate the operator holds", () => {
  it('a queue-all gate whose store stalls lets no newcomer in (busy), and a closed one neither', {
    timeout: 30_000,
  }, async () => {
    const redis = await startRedis()
    closers.push(() => redis.stop())
    const store = redisStore({ client: redis.client({ maxRetriesPerRequest: 0 }) })
    closers.push(() => store.close())
    const { airlockControl } = await import('../../src/core/control.js')
    const { createGate } = await import('../../src/gate/gate.js')
    for (const [mode, queue] of [
      ['queue-all', { maxLength: 100 }],
      ['closed', undefined],
    ] as const) {
      const name = `held-${mode}`
      await airlockControl({ name, store }).set({ mode })
      const gate = createGate({
        name,
        store,
        secret: SECRET,
        limit: 5,
        logger: silent,
        storeTimeout: 100,
        ...(queue ? { queue } : {}),
      })
      closers.push(() => gate.close())
      await gate.ready
      expect(gate.control.mode).toBe(mode)
      const admin = redis.client()
      await admin.call('CLIENT', 'PAUSE', '800', 'ALL')
      const kinds = []
      for (let i = 0; i < 3; i++)
        kinds.push(
          (await gate.decide({ method: 'GET', url: '/', headers: {}, secure: false, request: undefined })).kind,
        )
      admin.disconnect()
      expect(kinds).toEqual(['busy', 'busy', 'busy'])
      await sleep(900)
    }
  })
})
