/**
 * The adaptive limit's estimator, pure and framework-free: from what admitted work measured in
 * one window (latency, failures, whether anyone was turned away) it proposes how to move the
 * limit. A latency gradient against a slowly rising baseline (as Netflix's Gradient2 and Envoy's
 * adaptive concurrency), with failures as the strong signal (as AIMD), and growth only while
 * demand presses on the limit (so an idle site does not drift to `max`). Reasons in docs/adaptive.md.
 * Latencies are counted in the histogram instances add up: histogram.ts's LATENCY_SCHEME (its
 * latencyBucket and histogramQuantile are re-exported here).
 */

import { TUNING } from './adaptive-tuning.js'

export { histogramQuantile, LATENCY_BUCKETS, latencyBucket } from './histogram.js'
export { TUNING }

/** What admitted work measured in one window. */
export interface AdaptiveWindow {
  /** Requests that ended in the window. */
  samples: number
  /** Their latency (ms): the window's 75th percentile (see the gate's windowLatency); `null` without samples. */
  latency: number | null
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
  /**
   * When the window is judged (ms on the judge's clock): the drain after a backoff then lasts
   * TUNING.drainMs however long the windows are (a window waits for enough samples, so at a small
   * limit three windows were 750 ms). Without it, TUNING.drain windows.
   */
  at?: number
}

/** A proposed move: the next limit (before [min, max]), and why. */
export interface AdaptiveStep {
  limit: number
  reason: 'failures' | 'latency' | 'growth' | 'steady' | 'idle' | 'drain' | 'repaying'
  /** The latency baseline and the window's latency it judged (its 75th percentile) (ms). */
  baseline: number | null
  recent: number | null
}

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
  /** Judged windows in a row above TUNING.tolerance (0: the last one was not). */
  #slow = 0
  /** Failures probes caused, not yet paid back by good requests (see TUNING.probeBudget). */
  #debt = 0
  /** Slots the last growth added. */
  #step = 0
  /** What was inside when the limit last grew: a streak goes on only while what is inside goes up with it. */
  #grownFrom = 0
  /** The latency ratio (window latency / baseline) the last latency backoff acted on; 0 after a failure backoff. */
  #cutAt = 0
  /** When the last backoff was judged (`AdaptiveWindow.at`), `null` when unknown. */
  #backoffAt: number | null = null

  /** The last judged step's reason and recent latency, for those who only read the state. */
  #last: { reason: AdaptiveStep['reason'] | 'start'; recent: number | null } = { reason: 'start', recent: null }

  /** The no-load latency estimate (ms), `null` before the first judged window. */
  get baseline(): number | null {
    return this.#baseline
  }

  /** Why the last window moved the limit (or not), and its latency (ms, the 75th percentile). */
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
      this.#cutAt,
      this.#backoffAt,
    ])
  }

  /** An estimator going on from {@link save}'s text; a fresh one from nothing or from text it cannot read. */
  static restore(text: string | null | undefined): AdaptiveEstimator {
    const e = new AdaptiveEstimator()
    if (!text) return e
    try {
      const v = JSON.parse(text) as unknown
      // 12 figures until issue 43 added #cutAt and #backoffAt: an older judge's state goes on.
      if (!Array.isArray(v) || v.length < 12) return e
      const [baseline, ceiling, since, sinceGrowth, streak, hurt, slow, reason, recent, debt, step, grownFrom] =
        v as unknown[]
      const [cutAt, backoffAt] = v.slice(12) as unknown[]
      const num = (x: unknown): number | null => (typeof x === 'number' && Number.isFinite(x) && x >= 0 ? x : null)
      e.#baseline = num(baseline)
      e.#ceiling = num(ceiling)
      e.#sinceBackoff = num(since) ?? Infinity
      e.#sinceGrowth = num(sinceGrowth) ?? Infinity
      e.#streak = num(streak) ?? 0
      e.#hurt = hurt === true
      // A count since issue 43 (a flag before it: a true flag is one slow window).
      e.#slow = slow === true ? 1 : (num(slow) ?? 0)
      e.#last = {
        reason: REASONS.includes(reason as never) ? (reason as AdaptiveStep['reason']) : 'start',
        recent: num(recent),
      }
      e.#debt = Math.min(TUNING.maxDebt, num(debt) ?? 0)
      e.#step = num(step) ?? 0
      e.#grownFrom = num(grownFrom) ?? 0
      e.#cutAt = num(cutAt) ?? 0
      e.#backoffAt = num(backoffAt)
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
    const recent = w.latency
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
    // A cut never raises the limit, and halves it at most: it, or what was inside when less (an
    // instance's brake held it lower, demand did not fill it), the load the window measured.
    const cut = (target: number): number => Math.max(1, Math.ceil(Math.min(limit, inside) / 2), Math.min(limit, target))
    const backoff = (latency = 0): void => {
      // The mark: what was inside when it hurt (at most the limit in force).
      this.#cutAt = latency
      this.#backoffAt = w.at ?? null
      this.#ceiling = Math.min(limit, inside)
      this.#sinceBackoff = 0
      this.#streak = 0
      this.#hurt = true
    }
    // Right after a backoff, requests admitted before it are still ending (failing, or slow), and a
    // fleet's reports arrive up to a window late: let them drain before judging again. Failures that
    // arrive while a probe's cut drains are the probe's too (another instance's, reported late).
    const ratio =
      recent !== null && this.#baseline !== null && w.samples >= TUNING.minSamples ? recent / this.#baseline : 1
    // ...unless latency got far worse than the cut acted on (a capacity that fell right after a
    // gentle trim): that is news, not the drain (a drop from 36 to 10 slots waited 700 ms here).
    const news = w.failures === 0 && this.#cutAt > 0 && ratio > this.#cutAt * TUNING.sharp
    const draining =
      w.at !== undefined && this.#backoffAt !== null
        ? w.at - this.#backoffAt <= TUNING.drainMs && this.#sinceBackoff <= 2 * TUNING.drain
        : this.#sinceBackoff <= TUNING.drain
    if (draining && !news) {
      if (this.#debt > 0 && w.failures > 0)
        this.#debt = Math.min(this.#debtCap(w), this.#debt + Math.min(w.failures, this.#charge(w)))
      return at(limit, 'drain')
    }
    if (w.failures > 0) {
      // The strong signal. A failed request kept its slot about as long as a good one, and the
      // instance that saw it took nobody in its place: each failure stands for about one slot too
      // many. Cut that many (at least one, at most half), and more if latency rose too. The base is
      // the limit, or more in session mode when passes given before a cut are still out.
      const base = Math.max(limit, inside)
      const share = Math.ceil((base * w.failures) / Math.max(1, w.samples))
      // Failures soon after a growth (and no cut since) are the probe's: that growth went too far.
      // Undo it, back to the last limit known good (as TCP's slow start halves to the last window
      // without loss), and further only by the failures' share of the window. Not by their count: in
      // a fleet the instance that brakes is not the one that fills the slot again, so a slot one past
      // the capacity fails three or four times before the judge has spoken.
      const probe = w.sessions !== true && this.#probing(recentGrowth)
      const excess = w.sessions === true ? share : probe ? Math.max(this.#step, share) : w.failures
      let target = base - Math.max(1, excess)
      if (ratio > TUNING.tolerance) target = Math.min(target, Math.floor(base * Math.sqrt(TUNING.tolerance / ratio)))
      // Failures soon after a growth are the probe's: its cost, paid back before the next growth.
      // Others mean the backend changed: what earlier probes cost says nothing of it any more.
      // (The slow start's overshoot is how the capacity is found, not a probe of a known mark: no charge.)
      this.#debt =
        this.#sinceGrowth <= recentGrowth && this.#hurt ? Math.min(this.#debtCap(w), this.#debt + this.#charge(w)) : 0
      backoff()
      // At most by half, unless more than half the window failed: then to the share that did not
      // (a capacity that fell to a third fails two requests in three; halving twice, a drain apart,
      // left a fleet over it for a second).
      const kept = Math.max(0, Math.min(0.5, 1 - w.failures / Math.max(1, w.samples)))
      return at(Math.max(1, Math.ceil(limit * kept), Math.min(limit, target)), 'failures')
    }
    if (w.samples < TUNING.minSamples || recent === null) return at(limit, 'idle')
    this.#baseline = this.#baseline === null ? recent : Math.min(this.#baseline * TUNING.baselineDrift, recent)
    const slowNow = recent / this.#baseline > TUNING.tolerance
    const sharp = recent / this.#baseline > TUNING.sharp
    const slowBefore = this.#slow > 0
    this.#slow = slowNow ? this.#slow + 1 : 0
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
    // a few slots, new connections open and caches warm, and one slow request makes a small window's percentile.
    // And below TUNING.lowWindow inside, a sharp rise ends it only far past the host's noise (the
    // square of `sharp`, 2.56x; failures at any size): with a few requests in flight one busy core
    // doubles a small window's percentile, and a slow start ended at 3 slots climbed at x1.25 a step
    // for five seconds (two instances on one 2-core box). A backend of 4 workers at 12 inside is 3x.
    const noise = !this.#hurt && Math.min(limit, inside) < TUNING.lowWindow && ratio <= TUNING.sharp ** 2
    if ((sharp && !noise && (this.#hurt || slowBefore || w.samples >= TUNING.sureSamples)) || gentle) {
      // The gradient: back off with how much slower the backend got, at most by half: in full when
      // sharply (as Gradient2: a capacity that fell to a third is under it in two cuts, not four),
      // by its square root when a little (a limit a slot or two past the capacity).
      const rise = recent / this.#baseline
      const gradient = sharp ? (1 + TUNING.tolerance) / 2 / rise : Math.sqrt(TUNING.tolerance / rise)
      let target = Math.floor(inside * Math.max(0.5, gradient))
      // Soon after a growth (and no cut since), that growth did it: the limit before it was fine, so
      // undoing it is enough (a backend that slows steeply past its capacity reads as far more
      // than one growth too many).
      if (this.#probing(recentGrowth)) target = Math.max(target, Math.min(limit - 1, limit - this.#step))
      backoff(rise)
      return at(cut(target), 'latency')
    }
    if (this.#hurt && this.#slow >= TUNING.sustained) {
      // Slower for half a second on end without a growth: the backend's capacity fell and it only
      // slows (a queue in front of its workers, work shared). The gradient in full (as Gradient2):
      // back to where latency would be within the tolerance, at most by half.
      backoff(recent / this.#baseline)
      this.#slow = 0
      return at(cut(Math.floor(inside * Math.max(0.5, TUNING.tolerance / (recent / this.#baseline)))), 'latency')
    }
    if (w.refused === 0 || this.#slow > 0) return at(limit, 'steady')
    if (this.#debt >= 1) return at(limit, 'repaying')
    // The last step must have been filled before the next: in a fleet each instance learns a new
    // figure only at its next report, so what was inside lags the limit by a window, and a slow
    // start that grew from that lag compounded steps nobody had tested yet (27, 41, 48, 68 at a
    // capacity of 30 on 32 simulated instances).
    // And a window must have passed at it: what a step let in shows in the window after the one that
    // filled it (a slowing backend answers late; an instance reports a window late).
    if (inside < limit * TUNING.filled || (this.#hurt && this.#sinceGrowth < 2)) return at(limit, 'steady')
    // Demand presses and latency holds. Grow from what was inside, not from the limit: a limit
    // nobody reached (held lower by a live limit, a mode or an admission rate) was never tested.
    const next = this.#grow(Math.min(limit, inside), w.sessions === true)
    return next > limit ? at(next, 'growth') : at(limit, 'steady')
  }

  /** A growth came within `recentGrowth` windows, and no backoff since: what this window shows is its doing. */
  #probing(recentGrowth: number): boolean {
    return this.#sinceGrowth <= recentGrowth && this.#sinceGrowth < this.#sinceBackoff
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
