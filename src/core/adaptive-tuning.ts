/**
 * The adaptive estimator's figures (src/core/adaptive.ts), each with its reason (more in
 * docs/adaptive.md; what moved in issue 43, and why: docs/simulate.md): one frozen object, so the
 * whole tuning reads in one place and nothing changes it at run time.
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
   * paid back by this many good requests' worth (0.7 %) before the limit grows again. So probing
   * past a hard cliff costs at most 0.7 % of the work: at a capacity of 10 x 50 ms a fleet's probe
   * (three or four failures) waits up to maxPause after it, a single instance's (one) under a second.
   * 0.5 % until issue 43: on a fleet it left the capacity after a rise unfound for too long.
   */
  probeBudget: 0.007,
  /** Grown this far past the last limit that hurt without trouble, the mark is forgotten (capacity grew). */
  past: 1.2,
  /** The baseline rises this much per window without a lower sample: it follows a backend that got slower for good, over minutes, not a busy one over seconds. */
  baselineDrift: 1.001,
  /** Failures or a gentle latency rise within this many windows of a growth are the growth's doing (a probe that went too far). */
  recentGrowth: 6,
  /** ...and within 2 s in session mode, where a visitor let in by a growth keeps coming back. */
  recentGrowthSessions: 16,
  /**
   * Judged windows in a row above the tolerance (half a second at 8 windows a second, after the
   * drain) that cut even without a recent growth: the host's noise comes and goes, a capacity that
   * fell and a queue that formed stay.
   */
  sustained: 4,
  /** ...or this long (ms) when windows come with their time (`AdaptiveWindow.at`): three windows of 125 ms. */
  drainMs: 375,
  /** Windows after a backoff that latency is not judged in (requests admitted before it still ending, reports arriving late). */
  drain: 3,
  /** Fewer samples than this say nothing about latency. */
  minSamples: 5,
  /** A window of this many samples is sure enough of a sharp rise to end the slow start alone. */
  sureSamples: 20,
  /**
   * Below this many inside, a gentle rise does not end the slow start (as HyStart's low window): with
   * a few requests in flight, a 1.2x slower window is the host's noise (a busy core, a cold process),
   * not the backend; ended there, the climb to a capacity of 30 took seconds more. Below it a sharp
   * rise only pauses the climb too (issue 43: two instances on one 2-core box ended it at 3 slots);
   * failures end it at any size.
   */
  lowWindow: 16,
  /**
   * In request mode a probe is charged each failure, at most this many a slot it added: on a fleet a
   * slot one past the capacity fails on instance after instance until the judge speaks (three or
   * four times, measured in the simulator); the rest of a storm is not its doing. 2 until issue 43.
   */
  probeCharge: 8,
  /** A window grows the limit only with at least this share of it inside (the last step tested). */
  filled: 0.9,
  /** The debt never exceeds this many failures... */
  maxDebt: 50,
  /** ...nor what this many windows like the last one pay back: a probe waits 3 s at most (5 s in session mode, where a probe costs a visit), so a capacity that grew is found. */
  maxPause: 24,
  /** maxPause in session mode. */
  maxPauseSessions: 40,
} as const)
