/**
 * The Redis store on one client library (test/helpers/redis-clients.ts): the store contract on a
 * private server and on a private 3-master Cluster (started once per file), and the client's
 * failure behaviour: a stalled or stopped server answered within the budget, what stalled calls
 * took freed once it answers, a restart noticed, pub/sub after an outage, the lock service's
 * storage. One test file per client, so vitest runs them side by side.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { redisStore, type RedisStore } from '../../src/stores/redis.js'
import { redisResources } from '../../src/stores/resources.js'
import { clientKind, type ClientName } from '../helpers/redis-clients.js'
import {
  redisAvailable,
  requireRedis,
  startCluster,
  startRedis,
  type PrivateCluster,
  type PrivateRedis,
} from '../helpers/redis.js'
import { sleep, until } from '../helpers/wait.js'
import { storeContract } from './contract.js'

const slot = (token: string) => ({ token, limit: 1, ttl: 5_000, weight: 1 })

export function clientSuite(name: ClientName): void {
  requireRedis()
  const kind = clientKind(name)

  describe.runIf(redisAvailable)(`redis store on ${name}`, () => {
    let redis: PrivateRedis
    let cluster: PrivateCluster
    const stores: RedisStore[] = []
    const own: PrivateRedis[] = []
    /** A store on a new client of `server` (the file's server by default), closed after the file. */
    const store = async (server?: PrivateRedis, options: { commandTimeout?: number } = {}): Promise<RedisStore> => {
      const s = redisStore({ client: await kind.single((server ?? redis).port), ...options })
      stores.push(s)
      return s
    }
    /** A private server of one test's own, stopped after the file. */
    const server = async (): Promise<PrivateRedis> => {
      const r = await startRedis()
      own.push(r)
      return r
    }
    beforeAll(async () => {
      redis = await startRedis()
      cluster = await startCluster()
    }, 60_000)
    afterAll(async () => {
      for (const s of stores) await s.close()
      await kind.close()
      for (const r of own) await r.stop()
      await cluster?.stop()
      await redis?.stop()
    })

    // A budget well above the contract's bursts (2,500 scripts at once take about a second of the
    // server's time on a 2-core box, several seconds with other suites running beside, whichever
    // client sends them): the contract checks decisions; the budget is checked below.
    const commandTimeout = 15_000
    storeContract(name, async () => {
      const s = redisStore({ client: await kind.single(redis.port), commandTimeout })
      return { store: s, close: () => s.close() }
    })

    storeContract(`${name} Cluster`, async () => {
      const s = redisStore({ client: await kind.cluster(cluster.ports), commandTimeout })
      return { store: s, close: () => s.close() }
    })

    it('spreads semaphores over the Cluster and wakes blocking waiters on each (pub/sub)', async () => {
      const s = redisStore({ client: await kind.cluster(cluster.ports) })
      stores.push(s)
      for (let i = 0; i < 6; i++) {
        const heard: string[] = []
        const stop = await s.subscribe(`spread-${i}`, (t) => heard.push(t))
        expect((await s.acquire(`spread-${i}`, slot('a'))).status).toBe('acquired')
        const line = { order: 'fifo' as const, idleTimeout: 5_000, claimWindow: 5_000, maxLength: 0 }
        expect((await s.acquire(`spread-${i}`, { ...slot('w'), queue: line })).status).toBe('queued')
        await s.release(`spread-${i}`, 'a')
        await until(() => heard.length > 0, 5_000)
        expect(heard).toEqual(['w'])
        stop()
      }
    })

    it('survives SCRIPT FLUSH (EVALSHA falls back to EVAL)', async () => {
      const s = await store()
      const admin = redis.client()
      expect((await s.acquire('flush', slot('a'))).status).toBe('acquired')
      await admin.script('FLUSH')
      expect(await s.release('flush', 'a')).toBe(true)
      expect((await s.acquire('flush', slot('b'))).status).toBe('acquired')
    })

    it('keeps the lock service storage (definitions, data, writes under the lock, delete) on the same client', async () => {
      const s = await store()
      const resources = redisResources({ client: s.client })
      expect(await resources.define('doc', { timeout: 30 })).toBe(true)
      expect(await resources.define('doc', { timeout: 30 })).toBe(false)
      expect(await resources.get('doc')).toEqual({ timeout: 30 })
      expect((await s.acquire('lock.doc', slot('holder'))).status).toBe('acquired')
      expect(await resources.write('doc', 'sel', '{"n":1}', { semaphore: 'lock.doc', ticket: 'holder' })).toBe(
        'written',
      )
      expect(await resources.write('doc', 'sel', '{"n":2}', { semaphore: 'lock.doc', ticket: 'other' })).toBe(
        'not-holder',
      )
      expect(await resources.read('doc', 'sel')).toBe('{"n":1}')
      expect(await resources.delete('doc')).toBe(true)
      expect(await resources.delete('doc')).toBe(false)
      expect(await resources.get('doc')).toBeNull()
    })

    it('replicas: 1 grants a slot once a replica holds it; with the replica gone, nothing is granted (WAIT)', async () => {
      const primary = await server()
      const replica = await startRedis(['--replicaof', '127.0.0.1', String(primary.port)])
      own.push(replica)
      const admin = replica.client()
      await until(async () => /master_link_status:up/.test(await admin.info('replication')))
      const s = redisStore({ client: await kind.single(primary.port), replicas: 1, replicaTimeout: 500 })
      stores.push(s)
      // On a busy host the acknowledgement can miss the budget (then nothing is granted, as it should be).
      let n = 0
      await until(
        async () => (await s.acquire('acked', { ...slot(`a${++n}`), limit: 5 })).status === 'acquired',
        10_000,
      )
      expect(Number(await admin.hget('{airlock:acked}:m', '#used'))).toBe(1)
      await replica.kill()
      expect((await s.acquire('acked', { ...slot('b'), limit: 5 })).status).toBe('busy')
      await until(async () => (await s.state('acked')).held === 1, 2_000)
    })

    it('a stalled server (SIGSTOP): calls are answered within commandTimeout, and what they took is freed once it answers', async () => {
      const r = await server()
      const s = await store(r, { commandTimeout: 300 })
      const observer = await store(r)
      expect((await s.acquire('stall', { ...slot('kept'), limit: 5 })).status).toBe('acquired')
      r.signal('SIGSTOP')
      try {
        const started = Date.now()
        const calls = Array.from({ length: 4 }, (_, i) =>
          s.acquire('stall', { ...slot(`lost-${i}`), limit: 5, fresh: true }),
        )
        const outcomes = await Promise.allSettled(calls)
        expect(
          outcomes.map((o) => (o.status === 'rejected' ? (o.reason as { code?: string }).code : 'answered')),
        ).toEqual(Array(4).fill('ERR_AIRLOCK_STORE_UNAVAILABLE'))
        expect(Date.now() - started).toBeLessThan(300 + 200) // within the budget (+ event-loop slack)
      } finally {
        r.signal('SIGCONT')
      }
      // The stalled scripts ran once the server resumed; their slots belong to nobody and are given back.
      await until(async () => (await observer.state('stall')).held === 1 && s.pendingCleanups === 0, 10_000)
    })

    it('a stopped server: calls reject within commandTimeout; back up, the store recovers, notices the restart, and pub/sub works again', async () => {
      const r = await server()
      const s = await store(r, { commandTimeout: 300 })
      expect((await s.acquire('down', slot('a'))).status).toBe('acquired')
      await until(async () => (await s.state('down')).held === 1) // and the server seen (INFO)
      expect(s.lostAt()).toBeUndefined()
      await r.kill()
      for (const call of [
        () => s.acquire('down', slot('b')),
        () => s.release('down', 'a'),
        () => s.subscribe('down', () => {}),
      ]) {
        const started = Date.now()
        await expect(call()).rejects.toMatchObject({ code: 'ERR_AIRLOCK_STORE_UNAVAILABLE' })
        expect(Date.now() - started).toBeLessThan(300 + 200)
      }
      await r.start()
      await until(
        async () => (await s.acquire('down', slot('c')).catch(() => ({ status: 'failed' }))).status !== 'failed',
        15_000,
        100,
      )
      // A new server (run_id) answered: the store says the last writes may be lost.
      expect(s.lostAt()).toBeGreaterThan(0)
      const heard: string[] = []
      let stop: (() => void) | undefined
      await until(
        async () => (stop = await s.subscribe('down', (t) => heard.push(t)).catch(() => undefined)) !== undefined,
        10_000,
        100,
      )
      const publisher = r.client()
      await publisher.publish(s.channel('down'), 'w1')
      await until(() => heard.length > 0, 5_000)
      await sleep(100)
      expect(heard).toEqual(['w1']) // once: the failed subscribe left no second delivery behind
      stop?.()
    }, 40_000)
  })
}
