/**
 * What a gate instance tells about its visitors as it happens: who got in (and how long they waited
 * in line), who was turned away, whose place lapsed, whose slot or pass ended (and how long the
 * visit lasted). The gate calls every sink it has: the metrics' figures and `gate.status()` (and the
 * events on `node:diagnostics_channel`) and the per-minute history kept in the store are sinks.
 * Types only: a leaf of the gate.
 */

/** How a visitor's slot or pass ended. */
export type ReleasedBy =
  /** The visitor's request ended (request mode) or the visitor gave its pass back. */
  | 'visitor'
  /** The origin or the app sent `Airlock-Command: release`. */
  | 'origin'
  /** Its time ran out (`passTtl`, `ttl`, a provisional slot never claimed). */
  | 'expiry'
  /** An operator freed it (live control, the dashboard). */
  | 'operator'

/** One gate instance's account of its visitors (see the module doc). Calls must be cheap and never throw. */
export interface VisitSink {
  /** A visitor let in: straight to a free slot (`waitMs` null), or from the line after `waitMs` in it. */
  admitted(from: 'slot' | 'line', waitMs: number | null): void
  /** A visitor turned away with a busy answer; `reason` as in `DecisionEvent` (`full`, `store-unavailable`, ...). */
  turnedAway(reason: string): void
  /** Places in line that lapsed: their visitors stopped asking (closed the tab, gave up). */
  abandoned(count: number): void
  /** A slot or pass ended, and how long the visit had lasted (ms; null when not known). */
  released(by: ReleasedBy, visitMs: number | null): void
}
