/**
 * The Redis store on an ioredis client (ioredis 5 and 6, and iovalkey, which shares its
 * interface): a `Redis` or a `Cluster`. A thin pass-through: the hot path is the same call on the
 * user's client as before there was an interface.
 */
import { ignore, parseInfo, type RedisArgs, type RedisClientLike, type RedisSubscriber } from './redis-client.js'

/** What the adapter calls on an ioredis client (both `Redis` and `Cluster` have it). */
interface IoRedis {
  status: string
  isCluster?: boolean
  connector?: { check?: (info: Record<string, string>) => boolean }
  evalsha(sha: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>
  eval(lua: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>
  call(command: string, ...args: (string | number)[]): Promise<unknown>
  info?(): Promise<string>
  duplicate(): IoRedis
  once(event: 'ready', listener: () => void): unknown
  on(event: string, listener: (...args: string[]) => void): unknown
  subscribe(channel: string): Promise<unknown>
  unsubscribe(channel: string): Promise<unknown>
  disconnect(): void
}

export class IoRedisAdapter implements RedisClientLike {
  readonly library = 'ioredis'
  readonly isCluster: boolean
  readonly #c: IoRedis

  constructor(client: unknown) {
    this.#c = client as IoRedis
    this.isCluster = this.#c.isCluster === true
  }

  get ready(): boolean {
    const status = this.#c.status
    return status === 'ready' || status === 'wait'
  }

  get ended(): boolean {
    const status = this.#c.status
    return status === 'end' || status === 'close'
  }

  get status(): string {
    return this.#c.status
  }

  onceReady(listener: () => void): void {
    this.#c.once('ready', listener)
  }

  evalsha(sha: string, numKeys: number, keysAndArgs: RedisArgs): Promise<unknown> {
    return this.#c.evalsha(sha, numKeys, ...keysAndArgs)
  }

  eval(lua: string, numKeys: number, keysAndArgs: RedisArgs): Promise<unknown> {
    return this.#c.eval(lua, numKeys, ...keysAndArgs)
  }

  /** ioredis routes a Cluster command by the key its command table names. */
  command(_key: string | undefined, args: RedisArgs): Promise<unknown> {
    return this.#c.call(String(args[0]), ...args.slice(1))
  }

  subscriber(onMessage: (channel: string, message: string) => void): RedisSubscriber {
    const sub = this.#c.duplicate()
    sub.on('error', ignore) // reconnects by itself; waiters keep their safety poll meanwhile
    sub.on('message', onMessage)
    return {
      subscribe: (channel) => sub.subscribe(channel).then(ignore),
      unsubscribe: (channel) => sub.unsubscribe(channel).then(ignore),
      close: () => sub.disconnect(),
    }
  }

  /**
   * ioredis reads `INFO` on every (re)connection before it sends anything queued (its ready
   * check) and hands it to its connector's `check`: wrapping that hook sees it with no extra round
   * trip and no window. A Cluster has no such hook (and is not watched).
   */
  watchServer(seen: (info: Record<string, string>, initial: boolean) => void): () => void {
    const client = this.#c
    const connector = client.connector
    if (!connector || typeof connector.check !== 'function') return ignore
    const check = connector.check.bind(connector)
    let watching = true
    connector.check = (info) => {
      if (watching) seen(info, false)
      return check(info)
    }
    // Connected before the store was made: its first INFO went unseen. Read it now.
    if (client.status === 'ready' && typeof client.info === 'function') {
      client.info().then((text) => watching && seen(parseInfo(text), true), ignore)
    }
    return () => {
      watching = false
    }
  }
}
