/**
 * The one small interface the Redis store talks to ({@link RedisClientLike}), whatever client the
 * user already has: ioredis 5 or 6 and iovalkey (redis-ioredis.ts), node-redis 5 or 6
 * (redis-node.ts), standalone or Cluster. Which one a `client` option is, is found by its shape
 * (redis-clients.ts), never with `instanceof` (a user's copy of a package is not ours) and never
 * by loading a client package: the store loads none.
 */

/**
 * An ioredis `Redis` or `Cluster` (ioredis 5 or 6, or iovalkey, Valkey's fork). Only what tells
 * it apart is named here; the store uses it through its own adapter.
 */
export interface IoRedisClient {
  readonly status: string
  defineCommand(...args: never[]): unknown
  duplicate(...args: never[]): unknown
}

/**
 * A node-redis (`redis` 5 or 6) client from `createClient()` or cluster from `createCluster()`,
 * connected by you (`await client.connect()`). Only what tells it apart is named here.
 */
export interface NodeRedisClient {
  readonly isOpen: boolean
  sendCommand(...args: never[]): unknown
  duplicate(...args: never[]): unknown
}

/** A client `redisStore` and `redisResources` accept: ioredis (5, 6), iovalkey, or node-redis (5, 6); standalone or Cluster. */
export type RedisClient = IoRedisClient | NodeRedisClient

/** A command's arguments as the store builds them (node-redis gets strings). */
export type RedisArgs = readonly (string | number)[]

/** The subscriber connection of a store (a duplicate of the user's client, opened on first use). */
export interface RedisSubscriber {
  /** Subscribes to `channel`; messages go to the `onMessage` given to {@link RedisClientLike.subscriber}. */
  subscribe(channel: string): Promise<void>
  unsubscribe(channel: string): Promise<void>
  /** Closes the connection (and forgets its subscriptions). */
  close(): void
}

/**
 * What the Redis store needs of a client. Commands go out in order on one connection per node (the
 * cleanup after a call given up on relies on it); on a Cluster a command goes to the node of its
 * first key, and every key of one call shares a hash tag.
 */
export interface RedisClientLike {
  /** The library, for messages. */
  readonly library: 'ioredis' | 'node-redis'
  readonly isCluster: boolean
  /**
   * A command sent now goes out at once: connected, or (ioredis) connecting lazily on first use.
   * Read on every call: a getter, no allocation.
   */
  readonly ready: boolean
  /** No command will be answered any more (closed by its owner): calls fail at once. */
  readonly ended: boolean
  /** The connection's state in a word, for messages. */
  readonly status: string
  /** Calls `listener` once, the next time the connection is ready. */
  onceReady(listener: () => void): void
  /** `EVALSHA sha numKeys ...keysAndArgs` (its NOSCRIPT error is the caller's to handle). */
  evalsha(sha: string, numKeys: number, keysAndArgs: RedisArgs): Promise<unknown>
  /** `EVAL lua numKeys ...keysAndArgs`. */
  eval(lua: string, numKeys: number, keysAndArgs: RedisArgs): Promise<unknown>
  /** One command, its name first; on a Cluster it goes to the node of `key`. */
  command(key: string | undefined, args: RedisArgs): Promise<unknown>
  /** A new subscriber connection (a duplicate of this client); each message goes to `onMessage`. */
  subscriber(onMessage: (channel: string, message: string) => void): RedisSubscriber
  /**
   * Tells `seen` the server's `INFO` on every (re)connection, before anything the store sent
   * meanwhile is answered (see redis-server.ts); not on a Cluster. `initial`: read because the
   * client was connected before the store was made (a later connection's may have come first).
   * Returns what stops it.
   */
  watchServer(seen: (info: Record<string, string>, initial: boolean) => void): () => void
}

/** `INFO`'s text as fields by name (`run_id`, `master_replid`, ...). */
export function parseInfo(text: string): Record<string, string> {
  const info: Record<string, string> = {}
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':')
    if (colon > 0) info[line.slice(0, colon)] = line.slice(colon + 1)
  }
  return info
}

export function ignore(): void {}
