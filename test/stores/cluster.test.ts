/** The same store contract on a real 3-master Redis Cluster: one hash tag keeps a semaphore on one slot. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSemaphore } from '../../src/core/semaphore.js'
import { redisStore } from '../../src/stores/redis.js'
import { redisAvailable, requireRedis, startCluster, type PrivateCluster } from '../helpers/redis.js'
import { storeContract } from './contract.js'
import { startService } from '../lock-server/harness.js'

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

  it('grouped names (group/member) keep their keys on the group slot; the lock service writes under its lock there', async () => {
    const client = cluster.client()
    const store = redisStore({ client })
    const slots = await Promise.all(['g/a', 'g/b'].map((n) => client.cluster('KEYSLOT', store.keys(n)[0]!)))
    expect(slots[0]).toBe(slots[1])
    const svc = await startService({ store })
    try {
      const name = `cluster-${process.pid}`
      await svc.call('POST', '/resource', { json: { name, timeout: 30 } })
      const lock = await svc.call('GET', `/resource/${name}/s`)
      expect(lock.status).toBe(200)
      expect(
        (
          await svc.call('PUT', `/resource/${name}/s`, {
            ticket: lock.headers.get('x-ticket')!,
            json: { on: 'cluster' },
          })
        ).status,
      ).toBe(204)
      expect((await svc.call('GET', `/resource/${name}/s?lock=0`)).body).toEqual({ on: 'cluster' })
    } finally {
      await svc.close()
      await store.close()
    }
  })

  it('spreads different semaphores over the cluster and wakes blocking waiters', async () => {
    const store = redisStore({ client: cluster.client() })
    const names = Array.from({ length: 12 }, (_, i) => `spread-${i}`)
    for (const name of names) {
      const sem = createSemaphore({ name, limit: 1, ttl: 5_000, store, retryInterval: 10_000 })
      const holder = (await sem.acquire())!
      const waiting = sem.acquireBlocking({ timeout: 5_000 })
      await new Promise((r) => setTimeout(r, 50))
      await holder.release()
      expect(await waiting).not.toBeNull()
    }
    await store.close()
  }, 60_000)
})
