import { afterAll, beforeAll, describe } from 'vitest'
import { redisStore, type RedisStore } from '../../src/stores/redis.js'
import { redisAvailable, requireRedis, startRedis, type PrivateRedis } from '../helpers/redis.js'
import { sleep, waitingRoomSuite } from './waiting-room.suite.js'

requireRedis()

describe.runIf(redisAvailable)('redis', () => {
  let redis: PrivateRedis
  let store: RedisStore

  beforeAll(async () => {
    redis = await startRedis()
    store = redisStore({ client: redis.client() })
  })

  afterAll(async () => {
    await store?.close()
    await redis?.stop()
  })

  // Redis keeps time itself (TIME in every script): the tests let real time pass.
  waitingRoomSuite('redis', {
    store: () => store,
    advance: (ms) => sleep(ms),
    realStore: () => store,
  })
})
