/**
 * `airlock-shield/redis`: the Redis store (standalone or Cluster, Redis >= 6.2), on an ioredis
 * client you create and close (`npm install ioredis`).
 * @packageDocumentation
 */
export { isRedisStore, redisStore, RedisStore, type RedisClient, type RedisStoreOptions } from './stores/redis.js'
