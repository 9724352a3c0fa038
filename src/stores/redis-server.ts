/**
 * Knowing when the Redis that answers is not the one it was: a failover (Sentinel promoting a
 * replica, a managed endpoint switched to another node), or a restart. Replication is
 * asynchronous, so the new server may lack the last writes: slots granted just before, fences
 * handed out. The store then reports a loss (`RedisStore.lostAt`), and callers keep from granting
 * new slots until every slot that may have been lost has expired (see `Semaphore.acquire`).
 *
 * How: the client's adapter tells the server's `INFO` on every (re)connection before anything the
 * store sent meanwhile is answered (`RedisClientLike.watchServer`: ioredis's own ready check, read
 * with no extra round trip; on node-redis, an `INFO` sent as the connection becomes ready). It
 * holds the server's `run_id` (a new one on every start) and `master_replid` (a new one when a
 * replica is promoted). A Cluster is not watched (a replica taking over a shard keeps its
 * connection, so no new INFO is read).
 */
import { failoverChannel, type FailoverEvent } from '../base/events.js'
import type { RedisClientLike } from './redis-client.js'

/** The server identity last seen: its `run_id`, and the replication id it serves. */
interface Identity {
  runId: string
  replId: string
}

export class ServerWatch {
  #identity: Identity | undefined
  #lostAt: number | undefined
  #changes = 0

  /** Stops watching (the store is closed). */
  readonly stop: () => void

  constructor(
    client: RedisClientLike,
    private readonly prefix: string,
  ) {
    this.stop = client.watchServer((info, initial) => {
      // Read because the client was connected before: a reconnection's may have come first.
      if (!initial || this.#identity === undefined) this.seen(info)
    })
  }

  /** Local time (ms) the store last found a different server answering; `undefined`: never. */
  get lostAt(): number | undefined {
    return this.#lostAt
  }

  /** How many times it did. */
  get changes(): number {
    return this.#changes
  }

  /** One connection's `INFO` (fields by name). Public for a client that reads it itself. */
  seen(info: Record<string, string>): void {
    const runId = info.run_id
    if (!runId) return
    const next = { runId, replId: info.master_replid ?? '' }
    const previous = this.#identity
    this.#identity = next
    // The first connection, or the same server reconnecting: nothing lost.
    if (previous === undefined || (previous.runId === next.runId && previous.replId === next.replId)) return
    this.#lostAt = Date.now()
    this.#changes++
    if (failoverChannel.hasSubscribers) {
      const reason = previous.runId === next.runId ? 'promoted' : 'another server'
      failoverChannel.publish({
        store: 'redis',
        prefix: this.prefix,
        reason,
        previous: previous.runId,
        now: next.runId,
      } satisfies FailoverEvent)
    }
  }
}
