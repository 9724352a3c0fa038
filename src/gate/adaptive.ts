/**
 * The gate's adaptive limit (`limit: { min, max, initial? }`): it measures admitted work (request
 * mode: the handler's own time, from admission to the slot's release; session mode: the response
 * time of admitted requests) and hands each window to the store (`Store.adapt`), which adds up
 * every instance's; one instance at a time judges the fleet's window with the estimator
 * (src/core/adaptive.ts, its state kept in the store) and moves the fleet's one figure (per
 * instance where the store keeps none).
 * The operator's live limit still wins (EffectiveLimit).
 */
import { limitChannel, type LimitEvent } from '../base/events.js'
import { AdaptiveEstimator, histogramQuantile, LATENCY_BUCKETS, latencyBucket, type AdaptiveStep } from '../core/adaptive.js'
import { AdaptiveBoard } from '../stores/adaptive-board.js'
import { applyFactor, type AdaptReport, type Store } from '../stores/types.js'
import type { EffectiveLimit } from './limit.js'

export interface AdaptiveSettings {
  min: number
  max: number
  initial: number
}

/** The adaptive limit as `gate.status()` shows it. */
export interface AdaptiveState extends AdaptiveSettings {
  /** The fleet's figure now. */
  limit: number
  /** The no-load latency estimate and the last window's 95th percentile (ms). */
  baseline: number | null
  recent: number | null
  /** Why the last window moved it (or not). */
  reason: AdaptiveStep['reason'] | 'start'
}

/** How often each instance hands its window to the fleet (ms): short, because a fleet sees the effect of a change only a window or two later. */
export const ADAPTIVE_WINDOW_MS = 125

/** Samples a window needs before it is judged (else it waits, up to 4 windows): a 95th percentile of fewer is mostly noise. */
const JUDGE_SAMPLES = 20

export class Adaptor {
  readonly #buckets = new Uint32Array(LATENCY_BUCKETS)
  #samples = 0
  #failures = 0
  #refused = 0
  #timer: NodeJS.Timeout | undefined
  #busy = false
  #state: AdaptiveState
  /** Where the fleet's figure is kept: the store, or this gate alone when the store keeps none. */
  readonly #fleet: Pick<Required<Store>, 'adapt' | 'adaptCommit'>

  constructor(
    private readonly name: string,
    store: Store,
    private readonly limit: EffectiveLimit,
    private readonly settings: AdaptiveSettings,
    private readonly window: number,
    private readonly onError: (err: unknown) => void,
  ) {
    this.#state = { ...settings, limit: settings.initial, baseline: null, recent: null, reason: 'start' }
    limit.setAdaptive(settings.initial)
    if (typeof store.adapt === 'function' && typeof store.adaptCommit === 'function') {
      this.#fleet = { adapt: store.adapt.bind(store), adaptCommit: store.adaptCommit.bind(store) }
    } else {
      const board = new AdaptiveBoard()
      this.#fleet = { adapt: async (_, r) => board.report(r, Date.now()), adaptCommit: async (_, c) => board.commit(c) }
    }
    this.#timer = setInterval(() => void this.tick(), window).unref()
  }

  get state(): AdaptiveState {
    return this.#state
  }

  /** One admitted request ended after `ms`; `failed`: a 5xx, a thrown handler, a timeout. */
  measured(ms: number, failed: boolean): void {
    this.#buckets[latencyBucket(ms)]!++
    this.#samples++
    if (failed) this.#failures++
  }

  /** A visitor was turned away or queued: demand above the limit. */
  refused(): void {
    this.#refused++
  }

  /**
   * Hands this window to the fleet and, when it is this instance's turn to judge, judges the
   * fleet's window (every instance's measurements) with the estimator as the last judge left it.
   */
  async tick(): Promise<void> {
    if (this.#busy) return
    this.#busy = true
    const { min, max, initial } = this.settings
    try {
      const answer = await this.#fleet.adapt(this.name, { ...this.#take(), min, max, initial, every: this.window, minSamples: JUDGE_SAMPLES })
      let limit = answer.limit
      let state = answer.state
      if (answer.judge) {
        const { turn, samples, failures, refused, buckets } = answer.judge
        const estimator = AdaptiveEstimator.restore(answer.state)
        const step = estimator.step({ samples, failures, refused, p95: histogramQuantile(new Map(buckets), 0.95) }, limit)
        const next = applyFactor(limit, step.factor, min, max)
        const saved = estimator.save()
        if (await this.#fleet.adaptCommit(this.name, { turn, limit: next, state: saved, min, max })) {
          limit = next
          state = saved
        }
      }
      this.#show(limit, state)
    } catch (err) {
      this.onError(err)
    } finally {
      this.#busy = false
    }
  }

  /** This window's measurements, and a fresh window. */
  #take(): Pick<AdaptReport, 'samples' | 'failures' | 'refused' | 'buckets'> {
    const buckets: [number, number][] = []
    if (this.#samples > 0) {
      for (let i = 0; i < LATENCY_BUCKETS; i++) if (this.#buckets[i]! > 0) buckets.push([i, this.#buckets[i]!])
      this.#buckets.fill(0)
    }
    const taken = { samples: this.#samples, failures: this.#failures, refused: this.#refused, buckets }
    this.#samples = this.#failures = this.#refused = 0
    return taken
  }

  /** Puts the fleet's figure in force here, and tells of a change. */
  #show(limit: number, state: string | null): void {
    const previous = this.#state.limit
    const estimator = AdaptiveEstimator.restore(state)
    const { reason, recent } = estimator.last
    this.#state = { ...this.settings, limit, baseline: estimator.baseline, recent, reason }
    this.limit.setAdaptive(limit)
    if (limit !== previous && limitChannel.hasSubscribers) {
      limitChannel.publish({ gate: this.name, limit, previous, reason, baseline: estimator.baseline, recent } satisfies LimitEvent)
    }
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer)
  }
}

/** Request mode: measures a request from its admission (`t0`, performance.now()) to its slot's release. */
export function measureFrom(adaptor: Adaptor, t0: number): (failed: boolean) => void {
  return (failed) => adaptor.measured(performance.now() - t0, failed)
}
