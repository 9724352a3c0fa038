import { describe, expect, it, beforeAll, afterAll } from 'vitest'
import { redisStore } from '../../src/stores/redis.js'
import { LEFT_KEEP_MS } from '../../src/stores/types.js'
import { startRedis, requireRedis, redisAvailable, type PrivateRedis } from '../helpers/redis.js'
import { storeContract } from './contract.js'
import { until } from '../helpers/wait.js'

requireRedis()

describe.runIf(redisAvailable)('redis store', () => {
  let redis: PrivateRedis
  beforeAll(async () => {
    redis = await startRedis()
  })
  afterAll(async () => {
    await redis?.stop()
  })

  storeContract('redis', async () => {
    const store = redisStore({ client: redis.client() })
    return { store, close: () => store.close() }
  })

  it('keeps every key of a semaphore under one hash tag, each with an expiry', async () => {
    const client = redis.client()
    const store = redisStore({ client, prefix: 'tagcheck' })
    await store.acquire('s1', { token: 'a', limit: 1, ttl: 5_000, weight: 1 })
    await store.acquire('s1', {
      token: 'b',
      limit: 1,
      ttl: 5_000,
      weight: 1,
      queue: { order: 'fifo', idleTimeout: 5_000, claimWindow: 1_000, maxLength: 0 },
    })
    await store.release('s1', 'a')
    const keys = await client.keys('*tagcheck*')
    expect(keys.length).toBeGreaterThan(3)
    for (const key of keys) {
      expect(key.startsWith('{tagcheck:s1}:')).toBe(true)
      expect(await client.pttl(key), key).toBeGreaterThan(0)
    }
    await store.close()
  })

  it('marks a token that left the line under the same hash tag, for LEFT_KEEP_MS at most (issue 27)', async () => {
    const client = redis.client()
    const store = redisStore({ client, prefix: 'leftmark' })
    const line = { order: 'fifo' as const, idleTimeout: 5_000, claimWindow: 1_000, maxLength: 0 }
    await store.acquire('s', { token: 'holder', limit: 1, ttl: 5_000, weight: 1 })
    await store.acquire('s', { token: 'w', limit: 1, ttl: 5_000, weight: 1, queue: line })
    expect(await store.leave('s', 'w', true)).toBe(true)
    expect(await store.leave('s', 'holder', true)).toBe(false) // holds a slot: no mark
    expect(await client.zrange('{leftmark:s}:lt', 0, -1)).toEqual(['w'])
    const ttl = await client.pttl('{leftmark:s}:lt')
    expect(ttl).toBeGreaterThan(0)
    expect(ttl).toBeLessThanOrEqual(LEFT_KEEP_MS)
    expect((await store.acquire('s', { token: 'w', limit: 1, ttl: 5_000, weight: 1, queue: line })).status).toBe(
      'absent',
    )
    await store.close()
  })

  it('gives every line key an expiry, reservations included, also when a plain acquire settles the line', async () => {
    const client = redis.client()
    const store = redisStore({ client, prefix: 'linekeys' })
    const line = { order: 'fifo' as const, idleTimeout: 5_000, claimWindow: 1_000, maxLength: 0 }
    await store.acquire('s', { token: 'holder', limit: 1, ttl: 5_000, weight: 1 })
    await store.acquire('s', { token: 'w', limit: 1, ttl: 5_000, weight: 1, queue: line })
    await store.release('s', 'holder')
    // A plain acquire finds the line, settles it (reserving room for `w`) and answers busy.
    expect((await store.acquire('s', { token: 'plain', limit: 1, ttl: 5_000, weight: 1 })).status).toBe('busy')
    expect(await client.zscore('{linekeys:s}:r', 'w')).not.toBeNull()
    for (const key of await client.keys('{linekeys:s}:*')) {
      expect(await client.pttl(key), key).toBeGreaterThan(0)
    }
    await store.close()
  })

  it('keeps the fence counter 30 days past its last use, so fences never restart while in use', async () => {
    const client = redis.client()
    const store = redisStore({ client, prefix: 'fence' })
    const take = async (token: string) => {
      const r = await store.acquire('s', { token, limit: 5, ttl: 5_000, weight: 1 })
      if (r.status !== 'acquired') throw new Error('expected a slot')
      await store.release('s', token)
      return r.fence
    }
    const [seconds] = await client.time()
    const first = await take('a')
    // A new counter starts from the server clock (ms x 1000), not from 1.
    expect(first).toBeGreaterThanOrEqual(Number(seconds) * 1_000_000)
    expect(Number.isSafeInteger(first)).toBe(true)
    await client.pexpire('{fence:s}:f', 5_000) // as if most of its 30 days had passed since
    // Above the last one: one more within the same ms, else the clock (x 1000) again.
    expect(await take('b')).toBeGreaterThan(first)
    expect(await client.pttl('{fence:s}:f')).toBeGreaterThan(29 * 24 * 3600 * 1000)
    await store.close()
  })

  it('keeps fences increasing across a restart that lost every key (no persistence)', async () => {
    const own = await startRedis()
    const client = own.client({ maxRetriesPerRequest: 20 })
    const store = redisStore({ client, prefix: 'lost', commandTimeout: 5_000 })
    try {
      const fences: number[] = []
      const take = async () => {
        const r = await store.acquire('s', { token: `t${fences.length}`, limit: 100, ttl: 60_000, weight: 1 })
        if (r.status !== 'acquired') throw new Error('expected a slot')
        fences.push(r.fence)
      }
      for (let i = 0; i < 50; i++) await take()
      await own.kill()
      await own.start()
      await until(async () => (await client.dbsize().catch(() => -1)) === 0, 10_000)
      await take()
      for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]!)
    } finally {
      await store.close()
      await own.stop()
    }
  })

  it('leaves nothing but the fence counter and the server it was granted on once a semaphore is idle', async () => {
    const client = redis.client()
    const store = redisStore({ client, prefix: 'idle' })
    const r = await store.acquire('s', { token: 'a', limit: 1, ttl: 5_000, weight: 1 })
    expect(r.status).toBe('acquired')
    await store.release('s', 'a')
    await store.state('s')
    const keys = (await client.keys('{idle:s}:*')).sort()
    expect(keys).toEqual(['{idle:s}:e', '{idle:s}:f', '{idle:s}:x'])
    expect(await client.pttl('{idle:s}:f')).toBeGreaterThan(29 * 24 * 3600 * 1000)
    expect(await client.pttl('{idle:s}:e')).toBeGreaterThan(29 * 24 * 3600 * 1000)
    await store.close()
  })

  it('takes every decision in one round trip: one script call per store call (MONITOR)', async () => {
    const client = redis.client()
    const store = redisStore({ client, prefix: 'trips' })
    const line = { order: 'fifo' as const, idleTimeout: 5_000, claimWindow: 5_000, maxLength: 0 }
    await store.state('s') // loads nothing yet, but connects
    const seen: string[] = []
    const monitor = await redis.client().monitor()
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (!String(source).includes('lua') && args[0]?.toLowerCase() !== 'monitor') seen.push(args[0]!.toLowerCase())
    })
    const calls: [string, () => Promise<unknown>][] = [
      ['acquire', () => store.acquire('s', { token: 'a', limit: 1, ttl: 5_000, weight: 1 })],
      ['acquire in line', () => store.acquire('s', { token: 'w', limit: 1, ttl: 5_000, weight: 1, queue: line })],
      ['refresh', () => store.refresh('s', 'a', 5_000)],
      ['leaseState', () => store.leaseState('s', 'a')],
      ['state', () => store.state('s')],
      ['leave', () => store.leave('s', 'w')],
      ['release', () => store.release('s', 'a')],
      ['forceReleaseAll', () => store.forceReleaseAll('s')],
    ]
    const counts: Record<string, number> = {}
    for (const [what, call] of calls) {
      seen.length = 0
      await call()
      await new Promise((r) => setTimeout(r, 50)) // MONITOR lines arrive after the reply
      counts[what] = seen.filter((c) => c === 'evalsha' || c === 'eval').length
      expect(
        seen.filter((c) => c !== 'evalsha' && c !== 'eval'),
        what,
      ).toEqual([])
    }
    expect(counts).toEqual(Object.fromEntries(calls.map(([what]) => [what, 1])))
    monitor.disconnect()
    await store.close()
  })

  it('survives SCRIPT FLUSH (EVALSHA falls back to EVAL)', async () => {
    const client = redis.client()
    const store = redisStore({ client })
    expect((await store.acquire('flush', { token: 'a', limit: 2, ttl: 5_000, weight: 1 })).status).toBe('acquired')
    await client.script('FLUSH')
    expect((await store.acquire('flush', { token: 'b', limit: 2, ttl: 5_000, weight: 1 })).status).toBe('acquired')
    expect(await store.release('flush', 'a')).toBe(true)
    await store.close()
  })

  it('uses the server clock: a client clock hours off changes nothing', async () => {
    const store = redisStore({ client: redis.client() })
    const realNow = Date.now
    try {
      Date.now = () => realNow() + 3 * 3600_000
      const a = await store.acquire('skew', { token: 'a', limit: 1, ttl: 2_000, weight: 1 })
      if (a.status !== 'acquired') throw new Error('expected a slot')
      expect(Math.abs(a.expiresAt - realNow() - 2_000)).toBeLessThan(1_000)
      // Refreshing from a clock hours ahead extends by server time: the slot cannot be kept for hours.
      const r = await store.refresh('skew', 'a', 2_000)
      if (!r.ok) throw new Error('expected a refresh')
      expect(Math.abs(r.expiresAt - realNow() - 2_000)).toBeLessThan(1_000)
      Date.now = () => realNow() - 3 * 3600_000
      expect((await store.acquire('skew', { token: 'b', limit: 1, ttl: 2_000, weight: 1 })).status).toBe('busy')
      // And it ends on time: a client hours behind (its slot looks fresh to it) cannot refresh a slot
      // the server let expire.
      Date.now = () => realNow() - 3 * 3600_000
      await new Promise((resolve) => setTimeout(resolve, 2_300))
      expect(await store.refresh('skew', 'a', 2_000)).toEqual({ ok: false })
      expect((await store.acquire('skew', { token: 'b', limit: 1, ttl: 2_000, weight: 1 })).status).toBe('acquired')
    } finally {
      Date.now = realNow
    }
    await store.close()
  })

  it('rejects with ERR_AIRLOCK_STORE_UNAVAILABLE within commandTimeout when Redis is down', async () => {
    const down = await startRedis()
    const client = down.client({ enableOfflineQueue: true, maxRetriesPerRequest: null })
    const store = redisStore({ client, commandTimeout: 300 })
    expect((await store.acquire('down', { token: 'a', limit: 1, ttl: 5_000, weight: 1 })).status).toBe('acquired')
    await down.kill()
    for (const call of [
      () => store.acquire('down', { token: 'b', limit: 1, ttl: 5_000, weight: 1 }),
      () => store.refresh('down', 'a', 1_000),
      () => store.release('down', 'a'),
      () => store.leaseState('down', 'a'),
    ]) {
      const started = Date.now()
      await expect(call()).rejects.toMatchObject({ code: 'ERR_AIRLOCK_STORE_UNAVAILABLE' })
      expect(Date.now() - started).toBeLessThan(300 + 100) // within commandTimeout (+ event-loop slack)
    }
    // Back up: the same store recovers by itself (the server lost its data, as a restart does).
    await down.start()
    let status = ''
    for (let i = 0; i < 100 && status !== 'acquired'; i++) {
      status = await store
        .acquire('down', { token: 'c', limit: 1, ttl: 5_000, weight: 1 })
        .then((r) => r.status)
        .catch(() => '')
      if (status !== 'acquired') await new Promise((r) => setTimeout(r, 100))
    }
    expect(status).toBe('acquired')
    await store.close()
    await down.stop()
  })

  it('a subscribe that failed while Redis was down is retried later, and leaves no listener behind', async () => {
    const down = await startRedis()
    const client = down.client({ enableOfflineQueue: true, maxRetriesPerRequest: null })
    const store = redisStore({ client, commandTimeout: 300 })
    await store.state('wake') // connected once
    await down.kill()
    const heard: string[] = []
    await expect(store.subscribe('wake', (t) => heard.push(`failed:${t}`))).rejects.toMatchObject({
      code: 'ERR_AIRLOCK_STORE_UNAVAILABLE',
    })
    await down.start()
    let unsubscribe: (() => void) | undefined
    for (let i = 0; i < 100 && !unsubscribe; i++) {
      unsubscribe = await store
        .subscribe('wake', (t) => heard.push(t))
        .catch(async () => {
          await new Promise((r) => setTimeout(r, 100))
          return undefined
        })
    }
    expect(unsubscribe).toBeDefined()
    const publisher = down.client()
    await publisher.publish(store.channel('wake'), 'w1')
    for (let i = 0; i < 50 && heard.length === 0; i++) await new Promise((r) => setTimeout(r, 20))
    expect(heard).toEqual(['w1']) // delivered once: the failed subscription left no listener
    unsubscribe!()
    await store.close()
    await down.stop()
  })

  it('names a wrong client in the error', () => {
    expect(() => redisStore({ client: {} as never })).toThrow(/client must be an ioredis Redis or Cluster instance/)
    expect(() => redisStore({ client: redis.client(), commandTimeout: 0 })).toThrow(
      /commandTimeout must be a positive number of milliseconds or a duration such as '60s', '5m' or '250ms', got 0/,
    )
  })
})
