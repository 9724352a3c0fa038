/** The waiting room's behaviour (waiting-room.suite.ts) on a Redis store whose client is node-redis. */
import { afterAll, beforeAll, describe } from 'vitest'
import { redisStore, type RedisStore } from '../../src/stores/redis.js'
import { redisAvailable, requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'
import { clientKind } from '../helpers/redis-clients.js'
import { sleep, waitingRoomSuite } from './waiting-room.suite.js'

requireRedis()

describe.runIf(redisAvailable)('redis (node-redis)', () => {
  const kind = clientKind('node-redis 6')
  let redis: PrivateRedis | undefined
  let store: RedisStore | undefined
  beforeAll(async () => {
    redis = await startRedis()
    store = redisStore({ client: await kind.single(redis.port) })
  })
  afterAll(async () => {
    await store?.close()
    await kind.close()
    await redis?.stop()
  })
  const get = (): RedisStore => {
    if (!store) throw new Error('read the store inside a test')
    return store
  }

  // Redis keeps time itself (TIME in every script): the tests let real time pass.
  waitingRoomSuite('redis (node-redis)', { store: get, advance: (ms) => sleep(ms), realStore: get })
})
