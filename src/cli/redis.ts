/**
 * Connecting the CLI to Redis: the flags that say where (--redis or $AIRLOCK_REDIS_URL, --prefix),
 * and the client. A Redis client is loaded only here, only when --redis is given, so the command
 * works without one for everything else and says how to add it when it is missing. ioredis when it
 * is installed, else node-redis (`redis`): the client the user already has.
 */
import { isAirlockError } from '../base/errors.js'
import { loadPeer, type Peer } from '../base/peer.js'
import { redisStore, type RedisStore } from '../stores/redis.js'
import { nameFlag } from './args.js'
import { CliError, EXIT, UsageError } from './exit.js'

/**
 * `--redis`, else $AIRLOCK_REDIS_URL (empty: not set), checked: `undefined` when neither is given,
 * or with `required` a usage error.
 */
export function redisFlag(flags: ReadonlyMap<string, string>, env: NodeJS.ProcessEnv, required: true): string
export function redisFlag(flags: ReadonlyMap<string, string>, env: NodeJS.ProcessEnv): string | undefined
export function redisFlag(flags: ReadonlyMap<string, string>, env: NodeJS.ProcessEnv, required = false) {
  const url = flags.get('redis') ?? (env.AIRLOCK_REDIS_URL || undefined)
  if (url === undefined && required) throw new UsageError('--redis is required (or set AIRLOCK_REDIS_URL)')
  return url === undefined ? undefined : redisUrlFlag('redis', url)
}

/** `--prefix`: the Redis store's key prefix (default airlock), a name. */
export function prefixFlag(flags: ReadonlyMap<string, string>): string {
  return nameFlag('prefix', flags.get('prefix') ?? 'airlock')
}

/** A Redis URL flag: `redis://[user:password@]host[:port][/db]` or `rediss://` (TLS). */
export function redisUrlFlag(flag: string, value: string): string {
  let url: URL | undefined
  try {
    url = new URL(value)
  } catch {
    url = undefined
  }
  if (!url || (url.protocol !== 'redis:' && url.protocol !== 'rediss:')) {
    throw new UsageError(
      `--${flag} must be a redis:// or rediss:// URL (redis://127.0.0.1:6379), got '${redactUrl(value)}'`,
    )
  }
  return value
}

/** The URL with any password replaced by `***`, for messages and logs. */
export function redactUrl(value: string): string {
  try {
    const url = new URL(value)
    if (url.password) url.password = '***'
    return url.toString()
  } catch {
    return value.replace(/:[^:@/]*@/, ':***@')
  }
}

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

/** What both clients do alike: report errors as events, connect, answer a PING. */
interface Connectable {
  on(event: 'error', listener: (err: Error) => void): unknown
  connect(): Promise<unknown>
  ping(): Promise<unknown>
}

/** `client` (not connected yet) with `store` on it: its last error kept, for the message when it cannot connect. */
function watched(client: Connectable, store: RedisStore, disconnect: () => void): Client {
  let last: Error | undefined
  client.on('error', (err: Error) => {
    last = err
  })
  return { store, ready: () => client.connect().then(() => client.ping()), disconnect, lastError: () => last }
}

function ioredisClient(mod: IoRedis, url: string, prefix: string, connectTimeout: number): Client {
  const Redis = (mod.Redis ?? (mod as unknown as { default: IoRedis['Redis'] }).default) as IoRedis['Redis']
  const client = new Redis(url, { maxRetriesPerRequest: 1, connectTimeout, lazyConnect: true })
  return watched(client, redisStore({ client, prefix }), () => client.disconnect())
}

function nodeRedisClient(mod: NodeRedis, url: string, prefix: string, connectTimeout: number): Client {
  const client = mod.createClient({ url, socket: { connectTimeout } })
  return watched(client, redisStore({ client, prefix }), () => {
    if (client.isOpen) client.destroy()
  })
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
