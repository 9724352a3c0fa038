/**
 * What airlock tells the world, on `node:diagnostics_channel`: subscribe with
 * `diagnostics_channel.subscribe('airlock:decision', (event) => ...)`. Nothing is built or
 * published while a channel has no subscriber (`hasSubscribers`), so events cost nothing unless
 * something listens. Payloads are documented in docs/observability.md.
 */
import diagnostics from 'node:diagnostics_channel'

/** One gate decision (`airlock:decision`). */
export interface DecisionEvent {
  gate: string
  mode: 'session' | 'request'
  /** `bypass | pass | admit | busy | queued`. */
  kind: string
  /** `admit`: `slot | line | store-unavailable`; `busy`: `full | store-unavailable`. */
  reason: string | undefined
  /** From the request's arrival at the gate to its decision, ms; 0 for decisions taken synchronously (cached pass holders, pooled slots, bypasses): not measured. */
  durationMs: number
}

/** One store call (`airlock:store`). */
export interface StoreEvent {
  /** `'memory'`, `'redis'`. */
  store: string
  /** The semaphore or gate name. */
  name: string
  /** `acquire`, `release`, `refresh`, ... (on Redis: the script). */
  operation: string
  durationMs: number
  ok: boolean
  /** The error's code (`ERR_AIRLOCK_STORE_UNAVAILABLE`) or name when not ok. */
  error: string | undefined
}

/** A circuit breaker opened or closed (`airlock:breaker`). */
export interface BreakerEvent {
  gate: string
  state: 'open' | 'closed'
}

/** The waiting room's line, as a gate sees it (`airlock:queue`). */
export interface QueueEvent {
  gate: string
  /**
   * `enter`: a new place; `wait`: a visitor polls its place; `admit`: let in from the line; `full`:
   * refused, the line is full; `abandon`: places given up (lapsed: their visitors stopped asking;
   * or left with "Leave the line").
   */
  event: 'enter' | 'wait' | 'admit' | 'full' | 'abandon'
  /** 1-based place in line (`enter`, `wait`); `null` in random order or when unknown. */
  position: number | null
  /** Visitors in line. */
  waiting: number | null
  /** `admit`: how long the place waited, from taking it to admission (ms; the store's clock when it tells); else `null`. */
  waitMs: number | null
  /** `abandon`: how many places; else 1. */
  count: number
}

/**
 * A gate's live control (`airlock:control`): `set` where `airlockControl().set()` changed it (with
 * the patch), `applied` on every gate instance that applied a new version (`patch` undefined),
 * `restored` where a gate found the record gone with the store's data (a Redis restarted empty, a
 * failover, a `FLUSHDB`) and wrote back the control it kept in force. `state` is the whole control
 * in force (see `ControlState`).
 */
export interface ControlEvent {
  gate: string
  event: 'set' | 'applied' | 'restored'
  by: string | null
  version: number
  patch: Readonly<Record<string, unknown>> | undefined
  state: Readonly<Record<string, unknown>>
}

/** The adaptive limit moved (`airlock:limit`), with what it judged. */
export interface LimitEvent {
  gate: string
  limit: number
  previous: number
  /**
   * `failures`, `latency` (the gradient), `growth` (demand pressed, latency held); `steady` or
   * `idle` when the figure took over a live limit's (the adaptive limit goes on from it).
   */
  reason: string
  /** The no-load latency estimate and the judged window's latency (its 75th percentile, ms). */
  baseline: number | null
  recent: number | null
}

/**
 * A visitor's slot or pass ended (`airlock:release`): `visitor` (its request ended, request mode),
 * `origin` (the origin's `Airlock-Command: release`, or the app's `release()`), `expiry` (its time
 * ran out in the store), `operator` (freed by the gate's operator or its adaptive limit).
 */
export interface ReleaseEvent {
  gate: string
  by: 'visitor' | 'origin' | 'expiry' | 'operator'
  /** How long the visit lasted, from admission to the slot's end (ms); `null` when not known. */
  visitMs: number | null
}

/**
 * The waiting room's door (`queue.challenge`): a challenge `issued` at `difficulty` bits; a
 * visitor through it (`solved`, or `noscript` after the slower door's wait; `ms` since its first
 * challenge); a solution `refused` or answered with the line that never moves (`shadowed`).
 */
export interface ChallengeEvent {
  gate: string
  outcome: 'issued' | 'solved' | 'noscript' | 'refused' | 'shadowed'
  difficulty: number
  /** `solved` and `noscript`: ms from the first challenge to the place; else 0. */
  ms: number
}

/**
 * A different Redis server answers the store (`airlock:failover`): a failover (`promoted`: the same
 * server, now serving a new replication history; `another server`: a new `run_id`, as after a
 * Sentinel failover, an endpoint switch or a restart). Writes made just before may be lost.
 */
export interface FailoverEvent {
  store: string
  /** The store's key prefix. */
  prefix: string
  reason: 'promoted' | 'another server'
  /** The servers' `run_id` before and now. */
  previous: string
  now: string
}

export const decisionChannel = diagnostics.channel('airlock:decision')
export const storeChannel = diagnostics.channel('airlock:store')
export const breakerChannel = diagnostics.channel('airlock:breaker')
export const queueChannel = diagnostics.channel('airlock:queue')
export const controlChannel = diagnostics.channel('airlock:control')
export const limitChannel = diagnostics.channel('airlock:limit')
export const failoverChannel = diagnostics.channel('airlock:failover')
export const releaseChannel = diagnostics.channel('airlock:release')
export const challengeChannel = diagnostics.channel('airlock:challenge')

/** Every channel airlock publishes on, by name. */
export const CHANNELS = [
  'airlock:decision',
  'airlock:store',
  'airlock:breaker',
  'airlock:queue',
  'airlock:control',
  'airlock:limit',
  'airlock:failover',
  'airlock:release',
  'airlock:challenge',
] as const

/** Times `op` and publishes a store event, only while `airlock:store` has a subscriber. */
export function timedStoreCall<T>(store: string, name: string, operation: string, op: () => Promise<T>): Promise<T> {
  if (!storeChannel.hasSubscribers) return op()
  const t0 = performance.now()
  const publish = (ok: boolean, err?: unknown): void => {
    const error = ok ? undefined : String((err as { code?: string })?.code ?? (err as Error)?.name ?? 'Error')
    storeChannel.publish({ store, name, operation, durationMs: performance.now() - t0, ok, error } satisfies StoreEvent)
  }
  const p = op()
  p.then(
    () => publish(true),
    (err: unknown) => publish(false, err),
  )
  return p
}
