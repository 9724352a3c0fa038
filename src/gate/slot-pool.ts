import type { Lease, Semaphore } from '../core/semaphore.js'
import type { RequestSlot } from './types.js'
import type { ReleasedBy } from './tally-types.js'

/** Most idle slots a pool keeps (beyond it a finished request's slot is released at once). */
const MAX_IDLE = 1024

/** A slot held by this process for request mode, used by one request at a time. */
export interface PooledSlot {
  readonly lease: Lease
  /** Local time (ms) of the last acquire or refresh sent for it: the store keeps it at least until this + ttl. */
  confirmedAt: number
  /** Local time it went back to the pool. */
  idleSince: number
  /** A refresh found it gone from the store (expired, force-released, data lost): never reuse it. */
  lost: boolean
  /** A background refresh is under way. */
  confirming: boolean
  /** The limit's generation when it was acquired: a slot from before the limit went down is never reused. */
  readonly generation: number
}

export interface SlotPoolOptions {
  /** How long a finished request's slot waits for the next request before it is released (ms). */
  window: number
  /** A reused slot older than this since its last confirmation is refreshed in the background (ms). */
  confirmEvery: number
  /** Told when a background refresh or release fails (the slot then frees itself after ttl). */
  onError: (err: unknown, op: 'refresh' | 'release') => void
  /**
   * The limit's generation, bumped each time the limit goes down (see `EffectiveLimit`). Slots
   * acquired before are released when their request ends instead of being reused, so from then on
   * every request in flight holds a slot the store granted under the lower limit.
   */
  generation: () => number
}

/** Wraps a lease just acquired (the acquire was sent at `sentAt`, local clock). */
export function pooledSlot(lease: Lease, sentAt: number, generation = 0): PooledSlot {
  return { lease, confirmedAt: sentAt, idleSince: sentAt, lost: false, confirming: false, generation }
}

/**
 * Request mode's slot reuse. A request that finishes hands its slot (a live lease) to the pool
 * instead of releasing it; a request that arrives within `window` takes it without any store round
 * trip. Under steady load a process then keeps about as many slots as it has requests in flight and
 * talks to the store only to grow, to shrink, and to confirm each slot once per `confirmEvery`.
 *
 * Why the limit still holds: a pooled slot is a live lease in the store, so every request in flight,
 * on any instance, holds its own live slot. A slot's store expiry is at least `confirmedAt + ttl`
 * (the store decided after the call was sent), so a slot is reused only while it has at least
 * `ttl - confirmEvery` left, and is refreshed in the background when it was last confirmed more than
 * `confirmEvery` ago. A slot the store lost by other means (`forceReleaseAll`, a Redis without
 * persistence restarting) is noticed by that refresh: within `confirmEvery` of the loss.
 */
export class SlotPool {
  private readonly idle: PooledSlot[] = []
  private timer: NodeJS.Timeout | undefined
  private closed = false

  constructor(
    private readonly sem: Semaphore,
    private readonly options: SlotPoolOptions,
  ) {}

  /** Wraps a lease just acquired (the acquire was sent at `sentAt`, local clock). */
  slot(lease: Lease, sentAt: number): PooledSlot {
    return pooledSlot(lease, sentAt, this.options.generation())
  }

  /** Idle slots held right now. */
  get size(): number {
    return this.idle.length
  }

  /** A pooled slot for a new request, or `undefined` (then acquire one from the store). */
  take(now: number): PooledSlot | undefined {
    const { confirmEvery } = this.options
    for (;;) {
      const slot = this.idle.pop()
      if (slot === undefined) return undefined
      // The most recently used slot is on top; stale ones are at the bottom and age out by the sweep.
      if (
        slot.lost ||
        slot.generation !== this.options.generation() ||
        now - slot.confirmedAt > this.sem.ttl - confirmEvery
      ) {
        this.drop(slot)
        continue
      }
      if (now - slot.confirmedAt > confirmEvery) this.confirm(slot, now)
      return slot
    }
  }

  /** A request is over: keep its slot for the next request, or release it. */
  give(slot: PooledSlot, now: number): void {
    if (this.closed || slot.lost || slot.generation !== this.options.generation() || this.idle.length >= MAX_IDLE) {
      this.drop(slot)
      return
    }
    slot.idleSince = now
    this.idle.push(slot)
    this.timer ??= setTimeout(() => this.sweep(), this.options.window).unref()
  }

  /** Releases every idle slot now (the limit went down); slots in use are released when their request ends. */
  retire(): void {
    for (const slot of this.idle.splice(0)) void this.drop(slot)
  }

  /** Releases every idle slot and stops the sweep. Later `give`s release at once. */
  async close(): Promise<void> {
    this.closed = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
    const slots = this.idle.splice(0)
    await Promise.all(slots.map((s) => this.drop(s)))
  }

  /** Releases slots idle for a whole window; runs again while any are left. */
  private sweep(): void {
    this.timer = undefined
    const cutoff = Date.now() - this.options.window
    let kept = 0
    for (const slot of this.idle) {
      if (slot.idleSince <= cutoff) void this.drop(slot)
      else this.idle[kept++] = slot
    }
    this.idle.length = kept
    if (kept > 0 && !this.closed) {
      const next = Math.max(1, this.idle[0]!.idleSince + this.options.window - Date.now())
      this.timer = setTimeout(() => this.sweep(), next).unref()
    }
  }

  /** Refreshes a slot in the background; only a successful refresh moves `confirmedAt`. */
  private confirm(slot: PooledSlot, sentAt: number): void {
    if (slot.confirming) return
    slot.confirming = true
    slot.lease.refresh().then(
      (ok) => {
        slot.confirming = false
        if (ok) slot.confirmedAt = sentAt
        else slot.lost = true
      },
      (err: unknown) => {
        slot.confirming = false
        this.options.onError(err, 'refresh')
      },
    )
  }

  private drop(slot: PooledSlot): Promise<void> {
    if (slot.lost) return Promise.resolve()
    return slot.lease.release().then(
      () => undefined,
      (err: unknown) => this.options.onError(err, 'release'),
    )
  }
}

/**
 * A request's slot as the adapters see it: released exactly once, back to the pool (when reusing)
 * or to the store. A failed release is only logged: the slot then frees itself after `ttl`.
 * `measured` (the adaptive limit) is told how the request ended and answers how much longer (ms) a
 * failed request keeps its slot; the release then waits that long. `onFree` is told once, when the
 * slot is freed (the local quota's count of requests in flight, the gate's figures), with who ended
 * it: `release(failed, by)`, `by` the gate's own second argument (`'visitor'`: the request ended).
 * `hold(lost)` (an upgraded connection that outlives `ttl`) refreshes the slot every `ttl / 3`
 * until it is released, and calls `lost` once if the store no longer has it.
 */
export function requestSlot(
  slot: PooledSlot,
  pool: SlotPool | undefined,
  onError: (err: unknown) => void,
  measured?: (failed: boolean) => number,
  onFree?: (by: ReleasedBy) => void,
  ttl = 30_000,
): RequestSlot {
  return new CountedSlot(slot, pool, onError, measured, onFree, ttl)
}

/** {@link requestSlot}'s slot: one object a request, its methods shared. */
class CountedSlot implements RequestSlot {
  readonly token: string
  #done: Promise<boolean> | undefined
  #endedBy: ReleasedBy = 'visitor'
  #keepAlive: NodeJS.Timeout | undefined

  constructor(
    private readonly slot: PooledSlot,
    private readonly pool: SlotPool | undefined,
    private readonly onError: (err: unknown) => void,
    private readonly measured: ((failed: boolean) => number) | undefined,
    private readonly onFree: ((by: ReleasedBy) => void) | undefined,
    private readonly ttl: number,
  ) {
    this.token = slot.lease.token
  }

  release(failed = false, by: ReleasedBy = 'visitor'): Promise<boolean> {
    if (this.#done) return this.#done
    if (this.#keepAlive !== undefined) clearInterval(this.#keepAlive)
    this.#endedBy = by
    const keep = this.measured?.(failed) ?? 0
    this.#done =
      keep > 0 ? new Promise<void>((kept) => setTimeout(kept, keep).unref()).then(() => this.#free()) : this.#free()
    return this.#done
  }

  hold(lost: () => void): void {
    if (this.#done !== undefined || this.#keepAlive !== undefined) return
    let refreshing = false
    const { slot } = this
    this.#keepAlive = setInterval(
      () => {
        if (refreshing || this.#done !== undefined) return
        refreshing = true
        const sentAt = Date.now()
        slot.lease.refresh().then(
          (ok) => {
            refreshing = false
            if (ok) slot.confirmedAt = sentAt
            else if (this.#done === undefined && !slot.lost) {
              slot.lost = true
              clearInterval(this.#keepAlive)
              lost()
            }
          },
          (err: unknown) => {
            refreshing = false
            this.onError(err)
          },
        )
      },
      Math.max(20, Math.floor(this.ttl / 3)),
    )
    this.#keepAlive.unref()
  }

  #free(): Promise<boolean> {
    this.onFree?.(this.#endedBy)
    if (this.pool) {
      this.pool.give(this.slot, Date.now())
      return Promise.resolve(true)
    }
    return this.slot.lease.release().catch((err: unknown) => {
      this.onError(err)
      return false
    })
  }
}
