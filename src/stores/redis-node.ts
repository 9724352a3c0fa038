/**
 * The Redis store on a node-redis client (`redis` 5 and 6): `createClient()` or `createCluster()`,
 * connected by its owner. Commands go through `sendCommand` (no command parser on the hot path),
 * their arguments as strings; on a cluster, to the node of the first key.
 */
import { ignore, parseInfo, type RedisArgs, type RedisClientLike, type RedisSubscriber } from './redis-client.js'

type Listener = (message: string, channel: string) => void

/** What the adapter calls on a node-redis client or cluster. */
interface NodeRedis {
  readonly isOpen: boolean
  /** A client's; a cluster of node-redis 5 has none. */
  readonly isReady?: boolean
  sendCommand(...args: unknown[]): Promise<unknown>
  duplicate(): NodeRedis
  connect(): Promise<unknown>
  on(event: string, listener: (...args: unknown[]) => void): unknown
  once(event: string, listener: () => void): unknown
  off(event: string, listener: (...args: unknown[]) => void): unknown
  subscribe(channel: string, listener: Listener): Promise<void>
  unsubscribe(channel: string, listener: Listener): Promise<void>
  destroy(): void
}

/** `[head..., ...args]` with every argument a string (node-redis encodes strings and buffers only). */
function strings(head: string[], args: RedisArgs): string[] {
  const out = head
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!
    out.push(typeof a === 'string' ? a : String(a))
  }
  return out
}

export class NodeRedisAdapter implements RedisClientLike {
  readonly library = 'node-redis'
  readonly #c: NodeRedis

  constructor(
    client: unknown,
    readonly isCluster: boolean,
  ) {
    this.#c = client as NodeRedis
  }

  /** A client: connected and past its handshake. A cluster: open (each node's client queues while it reconnects). */
  get ready(): boolean {
    return this.isCluster ? this.#c.isOpen : this.#c.isReady === true
  }

  /** Not open: closed by its owner, or never connected (`await client.connect()` first). */
  get ended(): boolean {
    return !this.#c.isOpen
  }

  get status(): string {
    if (!this.#c.isOpen)
      return 'closed (node-redis: the store needs a client you connected with await client.connect())'
    return this.ready ? 'ready' : 'reconnecting'
  }

  onceReady(listener: () => void): void {
    this.#c.once(this.isCluster ? 'connect' : 'ready', listener)
  }

  evalsha(sha: string, numKeys: number, keysAndArgs: RedisArgs): Promise<unknown> {
    return this.#send(keysAndArgs, strings(['EVALSHA', sha, String(numKeys)], keysAndArgs), numKeys)
  }

  eval(lua: string, numKeys: number, keysAndArgs: RedisArgs): Promise<unknown> {
    return this.#send(keysAndArgs, strings(['EVAL', lua, String(numKeys)], keysAndArgs), numKeys)
  }

  command(key: string | undefined, args: RedisArgs): Promise<unknown> {
    const argv = strings([], args)
    return this.isCluster ? this.#c.sendCommand(key, false, argv) : this.#c.sendCommand(argv)
  }

  #send(keysAndArgs: RedisArgs, argv: string[], numKeys: number): Promise<unknown> {
    if (!this.isCluster) return this.#c.sendCommand(argv)
    return this.#c.sendCommand(numKeys > 0 ? String(keysAndArgs[0]) : undefined, false, argv)
  }

  /**
   * A duplicate connected on first use. One listener function for every channel, so a SUBSCRIBE
   * tried again after one that timed out (and went through later) adds no second delivery:
   * node-redis keeps a channel's listeners in a set.
   */
  subscriber(onMessage: (channel: string, message: string) => void): RedisSubscriber {
    const listener: Listener = (message, channel) => onMessage(channel, message)
    let opening: Promise<NodeRedis> | undefined
    let sub: NodeRedis | undefined
    let closed = false
    const open = (): Promise<NodeRedis> => {
      if (opening) return opening
      const dup = this.#c.duplicate()
      sub = dup
      dup.on('error', ignore) // reconnects by itself; waiters keep their safety poll meanwhile
      const attempt = dup.connect().then(() => {
        if (closed) destroy(dup)
        return dup
      })
      opening = attempt
      // A cluster that found no node gives up: the next subscribe starts another.
      attempt.catch(() => {
        if (opening === attempt) opening = undefined
        destroy(dup)
      })
      return attempt
    }
    return {
      subscribe: async (channel) => {
        await (await open()).subscribe(channel, listener)
      },
      unsubscribe: async (channel) => {
        if (sub?.isOpen) await sub.unsubscribe(channel, listener)
      },
      close: () => {
        closed = true
        if (sub) destroy(sub)
      },
    }
  }

  /**
   * A client's `INFO`, sent from its 'ready' event: before the calls that waited for it resume
   * (their promises settle after this synchronous handler) and so answered before them on the one
   * connection. The hot path reads `isReady`, set in the same step as the event. Not on a cluster.
   */
  watchServer(seen: (info: Record<string, string>, initial: boolean) => void): () => void {
    if (this.isCluster) return ignore
    const c = this.#c
    const read = (initial: boolean): void => {
      c.sendCommand(['INFO']).then((text) => seen(parseInfo(String(text)), initial), ignore)
    }
    const onReady = (): void => read(false)
    c.on('ready', onReady)
    if (c.isReady) read(true)
    return () => c.off('ready', onReady)
  }
}

/** Closes a connection the store opened; one already closed throws in node-redis, which is fine here. */
function destroy(client: NodeRedis): void {
  try {
    if (client.isOpen) client.destroy()
  } catch {
    // already closed
  }
}
