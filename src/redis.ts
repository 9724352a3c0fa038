/**
 * `airlock-shield/redis`: the Redis store (standalone or Cluster, Redis >= 6.2, Valkey), on the
 * client you already have and close yourself: ioredis 5 or 6 (`npm install ioredis`), iovalkey, or
 * node-redis 5 or 6 (`npm install redis`). The store loads none of them: it tells yours by its shape.
 * @packageDocumentation
 */
export {
  isRedisStore,
  redisStore,
  RedisStore,
  type IoRedisClient,
  type NodeRedisClient,
  type RedisClient,
  type RedisStoreOptions,
} from './stores/redis.js'
