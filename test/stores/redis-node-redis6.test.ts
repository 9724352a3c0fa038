/** The Redis store on node-redis 6: the store contract (single server and Cluster) and its failure behaviour (clients.ts). */
import { createClient, createClientPool, createSentinel } from 'redis'
import { expect, it } from 'vitest'
import { redisStore } from '../../src/stores/redis.js'
import { clientSuite } from './clients.js'

clientSuite('node-redis 6')

it('refuses what node-redis makes but the store cannot use, naming it: a Sentinel, a pool, the legacy interface', () => {
  const sentinel = createSentinel({ name: 'mymaster', sentinelRootNodes: [{ host: '127.0.0.1', port: 1 }] })
  expect(() => redisStore({ client: sentinel })).toThrow(/node-redis Sentinel or client pool is not supported/)
  // A pool's type is refused too (it has no duplicate()).
  expect(() => redisStore({ client: createClientPool() as never })).toThrow(
    /node-redis Sentinel or client pool is not supported/,
  )
  expect(() => redisStore({ client: createClient().legacy() as never })).toThrow(
    /client must be an ioredis Redis or Cluster instance .* or a node-redis client/,
  )
})
