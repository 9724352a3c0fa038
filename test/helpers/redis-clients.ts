/**
 * The Redis clients users already have, each on a private server or Cluster (test/helpers/redis.ts):
 * ioredis 5 (`ioredis`) and 6 (`ioredis6`), iovalkey, node-redis 6 (`redis`) and 5 (`redis5`).
 * Each client is made the way its README shows, with an error listener (a client without one
 * throws on a dropped connection) and closed by `close()`.
 */
import { Cluster as IoCluster5, Redis as IoRedis5 } from 'ioredis'
import { Cluster as IoCluster6, Redis as IoRedis6 } from 'ioredis6'
import { Cluster as ValkeyCluster, Redis as Valkey } from 'iovalkey'
import { createClient as createClient6, createCluster as createCluster6 } from 'redis'
import { createClient as createClient5, createCluster as createCluster5 } from 'redis5'
import type { RedisClient } from '../../src/stores/redis.js'

export type ClientName = 'ioredis 5' | 'ioredis 6' | 'iovalkey' | 'node-redis 6' | 'node-redis 5'

export interface ClientKind {
  name: ClientName
  /** A client of the server on `port`, ready for a store (node-redis: connected). */
  single(port: number): Promise<RedisClient>
  /** A client of the Cluster whose nodes listen on `ports`. */
  cluster(ports: number[]): Promise<RedisClient>
  /** Closes every client this kind made. */
  close(): Promise<void>
}

const host = '127.0.0.1'
const ignore = (): void => {}

type IoClass = new (options: {
  host: string
  port: number
  maxRetriesPerRequest: number
}) => { on(e: string, f: () => void): unknown; disconnect(): void }
type IoClusterClass = new (
  nodes: { host: string; port: number }[],
  options: { redisOptions: { maxRetriesPerRequest: number } },
) => { on(e: string, f: () => void): unknown; disconnect(): void }

function ioredisKind(name: ClientName, Redis: IoClass, Cluster: IoClusterClass): ClientKind {
  const made: { disconnect(): void }[] = []
  const keep = <T extends { on(e: string, f: () => void): unknown; disconnect(): void }>(c: T): T => {
    c.on('error', ignore)
    made.push(c)
    return c
  }
  return {
    name,
    single: async (port) => keep(new Redis({ host, port, maxRetriesPerRequest: 1 })) as unknown as RedisClient,
    cluster: async (ports) =>
      keep(
        new Cluster(
          ports.map((port) => ({ host, port })),
          { redisOptions: { maxRetriesPerRequest: 1 } },
        ),
      ) as unknown as RedisClient,
    close: async () => {
      for (const c of made.splice(0)) c.disconnect()
    },
  }
}

interface NodeRedisLike {
  on(e: string, f: () => void): unknown
  connect(): Promise<unknown>
  destroy(): void
  readonly isOpen: boolean
}

function nodeRedisKind(
  name: ClientName,
  createClient: (o: { socket: { host: string; port: number } }) => NodeRedisLike,
  createCluster: (o: { rootNodes: { socket: { host: string; port: number } }[] }) => NodeRedisLike,
): ClientKind {
  const made: NodeRedisLike[] = []
  const open = async (c: NodeRedisLike): Promise<RedisClient> => {
    c.on('error', ignore)
    made.push(c)
    await c.connect()
    return c as unknown as RedisClient
  }
  return {
    name,
    single: (port) => open(createClient({ socket: { host, port } })),
    cluster: (ports) => open(createCluster({ rootNodes: ports.map((port) => ({ socket: { host, port } })) })),
    close: async () => {
      for (const c of made.splice(0)) if (c.isOpen) c.destroy()
    },
  }
}

/** Every client, by name (a new set of makers per call: each test file closes its own). */
export function clientKinds(): Record<ClientName, ClientKind> {
  return {
    'ioredis 5': ioredisKind('ioredis 5', IoRedis5 as unknown as IoClass, IoCluster5 as unknown as IoClusterClass),
    'ioredis 6': ioredisKind('ioredis 6', IoRedis6 as unknown as IoClass, IoCluster6 as unknown as IoClusterClass),
    iovalkey: ioredisKind('iovalkey', Valkey as unknown as IoClass, ValkeyCluster as unknown as IoClusterClass),
    'node-redis 6': nodeRedisKind('node-redis 6', createClient6 as never, createCluster6 as never),
    'node-redis 5': nodeRedisKind('node-redis 5', createClient5 as never, createCluster5 as never),
  }
}

/** The maker of one client. */
export function clientKind(name: ClientName): ClientKind {
  return clientKinds()[name]
}
