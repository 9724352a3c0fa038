/**
 * What the gate's two decision flows (session.ts, request.ts) share: the parts of the gate they
 * decide with (built once by the gate), one store call within a decision's budget, and the
 * refusals: busy, full, and the store could not decide (`onStoreError`).
 */
import type { Semaphore } from '../core/semaphore.js'
import type { GateAnswers } from './busy.js'
import type { BusyReason } from '../pages/answers.js'
import type { StoreGuard } from '../core/guard.js'
import type { LocalQuota } from './local-quota.js'
import type { LossWatch } from './failover.js'
import type { EffectiveLimit } from './limit.js'
import type { GateSettings } from './options.js'
import type { ControlInForce } from './live-control.js'
import type { Tally } from './tally.js'
import type { BusyDecision, GateDecision, RequestView } from './types.js'

/** The parts of a gate its decision flows use. */
export interface GateParts<Req> {
  readonly s: GateSettings<Req>
  readonly sem: Semaphore
  readonly guard: StoreGuard
  readonly answers: GateAnswers<Req>
  readonly limit: EffectiveLimit
  /** The limit in force and the admission rate, as the store calls read them (one closure each per gate). */
  readonly liveLimit: () => number
  readonly admissionRate: () => number | null
  readonly control: ControlInForce
  /** The store unavailable (`onStoreError: 'local'`), or it lost its last writes (a failover). */
  readonly quota: LocalQuota
  readonly loss: LossWatch
  /** The gate's account of its visitors: every sink it has (see tally.ts). */
  readonly tally: Tally
}

/** One mode's decision flow, behind the `Gate` façade. */
export abstract class Flow<Req> {
  protected readonly s: GateSettings<Req>
  protected readonly sem: Semaphore
  protected readonly guard: StoreGuard
  protected readonly answers: GateAnswers<Req>
  protected readonly limit: EffectiveLimit
  protected readonly control: ControlInForce
  protected readonly quota: LocalQuota
  protected readonly loss: LossWatch
  protected readonly tally: Tally
  protected readonly releaseError = (err: unknown): void => this.guard.logFailure(err, 'release')

  constructor(parts: GateParts<Req>) {
    ;({
      s: this.s,
      sem: this.sem,
      guard: this.guard,
      answers: this.answers,
      limit: this.limit,
      control: this.control,
      quota: this.quota,
      loss: this.loss,
      tally: this.tally,
    } = parts)
  }

  /** A request that is gated (not bypassed, not skipped, no passthrough): synchronous when it can be. */
  abstract decide(view: RequestView<Req>): GateDecision | Promise<GateDecision>

  /** Stops what the flow runs (request mode's slot pool). */
  close(): Promise<void> | undefined {
    return undefined
  }

  protected busy(view: RequestView<Req>, reason: BusyReason): BusyDecision {
    return this.answers.busy(view, reason)
  }

  /** One store call within what is left of the decision's budget (see {@link StoreGuard}). */
  protected call<T>(op: () => Promise<T>, deadline: number, onLate?: (value: T) => void): Promise<T> {
    return this.guard.call(op, deadline, this.s.storeTimeout, onLate)
  }

  /** No slot: the site is full, or the store found it answers from another server meanwhile (a failover). */
  protected full(view: RequestView<Req>): GateDecision {
    return this.loss.quarantined(Date.now()) ? this.storeFailed(view, undefined) : this.busy(view, 'full')
  }

  /**
   * The store could not decide (`holder`: for a validly signed pass it could not re-check), or
   * (`err` undefined: not logged here) may have lost slots it counts as free: see `LocalQuota.outage`.
   */
  protected storeFailed(view: RequestView<Req>, err: unknown, holder = false): GateDecision {
    const policy = this.s.onStoreError
    if (err !== undefined)
      this.guard.logFailure(
        err,
        policy === 'local' ? 'admitting within the local quota' : policy === 'open' ? 'failing open' : 'failing closed',
      )
    return this.quota.outage(policy, holder, Date.now()) ?? this.busy(view, 'store-unavailable')
  }
}
