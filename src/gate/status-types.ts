/**
 * What a gate instance shows of itself (its counters, its report, its adaptive limit), declared
 * apart from the code that counts: the gate's public types (types.ts, `GateStatus`) and that code
 * (stats.ts, adaptive.ts) both import them, and neither imports the other. A leaf of the gate:
 * types only, nothing from the gate's implementation files.
 */
import type { AdaptiveStep } from '../core/adaptive.js'
import type { AdaptiveSettings } from './option-types.js'
import type { ReleasedBy } from './tally-types.js'

/** Decisions of one instance since it started. */
export interface GateCounters {
  admitted: number
  busy: number
  queued: number
  pass: number
  bypass: number
  /** Store calls that failed or ran out of budget. */
  storeErrors: number
  /** Busy answers (counted in `busy` too) because the client held its share (`clientShare`). */
  clientShare: number
  /** Proof-of-work challenges sent (`queue.challenge`; counted in `busy` too), and solutions refused. */
  challenged: number
  challengeFailed: number
  /** Admissions from the line (counted in `admitted` too). */
  admittedFromLine: number
  /** Places in line given up: lapsed (the visitor stopped asking) or left (`Leave the line`). */
  abandoned: number
  /** Slots and passes that ended, by how (see `ReleasedBy`): told by this instance (expiries: by the store calls it made). */
  released: Record<ReleasedBy, number>
}

/** Percentiles of recent waits or visits (ms; `null` while none). */
export interface RecentFigures {
  p50: number | null
  p90: number | null
  max: number | null
  /** How many the figures are over (the recent window, up to the last 512). */
  count: number
}

/** An instance's status: what it writes into the store each `statusInterval` (JSON) and how `Gate.status()` shows it. */
export interface InstanceStatus {
  /** `host:pid:n`. */
  id: string
  host: string
  pid: number
  mode: 'session' | 'request'
  limit: number
  counters: GateCounters
  /** Admissions (from the line and direct) in the last 60 s. */
  admittedLastMinute: number
  /** Store call latency over the last calls (up to 256), ms. */
  storeLatencyMs: { p50: number | null; p99: number | null }
  /**
   * Waits of the visitors this instance let in from the line (from taking the place to admission),
   * and visits that ended (from admission to the slot's end, when known), over the last 5 minutes, ms.
   * Absent in the statuses of instances of older versions.
   */
  waitMs?: RecentFigures
  visitMs?: RecentFigures
  breaker: 'open' | 'closed'
  /** When it wrote this status (its clock, ms). */
  at: number
}

/** The adaptive limit as `gate.status()` shows it. */
export interface AdaptiveStatus extends AdaptiveSettings {
  /** The fleet's figure now. */
  limit: number
  /** The no-load latency estimate and the last window's latency (its 75th percentile, ms). */
  baseline: number | null
  recent: number | null
  /** Why the last window moved it (or not). */
  reason: AdaptiveStep['reason'] | 'start'
}

/** @deprecated Renamed {@link InstanceStatus} in 0.2 (a "report" is the history's: `airlockReport()`); this alias goes in 0.3. */
export type InstanceReport = InstanceStatus
