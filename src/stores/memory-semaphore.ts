/**
 * The memory store's state of one semaphore name: its slots, its line and reservations, recent
 * admissions and releases. The same decisions as the Redis store's Lua, in plain data structures.
 */
import { ClientShares } from './memory-shares.js'
import type { StoreEnded } from './types.js'

/** How long admissions are remembered for the ETA (ms). Same as the Redis store. */
export const ADMISSION_WINDOW_MS = 60_000
/** How many recent releases `leaseState` can tell apart from expiries. Same as the Redis store. */
export const RELEASED_MEMORY = 1000
/** How long a release is remembered for `leaseState` (ms). Same as the Redis store. */
export const RELEASED_KEEP_MS = 3_600_000
/** Most visit durations one answer lists (`StoreEnded.visits`). Same as the Redis store. */
export const ENDED_VISITS = 64

export interface Holder {
  expiresAt: number
  weight: number
  fence: number
  /** When it was granted (the store's clock). */
  since: number
}

export interface Waiter {
  id: string
  /** Arrival number: the line is ordered by it, in both orders. */
  seq: number
  weight: number
  claimWindow: number
  /** Loses its place at this time unless seen again. */
  deadline: number
  /** The timeout its deadline was set from (the `seen` bucket it is in). */
  timeout: number
  /** When it took its place (the store's clock). */
  since: number
}

/** One semaphore's slots and line, by name. Dropped from the store when empty. */
export class MemorySemaphore {
  readonly holders = new Map<string, Holder>()
  used = 0
  /** Waiters in arrival order. */
  readonly line: Waiter[] = []
  readonly waiters = new Map<string, Waiter>()
  /**
   * Waiter ids by the timeout of their deadline, each bucket in order of last sign of life (so each
   * bucket's deadlines increase, and eviction stops at the first live one).
   */
  readonly seen = new Map<number, Map<string, true>>()
  /** Room held for waiters, by id: the time the reservation lapses. */
  readonly reserved = new Map<string, number>()
  reservedWeight = 0
  /** How the line admits: set by the last waiter that joined. */
  order: 'fifo' | 'random' = 'fifo'
  seq = 0
  readonly admissions: number[] = []
  readonly released = new Map<string, number>()
  /** Tokens that left the line (`leave`), by the time the mark lapses (in insertion order: one keep for all). */
  readonly left = new Map<string, number>()
  /** Per-client shares (`AcquireRequest.client`). */
  readonly shares = new ClientShares()
  /**
   * Slots expired and places lapsed since the last answer that told them (see {@link takeEnded});
   * forgotten with an idle semaphore.
   */
  private ended: StoreEnded | undefined

  get empty(): boolean {
    return (
      this.shares.empty &&
      this.holders.size === 0 &&
      this.waiters.size === 0 &&
      this.released.size === 0 &&
      this.left.size === 0 &&
      this.admissions.length === 0
    )
  }

  purgeHolders(now: number): void {
    for (const [token, h] of this.holders) {
      if (h.expiresAt <= now) {
        this.holders.delete(token)
        this.used -= h.weight
        const e = (this.ended ??= { expired: 0, visits: [], lapsed: 0 })
        e.expired++
        if (e.visits.length < ENDED_VISITS) e.visits.push(Math.max(0, h.expiresAt - h.since))
      }
    }
    for (const [token, at] of this.released) {
      if (at > now - RELEASED_KEEP_MS && this.released.size <= RELEASED_MEMORY) break
      this.released.delete(token)
    }
  }

  /** Whether `token` left the line less than `LEFT_KEEP_MS` ago (lapsed marks are dropped). */
  justLeft(token: string, now: number): boolean {
    for (const [t, until] of this.left) {
      if (until > now) break
      this.left.delete(t)
    }
    return (this.left.get(token) ?? 0) > now
  }

  purgeWaiters(now: number): void {
    for (const bucket of this.seen.values()) {
      for (const id of bucket.keys()) {
        const w = this.waiters.get(id)
        if (w && w.deadline > now) break
        if (this.removeWaiter(id)) this.lapsed(1)
      }
    }
  }

  private lapsed(n: number): void {
    ;(this.ended ??= { expired: 0, visits: [], lapsed: 0 }).lapsed += n
  }

  /** What expired or lapsed since the last call, for an answer to tell (each lapse is told once). */
  takeEnded(): StoreEnded | undefined {
    const e = this.ended
    this.ended = undefined
    return e
  }

  nextExpiry(): number | null {
    let next: number | null = null
    for (const h of this.holders.values()) if (next === null || h.expiresAt < next) next = h.expiresAt
    return next
  }

  /** How many waiters arrived before `seq` (0-based rank). */
  rank(seq: number): number {
    let lo = 0
    let hi = this.line.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.line[mid]!.seq < seq) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  addWaiter(w: Waiter): void {
    this.waiters.set(w.id, w)
    this.line.splice(this.rank(w.seq), 0, w)
    this.markSeen(w)
  }

  /** A sign of life: the waiter keeps its place for `timeout` more. */
  touchWaiter(w: Waiter, now: number, timeout: number): void {
    this.seen.get(w.timeout)?.delete(w.id)
    w.deadline = now + timeout
    w.timeout = timeout
    this.markSeen(w)
  }

  private markSeen(w: Waiter): void {
    let bucket = this.seen.get(w.timeout)
    if (!bucket) {
      bucket = new Map()
      this.seen.set(w.timeout, bucket)
    }
    bucket.set(w.id, true)
  }

  removeWaiter(id: string): boolean {
    const w = this.waiters.get(id)
    if (!w) return false
    this.waiters.delete(id)
    const bucket = this.seen.get(w.timeout)
    bucket?.delete(id)
    if (bucket?.size === 0) this.seen.delete(w.timeout)
    this.line.splice(this.rank(w.seq), 1)
    if (this.reserved.delete(id)) this.reservedWeight -= w.weight
    return true
  }

  /**
   * Settles the line: waiters whose reservation lapsed lose their place; then room not yet held
   * for anyone is reserved for the next waiters (in arrival order, or drawn at random), as many as
   * fit, each for its claim window. A waiter that does not fit stops the round: nobody overtakes it.
   * Returns the ids reserved now.
   */
  settle(now: number, limit: number): string[] {
    for (const [id, until] of this.reserved) if (until <= now && this.removeWaiter(id)) this.lapsed(1)
    let free = limit - this.used - this.reservedWeight
    const fresh: string[] = []
    let open = this.line.length - this.reserved.size
    // A scheduled opening's pre-queue (seq below 0) is admitted whole before anyone behind it.
    const barrier = this.line.length > 0 && this.line[0]!.seq < 0
    while (free > 0 && open > 0) {
      const w = this.order === 'random' ? this.draw(open) : this.line.find((x) => !this.reserved.has(x.id))!
      if (w.weight > free || (barrier && this.order === 'fifo' && w.seq >= 0)) break
      this.reserved.set(w.id, now + w.claimWindow)
      this.reservedWeight += w.weight
      free -= w.weight
      open--
      fresh.push(w.id)
    }
    return fresh
  }

  /** A waiter drawn uniformly among the `open` ones holding no reservation. */
  private draw(open: number): Waiter {
    if (open * 2 >= this.line.length) {
      for (;;) {
        const w = this.line[Math.floor(Math.random() * this.line.length)]!
        if (!this.reserved.has(w.id)) return w
      }
    }
    const candidates = this.line.filter((x) => !this.reserved.has(x.id))
    return candidates[Math.floor(Math.random() * candidates.length)]!
  }

  /** The first waiter holding no reservation: the one to wake when room may have appeared. */
  firstOpen(): string | undefined {
    return this.line.find((x) => !this.reserved.has(x.id))?.id
  }

  admissionsIn(now: number): { admitted: number; windowMs: number } {
    while (this.admissions.length > 0 && this.admissions[0]! <= now - ADMISSION_WINDOW_MS) this.admissions.shift()
    const first = this.admissions[0]
    return { admitted: this.admissions.length, windowMs: first === undefined ? 0 : now - first }
  }
}
