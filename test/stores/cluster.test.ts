/** The same store contract on a real 3-master Redis Cluster: one hash tag keeps a semaphore on one slot. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSemaphore } from '../../src/core/semaphore.js'
import { redisStore } from '../../src/stores/redis.js'
import { redisAvailable, requireRedis, startCluster, type PrivateCluster } from '../helpers/redis.js'
import { storeContract } from './contract.js'

requireRedis()

describe.runIf(redisAvailable)('redis store on Redis Cluster', () => {
  let cluster: PrivateCluster
  beforeAll(async () => {
    cluster = await startCluster()
  }, 60_000)
  afterAll(async () => {
    await cluster?.stop()
  })

  storeContract('redis-cluster', async () => {
    const store = redisStore({ client: cluster.client() })
    return { store, close: () => store.close() }
  })

  it('spreads different semaphores over the cluster and wakes blocking waiters', async () => {
    const store = redisStore({ client: cluster.client() })
    const names = Array.from({ length: 12 }, (_, i) => `spread-${i}`)
    for (const name of names) {
      const sem = createSemaphore({ name, limit: 1, ttl: 5_000, store, pollInterval: 10_000 })
      const holder = (await sem.acquire())!
      const waiting = sem.acquireBlocking({ timeout: 5_000 })
      await new Promise((r) => setTimeout(r, 50))
      await holder.release()
      expect(await waiting).not.toBeNull()
    }
    await store.close()
  }, 60_000)
})
