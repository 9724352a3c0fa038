/**
 * The lock service on a private Redis: the shared behaviour suite, two service instances sharing
 * one Redis, a full restart (new client, new store, new service) keeping resources and data, the
 * Redis data model, and an outage answered with 503.
 */
import { redisResources } from '../../src/stores/resources.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { redisStore, type RedisStore } from '../../src/stores/redis.js'
import { redisAvailable, requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'
import { lockServerBehaviour } from './behaviour.js'
import { srsExchange } from './srs.js'
import { startService, uniqueName, type Service } from './harness.js'

requireRedis()

describe.runIf(redisAvailable)('lock service on a private Redis', () => {
  let redis: PrivateRedis
  beforeAll(async () => {
    redis = await startRedis()
  })
  afterAll(async () => {
    await redis?.stop()
  })

  lockServerBehaviour('redis', async () => {
    const store = redisStore({ client: redis.client() })
    return { store, close: () => store.close() }
  })

  srsExchange('redis', async () => {
    const store = redisStore({ client: redis.client() })
    return { store, close: () => store.close() }
  })

  describe('instances sharing one Redis', () => {
    let stores: RedisStore[]
    let one: Service
    let two: Service
    beforeAll(async () => {
      stores = [redisStore({ client: redis.client() }), redisStore({ client: redis.client() })]
      one = await startService({ store: stores[0]! })
      two = await startService({ store: stores[1]! })
    })
    afterAll(async () => {
      await one?.close()
      await two?.close()
      for (const s of stores ?? []) await s.close()
    })

    it('see the same resources, locks, tickets and data', async () => {
      const name = uniqueName('shop')
      expect((await one.call('POST', '/resource', { json: { name, timeout: 30 } })).status).toBe(201)
      expect((await two.call('POST', '/resource', { json: { name, timeout: 30 } })).status).toBe(200) // already there
      const path = `/resource/${name}/inventory`
      const a = await one.call('GET', path)
      expect(a.status).toBe(200)
      const ta = a.headers.get('x-ticket')!
      const b = await two.call('GET', path)
      expect(b.status).toBe(202)
      const tb = b.headers.get('x-ticket')!
      expect((await two.call('PUT', path, { ticket: tb, json: 'nope' })).status).toBe(409)
      // A's ticket works on either instance.
      expect((await two.call('PUT', path, { ticket: ta, json: { qty: 1 } })).status).toBe(204)
      expect((await one.call('POST', `${path}/unlock`, { ticket: ta })).status).toBe(200)
      const b2 = await one.call('GET', path, { ticket: tb })
      expect(b2.status).toBe(200)
      expect(b2.body).toEqual({ qty: 1 })
      expect((await two.call('POST', `${path}/unlock`, { ticket: tb })).status).toBe(200)
      expect((await two.call('DELETE', `/resource/${name}`)).status).toBe(204)
      expect((await one.call('GET', `/resource/${name}`)).status).toBe(404)
    })
  })

  it('a restart (new client, store and service) keeps resources and data; they are stored without expiry', async () => {
    const name = uniqueName('durable')
    const path = `/resource/${name}/s`
    let store = redisStore({ client: redis.client() })
    let svc = await startService({ store })
    await svc.call('POST', '/resource', { json: { name, timeout: 45 } })
    const ticket = (await svc.call('GET', path)).headers.get('x-ticket')!
    await svc.call('PUT', `${path}?unlock=1`, { ticket, json: { survives: 'restart' } })
    await svc.close()
    await store.close()
    store.client.disconnect()

    store = redisStore({ client: redis.client() })
    svc = await startService({ store })
    try {
      expect((await svc.call('GET', `/resource/${name}`)).body).toEqual({ name, timeout: 45 })
      expect((await svc.call('GET', `${path}?lock=0`)).body).toEqual({ survives: 'restart' })
      const probe = redis.client()
      const [def, data] = redisResources({ client: probe }).keys(name)
      expect(await probe.hgetall(def)).toEqual({ name, timeout: '45' })
      expect(await probe.hget(data, 's')).toBe('{"survives":"restart"}')
      expect(await probe.ttl(def)).toBe(-1)
      expect(await probe.ttl(data)).toBe(-1)
    } finally {
      await svc.close()
      await store.close()
    }
  })

  it('answers 503 with Retry-After while Redis is down, and recovers', async () => {
    const own = await startRedis()
    const client = own.client({ maxRetriesPerRequest: 0, retryStrategy: () => 100 })
    const store = redisStore({ client, commandTimeout: 300 })
    const svc = await startService({ store })
    try {
      const name = uniqueName('outage')
      expect((await svc.call('POST', '/resource', { json: { name } })).status).toBe(201)
      await own.kill()
      const started = Date.now()
      const down = await svc.call('GET', `/resource/${name}/s`)
      expect(down.status).toBe(503)
      expect(down.headers.get('retry-after')).toBe('1')
      expect((down.body as { message: string }).message).toMatch(/store is unavailable/)
      expect(Date.now() - started).toBeLessThan(5_000) // the store's budget, not a hang
      await own.start()
      // The private server keeps nothing across restarts; the service answers again.
      let status = 0
      for (let i = 0; i < 50 && status !== 404; i++) {
        status = (await svc.call('GET', `/resource/${name}`)).status
        if (status !== 404) await new Promise((r) => setTimeout(r, 100))
      }
      expect(status).toBe(404)
    } finally {
      await svc.close()
      await store.close()
      await own.stop()
    }
  })
})
