/**
 * Two of a gate's visit sinks (see tally.ts): {@link VisitFigures}, what `gate.status()` shows of
 * this instance's visitors (its counters, recent waits and visits), and {@link VisitEvents}, the
 * same on `node:diagnostics_channel` (published only while subscribed).
 */
import { queueChannel, releaseChannel, type QueueEvent, type ReleaseEvent } from '../base/events.js'
import type { GateCounters, RecentFigures } from './status-types.js'
import type { ReleasedBy, VisitSink } from './tally-types.js'

/** Samples kept per figure, and how far back the figures look (ms). */
const SAMPLES = 512
export const RECENT_MS = 5 * 60_000

/** The last {@link SAMPLES} values and when they came, for percentiles over the recent window. */
class Recent {
  private readonly values = new Float64Array(SAMPLES)
  private readonly times = new Float64Array(SAMPLES)
  private n = 0

  add(value: number, now: number): void {
    const i = this.n++ % SAMPLES
    this.values[i] = value
    this.times[i] = now
  }

  figures(now: number): RecentFigures {
    const recent: number[] = []
    for (let i = 0; i < Math.min(this.n, SAMPLES); i++)
      if (now - this.times[i]! <= RECENT_MS) recent.push(this.values[i]!)
    recent.sort((a, b) => a - b)
    const k = recent.length
    const at = (q: number): number | null => (k === 0 ? null : recent[Math.min(k - 1, Math.floor(q * k))]!)
    return { p50: at(0.5), p90: at(0.9), max: k === 0 ? null : recent[k - 1]!, count: k }
  }
}

/** This instance's counters of its visitors (in its `GateCounters`) and its recent waits and visits. */
export class VisitFigures implements VisitSink {
  private readonly waits = new Recent()
  private readonly visits = new Recent()

  constructor(private readonly counters: GateCounters) {}

  admitted(from: 'slot' | 'line', waitMs: number | null): void {
    if (from !== 'line') return
    this.counters.admittedFromLine++
    if (waitMs !== null) this.waits.add(waitMs, Date.now())
  }

  turnedAway(): void {}

  abandoned(count: number): void {
    this.counters.abandoned += count
  }

  released(by: ReleasedBy, visitMs: number | null): void {
    this.counters.released[by]++
    if (visitMs !== null) this.visits.add(visitMs, Date.now())
  }

  /** Waits and visits over the last {@link RECENT_MS}. */
  figures(now: number): { waitMs: RecentFigures; visitMs: RecentFigures } {
    return { waitMs: this.waits.figures(now), visitMs: this.visits.figures(now) }
  }
}

/** The figures as events: `admit` (with its wait) and `abandon` on `airlock:queue`, every release on `airlock:release`. */
export class VisitEvents implements VisitSink {
  constructor(private readonly gate: string) {}

  admitted(from: 'slot' | 'line', waitMs: number | null): void {
    if (from === 'line' && queueChannel.hasSubscribers) {
      queueChannel.publish({
        gate: this.gate,
        event: 'admit',
        position: null,
        waiting: null,
        waitMs,
        count: 1,
      } satisfies QueueEvent)
    }
  }

  turnedAway(): void {}

  abandoned(count: number): void {
    if (queueChannel.hasSubscribers)
      queueChannel.publish({
        gate: this.gate,
        event: 'abandon',
        position: null,
        waiting: null,
        waitMs: null,
        count,
      } satisfies QueueEvent)
  }

  released(by: ReleasedBy, visitMs: number | null): void {
    if (releaseChannel.hasSubscribers) releaseChannel.publish({ gate: this.gate, by, visitMs } satisfies ReleaseEvent)
  }
}
