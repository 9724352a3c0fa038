/**
 * Connecting the CLI to Redis: ioredis is loaded only here, only when --redis is given, so the
 * command works without it for everything else and says how to add it when it is missing.
 */
import { isAirlockError } from '../base/errors.js'
import { loadPeer } from '../base/peer.js'
import { redisStore, type RedisStore } from '../stores/redis.js'
import { CliError, EXIT } from './exit.js'
import { redactUrl } from './args.js'

type IoRedis = typeof import('ioredis')

export interface RedisConnection {
  store: RedisStore
  /** Closes the store and the client (never waits on a dead server). */
  close(): Promise<void>
}

/**
 * Opens an ioredis client on `url` and a store on it, and checks with a PING that Redis answers.
 * @throws CliError (exit 69) when ioredis is not installed or Redis does not answer within `timeout`.
 */
export async function connectRedis(url: string, prefix: string, flag = '--redis', timeout = 5_000): Promise<RedisConnection> {
  let mod: IoRedis
  try {
    mod = loadPeer<IoRedis>('ioredis', flag)
  } catch (err) {
    if (isAirlockError(err, 'ERR_AIRLOCK_PEER_MISSING')) throw new CliError(EXIT.UNAVAILABLE, err.message)
    throw err
  }
  const Redis = (mod.Redis ?? (mod as unknown as { default: IoRedis['Redis'] }).default) as IoRedis['Redis']
  const client = new Redis(url, { maxRetriesPerRequest: 1, connectTimeout: Math.min(timeout, 10_000), lazyConnect: true })
  let lastError: Error | undefined
  client.on('error', (err: Error) => {
    lastError = err
  })
  const close = async (): Promise<void> => {
    await store.close()
    client.disconnect()
  }
  const store = redisStore({ client, prefix })
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      client.connect().then(() => client.ping()),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeout} ms`)), timeout)
      }),
    ])
  } catch (err) {
    await close()
    const why = lastError?.message ?? (err as Error).message
    throw new CliError(EXIT.UNAVAILABLE, `cannot reach Redis at ${redactUrl(url)}: ${why}`)
  } finally {
    clearTimeout(timer)
  }
  return { store, close }
}
