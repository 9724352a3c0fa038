/**
 * Request mode's decision flow: every request holds a slot while its handler runs, taken from the
 * gate's pool of finished requests' slots (synchronously, `reuseWindow`) or from the store.
 */
import type { Lease } from '../core/semaphore.js'
import { releaseLateTry } from './decisions.js'
import { measureFrom, type AdaptiveGate } from './adaptive.js'
import { pooledSlot, requestSlot, SlotPool, type PooledSlot } from './slot-pool.js'
import { Flow, type GateParts } from './flow.js'
import type { AdmitDecision, GateDecision, RequestView } from './types.js'

export class RequestFlow<Req> extends Flow<Req> {
  /** Request mode's reusable slots (`reuseWindow` > 0). */
  private readonly pool: SlotPool | undefined

  constructor(
    parts: GateParts<Req>,
    private readonly adaptor: AdaptiveGate | undefined,
  ) {
    super(parts)
    const { s, limit } = parts
    this.pool =
      s.reuseWindow > 0
        ? new SlotPool(this.sem, {
            window: s.reuseWindow,
            confirmEvery: Math.min(1000, s.ttl / 4),
            onError: (err, op) => this.guard.logFailure(err, op),
            generation: () => limit.generation,
          })
        : undefined
    limit.onChange((now, previous) => void (now < previous && this.pool?.retire()))
  }

  /** Request mode: a slot from the pool (synchronous), else one from the store. */
  override decide(view: RequestView<Req>): GateDecision | Promise<GateDecision> {
    const now = Date.now()
    if (this.control.newcomers(now).kind !== 'normal') return this.busy(view, 'closed')
    if (this.quota.full(now)) return this.busy(view, 'full')
    // With an admission rate every request counts: no slot reuse.
    const pooled = this.control.rate === null ? this.pool?.take(now) : undefined
    return pooled !== undefined ? this.admitRequest(pooled) : this.acquireRequest(view)
  }

  override close(): Promise<void> | undefined {
    return this.pool?.close()
  }

  private async acquireRequest(view: RequestView<Req>): Promise<GateDecision> {
    const sentAt = Date.now()
    if (this.loss.quarantined(sentAt)) return this.storeFailed(view, undefined)
    let lease: Lease | null
    try {
      const got = await this.call(() => this.sem.tryAcquire(), sentAt + this.s.storeTimeout, releaseLateTry)
      this.tally.ended(got.ended)
      lease = got.lease
    } catch (err) {
      return this.storeFailed(view, err)
    }
    if (lease === null || !this.quota.keeps(lease, this.releaseError)) return this.full(view)
    return this.admitRequest(this.pool?.slot(lease, sentAt) ?? pooledSlot(lease, sentAt))
  }

  private admitRequest(slot: PooledSlot): AdmitDecision {
    const token = slot.lease.token
    const measured = this.adaptor && measureFrom(this.adaptor, performance.now())
    this.quota.entered()
    const admittedAt = Date.now()
    const counted = requestSlot(
      slot,
      this.pool,
      this.releaseError,
      measured,
      (by) => {
        this.quota.left()
        this.tally.released(by, Date.now() - admittedAt)
      },
      this.s.ttl,
    )
    return {
      kind: 'admit',
      reason: 'slot',
      token,
      setCookie: undefined,
      headers: undefined,
      response: undefined,
      slot: counted,
    }
  }
}
