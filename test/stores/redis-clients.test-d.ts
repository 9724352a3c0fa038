import { Cluster, Redis } from 'ioredis'
import { Redis as Redis6 } from 'ioredis6'
import { Redis as Valkey } from 'iovalkey'
import { createClient, createCluster } from 'redis'
import { createClient as createClient5 } from 'redis5'
import { describe, expectTypeOf, test } from 'vitest'
import { redisStore, type RedisStore } from '../../src/redis.js'
import { redisResources } from '../../src/lock-server.js'

describe('redisStore client types', () => {
  test('takes each client as its library makes it, no cast, and keeps its type on store.client', () => {
    expectTypeOf(redisStore({ client: new Redis() })).toEqualTypeOf<RedisStore<Redis>>()
    expectTypeOf(redisStore({ client: new Cluster([]) }).client).toEqualTypeOf<Cluster>()
    expectTypeOf(redisStore({ client: new Redis6() }).client).toEqualTypeOf<Redis6>()
    expectTypeOf(redisStore({ client: new Valkey() }).client).toEqualTypeOf<Valkey>()
    const node = createClient()
    expectTypeOf(redisStore({ client: node }).client).toEqualTypeOf<typeof node>()
    const nodeCluster = createCluster({ rootNodes: [] })
    expectTypeOf(redisStore({ client: nodeCluster }).client).toEqualTypeOf<typeof nodeCluster>()
    redisStore({ client: createClient5() })
    redisResources({ client: createClient() })
  })

  test('rejects what is not a client', () => {
    // @ts-expect-error a plain object is no client
    redisStore({ client: {} })
    // @ts-expect-error the options object, not the client
    redisStore(new Redis())
  })
})
