/**
 * `airlock-shield/prometheus`: the gate's metrics for Prometheus, on `prom-client` (an optional
 * peer: `npm install prom-client`).
 *
 * ```ts
 * import { register } from 'prom-client'
 * import { airlockMetrics } from 'airlock-shield/prometheus'
 * airlockMetrics()                                     // into prom-client's default registry
 * app.get('/metrics', async (_req, reply) => reply.type(register.contentType).send(await register.metrics()))
 * ```
 *
 * Counters and histograms (store latency, waits in line, visits) follow the events on
 * `node:diagnostics_channel`; the gauges (slots held, limit, the line, admissions a second, ETA,
 * breaker) are read at scrape time
 * from every open gate of this process, cluster-wide where its store knows (one store call per gate,
 * at most once per `statusCacheMs`). Metric names and labels: docs/observability.md.
 */
import diagnostics from 'node:diagnostics_channel'
import type { Registry } from 'prom-client'
import { loadPeer } from '../base/peer.js'
import { optionError } from '../base/errors.js'
import type {
  BreakerEvent,
  ChallengeEvent,
  ControlEvent,
  DecisionEvent,
  FailoverEvent,
  QueueEvent,
  ReleaseEvent,
  StoreEvent,
} from '../base/events.js'
import { CONTROL_MODES } from '../core/control.js'
import { received, durationOrZero, knownKeys } from '../base/validate.js'
import { openGates } from '../gate/registry.js'
import type { GateStatus } from '../gate/types.js'

export interface AirlockMetricsOptions {
  /** Where the metrics are registered. Default: prom-client's default registry. */
  registry?: Registry
  /** Prefix of every metric name. Default `'airlock_'`. */
  prefix?: string
  /** Buckets of the store latency histogram, in seconds. Default from 0.5 ms to 1 s. */
  buckets?: readonly number[]
  /** A gate's status is read from its store at most this often (ms) however often Prometheus scrapes. Default 1000. */
  statusCacheMs?: number
}

/** What {@link airlockMetrics} returns: `stop()` unsubscribes and removes the metrics from the registry. */
export interface AirlockMetrics {
  stop(): void
}

const DEFAULT_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]
/** Buckets of the waits in line and the visits (seconds): from a second to an hour. */
export const WAIT_BUCKETS = [1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600] as const
const VISIT_BUCKETS = [0.05, 0.25, 1, ...WAIT_BUCKETS] as const

/**
 * Registers airlock's metrics (see the module doc) and starts following its events.
 * @throws `ERR_AIRLOCK_OPTION` naming a bad option.
 */
export function airlockMetrics(options: AirlockMetricsOptions = {}): AirlockMetrics {
  if (options === null || typeof options !== 'object')
    optionError(`airlockMetrics() options must be an object, got ${received(options)}`)
  knownKeys('airlockMetrics()', options, ['registry', 'prefix', 'buckets', 'statusCacheMs'])
  // Loaded here, not imported: a process that never calls this never needs prom-client (the CLI bundles this).
  const client = loadPeer<typeof import('prom-client')>('prom-client', 'airlockMetrics()')
  const registry = options.registry ?? client.register
  if (typeof registry?.registerMetric !== 'function')
    optionError(`registry must be a prom-client Registry, got ${received(options.registry)}`)
  const prefix = options.prefix ?? 'airlock_'
  if (typeof prefix !== 'string' || !/^[a-zA-Z_:][a-zA-Z0-9_:]*$|^$/.test(prefix)) {
    optionError(`prefix must be a Prometheus metric name prefix such as 'airlock_', got ${received(prefix)}`)
  }
  const buckets = options.buckets ?? DEFAULT_BUCKETS
  if (!Array.isArray(buckets) || buckets.some((b) => typeof b !== 'number' || !(b > 0))) {
    optionError(`buckets must be an array of positive numbers (seconds), got ${received(buckets)}`)
  }
  const cacheMs = durationOrZero('statusCacheMs', options.statusCacheMs ?? 1000)
  const registers = [registry]
  // Each metric's name, as registered: the one list stop() removes.
  const registered: string[] = []
  const named = (name: string): string => {
    registered.push(`${prefix}${name}`)
    return `${prefix}${name}`
  }
  /** A counter the event handlers below increment. */
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    new client.Counter<L>({ name: named(name), help, labelNames, registers })

  // Decisions are on every request's path: counted in plain numbers, handed to prom-client at scrape
  // time (a prom-client inc hashes its labels on every call).
  const decisionCounts = new Map<string, Map<string, { kind: string; reason: string; n: number }>>()
  new client.Counter({
    name: named('decisions_total'),
    help: 'Gate decisions, by gate, kind (bypass, pass, admit, busy, queued) and reason.',
    labelNames: ['gate', 'kind', 'reason'] as const,
    registers,
    collect() {
      this.reset()
      for (const [gate, byKind] of decisionCounts)
        for (const c of byKind.values()) this.inc({ gate, kind: c.kind, reason: c.reason }, c.n)
    },
  })
  const queueEvents = counter(
    'queue_events_total',
    "Events of a gate's waiting room: enter (a new place), wait (a poll), admit (from the line), full (refused).",
    ['gate', 'event'] as const,
  )
  const storeDuration = new client.Histogram({
    name: named('store_duration_seconds'),
    help: 'Store calls (Redis scripts), by store, operation and outcome (ok, error).',
    labelNames: ['store', 'operation', 'outcome'] as const,
    buckets: [...buckets],
    registers,
  })
  const controlChanges = counter(
    'control_changes_total',
    "Live control changes: set (by airlockControl in this process), applied (by this process's gates).",
    ['gate', 'event'] as const,
  )
  const breakerChanges = counter('breaker_transitions_total', "A gate's circuit breaker opening or closing.", [
    'gate',
    'state',
  ] as const)
  const failovers = counter(
    'store_failovers_total',
    'A store found a different Redis server answering (a failover, a restart): its last writes may be lost.',
    ['store', 'reason'] as const,
  )

  const released = counter(
    'released_total',
    "Visitors' slots and passes that ended, by how: visitor (the request ended), origin (Airlock-Command: release, or the app's release()), expiry (their time ran out in the store), operator.",
    ['gate', 'by'] as const,
  )
  const abandoned = counter(
    'queue_abandoned_total',
    'Places in line given up: lapsed (the visitor stopped asking) or left (Leave the line).',
    ['gate'] as const,
  )
  /** A histogram of a gate's visitors (seconds) the event handlers below observe into. */
  const histogram = (name: string, help: string, bucketList: readonly number[]) =>
    new client.Histogram({
      name: named(name),
      help,
      labelNames: ['gate'] as const,
      buckets: [...bucketList],
      registers,
    })
  const waitSeconds = histogram(
    'queue_wait_seconds',
    'Waits in line of the visitors let in from it, from taking the place to admission.',
    WAIT_BUCKETS,
  )
  const visitSeconds = histogram(
    'visit_seconds',
    "Visits, from admission to the slot's end (the request's end, a release, or the pass's expiry in the store); those of unknown length are left out.",
    VISIT_BUCKETS,
  )

  const challenges = counter(
    'challenges_total',
    "The waiting room's proof-of-work door, by outcome: issued, solved, noscript (let in after the slower door's wait), refused, shadowed.",
    ['gate', 'outcome'] as const,
  )
  const solveSeconds = histogram(
    'challenge_solve_seconds',
    "From a new visitor's first challenge to its solution (page load, solve and the request that brings it).",
    [0.25, 0.5, 1, 2, 3, 5, 10, 20, 60],
  )
  const difficulty = new client.Gauge({
    name: named('challenge_difficulty'),
    help: 'Leading zero bits of the last challenge issued (it rises with new places a second and the length of the line).',
    labelNames: ['gate'] as const,
    registers,
  })

  // Gauges, read at scrape time from the open gates of this process (one store call per gate, cached).
  const cache = new Map<string, { at: number; status: Promise<GateStatus | null> }>()
  const statusOf = (gate: ReturnType<typeof openGates>[number]): Promise<GateStatus | null> => {
    const hit = cache.get(gate.name)
    if (hit && Date.now() - hit.at < cacheMs) return hit.status
    const status = gate.status().catch(() => null) // a store outage: the gauges of that gate are left out
    cache.set(gate.name, { at: Date.now(), status })
    return status
  }
  const gates = (): ReturnType<typeof openGates> => {
    const byName = new Map<string, ReturnType<typeof openGates>[number]>()
    for (const g of openGates()) if (!byName.has(g.name)) byName.set(g.name, g)
    return [...byName.values()]
  }
  const gauge = (name: string, help: string, read: (s: GateStatus) => number | null) =>
    new client.Gauge({
      name: named(name),
      help,
      labelNames: ['gate'] as const,
      registers,
      async collect() {
        this.reset()
        for (const gate of gates()) {
          const status = await statusOf(gate)
          const value = status === null ? null : read(status)
          if (value !== null) this.set({ gate: gate.name }, value)
        }
      },
    })
  gauge('slots_held', 'Slots held in the store, by every instance (cluster-wide).', (s) => s.held)
  gauge('limit', "The gate's limit.", (s) => s.limit)
  gauge('queue_length', 'Visitors waiting in line (cluster-wide).', (s) => s.waiting)
  gauge(
    'admissions_per_second',
    'Admissions a second over the last minute, summed over the instances that report (cluster-wide).',
    (s) => s.admittedLastMinute / 60,
  )
  gauge('eta_seconds', 'The wait a newcomer would see (absent while unknown).', (s) => s.eta)
  gauge('instances', 'Instances of the gate that reported recently.', (s) => s.instances.length)
  gauge(
    'admission_rate_limit_per_second',
    "The live control's admission rate in force, a second (absent when none).",
    (s) => (s.control.admissionRate === null ? null : s.control.admissionRate / 60),
  )
  gauge(
    'adaptive_limit',
    "The adaptive limit's figure for the fleet (absent when off).",
    (s) => s.adaptive?.limit ?? null,
  )
  const seconds = (ms: number | null | undefined): number | null => (ms === null || ms === undefined ? null : ms / 1000)
  gauge(
    'adaptive_latency_baseline_seconds',
    "The adaptive limit's no-load latency estimate (the baseline its windows' latencies, their 75th percentiles, are judged against).",
    (s) => seconds(s.adaptive?.baseline),
  )
  gauge(
    'adaptive_latency_recent_seconds',
    "The latency (75th percentile) of the adaptive limit's last judged window.",
    (s) => seconds(s.adaptive?.recent),
  )
  new client.Gauge({
    name: named('control_mode'),
    help: `1 for the live control's mode in force on this instance (${CONTROL_MODES.join(', ')}), else 0.`,
    labelNames: ['gate', 'mode'] as const,
    registers,
    collect() {
      this.reset()
      for (const gate of gates())
        for (const mode of CONTROL_MODES) this.set({ gate: gate.name, mode }, gate.control.mode === mode ? 1 : 0)
    },
  })
  new client.Gauge({
    name: named('breaker_open'),
    help: "1 while this instance's circuit breaker is open (the store is not called), else 0.",
    labelNames: ['gate'] as const,
    registers,
    collect() {
      this.reset()
      for (const gate of gates()) this.set({ gate: gate.name }, gate.breaker === 'open' ? 1 : 0)
    },
  })

  // Children cached by their labels: the decision counter is on every request's path.
  const onDecision = (m: unknown): void => {
    const e = m as DecisionEvent
    let byKind = decisionCounts.get(e.gate)
    if (byKind === undefined) decisionCounts.set(e.gate, (byKind = new Map()))
    // Without a reason (pass, bypass, queued) the kind is the key: no string is built.
    const key = e.reason === undefined ? e.kind : `${e.kind}:${e.reason}`
    const c = byKind.get(key)
    if (c === undefined) byKind.set(key, { kind: e.kind, reason: e.reason ?? '', n: 1 })
    else c.n++
  }
  const onStore = (m: unknown): void => {
    const e = m as StoreEvent
    storeDuration.labels(e.store, e.operation, e.ok ? 'ok' : 'error').observe(e.durationMs / 1000)
  }
  /** A channel's handler that counts each event under the labels it reads from it. */
  const counting =
    <E>(c: { labels(...values: string[]): { inc(): void } }, labels: (e: E) => string[]) =>
    (m: unknown): void =>
      c.labels(...labels(m as E)).inc()
  const onBreaker = counting<BreakerEvent>(breakerChanges, (e) => [e.gate, e.state])
  /** Children of a labelled metric by gate, so a hot event does not hash its labels each time. */
  const byGate = <C>(metric: { labels(gate: string): C }): ((gate: string) => C) => {
    const children = new Map<string, C>()
    return (gate) => {
      let c = children.get(gate)
      if (c === undefined) children.set(gate, (c = metric.labels(gate)))
      return c
    }
  }
  const waitOf = byGate(waitSeconds)
  const visitOf = byGate(visitSeconds)
  const onQueue = (m: unknown): void => {
    const e = m as QueueEvent
    if (e.event === 'abandon') return abandoned.labels(e.gate).inc(e.count)
    queueEvents.labels(e.gate, e.event).inc()
    if (e.event === 'admit' && e.waitMs !== null && e.waitMs !== undefined) waitOf(e.gate).observe(e.waitMs / 1000)
  }
  const onControl = counting<ControlEvent>(controlChanges, (e) => [e.gate, e.event])
  const onFailover = counting<FailoverEvent>(failovers, (e) => [e.store, e.reason])
  const onRelease = (m: unknown): void => {
    const e = m as ReleaseEvent
    released.labels(e.gate, e.by).inc()
    if (e.visitMs !== null && e.visitMs !== undefined) visitOf(e.gate).observe(e.visitMs / 1000)
  }
  const onChallenge = (m: unknown): void => {
    const e = m as ChallengeEvent
    challenges.labels(e.gate, e.outcome).inc()
    if (e.outcome === 'issued') difficulty.labels(e.gate).set(e.difficulty)
    if (e.outcome === 'solved') solveSeconds.labels(e.gate).observe(e.ms / 1000)
  }
  const subscriptions: [string, (m: unknown) => void][] = [
    ['airlock:challenge', onChallenge],
    ['airlock:release', onRelease],
    ['airlock:failover', onFailover],
    ['airlock:control', onControl],
    ['airlock:decision', onDecision],
    ['airlock:store', onStore],
    ['airlock:breaker', onBreaker],
    ['airlock:queue', onQueue],
  ]
  for (const [channel, fn] of subscriptions) diagnostics.subscribe(channel, fn)

  return {
    stop() {
      for (const [channel, fn] of subscriptions) diagnostics.unsubscribe(channel, fn)
      for (const name of registered) registry.removeSingleMetric(name)
    },
  }
}
