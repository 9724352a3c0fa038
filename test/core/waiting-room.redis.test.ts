import { describe } from 'vitest'
import { redisAvailable, requireRedis, usePrivateRedis } from '../helpers/redis.js'
import { sleep, waitingRoomSuite } from './waiting-room.suite.js'

requireRedis()

describe.runIf(redisAvailable)('redis', () => {
  const server = usePrivateRedis()

  // Redis keeps time itself (TIME in every script): the tests let real time pass.
  waitingRoomSuite('redis', {
    store: () => server.store,
    advance: (ms) => sleep(ms),
    realStore: () => server.store,
  })
})
