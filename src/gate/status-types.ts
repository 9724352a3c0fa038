/**
 * What a gate instance shows of itself (its counters, its report, its adaptive limit), declared
 * apart from the code that counts: the gate's public types (types.ts, `GateStatus`) and that code
 * (stats.ts, adaptive.ts) both import them, and neither imports the other. A leaf of the gate:
 * types only, nothing from the gate's implementation files.
 */
import type { AdaptiveStep } from '../core/adaptive.js'
import type { AdaptiveSettings } from './option-types.js'

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
}

/** What an instance reports (JSON in the store) and how `Gate.status()` shows it. */
export interface InstanceReport {
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
  breaker: 'open' | 'closed'
  /** When it reported (its clock, ms). */
  at: number
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
