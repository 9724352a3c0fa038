/**
 * Knowing when the Redis that answers is not the one it was: a failover (Sentinel promoting a
 * replica, a managed endpoint switched to another node), or a restart. Replication is
 * asynchronous, so the new server may lack the last writes: slots granted just before, fences
 * handed out. The store then reports a loss (`RedisStore.lostAt`), and callers keep from granting
 * new slots until every slot that may have been lost has expired (see `Semaphore.acquire`).
 *
 * How: ioredis reads `INFO` on every (re)connection before it sends anything queued (its ready
 * check), and hands it to its connector's `check`. Wrapping that hook sees the server's `run_id`
 * (a new one on every start) and `master_replid` (a new one when a replica is promoted) before
 * any script runs on the new server: no extra round trip, no window. A client without that hook
 * is not watched: a Cluster (a replica taking over a shard keeps its connection, so no new INFO
 * is read), or another client library.
 */
import { failoverChannel, type FailoverEvent } from '../base/events.js'

interface ReadyChecked {
  connector?: { check?: (info: Record<string, string>) => boolean }
  status?: string
  info?(): Promise<string>
}

/** The server identity last seen: its `run_id`, and the replication id it serves. */
interface Identity {
  runId: string
  replId: string
}

export class ServerWatch {
  #identity: Identity | undefined
  #lostAt: number | undefined
  #changes = 0

  constructor(
    client: unknown,
    private readonly prefix: string,
  ) {
    this.#watch(client as ReadyChecked)
  }

  /** Local time (ms) the store last found a different server answering; `undefined`: never. */
  get lostAt(): number | undefined {
    return this.#lostAt
  }

  /** How many times it did. */
  get changes(): number {
    return this.#changes
  }

  #watch(client: ReadyChecked): void {
    const connector = client.connector
    if (!connector || typeof connector.check !== 'function') return
    const check = connector.check.bind(connector)
    connector.check = (info) => {
      this.seen(info)
      return check(info)
    }
    // Connected before the store was made: its first INFO went unseen. Read it now.
    if (client.status === 'ready' && typeof client.info === 'function') {
      client.info().then(
        (text) => this.#identity ?? this.seen(Object.fromEntries(text.split('\r\n').map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1)]))),
        () => {},
      )
    }
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
      failoverChannel.publish({ store: 'redis', prefix: this.prefix, reason, previous: previous.runId, now: next.runId } satisfies FailoverEvent)
    }
  }
}
