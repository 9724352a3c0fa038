import { AirlockError } from '../core/errors.js'
import { knownKeys } from '../core/validate.js'
import type { AcquireRequest, AcquireResult, LeaseState, RefreshResult, Store } from './types.js'

/** How long admissions are remembered for the ETA (ms). Same as the Redis store. */
export const ADMISSION_WINDOW_MS = 60_000
/** How many recent releases `leaseState` can tell apart from expiries. Same as the Redis store. */
export const RELEASED_MEMORY = 1000
/** How long a release is remembered for `leaseState` (ms). Same as the Redis store. */
export const RELEASED_KEEP_MS = 3_600_000

export interface MemoryStoreOptions {
  /** The clock, in ms. Defaults to `Date.now` (read at call time, so fake timers work). */
  now?: () => number
}

interface Holder {
  expiresAt: number
  weight: number
  fence: number
}

interface Waiter {
  id: string
  /** Arrival number: the line is ordered by it, in both orders. */
  seq: number
  weight: number
  claimWindow: number
  /** Loses its place at this time unless seen again. */
  deadline: number
  /** The timeout its deadline was set from (the `seen` bucket it is in). */
  timeout: number
}

/** One semaphore's state. Dropped from the store when empty. */
class Semaphore {
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

  get empty(): boolean {
    return (
      this.holders.size === 0 &&
      this.waiters.size === 0 &&
      this.released.size === 0 &&
      this.admissions.length === 0
    )
  }

  purgeHolders(now: number): void {
    for (const [token, h] of this.holders) {
      if (h.expiresAt <= now) {
        this.holders.delete(token)
        this.used -= h.weight
      }
    }
    for (const [token, at] of this.released) {
      if (at > now - RELEASED_KEEP_MS && this.released.size <= RELEASED_MEMORY) break
      this.released.delete(token)
    }
  }

  purgeWaiters(now: number): void {
    for (const bucket of this.seen.values()) {
      for (const id of bucket.keys()) {
        const w = this.waiters.get(id)
        if (w && w.deadline > now) break
        this.removeWaiter(id)
      }
    }
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
    for (const [id, until] of this.reserved) if (until <= now) this.removeWaiter(id)
    let free = limit - this.used - this.reservedWeight
    const fresh: string[] = []
    let open = this.line.length - this.reserved.size
    while (free > 0 && open > 0) {
      const w = this.order === 'random' ? this.draw(open) : this.line.find((x) => !this.reserved.has(x.id))!
      if (w.weight > free) break
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

/**
 * The embedded default store: the same semantics as the Redis store, inside one process.
 * No timers (state is cleaned lazily on each call), so it never keeps a process alive, and it reads
 * the clock at call time, so fake timers drive it.
 */
export class MemoryStore implements Store {
  readonly kind = 'memory'
  private readonly sems = new Map<string, Semaphore>()
  private readonly fences = new Map<string, number>()
  private readonly listeners = new Map<string, Set<(head: string) => void>>()
  private readonly now: () => number
  private closed = false

  constructor(options: MemoryStoreOptions = {}) {
    knownKeys('memoryStore()', options, ['now'])
    this.now = options.now ?? (() => Date.now())
  }

  private sem(name: string): Semaphore {
    this.assertOpen()
    let s = this.sems.get(name)
    if (!s) {
      s = new Semaphore()
      this.sems.set(name, s)
    }
    return s
  }

  private tidy(name: string, s: Semaphore): void {
    if (s.empty) this.sems.delete(name)
  }

  private assertOpen(): void {
    if (this.closed) throw new AirlockError('ERR_AIRLOCK_CLOSED', 'the memory store was closed')
  }

  /** Tells subscribers of `name` that room may be theirs (asynchronously, like a pub/sub message). */
  private wake(name: string, ids: readonly (string | undefined)[]): void {
    const set = this.listeners.get(name)
    if (!set) return
    const targets = ids.filter((id): id is string => id !== undefined)
    if (targets.length === 0) return
    queueMicrotask(() => {
      for (const id of targets) for (const listener of set) listener(id)
    })
  }

  async acquire(name: string, req: AcquireRequest): Promise<AcquireResult> {
    const s = this.sem(name)
    const now = this.now()
    s.purgeHolders(now)
    s.purgeWaiters(now)
    const q = req.queue
    try {
      const held = s.holders.get(req.token)
      if (held) return { status: 'acquired', fence: held.fence, expiresAt: held.expiresAt, now }

      const mayAdmit = q?.admit !== false
      let mine = s.waiters.get(req.token)
      // A sign of life: the waiter keeps its place for idleTimeout (a new place had only confirmTimeout).
      if (mine && q) s.touchWaiter(mine, now, q.idleTimeout)
      if (s.line.length === 0) {
        if (mayAdmit && s.used + req.weight <= req.limit) {
          if (mine) s.removeWaiter(mine.id)
          return this.admit(s, name, req, now, false)
        }
      } else {
        const claimed = this.settleFor(s, name, req, now, mayAdmit)
        if (claimed) return claimed
        // settle may have just skipped the caller itself (its reservation lapsed): it is no longer
        // in line, and is treated as a newcomer (a poll reads absent).
        if (mine && s.waiters.get(req.token) !== mine) mine = undefined
      }

      if (mine) return this.queued(s, mine, now)
      if (!q) return { status: 'busy', now, nextExpiry: s.nextExpiry() }
      if (!mayAdmit) return { status: 'absent', now }
      if (q.maxLength > 0 && s.line.length >= q.maxLength) return { status: 'full', waiting: s.line.length, now }
      // A new place lives only confirmTimeout unless the waiter comes back (then idleTimeout).
      const timeout = q.confirmTimeout || q.idleTimeout
      const waiter: Waiter = {
        id: req.token,
        seq: ++s.seq,
        weight: req.weight,
        claimWindow: q.claimWindow,
        deadline: now + timeout,
        timeout,
      }
      s.order = q.order
      s.addWaiter(waiter)
      return this.settleFor(s, name, req, now, mayAdmit) ?? this.queued(s, waiter, now)
    } finally {
      this.tidy(name, s)
    }
  }

  /**
   * Settles the line and, when room is now reserved for the caller, admits it from the line.
   * Wakes the other waiters reserved now.
   */
  private settleFor(s: Semaphore, name: string, req: AcquireRequest, now: number, mayAdmit: boolean): AcquireResult | undefined {
    const fresh = s.settle(now, req.limit)
    if (mayAdmit && s.reserved.has(req.token)) {
      s.removeWaiter(req.token)
      this.wake(name, fresh.filter((id) => id !== req.token))
      return this.admit(s, name, req, now, true)
    }
    this.wake(name, fresh)
    return undefined
  }

  /**
   * `fromLine`: admitted from the line. Only those admissions are recorded for the ETA: they
   * measure how fast the line moves (direct admissions while nobody waits measure arrivals).
   */
  private admit(s: Semaphore, name: string, req: AcquireRequest, now: number, fromLine: boolean): AcquireResult {
    const fence = (this.fences.get(name) ?? 0) + 1
    this.fences.set(name, fence)
    const expiresAt = now + req.ttl
    s.holders.set(req.token, { expiresAt, weight: req.weight, fence })
    s.used += req.weight
    if (fromLine) s.admissions.push(now)
    return { status: 'acquired', fence, expiresAt, now }
  }

  private queued(s: Semaphore, w: Waiter, now: number): AcquireResult {
    return {
      status: 'queued',
      position: s.rank(w.seq) + 1,
      waiting: s.line.length,
      now,
      nextExpiry: s.nextExpiry(),
      ...s.admissionsIn(now),
    }
  }

  async refresh(name: string, token: string, ttl: number): Promise<RefreshResult> {
    const s = this.sem(name)
    const now = this.now()
    const h = s.holders.get(token)
    if (!h || h.expiresAt <= now) {
      this.tidy(name, s)
      return { ok: false }
    }
    h.expiresAt = now + ttl
    return { ok: true, expiresAt: h.expiresAt, fence: h.fence }
  }

  async release(name: string, token: string): Promise<boolean> {
    const s = this.sem(name)
    const now = this.now()
    s.purgeHolders(now)
    const h = s.holders.get(token)
    if (!h) {
      this.tidy(name, s)
      return false
    }
    s.holders.delete(token)
    s.used -= h.weight
    s.released.set(token, now)
    s.purgeHolders(now)
    this.wake(name, [s.firstOpen()])
    return true
  }

  async leave(name: string, token: string): Promise<boolean> {
    const s = this.sem(name)
    const wasReserved = s.reserved.has(token)
    const left = s.removeWaiter(token)
    if (wasReserved) this.wake(name, [s.firstOpen()])
    this.tidy(name, s)
    return left
  }

  async leaseState(name: string, token: string): Promise<LeaseState> {
    this.assertOpen()
    const s = this.sems.get(name)
    if (!s) return 'expired'
    const h = s.holders.get(token)
    if (h) return h.expiresAt > this.now() ? 'acquired' : 'expired'
    return s.released.has(token) ? 'released' : 'expired'
  }

  async state(name: string): Promise<{ held: number; waiting: number }> {
    const s = this.sem(name)
    const now = this.now()
    s.purgeHolders(now)
    s.purgeWaiters(now)
    const result = { held: s.used, waiting: s.line.length }
    this.tidy(name, s)
    return result
  }

  async forceReleaseAll(name: string): Promise<number> {
    const s = this.sem(name)
    const now = this.now()
    s.purgeHolders(now)
    const count = s.holders.size
    for (const token of s.holders.keys()) s.released.set(token, now)
    s.holders.clear()
    s.used = 0
    s.purgeHolders(now)
    this.wake(name, [s.firstOpen()])
    this.tidy(name, s)
    return count
  }

  async subscribe(name: string, listener: (headToken: string) => void): Promise<() => void> {
    this.assertOpen()
    let set = this.listeners.get(name)
    if (!set) {
      set = new Set()
      this.listeners.set(name, set)
    }
    set.add(listener)
    return () => {
      set.delete(listener)
      if (set.size === 0) this.listeners.delete(name)
    }
  }

  async close(): Promise<void> {
    this.closed = true
    this.listeners.clear()
    this.sems.clear()
  }
}

/** Creates an in-process store. The default store when none is given. */
export function memoryStore(options?: MemoryStoreOptions): MemoryStore {
  return new MemoryStore(options)
}

let shared: MemoryStore | undefined

/** The process-wide memory store used when no `store` option is given. */
export function defaultStore(): MemoryStore {
  shared ??= new MemoryStore()
  return shared
}
