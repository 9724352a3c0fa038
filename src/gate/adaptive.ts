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
import { AdaptiveEstimator, histogramQuantile, LATENCY_BUCKETS, latencyBucket, TUNING } from '../core/adaptive.js'
import { AdaptiveBoard } from '../stores/adaptive-board.js'
import type { AdaptReport, Store } from '../stores/types.js'
import type { EffectiveLimit } from './limit.js'
import { holdsPass } from './decisions.js'
import type { GateDecision } from './types.js'
import type { AdaptiveSettings } from './option-types.js'
import type { AdaptiveStatus } from './status-types.js'

/** How often each instance hands its window to the fleet (ms): short, because a fleet sees the effect of a change only a window or two later. */
export const ADAPTIVE_WINDOW_MS = 125

/**
 * Samples a window needs before it is judged (else it waits, up to 4 windows): a percentile of
 * fewer is mostly noise. Twice the limit when that is less (at least 5), so a small limit is judged
 * every window and the slow start from `min: 2` is not four times slower.
 */
const JUDGE_SAMPLES = 20
const judgeSamples = (limit: number): number => Math.max(5, Math.min(JUDGE_SAMPLES, 2 * limit))

/** An instance's own brake after a failure lasts until the fleet's figure is at or under it, or this many windows. */
const BRAKE_WINDOWS = 8

/**
 * The window's latency as the estimator judges it: its 75th percentile, never its slowest request
 * while it holds fewer than 8 (in a window of 6 the 75th percentile would be the slowest one, and
 * one request slowed by a garbage collection or a busy core would read as the backend slowing
 * down). Not the 95th: on a busy host the 95th percentile of a window swings with the host's own
 * load (measured on the real box under a perfect limit, latency constant: a sixth of the windows
 * 1.6x the baseline or more with two instances on its 2 cores), and the limit backed off from that
 * noise; a limit past the capacity slows every request let in after it, which the 75th sees.
 */
const WINDOW_QUANTILE = 0.75
function windowLatency(buckets: [number, number][], samples: number): number | null {
  return histogramQuantile(new Map(buckets), Math.min(WINDOW_QUANTILE, (samples - 2) / samples))
}

/** A failed request keeps its slot at most this long (ms), whatever a good request takes. */
const MAX_KEEP_MS = 5_000

/** Session mode: passes held back after a failure, at most (beyond, the list starts afresh). */
const MAX_HELD_BACK = 10_000

/** What an adaptive gate is made of, handed whole (one object, not a positional list). */
export interface AdaptiveGateParts {
  /** The gate's name: the fleet's figure is kept under it. */
  name: string
  store: Store
  /** The limit in force, which the adaptive figure feeds (the operator's live limit still wins). */
  limit: EffectiveLimit
  /** The bounds and the start (`limit: { min, max, initial? }`, resolved). */
  settings: AdaptiveSettings
  /** How often (ms) this instance hands its window to the fleet: {@link ADAPTIVE_WINDOW_MS}. */
  window: number
  /** Session mode: a slot is a visitor (see `AdaptiveWindow.sessions`). */
  sessions: boolean
  onError: (err: unknown) => void
  /** Session mode: gives back the pass `decision` holds (its visitor is a newcomer again). Default: nothing. */
  revoke?: (decision: GateDecision) => void
  /**
   * The time (`now`, ms) and the windows' timer (`repeat(tick, ms)` runs `tick` every `ms` and
   * answers how to stop it). Default: `Date.now` and an unref'd `setInterval`. The fleet simulator
   * (bench/simulate/) passes its virtual clock, so the same module runs hours in seconds.
   */
  clock?: AdaptiveClock
}

/** What the adaptive limit reads the time from (see {@link AdaptiveGateParts.clock}). */
export interface AdaptiveClock {
  now(): number
  repeat(tick: () => void, ms: number): () => void
}

const REAL_CLOCK: AdaptiveClock = {
  now: Date.now,
  repeat(tick, ms) {
    const timer = setInterval(tick, ms).unref()
    return () => clearInterval(timer)
  },
}

export class AdaptiveGate {
  private readonly name: string
  private readonly limit: EffectiveLimit
  private readonly settings: AdaptiveSettings
  private readonly window: number
  /** Session mode: a slot is a visitor (see `AdaptiveWindow.sessions`). */
  private readonly sessions: boolean
  private readonly onError: (err: unknown) => void
  /** Session mode: gives back the pass `decision` holds (its visitor is a newcomer again). */
  private readonly revoke: (decision: GateDecision) => void
  readonly #buckets = new Uint32Array(LATENCY_BUCKETS)
  #samples = 0
  #failures = 0
  #refused = 0
  readonly #stop: () => void
  readonly #clock: AdaptiveClock
  #busy = false
  #state: AdaptiveStatus
  /** A good request's time here (ms, a moving average): how long a failed request keeps its slot. */
  #good = 0
  /**
   * The instance's own brake: each failure it sees lowers its limit by one at once (to half the
   * fleet's figure at most), without waiting for the fleet's judge, until the fleet's figure is at
   * or under it; `windows`: how long it has held.
   */
  #brake: { limit: number; windows: number } | undefined
  /**
   * Session mode: the most passes out the store counted in the last window this instance judged
   * (`null` before one): above the figure in force, the visitors a cut meant to shed are still in.
   */
  #out: number | null = null
  /** Session mode: passes whose last request failed, and the local time before which their next one waits. */
  readonly #heldBack = new Map<string, number>()
  /** Where the fleet's figure is kept: the store, or this gate alone when the store keeps none. */
  readonly #fleet: Pick<Required<Store>, 'adapt' | 'adaptCommit'>

  constructor(parts: AdaptiveGateParts) {
    const { store, limit, settings, window } = parts
    ;({ name: this.name, limit: this.limit, settings: this.settings, window: this.window } = parts)
    ;({ sessions: this.sessions, onError: this.onError, revoke: this.revoke = () => {} } = parts)
    this.#state = { ...settings, limit: settings.initial, baseline: null, recent: null, reason: 'start' }
    limit.setAdaptive(settings.initial)
    if (typeof store.adapt === 'function' && typeof store.adaptCommit === 'function') {
      this.#fleet = { adapt: store.adapt.bind(store), adaptCommit: store.adaptCommit.bind(store) }
    } else {
      // A store that keeps no fleet figure: this gate keeps its own, and counts what is inside with state().
      const board = new AdaptiveBoard()
      this.#fleet = {
        adapt: async (n, r) => board.report(r, this.#clock.now(), (await store.state(n)).held),
        adaptCommit: async (_, c) => board.commit(c),
      }
    }
    this.#clock = parts.clock ?? REAL_CLOCK
    this.#stop = this.#clock.repeat(() => void this.tick(), window)
    // Go on from the fleet's figure at once (a restarted gate, a new instance), not after a window.
    void this.tick()
  }

  get state(): AdaptiveStatus {
    return this.#state
  }

  /**
   * One admitted request ended after `ms`; `failed`: a 5xx, a thrown handler, a timeout. A failure
   * brakes this instance at once, until the fleet's judge has spoken: one slot less per failure in
   * request mode (at most half the fleet's figure), one newcomer less in session mode. Session mode:
   * the pass `decision` held is given back when a cut meant to shed it (see #shed), else a failure
   * holds back its next request.
   */
  measured(ms: number, failed: boolean, decision?: GateDecision): void {
    this.#buckets[latencyBucket(ms)]!++
    this.#samples++
    if (this.sessions && decision !== undefined && holdsPass(decision) && this.#shed(ms, failed)) this.revoke(decision)
    else if (failed && decision !== undefined && holdsPass(decision)) this.#failedPass(decision.token, ms)
    if (!failed) {
      this.#good = this.#good === 0 ? ms : this.#good + (ms - this.#good) / 16
      return
    }
    this.#failures++
    const fleet = this.#state.limit
    const floor = Math.max(this.settings.min, Math.ceil(fleet / 2))
    // Request mode: each failure is about one slot too many (its slot is kept as long as a good
    // request's, so it does not cycle). Session mode: the failures of the visitors inside say little
    // of how many are too many; one newcomer less until the judge has spoken.
    const braked = this.sessions ? fleet - 1 : Math.min(fleet, this.#brake?.limit ?? fleet) - 1
    const limit = Math.max(floor, braked)
    this.#brake = { limit, windows: 0 }
    this.limit.setAdaptive(limit)
  }

  /**
   * Request mode: how much longer (ms) a failed request keeps its slot, `elapsed` ms after its
   * admission: up to a good request's time. A backend that fails at once then cannot turn a slot
   * past its capacity into thousands of failures a second; a failure costs what a success costs.
   */
  keepFailed(elapsed: number): number {
    return Math.max(0, Math.min(this.#good, MAX_KEEP_MS) - elapsed)
  }

  /**
   * Session mode: true when the visitor whose request just ended after `ms` (`failed`) is one a cut
   * meant to shed. Session mode cannot take passes back in general; but while more passes are out
   * than the figure in force (the store's count at the last judged window, less those shed since),
   * a visitor whose request failed or was sharply slower than the baseline (the backend past its
   * capacity) gives its pass back, and its next request is a newcomer's (busy, or queued). The cut
   * then holds within one request's time instead of lasting until visits end.
   */
  #shed(ms: number, failed: boolean): boolean {
    if (this.#out === null || this.#out <= this.limit.value) return false
    const baseline = this.#state.baseline
    if (!failed && (baseline === null || ms <= TUNING.sharp * baseline)) return false
    this.#out--
    return true
  }

  /**
   * Session mode: the request of pass `token` failed after `ms`. Its next request waits until a
   * good request's time has passed since this one began: a client that retries a fast failure at
   * once would otherwise fail thousands of times a second on a slot past the capacity.
   */
  #failedPass(token: string, ms: number): void {
    const keep = this.keepFailed(ms)
    if (keep <= 0) return
    if (this.#heldBack.size >= MAX_HELD_BACK) this.#heldBack.clear()
    this.#heldBack.set(token, this.#clock.now() + keep)
  }

  /**
   * Session mode: true when the limit learns from the response to `decision`: a pass holder, or a
   * newcomer admitted to a slot; not a request let in without a slot while the store failed
   * (`onStoreError: 'open'`): the limit did not let it in, so its outcome says nothing of the limit.
   */
  learnsFrom(decision: GateDecision): boolean {
    return decision.kind === 'pass' || (decision.kind === 'admit' && decision.reason !== 'store-unavailable')
  }

  /** A promise of `d` after the wait a failure of its pass set; `undefined`: go on now. */
  holdBack<D extends GateDecision>(d: D): Promise<D> | undefined {
    if (this.#heldBack.size === 0 || d.kind !== 'pass') return undefined
    const until = this.#heldBack.get(d.token)
    if (until === undefined) return undefined
    this.#heldBack.delete(d.token)
    const wait = until - this.#clock.now()
    return wait > 0 ? new Promise((resolve) => setTimeout(resolve, wait, d)) : undefined
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
    const { min, max } = this.settings
    // `initial`: the figure this instance last saw (its setting at first): a store that lost its
    // data (a restart, a failover) goes on from the figure in force, not from the setting.
    const initial = this.#state.limit
    try {
      const answer = await this.#fleet.adapt(this.name, {
        ...this.#take(),
        min,
        max,
        initial,
        every: this.window,
        minSamples: judgeSamples(this.#state.limit),
      })
      let limit = answer.limit
      let state = answer.state
      if (answer.judge) {
        const { turn, samples, failures, refused, inside, buckets } = answer.judge
        this.#out = inside
        const estimator = AdaptiveEstimator.restore(answer.state)
        // Judged at the figure that was in force: a live limit overrides the fleet's, and what the
        // window shows is what that figure let happen. So a cleared live limit leaves the adaptive
        // limit where the live one was tested, not where it was before (or grew to) unseen.
        const inForce = this.limit.control ?? limit
        const step = estimator.step(
          {
            samples,
            failures,
            refused,
            inside,
            sessions: this.sessions,
            latency: windowLatency(buckets, samples),
            at: this.#clock.now(),
          },
          inForce,
        )
        const next = Math.min(max, Math.max(min, step.limit))
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

  /** Puts the fleet's figure in force here (under this instance's brake while it holds), and tells of a change. */
  #show(limit: number, state: string | null): void {
    const previous = this.#state.limit
    const estimator = AdaptiveEstimator.restore(state)
    const { reason, recent } = estimator.last
    this.#state = { ...this.settings, limit, baseline: estimator.baseline, recent, reason }
    const brake = this.#brake
    // A brake holds until the fleet's figure is at or under it (a judge that cut less than the brake
    // found, from a window that saw only the first failures, must not undo it), or BRAKE_WINDOWS.
    if (brake !== undefined && (limit <= brake.limit || ++brake.windows > BRAKE_WINDOWS)) this.#brake = undefined
    this.limit.setAdaptive(this.#brake === undefined ? limit : Math.min(limit, this.#brake.limit))
    if (limit !== previous && limitChannel.hasSubscribers) {
      limitChannel.publish({
        gate: this.name,
        limit,
        previous,
        reason,
        baseline: estimator.baseline,
        recent,
      } satisfies LimitEvent)
    }
  }

  close(): void {
    this.#stop()
  }
}

/**
 * Request mode: measures a request from its admission (`t0`, performance.now()) to its slot's
 * release; answers how much longer a failed request keeps its slot.
 */
export function measureFrom(adaptor: AdaptiveGate, t0: number): (failed: boolean) => number {
  return (failed) => {
    const elapsed = performance.now() - t0
    adaptor.measured(elapsed, failed)
    return failed ? adaptor.keepFailed(elapsed) : 0
  }
}
