/**
 * The Redis store's pub/sub: one extra connection per store, opened on first use, and one
 * SUBSCRIBE per channel shared by every listener of it (the wake-ups of waiters in line, the new
 * versions of a control record). The last listener of a channel to go unsubscribes it.
 */
import type { Deadlines } from './redis-calls.js'
import type { RedisClientLike, RedisSubscriber } from './redis-client.js'

export class RedisChannels {
  private subscriber: RedisSubscriber | undefined
  private readonly listeners = new Map<string, Set<(head: string) => void>>()
  /** Channels subscribed (or being subscribed) on the subscriber connection. */
  private readonly subscriptions = new Map<string, Promise<void>>()

  constructor(
    private readonly client: RedisClientLike,
    private readonly deadlines: Deadlines,
    private readonly commandTimeout: number,
  ) {}

  /** Calls `listener` with each message on `channel` once subscribed; resolves to the function that stops it. */
  async listen(channel: string, listener: (message: string) => void): Promise<() => void> {
    let set = this.listeners.get(channel)
    if (!set) {
      set = new Set()
      this.listeners.set(channel, set)
    }
    set.add(listener)
    const forget = (): void => this.forget(channel, set, listener)
    try {
      const sub = this.subscriberClient()
      // One SUBSCRIBE per channel, shared by every listener; a failed one is tried again next time.
      let pending = this.subscriptions.get(channel)
      if (pending === undefined) {
        const attempt = this.deadlines.race(sub.subscribe(channel), Date.now() + this.commandTimeout).then(() => {})
        this.subscriptions.set(channel, attempt)
        attempt.catch(() => {
          if (this.subscriptions.get(channel) === attempt) this.subscriptions.delete(channel)
        })
        pending = attempt
      }
      await pending
    } catch (err) {
      forget()
      throw err
    }
    return forget
  }

  /** Forgets every listener and closes the subscriber connection. */
  close(): void {
    this.listeners.clear()
    this.subscriptions.clear()
    this.subscriber?.close()
  }

  /** Drops one listener; the last one of a channel unsubscribes it. */
  private forget(channel: string, set: Set<(headToken: string) => void>, listener: (headToken: string) => void): void {
    set.delete(listener)
    if (set.size > 0 || this.listeners.get(channel) !== set) return
    this.listeners.delete(channel)
    if (this.subscriptions.delete(channel)) this.subscriber?.unsubscribe(channel).catch(() => {})
  }

  /** One extra connection per store, opened on first use, for wake-up messages. */
  private subscriberClient(): RedisSubscriber {
    this.subscriber ??= this.client.subscriber((channel, message) => {
      const set = this.listeners.get(channel)
      if (set) for (const listener of set) listener(message)
    })
    return this.subscriber
  }
}
