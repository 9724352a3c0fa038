/**
 * The shipped contract suite (`airlock-shield/testing`) run against a custom store written as an
 * example (examples/custom-store.ts), on memory and on a private Redis: what docs/stores.md tells
 * custom-store authors to do.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { storeContract } from '../../src/testing/index.js'
import { memoryStore } from '../../src/stores/memory.js'
import { redisStore } from '../../src/stores/redis.js'
import { createSemaphore } from '../../src/core/semaphore.js'
import { tenantStore } from '../../examples/custom-store.js'
import { redisAvailable, requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'

requireRedis()
const api = { describe, it, expect, beforeAll, afterAll }

storeContract(api, 'tenant store on memory', async () => {
  const inner = memoryStore()
  return { store: tenantStore(inner, 'acme'), close: () => inner.close() }
})

describe.runIf(redisAvailable)('on Redis', () => {
  let redis: PrivateRedis
  beforeAll(async () => {
    redis = await startRedis()
  })
  afterAll(async () => {
    await redis?.stop()
  })
  storeContract(api, 'tenant store on redis', async () => {
    const inner = redisStore({ client: redis.client() })
    return { store: tenantStore(inner, 'acme'), close: () => inner.close() }
  })
})

describe('tenant store', () => {
  it('keeps tenants apart: the same name is two semaphores', async () => {
    const shared = memoryStore()
    const a = createSemaphore({ name: 'reports', limit: 1, ttl: 10_000, store: tenantStore(shared, 'acme') })
    const b = createSemaphore({ name: 'reports', limit: 1, ttl: 10_000, store: tenantStore(shared, 'globex') })
    expect(await a.acquire()).not.toBeNull()
    expect(await b.acquire()).not.toBeNull()
    expect(await a.acquire()).toBeNull()
  })
})
