/**
 * Connecting the CLI to Redis: a Redis client is loaded only here, only when --redis is given, so
 * the command works without one for everything else and says how to add it when it is missing.
 * ioredis when it is installed, else node-redis (`redis`): the client the user already has.
 */
import { isAirlockError } from '../base/errors.js'
import { loadPeer, type Peer } from '../base/peer.js'
import { redisStore, type RedisStore } from '../stores/redis.js'
import { CliError, EXIT } from './exit.js'
import { redactUrl } from './args.js'

type IoRedis = typeof import('ioredis')
type NodeRedis = typeof import('redis')

export interface RedisConnection {
  store: RedisStore
  /** Closes the store and the client (never waits on a dead server). */
  close(): Promise<void>
}

/** A connected client: the store on it, how it connects and answers a PING, how it stops, and its last error. */
interface Client {
  store: RedisStore
  ready(): Promise<unknown>
  disconnect(): void
  lastError(): Error | undefined
}

function ioredisClient(mod: IoRedis, url: string, prefix: string, connectTimeout: number): Client {
  const Redis = (mod.Redis ?? (mod as unknown as { default: IoRedis['Redis'] }).default) as IoRedis['Redis']
  const client = new Redis(url, { maxRetriesPerRequest: 1, connectTimeout, lazyConnect: true })
  let last: Error | undefined
  client.on('error', (err: Error) => {
    last = err
  })
  return {
    store: redisStore({ client, prefix }),
    ready: () => client.connect().then(() => client.ping()),
    disconnect: () => client.disconnect(),
    lastError: () => last,
  }
}

function nodeRedisClient(mod: NodeRedis, url: string, prefix: string, connectTimeout: number): Client {
  const client = mod.createClient({ url, socket: { connectTimeout } })
  let last: Error | undefined
  client.on('error', (err: Error) => {
    last = err
  })
  return {
    store: redisStore({ client, prefix }),
    ready: () => client.connect().then(() => client.ping()),
    disconnect: () => {
      if (client.isOpen) client.destroy()
    },
    lastError: () => last,
  }
}

/**
 * Opens a client on `url` (ioredis, else node-redis) and a store on it, and checks with a PING
 * that Redis answers. `load`: how a peer is loaded (tests pass one that hides ioredis).
 * @throws CliError (exit 69) when neither client is installed or Redis does not answer within `timeout`.
 */
export async function connectRedis(
  url: string,
  prefix: string,
  flag = '--redis',
  timeout = 5_000,
  load: <T>(name: Peer, feature: string) => T = loadPeer,
): Promise<RedisConnection> {
  const connectTimeout = Math.min(timeout, 10_000)
  let client: Client
  try {
    client = ioredisClient(load<IoRedis>('ioredis', flag), url, prefix, connectTimeout)
  } catch (err) {
    if (!isAirlockError(err, 'ERR_AIRLOCK_PEER_MISSING')) throw err
    try {
      client = nodeRedisClient(load<NodeRedis>('redis', flag), url, prefix, connectTimeout)
    } catch (again) {
      if (!isAirlockError(again, 'ERR_AIRLOCK_PEER_MISSING')) throw again
      throw new CliError(
        EXIT.UNAVAILABLE,
        `${flag} needs a Redis client, and neither ioredis nor redis (node-redis) is installed: npm install ioredis (or: npm install redis)`,
      )
    }
  }
  const close = async (): Promise<void> => {
    await client.store.close()
    client.disconnect()
  }
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      client.ready(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeout} ms`)), timeout)
      }),
    ])
  } catch (err) {
    await close()
    const why = client.lastError()?.message ?? (err as Error).message
    throw new CliError(EXIT.UNAVAILABLE, `cannot reach Redis at ${redactUrl(url)}: ${why}`)
  } finally {
    clearTimeout(timer)
  }
  return { store: client.store, close }
}
