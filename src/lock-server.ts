/**
 * `airlock-shield/lock-server`: the HTTP lock service (the Small Resource Server API) on Fastify
 * (`npm install fastify`), with resource storage in memory or on Redis.
 * @packageDocumentation
 */
export { createLockServer, type LockServerOptions } from './lock-server/server.js'
export { KEY_ENV, type ApiKeys, type KeyList } from './lock-server/keys.js'
export type { LockQueueOptions } from './lock-server/locks.js'
export {
  memoryResources,
  MemoryResources,
  redisResources,
  RedisResources,
  type RedisResourcesOptions,
  type ResourceDefinition,
  type ResourceStorage,
} from './stores/resources.js'
