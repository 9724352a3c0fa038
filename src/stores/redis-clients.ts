/**
 * Which client a `client` option is, by its shape: no `instanceof` (the user's copy of a client
 * package is not one this package could import, and it imports none), no loading.
 */
import { optionError } from '../base/errors.js'
import { received } from '../base/validate.js'
import type { RedisClientLike } from './redis-client.js'
import { IoRedisAdapter } from './redis-ioredis.js'
import { NodeRedisAdapter } from './redis-node.js'

/** One adapter per user client, shared by its stores and resource storages. */
const adapters = new WeakMap<object, RedisClientLike>()

/**
 * The adapter for a `client` option: an ioredis (5, 6) or iovalkey `Redis`/`Cluster`, or a
 * node-redis (5, 6) client or cluster (an adapter is returned as it is). Throws
 * `ERR_AIRLOCK_OPTION` naming what it got otherwise.
 */
export function redisClientLike(value: unknown): RedisClientLike {
  if (value instanceof IoRedisAdapter || value instanceof NodeRedisAdapter) return value // adapted already
  if (value === null || typeof value !== 'object') return wrongClient(value)
  let adapter = adapters.get(value)
  if (!adapter) {
    adapter = detect(value as Record<string, unknown>) ?? wrongClient(value)
    adapters.set(value, adapter)
  }
  return adapter
}

function detect(c: Record<string, unknown>): RedisClientLike | undefined {
  // ioredis and iovalkey: defineCommand (theirs alone); a Cluster says so (isCluster).
  if (typeof c.defineCommand === 'function' && typeof c.duplicate === 'function') return new IoRedisAdapter(c)
  if (typeof c.sendCommand !== 'function' || typeof c.isOpen !== 'boolean') return undefined
  if (typeof c.acquire === 'function' || typeof c.execute === 'function') {
    optionError(
      'client: a node-redis Sentinel or client pool is not supported; pass a client from createClient() or a cluster from createCluster()',
    )
  }
  if (typeof c.duplicate !== 'function') return undefined
  // node-redis: a cluster finds a slot's master; a client knows when it is ready.
  if (typeof c.getSlotMaster === 'function') return new NodeRedisAdapter(c, true)
  if (typeof c.isReady === 'boolean') return new NodeRedisAdapter(c, false)
  return undefined
}

function wrongClient(value: unknown): never {
  optionError(
    'client must be an ioredis Redis or Cluster instance (new Redis(url); iovalkey too) or a node-redis client ' +
      `(await createClient({ url }).connect(), or createCluster), got ${received(value)}`,
  )
}
