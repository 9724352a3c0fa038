import { AirlockError, optionError } from '../base/errors.js'
import { received, optionsObject } from '../base/validate.js'
import { MemorySemaphore, type Waiter } from './memory-semaphore.js'
import type { Standing } from './memory-shares.js'
import { AdaptiveBoard } from './adaptive-board.js'
import {
  LEFT_KEEP_MS,
  type AcquireRequest,
  type AcquireResult,
  type AdaptAnswer,
  type AdaptCommit,
  type AdaptReport,
  type ControlRecord,
  type LeaseState,
  type RefreshResult,
  type Released,
  type Store,
  type StoreStatus,
} from './types.js'

export interface MemoryStoreOptions {
  /** The clock, in ms. Defaults to `Date.now` (read at call time, so fake timers work). */
  now?: () => number
}

/**
 * The embedded default store: the same semantics as the Redis store, inside one process.
 * No timers (state is cleaned lazily on each call), so it never keeps a process alive, and it reads
 * the clock at call time, so fake timers drive it.
 */
export class MemoryStore implements Store {
  readonly kind = 'memory'
  private readonly sems = new Map<string, MemorySemaphore>()
  private readonly fences = new Map<string, number>()
  /** The admission rate's theoretical arrival time, by name (kept like fences: small, per name). */
  private readonly rates = new Map<string, number>()
  /** Live control records, by name, and who watches them. */
  private readonly controls = new Map<string, Record<string, string>>()
  private readonly controlWatchers = new Map<string, Set<() => void>>()
  /** The fleet's adaptive limit, by name. */
  private readonly adaptive = new Map<string, AdaptiveBoard>()
  private readonly listeners = new Map<string, Set<(head: string) => void>>()
  /** Instances' reports by name: instance id -> what it reported, and when that lapses. */
  private readonly reports = new Map<string, Map<string, { data: string; expiresAt: number }>>()
  private readonly now: () => number
  private closed = false

  constructor(options: MemoryStoreOptions = {}) {
    optionsObject('memoryStore()', options, ['now'])
    if (options.now !== undefined && typeof options.now !== 'function') {
      optionError(
        `now must be a function returning the time in ms, such as () => Date.now(), got ${received(options.now)}`,
      )
    }
    this.now = options.now ?? (() => Date.now())
  }

  private sem(name: string): MemorySemaphore {
    this.assertOpen()
    let s = this.sems.get(name)
    if (!s) {
      s = new MemorySemaphore()
      this.sems.set(name, s)
    }
    return s
  }

  private tidy(name: string, s: MemorySemaphore): void {
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
    try {
      return this.ended(s, this.decide(s, name, req, now))
    } finally {
      this.tidy(name, s)
    }
  }

  /** `result`, telling what expired or lapsed since the last answer. */
  private ended<R extends AcquireResult | StoreStatus>(s: MemorySemaphore, result: R): R {
    const ended = s.takeEnded()
    return ended === undefined ? result : { ...result, ended }
  }

  private decide(s: MemorySemaphore, name: string, req: AcquireRequest, now: number): AcquireResult {
    const q = req.queue
    const held = s.holders.get(req.token)
    if (held) return { status: 'acquired', fence: held.fence, expiresAt: held.expiresAt, now }

    const mayAdmit = q?.admit !== false
    const admits = mayAdmit && q?.hold !== true
    const cap = req.admissionRate
      ? Math.min(req.limit, s.used + this.rateRoom(name, now, req.admissionRate))
      : req.limit
    let mine = s.waiters.get(req.token)
    // A sign of life: the waiter keeps its place for idleTimeout (a new place had only confirmTimeout).
    if (mine && q) s.touchWaiter(mine, now, q.idleTimeout)
    // Left the line a moment ago: a poll already on its way takes no place and no slot.
    if (!mine && q && mayAdmit && s.justLeft(req.token, now)) return { status: 'absent', now }
    // A token new to the semaphore counts against its client's share.
    const share = req.client !== undefined && !mine && mayAdmit ? req.client : undefined
    if (share !== undefined) {
      const standing = (token: string): Standing =>
        s.holders.has(token) ? 'slot' : s.waiters.has(token) ? 'place' : 'none'
      s.shares.sweep(now, standing)
      if (!s.shares.allows(share, now, standing)) return { status: 'client-share', now }
    }
    const keep = Math.max(req.ttl, q?.idleTimeout ?? 0)
    if (s.line.length === 0) {
      if (admits && s.used + req.weight <= cap) {
        if (mine) s.removeWaiter(mine.id)
        if (share !== undefined) s.shares.take(share, req.token, now, keep)
        return this.admit(s, name, req, now, false)
      }
    } else {
      const claimed = this.settleFor(s, name, req, now, mayAdmit, cap)
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
      // A scheduled opening's pre-queue: ahead of every arrival number, in random order among itself.
      seq: q.shuffle ? q.shuffle - 2 ** 52 : ++s.seq,
      weight: req.weight,
      claimWindow: q.claimWindow,
      deadline: now + timeout,
      timeout,
      since: now,
    }
    s.order = q.order
    s.addWaiter(waiter)
    if (share !== undefined) s.shares.take(share, req.token, now, keep)
    return this.settleFor(s, name, req, now, mayAdmit, cap) ?? this.queued(s, waiter, now)
  }

  /**
   * Settles the line and, when room is now reserved for the caller, admits it from the line.
   * Wakes the other waiters reserved now.
   */
  private settleFor(
    s: MemorySemaphore,
    name: string,
    req: AcquireRequest,
    now: number,
    mayAdmit: boolean,
    cap: number,
  ): AcquireResult | undefined {
    // A held line admits nobody new; room reserved before the hold may still be claimed.
    const fresh = req.queue?.hold ? [] : s.settle(now, cap)
    const waiter = s.waiters.get(req.token)
    if (mayAdmit && waiter !== undefined && s.reserved.has(req.token)) {
      s.removeWaiter(req.token)
      this.wake(
        name,
        fresh.filter((id) => id !== req.token),
      )
      return this.admit(s, name, req, now, waiter.since)
    }
    this.wake(name, fresh)
    return undefined
  }

  /**
   * `fromLine`: admitted from the line, the time its place was taken. Only those admissions are recorded for the ETA: they
   * measure how fast the line moves (direct admissions while nobody waits measure arrivals).
   */
  private admit(
    s: MemorySemaphore,
    name: string,
    req: AcquireRequest,
    now: number,
    fromLine: number | false,
  ): AcquireResult {
    // Seeded from the clock like the Redis store's, so fences keep increasing across a restart.
    const fence = (this.fences.get(name) ?? Math.floor(now) * 1000) + 1
    this.fences.set(name, fence)
    const expiresAt = now + req.ttl
    s.holders.set(req.token, { expiresAt, weight: req.weight, fence, since: now })
    s.used += req.weight
    if (req.admissionRate) this.rateTake(name, now, req.admissionRate)
    if (fromLine === false) return { status: 'acquired', fence, expiresAt, now }
    s.admissions.push(now)
    return { status: 'acquired', fence, expiresAt, now, waited: Math.max(0, now - fromLine) }
  }

  /** Admissions the rate allows now (a GCRA, as the Redis store's: bursts of a second's worth, at least 2). */
  private rateRoom(name: string, now: number, rate: number): number {
    const t = 60_000 / rate
    const tau = t * (Math.max(2, Math.floor(rate / 60)) - 1)
    const tat = Math.max(this.rates.get(name) ?? 0, now)
    return Math.max(0, Math.floor((now + tau - tat) / t) + 1)
  }

  private rateTake(name: string, now: number, rate: number): void {
    this.rates.set(name, Math.max(this.rates.get(name) ?? 0, now) + 60_000 / rate)
  }

  private queued(s: MemorySemaphore, w: Waiter, now: number): AcquireResult {
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
    s.shares.drop(token)
    return { ok: true, expiresAt: h.expiresAt, fence: h.fence }
  }

  async release(name: string, token: string): Promise<boolean> {
    return (await this.releaseHeld(name, token)) !== false
  }

  async releaseHeld(name: string, token: string): Promise<Released> {
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
    return { heldMs: Math.max(0, now - h.since) }
  }

  async leave(name: string, token: string, keepOut = false): Promise<boolean> {
    const s = this.sem(name)
    const now = this.now()
    const wasReserved = s.reserved.has(token)
    const left = s.removeWaiter(token)
    if (keepOut && !s.holders.has(token)) {
      s.justLeft(token, now) // drops lapsed marks
      s.left.delete(token) // re-inserted last, keeping the map in lapse order
      s.left.set(token, now + LEFT_KEEP_MS)
    }
    if (wasReserved) this.wake(name, [s.firstOpen()])
    this.tidy(name, s)
    return left
  }

  /**
   * The fence of `token`'s live slot, or `null`: synchronous, so a caller can check a lease and act
   * in one step (the lock service's memory storage writes data only while the writer holds the lock).
   */
  liveFence(name: string, token: string): number | null {
    this.assertOpen()
    const h = this.sems.get(name)?.holders.get(token)
    return h !== undefined && h.expiresAt > this.now() ? h.fence : null
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

  async writeStatus(name: string, instance: string, data: string, ttl: number): Promise<number> {
    this.assertOpen()
    let reports = this.reports.get(name)
    if (!reports) {
      reports = new Map()
      this.reports.set(name, reports)
    }
    const now = this.now()
    reports.set(instance, { data, expiresAt: now + ttl })
    for (const [id, r] of reports) if (r.expiresAt <= now) reports.delete(id)
    return reports.size
  }

  async status(name: string): Promise<StoreStatus> {
    const s = this.sem(name)
    const now = this.now()
    s.purgeHolders(now)
    s.purgeWaiters(now)
    const instances: StoreStatus['instances'] = []
    const reports = this.reports.get(name)
    for (const [id, r] of reports ?? []) {
      if (r.expiresAt <= now) reports!.delete(id)
      else instances.push({ id, data: r.data, expiresAt: r.expiresAt })
    }
    if (reports?.size === 0) this.reports.delete(name)
    const result = this.ended(s, { held: s.used, waiting: s.line.length, ...s.admissionsIn(now), instances, now })
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

  async control(name: string, patch?: Readonly<Record<string, string | null>>): Promise<ControlRecord> {
    this.assertOpen()
    let fields = this.controls.get(name) ?? {}
    if (patch !== undefined) {
      fields = { ...fields }
      for (const [field, value] of Object.entries(patch)) {
        if (value === null) delete fields[field]
        else fields[field] = value
      }
      fields['#v'] = String(Number(fields['#v'] ?? 0) + 1)
      this.controls.set(name, fields)
      const watchers = this.controlWatchers.get(name)
      if (watchers)
        queueMicrotask(() => {
          for (const w of watchers) w()
        })
    }
    const { '#v': version, ...rest } = fields
    return { fields: rest, version: Number(version ?? 0), now: this.now() }
  }

  async adapt(name: string, report: AdaptReport): Promise<AdaptAnswer> {
    this.assertOpen()
    let board = this.adaptive.get(name)
    if (!board) this.adaptive.set(name, (board = new AdaptiveBoard()))
    const now = this.now()
    const slots = this.sems.get(name)
    slots?.purgeHolders(now)
    return board.report(report, now, slots?.holders.size ?? 0)
  }

  async adaptCommit(name: string, commit: AdaptCommit): Promise<boolean> {
    this.assertOpen()
    return this.adaptive.get(name)?.commit(commit) ?? false
  }

  async watchControl(name: string, listener: () => void): Promise<() => void> {
    this.assertOpen()
    let set = this.controlWatchers.get(name)
    if (!set) this.controlWatchers.set(name, (set = new Set()))
    set.add(listener)
    return () => {
      set.delete(listener)
      if (set.size === 0 && this.controlWatchers.get(name) === set) this.controlWatchers.delete(name)
    }
  }

  async close(): Promise<void> {
    this.closed = true
    this.listeners.clear()
    this.controlWatchers.clear()
    this.sems.clear()
    this.reports.clear()
  }
}

/** Creates an in-process store. The default store when none is given. */
export function memoryStore(options?: MemoryStoreOptions): MemoryStore {
  return new MemoryStore(options)
}
