/**
 * A Redis Cluster replica taking over a shard that lacks the last writes (issue 22): 3 masters and
 * their 3 replicas on loopback. The replica of the semaphore's shard loses its replication link
 * (and cannot get it back: the master now asks for a password it does not have), 10 more slots are
 * taken on the master, then the replica takes over (`CLUSTER FAILOVER TAKEOVER`). The client's
 * connections are kept (ioredis follows the MOVED answers), so no new INFO is read: the store's
 * scripts notice it themselves, from the server's replication id.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { createSemaphore } from '../../src/core/semaphore.js'
import type { Lease } from '../../src/core/lease.js'
import { redisStore } from '../../src/stores/redis.js'
import { requireRedis, startCluster, type PrivateCluster } from '../helpers/redis.js'
import { sleep, until } from '../helpers/wait.js'

requireRedis()

describe('Redis Cluster: a replica takes over a shard that lacks the last writes', () => {
  let cluster: PrivateCluster | undefined
  afterEach(async () => {
    await cluster?.stop()
  })

  it('grants nothing new for a ttl, never more than the limit held, fences unique and increasing', {
    timeout: 90_000,
  }, async () => {
    cluster = await startCluster({ replicas: 1 })
    const client = cluster.client()
    const store = redisStore({ client, prefix: 'takeover' })
    const sem = createSemaphore({ name: 'shard', limit: 20, ttl: 1500, store })
    const admins = cluster.nodes.map((n) => n.client())
    /**
     * The shard of the semaphore's keys, found from the data once the first slots are taken (on a
     * busy box the cluster may still be settling when it starts: a topology read before could name
     * another shard's replica): its master holds the keys; its replica names that master's port.
     */
    const shard = async () => {
      const nodes = await Promise.all(
        admins.map(async (a) => ({
          a,
          info: await a.info('replication'),
          port: Number(a.options.port),
          has: await a.exists('{takeover:shard}:e').catch(() => 0),
        })),
      )
      const master = nodes.find((n) => /role:master/.test(n.info) && n.has === 1)!
      const replica = nodes.find(
        (n) => /role:slave/.test(n.info) && Number(/master_port:(\d+)/.exec(n.info)?.[1]) === master.port,
      )!
      return { master: master.a, replica: replica.a }
    }
    const held = new Set<Lease>()
    const fences: number[] = []
    let peak = 0
    const sample = setInterval(() => (peak = Math.max(peak, held.size)), 20)
    const refresh = setInterval(() => {
      for (const l of held)
        void l.refresh().then(
          (ok) => ok || held.delete(l),
          () => {},
        )
    }, 400)
    try {
      const take = async (n: number) => {
        let got = 0
        for (let i = 0; i < n; i++) {
          const lease = await sem.acquire().catch(() => null)
          if (lease) {
            got++
            held.add(lease)
            fences.push(lease.fence)
          }
        }
        return got
      }
      expect(await take(10)).toBe(10)
      const { master, replica } = await shard()
      await until(async () => /master_link_status:up/.test(await replica.info('replication')), 20_000)
      // Replicated: WAIT for the replica's acknowledgement, not a sleep.
      expect(await master.call('WAIT', '1', '10000')).toBe(1)
      // The replica loses its link for good, then 10 more slots are taken on the master.
      await master.config('SET', 'requirepass', 'a-password-the-replica-lacks')
      await replica.call('CLIENT', 'KILL', 'TYPE', 'master')
      expect(await take(10)).toBe(10)
      // The replica takes the shard over without the master's agreement.
      await replica.cluster('FAILOVER', 'TAKEOVER')
      await until(async () => /role:master/.test(await replica.info('replication')), 10_000)
      // Before: the new master counted 10 and granted 10 more at once (30 for a limit of 20).
      await sleep(200)
      expect(await take(10)).toBe(0)
      // The holders whose slots the new master never had learn it at their refresh; after a ttl
      // it grants again, up to the limit.
      await sleep(1_600)
      await until(async () => (await take(1)) === 1, 5_000)
      await take(20)
      await sleep(500)
      expect(Math.max(peak, held.size)).toBeLessThanOrEqual(20)
      // Back to full capacity: the 10 the new master had, and 10 new ones in place of those it lacked.
      await take(20)
      expect(held.size).toBe(20)
      expect(new Set(fences).size).toBe(fences.length)
      for (let i = 1; i < fences.length; i++) expect(fences[i]!).toBeGreaterThan(fences[i - 1]!)
    } finally {
      clearInterval(sample)
      clearInterval(refresh)
      for (const a of admins) a.disconnect()
      await store.close()
    }
  })
})
