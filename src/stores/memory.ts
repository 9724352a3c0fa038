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
  score: number
  weight: number
  claimWindow: number
  /** Loses its place at this time unless seen again. */
  deadline: number
}

/** One semaphore's state. Dropped from the store when empty. */
class Semaphore {
  readonly holders = new Map<string, Holder>()
  used = 0
  /** The line, sorted by (score, id) like a Redis sorted set. */
  readonly line: Waiter[] = []
  readonly waiters = new Map<string, Waiter>()
  /** Waiter ids in order of last sign of life (re-inserted on each touch). */
  readonly seen = new Map<string, true>()
  reservation: { id: string; until: number } | null = null
  seq = 0
  readonly admissions: number[] = []
  readonly released = new Map<string, number>()

  get empty(): boolean {
    return this.holders.size === 0 && this.line.length === 0 && this.released.size === 0 && this.admissions.length === 0
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
    for (const id of this.seen.keys()) {
      const w = this.waiters.get(id)
      if (w && w.deadline > now) break
      this.removeWaiter(id)
    }
  }

  nextExpiry(): number | null {
    let next: number | null = null
    for (const h of this.holders.values()) if (next === null || h.expiresAt < next) next = h.expiresAt
    return next
  }

  rank(w: Waiter): number {
    let lo = 0
    let hi = this.line.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (compare(this.line[mid]!, w) < 0) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  addWaiter(w: Waiter): void {
    this.waiters.set(w.id, w)
    this.line.splice(this.rank(w), 0, w)
    this.seen.set(w.id, true)
  }

  touchWaiter(w: Waiter, deadline: number): void {
    w.deadline = deadline
    this.seen.delete(w.id)
    this.seen.set(w.id, true)
  }

  removeWaiter(id: string): boolean {
    const w = this.waiters.get(id)
    this.seen.delete(id)
    if (!w) return false
    this.waiters.delete(id)
    this.line.splice(this.rank(w), 1)
    if (this.reservation?.id === id) this.reservation = null
    return true
  }

  /** The head's id when it may take a slot now (the room is reserved for it), else null. */
  settleHead(now: number, limit: number): string | null {
    for (;;) {
      const head = this.line[0]
      if (!head || this.used + head.weight > limit) {
        this.reservation = null
        return null
      }
      if (this.reservation?.id !== head.id) {
        this.reservation = { id: head.id, until: now + head.claimWindow }
        return head.id
      }
      if (this.reservation.until > now) return head.id
      this.removeWaiter(head.id) // did not claim in time: skip it
    }
  }

  admissionsIn(now: number): { admitted: number; windowMs: number } {
    while (this.admissions.length > 0 && this.admissions[0]! <= now - ADMISSION_WINDOW_MS) this.admissions.shift()
    const first = this.admissions[0]
    return { admitted: this.admissions.length, windowMs: first === undefined ? 0 : now - first }
  }
}

function compare(a: Waiter, b: Waiter): number {
  if (a.score !== b.score) return a.score - b.score
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0
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

  private wake(name: string, s: Semaphore): void {
    const head = s.line[0]
    if (!head) return
    const set = this.listeners.get(name)
    if (!set) return
    // Deliver asynchronously, like a pub/sub message, so callers never re-enter the store.
    queueMicrotask(() => {
      for (const listener of set) listener(head.id)
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

      let mine = s.waiters.get(req.token)
      if (mine && q) s.touchWaiter(mine, now + q.idleTimeout)
      const mayAdmit = q?.admit !== false
      const head = s.settleHead(now, req.limit)
      // settleHead may have just skipped the caller itself (its claim window ran out): it is no
      // longer in line, and is treated as a newcomer (a poll reads absent).
      if (mine && s.waiters.get(req.token) !== mine) mine = undefined

      if (s.line.length === 0) {
        if (mayAdmit && s.used + req.weight <= req.limit) return this.admit(name, s, req, now, false)
      } else if (head === req.token && mayAdmit) {
        s.removeWaiter(req.token)
        const result = this.admit(name, s, req, now, true)
        s.settleHead(now, req.limit)
        this.wake(name, s)
        return result
      }

      if (mine) return this.queued(s, mine, now)
      if (!q) return { status: 'busy', now, nextExpiry: s.nextExpiry() }
      if (!mayAdmit) return { status: 'absent', now }
      if (q.maxLength > 0 && s.line.length >= q.maxLength) return { status: 'full', waiting: s.line.length, now }
      const waiter: Waiter = {
        id: req.token,
        score: q.order === 'random' ? Math.random() : ++s.seq,
        weight: req.weight,
        claimWindow: q.claimWindow,
        deadline: now + q.idleTimeout,
      }
      s.addWaiter(waiter)
      return this.queued(s, waiter, now)
    } finally {
      this.tidy(name, s)
    }
  }

  /**
   * `fromLine`: the head of the line takes its slot. Only those admissions are recorded for the
   * ETA: they measure how fast the line moves (direct admissions while nobody waits measure arrivals).
   */
  private admit(name: string, s: Semaphore, req: AcquireRequest, now: number, fromLine: boolean): AcquireResult {
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
      position: s.rank(w) + 1,
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
    this.wake(name, s)
    return true
  }

  async leave(name: string, token: string): Promise<boolean> {
    const s = this.sem(name)
    const wasHead = s.line[0]?.id === token
    const left = s.removeWaiter(token)
    if (wasHead) this.wake(name, s)
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
    this.wake(name, s)
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
