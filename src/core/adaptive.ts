/**
 * The adaptive limit's estimator, pure and framework-free: from what admitted work measured in
 * one window (latency, failures, whether anyone was turned away) it proposes how to move the
 * limit. A latency gradient against a slowly rising baseline (as Netflix's Gradient2 and Envoy's
 * adaptive concurrency), with failures as the strong signal (as AIMD), and growth only while
 * demand presses on the limit (so an idle site does not drift to `max`). Reasons in docs/adaptive.md.
 */

/** What admitted work measured in one window. */
export interface AdaptiveWindow {
  /** Requests that ended in the window. */
  samples: number
  /** Their 95th percentile time (ms); `null` without samples. */
  p95: number | null
  /** Those that failed (5xx, a thrown handler, a timeout). */
  failures: number
  /** Visitors turned away or queued in the window: demand above the limit. */
  refused: number
}

/** A proposed move: multiply the limit by `factor` (1: hold), and why. */
export interface AdaptiveStep {
  factor: number
  reason: 'failures' | 'latency' | 'growth' | 'steady' | 'idle' | 'drain'
  /** The latency baseline and the window's median it judged (ms). */
  baseline: number | null
  recent: number | null
}

/** Latency this much above the baseline, two windows in a row, counts as the backend slowing down... */
export const TOLERANCE = 1.15
/** ...and this much above it at once (one slow window alone is often the host's noise). */
export const SHARP = 1.6
/** Growth per window while demand presses and latency holds, far below the last limit that hurt. */
export const GROWTH = 1.25
/** Growth per window before any trouble was ever seen (a slow start, as TCP's). */
export const START = 1.5
/** Grown this far past the last limit that hurt without trouble, the mark is forgotten (capacity grew). */
const PAST = 1.2
/** The baseline rises this much per window without a lower sample: it follows a backend that got slower for good, over minutes, not a busy one over seconds. */
const BASELINE_DRIFT = 1.001
/** A gentle latency rise counts within this many windows of a growth. */
const RECENT_GROWTH = 6
/** Windows after a backoff that latency is not judged in (requests admitted before it still ending, reports arriving late). */
const DRAIN = 3
/** Fewer samples than this say nothing about latency. */
const MIN_SAMPLES = 5
const REASONS = ['failures', 'latency', 'growth', 'steady', 'idle', 'drain', 'start'] as const

/**
 * Latencies as a histogram that instances can add up: bucket `i` holds times around
 * `expm1(i / 40)` ms (buckets about 2.5 % wide from a few ms up, so a fleet's 95th percentile is
 * within about 1.3 % of the exact one), up to a minute.
 */
export const LATENCY_BUCKETS = 441
export function latencyBucket(ms: number): number {
  return Math.min(LATENCY_BUCKETS - 1, Math.round(Math.log1p(Math.max(0, ms)) * 40))
}

/** The `q` quantile (ms) of a histogram given as bucket index → count; `null` when empty. */
export function histogramQuantile(buckets: ReadonlyMap<number, number>, q: number): number | null {
  let n = 0
  for (const c of buckets.values()) n += c
  if (n === 0) return null
  // The same rank as sorted[floor(q n)] in a sorted array of the samples.
  const rank = Math.min(n, Math.floor(n * q) + 1)
  let seen = 0
  for (const i of [...buckets.keys()].sort((a, b) => a - b)) {
    seen += buckets.get(i)!
    if (seen >= rank) return Math.expm1(i / 40)
  }
  return null
}

export class AdaptiveEstimator {
  #baseline: number | null = null
  /** The limit when trouble (failures, latency) was last seen: growth slows near it. */
  #ceiling: number | null = null
  /** Windows since the last backoff. */
  #sinceBackoff = Infinity
  /** The limit grew since the last backoff (else a new backoff belongs to the same episode). */
  #grown = true
  /** Windows since the limit last grew. */
  #sinceGrowth = Infinity
  /** Growth windows in a row near the ceiling: the probe's step. */
  #streak = 0
  /** Trouble was seen at least once (the slow start is over). */
  #hurt = false
  /** The previous judged window was above TOLERANCE. */
  #slow = false

  /** The last judged step's reason and recent latency, for those who only read the state. */
  #last: { reason: AdaptiveStep['reason'] | 'start'; recent: number | null } = { reason: 'start', recent: null }

  /** The no-load latency estimate (ms), `null` before the first judged window. */
  get baseline(): number | null {
    return this.#baseline
  }

  /** Why the last window moved the limit (or not), and its 95th percentile (ms). */
  get last(): { reason: AdaptiveStep['reason'] | 'start'; recent: number | null } {
    return this.#last
  }

  /** The estimator's state as text, so that whichever instance judges the fleet's next window goes on from it. */
  save(): string {
    const finite = (n: number): number => (Number.isFinite(n) ? n : -1)
    return JSON.stringify([this.#baseline, this.#ceiling, finite(this.#sinceBackoff), finite(this.#sinceGrowth), this.#streak, this.#hurt, this.#slow, this.#grown, this.#last.reason, this.#last.recent])
  }

  /** An estimator going on from {@link save}'s text; a fresh one from nothing or from text it cannot read. */
  static restore(text: string | null | undefined): AdaptiveEstimator {
    const e = new AdaptiveEstimator()
    if (!text) return e
    try {
      const v = JSON.parse(text) as unknown
      if (!Array.isArray(v) || v.length !== 10) return e
      const [baseline, ceiling, since, sinceGrowth, streak, hurt, slow, grown, reason, recent] = v as unknown[]
      const num = (x: unknown): number | null => (typeof x === 'number' && Number.isFinite(x) && x >= 0 ? x : null)
      e.#baseline = num(baseline)
      e.#ceiling = num(ceiling)
      e.#sinceBackoff = num(since) ?? Infinity
      e.#sinceGrowth = num(sinceGrowth) ?? Infinity
      e.#streak = num(streak) ?? 0
      e.#hurt = hurt === true
      e.#slow = slow === true
      e.#grown = grown !== false
      e.#last = { reason: REASONS.includes(reason as never) ? (reason as AdaptiveStep['reason']) : 'start', recent: num(recent) }
    } catch {
      // Not ours (another version wrote it): start afresh, from the limit in force.
    }
    return e
  }

  /** Judges one window, at the limit `limit` in force during it. */
  step(w: AdaptiveWindow, limit: number): AdaptiveStep {
    const step = this.#judge(w, limit)
    if (step.reason === 'growth') {
      this.#grown = true
      this.#sinceGrowth = 0
    }
    this.#last = { reason: step.reason, recent: step.recent }
    return step
  }

  #judge(w: AdaptiveWindow, limit: number): AdaptiveStep {
    const recent = w.p95
    this.#sinceBackoff++
    this.#sinceGrowth++
    const backoff = (): void => {
      // Cuts in a row, with no growth between them, are one episode: the mark is where it began.
      if (this.#grown || this.#ceiling === null) this.#ceiling = limit
      this.#grown = false
      this.#sinceBackoff = 0
      this.#streak = 0
      this.#hurt = true
    }
    // Right after a backoff, requests admitted before it are still ending (failing, or slow), and a
    // fleet's reports arrive up to a window late: let them drain before judging again.
    if (this.#sinceBackoff <= DRAIN) return { factor: 1, reason: 'drain', baseline: this.#baseline, recent }
    if (w.failures > 0) {
      // The strong signal: cut in proportion to the failures, at least by a quarter, at most by half.
      const rate = w.failures / Math.max(1, w.samples)
      backoff()
      return { factor: Math.max(0.5, Math.min(0.75, 1 - rate)), reason: 'failures', baseline: this.#baseline, recent }
    }
    if (w.samples < MIN_SAMPLES || recent === null) {
      return { factor: 1, reason: 'idle', baseline: this.#baseline, recent }
    }
    this.#baseline = this.#baseline === null ? recent : Math.min(this.#baseline * BASELINE_DRIFT, recent)
    const ratio = recent / this.#baseline
    const slowBefore = this.#slow
    this.#slow = ratio > TOLERANCE
    // In the slow start only a sharp rise (or failures) ends it, as loss ends TCP's: a start-up
    // hiccup of the host must not set a mark far below the capacity. After it, the gentle one too.
    // The gentle rise counts only soon after a growth: it is how a limit a slot or two past the
    // capacity shows. Without one it is the host's own load (more requests, more CPU): hold.
    const gentle = this.#hurt && ratio > TOLERANCE && slowBefore && this.#sinceGrowth <= RECENT_GROWTH
    if (!this.#hurt && this.#slow && slowBefore) {
      // A gentle rise that lasts ends the slow start without a cut (as TCP's ssthresh): from here
      // the probe goes one slot at a time, never again x1.5 past where the backend began to slow.
      this.#hurt = true
      this.#ceiling = limit
    }
    if (ratio > SHARP || gentle) {
      // The gradient: back off with how much slower the backend got (gently when it is a little: the
      // square root), at most by half.
      backoff()
      return { factor: Math.max(0.5, Math.sqrt(TOLERANCE / ratio)), reason: 'latency', baseline: this.#baseline, recent }
    }
    if (w.refused === 0 || this.#slow) return { factor: 1, reason: 'steady', baseline: this.#baseline, recent }
    // Demand presses and latency holds. Below the last limit that hurt: half way back to it each
    // window (at most x1.25: the mark may be stale), so the probe slows as it nears it (as BIC-TCP).
    // At or past it (capacity may have grown): one more slot each window it holds; grown well past
    // it without trouble, the mark is forgotten.
    if (this.#ceiling !== null && limit > this.#ceiling * PAST) this.#ceiling = null
    if (this.#ceiling === null) return { factor: this.#hurt ? GROWTH : START, reason: 'growth', baseline: this.#baseline, recent }
    if (limit < this.#ceiling) {
      this.#streak = 0
      return { factor: Math.min(GROWTH, (limit + Math.max(1, Math.floor((this.#ceiling - limit) / 2))) / limit), reason: 'growth', baseline: this.#baseline, recent }
    }
    this.#streak++
    return { factor: (limit + this.#streak) / limit, reason: 'growth', baseline: this.#baseline, recent }
  }
}
