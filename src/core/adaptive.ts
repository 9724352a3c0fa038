/**
 * The adaptive limit's estimator, pure and framework-free: from what admitted work measured in
 * one window (latency, failures, whether anyone was turned away) it proposes how to move the
 * limit. A latency gradient against a slowly rising baseline (as Netflix's Gradient2 and Envoy's
 * adaptive concurrency), with failures as the strong signal (as AIMD), and growth only while
 * demand presses on the limit (so an idle site does not drift to `max`). Reasons in docs/adaptive.md.
 * Latencies are counted in the histogram instances add up: histogram.ts's LATENCY_SCHEME (its
 * latencyBucket and histogramQuantile are re-exported here).
 */

export { histogramQuantile, LATENCY_BUCKETS, latencyBucket } from './histogram.js'

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
  /**
   * The most slots held at once in the window across the fleet (request slots, a failed request's
   * slot while it is kept, session passes already out): what was really inside. `null` when the
   * store cannot tell; then the limit stands for it.
   */
  inside: number | null
  /**
   * Session mode: a slot is a visitor, who keeps it for a whole visit and makes many requests with
   * it. A failure then is not one slot too many: the cut follows the failures' share of the window.
   */
  sessions?: boolean
}

/** A proposed move: the next limit (before [min, max]), and why. */
export interface AdaptiveStep {
  limit: number
  reason: 'failures' | 'latency' | 'growth' | 'steady' | 'idle' | 'drain' | 'repaying'
  /** The latency baseline and the window's 95th percentile it judged (ms). */
  baseline: number | null
  recent: number | null
}

/**
 * The estimator's figures, each with its reason (more in docs/adaptive.md): one frozen object, so
 * the whole tuning reads in one place and nothing changes it at run time.
 */
export const TUNING = Object.freeze({
  /** Latency this much above the baseline, two windows in a row, counts as the backend slowing down... */
  tolerance: 1.15,
  /** ...and this much above it at once (one slow window alone is often the host's noise). */
  sharp: 1.6,
  /** Growth per window while demand presses and latency holds, far below the last limit that hurt. */
  growth: 1.25,
  /** Growth per window before any trouble was ever seen (a slow start, as TCP's). */
  start: 1.5,
  /**
   * Session mode grows more gently (x1.25 in the slow start, x1.1 after, one slot at a time near the
   * mark): a visitor let in keeps coming back for a whole visit, so a step too far is paid for until
   * visitors leave, not until the next window.
   */
  sessionStart: 1.25,
  /** Session mode's growth after the slow start (see sessionStart). */
  sessionGrowth: 1.1,
  /**
   * The failure budget of probing: each failure a probe caused (failures soon after a growth) is
   * paid back by this many good requests' worth (0.5 %) before the limit grows again. So a probe
   * past a hard cliff costs at most 0.5 % of the work: at a capacity of 10 x 50 ms it waits about a
   * second after each failed probe, at 40 a quarter of that.
   */
  probeBudget: 0.005,
  /** Grown this far past the last limit that hurt without trouble, the mark is forgotten (capacity grew). */
  past: 1.2,
  /** The baseline rises this much per window without a lower sample: it follows a backend that got slower for good, over minutes, not a busy one over seconds. */
  baselineDrift: 1.001,
  /** Failures or a gentle latency rise within this many windows of a growth are the growth's doing (a probe that went too far). */
  recentGrowth: 6,
  /** ...and within 2 s in session mode, where a visitor let in by a growth keeps coming back. */
  recentGrowthSessions: 16,
  /** Windows after a backoff that latency is not judged in (requests admitted before it still ending, reports arriving late). */
  drain: 3,
  /** Fewer samples than this say nothing about latency. */
  minSamples: 5,
  /** A window of this many samples is sure enough of a sharp rise to end the slow start alone. */
  sureSamples: 20,
  /**
   * Below this many inside, a gentle rise does not end the slow start (as HyStart's low window): with
   * a few requests in flight, a 1.2x slower window is the host's noise (a busy core, a cold process),
   * not the backend; ended there, the climb to a capacity of 30 took seconds more. A sharp rise or a
   * failure still ends it at any size.
   */
  lowWindow: 16,
  /** In request mode a probe is charged at most twice the slots it added (one failure each, on two instances): the rest of a storm is not its doing. */
  probeCharge: 2,
  /** The debt never exceeds this many failures... */
  maxDebt: 50,
  /** ...nor what this many windows like the last one pay back: a probe waits 3 s at most (5 s in session mode, where a probe costs a visit), so a capacity that grew is found. */
  maxPause: 24,
  /** maxPause in session mode. */
  maxPauseSessions: 40,
} as const)
const REASONS = ['failures', 'latency', 'growth', 'steady', 'idle', 'drain', 'repaying', 'start'] as const

export class AdaptiveEstimator {
  #baseline: number | null = null
  /** What was inside when trouble (failures, latency) was last seen: growth slows near it. */
  #ceiling: number | null = null
  /** Windows since the last backoff. */
  #sinceBackoff = Infinity
  /** Windows since the limit last grew. */
  #sinceGrowth = Infinity
  /** Growth windows in a row near the ceiling: the probe's step. */
  #streak = 0
  /** Trouble was seen at least once (the slow start is over). */
  #hurt = false
  /** The previous judged window was above TUNING.tolerance. */
  #slow = false
  /** Failures probes caused, not yet paid back by good requests (see TUNING.probeBudget). */
  #debt = 0
  /** Slots the last growth added. */
  #step = 0
  /** What was inside when the limit last grew: a streak goes on only while what is inside goes up with it. */
  #grownFrom = 0

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
    return JSON.stringify([
      this.#baseline,
      this.#ceiling,
      finite(this.#sinceBackoff),
      finite(this.#sinceGrowth),
      this.#streak,
      this.#hurt,
      this.#slow,
      this.#last.reason,
      this.#last.recent,
      this.#debt,
      this.#step,
      this.#grownFrom,
    ])
  }

  /** An estimator going on from {@link save}'s text; a fresh one from nothing or from text it cannot read. */
  static restore(text: string | null | undefined): AdaptiveEstimator {
    const e = new AdaptiveEstimator()
    if (!text) return e
    try {
      const v = JSON.parse(text) as unknown
      if (!Array.isArray(v) || v.length !== 12) return e
      const [baseline, ceiling, since, sinceGrowth, streak, hurt, slow, reason, recent, debt, step, grownFrom] =
        v as unknown[]
      const num = (x: unknown): number | null => (typeof x === 'number' && Number.isFinite(x) && x >= 0 ? x : null)
      e.#baseline = num(baseline)
      e.#ceiling = num(ceiling)
      e.#sinceBackoff = num(since) ?? Infinity
      e.#sinceGrowth = num(sinceGrowth) ?? Infinity
      e.#streak = num(streak) ?? 0
      e.#hurt = hurt === true
      e.#slow = slow === true
      e.#last = {
        reason: REASONS.includes(reason as never) ? (reason as AdaptiveStep['reason']) : 'start',
        recent: num(recent),
      }
      e.#debt = Math.min(TUNING.maxDebt, num(debt) ?? 0)
      e.#step = num(step) ?? 0
      e.#grownFrom = num(grownFrom) ?? 0
    } catch {
      // Not ours (another version wrote it): start afresh, from the limit in force.
    }
    return e
  }

  /** Judges one window, at the limit `limit` in force during it (the fleet's figure, or the operator's live limit). */
  step(w: AdaptiveWindow, limit: number): AdaptiveStep {
    const step = this.#judge(w, limit)
    if (step.reason === 'growth') {
      this.#sinceGrowth = 0
      this.#step = step.limit - limit
    }
    this.#last = { reason: step.reason, recent: step.recent }
    return step
  }

  #judge(w: AdaptiveWindow, limit: number): AdaptiveStep {
    const recent = w.p95
    this.#sinceBackoff++
    this.#sinceGrowth++
    // Good requests pay back what the probes cost.
    this.#debt = Math.max(0, this.#debt - TUNING.probeBudget * Math.max(0, w.samples - w.failures))
    // What was really inside: below the limit when demand, a live limit, a mode or an admission
    // rate kept it lower; above it in session mode when passes given before a cut are still out.
    const inside = w.inside ?? limit
    const recentGrowth = w.sessions === true ? TUNING.recentGrowthSessions : TUNING.recentGrowth
    const at = (next: number, reason: AdaptiveStep['reason']): AdaptiveStep => ({
      limit: next,
      reason,
      baseline: this.#baseline,
      recent,
    })
    // A cut never raises the limit, and halves it at most.
    const cut = (target: number): number => Math.max(Math.ceil(limit / 2), Math.min(limit, target))
    const backoff = (): void => {
      // The mark: what was inside when it hurt (at most the limit in force).
      this.#ceiling = Math.min(limit, inside)
      this.#sinceBackoff = 0
      this.#streak = 0
      this.#hurt = true
    }
    // Right after a backoff, requests admitted before it are still ending (failing, or slow), and a
    // fleet's reports arrive up to a window late: let them drain before judging again. Failures that
    // arrive while a probe's cut drains are the probe's too (another instance's, reported late).
    if (this.#sinceBackoff <= TUNING.drain) {
      if (this.#debt > 0 && w.failures > 0)
        this.#debt = Math.min(this.#debtCap(w), this.#debt + Math.min(w.failures, this.#charge(w)))
      return at(limit, 'drain')
    }
    const ratio =
      recent !== null && this.#baseline !== null && w.samples >= TUNING.minSamples ? recent / this.#baseline : 1
    if (w.failures > 0) {
      // The strong signal. A failed request kept its slot about as long as a good one, and the
      // instance that saw it took nobody in its place: each failure stands for about one slot too
      // many. Cut that many (at least one, at most half), and more if latency rose too. The base is
      // the limit, or more in session mode when passes given before a cut are still out.
      const base = Math.max(limit, inside)
      const excess = w.sessions === true ? Math.ceil((base * w.failures) / Math.max(1, w.samples)) : w.failures
      let target = base - Math.max(1, excess)
      if (ratio > TUNING.tolerance) target = Math.min(target, Math.floor(base * Math.sqrt(TUNING.tolerance / ratio)))
      // Failures soon after a growth are the probe's: its cost, paid back before the next growth.
      // Others mean the backend changed: what earlier probes cost says nothing of it any more.
      // (The slow start's overshoot is how the capacity is found, not a probe of a known mark: no charge.)
      this.#debt =
        this.#sinceGrowth <= recentGrowth && this.#hurt ? Math.min(this.#debtCap(w), this.#debt + this.#charge(w)) : 0
      backoff()
      return at(cut(Math.max(Math.ceil(base / 2), target)), 'failures')
    }
    if (w.samples < TUNING.minSamples || recent === null) return at(limit, 'idle')
    this.#baseline = this.#baseline === null ? recent : Math.min(this.#baseline * TUNING.baselineDrift, recent)
    const slowNow = recent / this.#baseline > TUNING.tolerance
    const sharp = recent / this.#baseline > TUNING.sharp
    const slowBefore = this.#slow
    this.#slow = slowNow
    // In the slow start only a sharp rise (or failures) ends it, as loss ends TCP's: a start-up
    // hiccup of the host must not set a mark far below the capacity. After it, the gentle one too.
    // The gentle rise counts only soon after a growth: it is how a limit a slot or two past the
    // capacity shows. Without one it is the host's own load (more requests, more CPU): hold.
    const gentle = this.#hurt && slowNow && slowBefore && this.#sinceGrowth <= recentGrowth
    if (
      !this.#hurt &&
      slowNow &&
      (slowBefore || w.samples >= TUNING.sureSamples) &&
      Math.min(limit, inside) >= TUNING.lowWindow
    ) {
      // A gentle rise that lasts (or that a window of 20 samples is sure of) ends the slow start
      // without a cut (as TCP's ssthresh): from here the probe goes one slot at a time, never again
      // x1.5 past where the backend began to slow.
      this.#hurt = true
      this.#ceiling = Math.min(limit, inside)
    }
    // In the slow start a sharp rise in a small window must last two windows: as the limit grows from
    // a few slots, new connections open and caches warm, and one slow request makes a small window's p95.
    if ((sharp && (this.#hurt || slowBefore || w.samples >= TUNING.sureSamples)) || gentle) {
      // The gradient: back off with how much slower the backend got (gently when it is a little: the
      // square root), at most by half.
      backoff()
      return at(
        cut(Math.floor(inside * Math.max(0.5, Math.sqrt(TUNING.tolerance / (recent / this.#baseline))))),
        'latency',
      )
    }
    if (w.refused === 0 || this.#slow) return at(limit, 'steady')
    if (this.#debt >= 1) return at(limit, 'repaying')
    // Demand presses and latency holds. Grow from what was inside, not from the limit: a limit
    // nobody reached (held lower by a live limit, a mode or an admission rate) was never tested.
    const next = this.#grow(Math.min(limit, inside), w.sessions === true)
    return next > limit ? at(next, 'growth') : at(limit, 'steady')
  }

  /** What a probe's failures in window `w` cost: all of them in session mode; in request mode at most two a slot the probe added. */
  #charge(w: AdaptiveWindow): number {
    return w.sessions === true ? w.failures : Math.min(w.failures, TUNING.probeCharge * this.#step)
  }

  /** The most a probe may owe: TUNING.maxDebt, and what TUNING.maxPause windows like `w` pay back. */
  #debtCap(w: AdaptiveWindow): number {
    return Math.min(
      TUNING.maxDebt,
      (w.sessions === true ? TUNING.maxPauseSessions : TUNING.maxPause) *
        TUNING.probeBudget *
        Math.max(1, w.samples - w.failures),
    )
  }

  /**
   * The next limit from `base`. Far below the last figure that hurt (or with none): x1.25 (x1.5 in
   * the slow start). Below it: half way back to it each window (at most x1.25 and a tenth of the
   * mark: the mark may be stale, and a step past the capacity is paid for), so the probe slows as it
   * nears it (as BIC-TCP). At or past it (capacity may have grown):
   * one more slot each window it holds; grown well past it without trouble, the mark is forgotten.
   * Session mode: the gentler steps of TUNING.sessionStart and TUNING.sessionGrowth, one slot a window past the mark.
   */
  #grow(base: number, sessions: boolean): number {
    const growth = sessions ? TUNING.sessionGrowth : TUNING.growth
    if (this.#ceiling !== null && base > this.#ceiling * TUNING.past) this.#ceiling = null
    if (this.#ceiling === null)
      return Math.ceil(base * (this.#hurt ? growth : sessions ? TUNING.sessionStart : TUNING.start))
    if (base < this.#ceiling) {
      this.#streak = 0
      return Math.min(
        Math.ceil(base * growth),
        base + Math.max(1, Math.min(Math.floor((this.#ceiling - base) / 2), Math.ceil(this.#ceiling / 10))),
      )
    }
    // The streak grows only when the last step was taken: a limit held lower (a live limit) keeps
    // proposing the same step past what was inside, it does not compound it.
    if (base > this.#grownFrom || this.#streak === 0) this.#streak = sessions ? 1 : this.#streak + 1
    this.#grownFrom = base
    return base + this.#streak
  }
}
